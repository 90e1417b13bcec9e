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

//! Reading the table: fluss-rs record scanners subscribed to every bucket (and partition),
//! read ahead by background tasks, and rebuilt from known positions whenever they must go back.
//!
//! Read-ahead: a client poll also decompresses and decodes the fetched batches, which is about
//! half the CPU a log row costs before it is encoded. A task of its own keeps polling while the
//! source encodes the previous records and waits for the runtime's answer, so both cores work.
//! Each reader stays at most one poll result ahead, which bounds the memory it holds.
//!
//! Several readers: the buckets can be shared out among several client scanners, each read
//! ahead by its own task, so decompression runs on several cores. A bucket always belongs to
//! the same reader, so its records keep their order. Arrow IPC uses several (its encoding is
//! cheap and decompression was the limit); JSON one (its encoding is the limit).
//!
//! The record scanner (`LogScanner`) is used for log and primary-key tables alike: it is the
//! only one that carries change types and commit timestamps, and it reports offsets out of
//! range as errors instead of swallowing them like the Arrow batch scanner does. Its records
//! still point into the fetched Arrow batches, which the encoders read column by column.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use fluss::client::{LogScanner, TableScan};
use fluss::record::ScanRecords;
use fluss::{BucketId, PartitionId};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::client::connect::{CALL_TIMEOUT, call};
use crate::client::table::Table;
use crate::error::{Error, Result};
use crate::position::{BucketKey, Offset, Positions};

/// Extra time a poll may take beyond its own timeout before it counts as hung: a poll also
/// sends the next fetch round and may refresh metadata, which have no timeout in fluss-rs.
const POLL_GRACE: Duration = Duration::from_secs(30);
/// Timeout of each read-ahead poll. It only matters while the table is idle, where it sets how
/// often the reader wakes up to see whether its scanner was dropped.
const READ_AHEAD_POLL: Duration = Duration::from_millis(500);

/// The record scanners, the buckets they are subscribed to, and the tasks reading them ahead.
pub struct Scanner {
    readers: Vec<Reader>,
    results: mpsc::Receiver<Result<ScanRecords>>,
}

/// One client scanner and the task polling it.
struct Reader {
    scanner: Arc<LogScanner>,
    task: JoinHandle<()>,
}

impl Drop for Reader {
    fn drop(&mut self) {
        // The reader may be inside a client poll; cutting it there loses what that poll had
        // taken from the client, which is fine because the client scanner goes with it.
        self.task.abort();
    }
}

impl Scanner {
    /// Builds `readers` scanners (at most one per bucket) positioned at `positions` (every
    /// bucket the source reads).
    pub async fn build(table: &Table, positions: &Positions, readers: usize) -> Result<Self> {
        let count = readers.clamp(1, positions.len().max(1));
        // The table goes back into the client's metadata first. When no tablet server is
        // reachable, fluss-rs starts its metadata over from the bootstrap servers, without the
        // table; its scanners' next partition lookup then panics on the missing table (a
        // reader that stops, which brings the source here), and every scanner built on that
        // metadata would panic the same way.
        call(
            "update_table_metadata",
            CALL_TIMEOUT,
            table.conn.get_metadata().update_table_metadata(&table.path),
        )
        .await?;
        let mut scanners = Vec::with_capacity(count);
        for _ in 0..count {
            // Every batch keeps the schema it was written with (fluss-rs aligns them all to the
            // open-time schema by default): columns added while reading reach the encoders,
            // which look each batch's version up (see `crate::schemas`). A projection pins
            // the columns either way.
            let mut scan =
                TableScan::new(&table.conn, table.info.clone(), table.conn.get_metadata())
                    .with_fixed_schema(false);
            if let Some(projection) = &table.projection {
                scan = scan
                    .project(projection)
                    .map_err(|cause| Error::fluss("project", cause))?;
            }
            if let Some(predicate) = &table.pushdown {
                scan = scan
                    .filter(predicate.clone())
                    .map_err(|cause| Error::fluss("filter", cause))?;
            }
            let scanner = scan
                .create_log_scanner()
                .map_err(|cause| Error::fluss("create_log_scanner", cause))?;
            scanners.push(Arc::new(scanner));
        }
        for (share, scanner) in scanners.iter().enumerate() {
            subscribe(scanner, &share_of(positions, share, count)).await?;
        }
        let (tx, results) = mpsc::channel(count);
        let readers = scanners
            .into_iter()
            .map(|scanner| Reader {
                task: tokio::spawn(read_ahead(scanner.clone(), tx.clone())),
                scanner,
            })
            .collect();
        Ok(Self { readers, results })
    }

    /// Subscribes (or moves) the given buckets; an already subscribed bucket is re-seeked.
    /// Only for buckets not read yet: records of the old position may already be read ahead.
    pub async fn subscribe(&self, positions: &Positions) -> Result<()> {
        let count = self.readers.len();
        for (share, reader) in self.readers.iter().enumerate() {
            subscribe(&reader.scanner, &share_of(positions, share, count)).await?;
        }
        Ok(())
    }

    /// Stops reading one bucket of a partition (it was dropped).
    pub async fn unsubscribe(&self, key: BucketKey) -> Result<()> {
        let scanner = &self.readers[reader_of(&key, self.readers.len())].scanner;
        match key.partition {
            Some(p) => {
                call(
                    "unsubscribe_partition",
                    CALL_TIMEOUT,
                    scanner.unsubscribe_partition(p, key.bucket),
                )
                .await
            }
            None => call("unsubscribe", CALL_TIMEOUT, scanner.unsubscribe(key.bucket)).await,
        }
    }

    /// Waits up to `timeout` for records; an empty result means none arrived in time.
    /// After an error the reader has stopped: rebuild the scanner.
    pub async fn poll(&mut self, timeout: Duration) -> Result<ScanRecords> {
        match tokio::time::timeout(timeout, self.results.recv()).await {
            // A reader ends only after sending its error, which `recv` hands out first; one
            // that ended without a result panicked, and its buckets would stall unseen.
            Err(_) if self.readers.iter().any(|r| r.task.is_finished()) => {
                Err(Error::ReaderStopped)
            }
            Err(_) => Ok(ScanRecords::empty()),
            Ok(Some(polled)) => polled,
            Ok(None) => Err(Error::ReaderStopped),
        }
    }
}

/// Which reader reads `key`: buckets (and partitions) are dealt out in turn.
fn reader_of(key: &BucketKey, readers: usize) -> usize {
    let partition = key.partition.unwrap_or(0).unsigned_abs() as usize;
    (key.bucket.unsigned_abs() as usize).wrapping_add(partition) % readers
}

/// The positions reader `share` of `readers` reads.
fn share_of(positions: &Positions, share: usize, readers: usize) -> Positions {
    positions
        .iter()
        .filter(|(key, _)| reader_of(key, readers) == share)
        .map(|(key, offset)| (*key, *offset))
        .collect()
}

/// The read-ahead loop: polls until the receiver is gone, forwarding every non-empty result
/// and stopping after the first error (the source rebuilds the scanner after any error). It
/// takes a slot in the channel before it polls, so no decoded result waits outside it, and
/// gives the slot back after a poll that found nothing, so an idle reader never keeps a busy
/// one waiting.
async fn read_ahead(scanner: Arc<LogScanner>, results: mpsc::Sender<Result<ScanRecords>>) {
    loop {
        let Ok(slot) = results.reserve().await else {
            return;
        };
        let polled = call(
            "poll",
            READ_AHEAD_POLL + POLL_GRACE,
            scanner.poll(READ_AHEAD_POLL),
        )
        .await;
        match polled {
            Ok(records) if records.is_empty() => drop(slot),
            polled => {
                let failed = polled.is_err();
                slot.send(polled);
                if failed {
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
    let mut plain: HashMap<BucketId, Offset> = HashMap::new();
    let mut partitioned: HashMap<(PartitionId, BucketId), Offset> = HashMap::new();
    // A bucket in its snapshot phase is read from its changelog only once its snapshot is
    // taken (at the offset the snapshot gives).
    for (key, offset) in positions
        .iter()
        .filter_map(|(key, position)| Some((key, position.offset()?)))
    {
        match key.partition {
            None => {
                plain.insert(key.bucket, offset);
            }
            Some(p) => {
                partitioned.insert((p, key.bucket), offset);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::position::Position;

    #[test]
    fn shares_split_the_buckets_without_overlap_or_loss() {
        let mut positions = Positions::new();
        for bucket in 0..5 {
            positions.insert(
                BucketKey::bucket(bucket),
                Position::At(i64::from(bucket) * 10),
            );
            for partition in [3, 4] {
                positions.insert(
                    BucketKey {
                        partition: Some(partition),
                        bucket,
                    },
                    Position::At(7),
                );
            }
        }
        for readers in 1..=4 {
            let shares: Vec<Positions> = (0..readers)
                .map(|share| share_of(&positions, share, readers))
                .collect();
            let mut joined = Positions::new();
            for share in &shares {
                for (key, offset) in share {
                    assert!(
                        joined.insert(*key, *offset).is_none(),
                        "{key} in two shares"
                    );
                    assert_eq!(
                        share_of(&positions, reader_of(key, readers), readers).get(key),
                        Some(offset)
                    );
                }
            }
            assert_eq!(joined, positions, "{readers} readers");
            assert!(
                shares.iter().all(|s| !s.is_empty()),
                "every reader gets buckets"
            );
        }
    }
}
