//! Bucket snapshots for `starting_offset = "full"`: the current rows of one bucket of a
//! primary-key table, and the offset its changelog continues at.
//!
//! Fluss 0.9.1 has no paged KV scan; its limit scan (`LimitScan`, fluss-rs
//! `create_bucket_batch_scanner`) returns up to `n` current rows of a bucket from the
//! leader's KV store in one response, without an offset. The server applies a write to the
//! KV store before it raises the high watermark past it, so rows read after the high
//! watermark was `h0` hold every change below `h0`: continuing the changelog at `h0` loses
//! nothing. Changes at or above `h0` that the snapshot already holds are delivered again by
//! the changelog, which is harmless for a consumer applying changes per key in order. When
//! the high watermark did not move during the scan (`h1 == h0`) the switch is exact.
//!
//! The scan asks for one row more than `snapshot_max_bucket_rows`, so a bucket over the cap
//! is recognised without loading more than that.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use arrow_array::RecordBatch;
use fluss::client::TableScan;
use fluss::metadata::{RowType, TableBucket};
use fluss::record::{ChangeType, ScanRecord};
use fluss::row::ColumnarRow;
use fluss::rpc::message::OffsetSpec;

use super::offsets;
use super::partitions::PartitionNames;
use crate::bucket::BucketKey;
use crate::connect::call;
use crate::error::{Error, Result};
use crate::filter::Filter;
use crate::message::BucketStamp;
use crate::table::Table;

/// How long one limit scan may take: the server reads the whole bucket under its KV read
/// lock and sends it in one response (1M rows took a few seconds on the bench machine).
const SCAN_TIMEOUT: Duration = Duration::from_secs(300);

/// Rows turned into records per encoder call: records are made from the snapshot's Arrow
/// batch as they are encoded, so only this many exist at once (about 40 bytes each).
const CHUNK_ROWS: usize = 16_384;

/// What taking a bucket's snapshot found.
pub enum Taken {
    /// The bucket's rows, to hand over before its changelog.
    Rows(Box<Snapshot>),
    /// The bucket holds more rows than the cap; nothing was kept.
    TooLarge {
        /// The cap it exceeded (`snapshot_max_bucket_rows`).
        cap: usize,
    },
}

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
    pub continue_at: i64,
    /// Whether the high watermark stayed put during the scan (no change is delivered twice).
    pub exact: bool,
}

impl Snapshot {
    /// A snapshot of `batch` (the bucket's rows, of `row_type`), stamped by `stamp` (the
    /// bucket's stamp), continuing at `report.continue_at`.
    pub fn new(
        stamp: &BucketStamp,
        batch: RecordBatch,
        row_type: Arc<RowType>,
        report: Report,
    ) -> Result<Self> {
        let rows = batch.num_rows();
        let row = ColumnarRow::new(Arc::new(batch), row_type, 0, None)
            .map_err(|cause| Error::fluss("read snapshot rows", cause))?;
        let taken_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        Ok(Self {
            stamp: stamp.snapshot(report.continue_at),
            row,
            rows,
            next: 0,
            taken_ms,
            report: Report { rows, ..report },
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

    /// Whether every row was handed over.
    pub fn is_done(&self) -> bool {
        self.next >= self.rows
    }

    /// The offset its bucket's changelog continues at.
    pub fn continue_at(&self) -> i64 {
        self.report.continue_at
    }

    /// Continues the changelog at `floor` instead, when an earlier attempt at this bucket's
    /// snapshot was partly delivered (see [`crate::bucket::snapshot_pending_from`]): the
    /// changes since then, deletes included, bring that attempt's rows up to date. The switch
    /// is then not exact (changes already in this snapshot come again).
    pub fn continue_from(&mut self, floor: i64) {
        if floor < self.report.continue_at {
            self.report.continue_at = floor;
            self.report.exact = false;
        }
    }
}

/// The high watermark of one bucket.
async fn high_watermark(table: &Table, key: BucketKey, names: &PartitionNames) -> Result<i64> {
    let offsets = offsets::list(table, &[key], names, OffsetSpec::Latest).await?;
    offsets
        .get(&key)
        .copied()
        .ok_or(Error::SnapshotUnanswered { key })
}

/// Takes the snapshot of bucket `key`, stamped by `stamp`, refusing more than `cap` rows
/// (counted before `filter`, which keeps only the matching rows: the cap bounds memory).
pub async fn take(
    table: &Table,
    key: BucketKey,
    names: &PartitionNames,
    stamp: &BucketStamp,
    cap: usize,
    filter: Option<&Filter>,
) -> Result<Taken> {
    let started = Instant::now();
    let h0 = high_watermark(table, key, names).await?;
    let mut scan = TableScan::new(&table.conn, table.info.clone(), table.conn.get_metadata());
    if let Some(projection) = &table.projection {
        scan = scan
            .project(projection)
            .map_err(|cause| Error::fluss("project", cause))?;
    }
    let limit = i32::try_from(cap.saturating_add(1)).unwrap_or(i32::MAX);
    let bucket = TableBucket::new_with_partition(table.id(), key.partition, key.bucket);
    let mut scanner = scan
        .limit(limit)
        .and_then(|scan| scan.create_bucket_batch_scanner(bucket))
        .map_err(|cause| Error::fluss("create_bucket_batch_scanner", cause))?;
    let batch = call("limit_scan", SCAN_TIMEOUT, scanner.next_batch())
        .await?
        .map(|b| b.into_batch());
    let Some(batch) = batch else {
        return Err(Error::SnapshotUnanswered { key });
    };
    if batch.num_rows() > cap {
        return Ok(Taken::TooLarge { cap });
    }
    let h1 = high_watermark(table, key, names).await?;
    let batch = match filter {
        Some(filter) => filter.retain(&batch)?,
        None => batch,
    };
    let report = Report {
        key,
        rows: batch.num_rows(),
        bytes: batch.get_array_memory_size(),
        started,
        continue_at: h0,
        exact: h1 == h0,
    };
    let row_type = Arc::new(RowType::new(table.fields.clone()));
    Snapshot::new(stamp, batch, row_type, report).map(|s| Taken::Rows(Box::new(s)))
}

#[cfg(test)]
pub(crate) mod tests {
    use arrow_array::Int64Array;
    use arrow_schema::{DataType, Field, Schema};
    use fluss::metadata::DataTypes;

    use super::*;
    use crate::message::Stamper;
    use crate::options::HeaderSet;

    pub(crate) fn snapshot(rows: i64, continue_at: i64) -> Snapshot {
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
        let key = BucketKey::bucket(0);
        let stamp = Stamper::new(1, "db.t", HeaderSet::ALL)
            .unwrap()
            .bucket(key, None)
            .unwrap();
        let report = Report {
            key,
            rows: 0,
            bytes: 0,
            started: Instant::now(),
            continue_at,
            exact: true,
        };
        Snapshot::new(&stamp, batch, row_type, report).unwrap()
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
