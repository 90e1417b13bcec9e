#!/usr/bin/env python3
# Licensed to the Apache Software Foundation (ASF) under one
# or more contributor license agreements.  See the NOTICE file
# distributed with this work for additional information
# regarding copyright ownership.  The ASF licenses this file
# to you under the Apache License, Version 2.0 (the
# "License"); you may not use this file except in compliance
# with the License.  You may obtain a copy of the License at
#
#   http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing,
# software distributed under the License is distributed on an
# "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY
# KIND, either express or implied.  See the License for the
# specific language governing permissions and limitations
# under the License.

"""A consumer of the Fluss source connector's topic that sees every row exactly once.

The connector delivers at least once: after a crash of the runtime the batch that was in flight
comes again, with the same message ids. Every message says where each of its rows sits in its
Fluss bucket (docs/consuming.md), and the rows of one bucket arrive in that order, so one
number per (table, partition, bucket) -- the last position applied -- is enough to drop every
repeat, however a replay cuts the rows into messages.

Formats (`--format`):
  arrow     payload_format = "arrow_ipc" (stream schema "raw"): each payload is an Arrow IPC stream
            of rows of one bucket, decoded by pyarrow over the message's own bytes (no copy of
            the column buffers unless the payload is compressed); a message that repeats only
            part of what was seen is sliced, not dropped whole.
  json      log rows as JSON objects (payload_format = "json", the default).
  debezium  change events of a primary-key table (changelog_format = "debezium"): the consumer
            keeps the table's current state per key, the key columns named by each message's
            `fluss_primary_key` header.

Requirements, in a virtual environment: apache-iggy (the Python client of Apache Iggy;
0.9.0.dev4 talks to the server the connector is tested with) and pyarrow for `--format arrow`:
  python3 -m venv .venv && .venv/bin/pip install "apache-iggy==0.9.0.dev4" pyarrow

It prints a running count per poll on stderr. With `--idle-exit SECONDS` it stops once no message
came for that long (with `--stop-file FILE`, at the first empty poll after FILE exists) and writes
what it holds (rows or per-key state, and the count of repeats it dropped) as JSON to `--result`
(or stdout). A real application stores its Iggy offset and the last-position map together with
the effect of the rows (same transaction, same file), so that a restart of the consumer itself
also applies each row once.
"""

import argparse
import asyncio
import bisect
import json
import math
import os
import sys
import time
from dataclasses import dataclass, field

# -- The message id (docs/messages.md) ------------------------------------------------------------
# bits 127-126 layout, 125-104 table id, 103-72 partition id + 1 (0 for an unpartitioned table),
# 71-56 bucket, then
#   layout 01, a log row or change:       55-0 its log offset
#   layout 10, a snapshot row:            55-32 the offset the snapshot was taken at (mod 2^24),
#                                         31-0 the row's index among the snapshot's rows
#   layout 11, a snapshot row, filtered:  the same, the index counted among the rows kept
LOG_ROW, SNAPSHOT_ROW, FILTERED_SNAPSHOT_ROW = 1, 2, 3


@dataclass(frozen=True)
class MessageId:
    layout: int
    bucket: tuple  # (table id, partition id + 1, bucket): one Fluss bucket
    snapshot: tuple | None  # snapshot rows: (layout, the snapshot's offset mod 2^24)
    position: int  # the first row's offset (log) or index (snapshot)

    @staticmethod
    def parse(value: int) -> "MessageId":
        layout = value >> 126
        bucket = ((value >> 104) & (2**22 - 1), (value >> 72) & (2**32 - 1), (value >> 56) & 0xFFFF)
        if layout == LOG_ROW:
            return MessageId(layout, bucket, None, value & (2**56 - 1))
        if layout in (SNAPSHOT_ROW, FILTERED_SNAPSHOT_ROW):
            snapshot = (layout, (value >> 32) & (2**24 - 1))
            return MessageId(layout, bucket, snapshot, value & (2**32 - 1))
        raise ValueError(f"message id {value:#x} is not a Fluss source id (layout {layout:02b})")


def positions_of(mid: MessageId, rows: int, offsets=None):
    """Where each of a message's `rows` rows sits in its bucket, ascending: a log message's
    `_log_offset` column when it has one (Arrow IPC of a primary-key table, or of a log table
    read through a filter), else consecutive from the id's position."""
    if offsets is not None and mid.layout == LOG_ROW:
        return offsets
    return range(mid.position, mid.position + rows)


# -- De-duplication: the last position applied per bucket -----------------------------------------
@dataclass
class BucketProgress:
    snapshot: tuple | None = None  # the snapshot being delivered, None once the log started
    last: int = -1  # the last row index (snapshot) or offset (log) applied


@dataclass
class Deduplicator:
    """Remembers, per Fluss bucket, the last row applied; says how many leading rows of a
    message were applied already. Needs the bucket's messages in the order the connector sent
    them: a one-partition topic (what the runtime creates), or one partition per bucket."""

    buckets: dict = field(default_factory=dict)
    repeats: int = 0
    restarted_snapshots: int = 0

    def seen(self, mid: MessageId, positions, on_new_snapshot=None) -> int:
        """How many leading rows of a message (rows of one bucket at ascending `positions`)
        were applied before; the caller applies only the rest. `on_new_snapshot(bucket)` is
        called when a bucket's snapshot starts again at another offset (the connector took it
        anew after a crash): the rows of the older one are superseded."""
        progress = self.buckets.setdefault(mid.bucket, BucketProgress())
        if mid.snapshot is not None:
            if progress.snapshot is None and progress.last >= 0:
                # The log of this bucket already started: a snapshot cannot follow it.
                self.repeats += len(positions)
                return len(positions)
            if progress.snapshot != mid.snapshot:
                if progress.snapshot is not None:
                    self.restarted_snapshots += 1
                    if on_new_snapshot:
                        on_new_snapshot(mid.bucket)
                progress.snapshot, progress.last = mid.snapshot, -1
        elif progress.snapshot is not None:
            # The first log row after the snapshot: offsets start over.
            progress.snapshot, progress.last = None, -1
        seen = bisect.bisect_right(positions, progress.last)
        progress.last = max(progress.last, positions[-1])
        self.repeats += seen
        return seen


# -- What the consumer builds: rows of a log table, or a table's current state per key ------------
class LogRows:
    def __init__(self):
        self.rows = []

    def add(self, rows):
        self.rows.extend(rows)

    def size(self):
        return len(self.rows)

    def result(self):
        return {"rows": self.rows}


class KeyedState:
    """A table's current state per primary key, remembering each key's bucket so that a
    snapshot taken anew replaces what the older one delivered for that bucket. The key columns
    come from the messages (`fluss_primary_key`), or from `--key` when they do not carry it."""

    def __init__(self, key=None):
        self.key = key.split(",") if key else None
        self.state = {}  # key -> (bucket, row)

    def learn_key(self, message):
        if self.key is None:
            headers = message.user_headers()
            named = headers.to_scalar_dict().get("fluss_primary_key") if headers else None
            if not named:
                raise ValueError("the message names no primary key (no fluss_primary_key "
                                 "header): set headers = \"all\" on the connector, or pass --key")
            self.key = named.split(",")

    def key_of(self, row):
        return json.dumps([row[column] for column in self.key], default=str)

    def upsert(self, bucket, row):
        self.state[self.key_of(row)] = (bucket, row)

    def delete(self, row):
        self.state.pop(self.key_of(row), None)

    def forget_bucket(self, bucket):
        self.state = {k: v for k, v in self.state.items() if v[0] != bucket}

    def size(self):
        return len(self.state)

    def result(self):
        ordered = sorted(self.state.items())
        return {"state": [row for _, (_, row) in ordered]}


# -- Decoding one message -------------------------------------------------------------------------
def apply_json(message, mid, dedup, rows: LogRows):
    if dedup.seen(mid, positions_of(mid, 1)) == 0:
        rows.add([json.loads(message.payload())])


def apply_debezium(message, mid, dedup, state: KeyedState):
    if dedup.seen(mid, positions_of(mid, 1), state.forget_bucket) == 1:
        return
    state.learn_key(message)
    event = json.loads(message.payload())
    if event["op"] == "d":
        state.delete(event["before"])
    else:  # "r" snapshot, "c" insert, "u" update
        state.upsert(mid.bucket, event["after"])


def plain_type(data_type):
    """`data_type` with nanosecond timestamps, which Python's datetime cannot hold, as int64
    (nanoseconds since the epoch), wherever they are nested."""
    import pyarrow as pa

    if pa.types.is_timestamp(data_type) and data_type.unit == "ns":
        return pa.int64()
    if pa.types.is_list(data_type) or pa.types.is_large_list(data_type):
        field = data_type.value_field
        inner = field.with_type(plain_type(field.type))
        return pa.list_(inner) if pa.types.is_list(data_type) else pa.large_list(inner)
    if pa.types.is_struct(data_type):
        return pa.struct([field.with_type(plain_type(field.type)) for field in data_type])
    if pa.types.is_map(data_type):
        key, item = data_type.key_field, data_type.item_field
        return pa.map_(key.with_type(plain_type(key.type)), item.with_type(plain_type(item.type)))
    return data_type


def python_rows(batch):
    """The rows of `batch` as Python values (what this example keeps and prints)."""
    import pyarrow as pa

    columns = [column.cast(plain_type(column.type)) for column in batch.columns]
    return pa.RecordBatch.from_arrays(columns, names=batch.schema.names).to_pylist()


def apply_arrow(message, mid, dedup, sink):
    import pyarrow as pa

    # py_buffer wraps the payload's bytes; the reader's arrays point into them (an uncompressed
    # payload is never copied; a compressed one is decompressed into new buffers).
    reader = pa.ipc.open_stream(pa.py_buffer(message.payload()))
    batch = reader.read_next_batch()
    on_new = sink.forget_bucket if isinstance(sink, KeyedState) else None
    offsets = batch.column("_log_offset") if "_log_offset" in batch.schema.names else None
    offsets = None if offsets is None else offsets.to_pylist()
    seen = dedup.seen(mid, positions_of(mid, batch.num_rows, offsets), on_new)
    fresh = batch.slice(seen)  # zero-copy: a view of the rows not applied yet
    if isinstance(sink, LogRows):
        rows = python_rows(fresh)
        for row in rows:
            row.pop("_log_offset", None)
        sink.add(rows)
        return
    if fresh.num_rows:
        sink.learn_key(message)
    for row in python_rows(fresh):
        change = row.pop("_change_type")
        del row["_log_offset"], row["_commit_timestamp"]
        if change == "delete":
            sink.delete(row)
        elif change != "update_before":
            sink.upsert(mid.bucket, row)


# -- The poll loop --------------------------------------------------------------------------------
async def consume(args):
    from apache_iggy import IggyClient, PollingStrategy

    client = IggyClient(args.server)
    await client.connect()
    await client.login_user(args.user, args.password)
    dedup = Deduplicator()
    keyed = args.format == "debezium" or args.key_state
    sink = KeyedState(args.key) if keyed else LogRows()
    apply = {"arrow": apply_arrow, "json": apply_json, "debezium": apply_debezium}[args.format]
    next_offset, messages, last_message = 0, 0, time.monotonic()
    while True:
        try:
            polled = await client.poll_messages(
                args.stream, args.topic, args.partition,
                PollingStrategy.Offset(next_offset), args.count, False,
            )
        except RuntimeError as error:  # the topic does not exist yet: the runtime creates it
            polled = []
            if messages:
                raise RuntimeError(f"polling {args.stream}/{args.topic}: {error}") from error
        for message in polled:
            apply(message, MessageId.parse(message.id()), dedup, sink)
            next_offset = message.offset() + 1
        if polled:
            messages += len(polled)
            last_message = time.monotonic()
            print(f"consumer: {messages} messages, {sink.size()} rows held, "
                  f"{dedup.repeats} repeated rows dropped", file=sys.stderr, flush=True)
        elif args.idle_exit and messages and time.monotonic() - last_message > args.idle_exit:
            break
        elif args.stop_file and os.path.exists(args.stop_file):
            break  # told to stop, and the poll came back empty: the topic is drained
        else:
            await asyncio.sleep(0.2)
    result = sink.result()
    result.update(messages=messages, repeats=dedup.repeats,
                  restarted_snapshots=dedup.restarted_snapshots)
    print(f"consumer: done, {messages} messages, {sink.size()} rows held, "
          f"{dedup.repeats} repeated rows dropped", file=sys.stderr, flush=True)
    out = json.dumps(json_safe(result), default=str, allow_nan=False)
    if args.result:
        with open(args.result, "w") as f:
            f.write(out)
    else:
        print(out)


def json_safe(value):
    """`value` with NaN and infinities as the strings the connector's JSON uses for them
    (JSON has no such numbers)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {key: json_safe(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(item) for item in value]
    return value


# The Python client release whose API this consumer calls (later releases changed
# `poll_messages`).
IGGY_CLIENT = "0.9.0.dev4"


def check_client():
    """Exits with one clear line if another release of the Iggy client is installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        installed = version("apache-iggy")
    except PackageNotFoundError:
        installed = None
    if installed != IGGY_CLIENT:
        found = f"apache-iggy {installed} is installed" if installed else "apache-iggy is missing"
        sys.exit(f"{found}; this consumer calls the API of {IGGY_CLIENT}: "
                 f'pip install "apache-iggy=={IGGY_CLIENT}" (in a virtual environment)')


def main():
    check_client()
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--server", default="127.0.0.1:8090", help="Iggy TCP address")
    p.add_argument("--user", default="iggy")
    p.add_argument("--password", default="iggy")
    p.add_argument("--stream", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--partition", type=int, default=0)
    p.add_argument("--format", choices=["arrow", "json", "debezium"], required=True)
    p.add_argument("--key", help="primary-key columns, comma-separated (per-key state), for "
                   "messages without the fluss_primary_key header")
    p.add_argument("--key-state", action="store_true",
                   help="arrow: keep per-key state from the $changelog columns of a PK table")
    p.add_argument("--count", type=int, default=1000, help="messages per poll")
    p.add_argument("--idle-exit", type=float, default=0, help="stop after this many idle seconds")
    p.add_argument("--stop-file", help="stop at the first empty poll once this file exists")
    p.add_argument("--result", help="write the result JSON here instead of stdout")
    asyncio.run(consume(p.parse_args()))


if __name__ == "__main__":
    main()
