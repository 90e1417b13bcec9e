//! Work between batches: the liveness probe while no records arrive, partition discovery and
//! the progress line.

use std::time::{Duration, Instant};

use fluss::rpc::message::OffsetSpec;

use super::{bucket_keys, FlussSource, LIVENESS_INTERVAL, LIVENESS_TIMEOUT};
use crate::client::{discovery, offsets};
use crate::config::options::StartingOffset;
use crate::error::{Error, Fault, Result};
use crate::position::BucketKey;

/// How often the high watermarks are listed for the metrics (`metrics_address`), so a
/// scrape every 15 s or more sees every change of lag.
const WATERMARKS_INTERVAL: Duration = Duration::from_secs(5);

impl FlussSource {
    /// Periodic work between batches: partition discovery, the liveness probe and the
    /// progress line. Failures here never stop the stream (they are retried on the next
    /// poll), except a position past the log end under `on_offset_out_of_range = "fail"`.
    pub(super) async fn maintain(&mut self) -> Result<()> {
        if self
            .idle_since
            .is_some_and(|since| since.elapsed() >= LIVENESS_INTERVAL)
            && self.last_liveness.elapsed() >= LIVENESS_INTERVAL
        {
            self.last_liveness = Instant::now();
            self.check_liveness().await?;
        }
        let interval = self.config.partition_discovery_interval;
        if self.table.info.is_partitioned()
            && !interval.is_zero()
            && self.last_discovery.elapsed() >= interval
        {
            self.last_discovery = Instant::now();
            if let Err(e) = self.discover().await {
                self.telemetry.retrying("listing partitions failed", &e);
            }
        }
        if let Err(e) = self.lease.renew(&self.table).await {
            self.telemetry.retrying(
                &format!("renewing the KV snapshot lease {} failed", self.lease.id()),
                &e,
            );
        }
        if self.telemetry.progress_due() {
            let keys: Vec<BucketKey> = self.progress.committed().keys().copied().collect();
            let latest = offsets::list(
                &self.table,
                &keys,
                self.buckets.partitions(),
                OffsetSpec::Latest,
            )
            .await
            .unwrap_or_default();
            self.telemetry.metrics.high_watermarks(&latest);
            let current = self.progress.current().clone();
            self.telemetry.progress(&current, &latest);
        }
        self.list_watermarks();
        Ok(())
    }

    /// With metrics on, lists the high watermarks every [`WATERMARKS_INTERVAL`] in a task of
    /// its own (one at a time), so the request never holds up a poll; a failure only leaves
    /// the last values in place (the liveness probe reports outages).
    fn list_watermarks(&mut self) {
        let Some(sink) = self.telemetry.metrics.sink() else {
            return;
        };
        let due = self
            .last_watermarks
            .as_ref()
            .is_none_or(|(at, task)| at.elapsed() >= WATERMARKS_INTERVAL && task.is_finished());
        if !due {
            return;
        }
        let table = self.table.clone();
        let keys: Vec<BucketKey> = self.progress.committed().keys().copied().collect();
        let names = self.buckets.partitions().clone();
        let task = tokio::spawn(async move {
            if let Ok(latest) = offsets::list(&table, &keys, &names, OffsetSpec::Latest).await {
                sink.high_watermarks(&latest);
            }
        });
        self.last_watermarks = Some((Instant::now(), task));
    }

    /// Asks the cluster for the high watermarks while no records arrive. A failure is a WARN
    /// (fluss-rs itself only retries silently); the first answer after one rebuilds the
    /// scanner, so reading resumes even if the client's fetch state did not survive the outage.
    ///
    /// A position past a high watermark means the log lost its tail (a single-replica tablet
    /// server killed before its high-watermark checkpoint): the scanner would wait silently
    /// and later skip the rows written at the reused offsets, so it is handled like any other
    /// offset out of range.
    pub(super) async fn check_liveness(&mut self) -> Result<()> {
        let keys: Vec<BucketKey> = self.progress.current().keys().copied().collect();
        if keys.is_empty() {
            return Ok(());
        }
        let probe = tokio::time::timeout(
            LIVENESS_TIMEOUT,
            offsets::list(
                &self.table,
                &keys,
                self.buckets.partitions(),
                OffsetSpec::Latest,
            ),
        )
        .await
        .unwrap_or(Err(Error::Timeout {
            op: "list_offsets",
            after: LIVENESS_TIMEOUT,
        }));
        let latest = match probe {
            Ok(latest) => latest,
            Err(error) => {
                self.telemetry
                    .retrying("no records and Fluss does not answer", &error);
                return Ok(());
            }
        };
        if self.telemetry.faulted() {
            self.telemetry.recovered();
            self.scanner = None;
        }
        let past_end = self.progress.current().iter().any(|(key, position)| {
            latest
                .get(key)
                .is_some_and(|end| position.offset().is_some_and(|next| next > *end))
        });
        if past_end {
            let mut positions = self.progress.current().clone();
            match self.reset_out_of_range(&mut positions).await {
                Ok(()) => {
                    for (key, position) in positions {
                        self.progress.set_committed(key, position);
                    }
                    self.telemetry.metrics.committed(self.progress.committed());
                    self.scanner = None;
                }
                Err(error) if error.fault() == Fault::Retry => self
                    .telemetry
                    .retrying("looking up the log range of a bucket failed", &error),
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }

    /// Subscribes new partitions from their earliest offset and forgets dropped ones.
    pub(super) async fn discover(&mut self) -> Result<()> {
        let now = discovery::list(&self.table, self.config.partitions.as_ref()).await?;
        let mut changes = discovery::diff(self.buckets.partitions(), &now);
        // A partition is only taken on if this instance reads some bucket of it: it owns one
        // (`instance_index`) and a bounded read's stop point covers it (it never covers
        // partitions created after it was taken).
        let assignment = self.config.assignment;
        changes.added.retain(|p| {
            bucket_keys(&self.table, assignment, [*p])
                .iter()
                .any(|key| self.bound.reads(key))
        });
        if changes.added.is_empty() && changes.dropped.is_empty() {
            return Ok(());
        }
        let mut dropped = Vec::with_capacity(changes.dropped.len());
        for partition in &changes.dropped {
            let name = self.buckets.drop_partition(*partition).unwrap_or_default();
            for key in bucket_keys(&self.table, assignment, [*partition]) {
                self.progress.forget(&key);
                self.bound.forget(&key);
                if let Some(scanner) = self.scanner.as_mut() {
                    // The scanner already ignores a vanished partition; unsubscribing stops
                    // its warnings. A failure here is harmless.
                    let _ = scanner.unsubscribe(key).await;
                }
            }
            dropped.push((*partition, name));
        }
        self.discard_ahead_if_gone().await;
        // Registered only once their start offsets are known, so a failed listing is simply
        // retried by the next discovery.
        let new_keys = bucket_keys(&self.table, assignment, changes.added.iter().copied());
        // New partitions begin at their earliest offset, or with their snapshots under `full`.
        let start = match self.config.starting_offset {
            StartingOffset::Full => StartingOffset::Full,
            _ => StartingOffset::Earliest,
        };
        let starts = offsets::starting(&self.table, &new_keys, &now, start).await?;
        let mut added = Vec::with_capacity(changes.added.len());
        for partition in &changes.added {
            let Some(name) = now.get(partition) else {
                continue;
            };
            let keys = bucket_keys(&self.table, assignment, [*partition]);
            self.buckets
                .add_partition(*partition, name.clone(), &keys)?;
            added.push((*partition, name.clone()));
        }
        for (key, position) in &starts {
            self.progress.set_committed(*key, *position);
        }
        if let Some(scanner) = self.scanner.as_mut() {
            if let Err(error) = scanner.subscribe(&starts).await {
                // A rebuild subscribes every bucket at its committed position.
                self.scanner = None;
                return Err(error);
            }
        }
        self.telemetry.partitions(&added, &dropped);
        self.telemetry.metrics.partitions(self.buckets.partitions());
        self.telemetry.metrics.committed(self.progress.committed());
        Ok(())
    }
}
