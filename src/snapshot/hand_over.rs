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

//! A bucket's snapshot (`starting_offset = "full"`) while it is handed over: its rows, read
//! from the bucket's KV snapshot a bounded Arrow batch at a time and turned into records a
//! chunk at a time, so memory does not grow with the bucket.

use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use arrow_array::RecordBatch;
use fluss::SnapshotId;
use fluss::metadata::RowType;
use fluss::record::{ChangeType, ScanRecord};
use fluss::row::ColumnarRow;

use crate::encode::stamp::{BucketStamp, SnapshotIndex};
use crate::error::{Error, Result};
use crate::filter::Filter;
use crate::position::{BucketKey, Offset, Resume};
use crate::snapshot::files::Opened;
use crate::snapshot::files::RowBatches;

/// Rows turned into records per encoder call: records are made from the current Arrow
/// batch as they are encoded, so only this many exist at once (about 40 bytes each).
const CHUNK_ROWS: usize = 16_384;

/// One bucket's snapshot, being handed over.
pub struct HandOver {
    stamp: BucketStamp,
    snapshot_id: Option<SnapshotId>,
    source: Box<dyn RowBatches>,
    row_type: Arc<RowType>,
    filter: Option<Filter>,
    /// Where handing over stands.
    at: Cursor,
    taken_ms: i64,
    /// Reading the next batch failed: the snapshot cannot go on (see [`HandOver::failure`]).
    failed: Option<Error>,
    /// Rows read and rows the filter kept since [`HandOver::take_counts`].
    counts: (usize, usize),
    /// What the end-of-snapshot line reports.
    pub report: Report,
}

/// Where handing a snapshot over stands: the current batch (the rows the filter kept) and
/// the rows before it.
#[derive(Default)]
struct Cursor {
    /// The current batch, `None` once the source is exhausted.
    row: Option<ColumnarRow>,
    /// The batch `row` reads, given back to the source once its rows are handed over.
    batch: Option<Arc<RecordBatch>>,
    /// Rows in the current batch.
    rows: usize,
    /// The next row of the current batch.
    next: usize,
    /// Snapshot rows (before the filter) read from batches before the current one.
    read_before: u64,
    /// Snapshot rows (before the filter) in the current batch.
    batch_read: u64,
    /// The index of the current batch's first row: rows before it the filter kept (all of
    /// them without a filter). Rows are numbered among the kept ones, so the rows of every
    /// message sit at consecutive indexes however a replay cuts them.
    index_before: u64,
    /// With a filter, where each kept row of the current batch was in it before the filter
    /// (so a resume goes on right after the last row handed over); empty without one.
    selected: Vec<u32>,
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

impl HandOver {
    /// The rows of `opened` that `filter` keeps, stamped by `stamp` (the bucket's stamp):
    /// their ids and offsets are those of a snapshot taken at `opened.taken_at`.
    pub fn new(stamp: &BucketStamp, opened: Opened, filter: Option<Filter>) -> Result<Self> {
        let taken_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        let exact = opened.exact();
        let numbering = match filter {
            Some(_) => SnapshotIndex::Kept,
            None => SnapshotIndex::Every,
        };
        let mut snapshot = Self {
            stamp: stamp.snapshot(opened.taken_at, numbering),
            snapshot_id: opened.snapshot_id,
            source: opened.rows,
            row_type: opened.row_type,
            filter,
            at: Cursor {
                read_before: opened.skipped,
                index_before: opened.first_index,
                ..Cursor::default()
            },
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
                exact,
            },
        };
        snapshot.refill()?;
        Ok(snapshot)
    }

    /// Reads batches until one holds a row the filter keeps, or the source is exhausted.
    fn refill(&mut self) -> Result<()> {
        while self.at.next >= self.at.rows {
            self.at.read_before += self.at.batch_read;
            self.at.index_before += self.at.rows as u64;
            self.at.batch_read = 0;
            self.at.row = None;
            if let Some(batch) = self.at.batch.take() {
                self.source.give_back(batch);
            }
            self.at.rows = 0;
            self.at.next = 0;
            let Some(batch) = self.source.next_batch()? else {
                return Ok(());
            };
            self.at.batch_read = batch.num_rows() as u64;
            let batch = self.keep(Arc::new(batch))?;
            self.counts.0 += self.at.batch_read as usize;
            self.counts.1 += batch.num_rows();
            self.report.bytes = self.report.bytes.max(batch.get_array_memory_size());
            self.at.rows = batch.num_rows();
            self.at.row = Some(
                ColumnarRow::new(Arc::clone(&batch), self.row_type.clone(), 0, None)
                    .map_err(|cause| Error::fluss("read snapshot rows", cause))?,
            );
            self.at.batch = Some(batch);
        }
        Ok(())
    }

    /// The rows of `batch` the filter keeps, noting where each was in it; `batch` itself is
    /// given back when they are a new batch.
    fn keep(&mut self, batch: Arc<RecordBatch>) -> Result<Arc<RecordBatch>> {
        let Some(filter) = &self.filter else {
            return Ok(batch);
        };
        let kept = filter.matches(&batch).and_then(|mask| {
            self.at.selected.clear();
            self.at
                .selected
                .extend(mask.values().set_indices().map(|i| i as u32));
            arrow_select::filter::filter_record_batch(&batch, &mask)
        });
        self.source.give_back(batch);
        kept.map(Arc::new)
            .map_err(|cause| Error::FilterEval { cause })
    }

    /// The stamp of its rows (snapshot ids and offsets).
    pub fn stamp(&self) -> &BucketStamp {
        &self.stamp
    }

    /// The next rows to encode, as records whose offset is their index in the snapshot (among
    /// the rows the filter kept) and whose timestamp is when the snapshot was taken (all `+I`).
    pub fn chunk(&self) -> Vec<ScanRecord> {
        let Some(row) = &self.at.row else {
            return Vec::new();
        };
        let end = self.at.rows.min(self.at.next + CHUNK_ROWS);
        // The same for every attempt at the same snapshot with the same filter, so message ids
        // repeat exactly on a resume.
        let base = self.at.index_before as i64;
        (self.at.next..end)
            .map(|index| {
                let mut row = row.clone();
                row.set_row_id(index);
                ScanRecord::new(row, base + index as i64, self.taken_ms, ChangeType::Insert)
            })
            .collect()
    }

    /// Marks `rows` more rows as handed over, reading the next batch when the current one
    /// is used up. Rows already handed over stay so when that read fails: the failure is
    /// kept for [`HandOver::failure`].
    pub fn advance(&mut self, rows: usize) {
        let rows = rows.min(self.at.rows - self.at.next);
        self.at.next += rows;
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
        self.at.row.is_none() && self.failed.is_none()
    }

    /// Snapshot rows (before the filter) read up to the end of the current batch.
    pub fn read_through_batch(&self) -> u64 {
        self.at.read_before + self.at.batch_read
    }

    /// Where a later attempt goes on once what was handed over so far is acknowledged: right
    /// after the last row handed over, so a restart repeats only the batch in flight, numbering
    /// the rows to come as this attempt would have. `None` for rows that do not come from a KV
    /// snapshot, or before anything was read past.
    pub fn resume(&self) -> Option<Resume> {
        let snapshot = self.snapshot_id?;
        let handed = if self.at.row.is_some() {
            self.at.next
        } else {
            0
        };
        let within = match (&self.filter, handed) {
            (_, 0) => 0,
            (None, n) => n as u64,
            (Some(_), n) => u64::from(self.at.selected[n - 1]) + 1,
        };
        let rows = self.at.read_before + within;
        let kept = self
            .filter
            .is_some()
            .then_some(self.at.index_before + handed as u64);
        (rows > 0).then_some(Resume {
            snapshot,
            rows,
            kept,
        })
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
            disk_bytes: 0,
            skipped: 0,
            first_index: 0,
        }
    }

    /// [`opened_in`] as one batch.
    pub(crate) fn opened(rows: i64, continue_at: i64) -> Opened {
        opened_in(rows, rows.max(1), continue_at)
    }

    fn snapshot(opened: Opened) -> HandOver {
        let stamp = Stamper::new(1, "db.t", HeaderSet::ALL)
            .unwrap()
            .bucket(BucketKey::bucket(0), None)
            .unwrap();
        HandOver::new(&stamp, opened, None).unwrap()
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
    fn a_resume_goes_on_after_the_last_row_handed_over() {
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
                rows: 3,
                kept: None
            })
        );
        snap.advance(1);
        snap.advance(2);
        assert_eq!(
            snap.resume(),
            Some(Resume {
                snapshot: 3,
                rows: 6,
                kept: None
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
                rows: 10,
                kept: None
            })
        );
    }

    /// A filter of the `id` column of [`opened_in`]'s rows.
    fn id_filter(text: &str) -> Filter {
        let fields = [fluss::metadata::DataField::new(
            "id",
            DataTypes::bigint(),
            None,
        )];
        let text = crate::filter::FilterText::parse(text).unwrap();
        Filter::new(&text, &fields, &fields, false).unwrap()
    }

    /// Hands `snap` over a row at a time: each row's (id, index) and the resume after it.
    fn one_by_one(mut snap: HandOver) -> Vec<((i64, i64), Option<Resume>)> {
        use fluss::row::DataGetters;
        let mut steps = Vec::new();
        while !snap.is_done() {
            let record = snap.chunk()[0].clone();
            snap.advance(1);
            steps.push((
                (record.row().get_long(0).unwrap(), record.offset()),
                snap.resume(),
            ));
        }
        steps
    }

    #[test]
    fn filtered_rows_are_numbered_among_the_kept_ones_and_resume_right_after_the_last() {
        let stamp = Stamper::new(1, "db.t", HeaderSet::ALL)
            .unwrap()
            .bucket(BucketKey::bucket(0), None)
            .unwrap();
        let with_id = |skip: i64, first_index: u64| {
            let mut opened = opened_in(10, 4, 7);
            opened.snapshot_id = Some(3);
            // What a resume past `skip` rows reads: the same batches, less those rows.
            opened.rows = Box::new(Batches(
                (0..10)
                    .step_by(4)
                    .map(|start: i64| {
                        let ids = start.max(skip)..(start + 4).min(10);
                        RecordBatch::try_new(
                            Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)])),
                            vec![Arc::new(Int64Array::from_iter_values(ids))],
                        )
                        .unwrap()
                    })
                    .filter(|b| b.num_rows() > 0)
                    .collect::<Vec<_>>()
                    .into_iter(),
            ));
            opened.skipped = skip as u64;
            opened.first_index = first_index;
            opened
        };
        let filter = || Some(id_filter("id IN (1, 2, 5, 9)"));
        let snap = HandOver::new(&stamp, with_id(0, 0), filter()).unwrap();
        assert_eq!(snap.stamp().snapshot_offset(), Some(7));
        let resume = |rows, kept| {
            Some(Resume {
                snapshot: 3,
                rows,
                kept: Some(kept),
            })
        };
        assert_eq!(
            one_by_one(snap),
            [
                ((1, 0), resume(2, 1)),
                ((2, 1), resume(4, 2)),
                ((5, 2), resume(8, 3)),
                ((9, 3), resume(10, 4)),
            ],
            "consecutive indexes; a resume right after the last row handed over"
        );
        // A resume after row 1 (2 rows read past, 1 kept) numbers the rest as the first did.
        let resumed = HandOver::new(&stamp, with_id(2, 1), filter()).unwrap();
        assert_eq!(
            one_by_one(resumed)
                .into_iter()
                .map(|(row, _)| row)
                .collect::<Vec<_>>(),
            [(2, 1), (5, 2), (9, 3)]
        );
        let ids = |snap: &HandOver| {
            let id = snap
                .stamp()
                .clone()
                .row(0, 0, None, 1, Vec::new())
                .id
                .unwrap();
            id >> 126
        };
        let unfiltered = HandOver::new(&stamp, with_id(0, 0), None).unwrap();
        let filtered = HandOver::new(&stamp, with_id(0, 0), filter()).unwrap();
        assert_eq!(
            (ids(&unfiltered), ids(&filtered)),
            (0b10, 0b11),
            "the layout says how the rows are numbered"
        );
    }

    #[test]
    fn an_empty_bucket_is_done_at_once() {
        let snap = snapshot(opened(0, 7));
        assert!(snap.is_done());
        assert!(snap.chunk().is_empty());
    }
}
