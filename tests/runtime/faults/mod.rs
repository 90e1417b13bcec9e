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

//! Faults through the real runtime under continuous load: while rows keep being appended to a
//! log table and upserts and deletes keep going to a primary-key table (read from its KV
//! snapshot first), `iggy-connectors` streams both, and faults of Fluss servers, of the network
//! between the plugin and Fluss, and of the Iggy server come one after another
//! ([`sequence`]: a proxied single-tablet cluster; [`leader`]: a replicated one).
//!
//! After each fault the test waits until every write acknowledged so far arrived (a stall past
//! [`RECOVERY`] fails it, naming the fault). At the end the topics are checked against Fluss
//! itself: read the way a consumer keeping one position per bucket reads them
//! (docs/consuming.md), the log topic holds every offset of every bucket of the log table once
//! and in order, the primary-key topic every change of the changelog from each bucket's
//! snapshot on, in order, and its events replay to the table's final state; repeats stay
//! within a batch per fault. Per fault the test prints, for each table, the time from the
//! fault's end to the first new row (from the Iggy server's timestamps), the time until every
//! write acknowledged before the fault's end had arrived, the longest gap in delivery, the
//! repeats and the plugin's WARN and ERROR lines.

mod leader;
mod sequence;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use fluss_testkit::fluss::client::EARLIEST_OFFSET;
use fluss_testkit::fluss::metadata::TablePath;
use fluss_testkit::fluss::record::ChangeType;
use fluss_testkit::fluss::row::DataGetters;
use fluss_testkit::fluss::rpc::message::OffsetSpec;
use fluss_testkit::iggy::{ConnectorsRuntime, Message, SourceConnector, Stop};
use fluss_testkit::write::continuous::{Pace, Writer, Written};
use fluss_testkit::{Cluster, poll_until, tables, unique_table, write};
use serde_json::{Value, json};

use crate::fixture::{STREAM, World, plugin_path, rt};

/// `batch_size` of both connectors: the most a fault may repeat per table.
pub const BATCH: usize = 200;
/// Buckets of each table.
const BUCKETS: i32 = 3;
/// Keys the primary-key writer changes (a subset of the preloaded keys), so most writes are
/// updates.
const KEYS: i64 = 2000;
/// Longest wait after a fault's end until every acknowledged write arrived.
pub const RECOVERY: Duration = Duration::from_secs(120);

/// How both writers write: about 200 rows a second each, every tenth change of the
/// primary-key table a delete.
const PACE: Pace = Pace {
    round: 50,
    keys: KEYS,
    delete_every: 10,
    // A writer stuck in a flush (a paused server) is replaced after this, so writes resume
    // soon after a fault.
    flush_timeout: Duration::from_secs(5),
    pause: Duration::from_millis(200),
    label: Some("faults"),
};

/// Microseconds since the epoch, the unit of the Iggy server's timestamps.
fn micros(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// The UTC time of day of `micros`, as the runtime's log lines show it.
fn time_of_day(micros: u64) -> String {
    let ms = micros / 1000 % 86_400_000;
    format!(
        "{:02}:{:02}:{:02}.{:03}",
        ms / 3_600_000,
        ms / 60_000 % 60,
        ms / 1000 % 60,
        ms % 1000
    )
}

/// One fault: when it began and ended (its end is when the fault was lifted: the process
/// resumed or serving again, the proxy passing data again), and the runtime log's length then.
pub struct Fault {
    pub name: String,
    started: u64,
    ended: u64,
    /// From the end until both writers had a write acknowledged again.
    writes_again: Duration,
    log_from: usize,
    log_to: usize,
}

/// One table under load: its writer and what its connector delivered so far.
pub struct Loaded {
    pub path: TablePath,
    primary_key: bool,
    topic: String,
    writer: Option<Writer>,
    written: Written,
    /// Every message of the topic read so far, in topic order.
    messages: Vec<Message>,
    /// Keys of the writes seen in change or row messages (a log row's id, a change's name).
    seen: HashSet<String>,
}

impl Loaded {
    fn new(path: TablePath, primary_key: bool, topic: &str) -> Self {
        Self {
            path,
            primary_key,
            topic: topic.to_owned(),
            writer: None,
            written: Written::default(),
            messages: Vec::new(),
            seen: HashSet::new(),
        }
    }

    /// The writer's acknowledged keys so far (all of them after [`Load::finish`]).
    fn acked(&self) -> Vec<String> {
        match &self.writer {
            Some(writer) => writer.acked(),
            None => self.written.acked.clone(),
        }
    }

    /// Reads the messages added to the topic since the last read; `Err` while the server
    /// does not answer.
    fn read(&mut self, world: &World) -> Result<(), String> {
        loop {
            let next = self.messages.last().map_or(0, |m| m.offset + 1);
            let polled = world.server.poll(STREAM, &self.topic, 0, next)?;
            if polled.is_empty() {
                return Ok(());
            }
            for m in &polled {
                if let Some(key) = write_key(m, self.primary_key) {
                    self.seen.insert(key);
                }
            }
            self.messages.extend(polled);
        }
    }
}

/// The key of the write a message carries: a log row's id, or the name a change event's
/// new image holds (`None` for snapshot rows, deletes and rows of other writers).
fn write_key(m: &Message, primary_key: bool) -> Option<String> {
    let payload: Value = serde_json::from_slice(&m.payload).ok()?;
    if !primary_key {
        return Some(payload["id"].as_i64()?.to_string());
    }
    match payload["op"].as_str()? {
        "c" | "u" => Some(payload["after"]["name"].as_str()?.to_owned()),
        _ => None,
    }
}

/// Both tables, their writers, the Iggy server and the runtime streaming them, and the faults
/// so far.
pub struct Load {
    pub cluster: Arc<Cluster>,
    pub world: World,
    pub runtime: ConnectorsRuntime,
    pub log: Loaded,
    pub pk: Loaded,
    pub faults: Vec<Fault>,
    /// Acknowledged primary-key writes before this index may be read from the KV snapshot
    /// rather than as changes (the snapshots were chosen before the first snapshot row came).
    pk_mark: usize,
    started: Instant,
}

impl Load {
    /// Creates a log table and a primary-key table of `preload` keys (on `cluster`, written
    /// through its own listener), waits until the KV snapshots hold them, starts both writers,
    /// a durable Iggy server and the runtime with a connector per table reading through
    /// `bootstrap`.
    pub fn start(test: &str, cluster: Arc<Cluster>, bootstrap: &str, preload: i64) -> Load {
        let started = Instant::now();
        let log_path = unique_table("rt_faults_log");
        let pk_path = unique_table("rt_faults_pk");
        rt().block_on(async {
            let connection = cluster.connection().await;
            let admin = connection.get_admin().expect("admin");
            tables::create_log_table(&admin, &log_path, tables::sample_log_schema(), BUCKETS).await;
            tables::create_pk_table(&admin, &pk_path, tables::sample_pk_schema(), BUCKETS).await;
            write::upsert_rows(&connection, &pk_path, (0..preload).map(tables::sample_row)).await;
            tables::kv_snapshots_caught_up(&admin, &pk_path, Duration::from_secs(120)).await;
        });
        let mut log = Loaded::new(log_path, false, "faults_log");
        let mut pk = Loaded::new(pk_path, true, "faults_pk");
        log.writer = Some(Writer::start(
            cluster.clone(),
            log.path.clone(),
            false,
            PACE,
        ));
        pk.writer = Some(Writer::start(cluster.clone(), pk.path.clone(), true, PACE));
        let world = World::new(test);
        for table in [&log, &pk] {
            world.server.create_durable_topic(STREAM, &table.topic);
        }
        let connector = |key: &str, table: &Loaded, extra: Value| {
            let mut config = json!({
                "bootstrap_servers": bootstrap,
                "database": table.path.database(),
                "table": table.path.table(),
                "batch_size": BATCH,
            });
            if let (Value::Object(base), Value::Object(extra)) = (&mut config, extra) {
                base.extend(extra);
            }
            SourceConnector::new(key, &plugin_path(), STREAM, &table.topic, "json", config)
        };
        let runtime = world.runtime(&[
            connector("fluss_faults_log", &log, json!({})),
            connector(
                "fluss_faults_pk",
                &pk,
                json!({ "changelog_format": "debezium", "table_type": "primary_key" }),
            ),
        ]);
        eprintln!(
            "faults: {preload} keys preloaded and the runtime started after {:.1?}",
            started.elapsed()
        );
        Load {
            cluster,
            world,
            runtime,
            log,
            pk,
            faults: Vec::new(),
            pk_mark: 0,
            started,
        }
    }

    /// Waits until the primary-key topic holds its first snapshot row and returns how many
    /// messages it holds then. Acknowledged writes from here on are all read as changes.
    pub fn wait_for_snapshot_rows(&mut self) -> u64 {
        let deadline = Instant::now() + RECOVERY;
        loop {
            let count = self
                .world
                .server
                .topic(STREAM, &self.pk.topic)
                .map_or(0, |t| t.messages);
            if count > 0 {
                self.pk_mark = self.pk.acked().len();
                return count;
            }
            assert!(
                Instant::now() < deadline,
                "no snapshot row within {RECOVERY:?}; runtime log:\n{}",
                tail(&self.runtime.log(), 40)
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// How many snapshot rows of the primary-key table arrived after the last fault began.
    pub fn snapshot_rows_after_last_fault_began(&self) -> usize {
        let began = self.faults.last().map_or(0, |f| f.started);
        self.pk
            .messages
            .iter()
            .filter(|m| m.timestamp > began && m.id >> 126 != 1)
            .count()
    }

    /// Marks the start of fault `name`.
    pub fn begin(&mut self, name: &str) {
        let started = micros(SystemTime::now());
        eprintln!(
            "faults: {name}: begins at {} UTC ({:.1?} into the test)",
            time_of_day(started),
            self.started.elapsed()
        );
        self.faults.push(Fault {
            name: name.to_owned(),
            started,
            ended: 0,
            writes_again: Duration::ZERO,
            log_from: self.runtime.log().len(),
            log_to: 0,
        });
    }

    /// Marks the end of the current fault, waits until both writers had a write acknowledged
    /// after it, then until every write acknowledged by then arrived in both topics: the
    /// stream works again end to end before the next fault.
    pub fn end(&mut self) {
        let ended = micros(SystemTime::now());
        let since = Instant::now();
        let fault = self.faults.last_mut().expect("a fault begun");
        fault.ended = ended;
        let name = fault.name.clone();
        eprintln!("faults: {name}: ends at {} UTC", time_of_day(ended));
        let written = [self.log.acked().len(), self.pk.acked().len()];
        poll_for_writes(&written, [&self.log, &self.pk], &name, since);
        let writes_again = since.elapsed();
        eprintln!(
            "faults: {name}: both writers had writes acknowledged {writes_again:.1?} after the end"
        );
        if let Some(fault) = self.faults.last_mut() {
            fault.writes_again = writes_again;
        }
        self.catch_up(&format!("every acknowledged write after {name}"));
        assert!(
            self.runtime.is_running(),
            "iggy-connectors exited after {name}; log tail:\n{}",
            tail(&self.runtime.log(), 60)
        );
        let log_len = self.runtime.log().len();
        if let Some(fault) = self.faults.last_mut() {
            fault.log_to = log_len;
        }
    }

    /// Holds a fault for `hold`: the point of the test, not a wait for a condition.
    pub fn hold(&self, hold: Duration) {
        std::thread::sleep(hold);
    }

    /// Waits until both topics hold every write acknowledged so far (of the primary-key table:
    /// those acknowledged after the first snapshot row); panics after [`RECOVERY`].
    pub fn catch_up(&mut self, what: &str) {
        let started = Instant::now();
        let log_acked = self.log.acked();
        let pk_acked: Vec<String> = self.pk.acked()[self.pk_mark.min(self.pk.acked().len())..]
            .iter()
            .filter(|k| k.starts_with('w'))
            .cloned()
            .collect();
        let mut last_error = String::new();
        loop {
            for table in [&mut self.log, &mut self.pk] {
                if let Err(e) = table.read(&self.world) {
                    last_error = e;
                }
            }
            let missing_log = log_acked
                .iter()
                .filter(|k| !self.log.seen.contains(*k))
                .count();
            let missing_pk = pk_acked
                .iter()
                .filter(|k| !self.pk.seen.contains(*k))
                .count();
            if missing_log == 0 && missing_pk == 0 {
                eprintln!(
                    "faults: {what}: {} log rows and {} changes arrived, {:.1?} after the check began",
                    log_acked.len(),
                    pk_acked.len(),
                    started.elapsed()
                );
                return;
            }
            if started.elapsed() > RECOVERY {
                panic!(
                    "{what}: {missing_log} of {} acknowledged log rows and {missing_pk} of {} \
                     acknowledged changes missing after {RECOVERY:?} (last read error: \
                     {last_error:?})\ncluster:\n{}\nruntime log tail:\n{}",
                    log_acked.len(),
                    pk_acked.len(),
                    self.cluster.status(),
                    tail(&self.runtime.log(), 60)
                );
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// Stops the writers and waits for everything they wrote, stops the runtime, then checks
    /// both topics against Fluss and prints the figures of every fault.
    pub fn finish(mut self, test: &str) {
        for table in [&mut self.log, &mut self.pk] {
            if let Some(writer) = table.writer.take() {
                table.written = writer.finish();
            }
        }
        self.catch_up("every acknowledged write");
        let truth_log = fluss_log(&self.cluster, &self.log.path);
        let truth_pk = fluss_log(&self.cluster, &self.pk.path);
        // Everything Fluss holds, unconfirmed writes included, arrives before the runtime stops.
        let expected_log: usize = truth_log.values().map(Vec::len).sum();
        let deadline = Instant::now() + RECOVERY;
        loop {
            let _ = self.log.read(&self.world);
            let _ = self.pk.read(&self.world);
            let log_rows = Deliveries::of(&self.log.messages).new_count();
            let pk_done = pk_changes_delivered(&self.pk.messages, &truth_pk);
            if log_rows >= expected_log && pk_done {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{log_rows} of {expected_log} log rows, primary-key changelog complete: \
                 {pk_done}, {RECOVERY:?} after the writers stopped"
            );
            std::thread::sleep(Duration::from_millis(500));
        }
        self.runtime.stop(Stop::Interrupt);
        let log_text = self.runtime.log();

        let log = Deliveries::of(&self.log.messages);
        let pk = Deliveries::of(&self.pk.messages);
        check_log(&log, &self.log, &truth_log);
        check_pk(&pk, &self.pk, &truth_pk, self.pk_mark);

        let converter = Clock::new(self.started);
        let mut total_repeats = [0usize; 2];
        let mut failures = Vec::new();
        for (n, fault) in self.faults.iter().enumerate() {
            let until = self.faults.get(n + 1).map_or(u64::MAX, |next| next.started);
            let mut parts = Vec::new();
            for (i, (name, deliveries, table)) in [("log", &log, &self.log), ("pk", &pk, &self.pk)]
                .into_iter()
                .enumerate()
            {
                let figures = deliveries.figures(fault, until, table, &converter);
                total_repeats[i] += figures.repeats;
                // Only the batch in flight at the fault may come again.
                if figures.repeats > BATCH {
                    failures.push(format!(
                        "{}: {name}: {} repeats, more than a batch ({BATCH})",
                        fault.name, figures.repeats
                    ));
                }
                parts.push(format!("{name}: {figures}"));
            }
            let lines =
                &log_text[fault.log_from.min(log_text.len())..fault.log_to.min(log_text.len())];
            let plugin: Vec<&str> = lines.lines().filter(|l| l.contains("fluss[")).collect();
            let warns: Vec<&str> = plugin
                .iter()
                .copied()
                .filter(|l| l.contains(" WARN "))
                .collect();
            let errors: Vec<&str> = lines.lines().filter(|l| l.contains(" ERROR ")).collect();
            eprintln!(
                "{test}: {}: both writers acknowledged writes again {:.1} s after the end; {}; \
                 {} runtime log lines, {} of the plugin, {} plugin WARN, {} ERROR: {:#?}",
                fault.name,
                fault.writes_again.as_secs_f64(),
                parts.join("; "),
                lines.lines().count(),
                plugin.len(),
                warns.len(),
                errors.len(),
                warns.iter().chain(&errors).take(12).collect::<Vec<_>>()
            );
            // An outage is a WARN when noticed and at most one more every 30 s per connector,
            // never an ERROR of the plugin, and no flood of lines.
            let seconds = (fault.ended.saturating_sub(fault.started)
                + fault.writes_again.as_micros() as u64)
                / 1_000_000;
            let allowed = 2 * (2 + seconds as usize / 30);
            if warns.len() > allowed {
                failures.push(format!(
                    "{}: {} plugin WARN lines, more than {allowed}",
                    fault.name,
                    warns.len()
                ));
            }
            let plugin_errors = errors.iter().filter(|l| l.contains("fluss[")).count();
            if plugin_errors > 0 {
                failures.push(format!(
                    "{}: {plugin_errors} plugin ERROR lines",
                    fault.name
                ));
            }
            if plugin.len() > 40 {
                failures.push(format!("{}: {} plugin log lines", fault.name, plugin.len()));
            }
        }
        assert!(failures.is_empty(), "{failures:#?}");
        eprintln!(
            "{test}: {} log rows ({} unconfirmed), {} primary-key changes ({} unconfirmed), \
             {} and {} messages, {} and {} repeats; {:.1?} in all",
            self.log.written.acked.len(),
            self.log.written.unconfirmed.len(),
            self.pk.written.acked.len(),
            self.pk.written.unconfirmed.len(),
            self.log.messages.len(),
            self.pk.messages.len(),
            total_repeats[0],
            total_repeats[1],
            self.started.elapsed()
        );
    }
}

/// Waits until each table's writer acknowledged more than `written` writes (its count at a
/// fault's end), at most [`RECOVERY`] from `since`.
fn poll_for_writes(written: &[usize; 2], tables: [&Loaded; 2], fault: &str, since: Instant) {
    loop {
        let counts = tables.map(|t| t.acked().len());
        if counts[0] > written[0] && counts[1] > written[1] {
            return;
        }
        assert!(
            since.elapsed() < RECOVERY,
            "after {fault}: the writers had {counts:?} writes acknowledged, {written:?} at its \
             end, after {RECOVERY:?}: Fluss does not take writes"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Converts the writers' `Instant`s to the Iggy server's epoch microseconds.
struct Clock {
    instant: Instant,
    micros: u64,
}

impl Clock {
    fn new(instant: Instant) -> Self {
        let micros = micros(SystemTime::now()) - instant.elapsed().as_micros() as u64;
        Self { instant, micros }
    }

    fn micros(&self, at: Instant) -> u64 {
        self.micros + at.saturating_duration_since(self.instant).as_micros() as u64
    }
}

/// Where a message's (first) row sits in its bucket (docs/consuming.md, "What a consumer
/// sees"): a snapshot row by its snapshot and index, a log row or change by its offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Position {
    Snapshot { offset: u64, index: u64 },
    Log(u64),
}

impl Position {
    fn of(id: u128) -> Position {
        match id >> 126 {
            1 => Position::Log((id & ((1 << 56) - 1)) as u64),
            2 | 3 => Position::Snapshot {
                offset: ((id >> 32) & ((1 << 24) - 1)) as u64,
                index: (id & 0xFFFF_FFFF) as u64,
            },
            layout => panic!("message id {id} has layout {layout}"),
        }
    }

    /// Whether a row at `self` is new after the last applied row at `last` (the recipe of
    /// docs/consuming.md, "Exactly once: drop the repeats").
    fn is_new_after(self, last: Option<Position>) -> bool {
        match (last, self) {
            (None, _) => true,
            (
                Some(Position::Snapshot {
                    offset: a,
                    index: i,
                }),
                Position::Snapshot {
                    offset: b,
                    index: j,
                },
            ) => a != b || j > i,
            (Some(Position::Snapshot { .. }), Position::Log(_)) => true,
            (Some(Position::Log(_)), Position::Snapshot { .. }) => false,
            (Some(Position::Log(a)), Position::Log(b)) => b > a,
        }
    }
}

/// A topic's messages read as a consumer keeping one position per bucket reads them.
struct Deliveries<'a> {
    messages: &'a [Message],
    /// Per message: its bucket, position and whether it is new (else a repeat).
    read: Vec<(i32, Position, bool)>,
}

impl<'a> Deliveries<'a> {
    /// Classifies every message; panics if a message the recipe drops was never delivered
    /// before (a row out of order, which the recipe would lose).
    fn of(messages: &'a [Message]) -> Self {
        let mut last: HashMap<i32, Position> = HashMap::new();
        let mut ids: HashSet<u128> = HashSet::new();
        let mut read = Vec::with_capacity(messages.len());
        for m in messages {
            let bucket = m.header("fluss_bucket").as_i32().expect("fluss_bucket");
            let position = Position::of(m.id);
            let new = position.is_new_after(last.get(&bucket).copied());
            if new {
                last.insert(bucket, position);
            } else {
                assert!(
                    ids.contains(&m.id),
                    "bucket {bucket}: {position:?} (Iggy offset {}) comes after {:?} but was \
                     never delivered before: out of order",
                    m.offset,
                    last.get(&bucket)
                );
            }
            ids.insert(m.id);
            read.push((bucket, position, new));
        }
        Self { messages, read }
    }

    fn new_count(&self) -> usize {
        self.read.iter().filter(|(_, _, new)| *new).count()
    }

    /// The new messages with their bucket and position, in topic order.
    fn new_ones(&self) -> impl Iterator<Item = (&'a Message, i32, Position)> + '_ {
        self.messages
            .iter()
            .zip(&self.read)
            .filter(|(_, (_, _, new))| *new)
            .map(|(m, (bucket, position, _))| (m, *bucket, *position))
    }

    /// One table's figures for `fault`, whose window lasts until `until` (the next fault's
    /// start).
    fn figures(&self, fault: &Fault, until: u64, table: &Loaded, clock: &Clock) -> Figures {
        let in_window = |m: &Message| m.timestamp >= fault.started && m.timestamp < until;
        let repeats = self
            .messages
            .iter()
            .zip(&self.read)
            .filter(|(m, (_, _, new))| !*new && in_window(m))
            .count();
        let new: Vec<u64> = self
            .new_ones()
            .map(|(m, _, _)| m.timestamp)
            .filter(|t| *t >= fault.started && *t < until)
            .collect();
        let first_after = new.iter().find(|t| **t > fault.ended).copied();
        let mut gap = 0;
        let mut previous = fault.started;
        for t in new.iter().take_while(|t| Some(**t) <= first_after) {
            gap = gap.max(t - previous);
            previous = *t;
        }
        // When each write acknowledged before the fault's end arrived.
        let mut arrival: HashMap<String, u64> = HashMap::new();
        for (m, _, _) in self.new_ones() {
            if let Some(key) = write_key(m, table.primary_key) {
                arrival.entry(key).or_insert(m.timestamp);
            }
        }
        let caught_up = table
            .written
            .acked
            .iter()
            .zip(&table.written.acked_at)
            .filter(|(_, at)| clock.micros(**at) <= fault.ended)
            .filter_map(|(key, _)| arrival.get(key))
            .map(|t| t.saturating_sub(fault.ended))
            .max()
            .unwrap_or(0);
        Figures {
            first_new_row: first_after.map(|t| t - fault.ended),
            caught_up,
            longest_gap: gap,
            repeats,
        }
    }
}

/// One table's figures for one fault.
struct Figures {
    /// From the fault's end to the first new row, µs.
    first_new_row: Option<u64>,
    /// From the fault's end until every write acknowledged before it had arrived, µs.
    caught_up: u64,
    /// The longest time without a new row from the fault's start to the first new row after
    /// its end, µs.
    longest_gap: u64,
    /// Messages delivered again in the fault's window.
    repeats: usize,
}

impl std::fmt::Display for Figures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = |us: u64| us as f64 / 1e6;
        match self.first_new_row {
            Some(t) => write!(f, "first new row {:.1} s after the end", s(t))?,
            None => write!(f, "no new row after the end")?,
        }
        write!(
            f,
            ", caught up {:.1} s after, longest gap {:.1} s, {} repeats",
            s(self.caught_up),
            s(self.longest_gap),
            self.repeats
        )
    }
}

/// One record of a table's log as Fluss holds it.
struct Record {
    offset: i64,
    change: ChangeType,
    id: i64,
    name: String,
    amount: f64,
}

/// Every record of every bucket of `path`, read with a plain fluss-rs scanner from the earliest
/// offset to each bucket's high watermark: what the topics are checked against.
fn fluss_log(cluster: &Cluster, path: &TablePath) -> BTreeMap<i32, Vec<Record>> {
    rt().block_on(async {
        let connection = cluster.connection().await;
        let admin = connection.get_admin().expect("admin");
        let buckets: Vec<i32> = (0..BUCKETS).collect();
        let ends = poll_until(
            Duration::from_secs(60),
            Duration::from_millis(500),
            "the high watermarks",
            || async {
                admin
                    .list_offsets(path, &buckets, OffsetSpec::Latest)
                    .await
                    .map_err(|e| e.to_string())
            },
        )
        .await;
        let table = connection.get_table(path).await.expect("get_table");
        let scanner = table
            .new_scan()
            .create_log_scanner()
            .expect("a log scanner");
        let from: HashMap<i32, i64> = buckets.iter().map(|b| (*b, EARLIEST_OFFSET)).collect();
        scanner.subscribe_buckets(&from).await.expect("subscribe");
        let mut out: BTreeMap<i32, Vec<Record>> = BTreeMap::new();
        let mut next: HashMap<i32, i64> = HashMap::new();
        let deadline = Instant::now() + Duration::from_secs(120);
        // A primary-key table's log can end with empty batches (a write that changed nothing
        // takes an offset): quiet polls with every bucket at most that far behind end the read.
        let mut quiet = 0;
        loop {
            let done = buckets
                .iter()
                .all(|b| next.get(b).copied().unwrap_or(0) >= ends[b]);
            if done || quiet >= 6 {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{path}: read up to {next:?} of {ends:?} within 120 s"
            );
            let records = scanner
                .poll(Duration::from_millis(500))
                .await
                .expect("poll");
            quiet = if records.is_empty() { quiet + 1 } else { 0 };
            for (bucket, records) in records.into_records_by_buckets() {
                let bucket = bucket.bucket_id();
                for record in records {
                    next.insert(bucket, record.offset() + 1);
                    let row = record.row();
                    out.entry(bucket).or_default().push(Record {
                        offset: record.offset(),
                        change: *record.change_type(),
                        id: row.get_long(0).expect("id"),
                        name: row.get_string(1).expect("name").to_owned(),
                        amount: row.get_double(2).expect("amount"),
                    });
                }
            }
        }
        out
    })
}

/// The log topic against the log table: per bucket, the new rows are every offset from 0 to
/// the log's end, once, in order, with the row Fluss holds there; every acknowledged row is
/// among them, and every row was written (acknowledged or not).
fn check_log(deliveries: &Deliveries, table: &Loaded, truth: &BTreeMap<i32, Vec<Record>>) {
    let mut rows: BTreeMap<i32, Vec<(u64, i64)>> = BTreeMap::new();
    for (m, bucket, position) in deliveries.new_ones() {
        let Position::Log(offset) = position else {
            panic!("bucket {bucket}: a snapshot row in a log table's topic");
        };
        let payload: Value = serde_json::from_slice(&m.payload).expect("JSON payload");
        rows.entry(bucket)
            .or_default()
            .push((offset, payload["id"].as_i64().expect("id")));
    }
    for (bucket, records) in truth {
        let delivered = rows.remove(bucket).unwrap_or_default();
        let expected: Vec<(u64, i64)> = records.iter().map(|r| (r.offset as u64, r.id)).collect();
        if delivered != expected {
            let at = delivered
                .iter()
                .zip(&expected)
                .position(|(a, b)| a != b)
                .unwrap_or(delivered.len().min(expected.len()));
            panic!(
                "log bucket {bucket}: {} rows delivered, Fluss holds {}; first difference at \
                 row {at}: delivered {:?}, Fluss {:?}",
                delivered.len(),
                expected.len(),
                delivered.get(at),
                expected.get(at)
            );
        }
    }
    assert!(
        rows.is_empty(),
        "rows of buckets Fluss does not have: {rows:?}"
    );
    let delivered: HashSet<String> = deliveries
        .new_ones()
        .filter_map(|(m, _, _)| write_key(m, false))
        .collect();
    let lost: Vec<&String> = table
        .written
        .acked
        .iter()
        .filter(|k| !delivered.contains(*k))
        .collect();
    assert!(
        lost.is_empty(),
        "{} acknowledged log rows lost: {:?}",
        lost.len(),
        &lost[..lost.len().min(20)]
    );
}

/// One change event: the offset of its (first) record, its op, and the key and name of its
/// new image (of the deleted one for a delete).
type Change = (u64, &'static str, i64, String);

/// The changes Fluss's changelog of one bucket from `from` on holds, as the connector turns
/// them into events: an update's `-U`/`+U` pair is one event at the `-U`'s offset.
fn expected_changes(records: &[Record], from: i64) -> Vec<Change> {
    let mut out = Vec::new();
    for (i, r) in records.iter().enumerate() {
        if r.offset < from {
            continue;
        }
        let paired = r.change == ChangeType::UpdateAfter
            && i > 0
            && records[i - 1].change == ChangeType::UpdateBefore
            && records[i - 1].offset + 1 == r.offset;
        let op = match r.change {
            ChangeType::Insert | ChangeType::AppendOnly => "c",
            ChangeType::UpdateBefore => "u",
            ChangeType::UpdateAfter if paired => continue,
            ChangeType::UpdateAfter => "u",
            ChangeType::Delete => "d",
        };
        // The event names the new image, or the deleted one.
        let (id, name) = match (op, records.get(i + 1)) {
            ("u", Some(after)) if r.change == ChangeType::UpdateBefore => {
                (after.id, after.name.clone())
            }
            _ => (r.id, r.name.clone()),
        };
        out.push((r.offset as u64, op, id, name));
    }
    out
}

/// The new change events of one bucket, with the offset of its snapshot (`None` without one).
fn delivered_changes(deliveries: &Deliveries, bucket: i32) -> (Option<u64>, Vec<Change>) {
    let mut snapshot = None;
    let mut changes = Vec::new();
    for (m, b, position) in deliveries.new_ones() {
        if b != bucket {
            continue;
        }
        match position {
            Position::Snapshot { .. } => {
                snapshot = Some(m.header("fluss_offset").as_i64().expect("fluss_offset") as u64);
            }
            Position::Log(offset) => {
                let event: Value = serde_json::from_slice(&m.payload).expect("JSON payload");
                let op = match event["op"].as_str().expect("op") {
                    "c" => "c",
                    "u" => "u",
                    "d" => "d",
                    other => {
                        panic!("bucket {bucket} offset {offset}: op {other:?} in the changelog")
                    }
                };
                let image = if op == "d" {
                    &event["before"]
                } else {
                    &event["after"]
                };
                changes.push((
                    offset,
                    op,
                    image["id"].as_i64().expect("id"),
                    image["name"].as_str().expect("name").to_owned(),
                ));
            }
        }
    }
    (snapshot, changes)
}

/// Whether every change of Fluss's changelog after each bucket's snapshot arrived.
fn pk_changes_delivered(messages: &[Message], truth: &BTreeMap<i32, Vec<Record>>) -> bool {
    let deliveries = Deliveries::of(messages);
    truth.iter().all(|(bucket, records)| {
        let (snapshot, changes) = delivered_changes(&deliveries, *bucket);
        let from = snapshot.map_or(0, |s| s as i64);
        changes.len() >= expected_changes(records, from).len()
    })
}

/// The primary-key topic against the table: per bucket, the change events after the snapshot
/// are Fluss's changelog from the snapshot's offset on, once and in order; snapshot rows count
/// from index 0 without a gap; replaying the events per key gives the table Fluss's changelog
/// gives; every acknowledged change after the first snapshot row is among the events.
fn check_pk(
    deliveries: &Deliveries,
    table: &Loaded,
    truth: &BTreeMap<i32, Vec<Record>>,
    mark: usize,
) {
    let mut snapshot_rows: HashMap<i32, (u64, u64)> = HashMap::new();
    for (_, bucket, position) in deliveries.new_ones() {
        if let Position::Snapshot { offset, index } = position {
            let entry = snapshot_rows.entry(bucket).or_insert((offset, 0));
            if entry.0 != offset {
                *entry = (offset, 0);
            }
            assert_eq!(
                index, entry.1,
                "bucket {bucket}: snapshot row {index} where row {} was due",
                entry.1
            );
            entry.1 += 1;
        }
    }
    for (bucket, records) in truth {
        let (snapshot, changes) = delivered_changes(deliveries, *bucket);
        let from = snapshot.map_or(0, |s| s as i64);
        let expected = expected_changes(records, from);
        if changes != expected {
            let at = changes
                .iter()
                .zip(&expected)
                .position(|(a, b)| a != b)
                .unwrap_or(changes.len().min(expected.len()));
            panic!(
                "primary-key bucket {bucket} (snapshot at {snapshot:?}): {} change events \
                 delivered, Fluss's changelog holds {} from there; first difference at event \
                 {at}: delivered {:?}, Fluss {:?}",
                changes.len(),
                expected.len(),
                changes.get(at),
                expected.get(at)
            );
        }
    }
    // The final state: Fluss's changelog replayed, against the events replayed as a consumer
    // of per-key state applies them (a bucket's snapshot taken anew replaces its keys).
    let mut fluss: BTreeMap<i64, (String, f64)> = BTreeMap::new();
    for record in truth.values().flatten() {
        match record.change {
            ChangeType::Insert | ChangeType::UpdateAfter | ChangeType::AppendOnly => {
                fluss.insert(record.id, (record.name.clone(), record.amount));
            }
            ChangeType::Delete => {
                fluss.remove(&record.id);
            }
            ChangeType::UpdateBefore => {}
        }
    }
    let mut state: BTreeMap<i64, (String, f64)> = BTreeMap::new();
    let mut keys_of: HashMap<i32, HashSet<i64>> = HashMap::new();
    let mut snapshot_of: HashMap<i32, u64> = HashMap::new();
    for (m, bucket, position) in deliveries.new_ones() {
        if let Position::Snapshot { offset, .. } = position
            && snapshot_of
                .insert(bucket, offset)
                .is_some_and(|o| o != offset)
        {
            for key in keys_of.remove(&bucket).unwrap_or_default() {
                state.remove(&key);
            }
        }
        let event: Value = serde_json::from_slice(&m.payload).expect("JSON payload");
        let deleted = event["op"] == "d";
        let image = if deleted {
            &event["before"]
        } else {
            &event["after"]
        };
        let id = image["id"].as_i64().expect("id");
        keys_of.entry(bucket).or_default().insert(id);
        if deleted {
            state.remove(&id);
        } else {
            state.insert(
                id,
                (
                    image["name"].as_str().expect("name").to_owned(),
                    image["amount"].as_f64().expect("amount"),
                ),
            );
        }
    }
    if state != fluss {
        let differ: Vec<_> = fluss
            .keys()
            .chain(state.keys())
            .filter(|k| fluss.get(k) != state.get(k))
            .take(10)
            .map(|k| (k, fluss.get(k), state.get(k)))
            .collect();
        panic!(
            "the events replay to {} keys, the table has {}; differing keys (key, Fluss, \
             events): {differ:?}",
            state.len(),
            fluss.len()
        );
    }
    let changed: HashSet<String> = deliveries
        .new_ones()
        .filter_map(|(m, _, _)| write_key(m, true))
        .collect();
    let lost: Vec<&String> = table.written.acked[mark.min(table.written.acked.len())..]
        .iter()
        .filter(|k| k.starts_with('w') && !changed.contains(*k))
        .collect();
    assert!(
        lost.is_empty(),
        "{} acknowledged changes lost: {:?}",
        lost.len(),
        &lost[..lost.len().min(20)]
    );
}

/// The last `lines` lines of `text`.
fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
