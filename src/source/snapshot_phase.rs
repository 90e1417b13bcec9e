//! Taking bucket snapshots (`starting_offset = "full"`) while polling: one bucket at a time,
//! so at most one bucket's rows are held in memory. A bucket's position stays
//! [`Position::Snapshot`] until the last of its snapshot's rows is in a batch; a Nack or a restart before that batch is acknowledged takes its
//! snapshot again.

use fluss::rpc::message::OffsetSpec;

use super::{FlussSource, RETRY_PAUSE};
use crate::client::limit_scan::{self, Taken};
use crate::client::offsets;
use crate::error::{Error, Fault, Result};
use crate::position::{BucketKey, Position, Positions};

impl FlussSource {
    /// The next bucket whose snapshot is due: none while one is being handed over.
    pub(super) fn snapshot_due(&self, positions: &Positions) -> Option<BucketKey> {
        if self.buckets.has_snapshot() {
            return None;
        }
        positions
            .iter()
            .find(|(key, position)| position.is_snapshot() && self.buckets.contains(**key))
            .map(|(key, _)| *key)
    }

    /// Takes the snapshot of `key` and queues it; a bucket over `snapshot_max_bucket_rows`
    /// is read from its changelog instead. A transient failure is logged and retried later.
    pub(super) async fn take_snapshot(
        &mut self,
        key: BucketKey,
        positions: &mut Positions,
    ) -> Result<()> {
        match self.try_snapshot(key, positions).await {
            Err(error) if error.fault() == Fault::Retry => {
                self.telemetry
                    .retrying(&format!("taking the snapshot of {key} failed"), &error);
                tokio::time::sleep(RETRY_PAUSE).await;
                Ok(())
            }
            result => result,
        }
    }

    async fn try_snapshot(&mut self, key: BucketKey, positions: &mut Positions) -> Result<()> {
        if !self.buckets.contains(key) {
            return Ok(());
        }
        self.telemetry.snapshot_started(key);
        let cap = self.config.snapshot_max_bucket_rows;
        let names = self.buckets.partitions();
        let continue_at = match limit_scan::take(&self.table, key, names, cap).await? {
            Taken::Rows(mut scanned) => {
                match positions.get(&key) {
                    Some(Position::Snapshot { floor: Some(floor) }) => {
                        scanned.continue_from(*floor);
                    }
                    // The first attempt: its rows are about to be handed over.
                    _ => {
                        let floor = Some(scanned.continue_at);
                        positions.insert(key, Position::Snapshot { floor });
                    }
                }
                let continue_at = scanned.continue_at;
                let (fetched, kept) = self.buckets.queue_snapshot(key, scanned)?;
                self.telemetry.metrics.fetched(fetched, kept);
                continue_at
            }
            Taken::TooLarge { cap } => {
                let earliest = offsets::list(&self.table, &[key], names, OffsetSpec::Earliest)
                    .await?
                    .get(&key)
                    .copied()
                    .ok_or(Error::SnapshotUnanswered { key })?;
                self.telemetry.snapshot_skipped(key, cap, earliest);
                positions.insert(key, Position::At(earliest));
                earliest
            }
        };
        // The changelog is read from where the snapshot leaves off; its records queue behind
        // the snapshot's rows. Without a scanner, the rebuild subscribes it (see `reading`).
        if let Some(scanner) = self.scanner.as_ref() {
            let start: Positions = [(key, Position::At(continue_at))].into_iter().collect();
            if let Err(error) = scanner.subscribe(&start).await {
                self.scanner = None;
                if error.fault() != Fault::Retry {
                    return Err(error);
                }
                self.telemetry
                    .retrying("subscribing to a snapshot's changelog failed", &error);
            }
        }
        Ok(())
    }
}
