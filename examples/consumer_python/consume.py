#!/usr/bin/env python3
"""A consumer of the Fluss source connector's topic that sees every row exactly once.

The connector delivers at least once: after a crash of the runtime the batch that was in flight
comes again, with the same message ids. Every id names the row's table, partition, bucket and
offset, and the rows of one bucket arrive in offset order, so one number per
(table, partition, bucket) -- the last offset applied -- is enough to drop every repeat.

Formats (`--format`):
  arrow     payload_format = "arrow_ipc" (stream schema "raw"): each payload is an Arrow IPC stream
            of consecutive rows of one bucket, decoded by pyarrow over the message's own bytes
            (no copy of the column buffers unless the payload is compressed); a message that
            repeats only part of what was seen is sliced, not dropped whole.
  json      log rows as JSON objects (payload_format = "json", the default).
  debezium  change events of a primary-key table (changelog_format = "debezium"): the consumer
            keeps the table's current state per key (`--key`).

Requirements: apache-iggy (the Python client of Apache Iggy; 0.9.0.dev4 talks to the server the
connector is tested with) and pyarrow for `--format arrow`:
  python3 -m pip install "apache-iggy==0.9.0.dev4" pyarrow

It prints a running count per poll on stderr. With `--idle-exit SECONDS` it stops once no message
came for that long (with `--stop-file FILE`, at the first empty poll after FILE exists) and writes what it holds (rows or per-key state, and the count of repeats it
dropped) as JSON to `--result` (or stdout). A real application stores its Iggy offset and the
last-offset map together with the effect of the rows (same transaction, same file), so that a
restart of the consumer itself also applies each row once.
"""

import argparse
import asyncio
import json
import os
import sys
import time
from dataclasses import dataclass, field

# -- The message id (README "Message formats") ----------------------------------------------------
# bits 127-126 layout (01 changelog/log row, 10 snapshot row), 125-104 table id,
# 103-72 partition id + 1 (0 for an unpartitioned table), 71-56 bucket, then
#   log row:      55-0 offset
#   snapshot row: 55-32 the offset the snapshot was taken at (mod 2^24), 31-0 the row's index.
LOG_ROW, SNAPSHOT_ROW = 1, 2


@dataclass(frozen=True)
class MessageId:
    layout: int
    bucket: tuple  # (table id, partition id + 1, bucket): one Fluss bucket
    snapshot_at: int  # snapshot rows: the snapshot's offset mod 2^24
    position: int  # log rows: the offset; snapshot rows: the row's index

    @staticmethod
    def parse(value: int) -> "MessageId":
        layout = value >> 126
        bucket = ((value >> 104) & (2**22 - 1), (value >> 72) & (2**32 - 1), (value >> 56) & 0xFFFF)
        if layout == LOG_ROW:
            return MessageId(layout, bucket, 0, value & (2**56 - 1))
        if layout == SNAPSHOT_ROW:
            return MessageId(layout, bucket, (value >> 32) & (2**24 - 1), value & (2**32 - 1))
        raise ValueError(f"message id {value:#x} is not a Fluss source id (layout {layout:02b})")


# -- De-duplication: the last position applied per bucket -----------------------------------------
@dataclass
class BucketProgress:
    snapshot_at: int | None = None  # the snapshot being delivered, None once the log started
    last: int = -1  # the last row index (snapshot) or offset (log) applied


@dataclass
class Deduplicator:
    """Remembers, per Fluss bucket, the last row applied; says how many leading rows of a
    message were applied already. Needs the bucket's messages in the order the connector sent
    them: a one-partition topic (what the runtime creates), or one partition per bucket."""

    buckets: dict = field(default_factory=dict)
    repeats: int = 0
    restarted_snapshots: int = 0

    def fresh_from(self, mid: MessageId, rows: int, on_new_snapshot=None) -> int:
        """How many of the message's `rows` (consecutive rows of one bucket, starting at
        `mid`) were applied before; the caller applies only the rest. `on_new_snapshot(bucket)`
        is called when a bucket's snapshot starts again at another offset (the connector took
        it anew after a crash): the rows of the older one are superseded."""
        progress = self.buckets.setdefault(mid.bucket, BucketProgress())
        if mid.layout == SNAPSHOT_ROW:
            if progress.snapshot_at is None and progress.last >= 0:
                # The log of this bucket already started: a snapshot cannot follow it.
                self.repeats += rows
                return rows
            if progress.snapshot_at != mid.snapshot_at:
                if progress.snapshot_at is not None:
                    self.restarted_snapshots += 1
                    if on_new_snapshot:
                        on_new_snapshot(mid.bucket)
                progress.snapshot_at, progress.last = mid.snapshot_at, -1
        elif progress.snapshot_at is not None:
            # The first log row after the snapshot: offsets start over.
            progress.snapshot_at, progress.last = None, -1
        seen = min(max(progress.last + 1 - mid.position, 0), rows)
        progress.last = max(progress.last, mid.position + rows - 1)
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
    snapshot taken anew replaces what the older one delivered for that bucket."""

    def __init__(self, key):
        self.key = key
        self.state = {}  # key -> (bucket, row)

    def upsert(self, bucket, row):
        self.state[row[self.key]] = (bucket, row)

    def delete(self, row):
        self.state.pop(row[self.key], None)

    def forget_bucket(self, bucket):
        self.state = {k: v for k, v in self.state.items() if v[0] != bucket}

    def size(self):
        return len(self.state)

    def result(self):
        ordered = sorted(self.state.items(), key=lambda item: str(item[0]))
        return {"state": [row for _, (_, row) in ordered]}


# -- Decoding one message -------------------------------------------------------------------------
def apply_json(message, mid, dedup, rows: LogRows):
    if dedup.fresh_from(mid, 1) == 0:
        rows.add([json.loads(message.payload())])


def apply_debezium(message, mid, dedup, state: KeyedState):
    if dedup.fresh_from(mid, 1, state.forget_bucket) == 1:
        return
    event = json.loads(message.payload())
    if event["op"] == "d":
        state.delete(event["before"])
    else:  # "r" snapshot, "c" insert, "u" update
        state.upsert(mid.bucket, event["after"])


def apply_arrow(message, mid, dedup, sink):
    import pyarrow as pa

    # py_buffer wraps the payload's bytes; the reader's arrays point into them (an uncompressed
    # payload is never copied; a compressed one is decompressed into new buffers).
    reader = pa.ipc.open_stream(pa.py_buffer(message.payload()))
    batch = reader.read_next_batch()
    on_new = sink.forget_bucket if isinstance(sink, KeyedState) else None
    seen = dedup.fresh_from(mid, batch.num_rows, on_new)
    fresh = batch.slice(seen)  # zero-copy: a view of the rows not applied yet
    if isinstance(sink, LogRows):
        sink.add(fresh.to_pylist())
        return
    for row in fresh.to_pylist():
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
    out = json.dumps(result, default=str)
    if args.result:
        with open(args.result, "w") as f:
            f.write(out)
    else:
        print(out)


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
                 f'python3 -m pip install "apache-iggy=={IGGY_CLIENT}"')


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
    p.add_argument("--key", default="id", help="primary-key column (per-key state)")
    p.add_argument("--key-state", action="store_true",
                   help="arrow: keep per-key state from the $changelog columns of a PK table")
    p.add_argument("--count", type=int, default=1000, help="messages per poll")
    p.add_argument("--idle-exit", type=float, default=0, help="stop after this many idle seconds")
    p.add_argument("--stop-file", help="stop at the first empty poll once this file exists")
    p.add_argument("--result", help="write the result JSON here instead of stdout")
    asyncio.run(consume(p.parse_args()))


if __name__ == "__main__":
    main()
