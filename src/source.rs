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

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use fluss::record::ScanRecord;
use fluss::rpc::message::OffsetSpec;
use iggy_connector_sdk::{ConnectorState, ProducedMessages, Schema, Source, SourceBatchResult};

use crate::batch::Batch;
use crate::config::Config;
use crate::connect::{self, Table};
use crate::encode::{cdc::ChangeMessages, ipc::IpcMessages, rows::RowMessages, Encoder};
use crate::error::{Error, Fault, Result};
use crate::message::{BucketStamp, Stamper};
use crate::options::{PayloadFormat, PayloadSchema};
use crate::runtime_json;
use crate::scan::offsets::{self, Reset};
use crate::scan::partitions::{self, PartitionNames};
use crate::scan::Scanner;
use crate::state::{BucketKey, Positions, Progress, SavedState, Tally};
use crate::telemetry::Telemetry;

/// Pause after a failed client poll before trying again.
const RETRY_PAUSE: Duration = Duration::from_millis(500);
/// fluss-rs' `poll` returns nothing, without an error, while the servers are down. After this
/// long without records the source asks the cluster for its offsets, so an outage shows up as
/// a WARN instead of a silent stall.
const LIVENESS_INTERVAL: Duration = Duration::from_secs(5);
/// How long that liveness probe may take.
const LIVENESS_TIMEOUT: Duration = Duration::from_secs(5);

/// Records fetched from one bucket but not yet handed over.
struct Pending {
    key: BucketKey,
    records: Vec<ScanRecord>,
    next: usize,
}

/// The Fluss source connector.
pub struct FlussSource {
    config: Config,
    table: Table,
    scanner: Scanner,
    progress: Progress,
    partitions: PartitionNames,
    stamper: Stamper,
    stamps: HashMap<BucketKey, BucketStamp>,
    encoder: Box<dyn Encoder>,
    schema: Schema,
    pending: VecDeque<Pending>,
    last_discovery: Instant,
    /// The scanner must be rebuilt at `progress.current()` before it is read again: a rebuild
    /// (after a fault or a Nack) failed transiently, the cluster answered again after an
    /// outage, or a poll error ended the poll (the read-ahead task stops at an error).
    stale: bool,
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
        let mut stamps = HashMap::new();
        for key in &all_keys {
            stamps.insert(*key, stamp(&stamper, &partitions, *key)?);
        }
        let scanner = Scanner::build(&table, &committed, connect::readers(&config)).await?;
        let telemetry = Telemetry::new(id, &qualified, config.verbose_logging);
        telemetry.opened(
            &format!(
                "{} table id {} at {}: {} buckets{}, {} columns, payload {:?}",
                if table.primary_key {
                    "primary-key"
                } else {
                    "log"
                },
                table.id(),
                config.bootstrap_servers,
                table.buckets(),
                if table.info.is_partitioned() {
                    format!(" × {} partitions", partitions.len())
                } else {
                    String::new()
                },
                table.fields.len(),
                config.payload_format,
            ),
            &starts,
        );
        if let Some(warning) = key_order {
            telemetry.key_order(&warning);
        }
        Ok(Self {
            schema: batch_schema(&config),
            config,
            table,
            scanner,
            progress: Progress::new(committed),
            partitions,
            stamper,
            stamps,
            encoder,
            pending: VecDeque::new(),
            last_discovery: Instant::now(),
            stale: false,
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
            records += self.drain(&mut batch, &mut positions)?;
            encode_time += started.elapsed();
            let now = Instant::now();
            if batch.is_full() || now >= deadline {
                break;
            }
            if self.stale {
                self.rebuild(&positions.clone()).await?;
                if self.stale {
                    // Still unreachable: hand over what there is and try again next poll.
                    tokio::time::sleep(RETRY_PAUSE.min(deadline - now)).await;
                    break;
                }
                continue;
            }
            match self.scanner.poll(deadline - now).await {
                Ok(records) => {
                    if records.is_empty() {
                        self.idle_since.get_or_insert(now);
                    } else {
                        self.idle_since = None;
                        self.telemetry.recovered();
                        self.queue(records);
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
        self.pending.clear();
        self.telemetry.closed();
        Ok(())
    }
}

impl FlussSource {
    /// Moves pending records into `batch` until it is full, advancing `positions`. Buckets
    /// take turns, so one busy bucket cannot starve the others.
    /// Returns how many records were consumed.
    fn drain(&mut self, batch: &mut Batch, positions: &mut Positions) -> Result<usize> {
        let mut total = 0;
        for _ in 0..self.pending.len() {
            if batch.is_full() {
                break;
            }
            let Some(mut pending) = self.pending.pop_front() else {
                break;
            };
            let Some(stamp) = self.stamps.get(&pending.key) else {
                // A bucket of a partition dropped meanwhile: its rows are gone with it.
                continue;
            };
            let records = &pending.records[pending.next..];
            let consumed = self.encoder.encode(stamp, records, batch)?;
            if consumed > 0 {
                positions.insert(pending.key, records[consumed - 1].offset() + 1);
                pending.next += consumed;
                total += consumed;
            }
            if pending.next < pending.records.len() {
                self.pending.push_back(pending);
            }
        }
        Ok(total)
    }

    /// Queues newly polled records behind what is already pending, bucket by bucket.
    fn queue(&mut self, records: fluss::record::ScanRecords) {
        for (bucket, records) in records.into_records_by_buckets() {
            if records.is_empty() {
                continue;
            }
            let key = BucketKey {
                partition: bucket.partition_id(),
                bucket: bucket.bucket_id(),
            };
            // Keep one queue entry per bucket so a bucket's records stay in offset order.
            if let Some(existing) = self.pending.iter_mut().find(|p| p.key == key) {
                existing.records.drain(..existing.next);
                existing.next = 0;
                existing.records.extend(records);
            } else {
                self.pending.push_back(Pending {
                    key,
                    records,
                    next: 0,
                });
            }
        }
    }

    /// Handles a failed client poll; `positions` are where the batch being built stands.
    /// Transient faults (including a failed re-seek) are logged at WARN and retried; only
    /// `on_offset_out_of_range = "fail"`, refused credentials and unknown faults end the poll
    /// with an error.
    async fn recover(&mut self, error: Error, positions: &mut Positions) -> Result<()> {
        // The read-ahead stops at an error, so the scanner must start over whatever happens
        // below: the rebuild at the end clears this, an early return leaves it to the next poll.
        self.stale = true;
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
        self.pending.clear();
        match Scanner::build(&self.table, positions, connect::readers(&self.config)).await {
            Ok(scanner) => {
                self.scanner = scanner;
                self.stale = false;
                Ok(())
            }
            Err(error) if error.fault() == Fault::Retry => {
                self.stale = true;
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
        let earliest =
            offsets::list(&self.table, &keys, &self.partitions, OffsetSpec::Earliest).await?;
        let latest =
            offsets::list(&self.table, &keys, &self.partitions, OffsetSpec::Latest).await?;
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
            let latest = offsets::list(&self.table, &keys, &self.partitions, OffsetSpec::Latest)
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
            offsets::list(&self.table, &keys, &self.partitions, OffsetSpec::Latest),
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
            self.stale = true;
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
                    self.stale = true;
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
        let changes = partitions::diff(&self.partitions, &now);
        if changes.added.is_empty() && changes.dropped.is_empty() {
            return Ok(());
        }
        let dropped: Vec<(i64, String)> = changes
            .dropped
            .iter()
            .map(|p| (*p, self.partitions.get(p).cloned().unwrap_or_default()))
            .collect();
        for (partition, _) in &dropped {
            for key in bucket_keys(&self.table, [*partition]) {
                self.progress.forget(&key);
                self.stamps.remove(&key);
                self.pending.retain(|p| p.key != key);
                // The scanner already ignores a vanished partition; unsubscribing stops its
                // warnings. A failure here is harmless.
                let _ = self.scanner.unsubscribe(key).await;
            }
        }
        let added: Vec<(i64, String)> = changes
            .added
            .iter()
            .filter_map(|p| now.get(p).map(|n| (*p, n.clone())))
            .collect();
        self.partitions = now;
        let new_keys = bucket_keys(&self.table, changes.added.iter().copied());
        let starts = offsets::list(
            &self.table,
            &new_keys,
            &self.partitions,
            OffsetSpec::Earliest,
        )
        .await?;
        for (key, offset) in &starts {
            self.stamps
                .insert(*key, stamp(&self.stamper, &self.partitions, *key)?);
            self.progress.set_committed(*key, *offset);
        }
        self.scanner.subscribe(&starts).await?;
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

/// The stamp of bucket `key`, named after its partition.
fn stamp(stamper: &Stamper, partitions: &PartitionNames, key: BucketKey) -> Result<BucketStamp> {
    let name = key.partition.and_then(|p| partitions.get(&p));
    stamper.bucket(key, name.map(String::as_str))
}

/// The schema batches declare: Arrow IPC is always raw bytes; JSON says what
/// `payload_schema` asks for.
fn batch_schema(config: &Config) -> Schema {
    match (config.payload_format, config.payload_schema) {
        (PayloadFormat::ArrowIpc, _) | (PayloadFormat::Json, PayloadSchema::Raw) => Schema::Raw,
        (PayloadFormat::Json, PayloadSchema::Json) => Schema::Json,
    }
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
