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
use std::time::{Duration, Instant};

use arrow_array::RecordBatch;
use fluss::client::TableScan;
use fluss::metadata::{RowType, TableBucket};
use fluss::rpc::message::OffsetSpec;

use super::connect::call;
use super::discovery::PartitionNames;
use super::offsets;
use super::table::Table;
use crate::error::{Error, Result};
use crate::position::{BucketKey, Offset};

/// How long one limit scan may take: the server reads the whole bucket under its KV read
/// lock and sends it in one response (1M rows took a few seconds on the bench machine).
const SCAN_TIMEOUT: Duration = Duration::from_secs(300);

/// What taking a bucket's snapshot found.
pub enum Taken {
    /// The bucket's rows, to hand over before its changelog.
    Rows(Scanned),
    /// The bucket holds more rows than the cap; nothing was kept.
    TooLarge {
        /// The cap it exceeded (`snapshot_max_bucket_rows`).
        cap: usize,
    },
}

/// The rows one limit scan returned, and where the bucket's changelog continues after them.
#[derive(Debug)]
pub struct Scanned {
    /// The bucket's current rows (of the scanned columns).
    pub batch: RecordBatch,
    /// The Fluss type of those rows.
    pub row_type: Arc<RowType>,
    /// When the scan started.
    pub started: Instant,
    /// The high watermark before the scan: the offset the snapshot was taken at, which its
    /// message ids and `fluss_offset` headers carry.
    pub taken_at: Offset,
    /// The offset the changelog continues at: `taken_at`, or lower (see
    /// [`Scanned::continue_from`]).
    pub continue_at: Offset,
    /// Whether the switch to the changelog is exact (no change is delivered twice).
    pub exact: bool,
}

impl Scanned {
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

/// The high watermark of one bucket.
async fn high_watermark(table: &Table, key: BucketKey, names: &PartitionNames) -> Result<Offset> {
    let offsets = offsets::list(table, &[key], names, OffsetSpec::Latest).await?;
    offsets
        .get(&key)
        .copied()
        .ok_or(Error::SnapshotUnanswered { key })
}

/// Takes the snapshot of bucket `key`, refusing more than `cap` rows (counted before any
/// `filter`, which the queue applies: the cap bounds memory).
pub async fn take(
    table: &Table,
    key: BucketKey,
    names: &PartitionNames,
    cap: usize,
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
    Ok(Taken::Rows(Scanned {
        batch,
        row_type: Arc::new(RowType::new(table.fields.clone())),
        started,
        taken_at: h0,
        continue_at: h0,
        exact: h1 == h0,
    }))
}
