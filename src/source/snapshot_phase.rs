//! Taking bucket snapshots (`starting_offset = "full"`) while polling, from the buckets' KV
//! snapshot files (see [`crate::client::kv_snapshot`]): handed over one bucket at a time (the
//! next one opened meanwhile, [`super::snapshot_ahead`]), read a bounded batch at a time on a
//! thread of its own ([`ReadAhead`]) while the previous batch is encoded. A bucket's position
//! stays [`Position::Snapshot`] until the last of its snapshot's rows is in a batch; a Nack or
//! a restart before that batch is acknowledged goes on after the rows acknowledged, in the same
//! snapshot. A bucket without a KV snapshot yet (nothing written to it, or
//! its first snapshot not taken yet) reads its changelog from its earliest offset, which
//! then still holds every change.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use fluss::metadata::RowType;
use fluss::rpc::message::OffsetSpec;
use fluss::SnapshotId;

use super::{FlussSource, RETRY_PAUSE};
use crate::client::discovery::PartitionNames;
use crate::client::kv_snapshot::credentials::RemoteCredentials;
use crate::client::kv_snapshot::{files, latest, Opened};
use crate::client::offsets;
use crate::client::schema_fetch;
use crate::client::table::Table;
use crate::config::options::PayloadFormat;
use crate::error::{Error, Fault, Result};
use crate::position::{BucketKey, Offset, Position, Positions, Resume};
use crate::snapshot_files::ahead::ReadAhead;
use crate::snapshot_files::rows::{KvRows, Layout};

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

    /// Takes the snapshot of `key` and queues it; a bucket without a KV snapshot is read
    /// from its changelog instead. A transient failure is logged and retried later.
    pub(super) async fn take_snapshot(
        &mut self,
        key: BucketKey,
        positions: &mut Positions,
    ) -> Result<()> {
        match self.try_snapshot(key, positions).await {
            Err(error) if error.fault() == Fault::Retry => {
                self.snapshot_failed(key, &error);
                tokio::time::sleep(RETRY_PAUSE).await;
                Ok(())
            }
            result => result,
        }
    }

    /// Logs why bucket `key`'s snapshot failed: an ERROR for what needs the operator
    /// (storage, disk, a corrupt copy), a WARN for a transient Fluss failure.
    pub(super) fn snapshot_failed(&mut self, key: BucketKey, error: &Error) {
        match error {
            Error::SnapshotRemote { .. }
            | Error::SnapshotCredentials { .. }
            | Error::SnapshotDisk { .. }
            | Error::SnapshotCorrupt { .. } => self.telemetry.refused(error),
            _ => self
                .telemetry
                .retrying(&format!("taking the snapshot of {key} failed"), error),
        }
    }

    async fn try_snapshot(&mut self, key: BucketKey, positions: &mut Positions) -> Result<()> {
        if !self.buckets.contains(key) {
            return Ok(());
        }
        self.telemetry.snapshot_started(key);
        // A resume goes on numbering the rows as the attempt it comes from did: one saved
        // without a filter (or before filtered rows were numbered among the kept ones) while a
        // filter is set, or the other way round, starts the snapshot over.
        let filtered = self.config.filter.is_some();
        let resume = match positions.get(&key) {
            Some(Position::Snapshot { resume, .. }) => {
                resume.filter(|resume| resume.kept.is_some() == filtered)
            }
            _ => None,
        };
        let continue_at = match self.open_snapshot(key, resume).await? {
            Some(mut opened) => {
                match positions.get(&key) {
                    Some(Position::Snapshot {
                        floor: Some(floor), ..
                    }) => {
                        opened.continue_from(*floor);
                    }
                    // The first attempt: its rows are about to be handed over.
                    _ => {
                        let floor = Some(opened.continue_at);
                        positions.insert(
                            key,
                            Position::Snapshot {
                                floor,
                                resume: None,
                            },
                        );
                    }
                }
                let continue_at = opened.continue_at;
                self.buckets.queue_snapshot(key, opened)?;
                self.open_ahead(key, positions).await;
                continue_at
            }
            None => {
                let earliest = earliest(&self.table, key, self.buckets.partitions()).await?;
                self.telemetry.snapshot_absent(key, earliest);
                // After an attempt that handed rows over, from where its changelog continued.
                let at = match positions.get(&key) {
                    Some(Position::Snapshot {
                        floor: Some(floor), ..
                    }) => *floor,
                    _ => earliest,
                };
                positions.insert(key, Position::At(at));
                at
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

    /// The KV snapshot of `key` to read, leased, copied and opened, past the rows `resume`
    /// says were handed over; `None` if the bucket has none.
    async fn open_snapshot(
        &mut self,
        key: BucketKey,
        resume: Option<Resume>,
    ) -> Result<Option<Opened>> {
        let started = Instant::now();
        // The same snapshot as the attempt `resume` comes from, while Fluss still has it.
        if let Some(resume) = resume {
            let gone = if self
                .lease
                .acquire(&self.table, key, resume.snapshot)
                .await?
            {
                match self.open(key, resume.snapshot, resume.rows, started).await {
                    // The lease was granted, but Fluss had already deleted the snapshot.
                    Err(error) if snapshot_not_found(&error) => true,
                    result => {
                        return result.map(|mut opened| {
                            opened.first_index = resume.kept.unwrap_or(opened.skipped);
                            Some(opened)
                        })
                    }
                }
            } else {
                true
            };
            if gone {
                self.telemetry.warn(&format!(
                    "{key}: KV snapshot {} is gone (its lease expired or Fluss deleted it) after {} of its rows were handed over; the bucket's snapshot starts over from its newest KV snapshot, and its changelog continues where the first attempt's did",
                    resume.snapshot, resume.rows
                ));
            }
        } else if let Some(copied) = self.take_ahead(key).await {
            // Opened while the bucket before it was handed over; its time counts from its turn.
            return unanswered_if_gone(key, copied).map(|copied| {
                let mut opened = self.copied(copied);
                opened.started = started;
                Some(opened)
            });
        }
        let Some(snapshot) = self.leased_latest(key).await? else {
            return Ok(None);
        };
        unanswered_if_gone(key, self.open(key, snapshot, 0, started).await).map(Some)
    }

    /// The latest KV snapshot of `key`, leased; `None` while the bucket has none.
    pub(super) async fn leased_latest(&mut self, key: BucketKey) -> Result<Option<SnapshotId>> {
        let Some(latest) = latest::latest(&self.table, key, self.buckets.partitions()).await?
        else {
            return Ok(None);
        };
        if !self.lease.acquire(&self.table, key, latest.id).await? {
            // Replaced by a newer snapshot between the listing and the lease.
            return Err(Error::SnapshotUnanswered { key });
        }
        Ok(Some(latest.id))
    }

    /// Copies KV snapshot `snapshot` of `key` (leased) and opens it past its first `skip` rows.
    async fn open(
        &mut self,
        key: BucketKey,
        snapshot: SnapshotId,
        skip: u64,
        started: Instant,
    ) -> Result<Opened> {
        let opening = self.opening().await?;
        let copied = opening
            .open(key, snapshot, skip, started, &mut self.remote_credentials)
            .await?;
        Ok(self.copied(copied))
    }

    /// Logs where a snapshot's files were copied; the snapshot, ready to be handed over.
    pub(super) fn copied(&self, copied: Copied) -> Opened {
        let Copied { opened, dir, took } = copied;
        if let Some(snapshot) = opened.snapshot_id {
            self.telemetry
                .snapshot_copied(opened.key, snapshot, opened.disk_bytes, &dir, took);
        }
        opened
    }

    /// What opening a KV snapshot of the table takes, with the schema versions it may hold.
    pub(super) async fn opening(&mut self) -> Result<Opening> {
        // JSON: a read batch per `batch_size` messages. Arrow IPC: `batch_size` counts
        // messages of many rows each, so read the most rows at once (one message each, or
        // fewer rows where `max_batch_bytes` cuts it).
        let batch_rows = match self.config.payload_format {
            PayloadFormat::Json => self.config.batch_size.clamp(256, 16_384),
            PayloadFormat::ArrowIpc => 16_384,
        };
        // The snapshot (listed before this) may hold rows of versions no fetched batch
        // showed yet.
        let changes = schema_fetch::up_to_latest(&self.table).await?;
        self.schema_changed(&changes);
        let layout = Layout::of(&self.table);
        let row_type = match &self.table.projection {
            Some(_) => RowType::new(self.table.fields.clone()),
            None => layout.row_type.clone(),
        };
        Ok(Opening {
            table: self.table.clone(),
            root: self.config.snapshot_dir.clone(),
            owner: self.lease.id().to_owned(),
            layout,
            row_type: Arc::new(row_type),
            batch_rows,
        })
    }

    /// After a drain: gives back the leases of the snapshots handed over, and sends the
    /// buckets whose snapshot failed back to take it again (the scanner, which reads their
    /// changelog, is rebuilt without them).
    pub(super) async fn snapshots_settled(&mut self) {
        for report in self.buckets.take_finished() {
            self.telemetry.snapshot_finished(&report);
            if let Err(error) = self.lease.release(&self.table, report.key).await {
                self.telemetry.retrying(
                    &format!(
                        "giving back the KV snapshot lease {} of {} failed (it expires by itself)",
                        self.lease.id(),
                        report.key
                    ),
                    &error,
                );
            }
        }
        let failed = self.buckets.take_failed();
        if !failed.is_empty() {
            for (key, error) in &failed {
                self.snapshot_failed(*key, error);
            }
            self.scanner = None;
        }
    }
}

/// The earliest offset of bucket `key`.
async fn earliest(table: &Table, key: BucketKey, names: &PartitionNames) -> Result<Offset> {
    offsets::list(table, &[key], names, OffsetSpec::Earliest)
        .await?
        .get(&key)
        .copied()
        .ok_or(Error::SnapshotUnanswered { key })
}

/// A snapshot listed and leased, then deleted before its files were copied, is not an
/// error: the next attempt lists the bucket's snapshots anew.
fn unanswered_if_gone<T>(key: BucketKey, opened: Result<T>) -> Result<T> {
    match opened {
        Err(error) if snapshot_not_found(&error) => Err(Error::SnapshotUnanswered { key }),
        result => result,
    }
}

/// Whether `error` says the coordinator no longer knows the KV snapshot asked for.
fn snapshot_not_found(error: &Error) -> bool {
    matches!(error, Error::Fluss { cause, .. }
        if cause.api_error() == Some(fluss::error::FlussError::KvSnapshotNotExist))
}

/// What opening a bucket's KV snapshot needs, owned: it can run on a task of its own
/// ([`super::snapshot_ahead`]).
pub(super) struct Opening {
    table: Table,
    root: PathBuf,
    /// The lease's id, which names the connector instance's directory under `root`.
    owner: String,
    layout: Layout,
    row_type: Arc<RowType>,
    batch_rows: usize,
}

/// A snapshot copied and opened, with where its files are and how long copying them took.
pub(super) struct Copied {
    pub opened: Opened,
    pub dir: PathBuf,
    pub took: std::time::Duration,
}

impl Opening {
    /// Copies KV snapshot `snapshot` of `key` (leased) and opens it past its first `skip`
    /// rows, its first batches read on a thread of their own.
    pub(super) async fn open(
        self,
        key: BucketKey,
        snapshot: SnapshotId,
        skip: u64,
        started: Instant,
        credentials: &mut RemoteCredentials,
    ) -> Result<Copied> {
        let copy = files::copy(
            &self.table,
            key,
            snapshot,
            &self.root,
            &self.owner,
            credentials,
        )
        .await?;
        let took = started.elapsed();
        let (disk_bytes, taken_at) = (copy.bytes, copy.log_offset);
        let mut rows = KvRows::open(&self.layout, key, copy, self.batch_rows)?;
        let skipped = rows.skip(skip)?;
        let dir = rows.dir().to_path_buf();
        let rows = ReadAhead::start(key, dir.clone(), Box::new(rows))?;
        let opened = Opened {
            key,
            snapshot_id: Some(snapshot),
            rows: Box::new(rows),
            row_type: self.row_type,
            started,
            taken_at,
            continue_at: taken_at,
            exact: true,
            disk_bytes,
            skipped,
            first_index: skipped,
        };
        Ok(Copied { opened, dir, took })
    }
}
