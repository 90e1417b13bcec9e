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

//! Every log line the source writes: its text, level, the `verbose_logging` switch and rate
//! limits. Lines carry a `fluss[<plugin id> <db.table>]` prefix because the runtime adds no
//! plugin id of its own. The faults it logs are counted in the connector's [`Metrics`] too.

use std::fmt::Display;
use std::time::{Duration, Instant};

use fluss::PartitionId;

use crate::metrics::{ErrorKind, Metrics};
use crate::position::progress::Tally;
use crate::position::{BucketKey, Offset, Offsets, Position, Positions};
use crate::schemas::Change;

/// The target of every line: the module path this file had before the source's files moved
/// into folders, which the runtime prints with each line (`connector_target=…`) and a
/// `RUST_LOG` filter may name, so moving the file changes neither.
pub(crate) const TARGET: &str = "iggy_connector_fluss_source::telemetry";

/// How often a progress line is written.
pub const PROGRESS_INTERVAL: Duration = Duration::from_secs(30);
/// Repeats of one retriable fault are summarised at most this often.
const WARN_INTERVAL: Duration = Duration::from_secs(30);

/// What every line about plugin instance `id` starts with: `fluss[<id> <db.table>]`, or
/// `fluss[<id>]` for an instance whose configuration names no table (its `open` fails).
pub fn prefix(id: u32, table: Option<&str>) -> String {
    match table {
        Some(table) => format!("fluss[{id} {table}]"),
        None => format!("fluss[{id}]"),
    }
}

/// Log state of one source instance.
pub struct Telemetry {
    prefix: String,
    verbose: bool,
    messages_total: u64,
    rows_total: u64,
    rows_since_progress: u64,
    last_progress: Instant,
    fault: Option<FaultStreak>,
    /// The connector's metrics (a no-op without `metrics_address`).
    metrics: Metrics,
}

struct FaultStreak {
    since: Instant,
    last_warn: Instant,
    count: u64,
    /// A refusal (ACLs): the cluster answers, so only records flowing again end it.
    refused: bool,
}

impl Telemetry {
    /// What every line of this instance starts with (see [`prefix`]).
    pub fn line_prefix(&self) -> &str {
        &self.prefix
    }

    /// Log state for plugin `id` reading `table` (`db.table`).
    pub fn new(id: u32, table: &str, verbose: bool) -> Self {
        Self {
            prefix: prefix(id, Some(table)),
            verbose,
            messages_total: 0,
            rows_total: 0,
            rows_since_progress: 0,
            last_progress: Instant::now(),
            fault: None,
            metrics: Metrics::off(),
        }
    }

    /// The same, reporting to `metrics`.
    pub fn with_metrics(self, metrics: Metrics) -> Self {
        Self { metrics, ..self }
    }

    /// The one INFO line at open.
    pub fn opened(&self, summary: &str, starts: &[(BucketKey, Position, &'static str)]) {
        tracing::info!(target: TARGET, "{}: opened {summary}; starting at {}",
            self.prefix,
            starting_at(starts)
        );
    }

    /// A setting that works but not as the user likely meant, found at open: JSON payloads
    /// whose key order the runtime will not keep (see [`crate::format::json::runtime_json`]), more
    /// instances than buckets (see [`crate::scope::share::Assignment::oversized`]).
    pub fn warn(&self, warning: &str) {
        tracing::warn!(target: TARGET, "{}: {warning}", self.prefix);
    }

    /// A connection attempt at open failed and is tried again (until `connect_timeout`).
    pub fn unreachable_yet(&self, bootstrap: &str, error: &dyn Display) {
        tracing::warn!(target: TARGET, "{}: cannot reach Fluss at {bootstrap} yet ({error}); retrying",
            self.prefix
        );
    }

    /// One line per batch handed over, at DEBUG (INFO with `verbose_logging`).
    /// `rows` counts changelog records, so an Arrow IPC message or an update pair counts for
    /// every row it holds.
    pub fn batch(&self, messages: usize, rows: usize, bytes: usize, encode: Duration) {
        if self.verbose {
            tracing::info!(target: TARGET, "{}: batch handed over messages={messages} rows={rows} bytes={bytes} encode_us={}",
                self.prefix,
                encode.as_micros()
            );
        } else {
            tracing::debug!(target: TARGET, "{}: batch handed over messages={messages} rows={rows} bytes={bytes} encode_us={}",
                self.prefix,
                encode.as_micros()
            );
        }
    }

    /// The runtime acknowledged a batch: only delivered messages count in the totals.
    pub fn acknowledged(&mut self, tally: Tally) {
        self.messages_total += tally.messages;
        self.rows_total += tally.rows;
        self.rows_since_progress += tally.rows;
    }

    /// Whether a progress line is due.
    pub fn progress_due(&self) -> bool {
        self.last_progress.elapsed() >= PROGRESS_INTERVAL
    }

    /// The periodic progress line: throughput, and lag (high watermark − next offset) in all
    /// and per bucket (see [`lags`]).
    pub fn progress(&mut self, positions: &Positions, high_watermarks: &Offsets) {
        let elapsed = self.last_progress.elapsed().as_secs_f64().max(0.001);
        let rate = self.rows_since_progress as f64 / elapsed;
        let (total, lags) = lags(positions, high_watermarks);
        tracing::info!(target: TARGET, "{}: progress acknowledged rows_total={} messages_total={} rows_per_s={rate:.0} lag_total={total} lag=[{lags}]",
            self.prefix,
            self.rows_total,
            self.messages_total,
        );
        self.rows_since_progress = 0;
        self.last_progress = Instant::now();
    }

    /// A retriable fault: WARN the first time, then at most once per 30 s with a count.
    pub fn retrying(&mut self, what: &str, error: &dyn Display) {
        self.metrics.error(ErrorKind::Transient);
        self.streak(tracing::Level::WARN, &format!("{what}: {error}"));
    }

    /// A read the server refuses (ACLs), retried until it is allowed again: ERROR the first
    /// time, then at most once per 30 s with a count; `recovered` ends it.
    pub fn refused(&mut self, error: &dyn Display) {
        self.metrics.error(ErrorKind::Refused);
        self.streak(tracing::Level::ERROR, &error.to_string());
    }

    fn streak(&mut self, level: tracing::Level, text: &str) {
        let line = |text: String| {
            if level == tracing::Level::ERROR {
                tracing::error!(target: TARGET, "{text}");
            } else {
                tracing::warn!(target: TARGET, "{text}");
            }
        };
        let now = Instant::now();
        match &mut self.fault {
            None => {
                line(format!("{}: {text}; retrying", self.prefix));
                self.metrics.outage();
                self.fault = Some(FaultStreak {
                    since: now,
                    last_warn: now,
                    count: 1,
                    refused: level == tracing::Level::ERROR,
                });
            }
            Some(streak) => {
                streak.count += 1;
                if now.duration_since(streak.last_warn) >= WARN_INTERVAL {
                    line(format!(
                        "{}: {text}; still retrying after {}s ({} attempts)",
                        self.prefix,
                        now.duration_since(streak.since).as_secs(),
                        streak.count
                    ));
                    streak.last_warn = now;
                }
            }
        }
    }

    /// Whether the cluster stopped answering (WARNed, not yet recovered); a refusal does not
    /// count, since the cluster answers then.
    pub fn faulted(&self) -> bool {
        self.fault.as_ref().is_some_and(|streak| !streak.refused)
    }

    /// Data flows again after a fault.
    pub fn recovered(&mut self) {
        if let Some(streak) = self.fault.take() {
            tracing::info!(target: TARGET, "{}: reading again after {}s ({} {})",
                self.prefix,
                streak.since.elapsed().as_secs(),
                streak.count,
                if streak.count == 1 {
                    "retry"
                } else {
                    "retries"
                }
            );
        }
    }

    /// Rows skipped because the log no longer holds them (or a saved offset is past its end).
    pub fn skipped(&self, key: BucketKey, from: Offset, to: Offset, reason: &str) {
        self.metrics.error(ErrorKind::OutOfRange);
        tracing::error!(target: TARGET, "{}: {key}: offsets {from}..{to} are not on the server ({reason}); continuing at {to}, {} rows skipped",
            self.prefix,
            (to - from).max(0)
        );
    }

    /// A position past the end of the log: the server lost offsets that were delivered.
    pub fn past_end(&self, key: BucketKey, position: Offset, end: Offset) {
        self.metrics.error(ErrorKind::OutOfRange);
        tracing::error!(target: TARGET, "{}: {key}: offset {position} is past the end of the log ({end}); the server lost offsets {end}..{position}, which were delivered before; continuing at {end}",
            self.prefix
        );
    }

    /// Retention removed a primary-key bucket's saved offset and `on_offset_out_of_range =
    /// "snapshot"`: the bucket is read again from its latest KV snapshot.
    pub fn snapshot_again(&self, key: BucketKey, from: Offset, start: Offset) {
        tracing::warn!(target: TARGET, "{}: {key}: offset {from} is not on the server any more (the log starts at {start}); on_offset_out_of_range = \"snapshot\": the bucket's rows are delivered again from its latest KV snapshot (a new run of snapshot events), then its changelog from that snapshot's offset",
            self.prefix
        );
    }

    /// A schema version seen for the first time (columns added while reading).
    pub fn schema_changed(&self, change: &Change) {
        tracing::info!(target: TARGET, "{}: schema changed from id {} to id {}: columns added: {}; rows of schema {} carry them from now on",
            self.prefix,
            change.from,
            change.to,
            change.added.join(", "),
            change.to
        );
    }

    /// Partition changes.
    pub fn partitions(&self, added: &[(PartitionId, String)], dropped: &[(PartitionId, String)]) {
        for (id, name) in added {
            tracing::info!(target: TARGET, "{}: new partition {name} (id {id}), reading from its earliest offset",
                self.prefix
            );
        }
        for (id, name) in dropped {
            tracing::info!(target: TARGET, "{}: partition {name} (id {id}) was dropped; forgetting it",
                self.prefix
            );
        }
    }

    /// A bounded read is complete: every bucket reached its stop offset and was acknowledged.
    pub fn finished(&self, stops: &Offsets) {
        let stops: Vec<String> = stops
            .iter()
            .map(|(key, off)| format!("{key}@{off}"))
            .collect();
        tracing::info!(target: TARGET, "{}: finished: {} rows, offsets [{}]; nothing more is read (remove `stopping_offset` to read on)",
            self.prefix,
            self.rows_total,
            stops.join(", ")
        );
    }

    /// The INFO line at close.
    /// The connector's metrics (a no-op without `metrics_address`).
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// The close line; the connector's metrics are unregistered (and the port freed if it was
    /// the last).
    pub fn closed(&mut self) {
        tracing::info!(target: TARGET, "{}: closed after {} acknowledged messages ({} rows)",
            self.prefix,
            self.messages_total,
            self.rows_total
        );
        self.metrics = Metrics::off();
    }
}

/// At most this many buckets are named in the progress line's `lag` and in the open line, so
/// that a table of thousands of buckets writes lines of the same size as a small one.
const BUCKETS_NAMED: usize = 16;

/// `named` joined by commas, at most [`BUCKETS_NAMED`] of them, then how many of `count`
/// buckets more there are.
fn named_then_more(named: impl Iterator<Item = String>, count: usize) -> String {
    let mut text = named.take(BUCKETS_NAMED).collect::<Vec<_>>().join(", ");
    let more = count.saturating_sub(BUCKETS_NAMED);
    if more > 0 {
        text.push_str(&format!(", {more} buckets more"));
    }
    text
}

/// Where the open line says the buckets start: each as `bucket@position (why)`, the first
/// [`BUCKETS_NAMED`] in key order when there are more.
fn starting_at(starts: &[(BucketKey, Position, &'static str)]) -> String {
    if starts.is_empty() {
        return "no buckets yet".to_owned();
    }
    let named = starts
        .iter()
        .map(|(key, position, why)| format!("{key}@{position} ({why})"));
    named_then_more(named, starts.len())
}

/// The progress line's lags of the buckets read from an offset (a bucket taking its snapshot
/// has none): the sum of the known ones, and the list of `bucket: lag` (`?` when its high
/// watermark is not known yet), every bucket in key order when there are at most
/// [`BUCKETS_NAMED`], else the largest lags followed by how many buckets more there are.
fn lags(positions: &Positions, high_watermarks: &Offsets) -> (i64, String) {
    let mut lags: Vec<(BucketKey, Option<i64>)> = positions
        .iter()
        .filter_map(|(key, position)| Some((*key, position.offset()?)))
        .map(|(key, next)| (key, high_watermarks.get(&key).map(|hw| (hw - next).max(0))))
        .collect();
    let total = lags.iter().filter_map(|(_, lag)| *lag).sum();
    if lags.len() > BUCKETS_NAMED {
        // Largest first, unknown last; ties in key order (the sort is stable).
        lags.sort_by_key(|(_, lag)| std::cmp::Reverse(lag.map_or(-1, |l| l)));
    }
    let named = lags.iter().map(|(key, lag)| match lag {
        Some(lag) => format!("{key}: {lag}"),
        None => format!("{key}: ?"),
    });
    (total, named_then_more(named, lags.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prefix_names_the_instance_and_its_table_when_known() {
        assert_eq!(prefix(7, Some("fluss.orders")), "fluss[7 fluss.orders]");
        assert_eq!(prefix(7, None), "fluss[7]");
        assert_eq!(
            Telemetry::new(7, "fluss.orders", false).prefix,
            "fluss[7 fluss.orders]"
        );
    }

    #[test]
    fn a_few_buckets_are_named_in_key_order_and_their_known_lags_summed() {
        let positions: Positions = [
            (BucketKey::bucket(0), Position::At(10)),
            (BucketKey::bucket(1), Position::At(5)),
            (BucketKey::bucket(2), Position::At(7)),
            (BucketKey::bucket(3), Position::SNAPSHOT),
        ]
        .into();
        let hw: Offsets = [(BucketKey::bucket(0), 10), (BucketKey::bucket(1), 17)].into();
        let (total, text) = lags(&positions, &hw);
        assert_eq!(total, 12);
        assert_eq!(text, "bucket 0: 0, bucket 1: 12, bucket 2: ?");
    }

    #[test]
    fn many_buckets_name_the_largest_lags_and_count_the_rest() {
        let key = |p: i64, b: i32| BucketKey {
            partition: Some(p),
            bucket: b,
        };
        let mut positions = Positions::new();
        let mut hw = Offsets::new();
        for p in 0..1000 {
            for b in 0..2 {
                positions.insert(key(p, b), Position::At(100));
                // Partition 500 lags by 1000 and 501, bucket 1 by 5; the rest are caught up,
                // but partition 999's high watermarks are not known yet.
                let lag = match (p, b) {
                    (500, _) => 1000,
                    (501, 1) => 5,
                    _ => 0,
                };
                if p != 999 {
                    hw.insert(key(p, b), 100 + lag);
                }
            }
        }
        let (total, text) = lags(&positions, &hw);
        assert_eq!(total, 2005);
        let named: Vec<&str> = text.split(", ").collect();
        assert_eq!(named.len(), BUCKETS_NAMED + 1, "{text}");
        assert_eq!(
            named[..3],
            [
                "partition 500 bucket 0: 1000",
                "partition 500 bucket 1: 1000",
                "partition 501 bucket 1: 5"
            ]
        );
        assert_eq!(named[3], "partition 0 bucket 0: 0", "then in key order");
        assert_eq!(named[BUCKETS_NAMED], "1984 buckets more");
    }

    #[test]
    fn the_open_line_names_the_first_buckets_and_counts_the_rest() {
        assert_eq!(starting_at(&[]), "no buckets yet");
        let few = [
            (BucketKey::bucket(0), Position::At(0), "starting_offset"),
            (BucketKey::bucket(1), Position::At(7), "saved state"),
        ];
        assert_eq!(
            starting_at(&few),
            "bucket 0@0 (starting_offset), bucket 1@7 (saved state)"
        );
        let many: Vec<_> = (0..2000)
            .map(|b| (BucketKey::bucket(b), Position::SNAPSHOT, "starting_offset"))
            .collect();
        let text = starting_at(&many);
        assert!(
            text.starts_with("bucket 0@snapshot (starting_offset), "),
            "{text}"
        );
        assert!(text.contains("bucket 15@snapshot") && !text.contains("bucket 16@"));
        assert!(text.ends_with(", 1984 buckets more"), "{text}");
    }
}
