// Licensed to the Apache Software Foundation (ASF) under one
// or more contributor license agreements.  See the NOTICE file
// distributed with this work for additional information
// regarding copyright ownership.  The ASF licenses this file
// to you under the Apache License, Version 2.0 (the
// "License"); you may not use this file except in compliance
// with the License.  You may obtain a copy of the License at
//
//   http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing,
// software distributed under the License is distributed on an
// "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY
// KIND, either express or implied.  See the License for the
// specific language governing permissions and limitations
// under the License.

//! The consumer examples of `examples/` against the real runtime: each consumes the topic while
//! `iggy-connectors` is killed with SIGKILL and restarted twice, the restarts with another
//! `batch_size` and `max_batch_bytes` (so every replay is cut into messages anew), drops the
//! repeats by the last position per bucket, and ends with exactly the table: rows of a log table
//! (JSON and Arrow IPC, with and without a `filter`), or a primary-key table's state per key
//! (Debezium, with and without a `filter`, killed within its snapshot too).
//!
//! One file because every test drives both consumer examples through the
//! same kills and re-cuts of the helpers at its top; the tests differ only in
//! the table kind, the payload format and the `filter`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use fluss_testkit::fluss::metadata::TablePath;
use fluss_testkit::fluss::row::GenericRow;
use fluss_testkit::iggy::{ConnectorsRuntime, Message, Program, SourceConnector, Stop};
use fluss_testkit::tables::{
    sample_amount, sample_log_schema, sample_name, sample_pk_schema, sample_row,
};
use fluss_testkit::write::{self, Change};
use serde_json::{Value, json};

use crate::fixture::{DELIVERY, World, append, bucket, connector, create_table, offset, rt};

const BUCKETS: i32 = 3;

fn example(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(path)
}

/// A consumer example polling `topic` from its first message; it stops once the test creates
/// its stop file and the topic is drained.
struct Consumer {
    name: &'static str,
    program: Program,
    stop_file: PathBuf,
    result: PathBuf,
    log: PathBuf,
}

impl Consumer {
    fn start(
        world: &World,
        name: &'static str,
        mut command: Command,
        topic: &str,
        format: &str,
    ) -> Consumer {
        let file = |ext: &str| world.dir.join(format!("{topic}-{name}.{ext}"));
        let (stop_file, result, log) = (file("stop"), file("json"), file("log"));
        command
            .args(["--server", &world.server.address()])
            .args(["--stream", crate::fixture::STREAM, "--topic", topic])
            .args(["--format", format])
            .arg("--stop-file")
            .arg(&stop_file)
            .arg("--result")
            .arg(&result);
        Consumer {
            name,
            program: Program::start(name, command, &log),
            stop_file,
            result,
            log,
        }
    }

    /// Tells the consumer to stop once drained, waits for its exit and returns its result,
    /// printing the repeats it dropped (which must be the rows the topic holds twice).
    fn finish(self, expected_repeats: usize) -> Value {
        std::fs::write(&self.stop_file, b"").expect("write the stop file");
        let name = self.name;
        let status = self.program.wait(DELIVERY);
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        assert!(status.success(), "the {name} failed ({status}):\n{log}");
        let text = std::fs::read_to_string(&self.result)
            .unwrap_or_else(|e| panic!("read {}: {e}; {name} log:\n{log}", self.result.display()));
        let value: Value = serde_json::from_str(&text).expect("the consumer's result is JSON");
        eprintln!(
            "{name}: {} messages, {} repeated rows dropped",
            value["messages"], value["repeats"]
        );
        assert_eq!(
            value["repeats"].as_u64(),
            Some(expected_repeats as u64),
            "the {name} dropped exactly the rows the topic holds twice"
        );
        value
    }
}

/// Every consumer example on `topic`: the Python one, and the Rust one when
/// `CONSUMER_RUST_BIN` names its binary (scripts/test-runtime.sh builds it and sets it, unless
/// `CONSUMER_RUST=0`).
fn consumers(world: &World, topic: &str, format: &str) -> Vec<Consumer> {
    // The Iggy client and pyarrow from the suites' virtual environment.
    let mut python = Command::new(fluss_testkit::python::python());
    python.arg(example("consumer_python/consume.py"));
    let mut started = vec![Consumer::start(
        world,
        "python consumer",
        python,
        topic,
        format,
    )];
    match std::env::var_os("CONSUMER_RUST_BIN").filter(|bin| !bin.is_empty()) {
        Some(bin) => {
            let bin = PathBuf::from(bin);
            assert!(
                bin.is_file(),
                "CONSUMER_RUST_BIN={} is not a file; build it with `cargo build --release --locked --manifest-path examples/consumer_rust/Cargo.toml`",
                bin.display()
            );
            started.push(Consumer::start(
                world,
                "rust consumer",
                Command::new(bin),
                topic,
                format,
            ));
        }
        None => eprintln!(
            "rust consumer: not run (CONSUMER_RUST_BIN is not set; scripts/test-runtime.sh builds and runs it)"
        ),
    }
    started
}

/// Kills the runtime with SIGKILL twice. A copy of connector `key`'s state file is taken once
/// `progress` (rows in the topic) reaches `backup_at` (`None`: the copy is "no state file",
/// taken before the first run); the first kill comes once `progress` reaches `kill_at`, the
/// second as soon as the runtime has opened the connector again, and that restart puts the
/// copy back, as an operator restoring a backup (or losing the state file) would
/// (docs/operations.md "Upgrading and rolling back"): everything delivered since the copy comes
/// again, so the consumers have repeats to drop whatever instant the kills hit. Each restart
/// runs the connector as `recuts` says (other batch limits: the replay is cut anew).
fn kill_twice(
    world: &World,
    runtime: &mut ConnectorsRuntime,
    (key, recuts): (&str, [&SourceConnector; 2]),
    topic: &str,
    progress: impl Fn(&[Message]) -> usize,
    (backup_at, kill_at): (Option<usize>, usize),
) {
    let state = runtime.state_file(key);
    let backup = backup_at.map(|at| {
        world.wait_for(topic, &format!("{at} rows"), |m| progress(m) >= at);
        stable_copy(&state)
    });
    world.wait_for(topic, &format!("{kill_at} rows before a SIGKILL"), |m| {
        progress(m) >= kill_at
    });
    runtime.stop(Stop::Kill).expect("the runtime was running");
    runtime.rewrite(recuts[0]);
    runtime.restart();
    runtime.wait_for_log("(saved state)", 1, DELIVERY);
    runtime.stop(Stop::Kill).expect("the runtime was running");
    match backup {
        Some(bytes) => std::fs::write(&state, bytes).expect("put the older state back"),
        None => std::fs::remove_file(&state).expect("remove the state file"),
    }
    runtime.rewrite(recuts[1]);
    runtime.restart();
}

/// `connector` three ways: as given, then with few small messages per batch, then with large
/// ones, so that each restart cuts the rows it sends again into other messages.
fn recut(connector: impl Fn(Value) -> SourceConnector) -> [SourceConnector; 3] {
    [
        connector(json!({})),
        connector(json!({ "batch_size": 7, "max_batch_bytes": 1500 })),
        connector(json!({ "batch_size": 400, "max_batch_bytes": 262_144 })),
    ]
}

/// `extra` with `more`'s keys added.
fn with(extra: &Value, more: Value) -> Value {
    let mut extra = extra.clone();
    if let (Value::Object(base), Value::Object(more)) = (&mut extra, more) {
        base.extend(more);
    }
    extra
}

/// The state file's bytes, read until two reads agree (the runtime rewrites it while it runs).
fn stable_copy(state: &Path) -> Vec<u8> {
    let read = || std::fs::read(state).expect("read the state file");
    let mut last = read();
    loop {
        std::thread::sleep(std::time::Duration::from_millis(50));
        let now = read();
        if now == last {
            return now;
        }
        last = now;
    }
}

/// The (bucket, offset) of every row a message carries: an Arrow IPC message's own
/// `_log_offset` column when it has one, else consecutive from its `fluss_offset`.
fn row_positions(m: &Message) -> Vec<(i32, i64)> {
    let (b, first) = (bucket(m), offset(m));
    let Some(rows) = m.headers.get("fluss_row_count").and_then(|c| c.as_i64()) else {
        return vec![(b, first)];
    };
    let batch = arrow_ipc::reader::StreamReader::try_new(m.payload.as_slice(), None)
        .expect("an Arrow IPC stream")
        .next()
        .expect("one batch")
        .expect("a valid batch");
    match batch.column_by_name("_log_offset") {
        Some(offsets) => offsets
            .as_primitive::<Int64Type>()
            .values()
            .iter()
            .map(|o| (b, *o))
            .collect(),
        None => (first..first + rows).map(|o| (b, o)).collect(),
    }
}

/// Rows the topic holds (each counted once), and rows it holds more than once.
fn distinct_and_repeated(messages: &[Message]) -> (usize, usize) {
    let mut seen = BTreeSet::new();
    let mut repeated = 0;
    for position in messages.iter().flat_map(row_positions) {
        if !seen.insert(position) {
            repeated += 1;
        }
    }
    (seen.len(), repeated)
}

fn sample_json(id: i64) -> Value {
    json!({ "id": id, "name": sample_name(id), "amount": sample_amount(id) })
}

/// Rows whose `amount` scatters over 0..10, so that `amount < 5` keeps about half of them
/// with gaps of every length between.
const SCATTERED: &str = "amount < 5";

fn scattered_amount(id: i64) -> f64 {
    (id * 37 % 10) as f64
}

fn scattered_row(id: i64) -> GenericRow<'static> {
    let mut row = sample_row(id);
    row.set_field(2, scattered_amount(id));
    row
}

fn scattered_json(id: i64) -> Value {
    json!({ "id": id, "name": sample_name(id), "amount": scattered_amount(id) })
}

/// A log table read through two SIGKILLs by the consumers in `format`, restarted with other
/// batch limits; with `filtered`, through the filter [`SCATTERED`].
fn log_rows_through_two_kills(
    test: &str,
    format: &str,
    schema: &str,
    extra: Value,
    filtered: bool,
) {
    const ROWS: i64 = 6000;
    type Rows = (fn(i64) -> GenericRow<'static>, fn(i64) -> Value);
    let (row, want): Rows = if filtered {
        (scattered_row, scattered_json)
    } else {
        (sample_row, sample_json)
    };
    let kept = |id: &i64| !filtered || scattered_amount(*id) < 5.0;
    let extra = if filtered {
        with(&extra, json!({ "filter": SCATTERED }))
    } else {
        extra
    };
    let topic = format!("orders_{format}");
    let world = World::new(test);
    let (table, _) = create_table(test, sample_log_schema(), BUCKETS);
    append(&table, (0..ROWS / 3).map(row));
    let consumers = consumers(&world, &topic, format);
    let key = format!("fluss_{test}");
    let [first, small, large] =
        recut(|cut| connector(&key, &table, &topic, schema, with(&extra, cut)));
    let mut runtime = world.runtime(&[first]);
    // Small appends while the runtime reads and dies: many small batches.
    let writer = {
        let table = table.clone();
        std::thread::spawn(move || {
            for chunk in (ROWS / 3..ROWS).step_by(100) {
                append(&table, (chunk..chunk + 100).map(row));
            }
        })
    };
    let rows = (0..ROWS).filter(kept).count();
    let distinct = |m: &[Message]| distinct_and_repeated(m).0;
    // The rows move faster than the topic can be read back: the second restart starts over.
    let kill_at = rows / 2;
    kill_twice(
        &world,
        &mut runtime,
        (&key, [&small, &large]),
        &topic,
        distinct,
        (None, kill_at),
    );
    writer.join().expect("writer thread");
    world.wait_for(&topic, &format!("{rows} distinct rows and repeats"), |m| {
        let (distinct, repeated) = distinct_and_repeated(m);
        distinct >= rows && repeated > 0
    });
    runtime.stop(Stop::Interrupt);
    let (_, repeated) = distinct_and_repeated(&world.messages(&topic));

    for consumer in consumers {
        let name = consumer.name;
        let value = consumer.finish(repeated);
        let mut rows = value["rows"].as_array().expect("rows").clone();
        rows.sort_by_key(|row| row["id"].as_i64());
        assert_eq!(
            rows,
            (0..ROWS).filter(kept).map(want).collect::<Vec<_>>(),
            "after de-duplication the {name} holds every row of the table once"
        );
        if !value["decoded"].is_null() {
            eprintln!(
                "{name}: decoded {}, decode rate {}",
                value["decoded"], value["decode_rate"]
            );
        }
    }
}

#[test]
fn json_consumers_see_every_row_once_through_two_sigkills() {
    log_rows_through_two_kills("consume_py_json", "json", "json", json!({}), false);
}

#[test]
fn arrow_consumers_see_every_row_once_through_two_sigkills() {
    log_rows_through_two_kills(
        "consume_py_ipc",
        "arrow",
        "raw",
        json!({ "payload_format": "arrow_ipc" }),
        false,
    );
}

#[test]
fn filtered_json_consumers_see_every_kept_row_once_through_kills_and_recuts() {
    log_rows_through_two_kills("consume_filtered_json", "json", "json", json!({}), true);
}

#[test]
fn filtered_arrow_consumers_see_every_kept_row_once_through_kills_and_recuts() {
    log_rows_through_two_kills(
        "consume_filtered_ipc",
        "arrow",
        "raw",
        json!({ "payload_format": "arrow_ipc" }),
        true,
    );
}

fn renamed(id: i64, round: i64) -> GenericRow<'static> {
    let mut row = GenericRow::new(3);
    row.set_field(0, id);
    row.set_field(1, format!("round-{round}-{id}"));
    row.set_field(2, (id * round) as f64);
    row
}

fn write_changes(table: &TablePath, changes: Vec<Change<'static>>) {
    rt().block_on(async {
        let connection = fluss_testkit::Cluster::shared().connection().await;
        write::write_changes(&connection, table, changes).await;
    });
}

/// Replays Debezium events by id (each id once), as a check independent of the consumers: a
/// bucket's snapshot taken anew (another snapshot offset, or numbering, in its ids) replaces its
/// keys.
fn replay(messages: &[Message]) -> BTreeMap<i64, Value> {
    let mut ids = BTreeSet::new();
    let mut snapshots: BTreeMap<i64, u128> = BTreeMap::new();
    let mut state: BTreeMap<i64, (i64, Value)> = BTreeMap::new();
    for m in messages.iter().filter(|m| ids.insert(m.id)) {
        let event: Value = serde_json::from_slice(&m.payload).expect("payload is JSON");
        let bucket = event["source"]["bucket"].as_i64().expect("source.bucket");
        if m.id >> 126 >= 2 {
            let snapshot = (m.id >> 126) << 24 | (m.id >> 32) & ((1 << 24) - 1);
            if snapshots
                .insert(bucket, snapshot)
                .is_some_and(|before| before != snapshot)
            {
                state.retain(|_, (b, _)| *b != bucket);
            }
        }
        let key = |image: &Value| image["id"].as_i64().expect("key in the image");
        if event["op"] == "d" {
            state.remove(&key(&event["before"]));
        } else {
            state.insert(key(&event["after"]), (bucket, event["after"].clone()));
        }
    }
    state
        .into_iter()
        .map(|(key, (_, row))| (key, row))
        .collect()
}

/// A primary-key table's snapshot and changes read as Debezium events through two SIGKILLs,
/// the restarts with other batch limits. With a `filter` (`amount < limit`), the table is
/// larger and read a few rows per batch at first, so the first kill hits within its snapshot.
fn changes_through_two_kills(test: &str, topic: &str, filter: Option<f64>) {
    let keys: i64 = if filter.is_some() { 20_000 } else { 600 };
    const ROUNDS: i64 = 10;
    let world = World::new(test);
    let (table, _) = create_table(test, sample_pk_schema(), BUCKETS);
    // The first rows arrive as snapshot events (`starting_offset = "full"`, the default): the
    // runtime starts once every bucket's KV snapshot holds them, so no bucket's changelog starts
    // before the changes below, and the restart without state reads the same snapshots again
    // (a newer snapshot after a bucket's log began is one the consumers rightly drop whole).
    write_changes(
        &table,
        (0..keys).map(|id| Change::Upsert(sample_row(id))).collect(),
    );
    rt().block_on(async {
        let connection = fluss_testkit::Cluster::shared().connection().await;
        let admin = connection.get_admin().expect("admin");
        fluss_testkit::tables::kv_snapshots_caught_up(&admin, &table, DELIVERY).await;
    });
    let consumers = consumers(&world, topic, "debezium");
    let key = format!("fluss_{test}");
    let mut extra = json!({ "changelog_format": "debezium" });
    if let Some(limit) = filter {
        extra = with(
            &extra,
            json!({ "filter": format!("amount < {limit}"), "batch_size": 10 }),
        );
    }
    let [first, small, large] =
        recut(|cut| connector(&key, &table, topic, "json", with(&extra, cut)));
    let mut runtime = world.runtime(&[first]);
    // Each round updates a tenth of the keys, deletes a few and inserts new ones.
    let mut expected: BTreeMap<i64, Value> = (0..keys).map(|id| (id, sample_json(id))).collect();
    let mut rounds = Vec::new();
    for round in 1..=ROUNDS {
        let mut changes = Vec::new();
        for id in (round..keys).step_by(10) {
            changes.push(Change::Upsert(renamed(id, round)));
            expected.insert(
                id,
                json!({ "id": id, "name": format!("round-{round}-{id}"), "amount": (id * round) as f64 }),
            );
        }
        for id in (round * 7..keys).step_by(97) {
            changes.push(Change::Delete(sample_row(id)));
            expected.remove(&id);
        }
        let new = keys + round;
        changes.push(Change::Upsert(sample_row(new)));
        expected.insert(new, sample_json(new));
        rounds.push(changes);
    }
    if let Some(limit) = filter {
        expected.retain(|_, row| row["amount"].as_f64().expect("amount") < limit);
    }
    let count = |m: &[Message]| m.len();
    let snapshot_rows = match filter {
        Some(limit) => (0..keys).filter(|id| sample_amount(*id) < limit).count(),
        None => keys as usize,
    };
    let write_rounds = move |table: TablePath| {
        std::thread::spawn(move || {
            for changes in rounds {
                write_changes(&table, changes);
                std::thread::sleep(std::time::Duration::from_millis(300));
            }
        })
    };
    let recuts = (key.as_str(), [&small, &large]);
    let writer = if filter.is_some() {
        // The first kill comes within the snapshot; the second restart starts over without
        // state, so the whole snapshot comes again.
        let points = (None, snapshot_rows / 4);
        kill_twice(&world, &mut runtime, recuts, topic, count, points);
        write_rounds(table.clone())
    } else {
        // The changes start once the snapshot is in the topic; the copy of the state and the
        // first kill come among them.
        world.wait_for(topic, "the snapshot", |m| count(m) >= snapshot_rows);
        let writer = write_rounds(table.clone());
        let points = (Some(snapshot_rows + 50), snapshot_rows + 300);
        kill_twice(&world, &mut runtime, recuts, topic, count, points);
        writer
    };
    writer.join().expect("writer thread");
    let distinct_ids = |m: &[Message]| m.iter().map(|m| m.id).collect::<BTreeSet<_>>().len();
    world.wait_for(topic, "the table's final state and repeats", |m| {
        distinct_ids(m) < m.len() && replay(m) == expected
    });
    runtime.stop(Stop::Interrupt);
    let messages = world.messages(topic);
    let repeated = messages.len() - distinct_ids(&messages);

    for consumer in consumers {
        let name = consumer.name;
        let value = consumer.finish(repeated);
        let state: BTreeMap<i64, Value> = value["state"]
            .as_array()
            .expect("state")
            .iter()
            .map(|row| (row["id"].as_i64().expect("id"), row.clone()))
            .collect();
        assert_eq!(
            state, expected,
            "after de-duplication the {name}'s state per key equals the table"
        );
    }
}

#[test]
fn debezium_consumers_keep_the_table_state_through_two_sigkills() {
    changes_through_two_kills("consume_py_cdc", "customers_cdc", None);
}

#[test]
fn filtered_debezium_consumers_keep_the_view_through_kills_within_the_snapshot() {
    changes_through_two_kills("consume_filtered_cdc", "customers_filtered", Some(15_000.0));
}

#[test]
fn every_fluss_type_reaches_the_arrow_consumers_intact() {
    use fluss_testkit::all_types::{all_types_row, all_types_schema};
    const ROWS: i64 = 300;
    let topic = "every_type";
    let world = World::new("consume_every_type");
    let (table, _) = create_table("consume_every_type", all_types_schema(), BUCKETS);
    append(&table, (0..ROWS).map(all_types_row));
    let consumers = consumers(&world, topic, "arrow");
    let key = "fluss_consume_every_type";
    let json = json!({ "payload_format": "arrow_ipc" });
    let mut runtime = world.runtime(&[connector(key, &table, topic, "raw", json)]);
    world.wait_for(topic, &format!("{ROWS} rows"), |m| {
        distinct_and_repeated(m).0 >= ROWS as usize
    });
    runtime.stop(Stop::Interrupt);
    let (_, repeated) = distinct_and_repeated(&world.messages(topic));
    for consumer in consumers {
        let name = consumer.name;
        let value = consumer.finish(repeated);
        let rows = value["rows"].as_array().expect("rows");
        let ids: BTreeSet<i64> = rows
            .iter()
            .map(|row| row["id"].as_i64().expect("id"))
            .collect();
        assert_eq!(
            (rows.len(), ids),
            (ROWS as usize, (0..ROWS).collect()),
            "the {name} decoded and wrote every row of every type once"
        );
        // Rows `id % 4 == 3` are NULL but for `id` (which arrow-json leaves out).
        assert!(
            rows.iter()
                .filter(|row| row["id"].as_i64().is_some_and(|id| id % 4 != 3))
                .all(|row| row.as_object().is_some_and(|o| o.len() > 20)),
            "the {name}'s rows hold every column"
        );
    }
}
