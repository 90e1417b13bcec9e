//! Primary-key snapshots from the KV snapshot files Fluss's tablet servers upload to remote
//! storage every `kv.snapshot.interval` (as Flink's Fluss source reads them): the latest
//! snapshot of a bucket, leased so the server keeps its files, copied into `snapshot_dir`
//! and read with RocksDB in bounded Arrow batches. The snapshot holds exactly the changes
//! below its log offset, so the bucket's changelog continues there: the switch is exact.
//!
//! - [`latest`]: a bucket's latest snapshot (id and log offset);
//! - [`lease`]: the lease that keeps its files on remote storage while it is read;
//! - [`credentials`]: what an object store holding the files needs, from Fluss;
//! - [`files`]: its files copied into a local directory, removed when dropped;
//! - [`rows`]: those files opened read-only, decoded into Arrow batches by schema id;
//! - [`compacted`]: values of the common column types decoded straight into Arrow;
//! - [`versions`]: rows of each schema version shown in the newest (the other types);
//! - [`ahead`]: the batches of [`rows`] read on a thread of their own, a bounded number ahead.

pub mod ahead;
pub mod compacted;
pub mod credentials;
pub mod files;
pub mod latest;
pub mod lease;
pub mod rows;
pub mod versions;

use std::sync::Arc;
use std::time::Instant;

use arrow_array::RecordBatch;
use fluss::metadata::RowType;
use fluss::SnapshotId;

use crate::error::Result;
use crate::position::{BucketKey, Offset};

/// Where a bucket's snapshot rows come from, a bounded batch at a time.
pub trait RowBatches: Send + Sync {
    /// The next rows (at most the reader's batch size), `None` once all were read.
    fn next_batch(&mut self) -> Result<Option<RecordBatch>>;

    /// Hands every batch in turn to `each` (then the end, or the error that stops it) until
    /// `each` returns `false`: what a reader that keeps a position between batches does
    /// faster than one [`RowBatches::next_batch`] at a time.
    fn read_each(mut self: Box<Self>, each: &mut dyn FnMut(Result<Option<RecordBatch>>) -> bool) {
        hand_each(|| self.next_batch(), each);
    }

    /// Takes back a batch it handed out, once nothing reads it any more: a reader on a thread
    /// of its own ([`ahead::ReadAhead`]) frees it there. By default it is dropped here.
    fn give_back(&mut self, batch: Arc<RecordBatch>) {
        drop(batch);
    }
}

/// Hands the batches of `next` to `each` until the end, an error, or `each` returns `false`.
fn hand_each(
    mut next: impl FnMut() -> Result<Option<RecordBatch>>,
    each: &mut dyn FnMut(Result<Option<RecordBatch>>) -> bool,
) {
    loop {
        let read = next();
        let last = !matches!(read, Ok(Some(_)));
        if !each(read) || last {
            break;
        }
    }
}

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
    /// Whether the switch to the changelog is exact (no change is delivered twice).
    pub exact: bool,
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
        if floor < self.continue_at {
            self.continue_at = floor;
            self.exact = false;
        }
    }
}
