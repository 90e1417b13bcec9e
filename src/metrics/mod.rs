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

//! Prometheus metrics (`metrics_address`): what one connector counts and shows, kept in
//! atomics and one small map updated once per batch, so the hot path pays almost nothing.
//!
//! - [`hub`]: the process-wide list of live connectors and the listeners serving them;
//! - [`exposition`]: every connector's figures in the Prometheus text format, by
//!   `prometheus-client`;
//! - [`serve`]: the minimal HTTP responder for `GET /metrics`.
//!
//! Several connectors of this plugin in one runtime process share the library and so the
//! hub: each registers its figures under its own labels, and every listener serves them all.
//! Imports only [`crate::position`] (a leaf below the source).

pub mod exposition;
pub mod hub;
mod serve;

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use fluss::PartitionId;

use crate::position::progress::Tally;
use crate::position::{BucketKey, Offset, Offsets, Positions, Timestamps};

/// What identifies one connector's series: `connector` (`metrics_connector`, else
/// `db.table`), `instance` (`instance_index`) and `table` (`db.table`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Labels {
    /// The `connector` label.
    pub connector: String,
    /// The `instance` label.
    pub instance: String,
    /// The `table` label.
    pub table: String,
}

/// The kinds of Fluss call errors counted (`kind` label of `fluss_source_errors_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// A transient failure, retried (the cluster or a server unreachable, a leader moving).
    Transient,
    /// A request the cluster refuses (ACLs, a dropped table), retried until allowed.
    Refused,
    /// An offset the log no longer holds (`on_offset_out_of_range`).
    OutOfRange,
    /// An error that ended a poll (the runtime logs it).
    Fatal,
}

impl ErrorKind {
    /// Every kind, in the order they are shown.
    pub const ALL: [Self; 4] = [
        Self::Transient,
        Self::Refused,
        Self::OutOfRange,
        Self::Fatal,
    ];

    /// The `kind` label value.
    pub fn name(self) -> &'static str {
        match self {
            Self::Transient => "transient",
            Self::Refused => "refused",
            Self::OutOfRange => "out_of_range",
            Self::Fatal => "fatal",
        }
    }
}

/// Per-connector counters, totals since this `open`.
#[derive(Debug, Default)]
pub struct Counters {
    /// Records fetched from Fluss (changelog records and snapshot rows), before the filter.
    pub rows_fetched: AtomicU64,
    /// Of those, the records the `filter` dropped.
    pub rows_filtered: AtomicU64,
    /// Records in batches the runtime acknowledged.
    pub rows_delivered: AtomicU64,
    /// Messages in batches the runtime acknowledged.
    pub messages_acked: AtomicU64,
    /// Messages in batches the runtime Nacked.
    pub messages_nacked: AtomicU64,
    /// Payload bytes in batches the runtime acknowledged.
    pub payload_bytes: AtomicU64,
    /// Periods of retried failures (each starts with one WARN line).
    pub outages: AtomicU64,
    /// Fluss call errors, by [`ErrorKind`] (indexed as [`ErrorKind::ALL`]).
    pub errors: [AtomicU64; 4],
}

/// How often a connector was opened and closed in this process.
#[derive(Debug, Default, Clone, Copy)]
pub struct Lifecycle {
    /// Successful registrations (opens that got as far as metrics).
    pub opens: u64,
    /// Closes (and failed opens after registration).
    pub closes: u64,
}

/// Where a bucket's snapshot (`starting_offset = "full"`) stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapshotPhase {
    /// Its snapshot is still to be taken.
    Waiting,
    /// Its snapshot is being handed over: `done` of `total` rows.
    HandingOver {
        /// Rows handed over.
        done: u64,
        /// Rows the snapshot holds (after the filter), when known ahead: a snapshot read from
        /// KV snapshot files a batch at a time does not know it.
        total: Option<u64>,
    },
}

/// What is shown per bucket, updated once per batch or offsets request.
#[derive(Debug, Default)]
pub struct BucketViews {
    /// Partition names, for the `partition` label.
    pub names: HashMap<PartitionId, String>,
    /// Acknowledged positions.
    pub committed: Positions,
    /// Buckets in their snapshot phase (by the positions of the last batch built).
    pub snapshots: BTreeMap<BucketKey, SnapshotPhase>,
    /// The high watermarks last listed.
    pub high_watermarks: Offsets,
    /// The commit timestamp (epoch ms) of the last row of each bucket in an acknowledged batch.
    pub delivered_at: Offsets,
}

/// One connector's figures.
#[derive(Debug)]
pub struct Figures {
    /// Its labels.
    pub labels: Labels,
    /// Its counters.
    pub counters: Counters,
    /// Its buckets.
    pub buckets: Mutex<BucketViews>,
}

impl Figures {
    fn new(labels: Labels) -> Self {
        Self {
            labels,
            counters: Counters::default(),
            buckets: Mutex::new(BucketViews::default()),
        }
    }

    fn views(&self) -> std::sync::MutexGuard<'_, BucketViews> {
        self.buckets.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A connector's metrics: a registration in the [`hub`] while `metrics_address` is set,
/// nothing (every update a no-op) otherwise. Dropping it unregisters the connector.
#[derive(Debug, Default)]
pub struct Metrics(Option<hub::Registration>);

impl Metrics {
    /// Metrics served at `address` under `labels`, or none without an address; fails when
    /// the address cannot be listened on or another live connector has the same labels.
    pub fn start(address: Option<SocketAddr>, labels: Labels) -> Result<Self, hub::MetricsError> {
        address
            .map(|address| hub::register(address, labels))
            .transpose()
            .map(Self)
    }

    /// No metrics (`metrics_address` unset).
    pub fn off() -> Self {
        Self(None)
    }

    fn figures(&self) -> Option<&Figures> {
        self.0.as_ref().map(|r| r.figures.as_ref())
    }

    fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// Records fetched from Fluss, `kept` of them passing the filter.
    pub fn fetched(&self, fetched: usize, kept: usize) {
        if let Some(f) = self.figures() {
            Self::add(&f.counters.rows_fetched, fetched as u64);
            Self::add(
                &f.counters.rows_filtered,
                (fetched - kept.min(fetched)) as u64,
            );
        }
    }

    /// The runtime acknowledged a batch that left the buckets at `committed`, whose last
    /// rows per bucket were committed at `times`.
    pub fn acknowledged(&self, batch: Tally, committed: &Positions, times: &Timestamps) {
        let Some(f) = self.figures() else {
            return;
        };
        Self::add(&f.counters.messages_acked, batch.messages);
        Self::add(&f.counters.rows_delivered, batch.rows);
        Self::add(&f.counters.payload_bytes, batch.bytes);
        let mut views = f.views();
        views.committed.clone_from(committed);
        views
            .delivered_at
            .extend(times.iter().map(|(k, t)| (*k, *t)));
    }

    /// The runtime Nacked a batch of `messages` messages.
    pub fn nacked(&self, messages: u64) {
        if let Some(f) = self.figures() {
            Self::add(&f.counters.messages_nacked, messages);
        }
    }

    /// A Fluss call failed.
    pub fn error(&self, kind: ErrorKind) {
        if let Some(f) = self.figures() {
            let index = ErrorKind::ALL.iter().position(|k| *k == kind).unwrap_or(0);
            Self::add(&f.counters.errors[index], 1);
        }
    }

    /// A period of retried failures began.
    pub fn outage(&self) {
        if let Some(f) = self.figures() {
            Self::add(&f.counters.outages, 1);
        }
    }

    /// The committed positions moved outside a batch (new partitions, out-of-range resets,
    /// dropped partitions).
    pub fn committed(&self, committed: &Positions) {
        if let Some(f) = self.figures() {
            let mut views = f.views();
            views.committed.clone_from(committed);
            views
                .delivered_at
                .retain(|key, _| committed.contains_key(key));
            views
                .high_watermarks
                .retain(|key, _| committed.contains_key(key));
        }
    }

    /// The partitions read now, for the `partition` label.
    pub fn partitions<'a>(&self, names: impl IntoIterator<Item = (&'a PartitionId, &'a String)>) {
        if let Some(f) = self.figures() {
            f.views().names = names.into_iter().map(|(p, n)| (*p, n.clone())).collect();
        }
    }

    /// The buckets in their snapshot phase after a batch was built.
    pub fn snapshots(&self, snapshots: BTreeMap<BucketKey, SnapshotPhase>) {
        if let Some(f) = self.figures() {
            f.views().snapshots = snapshots;
        }
    }

    /// High watermarks just listed.
    pub fn high_watermarks(&self, latest: &Offsets) {
        if let Some(sink) = self.sink() {
            sink.high_watermarks(latest);
        }
    }

    /// A handle a background task can report high watermarks through (`None` without
    /// metrics).
    pub fn sink(&self) -> Option<Sink> {
        self.0.as_ref().map(|r| Sink(Arc::clone(&r.figures)))
    }

    /// Whether metrics are on.
    pub fn enabled(&self) -> bool {
        self.0.is_some()
    }
}

/// Where a background listing of the high watermarks reports them, so the listing never
/// holds up a poll. Reports after the connector closed go nowhere.
#[derive(Debug, Clone)]
pub struct Sink(Arc<Figures>);

impl Sink {
    /// High watermarks just listed.
    pub fn high_watermarks(&self, latest: &Offsets) {
        self.0
            .views()
            .high_watermarks
            .extend(latest.iter().map(|(k, o)| (*k, *o)));
    }
}

/// Milliseconds since the epoch now.
pub(crate) fn now_millis() -> Offset {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as Offset)
}
