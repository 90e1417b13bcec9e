//! A bucket's snapshot (`starting_offset = "full"`) while it is handed over: its rows, kept
//! as the one Arrow batch the limit scan returned, turned into records a chunk at a time.

use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use fluss::record::{ChangeType, ScanRecord};
use fluss::row::ColumnarRow;

use crate::client::limit_scan::Scanned;
use crate::encode::stamp::BucketStamp;
use crate::error::{Error, Result};
use crate::filter::Filter;
use crate::position::{BucketKey, Offset};

/// Rows turned into records per encoder call: records are made from the snapshot's Arrow
/// batch as they are encoded, so only this many exist at once (about 40 bytes each).
const CHUNK_ROWS: usize = 16_384;

/// One bucket's snapshot, being handed over.
pub struct Snapshot {
    stamp: BucketStamp,
    row: ColumnarRow,
    rows: usize,
    next: usize,
    taken_ms: i64,
    /// What the end-of-snapshot line reports.
    pub report: Report,
}

/// The facts of a finished snapshot, for its INFO line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Report {
    /// Which bucket.
    pub key: BucketKey,
    /// Rows in the snapshot.
    pub rows: usize,
    /// Arrow bytes the snapshot held in memory.
    pub bytes: usize,
    /// When it was started.
    pub started: Instant,
    /// The offset the changelog continues at (the high watermark before the scan).
    pub continue_at: Offset,
    /// Whether the high watermark stayed put during the scan (no change is delivered twice).
    pub exact: bool,
}

impl Snapshot {
    /// The rows of `scanned` that `filter` keeps, stamped by `stamp` (the bucket's stamp):
    /// their ids and offsets are those of a snapshot taken at `scanned.taken_at`.
    pub fn new(stamp: &BucketStamp, scanned: Scanned, filter: Option<&Filter>) -> Result<Self> {
        let batch = match filter {
            Some(filter) => filter
                .retain(&scanned.batch)
                .map_err(|cause| Error::FilterEval { cause })?,
            None => scanned.batch,
        };
        let rows = batch.num_rows();
        let report = Report {
            key: stamp.key(),
            rows,
            bytes: batch.get_array_memory_size(),
            started: scanned.started,
            continue_at: scanned.continue_at,
            exact: scanned.exact,
        };
        let row = ColumnarRow::new(Arc::new(batch), scanned.row_type, 0, None)
            .map_err(|cause| Error::fluss("read snapshot rows", cause))?;
        let taken_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        Ok(Self {
            stamp: stamp.snapshot(scanned.taken_at),
            row,
            rows,
            next: 0,
            taken_ms,
            report,
        })
    }

    /// The stamp of its rows (snapshot ids and offsets).
    pub fn stamp(&self) -> &BucketStamp {
        &self.stamp
    }

    /// The next rows to encode, as records whose offset is their index in the snapshot and
    /// whose timestamp is when the snapshot was taken (all `+I`).
    pub fn chunk(&self) -> Vec<ScanRecord> {
        let end = self.rows.min(self.next + CHUNK_ROWS);
        (self.next..end)
            .map(|index| {
                let mut row = self.row.clone();
                row.set_row_id(index);
                ScanRecord::new(row, index as i64, self.taken_ms, ChangeType::Insert)
            })
            .collect()
    }

    /// Marks `rows` more rows as handed over.
    pub fn advance(&mut self, rows: usize) {
        self.next = (self.next + rows).min(self.rows);
    }

    /// Rows handed over and rows in all.
    pub fn progress(&self) -> (usize, usize) {
        (self.next, self.rows)
    }

    /// Whether every row was handed over.
    pub fn is_done(&self) -> bool {
        self.next >= self.rows
    }

    /// The offset its bucket's changelog continues at.
    pub fn continue_at(&self) -> Offset {
        self.report.continue_at
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use arrow_array::{Int64Array, RecordBatch};
    use arrow_schema::{DataType, Field, Schema};
    use fluss::metadata::{DataTypes, RowType};

    use super::*;
    use crate::config::options::HeaderSet;
    use crate::encode::stamp::Stamper;

    /// What a limit scan of `rows` rows of one `id` column, taken at `continue_at`, returns.
    pub(crate) fn scanned(rows: i64, continue_at: i64) -> Scanned {
        let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]));
        let batch = RecordBatch::try_new(
            schema,
            vec![Arc::new(Int64Array::from_iter_values(0..rows))],
        )
        .unwrap();
        let row_type = Arc::new(RowType::new(vec![DataTypes::field(
            "id",
            DataTypes::bigint(),
        )]));
        Scanned {
            batch,
            row_type,
            started: Instant::now(),
            taken_at: continue_at,
            continue_at,
            exact: true,
        }
    }

    fn snapshot(rows: i64, continue_at: i64) -> Snapshot {
        let stamp = Stamper::new(1, "db.t", HeaderSet::ALL)
            .unwrap()
            .bucket(BucketKey::bucket(0), None)
            .unwrap();
        Snapshot::new(&stamp, scanned(rows, continue_at), None).unwrap()
    }

    #[test]
    fn chunks_walk_the_rows_in_order_as_inserts_indexed_from_zero() {
        let mut snap = snapshot(CHUNK_ROWS as i64 + 5, 40);
        assert_eq!(snap.report.rows, CHUNK_ROWS + 5);
        assert_eq!(snap.stamp().snapshot_offset(), Some(40));
        let first = snap.chunk();
        assert_eq!(first.len(), CHUNK_ROWS, "a chunk is bounded");
        assert!(first.iter().enumerate().all(|(i, r)| r.offset() == i as i64
            && r.row().get_row_id() == i
            && *r.change_type() == ChangeType::Insert));
        snap.advance(3);
        let next = snap.chunk();
        assert_eq!(
            next[0].offset(),
            3,
            "the next chunk starts after what was consumed"
        );
        snap.advance(CHUNK_ROWS + 2);
        assert!(snap.is_done());
        assert!(snap.chunk().is_empty());
        assert_eq!(snap.continue_at(), 40);
    }

    #[test]
    fn an_empty_bucket_is_done_at_once() {
        let snap = snapshot(0, 7);
        assert!(snap.is_done());
        assert!(snap.chunk().is_empty());
    }
}
