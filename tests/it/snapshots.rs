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

//! `starting_offset = "full"`: a primary-key table's buckets first deliver their current rows
//! (snapshot rows, `op = "r"`), then their changelog. Replaying what arrives must give the
//! table (compared with a lookup of every key), also when retention removed the head of the
//! changelog, when rows are written during the snapshots, after Nacks, and per partition.
//!
//! One file because every test replays what arrives against a lookup of
//! the table with the helpers at its top (the `full` config, replaying JSON and
//! Arrow IPC into a table state, tables whose changelog head expired, KV snapshot offsets). The
//! tests follow in three groups: what the snapshots deliver (a cut changelog, writes and Nacks,
//! partitions, a bucket without a KV snapshot), restarts (kill -9, mid-snapshot, a snapshot gone
//! by then) and faults (a leader killed, an unwritable `snapshot_dir`).

use std::collections::HashSet;
use std::time::{Duration, Instant};

use arrow_array::{Array, Float64Array, Int64Array, StringArray};
use arrow_ipc::reader::StreamReader;
use fluss_source_runner::{Level, logs};
use fluss_testkit::fluss::client::FlussConnection;
use fluss_testkit::fluss::metadata::{TableDescriptor, TablePath};
use fluss_testkit::fluss::rpc::message::OffsetSpec;
use fluss_testkit::{Cluster, ClusterOptions, poll_until, tables, unique_table};
use iggy_connector_fluss_source::snapshot::kv::local_dir::disk_bytes;
use serde_json::{Value, json};

use crate::arrow_ipc::column;
use crate::fixture::{Answer, Received, Stream, cluster, log_ends, rt};
use crate::pk_script::{Op, TableState, apply_script, lookup_all, lookup_all_on, replay, script};

/// A `full` config for `table` on `bootstrap`.
fn full(bootstrap: &str, table: &str, extra: Value) -> Value {
    let mut c = json!({
        "bootstrap_servers": bootstrap,
        "database": tables::TEST_DATABASE,
        "table": table,
        "poll_interval": "200ms",
        "connect_timeout": "20s",
        "starting_offset": "full",
    });
    if let (Value::Object(c), Value::Object(e)) = (&mut c, extra) {
        c.extend(e);
    }
    c
}

/// The log lines at `level` since line `since` that hold every one of `needles`.
fn lines_with(since: usize, level: Level, needles: &[&str]) -> Vec<String> {
    logs()
        .into_iter()
        .skip(since)
        .filter(|l| l.level == level && needles.iter().all(|n| l.message.contains(n)))
        .map(|l| l.message)
        .collect()
}

fn replay_json(events: &[Received]) -> TableState {
    replay(events.iter().map(|m| &m.payload))
}

fn op(m: &Received) -> &str {
    m.payload
        .get("__op")
        .unwrap_or(&m.payload["op"])
        .as_str()
        .expect("op")
}

/// Applies Arrow IPC changelog messages in delivery order; returns the table and the
/// `_change_type`s seen.
fn replay_ipc(messages: &[Received]) -> (TableState, HashSet<String>) {
    let mut state = TableState::new();
    let mut kinds = HashSet::new();
    for m in messages {
        let mut reader = StreamReader::try_new(m.raw.as_slice(), None).expect("IPC stream");
        let batch = reader.next().expect("one batch").expect("valid batch");
        let change = column::<StringArray>(&batch, "_change_type");
        let id = column::<Int64Array>(&batch, "id");
        let name = column::<StringArray>(&batch, "name");
        let amount = column::<Float64Array>(&batch, "amount");
        for row in 0..batch.num_rows() {
            let key = (id.value(row), String::new());
            kinds.insert(change.value(row).to_owned());
            match change.value(row) {
                "insert" | "update_after" => {
                    state.insert(key, (name.value(row).to_owned(), amount.value(row)));
                }
                "delete" => {
                    state.remove(&key);
                }
                "update_before" => {}
                other => panic!("unknown _change_type {other}"),
            }
            assert!(!amount.is_null(row));
        }
    }
    (state, kinds)
}

/// Upserts of ids `ids` (named after `version`) in `flushes` separate writes.
async fn upserts(
    conn: &FlussConnection,
    path: &TablePath,
    ids: std::ops::Range<i64>,
    version: &str,
    flushes: i64,
) {
    let per = ((ids.end - ids.start) / flushes).max(1);
    let mut at = ids.start;
    while at < ids.end {
        let end = (at + per).min(ids.end);
        let ops: Vec<Op> = (at..end)
            .map(|id| Op::Upsert(id, format!("{version}-{id}"), id as f64))
            .collect();
        apply_script(conn, path, &ops, None).await;
        at = end;
    }
}

async fn offsets(conn: &FlussConnection, path: &TablePath, spec: OffsetSpec) -> Vec<i64> {
    let admin = conn.get_admin().expect("admin");
    let offsets = tokio::time::timeout(
        Duration::from_secs(10),
        admin.list_offsets(path, &[0, 1], spec),
    )
    .await
    .expect("list_offsets answers")
    .expect("list_offsets");
    vec![offsets[&0], offsets[&1]]
}

/// A primary-key table (2 buckets) on a cluster whose logs expire within seconds, whose first
/// 200 keys were written and whose log start then expired past all of their changes; then
/// keys 200..400 were written, ids 0..20 updated and ids 20..30 deleted.
fn truncated_table() -> (Cluster, TablePath, TableState) {
    let (cluster, path, expected, ()) = truncated_table_with(|_, _| ());
    (cluster, path, expected)
}

/// [`truncated_table`], calling `midway` (with the cluster's bootstrap servers and the table)
/// once the first 100 keys are written; returns what it returned too.
fn truncated_table_with<T>(
    midway: impl FnOnce(&str, &TablePath) -> T,
) -> (Cluster, TablePath, TableState, T) {
    let cluster = Cluster::start(ClusterOptions {
        conf: vec![
            ("log.segment.file-size".into(), "1kb".into()),
            ("remote.log.task-interval-duration".into(), "1s".into()),
            ("table.log.tiered.local-segments".into(), "1".into()),
            ("kv.snapshot.interval".into(), "1s".into()),
        ],
        ..ClusterOptions::default()
    });
    let path = unique_table("snap_truncated");
    let conn = rt().block_on(async {
        let conn = cluster.connection().await;
        let admin = conn.get_admin().unwrap();
        let descriptor = TableDescriptor::builder()
            .schema(tables::sample_pk_schema())
            .distributed_by(Some(2), vec!["id".to_string()])
            .property("table.log.ttl", "1s")
            .build()
            .expect("descriptor");
        tables::create_table(&admin, &path, &descriptor).await;
        upserts(&conn, &path, 0..100, "first", 10).await;
        conn
    });
    let midway = midway(cluster.bootstrap(), &path);
    let expected =
        rt().block_on(async {
            upserts(&conn, &path, 100..200, "first", 10).await;
            let first_end = offsets(&conn, &path, OffsetSpec::Latest).await;
            upserts(&conn, &path, 200..400, "second", 20).await;
            upserts(&conn, &path, 0..20, "updated", 4).await;
            let deletes: Vec<Op> = (20..30).map(Op::Delete).collect();
            apply_script(&conn, &path, &deletes, None).await;
            let started = Instant::now();
            poll_until(
            Duration::from_secs(120),
            Duration::from_millis(500),
            "the log start of both buckets to pass the first 200 keys' changes (table.log.ttl 1s)",
            || async {
                let start = offsets(&conn, &path, OffsetSpec::Earliest).await;
                if start.iter().zip(&first_end).all(|(s, e)| s >= e) {
                    Ok(())
                } else {
                    // Keep rolling segments so the ones holding the first keys can expire.
                    upserts(&conn, &path, 390..400, "roll", 1).await;
                    Err(format!("log starts at {start:?}, first keys end at {first_end:?}"))
                }
            },
        )
        .await;
            eprintln!(
                "snapshot: changelog head expired after {:?}",
                started.elapsed()
            );
            lookup_all_on(&cluster, &path, 400, &[None]).await
        });
    (cluster, path, expected, midway)
}

#[test]
fn full_reproduces_a_table_whose_changelog_head_expired_and_earliest_does_not() {
    let (cluster, path, expected) = truncated_table();
    assert_eq!(expected.len(), 390, "400 keys written, 10 deleted");
    let bootstrap = cluster.bootstrap();

    // `earliest` replays only what the changelog still holds.
    let mut s = Stream::open(
        &full(
            bootstrap,
            path.table(),
            json!({"starting_offset": "earliest"}),
        ),
        None,
    )
    .expect("open");
    let ends = log_ends(&cluster, &path, None);
    s.read_to(&ends, Answer::AckAll);
    let partial = replay_json(&s.acked);
    let missing: Vec<i64> = expected
        .keys()
        .filter(|k| !partial.contains_key(k))
        .map(|k| k.0)
        .collect();
    assert!(
        missing.len() >= 100,
        "with `earliest` the keys whose changes expired are missing ({} missing)",
        missing.len()
    );
    eprintln!(
        "snapshot: `earliest` misses {} of {} keys",
        missing.len(),
        expected.len()
    );
    drop(s);

    for format in ["debezium", "flat"] {
        let since = logs().len();
        let mut s = Stream::open(
            &full(
                bootstrap,
                path.table(),
                json!({"changelog_format": format, "batch_size": 100}),
            ),
            None,
        )
        .expect("open");
        s.read_to(&ends, Answer::AckAll);
        assert_eq!(
            replay_json(&s.acked),
            expected,
            "{format}: full replays to the table"
        );
        let reads: Vec<&Received> = s.acked.iter().filter(|m| op(m) == "r").collect();
        assert_eq!(reads.len(), 390, "{format}: one snapshot row per live key");
        let ids: HashSet<u128> = s.acked.iter().map(|m| m.id).collect();
        assert_eq!(ids.len(), s.acked.len(), "{format}: one id per message");
        assert!(
            reads
                .iter()
                .all(|m| m.id >> 126 == 2 && m.change_type.as_deref() == Some("+I")),
            "snapshot ids have layout version 10 and the +I header"
        );
        if format == "debezium" {
            assert!(reads.iter().all(|m| m.payload["before"].is_null()));
            assert!(
                reads
                    .iter()
                    .all(|m| m.payload["source"]["offset"].as_i64() == Some(m.offset))
            );
        }
        let lines: Vec<String> = logs()
            .into_iter()
            .skip(since)
            .filter(|l| l.level == Level::Info && l.message.contains("snapshot"))
            .map(|l| l.message)
            .collect();
        for bucket in ["bucket 0", "bucket 1"] {
            assert!(
                lines
                    .iter()
                    .any(|l| l.contains(&format!("{bucket}: snapshot starts"))),
                "{lines:#?}"
            );
            assert!(
                lines
                    .iter()
                    .any(|l| l.contains(&format!("{bucket}: snapshot handed over"))
                        && l.contains("rows=")
                        && l.contains("bytes=")
                        && l.contains("seconds=")
                        && l.contains("changelog continues at offset")),
                "{lines:#?}"
            );
        }
        let state = s.close().expect("state");
        // A restart continues from the changelog positions: no second snapshot.
        let mut again =
            Stream::open(&full(bootstrap, path.table(), json!({})), Some(state)).expect("reopen");
        again.read_for(Duration::from_secs(3), Answer::AckAll);
        assert!(
            again.acked.is_empty(),
            "{format}: a restart after the snapshots delivers nothing new: {} messages",
            again.acked.len()
        );
    }

    let mut s = Stream::open(
        &full(
            bootstrap,
            path.table(),
            json!({"payload_format": "arrow_ipc"}),
        ),
        None,
    )
    .expect("open");
    s.read_to(&ends, Answer::AckAll);
    let (state, kinds) = replay_ipc(&s.acked);
    assert_eq!(state, expected, "Arrow IPC: full replays to the table");
    assert_eq!(kinds, HashSet::from(["insert".to_owned()]));
}

#[test]
fn a_cut_changelog_with_on_offset_out_of_range_snapshot_is_read_again_from_its_kv_snapshot() {
    let config = |bootstrap: &str, table: &str| {
        full(
            bootstrap,
            table,
            json!({"on_offset_out_of_range": "snapshot", "batch_size": 100}),
        )
    };
    // A consumer that read the first 100 keys and stopped; retention then removed the rest of
    // their changes and more (deletes of ids 20..30 included) before it came back.
    let (cluster, path, expected, (before, state)) = truncated_table_with(|bootstrap, path| {
        let mut s = Stream::open(&config(bootstrap, path.table()), None).expect("open");
        // All 100 keys: one message each (snapshot rows or inserts).
        s.read(100, Answer::AckAll);
        let before = std::mem::take(&mut s.acked);
        (before, s.close().expect("state"))
    });
    assert_eq!(
        replay_json(&before).len(),
        100,
        "the first run read 100 keys"
    );
    let since = logs().len();
    let mut s =
        Stream::open(&config(cluster.bootstrap(), path.table()), Some(state)).expect("reopen");
    s.read_to(&log_ends(&cluster, &path, None), Answer::AckAll);
    let warns = lines_with(
        since,
        Level::Warn,
        &[
            path.table(),
            "is not on the server any more",
            "on_offset_out_of_range = \"snapshot\"",
        ],
    );
    assert_eq!(warns.len(), 2, "one WARN line per bucket: {warns:#?}");
    // What the consumer sees: a new run of snapshot events (every live key once), then the
    // changelog from the snapshot's offset.
    let reads: Vec<&Received> = s.acked.iter().filter(|m| op(m) == "r").collect();
    let read_keys: HashSet<i64> = reads
        .iter()
        .map(|m| m.payload["after"]["id"].as_i64().expect("id"))
        .collect();
    assert_eq!(reads.len(), read_keys.len(), "each key once in the new run");
    assert_eq!(
        read_keys,
        expected.keys().map(|k| k.0).collect::<HashSet<i64>>(),
        "the new run of snapshot events holds every live key"
    );
    let mut taken_at: std::collections::HashMap<i32, i64> = Default::default();
    for m in &s.acked {
        if op(m) == "r" {
            taken_at.insert(m.bucket, m.offset);
        } else {
            let at = taken_at.get(&m.bucket).copied();
            assert!(
                at.is_some_and(|at| m.offset >= at),
                "bucket {}: change at offset {} before or below its snapshot ({at:?})",
                m.bucket,
                m.offset
            );
        }
    }
    // A consumer applying both runs per key ends with the table's rows; keys deleted in the
    // range retention removed stay with it (README: like Debezium's `when_needed`).
    let both: Vec<Received> = before
        .into_iter()
        .chain(std::mem::take(&mut s.acked))
        .collect();
    let mut consumer = replay_json(&both);
    let stale: Vec<i64> = consumer
        .keys()
        .filter(|k| !expected.contains_key(k))
        .map(|k| k.0)
        .collect();
    assert!(
        stale.iter().all(|id| (20..30).contains(id)),
        "only keys deleted in the removed range stay with the consumer: {stale:?}"
    );
    consumer.retain(|k, _| expected.contains_key(k));
    assert_eq!(consumer, expected, "every live key has the table's row");
}

/// The log offset of each bucket's latest KV snapshot (`None`: none yet), in bucket order.
async fn kv_snapshot_offsets(
    conn: &FlussConnection,
    path: &TablePath,
    partition: Option<&str>,
) -> Result<Vec<Option<i64>>, String> {
    let admin = conn.get_admin().unwrap();
    let latest = admin
        .get_latest_kv_snapshots(path, partition)
        .await
        .map_err(|e| e.to_string())?;
    let mut listed: Vec<(i32, Option<i64>)> = latest
        .latest_snapshots
        .iter()
        .map(|snapshot| {
            (
                snapshot.bucket_id,
                snapshot.snapshot_id.and(snapshot.log_offset),
            )
        })
        .collect();
    listed.sort_unstable();
    Ok(listed.into_iter().map(|(_, offset)| offset).collect())
}

/// Waits until each of the `buckets` buckets of `path` (of its partition `partition`) has a
/// KV snapshot: a bucket written less than `kv.snapshot.interval` ago has none yet, and reads
/// its changelog instead of delivering snapshot rows.
pub fn kv_snapshots_taken(
    conn: &FlussConnection,
    path: &TablePath,
    partition: Option<&str>,
    buckets: usize,
) {
    rt().block_on(poll_until(
        Duration::from_secs(60),
        Duration::from_millis(250),
        "a KV snapshot of every bucket",
        || async {
            let at = kv_snapshot_offsets(conn, path, partition).await?;
            let taken = at.iter().flatten().count();
            if taken == buckets {
                Ok(())
            } else {
                Err(format!("{taken} of {buckets} buckets have one"))
            }
        },
    ));
}

/// A primary-key table on the shared cluster with `keys` keys after a script of `ops`.
fn populated(prefix: &str, ops: usize, keys: i64, buckets: i32) -> (FlussConnection, TablePath) {
    let path = unique_table(prefix);
    let conn = rt().block_on(cluster().connection());
    rt().block_on(async {
        let admin = conn.get_admin().unwrap();
        tables::create_pk_table(&admin, &path, tables::sample_pk_schema(), buckets).await;
        apply_script(&conn, &path, &script(ops, keys, 11), None).await;
    });
    kv_snapshots_taken(&conn, &path, None, buckets as usize);
    (conn, path)
}

#[test]
fn writes_and_nacks_during_the_snapshots_still_replay_to_the_table() {
    const KEYS: i64 = 3000;
    let (conn, path) = populated("snap_writes", 6000, KEYS, 3);
    let bootstrap = cluster().bootstrap();
    let writer = std::thread::spawn({
        let path = path.clone();
        move || {
            rt().block_on(async {
                let conn = cluster().connection().await;
                for round in 0..20 {
                    let ops = script(200, KEYS, 100 + round);
                    apply_script(&conn, &path, &ops, None).await;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            })
        }
    });
    let mut s = Stream::open(
        &full(
            bootstrap,
            path.table(),
            json!({"batch_size": 500, "changelog_format": "flat"}),
        ),
        None,
    )
    .expect("open");
    // About 750 live keys per bucket: two batches per snapshot, so a Nack every fifth batch
    // hits some snapshots and lets each finish (a Nack restarts the bucket's snapshot).
    s.read_until("the writer to finish", Answer::NackEvery(5), |_| {
        writer.is_finished()
    });
    writer.join().expect("writer");
    s.read_to(&log_ends(cluster(), &path, None), Answer::NackEvery(5));
    drop(conn);
    let expected = rt().block_on(lookup_all(&path, KEYS, &[None]));
    assert_eq!(
        replay_json(&s.acked),
        expected,
        "snapshot rows, then the changelog, replay to the table despite writes and Nacks"
    );
    assert!(s.acked.iter().any(|m| op(m) == "r"), "snapshot rows came");
    assert!(
        s.acked.iter().any(|m| op(m) != "r"),
        "changes written during the snapshots came as changelog events"
    );
    // A Nacked snapshot batch is delivered again with the same ids if the bucket did not
    // change meanwhile; every acked id is unique per (snapshot, row) anyway.
    let nacked_reads = s.nacked.iter().filter(|m| op(m) == "r").count();
    assert!(nacked_reads > 0, "a Nack hit a batch of snapshot rows");
}

#[test]
fn kill_9_during_the_snapshots_repeats_at_most_the_batch_in_flight() {
    use crate::crashes::{KILLS, SEED_VAR, stream_with_kills};
    const KEYS: i64 = 6400;
    const BUCKETS: i32 = 16;
    const BATCH: usize = 100;
    let mut rng = fluss_testkit::seed::Rng::from_env(SEED_VAR);
    let path = unique_table("snap_kills");
    let conn = rt().block_on(cluster().connection());
    rt().block_on(async {
        let admin = conn.get_admin().unwrap();
        tables::create_pk_table(&admin, &path, tables::sample_pk_schema(), BUCKETS).await;
        upserts(&conn, &path, 0..KEYS, "v", 4).await;
        apply_script(&conn, &path, &script(2_000, KEYS, rng.bits()), None).await;
    });
    // Every bucket from its KV snapshot (about 400 rows each, 4 batches), so the kills hit
    // snapshot reads.
    kv_snapshots_taken(&conn, &path, None, BUCKETS as usize);
    let expected = rt().block_on(lookup_all(&path, KEYS, &[None]));
    let runs = stream_with_kills(
        "snap_kills",
        &full(
            cluster().bootstrap(),
            path.table(),
            json!({"batch_size": BATCH}),
        ),
        // At most 10 x 500 lines of the 6400: every run has more to write than its kill waits
        // for.
        (20, 500),
        &mut rng,
        &|lines| replay(lines.iter().map(|l| &l.payload)) == expected,
    );
    let is_read = |line: &crate::process::Line| line.payload["op"] == "r";
    let mut seen: HashSet<&str> = HashSet::new();
    let mut repeats = Vec::new();
    for (run, lines) in runs.runs.iter().enumerate() {
        let mut this_run = HashSet::new();
        let mut changelog: std::collections::HashMap<i64, i64> = Default::default();
        for line in lines {
            assert!(
                this_run.insert(line.id.as_str()),
                "run {run}: id {} twice without a crash",
                line.id
            );
            if is_read(line) {
                assert!(
                    !changelog.contains_key(&line.bucket),
                    "run {run}: bucket {} delivered a snapshot row after its changelog",
                    line.bucket
                );
            } else if let Some(prev) = changelog.insert(line.bucket, line.offset) {
                assert!(
                    line.offset > prev,
                    "run {run}: bucket {} out of order",
                    line.bucket
                );
            }
        }
        let again = this_run.iter().filter(|id| seen.contains(*id)).count();
        repeats.push(again);
        assert!(
            again <= BATCH,
            "run {run} repeated {again} messages, more than the batch in flight ({BATCH}): a restart goes on after the last acknowledged snapshot row"
        );
        seen.extend(this_run);
    }
    eprintln!("snapshot kills: messages repeated per run: {repeats:?} (batch_size {BATCH})");
    assert!(runs.runs.len() > KILLS, "{KILLS} kills and a last run");
    assert!(
        runs.runs[..KILLS]
            .iter()
            .filter(|lines| lines.iter().any(is_read))
            .count()
            >= KILLS / 2,
        "most kills came while snapshot rows were delivered"
    );
    assert_eq!(
        replay(runs.all().map(|l| &l.payload)),
        expected,
        "replaying every delivered event through {KILLS} kills gives the table"
    );
}

#[test]
fn partitions_and_a_partition_created_while_streaming_start_with_their_snapshots() {
    const KEYS: i64 = 500;
    let path = unique_table("snap_partitioned");
    let conn = rt().block_on(cluster().connection());
    let admin = conn.get_admin().unwrap();
    rt().block_on(async {
        let schema = tables::sample_partitioned_schema(true);
        tables::create_partitioned_table(&admin, &path, schema, "region", 2).await;
        tables::create_partition(&admin, &path, "region", "eu").await;
        apply_script(&conn, &path, &script(2_000, KEYS, 5), Some("eu")).await;
    });
    kv_snapshots_taken(&conn, &path, Some("eu"), 2);
    let mut s = Stream::open(
        &full(
            cluster().bootstrap(),
            path.table(),
            json!({"changelog_format": "flat", "partition_discovery_interval": "1s"}),
        ),
        None,
    )
    .expect("open");
    let eu = log_ends(cluster(), &path, Some("eu"));
    s.read_to(&eu, Answer::AckAll);
    let eu_reads = s.acked.iter().filter(|m| op(m) == "r").count();
    assert!(eu_reads > 100, "eu delivered its snapshot: {eu_reads} rows");
    // A partition created (and filled) while the connector runs is snapshotted too; rows
    // written after its snapshot arrive from its changelog.
    rt().block_on(async {
        tables::create_partition(&admin, &path, "region", "us").await;
        apply_script(&conn, &path, &script(2_000, KEYS, 6), Some("us")).await;
    });
    let both = |us| [eu.clone(), us].concat();
    s.read_to(
        &both(log_ends(cluster(), &path, Some("us"))),
        Answer::AckAll,
    );
    rt().block_on(apply_script(
        &conn,
        &path,
        &script(300, KEYS, 7),
        Some("us"),
    ));
    s.read_to(
        &both(log_ends(cluster(), &path, Some("us"))),
        Answer::AckAll,
    );
    let expected = rt().block_on(lookup_all(&path, KEYS, &[Some("eu"), Some("us")]));
    assert_eq!(
        replay_json(&s.acked),
        expected,
        "both partitions replay to the table"
    );
    assert!(s.acked.iter().all(|m| m.partition.is_some()));
    assert!(
        s.acked
            .iter()
            .any(|m| m.partition.as_deref() == Some("us") && op(m) != "r"),
        "the new partition's changelog follows its snapshot"
    );
}

#[test]
fn a_bucket_without_a_kv_snapshot_reads_its_changelog_from_the_earliest_offset() {
    const KEYS: i64 = 300;
    let path = unique_table("snap_none");
    let conn = rt().block_on(cluster().connection());
    rt().block_on(async {
        let admin = conn.get_admin().unwrap();
        tables::create_pk_table(&admin, &path, tables::sample_pk_schema(), 2).await;
    });
    let since = logs().len();
    let mut s =
        Stream::open(&full(cluster().bootstrap(), path.table(), json!({})), None).expect("open");
    s.read_for(Duration::from_secs(3), Answer::AckAll);
    rt().block_on(apply_script(&conn, &path, &script(600, KEYS, 5), None));
    s.read_to(&log_ends(cluster(), &path, None), Answer::AckAll);
    let absent = lines_with(
        since,
        Level::Info,
        &[
            path.table(),
            "no KV snapshot yet",
            "at its earliest offset 0",
        ],
    )
    .len();
    assert_eq!(absent, 2, "one INFO line per bucket");
    assert!(
        s.acked.iter().all(|m| op(m) != "r"),
        "no snapshot rows from an empty table"
    );
    let expected = rt().block_on(lookup_all(&path, KEYS, &[None]));
    assert_eq!(
        replay_json(&s.acked),
        expected,
        "the changelog gives the table"
    );
}

/// Waits until the latest KV snapshot of every bucket holds all of their changes.
pub fn kv_snapshots_caught_up(conn: &FlussConnection, path: &TablePath) {
    let admin = conn.get_admin().expect("admin");
    rt().block_on(tables::kv_snapshots_caught_up(
        &admin,
        path,
        Duration::from_secs(60),
    ));
}

#[test]
fn a_restart_mid_snapshot_goes_on_with_the_next_unacknowledged_batch_of_the_same_snapshot() {
    const KEYS: i64 = 3000;
    const BATCH: usize = 256;
    let path = unique_table("snap_resume");
    let conn = rt().block_on(cluster().connection());
    rt().block_on(async {
        let admin = conn.get_admin().unwrap();
        tables::create_pk_table(&admin, &path, tables::sample_pk_schema(), 2).await;
        upserts(&conn, &path, 0..KEYS, "v", 10).await;
    });
    kv_snapshots_caught_up(&conn, &path);
    let config = full(
        cluster().bootstrap(),
        path.table(),
        json!({"batch_size": BATCH, "changelog_format": "flat"}),
    );
    let mut first = Stream::open(&config, None).expect("open");
    first.read(1000, Answer::AckAll);
    let first_reads = first.acked.iter().filter(|m| op(m) == "r").count();
    let first_acked = first.acked.clone();
    let state = first.close();
    assert!(
        first_reads >= 1000 && first_reads < KEYS as usize,
        "the first run stopped mid-snapshot ({first_reads} rows)"
    );
    let since = logs().len();
    let mut second = Stream::open(&config, state).expect("reopen");
    second.read_to(&log_ends(cluster(), &path, None), Answer::AckAll);
    let second_reads = second.acked.iter().filter(|m| op(m) == "r").count();
    eprintln!("snapshot resume: {first_reads} rows, then {second_reads} after the restart");
    assert!(
        first_reads + second_reads <= KEYS as usize + BATCH,
        "the restart repeated {} rows, more than one batch ({BATCH})",
        first_reads + second_reads - KEYS as usize
    );
    assert!(
        !logs()
            .into_iter()
            .skip(since)
            .any(|l| l.message.contains(path.table()) && l.message.contains("is gone")),
        "the same KV snapshot was still leased"
    );
    let all: Vec<Received> = first_acked
        .into_iter()
        .chain(std::mem::take(&mut second.acked))
        .collect();
    let distinct: HashSet<u128> = all.iter().filter(|m| op(m) == "r").map(|m| m.id).collect();
    assert_eq!(
        distinct.len(),
        KEYS as usize,
        "every key's snapshot row, ids stable across the restart"
    );
    drop(conn);
    let expected = rt().block_on(lookup_all(&path, KEYS, &[None]));
    assert_eq!(replay_json(&all), expected, "both runs replay to the table");
}

#[test]
fn a_kv_snapshot_gone_before_a_restart_goes_on_is_started_over_from_the_newest_with_one_warn() {
    const KEYS: i64 = 3000;
    let path = unique_table("snap_gone");
    let conn = rt().block_on(cluster().connection());
    let admin = conn.get_admin().unwrap();
    rt().block_on(async {
        tables::create_pk_table(&admin, &path, tables::sample_pk_schema(), 2).await;
        upserts(&conn, &path, 0..KEYS, "v", 10).await;
    });
    kv_snapshots_caught_up(&conn, &path);
    let dir = std::env::temp_dir().join(format!("snap-gone-{}", path.table()));
    let config = full(
        cluster().bootstrap(),
        path.table(),
        json!({"batch_size": 256, "changelog_format": "flat", "snapshot_dir": dir}),
    );
    let since = logs().len();
    let mut first = Stream::open(&config, None).expect("open");
    first.read(1000, Answer::AckAll);
    let first_acked = std::mem::take(&mut first.acked);
    let state = first.close();
    // The KV snapshot bucket 0 was read from, and the lease that held it (named by the
    // directory its files were copied into).
    let copied = logs()
        .into_iter()
        .skip(since)
        .find(|l| l.message.contains(path.table()) && l.message.contains("bucket 0: KV snapshot"))
        .expect("bucket 0's snapshot was copied")
        .message;
    let snapshot: i64 = copied
        .split("KV snapshot ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|id| id.parse().ok())
        .expect("snapshot id");
    let copy_dir = copied
        .split("copied to ")
        .nth(1)
        .and_then(|rest| rest.split(" (").next())
        .expect("copy dir");
    // `<lease id>-<process id>`.
    let owner = std::path::Path::new(copy_dir)
        .parent()
        .and_then(|owner| owner.file_name())
        .and_then(|name| name.to_str())
        .expect("the connector's directory")
        .to_owned();
    let lease = owner
        .strip_suffix(&format!("-{}", std::process::id()))
        .expect("the directory names the lease and this process")
        .to_owned();
    assert!(
        first_acked.len() < KEYS as usize,
        "the first run stopped mid-snapshot"
    );
    // The lease goes (as when it expires), and newer KV snapshots replace that one.
    let table_id = rt().block_on(async {
        admin.drop_kv_snapshot_lease(&lease).await.expect("drop");
        admin.get_table_info(&path).await.expect("table").table_id
    });
    let mut round = 0;
    rt().block_on(poll_until(
        Duration::from_secs(90),
        Duration::from_millis(500),
        "the first run's KV snapshot of bucket 0 to be deleted",
        || {
            round += 1;
            let version = format!("later{round}");
            let (conn, admin, path) = (&conn, &admin, &path);
            async move {
                upserts(conn, path, 0..40, &version, 1).await;
                match admin
                    .get_kv_snapshot_metadata(table_id, None, 0, snapshot)
                    .await
                {
                    Ok(_) => Err(format!("KV snapshot {snapshot} is still there")),
                    Err(_) => Ok(()),
                }
            }
        },
    ));
    let since = logs().len();
    let mut second = Stream::open(&config, state).expect("reopen");
    second.read_to(&log_ends(cluster(), &path, None), Answer::AckAll);
    let lines: Vec<(Level, String)> = logs()
        .into_iter()
        .skip(since)
        .filter(|l| l.message.contains(path.table()))
        .map(|l| (l.level, l.message))
        .collect();
    let gone: Vec<&String> = lines
        .iter()
        .filter(|(level, l)| {
            *level == Level::Warn
                && l.contains(&format!("bucket 0: KV snapshot {snapshot} is gone"))
                && l.contains("starts over from its newest KV snapshot")
        })
        .map(|(_, l)| l)
        .collect();
    assert_eq!(gone.len(), 1, "one WARN line: {lines:#?}");
    assert!(
        !lines.iter().any(|(level, _)| *level == Level::Error),
        "no ERROR: {lines:#?}"
    );
    assert!(
        lines
            .iter()
            .any(|(_, l)| l.contains("bucket 0: snapshot handed over") && l.contains("not exact")),
        "the switch after a second snapshot is reported as not exact: {lines:#?}"
    );
    drop(conn);
    let expected = rt().block_on(lookup_all(&path, KEYS, &[None]));
    let all: Vec<Received> = first_acked
        .into_iter()
        .chain(std::mem::take(&mut second.acked))
        .collect();
    assert_eq!(
        replay_json(&all),
        expected,
        "nothing lost: both runs replay to the table"
    );
    assert!(!dir.join(&owner).exists(), "the local copies are removed");
}

#[test]
fn a_leader_killed_before_its_bucket_snapshot_is_retried_and_nothing_is_lost() {
    // Buckets are snapshotted in order, about 300 rows each: after 100 messages bucket 2's
    // snapshot has not started.
    snapshot_with_a_leader_killed(2, "before");
}

#[test]
fn a_leader_killed_while_its_bucket_snapshot_is_read_loses_nothing() {
    // After 100 messages bucket 0's snapshot (about 300 rows) is being read.
    snapshot_with_a_leader_killed(0, "while");
}

/// Streams a 3-bucket table of a replicated cluster from its snapshots, killing the leader of
/// bucket `bucket` after 100 messages (`when` its snapshot is read: "before" or "while").
fn snapshot_with_a_leader_killed(bucket: i32, when: &str) {
    const KEYS: i64 = 900;
    let cluster = Cluster::start(ClusterOptions::replicated());
    let path = unique_table("snap_failover");
    let conn = rt().block_on(async {
        let conn = cluster.connection().await;
        let admin = conn.get_admin().unwrap();
        tables::create_pk_table(&admin, &path, tables::sample_pk_schema(), 3).await;
        upserts(&conn, &path, 0..KEYS, "v", 9).await;
        conn
    });
    kv_snapshots_taken(&conn, &path, None, 3);
    drop(conn);
    let expected = rt().block_on(lookup_all_on(&cluster, &path, KEYS, &[None]));
    assert_eq!(expected.len(), KEYS as usize);
    let ends = log_ends(&cluster, &path, None);
    let since = logs().len();
    let mut s = Stream::open(
        &full(cluster.bootstrap(), path.table(), json!({"batch_size": 50})),
        None,
    )
    .expect("open");
    s.read(100, Answer::AckAll);
    let table_lines = || -> Vec<(Level, String)> {
        logs()
            .into_iter()
            .skip(since)
            .filter(|l| l.message.contains(path.table()))
            .map(|l| (l.level, l.message))
            .collect()
    };
    let started = |lines: &[(Level, String)], what: &str| {
        lines
            .iter()
            .any(|(_, l)| l.contains(&format!("bucket {bucket}: snapshot {what}")))
    };
    let at_kill = table_lines();
    assert_eq!(
        (
            started(&at_kill, "starts"),
            started(&at_kill, "handed over")
        ),
        (when == "while", false),
        "bucket {bucket}'s snapshot {when} the kill: {at_kill:#?}"
    );
    let killed = cluster
        .bucket_leader(&path, None, bucket)
        .expect("the bucket has a leader");
    cluster.kill_tablet(killed);
    // 20 s with the leader dead: the point of the test, not a wait for a condition.
    s.read_for(Duration::from_secs(20), Answer::AckAll);
    cluster.start_tablet(killed);
    s.read_to(&ends, Answer::AckAll);
    assert_eq!(
        replay_json(&s.acked),
        expected,
        "every key arrives although a leader died {when} its bucket's snapshot"
    );
    let lines = table_lines();
    for bucket in 0..3 {
        assert!(
            lines
                .iter()
                .any(|(_, l)| l.contains(&format!("bucket {bucket}: snapshot handed over"))),
            "bucket {bucket} finished its snapshot: {lines:#?}"
        );
    }
    assert!(
        !lines.iter().any(|(level, _)| *level == Level::Error),
        "a failover is not an ERROR: {lines:#?}"
    );
    eprintln!(
        "snapshot failover ({when}): {} messages, WARN lines: {:#?}",
        s.acked.len(),
        lines
            .iter()
            .filter(|(level, _)| *level == Level::Warn)
            .collect::<Vec<_>>()
    );
}

/// Every directory and file under `dir` with its permission bits.
fn modes(dir: &std::path::Path) -> Vec<(std::path::PathBuf, u32)> {
    use std::os::unix::fs::MetadataExt;
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let meta = entry.metadata().expect("metadata");
        found.push((entry.path(), meta.mode() & 0o777));
        if meta.is_dir() {
            found.extend(modes(&entry.path()));
        }
    }
    found
}

#[test]
fn snapshot_files_are_private_gone_with_their_bucket_and_leftovers_go_at_the_next_open() {
    use iggy_connector_fluss_source::snapshot::kv::local_dir::SnapshotDir;
    // 3000 rows per bucket: many more than the reader holds ahead (3 batches of 256), so
    // the first bucket's files are still on disk after the first batch.
    const KEYS: i64 = 6000;
    let path = unique_table("snap_private");
    let conn = rt().block_on(cluster().connection());
    rt().block_on(async {
        let admin = conn.get_admin().unwrap();
        tables::create_pk_table(&admin, &path, tables::sample_pk_schema(), 2).await;
        upserts(&conn, &path, 0..KEYS, "v", 10).await;
    });
    kv_snapshots_caught_up(&conn, &path);
    let root = std::env::temp_dir().join(format!("snap-private-{}", path.table()));
    // What a run killed mid-snapshot left, a directory an instance that runs holds, and one
    // the plugin did not name.
    let crashed = root.join("iggy-fluss-source-77-1-0");
    std::fs::create_dir_all(crashed.join("b0")).expect("leftover");
    std::fs::write(crashed.join("b0/000007.sst"), vec![7u8; 1234]).expect("leftover file");
    let live = SnapshotDir::new(&root, "iggy-fluss-source-78-1-0");
    live.ensure()
        .expect("a directory held as a running instance holds it");
    let other = root.join("not-the-plugins");
    std::fs::create_dir_all(&other).expect("another directory");
    let since = logs().len();
    let mut s = Stream::open(
        &full(
            cluster().bootstrap(),
            path.table(),
            json!({"batch_size": 100, "snapshot_dir": root}),
        ),
        None,
    )
    .expect("open");
    let removed = lines_with(since, Level::Info, &[path.table(), "removed "]);
    assert_eq!(
        removed,
        [format!(
            "fluss[{}]: removed {} (1234 bytes), KV snapshot files a run that ended without closing left in `snapshot_dir`",
            removed
                .first()
                .and_then(|l| l.strip_prefix("fluss["))
                .and_then(|l| l.split(']').next())
                .unwrap_or("?"),
            crashed.display()
        )],
        "one INFO line for the leftover"
    );
    assert!(!crashed.exists(), "the leftover is removed at open");
    assert!(live.path().is_dir(), "a held directory is left alone");
    assert!(other.is_dir(), "a directory of another name is left alone");

    // While the first bucket's rows are handed over, its files are on disk, private.
    s.read(100, Answer::AckAll);
    let own: Vec<std::path::PathBuf> = std::fs::read_dir(&root)
        .expect("snapshot_dir")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p != live.path() && p != &other)
        .collect();
    assert_eq!(own.len(), 1, "the connector's own directory: {own:?}");
    let own = own.into_iter().next().unwrap();
    let inside = modes(&own);
    assert!(
        inside.iter().any(|(p, _)| p.is_file()),
        "files of the bucket being handed over: {inside:?}"
    );
    let open: Vec<&(std::path::PathBuf, u32)> = inside
        .iter()
        .filter(|(p, mode)| *mode != if p.is_dir() { 0o700 } else { 0o600 })
        .collect();
    assert!(open.is_empty(), "directories 0700 and files 0600: {open:?}");
    assert_eq!(
        modes(&root).iter().find(|(p, _)| *p == own).unwrap().1,
        0o700
    );

    // Every bucket done: none of their files are left; closed: the directory goes.
    s.read_to(&log_ends(cluster(), &path, None), Answer::AckAll);
    let started = Instant::now();
    while !modes(&own).is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the buckets' files are removed once they are handed over: {:?}",
            modes(&own)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(conn);
    let expected = rt().block_on(lookup_all(&path, KEYS, &[None]));
    assert_eq!(replay_json(&s.acked), expected, "the table's rows");
    s.close();
    assert!(
        !own.exists(),
        "the connector's directory is removed at close"
    );
    drop(live);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn two_processes_reading_snapshots_into_one_snapshot_dir_keep_out_of_each_others_files() {
    use crate::process::{connector_file, plugin_errors, read_lines, scratch_dir, spawn_runner};
    // Two runtimes on one host read the same table with the first connector of each (plugin id
    // 1, instance 0: the same lease id) into the same `snapshot_dir`.
    const KEYS: i64 = 6000;
    let path = unique_table("snap_two_processes");
    let conn = rt().block_on(cluster().connection());
    rt().block_on(async {
        let admin = conn.get_admin().unwrap();
        tables::create_pk_table(&admin, &path, tables::sample_pk_schema(), 2).await;
        upserts(&conn, &path, 0..KEYS, "v", 10).await;
    });
    kv_snapshots_caught_up(&conn, &path);
    let root = std::env::temp_dir().join(format!("snap-two-{}", path.table()));
    let config = full(
        cluster().bootstrap(),
        path.table(),
        json!({"batch_size": 100, "snapshot_dir": root}),
    );
    let runs: Vec<(std::path::PathBuf, std::process::Child)> = (0..2)
        .map(|_| {
            let dir = scratch_dir("snap_two_processes");
            let connector = connector_file(&dir, Some(&config));
            let output = dir.join("out.jsonl");
            // Until every key is acknowledged; 120 s without a message ends a stalled run.
            let keys = KEYS.to_string();
            let extra = ["--max-messages", keys.as_str(), "--idle-exit", "120s"];
            let child = spawn_runner(&connector, &dir.join("source.state"), &output, &extra);
            (output, child)
        })
        .collect();
    for (output, mut child) in runs {
        let status = child.wait().expect("wait for the runner");
        let stderr = std::fs::read_to_string(output.with_extension("stderr")).unwrap_or_default();
        assert!(status.success(), "the runner failed ({status}):\n{stderr}");
        let errors = plugin_errors(&stderr);
        assert!(errors.is_empty(), "no ERROR line: {errors:#?}");
        let lines = read_lines(&output);
        let ids: HashSet<&str> = lines.iter().map(|l| l.id.as_str()).collect();
        assert_eq!(
            (lines.len(), ids.len()),
            (KEYS as usize, KEYS as usize),
            "each process delivers every key once"
        );
    }
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn an_unwritable_snapshot_dir_is_one_error_line_and_nothing_is_skipped() {
    let (conn, path) = populated("snap_disk", 300, 100, 1);
    let since = logs().len();
    let mut s = Stream::open(
        &full(
            cluster().bootstrap(),
            path.table(),
            json!({"snapshot_dir": "/dev/null/snapshots"}),
        ),
        None,
    )
    .expect("open");
    let errors = || -> Vec<String> {
        logs()
            .into_iter()
            .skip(since)
            .filter(|l| l.level == Level::Error && l.message.contains(path.table()))
            .map(|l| l.message)
            .collect()
    };
    s.read_until("the ERROR line", Answer::AckAll, |_| !errors().is_empty());
    // The retries that follow (one every few seconds) deliver nothing and log no more.
    s.read_for(Duration::from_secs(5), Answer::AckAll);
    drop(conn);
    let errors = errors();
    assert_eq!(
        errors.len(),
        1,
        "one ERROR line while it retries: {errors:#?}"
    );
    assert!(
        errors[0]
            .contains("cannot write the KV snapshot files of bucket 0 to /dev/null/snapshots/")
            && errors[0].contains("point `snapshot_dir` at a directory with room"),
        "{}",
        errors[0]
    );
    assert!(
        s.acked.is_empty(),
        "nothing is skipped: the bucket waits for its snapshot instead of reading on"
    );
}

#[test]
fn snapshots_too_large_to_open_ahead_are_copied_at_their_turn_and_deliver_every_row() {
    // Three buckets of about 10 MiB of snapshot files each: past the next bucket, the
    // buckets opened ahead take at most 8 MiB each, so these are copied at their turn.
    const KEYS: i64 = 30_000;
    const BUCKETS: i32 = 3;
    const SMALL: u64 = 8 << 20;
    let path = unique_table("snap_large");
    let conn = rt().block_on(cluster().connection());
    // Names of 1,000 characters drawn at random from 64: RocksDB's compression keeps them
    // about as large.
    let alphabet: Vec<char> = ('a'..='z')
        .chain('A'..='Z')
        .chain('0'..='9')
        .chain(['-', '_'])
        .collect();
    let mut rng = 0x9e37_79b9_7f4a_7c15_u64;
    let mut name = || -> String {
        (0..1000)
            .map(|_| {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                alphabet[(rng % 64) as usize]
            })
            .collect()
    };
    // The table as written (read back with a lookup per key would take a minute).
    let expected: TableState = (0..KEYS)
        .map(|id| ((id, String::new()), (name(), id as f64)))
        .collect();
    rt().block_on(async {
        let admin = conn.get_admin().unwrap();
        tables::create_pk_table(&admin, &path, tables::sample_pk_schema(), BUCKETS).await;
        let ops: Vec<Op> = expected
            .iter()
            .map(|((id, _), (name, amount))| Op::Upsert(*id, name.clone(), *amount))
            .collect();
        for chunk in ops.chunks(2_000) {
            apply_script(&conn, &path, chunk, None).await;
        }
    });
    kv_snapshots_caught_up(&conn, &path);
    let dir = std::env::temp_dir().join(format!("snap-large-{}", path.table()));
    let since = logs().len();
    // The local copies' bytes, sampled while the snapshots are read.
    let watching = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let watcher = {
        let (root, watching) = (dir.clone(), watching.clone());
        std::thread::spawn(move || {
            let mut most = 0;
            while watching.load(std::sync::atomic::Ordering::SeqCst) {
                most = most.max(disk_bytes(&root));
                std::thread::sleep(Duration::from_millis(5));
            }
            most
        })
    };
    let mut s = Stream::open(
        &full(
            cluster().bootstrap(),
            path.table(),
            json!({"batch_size": 500, "snapshot_dir": dir}),
        ),
        None,
    )
    .expect("open");
    s.read_to(&log_ends(cluster(), &path, None), Answer::AckAll);
    watching.store(false, std::sync::atomic::Ordering::SeqCst);
    let most = watcher.join().expect("watcher");
    let copied: Vec<u64> = lines_with(since, Level::Info, &[path.table(), "copied to"])
        .iter()
        .map(|line| {
            let (_, after) = line.split_once(" (").expect("bytes");
            after
                .split(' ')
                .next()
                .unwrap()
                .parse()
                .expect("a byte count")
        })
        .collect();
    assert_eq!(
        copied.len(),
        BUCKETS as usize,
        "one copy per bucket: {copied:?}"
    );
    assert!(
        copied.iter().all(|bytes| *bytes > SMALL),
        "every bucket's snapshot is larger than a bucket opened ahead may be: {copied:?}"
    );
    let mut largest = copied.clone();
    largest.sort_unstable();
    let two_largest: u64 = largest.iter().rev().take(2).sum();
    // The bucket read, the next one, and what the third copied before it passed the bound.
    assert!(
        most <= two_largest + SMALL,
        "snapshot_dir held {most} bytes at once, more than the two largest buckets' files ({two_largest}) and {SMALL} bytes of a third"
    );
    eprintln!("snapshot_dir held at most {most} bytes; buckets {copied:?}");
    let reads = s.acked.iter().filter(|m| op(m) == "r").count();
    assert_eq!(reads, KEYS as usize, "every row once, from the snapshots");
    assert!(
        replay_json(&s.acked) == expected,
        "the snapshots give the table as written"
    );
    assert_eq!(disk_bytes(&dir), 0, "no copy is left behind");
    let _ = std::fs::remove_dir_all(&dir);
}
