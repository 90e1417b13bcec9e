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

//! Leader failover on a replicated cluster (three tablet servers, replication factor 3), on a
//! dedicated cluster: while a 3-bucket log table and a 3-bucket primary-key table are written
//! without pause and streamed, the leader of a bucket is killed with -9, later the new leader
//! is stopped, then every tablet server is restarted one by one. Every write the writers got
//! acknowledged arrives, in bucket order, with no repeats beyond the batches in flight; the
//! longest gap per bucket (the stall) and the plugin's lines per event are printed.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use fluss_source_runner::{Level, LogLine, logs};
use fluss_testkit::fluss::metadata::TablePath;
use fluss_testkit::write::continuous::{Pace, Writer, Written};
use fluss_testkit::{Cluster, ClusterOptions, poll_until, tables, unique_table};
use serde_json::{Value, json};

use crate::fixture::{self, Answer, Received, Stream, assert_bucket_order, merged, rt};

const BATCH_SIZE: usize = 500;
/// Rows per write round; a round is flushed (acknowledged by all in-sync replicas) before
/// the next one starts.
const ROUND: i64 = 200;
/// Distinct keys of the primary-key table, so most writes are updates.
const KEYS: i64 = 300;
/// Longest a flush may take while a leader moves; a longer one counts as not acknowledged.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(30);

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A plugin config for `table` on `cluster`, in batches of [`BATCH_SIZE`].
pub fn config_on(cluster: &Cluster, table: &str, extra: Value) -> Value {
    fixture::config_on(
        cluster,
        table,
        merged(json!({ "batch_size": BATCH_SIZE }), extra),
    )
}

/// How the writers write: small rounds, flushed, then a short pause.
const PACE: Pace = Pace {
    round: ROUND,
    keys: KEYS,
    delete_every: 0,
    flush_timeout: FLUSH_TIMEOUT,
    pause: Duration::from_millis(100),
    label: Some("failover"),
};

/// A stream read on its own thread, acking every batch; each message's key (the log row's
/// `id`, the change's `name`) is published as it arrives.
struct Tap {
    seen: Arc<Mutex<HashSet<String>>>,
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Vec<(Received, Instant)>>,
}

fn key_of(m: &Received) -> String {
    match &m.payload["name"] {
        Value::String(name) if name.starts_with('w') => name.clone(),
        _ => m.payload["id"].to_string(),
    }
}

impl Tap {
    fn start(config: Value) -> Self {
        let seen = Arc::new(Mutex::new(HashSet::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (seen, stop) = (seen.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut s = Stream::open(&config, None).expect("open");
                let mut arrived = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let before = s.acked.len();
                    s.read_for(Duration::from_millis(300), Answer::AckAll);
                    let now = Instant::now();
                    let mut seen = lock(&seen);
                    for m in &s.acked[before..] {
                        seen.insert(key_of(m));
                        arrived.push(now);
                    }
                }
                let acked = std::mem::take(&mut s.acked);
                s.close();
                acked.into_iter().zip(arrived).collect()
            })
        };
        Self { seen, stop, thread }
    }

    /// Waits until every key of `keys` arrived.
    fn wait_for(&self, keys: &[String], within: Duration, what: &str) {
        rt().block_on(poll_until(
            within,
            Duration::from_millis(200),
            what,
            || async {
                assert!(
                    !self.thread.is_finished(),
                    "the reader thread ended (see its panic above) while waiting for {what}"
                );
                let seen = lock(&self.seen);
                let missing = keys.iter().filter(|k| !seen.contains(*k)).count();
                if missing == 0 {
                    Ok(())
                } else {
                    Err(format!(
                        "{missing} of {} acknowledged writes missing",
                        keys.len()
                    ))
                }
            },
        ));
    }

    fn finish(self) -> Vec<(Received, Instant)> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().expect("reader thread")
    }
}

/// The longest time between two consecutive messages of one bucket, per bucket.
fn stalls(messages: &[(Received, Instant)]) -> BTreeMap<i32, Duration> {
    let mut last: HashMap<i32, Instant> = HashMap::new();
    let mut longest: BTreeMap<i32, Duration> = BTreeMap::new();
    for (m, at) in messages {
        if let Some(prev) = last.insert(m.bucket, *at) {
            let gap = at.duration_since(prev);
            let entry = longest.entry(m.bucket).or_default();
            *entry = (*entry).max(gap);
        }
    }
    longest
}

/// Per event (up to the next one, the last up to `ended`): the longest time a write
/// acknowledged in that window waited for its delivery, and the longest gap between two
/// deliveries of one bucket in that window: the stall the connector's reader saw.
fn event_figures(
    events: &[(String, usize, Instant)],
    ended: Instant,
    written: &Written,
    read: &[(Received, Instant)],
) -> Vec<(String, Duration, Duration)> {
    let mut arrival: HashMap<String, Instant> = HashMap::new();
    for (m, at) in read {
        arrival.entry(key_of(m)).or_insert(*at);
    }
    let mut out = Vec::new();
    for (n, (event, _, from)) in events.iter().enumerate() {
        let to = events.get(n + 1).map_or(ended, |e| e.2);
        let latency = written
            .acked
            .iter()
            .zip(&written.acked_at)
            .filter(|(_, at)| **at >= *from && **at < to)
            .filter_map(|(k, at)| arrival.get(k).map(|a| a.saturating_duration_since(*at)))
            .max()
            .unwrap_or_default();
        let window: Vec<(Received, Instant)> = read
            .iter()
            .filter(|(_, at)| *at >= *from && *at < to)
            .cloned()
            .collect();
        let gap = stalls(&window).into_values().max().unwrap_or_default();
        out.push((event.clone(), latency, gap));
    }
    out
}

/// The WARN and ERROR lines one event caused for `table` (log lines `since..until`), and the
/// INFO lines that closed its outage: any `reading again after` line after its last WARN, also
/// one logged after the next event began (Fluss answering again shows at the source's next
/// liveness probe, up to 5 s after the servers recover, which may be after the test moved on).
struct EventLines {
    warns: Vec<String>,
    recovered: Vec<String>,
    errors: Vec<String>,
}

fn event_lines(table: &str, since: usize, until: usize) -> EventLines {
    let tag = format!("{}.{table}]", tables::TEST_DATABASE);
    let lines: Vec<(usize, LogLine)> = logs()
        .into_iter()
        .enumerate()
        .skip(since)
        .filter(|(_, l)| l.message.contains(&tag))
        .collect();
    let pick = |level: Level, from: usize, to: usize, needle: &str| -> Vec<String> {
        lines
            .iter()
            .filter(|(i, l)| {
                (from..to).contains(i) && l.level == level && l.message.contains(needle)
            })
            .map(|(_, l)| l.message.clone())
            .collect()
    };
    let last_warn = lines
        .iter()
        .rev()
        .find(|(i, l)| *i < until && l.level == Level::Warn)
        .map(|(i, _)| *i);
    EventLines {
        warns: pick(Level::Warn, since, until, ""),
        recovered: last_warn.map_or_else(Vec::new, |w| {
            pick(Level::Info, w + 1, usize::MAX, "reading again after")
        }),
        errors: pick(Level::Error, since, until, ""),
    }
}

/// The streams and writers of both tables, and the log index of each event.
struct Failover {
    cluster: Arc<Cluster>,
    log_path: TablePath,
    pk_path: TablePath,
    log_writer: Writer,
    pk_writer: Writer,
    log_tap: Tap,
    pk_tap: Tap,
    /// What happened, the log index and the time it started.
    events: Vec<(String, usize, Instant)>,
}

impl Failover {
    /// Waits until both streams delivered everything acknowledged so far.
    fn catch_up(&self, what: &str) {
        self.log_tap
            .wait_for(&self.log_writer.acked(), Duration::from_secs(120), what);
        self.pk_tap
            .wait_for(&self.pk_writer.acked(), Duration::from_secs(120), what);
    }

    fn tables(&self) -> [&TablePath; 2] {
        [&self.log_path, &self.pk_path]
    }
}

#[test]
fn leader_failover_loses_nothing() {
    let started = Instant::now();
    // Shared with the writer threads; stopped when the last handle goes at the end.
    let cluster = Arc::new(Cluster::start(ClusterOptions::replicated()));
    eprintln!(
        "failover: 3-tablet cluster serves after {:.1?}; RSS {:?} KiB",
        cluster.start_time().unwrap_or_default(),
        cluster.memory()
    );
    let log_path = unique_table("failover_log");
    let pk_path = unique_table("failover_pk");
    rt().block_on(async {
        let conn = cluster.connection().await;
        let admin = conn.get_admin().expect("admin");
        tables::create_log_table(&admin, &log_path, tables::sample_log_schema(), 3).await;
        tables::create_pk_table(&admin, &pk_path, tables::sample_pk_schema(), 3).await;
    });
    let mut f = Failover {
        cluster: cluster.clone(),
        log_writer: Writer::start(cluster.clone(), log_path.clone(), false, PACE),
        pk_writer: Writer::start(cluster.clone(), pk_path.clone(), true, PACE),
        log_tap: Tap::start(config_on(&cluster, log_path.table(), json!({}))),
        pk_tap: Tap::start(config_on(
            &cluster,
            pk_path.table(),
            json!({"changelog_format": "flat"}),
        )),
        log_path,
        pk_path,
        events: Vec::new(),
    };
    rt().block_on(poll_until(
        Duration::from_secs(60),
        Duration::from_millis(200),
        "the writers' first acknowledged rounds",
        || async {
            let (log, pk) = (f.log_writer.acked().len(), f.pk_writer.acked().len());
            if log >= 500 && pk >= 500 {
                Ok(())
            } else {
                Err(format!("{log} log rows and {pk} changes acknowledged"))
            }
        },
    ));
    f.catch_up("the first rounds");
    eprintln!(
        "failover: {:?} ISR {:?}",
        f.log_path,
        f.cluster.in_sync_replicas(&f.tables())
    );

    // 1. kill -9 the leader of bucket 0 of the log table.
    let killed = f
        .cluster
        .bucket_leader(&f.log_path, None, 0)
        .expect("bucket 0 has a leader");
    f.events.push((
        format!("kill -9 of tablet server {killed} (leader of bucket 0)"),
        logs().len(),
        Instant::now(),
    ));
    f.cluster.kill_tablet(killed);
    let second = f
        .cluster
        .wait_new_leader(&f.log_path, None, 0, killed, Duration::from_secs(60));
    f.catch_up("writes acknowledged after the kill");
    f.cluster.start_tablet(killed);
    f.cluster
        .wait_in_sync(&f.tables(), Duration::from_secs(120));
    f.catch_up("writes after the killed server came back");

    // 2. stop the new leader (gracefully).
    f.events.push((
        format!("stop of tablet server {second} (the new leader of bucket 0)"),
        logs().len(),
        Instant::now(),
    ));
    f.cluster.stop_tablet(second);
    f.cluster
        .wait_new_leader(&f.log_path, None, 0, second, Duration::from_secs(60));
    f.catch_up("writes acknowledged after the stop");
    f.cluster.start_tablet(second);
    f.cluster
        .wait_in_sync(&f.tables(), Duration::from_secs(120));
    f.catch_up("writes after the stopped server came back");

    // 3. every tablet server restarted, one at a time.
    f.events.push((
        "rolling restart of all tablet servers".to_owned(),
        logs().len(),
        Instant::now(),
    ));
    f.cluster.rolling_restart(&f.tables());
    f.catch_up("writes acknowledged during the rolling restart");
    let end = logs().len();
    let ended = Instant::now();

    let log_written = f.log_writer.finish();
    let pk_written = f.pk_writer.finish();
    f.log_tap.wait_for(
        &log_written.acked,
        Duration::from_secs(120),
        "every log row",
    );
    f.pk_tap
        .wait_for(&pk_written.acked, Duration::from_secs(120), "every change");
    // Every outage the plugin noticed is closed before the streams stop: its next liveness
    // probe finds Fluss answering (at most 5 s) and says so.
    let first_event = f.events[0].1;
    rt().block_on(poll_until(
        Duration::from_secs(30),
        Duration::from_millis(200),
        "a 'reading again after' INFO after each table's last WARN",
        || async {
            let open: Vec<&str> = [f.log_path.table(), f.pk_path.table()]
                .into_iter()
                .filter(|table| {
                    let lines = event_lines(table, first_event, usize::MAX);
                    !lines.warns.is_empty() && lines.recovered.is_empty()
                })
                .collect();
            if open.is_empty() {
                Ok(())
            } else {
                Err(format!("still in an outage: {open:?}"))
            }
        },
    ));
    let log_read = f.log_tap.finish();
    let pk_read = f.pk_tap.finish();

    for (name, written, read) in [
        ("log", &log_written, &log_read),
        ("pk", &pk_written, &pk_read),
    ] {
        let received: Vec<Received> = read.iter().map(|(m, _)| m.clone()).collect();
        assert_bucket_order(&received);
        let keys: Vec<String> = received.iter().map(key_of).collect();
        let distinct: HashSet<&String> = keys.iter().collect();
        let repeats = keys.len() - distinct.len();
        let acked: HashSet<&String> = written.acked.iter().collect();
        let unconfirmed: HashSet<&String> = written.unconfirmed.iter().collect();
        let lost: Vec<&&String> = acked.iter().filter(|k| !distinct.contains(*k)).collect();
        assert!(
            lost.is_empty(),
            "{name}: {} acknowledged writes lost: {:?}",
            lost.len(),
            &lost[..lost.len().min(20)]
        );
        let invented: Vec<&&String> = distinct
            .iter()
            .filter(|k| !acked.contains(*k) && !unconfirmed.contains(*k))
            .collect();
        assert!(
            invented.is_empty(),
            "{name}: messages nobody wrote: {invented:?}"
        );
        assert!(
            repeats <= BATCH_SIZE * f.events.len(),
            "{name}: {repeats} repeats, more than a batch ({BATCH_SIZE}) per event"
        );
        eprintln!(
            "failover: {name}: {} acknowledged writes ({} unconfirmed), {} messages, {repeats} repeats, \
             longest flush {:.1?}, longest gap per bucket {:?}",
            written.acked.len(),
            written.unconfirmed.len(),
            keys.len(),
            written.longest_flush,
            stalls(read)
        );
        for (event, latency, gap) in event_figures(&f.events, ended, written, read) {
            eprintln!(
                "failover: {name}: {event}: longest wait from acknowledgement to delivery \
                 {latency:.1?}, longest gap between deliveries of one bucket {gap:.1?}"
            );
        }
    }
    // Per key, the changes arrive in write order (`w<seq>` grows).
    let mut last_seq: HashMap<i64, i64> = HashMap::new();
    for (m, _) in &pk_read {
        let key = m.payload["id"].as_i64().expect("id");
        let seq: i64 = m.payload["name"].as_str().expect("name")[1..]
            .parse()
            .expect("seq");
        if let Some(prev) = last_seq.insert(key, seq) {
            assert!(seq > prev, "key {key}: change w{seq} came after w{prev}");
        }
    }

    // The plugin's lines, per event and table.
    let mut bounds: Vec<usize> = f.events.iter().map(|(_, i, _)| *i).collect();
    bounds.push(end);
    for (n, (event, since, _)) in f.events.iter().enumerate() {
        for table in [f.log_path.table(), f.pk_path.table()] {
            let lines = event_lines(table, *since, bounds[n + 1]);
            eprintln!(
                "failover: {event}: {table}: {} WARN, {} 'reading again', {} ERROR: {:#?} {:#?}",
                lines.warns.len(),
                lines.recovered.len(),
                lines.errors.len(),
                lines.warns,
                lines.recovered
            );
            assert!(
                lines.errors.is_empty(),
                "{event}: a failover is not an ERROR: {:#?}",
                lines.errors
            );
            // An outage the plugin noticed is closed by one INFO line once rows flow again.
            assert!(
                lines.warns.is_empty() || !lines.recovered.is_empty(),
                "{event}: {table}: a WARN without a 'reading again after' INFO: {:#?}",
                lines.warns
            );
            // kill -9 leaves bucket 0 without a leader until the ZooKeeper session of the
            // killed server expires (10 s); the writer's rounds wait for it, so the table is
            // quiet for longer than the plugin's 5 s probe and the outage is logged. A
            // graceful stop moves leaders at once: no line at all is the expected outcome.
            if n == 0 && table == f.log_path.table() {
                assert!(
                    !lines.warns.is_empty(),
                    "{event}: the outage of bucket 0 is logged at WARN"
                );
            }
        }
    }
    eprintln!(
        "failover: RSS after the run {:?} KiB; {:.1?} in all",
        f.cluster.memory(),
        started.elapsed()
    );
}
