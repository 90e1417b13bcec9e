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

use std::collections::HashSet;
use std::time::{Duration, Instant};

use fluss::record::{ScanRecord, ScanRecords};
use fluss::PartitionId;
use iggy_connector_sdk::{ConnectorState, ProducedMessages, Schema, Source, SourceBatchResult};

use crate::client::connect;
use crate::client::discovery;
use crate::client::kv_snapshot::credentials::RemoteCredentials;
use crate::client::kv_snapshot::lease::Lease;
use crate::client::offsets;
use crate::client::scanner::Scanner;
use crate::client::schema_fetch;
use crate::client::table::Table;
use crate::config::options::{IpcCompression, PayloadFormat};
use crate::config::Config;
use crate::encode::batch::Batch;
use crate::encode::stamp::Stamper;
use crate::encode::Encoder;
use crate::error::{Error, Result};
use crate::metrics::{ErrorKind, Metrics};
use crate::position::progress::{Progress, Tally};
use crate::position::{BucketKey, Offsets, Positions};
use crate::schemas::Change;
use crate::scope::share::Assignment;
use crate::scope::stop::Bound;
use crate::source::queue::Buckets;
use crate::source::snapshot_ahead::OpenAhead;
use crate::source::telemetry::Telemetry;
use crate::state::{SavedState, Scope};

mod finish;
mod open;
pub mod queue;
mod recovery;
mod snapshot_ahead;
mod snapshot_phase;
pub mod telemetry;
mod upkeep;

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
    /// When the high watermarks were last listed for the metrics, and that listing's task
    /// (`None`: not yet).
    last_watermarks: Option<(Instant, tokio::task::JoinHandle<()>)>,
    telemetry: Telemetry,
    /// Where a bounded read stops (`stopping_offset`); unbounded by default.
    bound: Bound,
    /// The stop point was taken at this open and no acknowledged state holds it yet, so the
    /// next poll hands over a state even if no position moved (a restart must stop at the
    /// same place, even when every bucket was empty).
    stop_unsaved: bool,
    /// The `finished` line was logged.
    finished: bool,
    /// Saved positions of partitions that still exist but `partitions` no longer selects:
    /// every state keeps them, so widening the selection again resumes those partitions
    /// where they stopped instead of at `starting_offset`.
    set_aside: Positions,
    /// The KV snapshot lease of the buckets taking their snapshot.
    lease: Lease,
    /// Credentials for KV snapshot files on an object store (fetched on first need).
    remote_credentials: RemoteCredentials,
    /// The next bucket's snapshot, opened while the one before it is handed over.
    ahead: Option<OpenAhead>,
}

impl Source for FlussSource {
    type Error = Error;

    fn log_prefix(id: u32, config_json: &str) -> String {
        telemetry::prefix(id, crate::config::named_table(config_json).as_deref())
    }

    async fn open(id: u32, config_json: &str, state: Option<ConnectorState>) -> Result<Self> {
        let config = Config::parse(config_json)?;
        // Corrupt state fails before any network work, so the error is immediate.
        let saved = state.as_ref().map(SavedState::decode).transpose()?;
        let qualified = config.qualified_table();
        let telemetry = Telemetry::new(id, &qualified, config.verbose_logging)
            .with_metrics(open::metrics(&config)?);
        let conn = connect::connect(&config, |error| {
            telemetry.unreachable_yet(&config.bootstrap_servers, error)
        })
        .await?;
        let mut table = Table::resolve(conn, &config).await?;
        let filter = open::filter(&config, &mut table)?;
        if let Some(saved) = &saved {
            saved.check_table(table.id(), &qualified)?;
            saved.check_assignment(config.assignment)?;
        }
        if let Some(filter) = &config.partitions {
            filter
                .check(&qualified, table.info.get_partition_keys())
                .map_err(|reason| Error::PartitionFilter { reason })?;
        }
        let encoder = open::encoder(&config, &table)?;
        let key_order = open::runtime_json::check(&config, &table.fields, table.primary_key)?;
        let (partitions, left_out) = if table.info.is_partitioned() {
            discovery::list_split(&table, config.partitions.as_ref()).await?
        } else {
            Default::default()
        };
        let set_aside = saved
            .as_ref()
            .map(|s| set_aside(&s.positions, &left_out))
            .unwrap_or_default();
        let mut all_keys = bucket_keys(&table, config.assignment, partitions.keys().copied());
        let partitioned = table.info.is_partitioned().then_some(partitions.len());
        let (bound, stop_unsaved) = finish::open(
            &table,
            &all_keys,
            &partitions,
            config.stopping_offset,
            saved.as_ref(),
        )
        .await?;
        all_keys.retain(|key| bound.reads(key));
        let mut committed = Positions::new();
        let mut starts = Vec::with_capacity(all_keys.len());
        let mut fresh = Vec::new();
        for key in &all_keys {
            match saved.as_ref().and_then(|s| s.positions.get(key)) {
                Some(position) => {
                    committed.insert(*key, *position);
                    starts.push((*key, *position, "saved state"));
                }
                None => fresh.push(*key),
            }
        }
        let resolved =
            offsets::starting(&table, &fresh, &partitions, config.starting_offset).await?;
        for (key, position) in resolved {
            committed.insert(key, position);
            starts.push((key, position, "starting_offset"));
        }
        starts.sort_by_key(|(k, _, _)| *k);
        let mut stamper = Stamper::new(table.id(), &qualified, config.headers)?;
        if table.primary_key {
            stamper = stamper.with_primary_key(table.info.get_primary_keys())?;
        }
        let scanner = Scanner::build(
            &table,
            &bound.unfinished(&committed),
            connect::readers(&config),
        )
        .await?;
        let summary =
            open::summary(&config, &table, partitions.len()) + &finish::share(&config, &bound);
        telemetry.opened(&summary, &starts);
        if let Some(warning) = key_order {
            telemetry.warn(&warning);
        }
        for warning in config.ignored_warnings() {
            telemetry.warn(&warning);
        }
        if let Some(warning) =
            config
                .assignment
                .oversized(table.buckets(), partitioned, all_keys.len())
        {
            telemetry.warn(&warning);
        }
        telemetry.metrics.committed(&committed);
        telemetry.metrics.partitions(&partitions);
        let lease = Lease::new(id, table.id(), config.assignment.index);
        Ok(Self {
            schema: open::batch_schema(&config),
            config,
            table,
            scanner: Some(scanner),
            progress: Progress::new(committed),
            buckets: Buckets::new(stamper, partitions, &all_keys)?.with_filter(filter),
            encoder,
            last_discovery: Instant::now(),
            idle_since: None,
            last_liveness: Instant::now(),
            last_watermarks: None,
            telemetry,
            bound,
            stop_unsaved,
            finished: false,
            set_aside,
            lease,
            remote_credentials: RemoteCredentials::default(),
            ahead: None,
        })
    }

    async fn poll(&mut self) -> Result<ProducedMessages> {
        let produced = self.produce().await;
        if produced.is_err() {
            self.telemetry.metrics.error(ErrorKind::Fatal);
        }
        produced
    }

    /// Poll ahead where encoding costs more than holding a second batch: JSON (the next batch is
    /// encoded while the runtime decodes the previous one's messages, on another core) and
    /// compressed Arrow IPC (compressing is the expensive part, and its messages are small).
    /// Not uncompressed Arrow IPC: its batches are a few large messages, cheap to encode and
    /// decode, so a second batch of them in memory only costs page faults and peak RSS.
    /// Measured in the stand-in runner (BENCHMARKS.md, "Through the stand-in runner").
    fn poll_ahead(&self) -> bool {
        match self.config.payload_format {
            PayloadFormat::Json => true,
            PayloadFormat::ArrowIpc => self.config.arrow_ipc_compression != IpcCompression::None,
        }
    }

    async fn on_batch_result(&mut self, result: SourceBatchResult) -> Result<()> {
        match result {
            SourceBatchResult::Ack => {
                // Every state handed over holds the stop point.
                self.stop_unsaved = false;
                let committed = self.progress.commit();
                self.telemetry.acknowledged(committed.tally);
                self.telemetry.metrics.acknowledged(
                    committed.tally,
                    self.progress.committed(),
                    &committed.times,
                );
                Ok(())
            }
            SourceBatchResult::Nack => {
                let nacked = self.progress.rollback();
                self.telemetry.metrics.nacked(nacked.messages);
                self.rewind().await
            }
        }
    }

    async fn close(&mut self) -> Result<()> {
        // Also the snapshots being handed over: their local copies are removed. Their lease
        // stays, so a restart goes on with the same snapshots (or it expires).
        self.buckets.clear_all();
        self.discard_ahead().await;
        self.telemetry.closed();
        // Unregisters this connector's metrics (and frees the port if it was the last).
        self.telemetry.metrics = Metrics::off();
        Ok(())
    }
}

impl FlussSource {
    /// One batch: the body of [`Source::poll`].
    async fn produce(&mut self) -> Result<ProducedMessages> {
        self.maintain().await?;
        if self.bound.finished(self.progress.current()) {
            return self.idle_when_finished().await;
        }
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
            let (fetched, kept) = self.buckets.take_snapshot_rows();
            self.telemetry.metrics.fetched(fetched, kept);
            self.snapshots_settled().await;
            let now = Instant::now();
            if batch.is_full() || now >= deadline {
                break;
            }
            if let Some(key) = self.snapshot_due(&positions) {
                self.take_snapshot(key, &mut positions).await?;
                continue;
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
                        if let Err(error) = self.learn_schemas(&records).await {
                            // The records are dropped with the scanner and read again.
                            self.recover(error, &mut positions).await?;
                            continue;
                        }
                        for (bucket, records) in records.into_records_by_buckets() {
                            let key = BucketKey {
                                partition: bucket.partition_id(),
                                bucket: bucket.bucket_id(),
                            };
                            let mut records = records;
                            self.bound.trim(&key, &mut records, ScanRecord::offset);
                            let fetched = records.len();
                            let kept = self.buckets.queue(key, records)?;
                            self.telemetry.metrics.fetched(fetched, kept);
                        }
                    }
                }
                Err(error) => self.recover(error, &mut positions).await?,
            }
        }
        self.unsubscribe_done(&positions).await;
        if self.telemetry.metrics.enabled() {
            self.telemetry
                .metrics
                .snapshots(self.buckets.snapshot_phases(&positions));
        }
        let times = self.buckets.take_times();
        let state = self.stage(
            positions,
            Tally {
                messages: batch.len() as u64,
                rows: records as u64,
                bytes: batch.bytes() as u64,
            },
            times,
        )?;
        let (count, bytes) = (batch.len(), batch.bytes());
        let messages = if batch.has_deferred() {
            // Compressed payloads: built on a blocking thread that fans out over the cores, so
            // the runtime's tasks and the read-ahead keep theirs meanwhile.
            let started = Instant::now();
            let built = tokio::task::spawn_blocking(move || batch.into_messages()).await;
            encode_time += started.elapsed();
            built.map_err(|_| Error::PayloadJobPanicked)??
        } else {
            batch.into_messages()?
        };
        if count > 0 {
            self.telemetry.batch(count, records, bytes, encode_time);
        }
        Ok(ProducedMessages {
            schema: self.schema,
            messages,
            state,
        })
    }
}

impl FlussSource {
    /// Registers the schema versions of polled batches written after an `ADD COLUMN`,
    /// logging each change once.
    async fn learn_schemas(&mut self, records: &ScanRecords) -> Result<()> {
        for records in records.records_by_buckets().values() {
            let changes = schema_fetch::learn(&self.table, records).await?;
            self.schema_changed(&changes);
        }
        Ok(())
    }

    /// Logs schema changes, and what the open-time checks of the runtime's JSON re-encoding
    /// (key order, wide decimals) say about the newest columns: the stream goes on either way.
    pub(super) fn schema_changed(&self, changes: &[Change]) {
        if changes.is_empty() {
            return;
        }
        for change in changes {
            self.telemetry.schema_changed(change);
        }
        let fields = &self.table.schemas.latest().fields;
        match open::runtime_json::check(&self.config, fields, self.table.primary_key) {
            Ok(None) => {}
            Ok(Some(warning)) => self.telemetry.warn(&warning),
            Err(error) => self.telemetry.warn(&error.to_string()),
        }
    }

    /// Stages `positions` for the batch being handed over and returns the state it carries.
    /// Only a batch that has messages, moved some position or carries a new stop point is
    /// sent and answered, so only such a batch is staged: with poll-ahead, `current()` is the
    /// batch in flight. (A batch of snapshot rows that does not finish its bucket's snapshot
    /// moves nothing.)
    fn stage(
        &mut self,
        positions: Positions,
        tally: Tally,
        times: Offsets,
    ) -> Result<Option<ConnectorState>> {
        let force = tally.messages > 0 || self.stop_unsaved && !self.progress.has_staged();
        if &positions == self.progress.current() && !force {
            return Ok(None);
        }
        let scope = Scope {
            assignment: self.config.assignment,
            stop: self.bound.stop(),
        };
        let kept;
        let persisted = if self.set_aside.is_empty() {
            &positions
        } else {
            kept = with_set_aside(&positions, &self.set_aside);
            &kept
        };
        let state = SavedState::encode(
            self.table.id(),
            &self.config.qualified_table(),
            persisted,
            scope,
        )?;
        self.progress.stage(positions, tally, times);
        Ok(Some(state))
    }
}

/// The saved positions of the partitions in `left_out`.
fn set_aside(saved: &Positions, left_out: &HashSet<PartitionId>) -> Positions {
    saved
        .iter()
        .filter(|(key, _)| key.partition.is_some_and(|p| left_out.contains(&p)))
        .map(|(key, position)| (*key, *position))
        .collect()
}

/// `positions` plus the set-aside ones (a bucket read now wins, though none is in both).
fn with_set_aside(positions: &Positions, set_aside: &Positions) -> Positions {
    let mut all = set_aside.clone();
    all.extend(positions.iter().map(|(key, position)| (*key, *position)));
    all
}

/// Every bucket of the table, or of each given partition, that `assignment` gives this
/// instance.
fn bucket_keys(
    table: &Table,
    assignment: Assignment,
    partitions: impl IntoIterator<Item = PartitionId>,
) -> Vec<BucketKey> {
    let mut keys = all_bucket_keys(table, partitions);
    keys.retain(|key| assignment.owns(key));
    keys
}

fn all_bucket_keys(
    table: &Table,
    partitions: impl IntoIterator<Item = PartitionId>,
) -> Vec<BucketKey> {
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

#[cfg(test)]
mod tests {
    use fluss::BucketId;

    use super::*;
    use crate::position::Position;

    fn key(partition: Option<PartitionId>, bucket: BucketId) -> BucketKey {
        BucketKey { partition, bucket }
    }

    #[test]
    fn positions_of_left_out_partitions_stay_in_every_state() {
        let saved = Positions::from([
            (key(Some(1), 0), Position::At(40)),
            (key(Some(2), 0), Position::At(7)),
            (key(Some(2), 1), Position::At(9)),
            (key(Some(3), 0), Position::At(5)),
        ]);
        // Partition 2 exists but is not selected; 3 is gone (not listed at all).
        let aside = set_aside(&saved, &HashSet::from([2]));
        assert_eq!(
            aside,
            Positions::from([
                (key(Some(2), 0), Position::At(7)),
                (key(Some(2), 1), Position::At(9))
            ])
        );
        let now = Positions::from([(key(Some(1), 0), Position::At(55))]);
        assert_eq!(
            with_set_aside(&now, &aside),
            Positions::from([
                (key(Some(1), 0), Position::At(55)),
                (key(Some(2), 0), Position::At(7)),
                (key(Some(2), 1), Position::At(9))
            ])
        );
        assert!(set_aside(
            &Positions::from([(key(None, 0), Position::At(3))]),
            &HashSet::from([2])
        )
        .is_empty());
    }
}
