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

//! Bounded reads: `stopping_offset = "latest"` on a table that keeps being written delivers
//! exactly the rows below the offsets at first open (across a restart), logs `finished`
//! once, and delivers nothing after a restart; a timestamp stop point ends at that time.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fluss_source_runner::{Level, logs};
use fluss_testkit::fluss::metadata::TablePath;
use fluss_testkit::fluss::rpc::message::OffsetSpec;
use fluss_testkit::tables::{self, sample_row};
use fluss_testkit::{unique_table, write};
use serde_json::json;

use crate::bad_input::{Case, refused};
use crate::fixture::{Answer, Received, Stream, assert_bucket_order, cluster, config, ids, rt};

fn latest(path: &TablePath, buckets: i32) -> BTreeMap<i32, i64> {
    rt().block_on(async {
        let (_conn, admin) = cluster().admin().await;
        admin
            .list_offsets(path, &(0..buckets).collect::<Vec<_>>(), OffsetSpec::Latest)
            .await
            .expect("list_offsets")
            .into_iter()
            .collect()
    })
}

/// A writer appending 100 rows at a time with rising ids until it is stopped. Holding `gate`
/// pauses it between appends (each append is flushed, so nothing is in flight then).
struct Writer {
    gate: Arc<Mutex<()>>,
    next_id: Arc<AtomicI64>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Writer {
    fn start(path: &TablePath, first_id: i64) -> Self {
        let gate = Arc::new(Mutex::new(()));
        let next_id = Arc::new(AtomicI64::new(first_id));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (gate, next_id, stop, path) =
                (gate.clone(), next_id.clone(), stop.clone(), path.clone());
            std::thread::spawn(move || {
                let conn = rt().block_on(cluster().connection());
                while !stop.load(Ordering::SeqCst) {
                    {
                        let _held = gate.lock().unwrap();
                        let from = next_id.load(Ordering::SeqCst);
                        rt().block_on(write::append_rows(
                            &conn,
                            &path,
                            (from..from + 100).map(sample_row),
                        ));
                        next_id.store(from + 100, Ordering::SeqCst);
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
            })
        };
        Self {
            gate,
            next_id,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn finished_lines(table: &str) -> Vec<String> {
    logs()
        .into_iter()
        .filter(|l| l.message.contains(table) && l.message.contains(": finished: "))
        .inspect(|l| assert_eq!(l.level, Level::Info, "{}", l.message))
        .map(|l| l.message)
        .collect()
}

#[test]
fn bounded_latest_delivers_exactly_the_rows_below_the_first_open() {
    let path = unique_table("bounded");
    rt().block_on(async {
        let (conn, admin) = cluster().admin().await;
        tables::create_log_table(&admin, &path, tables::sample_log_schema(), 3).await;
        write::append_rows(&conn, &path, (0..3000).map(sample_row)).await;
    });
    let writer = Writer::start(&path, 3000);
    std::thread::sleep(Duration::from_millis(500));
    let cfg = config(
        path.table(),
        json!({"stopping_offset": "latest", "batch_size": 500}),
    );
    // The writer pauses while the connector first opens, so the stop point is known exactly.
    let (stop, written, mut first) = {
        let _paused = writer.gate.lock().unwrap();
        let stop = latest(&path, 3);
        let written = writer.next_id.load(Ordering::SeqCst);
        let first = Stream::open(&cfg, None).expect("open");
        (stop, written, first)
    };
    assert!(written > 3000, "the writer was writing before the open");
    first.read(written as usize / 2, Answer::AckAll);
    let half = first.acked.clone();
    let state = first.close().expect("a state half way");
    // A restart half way stops at the same place, not at the offsets of the restart.
    let mut second = Stream::open(&cfg, Some(state)).expect("reopen");
    let table = format!("{}.{}", path.database(), path.table());
    let rest = written as usize - half.len();
    second.read_until(
        "the rest of the rows and the finished line",
        Answer::AckAll,
        |s| s.acked.len() >= rest && !finished_lines(&table).is_empty(),
    );
    let mut delivered: Vec<Received> = half;
    delivered.extend(second.acked.iter().cloned());
    let mut got = ids(&delivered);
    got.sort_unstable();
    assert_eq!(
        got,
        (0..written).collect::<Vec<_>>(),
        "exactly the rows written before the first open, each once"
    );
    assert_bucket_order(&delivered);
    for (bucket, end) in &stop {
        let offsets: Vec<i64> = delivered
            .iter()
            .filter(|m| m.bucket == *bucket)
            .map(|m| m.offset)
            .collect();
        assert_eq!(
            offsets.len() as i64,
            *end,
            "bucket {bucket}: every offset below {end}"
        );
        assert!(
            offsets.iter().all(|o| o < end),
            "bucket {bucket} past its stop"
        );
    }
    let lines = finished_lines(&table);
    let offsets: Vec<String> = stop
        .iter()
        .map(|(b, o)| format!("bucket {b}@{o}"))
        .collect();
    assert_eq!(
        lines.len(),
        1,
        "one finished line, by the run that read the rest: {lines:?}"
    );
    let expected = format!(
        " {table}]: finished: {} rows, offsets [{}]; nothing more is read (remove `stopping_offset` to read on)",
        second.acked.len(),
        offsets.join(", ")
    );
    assert!(
        lines[0].starts_with("fluss[") && lines[0].ends_with(&expected),
        "{} should end with {expected}",
        lines[0]
    );
    let state = second.close().expect("state");
    let after = latest(&path, 3);
    assert!(
        after.iter().any(|(b, o)| *o > stop[b]),
        "the table was written on meanwhile: {after:?} vs {stop:?}"
    );
    // A restart after the end delivers nothing, however much was written since.
    let mut third = Stream::open(&cfg, Some(state)).expect("reopen after finishing");
    assert_eq!(third.read_for(Duration::from_secs(4), Answer::AckAll), 0);
    third.close();
    assert_eq!(
        finished_lines(&table).len(),
        2,
        "the restart logs finished at once"
    );
    drop(writer);
}

#[test]
fn a_timestamp_stop_point_ends_at_that_time() {
    let path = unique_table("bounded_ts");
    rt().block_on(async {
        let (conn, admin) = cluster().admin().await;
        tables::create_log_table(&admin, &path, tables::sample_log_schema(), 4).await;
        write::append_rows(&conn, &path, (0..50).map(sample_row)).await;
    });
    std::thread::sleep(Duration::from_millis(1500));
    let boundary = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    std::thread::sleep(Duration::from_millis(50));
    rt().block_on(async {
        let conn = cluster().connection().await;
        write::append_rows(&conn, &path, (50..80).map(sample_row)).await;
    });
    let cfg = config(
        path.table(),
        json!({ "stopping_offset": format!("timestamp:{boundary}") }),
    );
    let mut s = Stream::open(&cfg, None).expect("open");
    let table = format!("{}.{}", path.database(), path.table());
    s.read_until("50 rows and the finished line", Answer::AckAll, |s| {
        s.acked.len() >= 50 && !finished_lines(&table).is_empty()
    });
    let mut got = ids(&s.acked);
    got.sort_unstable();
    assert_eq!(
        got,
        (0..50).collect::<Vec<_>>(),
        "rows committed before the boundary"
    );
    assert_eq!(finished_lines(&table).len(), 1);
    s.close();
}

#[test]
fn a_bounded_read_of_an_empty_table_is_done_at_once_and_stays_done() {
    let path = unique_table("bounded_empty");
    rt().block_on(async {
        let (_conn, admin) = cluster().admin().await;
        tables::create_log_table(&admin, &path, tables::sample_log_schema(), 2).await;
    });
    let cfg = config(path.table(), json!({"stopping_offset": "latest"}));
    let mut s = Stream::open(&cfg, None).expect("open");
    assert_eq!(s.read_for(Duration::from_secs(3), Answer::AckAll), 0);
    // The stop point goes out in a state of its own, although no position moved.
    let state = s.close().expect("the stop point was persisted");
    let table = format!("{}.{}", path.database(), path.table());
    let lines = finished_lines(&table);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains(": finished: 0 rows, offsets [bucket 0@0, bucket 1@0];"),
        "{}",
        lines[0]
    );
    rt().block_on(async {
        let conn = cluster().connection().await;
        write::append_rows(&conn, &path, (0..20).map(sample_row)).await;
    });
    let mut again = Stream::open(&cfg, Some(state.clone())).expect("reopen");
    assert_eq!(
        again.read_for(Duration::from_secs(3), Answer::AckAll),
        0,
        "rows written after the stop point are not read after a restart"
    );
    again.close();
    assert_eq!(finished_lines(&table).len(), 2);
    // Another stop point for the same state is refused: the positions may be past it.
    refused(
        &Case::new(
            "stopping_offset changed after the first open",
            config(path.table(), json!({"stopping_offset": "timestamp:1000"})),
            "the saved state stops at the offsets taken for `stopping_offset` = \"latest\", but `stopping_offset` is now \"timestamp:1000\"; set it back to \"latest\", remove it to read on without end from the saved positions, or delete the connector's state file (<state.path>/source_<key>.state in the runtime config) to start again from `starting_offset`",
        )
        .with_state(state),
    );
}

#[test]
fn nacks_in_a_bounded_read_redeliver_up_to_the_stop_and_no_further() {
    let path = unique_table("bounded_nack");
    rt().block_on(async {
        let (conn, admin) = cluster().admin().await;
        tables::create_log_table(&admin, &path, tables::sample_log_schema(), 3).await;
        write::append_rows(&conn, &path, (0..3000).map(sample_row)).await;
    });
    let cfg = config(
        path.table(),
        json!({"stopping_offset": "latest", "batch_size": 300}),
    );
    let mut s = Stream::open(&cfg, None).expect("open");
    // Written after the stop point was taken: never delivered.
    rt().block_on(async {
        let conn = cluster().connection().await;
        write::append_rows(&conn, &path, (3000..3500).map(sample_row)).await;
    });
    let table = format!("{}.{}", path.database(), path.table());
    s.read_until(
        "3000 rows and the finished line",
        Answer::NackEvery(3),
        |s| s.acked.len() >= 3000 && !finished_lines(&table).is_empty(),
    );
    assert!(!s.nacked.is_empty(), "some batches were nacked");
    let mut got = ids(&s.acked);
    got.sort_unstable();
    assert_eq!(
        got,
        (0..3000).collect::<Vec<_>>(),
        "each row below the stop once"
    );
    assert!(
        s.nacked
            .iter()
            .all(|m| m.payload["id"].as_i64().unwrap() < 3000),
        "a nacked batch holds no row past the stop either"
    );
    assert_eq!(finished_lines(&table).len(), 1);
    s.close();
}
