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

//! Getting back on track: a failed client poll, a Nack, an offset outside the log, an outage
//! the liveness probe notices. [`Scan`] is the changelog scanner, or the need to build
//! it again: fluss-rs' own position is unknown after an error and a re-seek can race a fetch
//! in flight, so every recovery ends with the scanner rebuilt at the source's own positions.

use std::time::Duration;

use fluss::error::FlussError;
use fluss::rpc::message::OffsetSpec;

use crate::client::connect::{CALL_TIMEOUT, call};
use crate::client::discovery::PartitionNames;
use crate::client::offsets::{self, Reset};
use crate::client::scanner::Scanner;
use crate::client::table::{self, Table};
use crate::context::Context;
use crate::error::{Error, Fault, RETRY_PAUSE, Result, table_missing};
use crate::position::progress::Progress;
use crate::position::{BucketKey, Offsets, Position, Positions};
use crate::source::watermarks::Watermarks;

/// How long the liveness probe may take.
const LIVENESS_TIMEOUT: Duration = Duration::from_secs(5);

/// The changelog scanner, or the need to build it again before the table is read.
pub(super) enum Scan {
    /// Subscribed to every bucket read, at the source's positions.
    Reading(Scanner),
    /// To be rebuilt at the source's positions: a rebuild (after a fault or a Nack) failed
    /// transiently, the cluster answered again after an outage, or a poll error ended the
    /// poll (the read-ahead task stops at an error).
    Stale,
}

impl Scan {
    /// The scanner, `None` while it must be rebuilt.
    pub(super) fn scanner(&mut self) -> Option<&mut Scanner> {
        match self {
            Self::Reading(scanner) => Some(scanner),
            Self::Stale => None,
        }
    }

    /// Whether the scanner must be rebuilt before the table is read.
    pub(super) fn is_stale(&self) -> bool {
        matches!(self, Self::Stale)
    }

    /// Drops the scanner: the next read rebuilds it at the source's positions.
    pub(super) fn go_stale(&mut self) {
        *self = Self::Stale;
    }

    /// Replaces the scanner with one subscribed at `reading`, dropping what it fetched. A
    /// transient failure (cluster unreachable) is logged and leaves the scan stale, to be
    /// retried on the next read instead of failing the stream.
    pub(super) async fn rebuild(&mut self, reading: &Positions, ctx: &mut Context) -> Result<()> {
        // The old scanner's read-ahead tasks end before the new one subscribes.
        self.go_stale();
        match Scanner::build(&ctx.table, reading, ctx.fetch.readers).await {
            Ok(scanner) => {
                *self = Self::Reading(scanner);
                Ok(())
            }
            Err(error) if error.fault() == Fault::Retry => {
                ctx.telemetry
                    .retrying("re-subscribing to the table failed", &error);
                Ok(())
            }
            Err(error) => Err(error),
        }
    }

    /// Subscribes (or moves) buckets not read yet. A failure leaves the scan stale (a rebuild
    /// subscribes every bucket at its position) and is returned; while stale, the rebuild
    /// subscribes them.
    pub(super) async fn subscribe(&mut self, positions: &Positions) -> Result<()> {
        let Self::Reading(scanner) = self else {
            return Ok(());
        };
        let subscribed = scanner.subscribe(positions).await;
        if subscribed.is_err() {
            self.go_stale();
        }
        subscribed
    }

    /// Stops reading bucket `key` (done, or its partition dropped). A failure only costs
    /// fetches or warnings of the client, so it is ignored.
    pub(super) async fn unsubscribe(&self, key: BucketKey) {
        if let Self::Reading(scanner) = self {
            let _ = scanner.unsubscribe(key).await;
        }
    }

    /// Handles a failed client poll; `positions` are where the batch being built stands. The
    /// scan is left stale, to be rebuilt at `positions` by the caller.
    /// Transient faults (including a failed re-seek) are logged at WARN and retried; a read the
    /// server's ACLs refuse, or a read of a table that was dropped, is logged at ERROR (once,
    /// then at most every 30 s) and retried, so the stream resumes by itself when READ is
    /// granted again; only `on_offset_out_of_range = "fail"` and unknown faults end the poll
    /// with an error.
    pub(super) async fn recover(
        &mut self,
        error: Error,
        positions: &mut Positions,
        partitions: &PartitionNames,
        ctx: &mut Context,
    ) -> Result<()> {
        // The read-ahead stops at an error, so the scanner must start over whatever happens
        // below: the caller's rebuild replaces it, an early return leaves it to the next poll.
        self.go_stale();
        match error.fault() {
            Fault::OutOfRange => {
                if let Err(reset) = reset_out_of_range(positions, partitions, ctx).await {
                    if reset.fault() != Fault::Retry {
                        return Err(reset);
                    }
                    // The rebuilt scanner hits the same offset again and the reset is retried.
                    ctx.telemetry.retrying(
                        "looking up the log range of an out-of-range bucket failed",
                        &reset,
                    );
                    tokio::time::sleep(RETRY_PAUSE).await;
                }
            }
            Fault::Retry if table_dropped(&ctx.table, &error).await => {
                let dropped = Error::TableDropped {
                    table: ctx.config.qualified_table(),
                    table_id: ctx.table.id(),
                };
                ctx.telemetry.refused(&dropped);
                tokio::time::sleep(RETRY_PAUSE).await;
            }
            Fault::Retry => {
                ctx.telemetry.retrying("reading from Fluss failed", &error);
                tokio::time::sleep(RETRY_PAUSE).await;
            }
            Fault::Auth => {
                let refused = table::not_authorized(&ctx.config, error);
                ctx.telemetry.refused(&format!(
                    "{refused}; nothing is lost, the source keeps trying"
                ));
                tokio::time::sleep(RETRY_PAUSE).await;
            }
            Fault::Fatal => return Err(error),
        }
        Ok(())
    }

    /// The liveness probe, while no records arrive: asks the cluster for the high watermarks
    /// of the next slice of `watermarks` (a partitioned table's partitions a slice at a time),
    /// which keeps them.
    /// A failure is a WARN (fluss-rs itself only retries silently); the first answer after
    /// one leaves the scan stale, so reading resumes even if the client's fetch state did not
    /// survive the outage.
    ///
    /// A position past a high watermark means the log lost its tail (a single-replica tablet
    /// server killed before its high-watermark checkpoint): the scanner would wait silently
    /// and later skip the rows written at the reused offsets, so it is handled like any other
    /// offset out of range, the new positions of the probed buckets committed.
    pub(super) async fn probe(
        &mut self,
        watermarks: &mut Watermarks,
        progress: &mut Progress,
        partitions: &PartitionNames,
        ctx: &mut Context,
    ) -> Result<()> {
        let keys = watermarks.next_slice(progress.current(), partitions);
        if keys.is_empty() {
            return Ok(());
        }
        let probe = tokio::time::timeout(
            LIVENESS_TIMEOUT,
            offsets::list(&ctx.table, &keys, partitions, OffsetSpec::Latest),
        )
        .await
        .unwrap_or(Err(Error::Timeout {
            op: "list_offsets",
            after: LIVENESS_TIMEOUT,
        }));
        let latest = match probe {
            Ok(latest) => latest,
            Err(error) => {
                ctx.telemetry
                    .retrying("no records and Fluss does not answer", &error);
                return Ok(());
            }
        };
        watermarks.record(&latest, ctx.telemetry.metrics());
        if ctx.telemetry.faulted() {
            ctx.telemetry.recovered();
            self.go_stale();
        }
        if past_end(progress.current(), &latest) {
            let mut positions: Positions = keys
                .iter()
                .filter_map(|key| Some((*key, *progress.current().get(key)?)))
                .collect();
            match reset_out_of_range(&mut positions, partitions, ctx).await {
                Ok(()) => {
                    for (key, position) in positions {
                        progress.set_committed(key, position);
                    }
                    ctx.telemetry.metrics().committed(progress.committed());
                    self.go_stale();
                }
                Err(error) if error.fault() == Fault::Retry => ctx
                    .telemetry
                    .retrying("looking up the log range of a bucket failed", &error),
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }
}

/// Whether some position of `positions` is past its bucket's high watermark in `latest`.
fn past_end(positions: &Positions, latest: &Offsets) -> bool {
    positions.iter().any(|(key, position)| {
        latest
            .get(key)
            .is_some_and(|end| position.offset().is_some_and(|next| next > *end))
    })
}

/// Applies `on_offset_out_of_range` to every bucket whose position left the log.
async fn reset_out_of_range(
    positions: &mut Positions,
    partitions: &PartitionNames,
    ctx: &Context,
) -> Result<()> {
    let Context {
        table,
        config,
        telemetry,
        ..
    } = ctx;
    let keys: Vec<BucketKey> = positions
        .iter()
        .filter(|(_, position)| !position.is_snapshot())
        .map(|(key, _)| *key)
        .collect();
    let earliest = offsets::list(table, &keys, partitions, OffsetSpec::Earliest).await?;
    let latest = offsets::list(table, &keys, partitions, OffsetSpec::Latest).await?;
    for (key, position) in positions.iter_mut() {
        let (Some(&start), Some(&end)) = (earliest.get(key), latest.get(key)) else {
            continue;
        };
        let Position::At(offset) = *position else {
            continue;
        };
        match offsets::reset(offset, start, end, config.on_offset_out_of_range) {
            Reset::Keep => {}
            Reset::Fail => {
                return Err(Error::OffsetOutOfRange {
                    table: config.qualified_table(),
                    key: *key,
                    offset,
                    log_start: start,
                    log_end: end,
                });
            }
            Reset::PastEnd { from, to } => {
                telemetry.past_end(*key, from, to);
                *position = Position::At(to);
            }
            Reset::Skip { from, to } => {
                telemetry.skipped(*key, from, to, "the log was truncated");
                *position = Position::At(to);
            }
            Reset::Snapshot { from, start } if table.primary_key => {
                telemetry.snapshot_again(*key, from, start);
                *position = Position::SNAPSHOT;
            }
            Reset::Snapshot { from, start } => {
                telemetry.skipped(*key, from, start, "the log was truncated");
                *position = Position::At(start);
            }
        }
    }
    Ok(())
}

/// Whether a failed read means the table is gone: the server could not find it (it says so
/// only in text: "Failed to get tables"), and a lookup finds no table, or another one, under
/// its name.
async fn table_dropped(table: &Table, error: &Error) -> bool {
    let Error::Fluss { cause, .. } = error else {
        return false;
    };
    if !table_missing(cause) {
        return false;
    }
    match call(
        "get_table_info",
        CALL_TIMEOUT,
        table.admin.get_table_info(&table.path),
    )
    .await
    {
        Ok(info) => info.get_table_id() != table.id(),
        Err(Error::Fluss { cause, .. }) => cause.api_error() == Some(FlussError::TableNotExist),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::position::samples::{offsets, positions};

    #[test]
    fn a_position_past_a_high_watermark_is_past_the_end() {
        let at_end = offsets();
        assert!(
            !past_end(&positions(), &at_end),
            "at the end is not past it"
        );
        let mut ahead = positions();
        ahead.insert(BucketKey::bucket(2), Position::At(1));
        assert!(past_end(&ahead, &at_end));
        let mut snapshot = positions();
        snapshot.insert(BucketKey::bucket(2), Position::SNAPSHOT);
        assert!(
            !past_end(&snapshot, &Offsets::from([(BucketKey::bucket(2), -1)])),
            "a bucket in its snapshot phase has no offset to be past"
        );
        assert!(
            !past_end(&ahead, &Offsets::new()),
            "a bucket without an answer is not judged"
        );
    }

    #[test]
    fn a_stale_scan_has_no_scanner_until_rebuilt() {
        let mut scan = Scan::Stale;
        assert!(scan.is_stale());
        assert!(scan.scanner().is_none());
        scan.go_stale();
        assert!(scan.is_stale());
    }
}
