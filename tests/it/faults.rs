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

//! Fluss faults while streaming, one scenario per test, each on a dedicated cluster (the
//! shared one is never disturbed): a tablet server stopped and killed, the coordinator
//! restarted, the whole cluster down for 30 s, a tablet server stopped under a partitioned
//! table the liveness probe covers in turns, and a log truncated past the saved offset under
//! each `on_offset_out_of_range`.
//!
//! One file because the scenarios share the dedicated-cluster setup,
//! the log-line waits and the replay checks at its top; the truncated-log tests add their
//! expiring cluster halfway down, next to the three tests that use it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use fluss_source_runner::{Level, LogLine, logs};
use fluss_testkit::fluss::client::FlussConnection;
use fluss_testkit::fluss::metadata::{TableDescriptor, TablePath};
use fluss_testkit::fluss::rpc::message::OffsetSpec;
use fluss_testkit::{Cluster, ClusterOptions, poll_until, tables, unique_table};
use serde_json::{Value, json};

use crate::failover::config_on;
use crate::fixture::{Answer, Received, Stream, assert_bucket_order, ids, rt};

/// Log lines of the instance reading `table` (every plugin line carries `db.table]`).
fn lines_of(table: &str, since: usize) -> Vec<LogLine> {
    let tag = format!("{}.{table}]", tables::TEST_DATABASE);
    logs()
        .into_iter()
        .skip(since)
        .filter(|l| l.message.contains(&tag))
        .collect()
}

async fn append(cluster: &Cluster, path: &TablePath, ids: std::ops::Range<i64>) {
    let conn = cluster.connection().await;
    fluss_testkit::write::append_rows(&conn, path, ids.map(tables::sample_row)).await;
}

/// The log end of both buckets (of `partition` on a partitioned table), once the table
/// answers again.
async fn latest(
    cluster: &Cluster,
    path: &TablePath,
    partition: Option<&str>,
) -> std::collections::HashMap<i32, i64> {
    let conn = cluster.connection().await;
    let admin = conn.get_admin().expect("admin");
    poll_until(
        Duration::from_secs(90),
        Duration::from_millis(500),
        "list_offsets to answer",
        || async {
            let listed = match partition {
                Some(name) => {
                    tokio::time::timeout(
                        Duration::from_secs(5),
                        admin.list_partition_offsets(path, name, &[0, 1], OffsetSpec::Latest),
                    )
                    .await
                }
                None => {
                    tokio::time::timeout(
                        Duration::from_secs(5),
                        admin.list_offsets(path, &[0, 1], OffsetSpec::Latest),
                    )
                    .await
                }
            };
            match listed {
                Ok(Ok(offsets)) => Ok(offsets),
                Ok(Err(e)) => Err(e.to_string()),
                Err(_) => Err("no answer".to_owned()),
            }
        },
    )
    .await
}

/// A stream read on its own thread, acking every batch, until told to stop.
struct Reader {
    acked: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Vec<Received>>,
}

impl Reader {
    fn start(config: Value) -> Self {
        let acked = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (acked, stop) = (acked.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut s = Stream::open(&config, None).expect("open");
                while !stop.load(Ordering::Relaxed) {
                    s.read_for(Duration::from_millis(300), Answer::AckAll);
                    acked.store(s.acked.len(), Ordering::Relaxed);
                }
                let acked = std::mem::take(&mut s.acked);
                s.close();
                acked
            })
        };
        Self {
            acked,
            stop,
            thread,
        }
    }

    /// Waits until `n` messages were acked in total.
    fn wait_for(&self, n: usize, within: Duration, what: &str) {
        rt().block_on(poll_until(
            within,
            Duration::from_millis(100),
            what,
            || async {
                let got = self.acked.load(Ordering::Relaxed);
                if got >= n {
                    Ok(())
                } else {
                    Err(format!("{got} of {n} messages acked"))
                }
            },
        ));
    }

    fn finish(self) -> Vec<Received> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().expect("reader thread")
    }
}

/// Waits until the instance reading `table` logged a WARN after log index `since`.
fn wait_for_warn(table: &str, since: usize, within: Duration, what: &str) -> LogLine {
    rt().block_on(poll_until(
        within,
        Duration::from_millis(200),
        what,
        || async {
            lines_of(table, since)
                .into_iter()
                .find(|l| l.level == Level::Warn)
                .ok_or("no WARN yet")
        },
    ))
}

/// A dedicated cluster with a two-bucket log table of 20,000 rows that a [`Reader`] has
/// acked: the setup every streaming fault starts from.
struct Faulted {
    cluster: Cluster,
    path: TablePath,
    table: String,
    reader: Reader,
    written: i64,
    started: Instant,
}

impl Faulted {
    fn start() -> Self {
        let started = Instant::now();
        let cluster = Cluster::start(ClusterOptions {
            // A tablet server killed with -9 truncates its log to the last high-watermark
            // checkpoint; keep that close to the acknowledged end so no written row is lost
            // by Fluss itself.
            conf: vec![(
                "log.replica.high-watermark.checkpoint-interval".into(),
                "100ms".into(),
            )],
            ..ClusterOptions::default()
        });
        let path = unique_table("faults");
        let table = path.table().to_owned();
        rt().block_on(async {
            let conn = cluster.connection().await;
            let admin = conn.get_admin().unwrap();
            tables::create_log_table(&admin, &path, tables::sample_log_schema(), 2).await;
        });
        rt().block_on(append(&cluster, &path, 0..20_000));
        let reader = Reader::start(config_on(&cluster, &table, json!({})));
        reader.wait_for(20_000, Duration::from_secs(60), "the first rows");
        Self {
            cluster,
            path,
            table,
            reader,
            written: 20_000,
            started,
        }
    }

    /// Appends `n` more rows and returns how many were written in all.
    fn write(&mut self, n: i64) -> usize {
        rt().block_on(append(
            &self.cluster,
            &self.path,
            self.written..self.written + n,
        ));
        self.written += n;
        self.written as usize
    }

    /// Waits until every row written so far was acked.
    fn wait_for_all(&self, within: Duration, what: &str) {
        self.reader.wait_for(self.written as usize, within, what);
    }

    /// The log end of both buckets, once the table answers again.
    fn latest(&self) -> std::collections::HashMap<i32, i64> {
        rt().block_on(latest(&self.cluster, &self.path, None))
    }

    /// Writes 10,000 more rows and waits for them: the stream reads again by itself.
    fn check_reads_again(&mut self, what: &str) {
        self.write(10_000);
        self.wait_for_all(Duration::from_secs(90), what);
    }

    /// Stops the reader and checks it acked every row exactly once (every batch is acked,
    /// so not even a repeat is allowed), in per-bucket order.
    fn finish(self, scenario: &str) {
        let acked = self.reader.finish();
        assert_bucket_order(&acked);
        let mut got = ids(&acked);
        let count = got.len();
        got.sort_unstable();
        got.dedup();
        assert_eq!(
            count,
            got.len(),
            "{scenario}: rows repeated although every batch was acked"
        );
        assert_eq!(
            got,
            (0..self.written).collect::<Vec<_>>(),
            "{scenario}: rows lost or invented across the fault"
        );
        eprintln!("faults: {scenario}: {:?}", self.started.elapsed());
    }
}

/// A graceful stop of the (only) tablet server: a WARN while it is down, then every row
/// from before the stop and after the restart.
#[test]
fn stream_survives_a_graceful_tablet_stop() {
    let mut f = Faulted::start();
    f.write(10_000);
    let since = logs().len();
    f.cluster.stop_tablet(0);
    let warn = wait_for_warn(
        &f.table,
        since,
        Duration::from_secs(30),
        "a WARN while the tablet server is stopped",
    );
    eprintln!("faults: stopped tablet server: {}", warn.message);
    f.cluster.start_tablet(0);
    f.latest();
    f.wait_for_all(Duration::from_secs(90), "rows written before the stop");
    f.check_reads_again("rows written after the restart");
    f.finish("graceful tablet stop");
}

/// kill -9 of the tablet server: a WARN, and after its restart nothing lost or repeated.
#[test]
fn stream_survives_a_tablet_kill() {
    let mut f = Faulted::start();
    f.write(10_000);
    f.wait_for_all(Duration::from_secs(60), "rows written before the kill");
    let before = f.latest();
    // Let the high-watermark checkpoint (every 100 ms here) cover every written row: a
    // single-replica server truncates to it on restart, which would be Fluss losing rows.
    std::thread::sleep(Duration::from_secs(1));
    let since = logs().len();
    f.cluster.kill_tablet(0);
    let warn = wait_for_warn(
        &f.table,
        since,
        Duration::from_secs(30),
        "a WARN after kill -9 of the tablet server",
    );
    eprintln!("faults: killed tablet server: {}", warn.message);
    f.cluster.start_tablet(0);
    let after = f.latest();
    assert!(
        after.iter().all(|(bucket, end)| *end >= before[bucket]),
        "Fluss itself lost acknowledged rows on kill -9 (log end {before:?} before, {after:?} after); \
         check log.replica.high-watermark.checkpoint-interval, this is not the connector"
    );
    f.check_reads_again("rows written after the kill");
    f.finish("tablet kill -9");
}

/// A coordinator restart while rows flow: rows written before and after it all arrive.
#[test]
fn stream_survives_a_coordinator_restart() {
    let mut f = Faulted::start();
    f.write(10_000);
    f.cluster.restart_coordinator();
    f.check_reads_again("rows around a coordinator restart");
    f.finish("coordinator restart");
}

/// Fluss down for 30 s (tablet server and coordinator stopped, ZooKeeper stays): WARN lines,
/// rate-limited, never an ERROR; one INFO when reading resumes; nothing lost.
#[test]
fn stream_survives_30_s_without_fluss() {
    let mut f = Faulted::start();
    f.write(10_000);
    let since = logs().len();
    f.cluster.stop_tablet(0);
    f.cluster.stop_coordinator();
    let down = Instant::now();
    let warn = wait_for_warn(
        &f.table,
        since,
        Duration::from_secs(30),
        "a WARN while Fluss is down",
    );
    eprintln!("faults: cluster down: {}", warn.message);
    // The outage itself: 30 s is the point of this test, not a wait for a condition.
    std::thread::sleep(Duration::from_secs(30).saturating_sub(down.elapsed()));
    let while_down = lines_of(&f.table, since);
    let warns = while_down.iter().filter(|l| l.level == Level::Warn).count();
    let errors: Vec<&str> = while_down
        .iter()
        .filter(|l| l.level == Level::Error)
        .map(|l| l.message.as_str())
        .collect();
    assert!(
        errors.is_empty(),
        "an outage is a WARN, not an ERROR: {errors:#?}"
    );
    // Repeats are rate-limited (first, then one per 30 s).
    assert!(
        warns <= 6,
        "{warns} WARN lines in 30 s; retries should be summarised"
    );
    f.cluster.start_coordinator();
    f.cluster.start_tablet(0);
    // The writer needs a leader for every bucket again (the reader does not wait for this).
    f.latest();
    f.wait_for_all(Duration::from_secs(120), "rows written before the outage");
    f.check_reads_again("rows written after the outage");
    let recovered = lines_of(&f.table, since)
        .into_iter()
        .any(|l| l.level == Level::Info && l.message.contains("reading again after"));
    assert!(recovered, "the recovery is logged at INFO");
    f.finish("30 s outage");
}

/// A partitioned table of 20 partitions, more than one liveness probe asks about (it asks
/// about 8 at a time in turn): idle, every probe is answered and nothing is logged at WARN; a
/// stopped tablet server gives a WARN, and after its restart every row arrives once.
#[test]
fn partitioned_stream_probes_in_turn_and_survives_a_tablet_stop() {
    let started = Instant::now();
    let cluster = Cluster::start(ClusterOptions::default());
    let path = unique_table("faults_parts");
    let table = path.table().to_owned();
    let regions: Vec<String> = (0..20).map(|i| format!("r{i:02}")).collect();
    let write = |ids: std::ops::Range<i64>| {
        rt().block_on(async {
            let conn = cluster.connection().await;
            let rows = ids.map(|id| {
                tables::sample_partitioned_row(id, &regions[id as usize % regions.len()])
            });
            fluss_testkit::write::append_rows(&conn, &path, rows).await;
        })
    };
    rt().block_on(async {
        let conn = cluster.connection().await;
        let admin = conn.get_admin().unwrap();
        let schema = tables::sample_partitioned_schema(false);
        tables::create_partitioned_table(&admin, &path, schema, "region", 2).await;
        let (_, refused) = tables::create_partitions(&admin, &path, "region", &regions).await;
        assert!(refused.is_none(), "{refused:?}");
    });
    write(0..2_000);
    let reader = Reader::start(config_on(&cluster, &table, json!({})));
    reader.wait_for(2_000, Duration::from_secs(60), "the first rows");

    // Four probes' worth of idling (one every 5 s): they cover every partition, all answered.
    let since = logs().len();
    std::thread::sleep(Duration::from_secs(22));
    let warned: Vec<String> = lines_of(&table, since)
        .into_iter()
        .filter(|l| matches!(l.level, Level::Warn | Level::Error))
        .map(|l| l.message)
        .collect();
    assert!(warned.is_empty(), "idle and answered, yet: {warned:?}");

    let since = logs().len();
    cluster.stop_tablet(0);
    let warn = wait_for_warn(
        &table,
        since,
        Duration::from_secs(30),
        "a WARN while the tablet server is stopped",
    );
    eprintln!(
        "faults: stopped tablet server, partitioned: {}",
        warn.message
    );
    cluster.start_tablet(0);
    rt().block_on(latest(&cluster, &path, Some(&regions[0])));
    write(2_000..4_000);
    reader.wait_for(
        4_000,
        Duration::from_secs(90),
        "rows written after the restart",
    );

    let acked = reader.finish();
    assert_bucket_order(&acked);
    let mut got = ids(&acked);
    got.sort_unstable();
    assert_eq!(
        got,
        (0..4_000).collect::<Vec<_>>(),
        "rows lost or repeated around the stop"
    );
    eprintln!("faults: partitioned tablet stop: {:?}", started.elapsed());
}

/// A cluster whose logs expire within seconds: 1 KiB segments, tiered to the local remote
/// dir every second, and tables with `table.log.ttl` 1 s.
fn expiring_cluster() -> Cluster {
    Cluster::start(ClusterOptions {
        conf: vec![
            ("log.segment.file-size".into(), "1kb".into()),
            ("remote.log.task-interval-duration".into(), "1s".into()),
            ("table.log.tiered.local-segments".into(), "1".into()),
        ],
        ..ClusterOptions::default()
    })
}

async fn earliest(conn: &FlussConnection, path: &TablePath) -> i64 {
    let admin = conn.get_admin().expect("admin");
    let offsets = tokio::time::timeout(
        Duration::from_secs(10),
        admin.list_offsets(path, &[0], OffsetSpec::Earliest),
    )
    .await
    .expect("list_offsets answers")
    .expect("list_offsets");
    offsets[&0]
}

/// A log table whose first 600 rows were written, 40 of them read and acked, and whose log
/// start has then expired past the offset after them: the state saved after those 40 rows
/// points below the log start. The setup of every `on_offset_out_of_range` test.
struct Truncated {
    cluster: Cluster,
    path: TablePath,
    table: String,
    /// The saved state: next offset `saved` of bucket 0.
    state: Vec<u8>,
    /// The offset after the 40 rows read: 40, unless expiry had already begun (a loaded
    /// machine can take longer than `table.log.ttl` before the first read).
    saved: i64,
    /// The log start once expiry settled, above `saved`.
    log_start: i64,
    started: Instant,
}

impl Truncated {
    fn start() -> Self {
        let started = Instant::now();
        let cluster = expiring_cluster();
        let path = unique_table("truncated");
        let table = path.table().to_owned();
        rt().block_on(async {
            let conn = cluster.connection().await;
            let admin = conn.get_admin().unwrap();
            let descriptor = TableDescriptor::builder()
                .schema(tables::sample_log_schema())
                .distributed_by(Some(1), Vec::new())
                .property("table.log.ttl", "1s")
                .build()
                .expect("descriptor");
            tables::create_table(&admin, &path, &descriptor).await;
            // Many small flushes: many segments, so expiry moves the log start in steps.
            for chunk in 0..20 {
                append(&cluster, &path, chunk * 20..chunk * 20 + 20).await;
            }
        });
        // Read the first 40 rows there are and stop: the saved state points after them.
        let mut s = Stream::open(
            &config_on(&cluster, &table, json!({"batch_size": 40})),
            None,
        )
        .expect("open");
        s.read(40, Answer::AckAll);
        let first = s.acked.first().expect("40 rows read").offset;
        // At least 40 rows, in order; a slow first poll may hand over fewer than a batch, and
        // the next batch then comes along.
        let saved = s.acked.last().expect("40 rows read").offset + 1;
        assert!(saved - first >= 40, "read {} rows", saved - first);
        assert_eq!(ids(&s.acked), (first..saved).collect::<Vec<_>>());
        let state = s.close().expect("state");
        // More rows, then wait until expiry removed offset `saved` from the log.
        let log_start = rt().block_on(async {
            for chunk in 20..30 {
                append(&cluster, &path, chunk * 20..chunk * 20 + 20).await;
            }
            let conn = cluster.connection().await;
            // Expiry removes segments over several task runs; wait until the start is past
            // `saved` and has not moved for 3 s, so it does not move again while a policy is
            // checked.
            let last = std::cell::Cell::new((-1, Instant::now()));
            poll_until(
                Duration::from_secs(90),
                Duration::from_millis(500),
                "the log start to pass the saved offset and settle (table.log.ttl 1s, remote log task every 1s)",
                || async {
                    let start = earliest(&conn, &path).await;
                    let (previous, since) = last.get();
                    if start != previous {
                        last.set((start, Instant::now()));
                        Err(format!("log starts at {start}"))
                    } else if start > saved && since.elapsed() >= Duration::from_secs(3) {
                        Ok(start)
                    } else {
                        Err(format!("log starts at {start}, settling"))
                    }
                },
            )
            .await
        });
        eprintln!(
            "truncated: log start moved to {log_start} after {:?}",
            started.elapsed()
        );
        Self {
            cluster,
            path,
            table,
            state,
            saved,
            log_start,
            started,
        }
    }

    /// A stream restored from the saved state under `policy`, and the log index from which
    /// its lines count.
    fn open(&self, policy: &str) -> (Stream, usize) {
        let since = logs().len();
        let stream = Stream::open(
            &config_on(
                &self.cluster,
                &self.table,
                json!({ "on_offset_out_of_range": policy }),
            ),
            Some(self.state.clone()),
        )
        .expect("open with a saved offset below the log start");
        (stream, since)
    }

    /// The ERROR lines of this table's instance after log index `since`.
    fn errors(&self, since: usize) -> Vec<String> {
        lines_of(&self.table, since)
            .into_iter()
            .filter(|l| l.level == Level::Error)
            .map(|l| l.message)
            .collect()
    }

    fn finish(self, policy: &str) {
        eprintln!("truncated ({policy}): {:?}", self.started.elapsed());
    }
}

/// `earliest` continues at the log start, with one ERROR line naming the skipped range.
#[test]
fn truncated_log_with_earliest_continues_at_the_log_start() {
    let t = Truncated::start();
    let (mut s, since) = t.open("earliest");
    s.read(600 - t.log_start as usize, Answer::AckAll);
    let first = s.acked.first().expect("rows after the reset").offset;
    assert!(
        first >= t.log_start,
        "earliest: first offset {first} is below the log start {}",
        t.log_start
    );
    assert_eq!(
        ids(&s.acked),
        (first..600).collect::<Vec<_>>(),
        "earliest: everything from the (current) log start on, once, in order"
    );
    let errors = t.errors(since);
    assert_eq!(errors.len(), 1, "earliest: one ERROR line, got {errors:#?}");
    assert!(
        errors[0].contains(&format!("bucket 0: offsets {}..", t.saved))
            && errors[0].contains("the log was truncated"),
        "earliest: the ERROR line names bucket and skipped range: {}",
        errors[0]
    );
    drop(s);
    t.finish("earliest");
}

/// `latest` continues at the end: only rows written afterwards arrive, after one ERROR line
/// naming the skipped range.
#[test]
fn truncated_log_with_latest_continues_at_the_end() {
    let t = Truncated::start();
    let (mut s, since) = t.open("latest");
    rt().block_on(poll_until(
        Duration::from_secs(20),
        Duration::from_millis(100),
        "the out-of-range ERROR line (latest)",
        || async { t.errors(since).into_iter().next().ok_or("none yet") },
    ));
    rt().block_on(append(&t.cluster, &t.path, 600..610));
    s.read(10, Answer::AckAll);
    assert_eq!(
        ids(&s.acked),
        (600..610).collect::<Vec<_>>(),
        "latest: only rows written after the reset"
    );
    let errors = t.errors(since);
    assert_eq!(errors.len(), 1, "latest: one ERROR line, got {errors:#?}");
    assert!(
        errors[0].contains(&format!("bucket 0: offsets {}..600", t.saved))
            && errors[0].contains(&format!("{} rows skipped", 600 - t.saved)),
        "latest: the ERROR line names the skipped range: {}",
        errors[0]
    );
    drop(s);
    t.finish("latest");
}

/// `fail` delivers nothing, says at ERROR which setting to change, and keeps the state.
#[test]
fn truncated_log_with_fail_delivers_nothing_and_keeps_the_state() {
    let t = Truncated::start();
    let (mut s, since) = t.open("fail");
    let error = rt().block_on(poll_until(
        Duration::from_secs(20),
        Duration::from_millis(100),
        "the out-of-range ERROR line (fail)",
        || async {
            // The SDK logs a failed poll as `plugin <id>: poll failed …: <error>`; the error
            // names the table.
            logs()
                .into_iter()
                .skip(since)
                .find(|l| {
                    l.level == Level::Error
                        && l.message.contains(&format!(
                            "of testkit.{}: offset {} is not on the server",
                            t.table, t.saved
                        ))
                })
                .ok_or("none yet")
        },
    ));
    assert!(
        error.message.contains("on_offset_out_of_range"),
        "fail: the ERROR names the setting to change: {}",
        error.message
    );
    assert_eq!(
        s.read_for(Duration::from_secs(3), Answer::AckAll),
        0,
        "fail: nothing delivered"
    );
    assert_eq!(
        s.close(),
        Some(t.state.clone()),
        "fail: the saved state is kept"
    );
    t.finish("fail");
}
