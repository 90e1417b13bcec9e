//! `FlussSource`: the [`Source`] the runtime drives. It wires the modules together: open
//! checks (connect), positions (state), reading (scan), message building (encode).
//!
//! Delivery: `poll` gathers records from several client polls into one batch, stages the next
//! offset of every bucket it consumed and puts those positions into the batch's state; the
//! runtime persists that state before it acks. `on_batch_result(Ack)` commits the staged
//! positions; `Nack` rebuilds the scanner at the committed positions, so the same rows come
//! again (a plain re-seek can race an in-flight fetch in fluss-rs and skip rows).
//!
//! In JSON mode the source polls ahead ([`Source::poll_ahead`]): the SDK builds the next batch
//! while the runtime decodes and sends the previous one, so encoding and the runtime's work
//! overlap on two cores. Each answered batch therefore has its own staged positions ([`Progress`]); a
//! Nack drops them all, including those of the batch prepared behind it.

use std::time::{Duration, Instant};

use fluss::rpc::message::OffsetSpec;
use iggy_connector_sdk::{ConnectorState, ProducedMessages, Schema, Source, SourceBatchResult};

use crate::batch::Batch;
use crate::bucket::{BucketKey, Positions};
use crate::buckets::Buckets;
use crate::config::Config;
use crate::connect::{self, Table};
use crate::encode::{cdc::ChangeMessages, ipc::IpcMessages, rows::RowMessages, Encoder};
use crate::error::{Error, Fault, Result};
use crate::message::Stamper;
use crate::options::{Choice, PayloadFormat, PayloadSchema};
use crate::runtime_json;
use crate::scan::offsets::{self, Reset};
use crate::scan::partitions::{self, PartitionNames};
use crate::scan::Scanner;
use crate::state::{Progress, SavedState, Tally};
use crate::telemetry::Telemetry;

/// Pause after a failed client poll before trying again.
const RETRY_PAUSE: Duration = Duration::from_millis(500);
/// fluss-rs' `poll` returns nothing, without an error, while the servers are down. After this
/// long without records the source asks the cluster for its offsets, so an outage shows up as
/// a WARN instead of a silent stall.
const LIVENESS_INTERVAL: Duration = Duration::from_secs(5);
/// How long that liveness probe may take.
const LIVENESS_TIMEOUT: Duration = Duration::from_secs(5);

/// The Fluss source connector.
pub struct FlussSource {
    config: Config,
    table: Table,
    /// `None` when the scanner must be rebuilt at `progress.current()` before the table is
    /// read again: a rebuild (after a fault or a Nack) failed transiently, the cluster
    /// answered again after an outage, or a poll error ended the poll (the read-ahead task
    /// stops at an error).
    scanner: Option<Scanner>,
    progress: Progress,
    buckets: Buckets,
    encoder: Box<dyn Encoder>,
    schema: Schema,
    last_discovery: Instant,
    /// Since when client polls return nothing (`None` while records arrive).
    idle_since: Option<Instant>,
    last_liveness: Instant,
    telemetry: Telemetry,
}

impl Source for FlussSource {
    type Error = Error;

    async fn open(id: u32, config_json: &str, state: Option<ConnectorState>) -> Result<Self> {
        let config = Config::parse(config_json)?;
        // Corrupt state fails before any network work, so the error is immediate.
        let saved = state.as_ref().map(SavedState::decode).transpose()?;
        let conn = connect::connect(&config).await?;
        let table = Table::resolve(conn, &config).await?;
        let qualified = config.qualified_table();
        if let Some(saved) = &saved {
            saved.check_table(table.id(), &qualified)?;
        }
        let encoder = encoder_for(&config, &table)?;
        let key_order = runtime_json::check(&config, &table.fields, table.primary_key)?;
        let partitions = if table.info.is_partitioned() {
            partitions::list(&table).await?
        } else {
            PartitionNames::new()
        };
        let all_keys = bucket_keys(&table, partitions.keys().copied());
        let mut committed = Positions::new();
        let mut starts = Vec::with_capacity(all_keys.len());
        let mut fresh = Vec::new();
        for key in &all_keys {
            match saved.as_ref().and_then(|s| s.positions.get(key)) {
                Some(offset) => {
                    committed.insert(*key, *offset);
                    starts.push((*key, *offset, "saved state"));
                }
                None => fresh.push(*key),
            }
        }
        let resolved =
            offsets::starting(&table, &fresh, &partitions, config.starting_offset).await?;
        for (key, offset) in resolved {
            committed.insert(key, offset);
            starts.push((key, offset, "starting_offset"));
        }
        starts.sort_by_key(|(k, _, _)| *k);
        let stamper = Stamper::new(table.id(), &qualified, config.headers)?;
        let scanner = Scanner::build(&table, &committed, connect::readers(&config)).await?;
        let telemetry = Telemetry::new(id, &qualified, config.verbose_logging);
        telemetry.opened(&summary(&config, &table, partitions.len()), &starts);
        if let Some(warning) = key_order {
            telemetry.key_order(&warning);
        }
        Ok(Self {
            schema: batch_schema(&config),
            config,
            table,
            scanner: Some(scanner),
            progress: Progress::new(committed),
            buckets: Buckets::new(stamper, partitions, &all_keys)?,
            encoder,
            last_discovery: Instant::now(),
            idle_since: None,
            last_liveness: Instant::now(),
            telemetry,
        })
    }

    async fn poll(&mut self) -> Result<ProducedMessages> {
        self.maintain().await?;
        let deadline = Instant::now() + self.config.poll_interval;
        let mut batch = Batch::new(self.config.batch_size, self.config.max_batch_bytes);
        let mut positions = self.progress.current().clone();
        let mut encode_time = Duration::ZERO;
        let mut records = 0;
        loop {
            let started = Instant::now();
            records += self
                .buckets
                .drain(self.encoder.as_mut(), &mut batch, &mut positions)?;
            encode_time += started.elapsed();
            let now = Instant::now();
            if batch.is_full() || now >= deadline {
                break;
            }
            let Some(scanner) = self.scanner.as_mut() else {
                self.rebuild(&positions.clone()).await?;
                if self.scanner.is_none() {
                    // Still unreachable: hand over what there is and try again next poll.
                    tokio::time::sleep(RETRY_PAUSE.min(deadline - now)).await;
                    break;
                }
                continue;
            };
            match scanner.poll(deadline - now).await {
                Ok(records) => {
                    if records.is_empty() {
                        self.idle_since.get_or_insert(now);
                    } else {
                        self.idle_since = None;
                        self.telemetry.recovered();
                        for (bucket, records) in records.into_records_by_buckets() {
                            let key = BucketKey {
                                partition: bucket.partition_id(),
                                bucket: bucket.bucket_id(),
                            };
                            self.buckets.queue(key, records);
                        }
                    }
                }
                Err(error) => self.recover(error, &mut positions).await?,
            }
        }
        // Only a batch that moved some position is sent (and answered), so only such a batch
        // is staged: with poll-ahead, `current()` is the batch in flight.
        let state = if &positions != self.progress.current() {
            let state =
                SavedState::encode(self.table.id(), &self.config.qualified_table(), &positions)?;
            self.progress.stage(
                positions,
                Tally {
                    messages: batch.len() as u64,
                    rows: records as u64,
                },
            );
            Some(state)
        } else {
            None
        };
        if !batch.is_empty() {
            self.telemetry
                .batch(batch.len(), records, batch.bytes(), encode_time);
        }
        Ok(ProducedMessages {
            schema: self.schema,
            messages: batch.into_messages(),
            state,
        })
    }

    /// JSON: the next batch is encoded while the runtime decodes the previous one's messages
    /// (2M rows: 291 K instead of 232 K messages/s). Not for Arrow IPC: its batches are a few
    /// large messages, cheap to encode and decode, and a second batch of them in memory only
    /// adds page faults (2M rows: 0.74 s instead of 0.64 s, peak RSS 103 instead of 85 MiB).
    fn poll_ahead(&self) -> bool {
        self.config.payload_format == PayloadFormat::Json
    }

    async fn on_batch_result(&mut self, result: SourceBatchResult) -> Result<()> {
        match result {
            SourceBatchResult::Ack => {
                let tally = self.progress.commit();
                self.telemetry.acknowledged(tally);
                Ok(())
            }
            SourceBatchResult::Nack => {
                self.progress.rollback();
                self.rewind().await
            }
        }
    }

    async fn close(&mut self) -> Result<()> {
        self.buckets.clear_queued();
        self.telemetry.closed();
        Ok(())
    }
}

impl FlussSource {
    /// Handles a failed client poll; `positions` are where the batch being built stands.
    /// Transient faults (including a failed re-seek) are logged at WARN and retried; only
    /// `on_offset_out_of_range = "fail"`, refused credentials and unknown faults end the poll
    /// with an error.
    async fn recover(&mut self, error: Error, positions: &mut Positions) -> Result<()> {
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
            Fault::Retry => {
                self.telemetry.retrying("reading from Fluss failed", &error);
                tokio::time::sleep(RETRY_PAUSE).await;
            }
            Fault::Auth | Fault::Fatal => return Err(error),
        }
        // After any poll error the scanner's own position is unknown: start over from ours.
        self.rebuild(&positions.clone()).await
    }

    /// Replaces the scanner with one positioned at `positions`, dropping fetched records. A
    /// transient failure (cluster unreachable) is logged, marks the scanner stale and is
    /// retried on the next read instead of failing the stream.
    async fn rebuild(&mut self, positions: &Positions) -> Result<()> {
        self.buckets.clear_queued();
        self.scanner = None;
        match Scanner::build(&self.table, positions, connect::readers(&self.config)).await {
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
    async fn reset_out_of_range(&mut self, positions: &mut Positions) -> Result<()> {
        let keys: Vec<BucketKey> = positions.keys().copied().collect();
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
            match offsets::reset(*position, start, end, self.config.on_offset_out_of_range) {
                Reset::Keep => {}
                Reset::Fail => {
                    return Err(Error::OffsetOutOfRange {
                        table: self.config.qualified_table(),
                        key: *key,
                        offset: *position,
                        log_start: start,
                        log_end: end,
                    })
                }
                Reset::PastEnd { from, to } => {
                    self.telemetry.past_end(*key, from, to);
                    *position = to;
                }
                Reset::Skip { from, to } => {
                    self.telemetry
                        .skipped(*key, from, to, "the log was truncated");
                    *position = to;
                }
            }
        }
        Ok(())
    }

    /// Goes back to the committed positions after a Nack (if Fluss is unreachable, the next
    /// poll retries the re-seek: the Nack must not stop the stream).
    async fn rewind(&mut self) -> Result<()> {
        let committed = self.progress.committed().clone();
        self.rebuild(&committed).await
    }

    /// Periodic work between batches: partition discovery, the liveness probe and the
    /// progress line. Failures here never stop the stream (they are retried on the next
    /// poll), except a position past the log end under `on_offset_out_of_range = "fail"`.
    async fn maintain(&mut self) -> Result<()> {
        if self
            .idle_since
            .is_some_and(|since| since.elapsed() >= LIVENESS_INTERVAL)
            && self.last_liveness.elapsed() >= LIVENESS_INTERVAL
        {
            self.last_liveness = Instant::now();
            self.check_liveness().await?;
        }
        let interval = self.config.partition_discovery_interval;
        if self.table.info.is_partitioned()
            && !interval.is_zero()
            && self.last_discovery.elapsed() >= interval
        {
            self.last_discovery = Instant::now();
            if let Err(e) = self.discover().await {
                self.telemetry.retrying("listing partitions failed", &e);
            }
        }
        if self.telemetry.progress_due() {
            let keys: Vec<BucketKey> = self.progress.committed().keys().copied().collect();
            let latest = offsets::list(
                &self.table,
                &keys,
                self.buckets.partitions(),
                OffsetSpec::Latest,
            )
            .await
            .unwrap_or_default();
            let current = self.progress.current().clone();
            self.telemetry.progress(&current, &latest);
        }
        Ok(())
    }

    /// Asks the cluster for the high watermarks while no records arrive. A failure is a WARN
    /// (fluss-rs itself only retries silently); the first answer after one rebuilds the
    /// scanner, so reading resumes even if the client's fetch state did not survive the outage.
    ///
    /// A position past a high watermark means the log lost its tail (a single-replica tablet
    /// server killed before its high-watermark checkpoint): the scanner would wait silently
    /// and later skip the rows written at the reused offsets, so it is handled like any other
    /// offset out of range.
    async fn check_liveness(&mut self) -> Result<()> {
        let keys: Vec<BucketKey> = self.progress.current().keys().copied().collect();
        if keys.is_empty() {
            return Ok(());
        }
        let probe = tokio::time::timeout(
            LIVENESS_TIMEOUT,
            offsets::list(
                &self.table,
                &keys,
                self.buckets.partitions(),
                OffsetSpec::Latest,
            ),
        )
        .await
        .unwrap_or(Err(Error::Timeout {
            op: "list_offsets",
            after: LIVENESS_TIMEOUT,
        }));
        let latest = match probe {
            Ok(latest) => latest,
            Err(error) => {
                self.telemetry
                    .retrying("no records and Fluss does not answer", &error);
                return Ok(());
            }
        };
        if self.telemetry.faulted() {
            self.telemetry.recovered();
            self.scanner = None;
        }
        let past_end = self
            .progress
            .current()
            .iter()
            .any(|(key, position)| latest.get(key).is_some_and(|end| position > end));
        if past_end {
            let mut positions = self.progress.current().clone();
            match self.reset_out_of_range(&mut positions).await {
                Ok(()) => {
                    for (key, offset) in positions {
                        self.progress.set_committed(key, offset);
                    }
                    self.scanner = None;
                }
                Err(error) if error.fault() == Fault::Retry => self
                    .telemetry
                    .retrying("looking up the log range of a bucket failed", &error),
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }

    /// Subscribes new partitions from their earliest offset and forgets dropped ones.
    async fn discover(&mut self) -> Result<()> {
        let now = partitions::list(&self.table).await?;
        let changes = partitions::diff(self.buckets.partitions(), &now);
        if changes.added.is_empty() && changes.dropped.is_empty() {
            return Ok(());
        }
        let mut dropped = Vec::with_capacity(changes.dropped.len());
        for partition in &changes.dropped {
            let name = self.buckets.drop_partition(*partition).unwrap_or_default();
            for key in bucket_keys(&self.table, [*partition]) {
                self.progress.forget(&key);
                if let Some(scanner) = self.scanner.as_mut() {
                    // The scanner already ignores a vanished partition; unsubscribing stops
                    // its warnings. A failure here is harmless.
                    let _ = scanner.unsubscribe(key).await;
                }
            }
            dropped.push((*partition, name));
        }
        // Registered only once their start offsets are known, so a failed listing is simply
        // retried by the next discovery.
        let new_keys = bucket_keys(&self.table, changes.added.iter().copied());
        let starts = offsets::list(&self.table, &new_keys, &now, OffsetSpec::Earliest).await?;
        let mut added = Vec::with_capacity(changes.added.len());
        for partition in &changes.added {
            let Some(name) = now.get(partition) else {
                continue;
            };
            let keys = bucket_keys(&self.table, [*partition]);
            self.buckets
                .add_partition(*partition, name.clone(), &keys)?;
            added.push((*partition, name.clone()));
        }
        for (key, offset) in &starts {
            self.progress.set_committed(*key, *offset);
        }
        if let Some(scanner) = self.scanner.as_mut() {
            if let Err(error) = scanner.subscribe(&starts).await {
                // A rebuild subscribes every bucket at its committed position.
                self.scanner = None;
                return Err(error);
            }
        }
        self.telemetry.partitions(&added, &dropped);
        Ok(())
    }
}

/// Every bucket of the table, or of each given partition.
fn bucket_keys(table: &Table, partitions: impl IntoIterator<Item = i64>) -> Vec<BucketKey> {
    let buckets = 0..table.buckets();
    if table.info.is_partitioned() {
        partitions
            .into_iter()
            .flat_map(|p| {
                buckets.clone().map(move |bucket| BucketKey {
                    partition: Some(p),
                    bucket,
                })
            })
            .collect()
    } else {
        buckets.map(BucketKey::bucket).collect()
    }
}

/// The schema batches declare: Arrow IPC is always raw bytes; JSON says what
/// `payload_schema` asks for.
fn batch_schema(config: &Config) -> Schema {
    match (config.payload_format, config.payload_schema) {
        (PayloadFormat::ArrowIpc, _) | (PayloadFormat::Json, PayloadSchema::Raw) => Schema::Raw,
        (PayloadFormat::Json, PayloadSchema::Json) => Schema::Json,
    }
}

/// The INFO line's description of what `open` found.
fn summary(config: &Config, table: &Table, partitions: usize) -> String {
    format!(
        "{} table id {} at {}: {} buckets{}, {} columns, payload {}",
        if table.primary_key {
            "primary-key"
        } else {
            "log"
        },
        table.id(),
        config.bootstrap_servers,
        table.buckets(),
        if table.info.is_partitioned() {
            format!(" × {partitions} partitions")
        } else {
            String::new()
        },
        table.fields.len(),
        config.payload_format.name(),
    )
}

fn encoder_for(config: &Config, table: &Table) -> Result<Box<dyn Encoder>> {
    Ok(if config.payload_format == PayloadFormat::ArrowIpc {
        Box::new(IpcMessages::new(
            table.primary_key,
            config.arrow_ipc_compression,
            config.max_batch_bytes,
        )?)
    } else if table.primary_key {
        Box::new(ChangeMessages::new(
            &config.database,
            &config.table,
            table.fields.clone(),
            config.json,
            config.changelog_format,
        ))
    } else {
        Box::new(RowMessages::new(
            table.fields.clone(),
            config.json,
            config.include_metadata,
        ))
    })
}
