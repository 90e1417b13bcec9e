//! Reading the table: one fluss-rs record scanner subscribed to every bucket (and partition),
//! read ahead by a background task, and rebuilt from known positions whenever it must go back.
//!
//! Read-ahead: a client poll also decompresses and decodes the fetched batches, which is about
//! half the CPU a log row costs before it is encoded. A task of its own keeps polling while the
//! source encodes the previous records and waits for the runtime's answer, so both cores work.
//! It stays at most one poll result ahead (a channel of one), which bounds the memory it holds.
//!
//! The record scanner (`LogScanner`) is used for log and primary-key tables alike: it is the
//! only one that carries change types and commit timestamps, and it reports offsets out of
//! range as errors instead of swallowing them like the Arrow batch scanner does. Its records
//! still point into the fetched Arrow batches, which the encoders read column by column.

pub mod offsets;
pub mod partitions;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use fluss::client::{LogScanner, TableScan};
use fluss::record::ScanRecords;
use fluss::PartitionId;
use snafu::ResultExt;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::connect::{call, Table, CALL_TIMEOUT};
use crate::error::{Error, FlussSnafu, Result};
use crate::state::{BucketKey, Positions};

/// Extra time a poll may take beyond its own timeout before it counts as hung: a poll also
/// sends the next fetch round and may refresh metadata, which have no timeout in fluss-rs.
const POLL_GRACE: Duration = Duration::from_secs(30);
/// Timeout of each read-ahead poll. It only matters while the table is idle, where it sets how
/// often the reader wakes up to see whether its scanner was dropped.
const READ_AHEAD_POLL: Duration = Duration::from_millis(500);

/// A record scanner, the buckets it is subscribed to, and the task reading it ahead.
pub struct Scanner {
    inner: Arc<LogScanner>,
    results: mpsc::Receiver<Result<ScanRecords>>,
    reader: JoinHandle<()>,
}

impl Drop for Scanner {
    fn drop(&mut self) {
        // The reader may be inside a client poll; cutting it there loses what that poll had
        // taken from the client, which is fine because the client scanner goes with it.
        self.reader.abort();
    }
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
        let inner = Arc::new(inner);
        subscribe(&inner, positions).await?;
        let (tx, results) = mpsc::channel(1);
        let reader = tokio::spawn(read_ahead(inner.clone(), tx));
        Ok(Self {
            inner,
            results,
            reader,
        })
    }

    /// Subscribes (or moves) the given buckets; an already subscribed bucket is re-seeked.
    /// Only for buckets not read yet: records of the old position may already be read ahead.
    pub async fn subscribe(&self, positions: &Positions) -> Result<()> {
        subscribe(&self.inner, positions).await
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
    /// After an error the reader has stopped: rebuild the scanner.
    pub async fn poll(&mut self, timeout: Duration) -> Result<ScanRecords> {
        match tokio::time::timeout(timeout, self.results.recv()).await {
            Err(_) => Ok(ScanRecords::empty()),
            Ok(Some(polled)) => polled,
            Ok(None) => Err(Error::ReaderStopped),
        }
    }
}

/// The read-ahead loop: polls until the receiver is gone, forwarding every non-empty result
/// and stopping after the first error (the source rebuilds the scanner after any error).
async fn read_ahead(scanner: Arc<LogScanner>, results: mpsc::Sender<Result<ScanRecords>>) {
    loop {
        let polled = call(
            "poll",
            READ_AHEAD_POLL + POLL_GRACE,
            scanner.poll(READ_AHEAD_POLL),
        )
        .await;
        let failed = polled.is_err();
        match polled {
            Ok(records) if records.is_empty() => {
                if results.is_closed() {
                    return;
                }
            }
            polled => {
                if results.send(polled).await.is_err() || failed {
                    return;
                }
            }
        }
    }
}

/// Subscribes `scanner` to `positions` (a re-subscribe moves a bucket).
async fn subscribe(scanner: &LogScanner, positions: &Positions) -> Result<()> {
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
        call("subscribe", CALL_TIMEOUT, scanner.subscribe_buckets(&plain)).await?;
    }
    if !partitioned.is_empty() {
        call(
            "subscribe_partition",
            CALL_TIMEOUT,
            scanner.subscribe_partition_buckets(&partitioned),
        )
        .await?;
    }
    Ok(())
}
