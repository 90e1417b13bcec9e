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

//! `FlussSource`: the source the runtime drives (through [`crate::connector`]). It wires the modules together: open
//! checks (connect), positions (state), reading (scan), message building (encode).
//!
//! Each concern owns its state, in a file of its own, and is handed the other pieces it
//! needs: [`recovery`] the scanner (or the need to rebuild it), [`upkeep`] the timers of the
//! work between batches and the high watermarks ([`watermarks`], listed in a walk over the
//! partitions, [`rotation`]), [`bounded`] a bounded read's stop point and end, [`snapshot`]
//! the snapshot phase's lease, credentials and the bucket opened ahead, [`queue`] the buckets
//! read and their queued records, [`Progress`] the positions. [`discover`] and
//! [`schema_changes`] act on several of them; `FlussSource` only wires them together.
//!
//! Delivery: `poll` gathers records from several client polls into one batch, stages the next
//! offset of every bucket it consumed and puts those positions into the batch's state; the
//! runtime persists that state before it acks. `on_batch_result(Ack)` commits the staged
//! positions; `Nack` rebuilds the scanner at the committed positions, so the same rows come
//! again (a plain re-seek can race an in-flight fetch in fluss-rs and skip rows).
//!
//! In JSON mode the source polls ahead ([`FlussSource::poll_ahead`]): an SDK that can builds the next batch
//! while the runtime decodes and sends the previous one, so encoding and the runtime's work
//! overlap on two cores. Each answered batch therefore has its own staged positions ([`Progress`]); a
//! Nack drops them all, including those of the batch prepared behind it.

use std::time::{Duration, Instant};

use fluss::record::ScanRecord;

use crate::client::connect;
use crate::client::discovery;
use crate::client::kv_snapshot::lease::Lease;
use crate::client::kv_snapshot::local_dir;
use crate::client::scanner::Scanner;
use crate::client::table::Table;
use crate::config::Config;
use crate::config::options::{IpcCompression, PayloadFormat};
use crate::encode::Encoder;
use crate::encode::batch::Batch;
use crate::error::{Error, Fault, Result};
use crate::metrics::{ErrorKind, Metrics};
use crate::position::progress::{Progress, Tally};
use crate::position::{BucketKey, Offsets, Position, Positions};
use crate::sdk::{ConnectorState, ProducedMessages, SourceBatchResult};
use crate::source::bounded::BoundedRead;
use crate::source::queue::Buckets;
use crate::source::recovery::{RETRY_PAUSE, Scan};
use crate::source::snapshot::Snapshots;
use crate::source::telemetry::Telemetry;
use crate::source::upkeep::Upkeep;
use crate::state::{SavedState, Scope};

mod bounded;
mod discover;
mod open;
pub mod queue;
mod recovery;
mod rotation;
mod schema_changes;
mod snapshot;
pub mod telemetry;
mod upkeep;
mod watermarks;

/// The Fluss source connector: the wiring of the parts below, each of which owns its state.
pub struct FlussSource {
    config: Config,
    table: Table,
    /// The changelog scanner, or the need to rebuild it at `progress.current()`.
    scan: Scan,
    progress: Progress,
    buckets: Buckets,
    encoder: Box<dyn Encoder>,
    telemetry: Telemetry,
    /// When the work between batches is due.
    upkeep: Upkeep,
    /// Where a bounded read (`stopping_offset`) stops, and how far it got.
    bounded: BoundedRead,
    /// The snapshot phase (`starting_offset = "full"`) between polls.
    snapshots: Snapshots,
}

impl FlussSource {
    /// What every line about instance `id` starts with: `fluss[<id> <db.table>]`, from a
    /// configuration that may be anything (the table is left out when it cannot be read).
    pub fn log_prefix(id: u32, config_json: &str) -> String {
        telemetry::prefix(id, crate::config::named_table(config_json).as_deref())
    }

    /// Opens instance `id`: parses and checks `config_json` (the connector file's
    /// `[plugin_config]` as JSON), decodes `state` (what the runtime saved after the last
    /// acknowledged batch), connects, resolves the table and positions the reading. An error
    /// is the one line the runtime logs.
    pub async fn open(id: u32, config_json: &str, state: Option<ConnectorState>) -> Result<Self> {
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
        let mut all_keys = table.bucket_keys(config.assignment, partitions.keys().copied());
        let partitioned = table.info.is_partitioned().then_some(partitions.len());
        let bounded = BoundedRead::open(
            &table,
            &all_keys,
            &partitions,
            config.stopping_offset,
            saved.as_ref(),
        )
        .await?;
        all_keys.retain(|key| bounded.bound().reads(key));
        let (committed, starts) = open::starts(
            &table,
            &all_keys,
            &partitions,
            saved.as_ref(),
            config.starting_offset,
        )
        .await?;
        let stamper = open::stamper(&table, &qualified, config.headers)?;
        let scanner = Scanner::build(
            &table,
            &bounded.bound().unfinished(&committed),
            connect::readers(&config),
        )
        .await?;
        let summary = open::summary(&config, &table, partitions.len(), bounded.bound().stop());
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
        let mut progress = Progress::new(committed);
        if let Some(saved) = &saved {
            progress = progress.with_set_aside(&saved.positions, &left_out);
        }
        if table.primary_key {
            // Only primary-key tables copy KV snapshot files.
            for leftover in local_dir::remove_leftovers(&config.snapshot_dir) {
                telemetry.snapshot_leftover(&leftover);
            }
        }
        let lease = Lease::new(id, table.id(), config.assignment.index);
        Ok(Self {
            scan: Scan::Reading(scanner),
            progress,
            buckets: Buckets::new(stamper, partitions, &all_keys)?.with_filter(filter),
            encoder,
            telemetry,
            upkeep: Upkeep::new(Instant::now()),
            bounded,
            snapshots: Snapshots::new(lease, &config.snapshot_dir),
            config,
            table,
        })
    }

    /// The next batch (possibly empty) with its staged state; see the module's "Delivery".
    pub async fn poll(&mut self) -> Result<ProducedMessages> {
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
    pub fn poll_ahead(&self) -> bool {
        match self.config.payload_format {
            PayloadFormat::Json => true,
            PayloadFormat::ArrowIpc => self.config.arrow_ipc_compression != IpcCompression::None,
        }
    }

    /// Commits (Ack) or rolls back (Nack) what the oldest unanswered batch staged.
    pub async fn on_batch_result(&mut self, result: SourceBatchResult) -> Result<()> {
        match result {
            SourceBatchResult::Ack => {
                self.bounded.acknowledged();
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

    /// Gives back what the instance holds; called once, after polling stopped.
    pub async fn close(&mut self) -> Result<()> {
        // Also the snapshots being handed over: their local copies are removed. Their lease
        // stays, so a restart goes on with the same snapshots (or it expires).
        self.buckets.clear_all();
        self.snapshots.discard_ahead().await;
        self.snapshots
            .give_back_all(&self.table, &mut self.telemetry)
            .await;
        self.snapshots.remove_dir();
        self.telemetry.closed();
        // Unregisters this connector's metrics (and frees the port if it was the last).
        self.telemetry.metrics = Metrics::off();
        Ok(())
    }

    /// One batch: the body of [`FlussSource::poll`].
    async fn produce(&mut self) -> Result<ProducedMessages> {
        self.maintain().await?;
        if self.bounded.bound().finished(self.progress.current()) {
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
            if self
                .snapshots
                .settled(&mut self.buckets, &mut self.telemetry)
            {
                self.scan.go_stale();
            }
            let now = Instant::now();
            if batch.is_full() || now >= deadline {
                break;
            }
            let due = snapshot::due(&self.buckets, &positions)
                .filter(|key| self.snapshots.may_take(*key, now));
            if let Some(key) = due {
                self.take_snapshot(key, &mut positions).await?;
                continue;
            }
            let Some(scanner) = self.scan.scanner() else {
                self.rebuild(&positions).await?;
                if self.scan.is_stale() {
                    // Still unreachable: hand over what there is and try again next poll.
                    tokio::time::sleep(RETRY_PAUSE.min(deadline - now)).await;
                    break;
                }
                continue;
            };
            match scanner.poll(deadline - now).await {
                Ok(records) => {
                    if records.is_empty() {
                        self.upkeep.nothing_arrived(now);
                    } else {
                        self.upkeep.not_idle();
                        self.telemetry.recovered();
                        let learnt = schema_changes::learn(
                            &records,
                            &self.table,
                            &self.config,
                            &self.telemetry,
                        )
                        .await;
                        if let Err(error) = learnt {
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
                            self.bounded
                                .bound()
                                .trim(&key, &mut records, ScanRecord::offset);
                            let fetched = records.len();
                            let kept = self.buckets.queue(key, records)?;
                            self.telemetry.metrics.fetched(fetched, kept);
                        }
                    }
                }
                Err(error) => self.recover(error, &mut positions).await?,
            }
        }
        self.snapshots
            .give_back(&self.table, &mut self.telemetry)
            .await;
        // Buckets this poll finished leave the scanner: it stops fetching rows that would
        // only be trimmed.
        for key in self.bounded.reached(self.progress.current(), &positions) {
            self.scan.unsubscribe(key).await;
        }
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
            schema: open::batch_schema(&self.config),
            messages,
            state,
        })
    }

    /// A poll once every bucket reached its stop: nothing more is read. The `finished`
    /// line is logged once everything delivered was acknowledged; a stop point not saved yet
    /// still goes out in a batch of its own.
    async fn idle_when_finished(&mut self) -> Result<ProducedMessages> {
        self.upkeep.not_idle();
        if let Some(stops) = self.bounded.finish(self.progress.committed()) {
            self.telemetry.finished(stops);
        }
        let state = self.stage(
            self.progress.current().clone(),
            Tally::default(),
            Offsets::new(),
        )?;
        if state.is_none() {
            tokio::time::sleep(self.config.poll_interval.max(Duration::from_millis(1))).await;
        }
        Ok(ProducedMessages {
            schema: open::batch_schema(&self.config),
            messages: Vec::new(),
            state,
        })
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
        let force = tally.messages > 0 || self.bounded.stop_due(self.progress.has_staged());
        if &positions == self.progress.current() && !force {
            return Ok(None);
        }
        let scope = Scope {
            assignment: self.config.assignment,
            stop: self.bounded.bound().stop(),
        };
        let state = SavedState::encode(
            self.table.id(),
            &self.config.qualified_table(),
            &self.progress.saved(&positions),
            scope,
        )?;
        self.progress.stage(positions, tally, times);
        Ok(Some(state))
    }

    /// Periodic work between batches: the liveness probe, partition discovery, the lease, the
    /// progress line and the high watermarks. Failures here never stop the stream (they are
    /// retried on the next poll), except a position past the log end under
    /// `on_offset_out_of_range = "fail"`.
    async fn maintain(&mut self) -> Result<()> {
        if self.upkeep.liveness_due(Instant::now()) {
            self.scan
                .probe(
                    self.upkeep.watermarks(),
                    &mut self.progress,
                    &self.table,
                    &self.config,
                    self.buckets.partitions(),
                    &mut self.telemetry,
                )
                .await?;
        }
        let interval = self.config.partition_discovery_interval;
        if self.table.info.is_partitioned()
            && self.upkeep.discovery_due(Instant::now(), interval)
            && let Err(e) = self.discover().await
        {
            self.telemetry.retrying("listing partitions failed", &e);
        }
        self.snapshots
            .renew_lease(&self.table, &mut self.telemetry)
            .await;
        if self.upkeep.records_flow() {
            self.upkeep.watermarks().list_when_due(
                Instant::now(),
                &self.table,
                self.progress.current(),
                self.buckets.partitions(),
                &self.telemetry.metrics,
            );
        }
        self.upkeep
            .progress_line(&self.progress, &mut self.telemetry);
        Ok(())
    }

    /// Subscribes new partitions from their earliest offset and forgets dropped ones.
    async fn discover(&mut self) -> Result<()> {
        let found = discover::find(
            &self.table,
            &self.config,
            self.buckets.partitions(),
            self.bounded.bound(),
        )
        .await?;
        let Some(found) = found else {
            return Ok(());
        };
        let dropped = discover::forget(
            &found.changes.dropped,
            &self.table,
            self.config.assignment,
            &mut self.buckets,
            &mut self.progress,
            &mut self.bounded,
            &self.scan,
        )
        .await;
        self.snapshots.discard_ahead_if_gone(&self.buckets).await;
        let (added, starts) = discover::take_on(
            &found,
            &self.table,
            &self.config,
            &mut self.buckets,
            &mut self.progress,
        )
        .await?;
        // A failure leaves the scanner to be rebuilt, which subscribes every bucket at its
        // committed position.
        self.scan.subscribe(&starts).await?;
        self.upkeep.watermarks().retain(self.progress.current());
        self.telemetry.partitions(&added, &dropped);
        self.telemetry.metrics.partitions(self.buckets.partitions());
        self.telemetry.metrics.committed(self.progress.committed());
        Ok(())
    }

    /// Takes the snapshot of `key` (see [`Snapshots::take`]) and subscribes the scanner to
    /// the changelog where the snapshot leaves off: its records queue behind the snapshot's
    /// rows. A stale scanner's rebuild subscribes it (see [`Buckets::reading`]).
    async fn take_snapshot(&mut self, key: BucketKey, positions: &mut Positions) -> Result<()> {
        let taken = self
            .snapshots
            .take(
                key,
                positions,
                &self.table,
                &self.config,
                &mut self.buckets,
                &mut self.telemetry,
            )
            .await?;
        let Some(continue_at) = taken else {
            return Ok(());
        };
        let start: Positions = [(key, Position::At(continue_at))].into_iter().collect();
        if let Err(error) = self.scan.subscribe(&start).await {
            if error.fault() != Fault::Retry {
                return Err(error);
            }
            self.telemetry
                .retrying("subscribing to a snapshot's changelog failed", &error);
        }
        Ok(())
    }

    /// Handles a failed client poll (see [`Scan::recover`]); `positions` are where the batch
    /// being built stands. After any poll error the scanner's own position is unknown: it
    /// starts over from ours.
    async fn recover(&mut self, error: Error, positions: &mut Positions) -> Result<()> {
        self.scan
            .recover(
                error,
                positions,
                &self.table,
                &self.config,
                self.buckets.partitions(),
                &mut self.telemetry,
            )
            .await?;
        self.rebuild(positions).await
    }

    /// Replaces the scanner with one positioned at `positions`, dropping the records fetched
    /// and queued (see [`Scan::rebuild`]).
    async fn rebuild(&mut self, positions: &Positions) -> Result<()> {
        self.buckets.clear_queued();
        // Buckets a bounded read finished are not subscribed again; buckets taking their
        // snapshot are subscribed at the offset their changelog continues at.
        let reading = self
            .buckets
            .reading(&self.bounded.bound().unfinished(positions));
        self.scan
            .rebuild(
                &self.table,
                &reading,
                connect::readers(&self.config),
                &mut self.telemetry,
            )
            .await
    }

    /// Goes back to the committed positions after a Nack (if Fluss is unreachable, the next
    /// poll retries the re-seek: the Nack must not stop the stream).
    async fn rewind(&mut self) -> Result<()> {
        let committed = self.progress.committed().clone();
        // Snapshots not acknowledged whole are taken again (their buckets are pending in
        // `committed`).
        self.buckets.clear_all();
        self.snapshots.discard_ahead().await;
        self.rebuild(&committed).await
    }
}
