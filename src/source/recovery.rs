//! Getting back on track: a failed client poll, a Nack, an offset the log no longer holds.
//! Each ends with the scanner rebuilt at the source's own positions, since fluss-rs' own
//! position is unknown after an error and a re-seek can race a fetch in flight.

use fluss::error::FlussError;
use fluss::rpc::message::OffsetSpec;

use super::{FlussSource, RETRY_PAUSE};
use crate::client::connect::{self, call, CALL_TIMEOUT};
use crate::client::offsets::{self, Reset};
use crate::client::scanner::Scanner;
use crate::client::table::{self, Table};
use crate::error::{table_missing, Error, Fault, Result};
use crate::position::{BucketKey, Position, Positions};

impl FlussSource {
    /// Handles a failed client poll; `positions` are where the batch being built stands.
    /// Transient faults (including a failed re-seek) are logged at WARN and retried; a read the
    /// server's ACLs refuse, or a read of a table that was dropped, is logged at ERROR (once,
    /// then at most every 30 s) and retried, so the stream resumes by itself when READ is
    /// granted again; only
    /// `on_offset_out_of_range = "fail"` and unknown faults end the poll with an error.
    pub(super) async fn recover(&mut self, error: Error, positions: &mut Positions) -> Result<()> {
        // The read-ahead stops at an error, so the scanner must start over whatever happens
        // below: the rebuild at the end replaces it, an early return leaves it to the next poll.
        self.scanner = None;
        match error.fault() {
            Fault::OutOfRange => {
                if let Err(reset) = self.reset_out_of_range(positions).await {
                    if reset.fault() != Fault::Retry {
                        return Err(reset);
                    }
                    // The rebuilt scanner hits the same offset again and the reset is retried.
                    self.telemetry.retrying(
                        "looking up the log range of an out-of-range bucket failed",
                        &reset,
                    );
                    tokio::time::sleep(RETRY_PAUSE).await;
                }
            }
            Fault::Retry if table_dropped(&self.table, &error).await => {
                let dropped = Error::TableDropped {
                    table: self.config.qualified_table(),
                    table_id: self.table.id(),
                };
                self.telemetry.refused(&dropped);
                tokio::time::sleep(RETRY_PAUSE).await;
            }
            Fault::Retry => {
                self.telemetry.retrying("reading from Fluss failed", &error);
                tokio::time::sleep(RETRY_PAUSE).await;
            }
            Fault::Auth => {
                let refused = table::not_authorized(&self.config, error);
                self.telemetry.refused(&format!(
                    "{refused}; nothing is lost, the source keeps trying"
                ));
                tokio::time::sleep(RETRY_PAUSE).await;
            }
            Fault::Fatal => return Err(error),
        }
        // After any poll error the scanner's own position is unknown: start over from ours.
        self.rebuild(&positions.clone()).await
    }

    /// Replaces the scanner with one positioned at `positions`, dropping fetched records. A
    /// transient failure (cluster unreachable) is logged, marks the scanner stale and is
    /// retried on the next read instead of failing the stream.
    pub(super) async fn rebuild(&mut self, positions: &Positions) -> Result<()> {
        self.buckets.clear_queued();
        self.scanner = None;
        // Buckets a bounded read finished are not subscribed again; buckets taking their
        // snapshot are subscribed at the offset their changelog continues at.
        let reading = self.buckets.reading(&self.bound.unfinished(positions));
        match Scanner::build(&self.table, &reading, connect::readers(&self.config)).await {
            Ok(scanner) => {
                self.scanner = Some(scanner);
                Ok(())
            }
            Err(error) if error.fault() == Fault::Retry => {
                self.telemetry
                    .retrying("re-subscribing to the table failed", &error);
                Ok(())
            }
            Err(error) => Err(error),
        }
    }

    /// Applies `on_offset_out_of_range` to every bucket whose position left the log.
    pub(super) async fn reset_out_of_range(&mut self, positions: &mut Positions) -> Result<()> {
        let keys: Vec<BucketKey> = positions
            .iter()
            .filter(|(_, position)| !position.is_snapshot())
            .map(|(key, _)| *key)
            .collect();
        let earliest = offsets::list(
            &self.table,
            &keys,
            self.buckets.partitions(),
            OffsetSpec::Earliest,
        )
        .await?;
        let latest = offsets::list(
            &self.table,
            &keys,
            self.buckets.partitions(),
            OffsetSpec::Latest,
        )
        .await?;
        for (key, position) in positions.iter_mut() {
            let (Some(&start), Some(&end)) = (earliest.get(key), latest.get(key)) else {
                continue;
            };
            let Position::At(offset) = *position else {
                continue;
            };
            match offsets::reset(offset, start, end, self.config.on_offset_out_of_range) {
                Reset::Keep => {}
                Reset::Fail => {
                    return Err(Error::OffsetOutOfRange {
                        table: self.config.qualified_table(),
                        key: *key,
                        offset,
                        log_start: start,
                        log_end: end,
                    })
                }
                Reset::PastEnd { from, to } => {
                    self.telemetry.past_end(*key, from, to);
                    *position = Position::At(to);
                }
                Reset::Skip { from, to } => {
                    self.telemetry
                        .skipped(*key, from, to, "the log was truncated");
                    *position = Position::At(to);
                }
                Reset::Snapshot { from, start } if self.table.primary_key => {
                    self.telemetry.snapshot_again(*key, from, start);
                    *position = Position::SNAPSHOT;
                }
                Reset::Snapshot { from, start } => {
                    self.telemetry
                        .skipped(*key, from, start, "the log was truncated");
                    *position = Position::At(start);
                }
            }
        }
        Ok(())
    }

    /// Goes back to the committed positions after a Nack (if Fluss is unreachable, the next
    /// poll retries the re-seek: the Nack must not stop the stream).
    pub(super) async fn rewind(&mut self) -> Result<()> {
        let committed = self.progress.committed().clone();
        // Snapshots not acknowledged whole are taken again (their buckets are pending in
        // `committed`).
        self.buckets.clear_all();
        self.discard_ahead().await;
        self.rebuild(&committed).await
    }
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
