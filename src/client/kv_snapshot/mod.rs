//! Primary-key snapshots from the KV snapshot files Fluss's tablet servers upload to remote
//! storage every `kv.snapshot.interval` (as Flink's Fluss source reads them): the latest
//! snapshot of a bucket, leased so the server keeps its files, copied into `snapshot_dir`
//! and read with RocksDB in bounded Arrow batches. The snapshot holds exactly the changes
//! below its log offset, so the bucket's changelog continues there: the switch is exact.
//!
//! - [`latest`]: a bucket's latest snapshot (id and log offset);
//! - [`lease`]: the lease that keeps its files on remote storage while it is read;
//! - [`credentials`]: what an object store holding the files needs, from Fluss;
//! - [`files`]: its files copied into a local directory, removed when dropped.
//!
//! Those local files are read by [`crate::snapshot_files`], which sends no request.

pub mod credentials;
pub mod files;
pub mod latest;
pub mod lease;

use std::sync::Arc;
use std::time::Instant;

use fluss::metadata::RowType;
use fluss::SnapshotId;

use crate::position::{BucketKey, Offset};
use crate::snapshot_files::RowBatches;

/// A bucket's snapshot, opened and ready to be handed over.
pub struct Opened {
    /// Which bucket.
    pub key: BucketKey,
    /// The KV snapshot read (`None` for rows that come from elsewhere, e.g. tests).
    pub snapshot_id: Option<SnapshotId>,
    /// Its rows, in key order.
    pub rows: Box<dyn RowBatches>,
    /// The Fluss type of those rows (the scanned columns).
    pub row_type: Arc<RowType>,
    /// When taking it started.
    pub started: Instant,
    /// The snapshot's log offset: its rows hold every change below it, and its message ids
    /// and `fluss_offset` headers carry it.
    pub taken_at: Offset,
    /// The offset the changelog continues at: `taken_at`, or lower (see
    /// [`Opened::continue_from`]).
    pub continue_at: Offset,
    /// Bytes of snapshot files on local disk.
    pub disk_bytes: u64,
    /// Rows (in key order) an earlier attempt at the same snapshot handed over, which `rows`
    /// skipped.
    pub skipped: u64,
    /// The index the rows to come are numbered from: `skipped`, or with a `filter` the rows
    /// of those the filter kept (see [`crate::encode::stamp::SnapshotIndex`]).
    pub first_index: u64,
}

impl Opened {
    /// Continues the changelog at `floor` instead, when an earlier attempt at this bucket's
    /// snapshot was partly delivered (see [`crate::position::Position::Snapshot`]): the
    /// changes since then, deletes included, bring that attempt's rows up to date. The switch
    /// is then not exact (changes already in this snapshot come again).
    pub fn continue_from(&mut self, floor: Offset) {
        self.continue_at = self.continue_at.min(floor);
    }

    /// Whether the switch to the changelog is exact (no change is delivered twice): the
    /// changelog continues at the snapshot's own log offset.
    pub fn exact(&self) -> bool {
        self.continue_at == self.taken_at
    }
}
