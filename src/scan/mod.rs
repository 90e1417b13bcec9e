//! Reading the table: one fluss-rs record scanner subscribed to every bucket (and partition),
//! polled with a deadline, and rebuilt from known positions whenever it must go back.
//!
//! The record scanner (`LogScanner`) is used for log and primary-key tables alike: it is the
//! only one that carries change types and commit timestamps, and it reports offsets out of
//! range as errors instead of swallowing them like the Arrow batch scanner does. Its records
//! still point into the fetched Arrow batches, which the encoders read column by column.

pub mod offsets;
pub mod partitions;

use std::collections::HashMap;
use std::time::Duration;

use fluss::client::{LogScanner, TableScan};
use fluss::record::ScanRecords;
use fluss::PartitionId;
use snafu::ResultExt;

use crate::connect::{call, Table, CALL_TIMEOUT};
use crate::error::{FlussSnafu, Result};
use crate::state::{BucketKey, Positions};

/// Extra time a poll may take beyond its own timeout before it counts as hung: a poll also
/// sends the next fetch round and may refresh metadata, which have no timeout in fluss-rs.
const POLL_GRACE: Duration = Duration::from_secs(30);

/// A record scanner and the buckets it is subscribed to.
pub struct Scanner {
    inner: LogScanner,
}

impl Scanner {
    /// Builds a scanner positioned at `positions` (every bucket the source reads).
    pub async fn build(table: &Table, positions: &Positions) -> Result<Self> {
        let mut scan = TableScan::new(&table.conn, table.info.clone(), table.conn.get_metadata());
        if let Some(projection) = &table.projection {
            scan = scan
                .project(projection)
                .context(FlussSnafu { op: "project" })?;
        }
        let inner = scan.create_log_scanner().context(FlussSnafu {
            op: "create_log_scanner",
        })?;
        let scanner = Self { inner };
        scanner.subscribe(positions).await?;
        Ok(scanner)
    }

    /// Subscribes (or moves) the given buckets; an already subscribed bucket is re-seeked.
    pub async fn subscribe(&self, positions: &Positions) -> Result<()> {
        if positions.is_empty() {
            return Ok(());
        }
        let mut plain: HashMap<i32, i64> = HashMap::new();
        let mut partitioned: HashMap<(PartitionId, i32), i64> = HashMap::new();
        for (key, offset) in positions {
            match key.partition {
                None => {
                    plain.insert(key.bucket, *offset);
                }
                Some(p) => {
                    partitioned.insert((p, key.bucket), *offset);
                }
            }
        }
        if !plain.is_empty() {
            call(
                "subscribe",
                CALL_TIMEOUT,
                self.inner.subscribe_buckets(&plain),
            )
            .await?;
        }
        if !partitioned.is_empty() {
            call(
                "subscribe_partition",
                CALL_TIMEOUT,
                self.inner.subscribe_partition_buckets(&partitioned),
            )
            .await?;
        }
        Ok(())
    }

    /// Stops reading one bucket of a partition (it was dropped).
    pub async fn unsubscribe(&self, key: BucketKey) -> Result<()> {
        match key.partition {
            Some(p) => {
                call(
                    "unsubscribe_partition",
                    CALL_TIMEOUT,
                    self.inner.unsubscribe_partition(p, key.bucket),
                )
                .await
            }
            None => {
                call(
                    "unsubscribe",
                    CALL_TIMEOUT,
                    self.inner.unsubscribe(key.bucket),
                )
                .await
            }
        }
    }

    /// Waits up to `timeout` for records; an empty result means none arrived in time.
    pub async fn poll(&self, timeout: Duration) -> Result<ScanRecords> {
        call("poll", timeout + POLL_GRACE, self.inner.poll(timeout)).await
    }
}
