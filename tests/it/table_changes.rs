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

//! The table changes under a running connector (on the shared cluster; each test owns its
//! table): dropped while streaming, dropped and re-created under the same name (a restart
//! from the saved state is refused), and a partition dropped while its bucket still has
//! unread rows.

use std::time::Duration;

use fluss_source_runner::{Level, LogLine, logs};
use fluss_testkit::fluss::metadata::TablePath;
use fluss_testkit::fluss::rpc::message::OffsetSpec;
use fluss_testkit::{poll_until, tables, unique_table};
use serde_json::json;

use crate::fixture::{Answer, Stream, cluster, config, harness, ids, open_refused, rt};

/// Lines of the instance reading `table` after log index `since`, at `level`.
fn lines_at(table: &str, since: usize, level: Level) -> Vec<LogLine> {
    let tag = format!("{}.{table}", tables::TEST_DATABASE);
    logs()
        .into_iter()
        .skip(since)
        .filter(|l| l.level == level && l.message.contains(&tag))
        .collect()
}

/// Keeps reading `s` (acking, as the runtime does) until `probe` gives a value; panics after
/// `within` naming `what`.
fn read_until<T>(
    s: &mut Stream,
    within: Duration,
    what: &str,
    mut probe: impl FnMut(&Stream) -> Option<T>,
) -> T {
    let started = std::time::Instant::now();
    loop {
        s.read_for(Duration::from_millis(300), Answer::AckAll);
        if let Some(value) = probe(s) {
            return value;
        }
        assert!(
            started.elapsed() < within,
            "timed out after {within:?} waiting for {what}"
        );
    }
}

async fn table_id(path: &TablePath) -> i64 {
    let conn = cluster().connection().await;
    let admin = conn.get_admin().expect("admin");
    admin
        .get_table_info(path)
        .await
        .expect("get_table_info")
        .table_id
}

/// Dropped while streaming: nothing crashes, nothing is delivered, close succeeds and the
/// state saved before the drop is kept; the drop is one ERROR line naming the table, its id and
/// the fix (again at most once per 30 s while the connector runs). Re-created under the same name: a
/// restart from that state is refused with one ERROR naming both table ids and the state
/// file to delete.
#[test]
fn dropped_table_is_an_error_and_a_recreated_one_refuses_the_old_state() {
    let path = unique_table("dropped");
    let table = path.table().to_owned();
    let conn = rt().block_on(cluster().connection());
    let admin = conn.get_admin().expect("admin");
    rt().block_on(tables::create_log_table(
        &admin,
        &path,
        tables::sample_log_schema(),
        2,
    ));
    let old_id = rt().block_on(table_id(&path));
    rt().block_on(fluss_testkit::write::append_rows(
        &conn,
        &path,
        (0..1000).map(tables::sample_row),
    ));
    let cfg = config(&table, json!({"batch_size": 200}));
    let mut s = Stream::open(&cfg, None).expect("open");
    s.read(1000, Answer::AckAll);
    let mut got = ids(&s.acked);
    got.sort_unstable();
    assert_eq!(
        got,
        (0..1000).collect::<Vec<_>>(),
        "every row before the drop"
    );
    let saved = s.state.clone().expect("a state after 1000 acked rows");

    let since = logs().len();
    rt().block_on(admin.drop_table(&path, false))
        .expect("drop_table");
    // The drop is one ERROR line naming the table and the fix (fluss-rs only reports the
    // server's "Failed to get tables"; the source looks the table up to tell).
    let first = read_until(
        &mut s,
        Duration::from_secs(60),
        "a WARN or ERROR line after the table was dropped",
        |_| {
            let mut lines = lines_at(&table, since, Level::Error);
            lines.extend(lines_at(&table, since, Level::Warn));
            lines.into_iter().next()
        },
    );
    // 35 s more of polling: how often it repeats (a WARN streak logs again after 30 s).
    s.read_for(Duration::from_secs(35), Answer::AckAll);
    let errors = lines_at(&table, since, Level::Error);
    let warns = lines_at(&table, since, Level::Warn);
    eprintln!(
        "table_changes: dropped: first line ({:?}): {}\n{} ERROR and {} WARN lines in the ~40 s after the drop",
        first.level,
        first.message.chars().take(300).collect::<String>(),
        errors.len(),
        warns.len(),
    );
    assert_eq!(s.acked.len(), 1000, "nothing delivered after the drop");
    let gone = format!(
        "]: table {}.{table} (id {old_id}) was dropped while it was being read; nothing more is read and the saved state is kept; re-create the table and delete the connector's state file (<state.path>/source_<key>.state in the runtime config) to start again from `starting_offset`, or point `table` at another table; retrying",
        tables::TEST_DATABASE
    );
    assert_eq!(
        first.level,
        Level::Error,
        "a dropped table is an ERROR: {}",
        first.message
    );
    assert!(
        first.message.ends_with(&gone),
        "the ERROR names the table, its id and the fix: {}",
        first.message
    );
    assert!(
        (1..=2).contains(&errors.len()),
        "one ERROR, repeated at most once per 30 s: {errors:#?}"
    );
    assert!(
        warns.len() <= 1,
        "at most the one WARN of the poll that met the drop before the lookup: {warns:#?}"
    );
    assert_eq!(
        s.close(),
        Some(saved.clone()),
        "closing after the drop keeps the state"
    );

    // Re-created under the same name: the saved state names the old table id.
    rt().block_on(tables::create_log_table(
        &admin,
        &path,
        tables::sample_log_schema(),
        2,
    ));
    let new_id = rt().block_on(table_id(&path));
    assert_ne!(old_id, new_id, "a re-created table gets a new id");
    // Open with the old table's state must fail.
    let (id, lines) = open_refused(&cfg.to_string(), Some(&saved));
    let db = tables::TEST_DATABASE;
    assert_eq!(
        lines,
        vec![format!(
            "fluss[{id} {db}.{table}]: open failed: the saved state belongs to table {db}.{table} (id {old_id}), but {db}.{table} has id {new_id} (the table was dropped and re-created, or the connector now reads another table); delete the connector's state file (<state.path>/source_<key>.state in the runtime config) to start again from `starting_offset`"
        )],
        "one ERROR line naming both ids and the state file"
    );
    assert_eq!(
        harness().call_close(id),
        -1,
        "nothing left after the refused open"
    );
}

/// A partition dropped while its bucket still has unread rows: the rows still in Fluss are
/// gone with the partition. The stream keeps reading the other partition, logs the drop at
/// INFO once discovery sees it, and never reports an ERROR. How many of the dropped
/// partition's rows arrived first depends on how far the plugin had read ahead; they are a
/// gap-free prefix of its log.
#[test]
fn dropped_partition_with_unread_rows_is_forgotten() {
    let path = unique_table("dropped_partition");
    let table = path.table().to_owned();
    let conn = rt().block_on(cluster().connection());
    let admin = conn.get_admin().expect("admin");
    rt().block_on(async {
        tables::create_partitioned_table(
            &admin,
            &path,
            tables::sample_partitioned_schema(false),
            "region",
            1,
        )
        .await;
        tables::create_partition(&admin, &path, "region", "A").await;
        tables::create_partition(&admin, &path, "region", "B").await;
        // A: 200,000 rows (about 6 MB, more than fluss-rs fetches ahead: 1 MB per bucket and
        // fetch, and the plugin's read-ahead) in flushes of 20,000, so most of them are still
        // on the server when A is dropped; B: 10 rows.
        for chunk in 0..10 {
            fluss_testkit::write::append_rows(
                &conn,
                &path,
                (chunk * 20_000..(chunk + 1) * 20_000)
                    .map(|id| tables::sample_partitioned_row(id, "A")),
            )
            .await;
        }
        fluss_testkit::write::append_rows(
            &conn,
            &path,
            (100_000..100_010).map(|id| tables::sample_partitioned_row(id, "B")),
        )
        .await;
    });
    let since = logs().len();
    let mut s = Stream::open(
        &config(
            &table,
            json!({"batch_size": 100, "partition_discovery_interval": "1s"}),
        ),
        None,
    )
    .expect("open");
    // Read a few batches, then drop A with most of its rows unread.
    s.read(300, Answer::AckAll);
    rt().block_on(tables::drop_partition(&admin, &path, "region", "A"));
    // Not reading meanwhile (the plugin holds at most its read-ahead), wait until the server
    // no longer serves A, so what is still unread is gone for sure.
    rt().block_on(poll_until(
        Duration::from_secs(60),
        Duration::from_millis(200),
        "partition A to be gone from the server",
        || async {
            match admin
                .list_partition_offsets(&path, "A", &[0], OffsetSpec::Latest)
                .await
            {
                Ok(offsets) => Err(format!("A still answers: {offsets:?}")),
                Err(_) => Ok(()),
            }
        },
    ));
    // Read slowly until the plugin notices the drop: the metadata is gone, but a tablet server
    // may serve A's log a while longer, and at full speed the plugin could read all of A within
    // its discovery interval (it did once, in CI). At one batch of 100 per 20 ms, A's rest would
    // take 40 s; the drop is noticed within `partition_discovery_interval`.
    read_until(
        &mut s,
        Duration::from_secs(60),
        "the INFO line about the dropped partition",
        |_| {
            let line = lines_at(&table, since, Level::Info)
                .into_iter()
                .find(|l| l.message.contains("partition A") && l.message.contains("was dropped"));
            if line.is_none() {
                std::thread::sleep(Duration::from_millis(20));
            }
            line
        },
    );
    // B goes on: new rows arrive.
    rt().block_on(fluss_testkit::write::append_rows(
        &conn,
        &path,
        (100_010..100_020).map(|id| tables::sample_partitioned_row(id, "B")),
    ));
    read_until(&mut s, Duration::from_secs(30), "every row of B", |s| {
        let b = s
            .acked
            .iter()
            .filter(|m| m.partition.as_deref() == Some("B"))
            .count();
        (b >= 20).then_some(())
    });
    let a: Vec<i64> = s
        .acked
        .iter()
        .filter(|m| m.partition.as_deref() == Some("A"))
        .map(|m| m.payload["id"].as_i64().expect("id"))
        .collect();
    let b: Vec<i64> = s
        .acked
        .iter()
        .filter(|m| m.partition.as_deref() == Some("B"))
        .map(|m| m.payload["id"].as_i64().expect("id"))
        .collect();
    assert_eq!(
        a,
        (0..a.len() as i64).collect::<Vec<_>>(),
        "A's delivered rows are a gap-free prefix"
    );
    assert_eq!(
        b,
        (100_000..100_020).collect::<Vec<_>>(),
        "every row of B, in order"
    );
    let errors = lines_at(&table, since, Level::Error);
    let warns = lines_at(&table, since, Level::Warn);
    eprintln!(
        "table_changes: dropped partition: {} of A's 200,000 rows delivered ({} unread when it was dropped), all 20 of B; {} ERROR, {} WARN: {:#?}",
        a.len(),
        200_000 - a.len(),
        errors.len(),
        warns.len(),
        warns
            .iter()
            .chain(&errors)
            .map(|l| &l.message)
            .collect::<Vec<_>>()
    );
    assert!(a.len() < 200_000, "the test must drop A with rows unread");
    assert!(
        errors.is_empty(),
        "a dropped partition is not an ERROR: {:#?}",
        errors
    );
    s.close();
}
