//! A bucket's snapshot (`starting_offset = "full"`) while it is handed over: its rows, read
//! from the bucket's KV snapshot a bounded Arrow batch at a time and turned into records a
//! chunk at a time, so memory does not grow with the bucket.

use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use arrow_array::RecordBatch;
use fluss::metadata::RowType;
use fluss::record::{ChangeType, ScanRecord};
use fluss::row::ColumnarRow;
use fluss::SnapshotId;

use crate::client::kv_snapshot::{Opened, RowBatches};
use crate::encode::stamp::BucketStamp;
use crate::error::{Error, Result};
use crate::filter::Filter;
use crate::position::{BucketKey, Offset, Resume};

/// Rows turned into records per encoder call: records are made from the current Arrow
/// batch as they are encoded, so only this many exist at once (about 40 bytes each).
const CHUNK_ROWS: usize = 16_384;

/// One bucket's snapshot, being handed over.
pub struct Snapshot {
    stamp: BucketStamp,
    snapshot_id: Option<SnapshotId>,
    source: Box<dyn RowBatches>,
    row_type: Arc<RowType>,
    filter: Option<Filter>,
    /// The current batch (the rows the filter kept), `None` once the source is exhausted.
    row: Option<ColumnarRow>,
    /// The batch `row` reads, given back to the source once its rows are handed over.
    batch: Option<Arc<RecordBatch>>,
    /// Rows in the current batch.
    rows: usize,
    /// The next row of the current batch.
    next: usize,
    /// Snapshot rows (before the filter) read from batches before the current one.
    base: u64,
    /// Snapshot rows (before the filter) in the current batch.
    batch_read: u64,
    taken_ms: i64,
    /// Reading the next batch failed: the snapshot cannot go on (see [`Snapshot::failure`]).
    failed: Option<Error>,
    /// Rows read and rows the filter kept since [`Snapshot::take_counts`].
    counts: (usize, usize),
    /// What the end-of-snapshot line reports.
    pub report: Report,
}

/// The facts of a finished snapshot, for its INFO line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Report {
    /// Which bucket.
    pub key: BucketKey,
    /// Rows handed over (those the filter kept).
    pub rows: usize,
    /// Arrow bytes of the largest batch held in memory at once.
    pub bytes: usize,
    /// Bytes of the snapshot's files on local disk.
    pub disk_bytes: u64,
    /// When it was started.
    pub started: Instant,
    /// The offset the changelog continues at (the snapshot's log offset).
    pub continue_at: Offset,
    /// Whether the switch is exact (no change is delivered twice).
    pub exact: bool,
}

impl Snapshot {
    /// The rows of `opened` that `filter` keeps, stamped by `stamp` (the bucket's stamp):
    /// their ids and offsets are those of a snapshot taken at `opened.taken_at`.
    pub fn new(stamp: &BucketStamp, opened: Opened, filter: Option<Filter>) -> Result<Self> {
        let taken_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        let mut snapshot = Self {
            stamp: stamp.snapshot(opened.taken_at),
            snapshot_id: opened.snapshot_id,
            source: opened.rows,
            row_type: opened.row_type,
            filter,
            row: None,
            batch: None,
            rows: 0,
            next: 0,
            base: opened.skipped,
            batch_read: 0,
            taken_ms,
            failed: None,
            counts: (0, 0),
            report: Report {
                key: stamp.key(),
                rows: 0,
                bytes: 0,
                disk_bytes: opened.disk_bytes,
                started: opened.started,
                continue_at: opened.continue_at,
                exact: opened.exact,
            },
        };
        snapshot.refill()?;
        Ok(snapshot)
    }

    /// Reads batches until one holds a row the filter keeps, or the source is exhausted.
    fn refill(&mut self) -> Result<()> {
        while self.next >= self.rows {
            self.base += self.batch_read;
            self.batch_read = 0;
            self.row = None;
            if let Some(batch) = self.batch.take() {
                self.source.give_back(batch);
            }
            self.rows = 0;
            self.next = 0;
            let Some(batch) = self.source.next_batch()? else {
                return Ok(());
            };
            self.batch_read = batch.num_rows() as u64;
            let batch = self.keep(Arc::new(batch))?;
            self.counts.0 += self.batch_read as usize;
            self.counts.1 += batch.num_rows();
            self.report.bytes = self.report.bytes.max(batch.get_array_memory_size());
            self.rows = batch.num_rows();
            self.row = Some(
                ColumnarRow::new(Arc::clone(&batch), self.row_type.clone(), 0, None)
                    .map_err(|cause| Error::fluss("read snapshot rows", cause))?,
            );
            self.batch = Some(batch);
        }
        Ok(())
    }

    /// The rows of `batch` the filter keeps; `batch` itself is given back when they are a
    /// new batch.
    fn keep(&mut self, batch: Arc<RecordBatch>) -> Result<Arc<RecordBatch>> {
        let Some(filter) = &self.filter else {
            return Ok(batch);
        };
        let kept = filter
            .retain(&batch)
            .map_err(|cause| Error::FilterEval { cause });
        self.source.give_back(batch);
        kept.map(Arc::new)
    }

    /// The stamp of its rows (snapshot ids and offsets).
    pub fn stamp(&self) -> &BucketStamp {
        &self.stamp
    }

    /// The next rows to encode, as records whose offset is their index in the snapshot and
    /// whose timestamp is when the snapshot was taken (all `+I`).
    pub fn chunk(&self) -> Vec<ScanRecord> {
        let Some(row) = &self.row else {
            return Vec::new();
        };
        let end = self.rows.min(self.next + CHUNK_ROWS);
        // The snapshot row's index, counted before the filter at batch granularity: the same
        // for every attempt at the same snapshot, so message ids repeat exactly on a resume.
        let base = self.base as i64;
        (self.next..end)
            .map(|index| {
                let mut row = row.clone();
                row.set_row_id(index);
                ScanRecord::new(row, base + index as i64, self.taken_ms, ChangeType::Insert)
            })
            .collect()
    }

    /// Marks `rows` more rows as handed over, reading the next batch when the current one
    /// is used up. Rows already handed over stay so when that read fails: the failure is
    /// kept for [`Snapshot::failure`].
    pub fn advance(&mut self, rows: usize) {
        let rows = rows.min(self.rows - self.next);
        self.next += rows;
        self.report.rows += rows;
        if let Err(error) = self.refill() {
            self.failed = Some(error);
        }
    }

    /// Why the snapshot cannot go on, once (its next batch could not be read).
    pub fn failure(&mut self) -> Option<Error> {
        self.failed.take()
    }

    /// Rows handed over (those the filter kept), and rows in all when known: `None`, since the
    /// KV snapshot files are read a batch at a time.
    pub fn progress(&self) -> (usize, Option<usize>) {
        (self.report.rows, None)
    }

    /// Rows read from the snapshot and rows the filter kept since the last call (for the
    /// connector's row counters).
    pub fn take_counts(&mut self) -> (usize, usize) {
        std::mem::take(&mut self.counts)
    }

    /// Whether every row was handed over.
    pub fn is_done(&self) -> bool {
        self.row.is_none() && self.failed.is_none()
    }

    /// Snapshot rows (before the filter) read up to the end of the current batch.
    pub fn read_through_batch(&self) -> u64 {
        self.base + self.batch_read
    }

    /// Where a later attempt goes on once what was handed over so far is acknowledged: after
    /// the last row handed over, so a restart repeats only the batch in flight. With a
    /// `filter`, after the read batches handed over whole (the current one comes again): a
    /// row's index within the kept rows of its read batch is part of its message id, and only
    /// a resume at a read batch's start reads the same batches again. `None` for rows that do
    /// not come from a KV snapshot, or before anything was handed over.
    pub fn resume(&self) -> Option<Resume> {
        let snapshot = self.snapshot_id?;
        let rows = match self.filter {
            // Unfiltered, a row's index in its batch is its index in the snapshot less `base`.
            None if self.row.is_some() => self.base + self.next as u64,
            _ => self.base,
        };
        (rows > 0).then_some(Resume { snapshot, rows })
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

    /// Batches handed out in order.
    struct Batches(std::vec::IntoIter<RecordBatch>);

    impl RowBatches for Batches {
        fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
            Ok(self.0.next())
        }
    }

    /// A snapshot of `rows` rows of one `id` column (`0..rows`), read `per_batch` rows at a
    /// time, whose changelog continues at `continue_at`.
    pub(crate) fn opened_in(rows: i64, per_batch: i64, continue_at: i64) -> Opened {
        let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]));
        let batches: Vec<RecordBatch> = (0..rows)
            .step_by(per_batch as usize)
            .map(|start| {
                let end = (start + per_batch).min(rows);
                RecordBatch::try_new(
                    schema.clone(),
                    vec![Arc::new(Int64Array::from_iter_values(start..end))],
                )
                .unwrap()
            })
            .collect();
        let row_type = Arc::new(RowType::new(vec![DataTypes::field(
            "id",
            DataTypes::bigint(),
        )]));
        Opened {
            key: BucketKey::bucket(0),
            snapshot_id: None,
            rows: Box::new(Batches(batches.into_iter())),
            row_type,
            started: Instant::now(),
            taken_at: continue_at,
            continue_at,
            exact: true,
            disk_bytes: 0,
            skipped: 0,
        }
    }

    /// [`opened_in`] as one batch.
    pub(crate) fn opened(rows: i64, continue_at: i64) -> Opened {
        opened_in(rows, rows.max(1), continue_at)
    }

    fn snapshot(opened: Opened) -> Snapshot {
        let stamp = Stamper::new(1, "db.t", HeaderSet::ALL)
            .unwrap()
            .bucket(BucketKey::bucket(0), None)
            .unwrap();
        Snapshot::new(&stamp, opened, None).unwrap()
    }

    #[test]
    fn chunks_walk_the_rows_in_order_as_inserts_indexed_from_zero() {
        let mut snap = snapshot(opened(CHUNK_ROWS as i64 + 5, 40));
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
        assert_eq!(snap.report.rows, CHUNK_ROWS + 5);
        assert_eq!(snap.continue_at(), 40);
    }

    #[test]
    fn batches_are_read_one_at_a_time_and_offsets_run_on_across_them() {
        let mut snap = snapshot(opened_in(10, 4, 7));
        let mut offsets = Vec::new();
        let mut through = Vec::new();
        while !snap.is_done() {
            let chunk = snap.chunk();
            assert!(chunk.len() <= 4, "never more than one batch at once");
            offsets.extend(chunk.iter().map(ScanRecord::offset));
            through.push(snap.read_through_batch());
            snap.advance(chunk.len());
        }
        assert_eq!(offsets, (0..10).collect::<Vec<i64>>());
        assert_eq!(through, [4, 8, 10], "rows read through each batch");
        assert_eq!(snap.report.rows, 10);
    }

    #[test]
    fn a_resume_goes_on_after_the_last_row_handed_over_and_at_a_batch_start_with_a_filter() {
        let with_id = || {
            let mut opened = opened_in(10, 4, 7);
            opened.snapshot_id = Some(3);
            opened
        };
        let mut snap = snapshot(with_id());
        assert_eq!(snap.resume(), None, "nothing handed over yet");
        snap.advance(3);
        assert_eq!(
            snap.resume(),
            Some(Resume {
                snapshot: 3,
                rows: 3
            })
        );
        snap.advance(1);
        snap.advance(2);
        assert_eq!(
            snap.resume(),
            Some(Resume {
                snapshot: 3,
                rows: 6
            })
        );
        while !snap.is_done() {
            let n = snap.chunk().len();
            snap.advance(n);
        }
        assert_eq!(
            snap.resume(),
            Some(Resume {
                snapshot: 3,
                rows: 10
            })
        );

        let stamp = Stamper::new(1, "db.t", HeaderSet::ALL)
            .unwrap()
            .bucket(BucketKey::bucket(0), None)
            .unwrap();
        let fields = [fluss::metadata::DataField::new(
            "id",
            DataTypes::bigint(),
            None,
        )];
        let text = crate::filter::FilterText::parse("id >= 0").unwrap();
        let filter = Filter::new(&text, &fields, &fields, false).unwrap();
        let mut filtered = Snapshot::new(&stamp, with_id(), Some(filter)).unwrap();
        filtered.advance(3);
        assert_eq!(filtered.resume(), None, "the first read batch is not done");
        filtered.advance(1);
        filtered.advance(2);
        assert_eq!(
            filtered.resume(),
            Some(Resume {
                snapshot: 3,
                rows: 4
            }),
            "at the start of the read batch being handed over"
        );
    }

    #[test]
    fn an_empty_bucket_is_done_at_once() {
        let snap = snapshot(opened(0, 7));
        assert!(snap.is_done());
        assert!(snap.chunk().is_empty());
    }
}
