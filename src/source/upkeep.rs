//! Work between batches and when it is due: the liveness probe while no records arrive,
//! partition discovery, the high watermarks for the metrics, and the progress line.
//! [`Upkeep`] keeps the timers (each decision takes the time, so the rules are tested without
//! waiting); the work itself is the owner's of what it touches ([`super::recovery`] probes,
//! [`super::discover`] discovers).

use std::time::{Duration, Instant};

use fluss::rpc::message::OffsetSpec;
use tokio::task::JoinHandle;

use crate::client::discovery::PartitionNames;
use crate::client::offsets;
use crate::client::table::Table;
use crate::metrics::Metrics;
use crate::position::progress::Progress;
use crate::position::BucketKey;
use crate::source::telemetry::Telemetry;

/// fluss-rs' `poll` returns nothing, without an error, while the servers are down. After this
/// long without records the source asks the cluster for its offsets, so an outage shows up as
/// a WARN instead of a silent stall.
const LIVENESS_INTERVAL: Duration = Duration::from_secs(5);
/// How often the high watermarks are listed for the metrics (`metrics_address`), so a
/// scrape every 15 s or more sees every change of lag.
const WATERMARKS_INTERVAL: Duration = Duration::from_secs(5);

/// Whether client polls return records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    /// The last poll returned records (or nothing was polled yet).
    Records,
    /// Polls return nothing since then.
    IdleSince(Instant),
}

/// The last listing of the high watermarks for the metrics.
struct Listing {
    at: Instant,
    task: JoinHandle<()>,
}

/// The timers of the work between batches.
pub(super) struct Upkeep {
    flow: Flow,
    last_liveness: Instant,
    last_discovery: Instant,
    /// `None`: not listed yet.
    watermarks: Option<Listing>,
}

impl Upkeep {
    /// Timers started at `now`: the first probe and discovery are an interval away, the first
    /// listing of the high watermarks is due at once.
    pub(super) fn new(now: Instant) -> Self {
        Self {
            flow: Flow::Records,
            last_liveness: now,
            last_discovery: now,
            watermarks: None,
        }
    }

    /// Polls are not idle: records arrived, or reading paused on purpose (a bounded read
    /// finished), which is no outage either.
    pub(super) fn not_idle(&mut self) {
        self.flow = Flow::Records;
    }

    /// A client poll returned nothing at `now`.
    pub(super) fn nothing_arrived(&mut self, now: Instant) {
        if self.flow == Flow::Records {
            self.flow = Flow::IdleSince(now);
        }
    }

    /// Whether the liveness probe is due at `now`: no records for [`LIVENESS_INTERVAL`], and
    /// no probe for as long. Being due starts the next interval.
    pub(super) fn liveness_due(&mut self, now: Instant) -> bool {
        let Flow::IdleSince(since) = self.flow else {
            return false;
        };
        let due = now.saturating_duration_since(since) >= LIVENESS_INTERVAL
            && now.saturating_duration_since(self.last_liveness) >= LIVENESS_INTERVAL;
        if due {
            self.last_liveness = now;
        }
        due
    }

    /// Whether partition discovery is due at `now`, every `interval` (zero: never). Being
    /// due starts the next interval.
    pub(super) fn discovery_due(&mut self, now: Instant, interval: Duration) -> bool {
        let due =
            !interval.is_zero() && now.saturating_duration_since(self.last_discovery) >= interval;
        if due {
            self.last_discovery = now;
        }
        due
    }

    /// Whether the high watermarks are due to be listed at `now`: never listed yet, or
    /// [`WATERMARKS_INTERVAL`] after the last listing once it ended (one at a time).
    fn watermarks_due(&self, now: Instant) -> bool {
        self.watermarks.as_ref().is_none_or(|last| {
            now.saturating_duration_since(last.at) >= WATERMARKS_INTERVAL && last.task.is_finished()
        })
    }

    /// With metrics on, lists the high watermarks of the buckets in `progress` when due, in
    /// a task of its own, so the request never holds up a poll; a failure only leaves the
    /// last values in place (the liveness probe reports outages).
    pub(super) fn list_watermarks(
        &mut self,
        now: Instant,
        metrics: &Metrics,
        table: &Table,
        progress: &Progress,
        partitions: &PartitionNames,
    ) {
        let Some(sink) = metrics.sink() else {
            return;
        };
        if !self.watermarks_due(now) {
            return;
        }
        let table = table.clone();
        let keys: Vec<BucketKey> = progress.committed().keys().copied().collect();
        let names = partitions.clone();
        let task = tokio::spawn(async move {
            if let Ok(latest) = offsets::list(&table, &keys, &names, OffsetSpec::Latest).await {
                sink.high_watermarks(&latest);
            }
        });
        self.watermarks = Some(Listing { at: now, task });
    }
}

/// The progress line, when due: the high watermarks of the committed buckets (an empty list
/// if the listing fails) against where reading stands.
pub(super) async fn progress_line(
    table: &Table,
    progress: &Progress,
    partitions: &PartitionNames,
    telemetry: &mut Telemetry,
) {
    if !telemetry.progress_due() {
        return;
    }
    let keys: Vec<BucketKey> = progress.committed().keys().copied().collect();
    let latest = offsets::list(table, &keys, partitions, OffsetSpec::Latest)
        .await
        .unwrap_or_default();
    telemetry.metrics.high_watermarks(&latest);
    telemetry.progress(progress.current(), &latest);
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    #[test]
    fn the_liveness_probe_is_due_after_an_interval_without_records_and_without_probes() {
        let start = Instant::now();
        let mut upkeep = Upkeep::new(start);
        assert!(
            !upkeep.liveness_due(start + 60 * SECOND),
            "records flow: no probe"
        );
        upkeep.nothing_arrived(start + SECOND);
        upkeep.nothing_arrived(start + 3 * SECOND);
        assert!(
            !upkeep.liveness_due(start + 5 * SECOND),
            "idle for 4 s only (since the first empty poll)"
        );
        assert!(upkeep.liveness_due(start + 6 * SECOND));
        assert!(
            !upkeep.liveness_due(start + 8 * SECOND),
            "the probe just ran"
        );
        assert!(upkeep.liveness_due(start + 11 * SECOND));
        upkeep.not_idle();
        assert!(!upkeep.liveness_due(start + 30 * SECOND));
        upkeep.nothing_arrived(start + 30 * SECOND);
        assert!(
            !upkeep.liveness_due(start + 34 * SECOND),
            "a new idle spell waits its own interval"
        );
        assert!(upkeep.liveness_due(start + 35 * SECOND));
    }

    #[test]
    fn the_liveness_probe_waits_an_interval_after_the_start() {
        let start = Instant::now();
        let mut upkeep = Upkeep::new(start);
        upkeep.nothing_arrived(start);
        assert!(!upkeep.liveness_due(start + 4 * SECOND));
        assert!(upkeep.liveness_due(start + 5 * SECOND));
    }

    #[test]
    fn discovery_is_due_every_interval_and_never_with_a_zero_interval() {
        let start = Instant::now();
        let mut upkeep = Upkeep::new(start);
        let interval = 10 * SECOND;
        assert!(!upkeep.discovery_due(start + 9 * SECOND, interval));
        assert!(upkeep.discovery_due(start + 12 * SECOND, interval));
        assert!(
            !upkeep.discovery_due(start + 21 * SECOND, interval),
            "the interval counts from the last discovery"
        );
        assert!(upkeep.discovery_due(start + 22 * SECOND, interval));
        assert!(!upkeep.discovery_due(start + 3600 * SECOND, Duration::ZERO));
    }

    #[tokio::test]
    async fn the_watermarks_are_listed_at_once_then_an_interval_after_a_listing_ended() {
        let start = Instant::now();
        let mut upkeep = Upkeep::new(start);
        assert!(upkeep.watermarks_due(start), "never listed yet");
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let _ = rx.await;
        });
        upkeep.watermarks = Some(Listing { at: start, task });
        assert!(!upkeep.watermarks_due(start + 4 * SECOND));
        assert!(
            !upkeep.watermarks_due(start + 9 * SECOND),
            "the last listing still runs"
        );
        let _ = tx.send(());
        if let Some(last) = upkeep.watermarks.as_mut() {
            (&mut last.task).await.unwrap();
        }
        assert!(upkeep.watermarks_due(start + 5 * SECOND));
    }
}
