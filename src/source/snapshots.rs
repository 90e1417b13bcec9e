//! Taking bucket snapshots (`starting_offset = "full"`) while polling: one bucket at a time,
//! so at most one bucket's rows are held in memory. A bucket's position stays
//! [`SNAPSHOT_PENDING`](crate::bucket::SNAPSHOT_PENDING) until the last of its snapshot's
//! rows is in a batch; a Nack or a restart before that batch is acknowledged takes its
//! snapshot again.

use fluss::rpc::message::OffsetSpec;

use super::{FlussSource, RETRY_PAUSE};
use crate::bucket::{
    is_snapshot_pending, snapshot_floor, snapshot_pending_from, BucketKey, Positions,
    SNAPSHOT_PENDING,
};
use crate::error::{Error, Fault, Result};
use crate::scan::offsets;
use crate::scan::snapshot::{self, Taken};

impl FlussSource {
    /// The next bucket whose snapshot is due: none while one is being handed over.
    pub(super) fn snapshot_due(&self, positions: &Positions) -> Option<BucketKey> {
        if self.buckets.has_snapshot() {
            return None;
        }
        positions
            .iter()
            .find(|(key, offset)| {
                is_snapshot_pending(**offset) && self.buckets.stamp(**key).is_some()
            })
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
        let Some(stamp) = self.buckets.stamp(key).cloned() else {
            return Ok(());
        };
        self.telemetry.snapshot_started(key);
        let cap = self.config.snapshot_max_bucket_rows;
        let names = self.buckets.partitions();
        let continue_at =
            match snapshot::take(&self.table, key, names, &stamp, cap, self.buckets.filter())
                .await?
            {
                Taken::Rows(mut snapshot) => {
                    let marker = positions.get(&key).copied().unwrap_or(SNAPSHOT_PENDING);
                    match snapshot_floor(marker) {
                        Some(floor) => snapshot.continue_from(floor),
                        // The first attempt: its rows are about to be handed over.
                        None => {
                            positions.insert(key, snapshot_pending_from(snapshot.continue_at()));
                        }
                    }
                    let continue_at = snapshot.continue_at();
                    self.buckets.queue_snapshot(key, *snapshot);
                    continue_at
                }
                Taken::TooLarge { cap } => {
                    let earliest = offsets::list(&self.table, &[key], names, OffsetSpec::Earliest)
                        .await?
                        .get(&key)
                        .copied()
                        .ok_or(Error::SnapshotUnanswered { key })?;
                    self.telemetry.snapshot_skipped(key, cap, earliest);
                    positions.insert(key, earliest);
                    earliest
                }
            };
        // The changelog is read from where the snapshot leaves off; its records queue behind
        // the snapshot's rows. Without a scanner, the rebuild subscribes it (see `reading`).
        if let Some(scanner) = self.scanner.as_ref() {
            let start: Positions = [(key, continue_at)].into_iter().collect();
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
