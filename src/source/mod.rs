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

//! `FlussSource`: the source the runtime drives (through [`crate::connector`]). It wires the
//! modules together: open checks (connect), positions (state), reading (scan), message
//! building (encode), each step handed the [`Context`] it reads from once.
//!
//! Each concern owns its state, in a file of its own, and is handed the other pieces it
//! needs: [`recovery`] the scanner (or the need to rebuild it), [`upkeep`] the timers of the
//! work between batches and the high watermarks ([`watermarks`], listed in a walk over the
//! partitions, [`rotation`]), [`bounded`] a bounded read's stop point and end, [`crate::snapshot`]
//! the snapshot phase's lease, credentials and the bucket opened ahead, [`queue`] the buckets
//! read and their queued records, [`Progress`] the positions. [`partition_changes`] and
//! [`schema_changes`] act on several of them; `FlussSource` only wires them together.
//!
//! Delivery: `poll` gathers records from several client polls into one batch, stages the next
//! offset of every bucket it consumed and puts those positions into the batch's state; the
//! runtime persists that state before it acks. `on_batch_result(Ack)` commits the staged
//! positions; `Nack` rebuilds the scanner at the committed positions, so the same rows come
//! again (a plain re-seek can race an in-flight fetch in fluss-rs and skip rows).
//!
//! Where the payload format says it pays ([`FlussSource::poll_ahead`]), an SDK that can
//! builds the next batch while the runtime decodes and sends the previous one, so encoding and
//! the runtime's work overlap on two cores. Each answered batch therefore has its own staged
//! positions ([`Progress`]); a Nack drops them all, including those of the batch prepared
//! behind it.

use std::time::{Duration, Instant};

use fluss::record::ScanRecord;

use crate::client::connect;
use crate::client::discovery;
use crate::client::scanner::Scanner;
use crate::client::table::Table;
use crate::config::Config;
use crate::context::Context;
use crate::encode::Encoder;
use crate::encode::batch::Batch;
use crate::error::{Error, Fault, RETRY_PAUSE, Result};
use crate::format;
use crate::metrics::ErrorKind;
use crate::position::progress::{Progress, Tally};
use crate::position::{BucketKey, Position, Positions, Timestamps};
use crate::sdk::{ConnectorState, ProducedMessages, SourceBatchResult};
use crate::snapshot::Snapshots;
use crate::source::bounded::BoundedRead;
use crate::source::queue::{Buckets, Drained};
use crate::source::recovery::Scan;
use crate::source::upkeep::Upkeep;
use crate::state::{SavedState, Scope};
use crate::telemetry::Telemetry;

mod bounded;
mod open;
mod partition_changes;
pub mod queue;
mod recovery;
mod rotation;
mod schema_changes;
mod upkeep;
mod watermarks;

/// The Fluss source connector: the wiring of the parts below, each of which owns its state.
pub struct FlussSource {
    /// The configuration, table, format and telemetry every step reads.
    ctx: Context,
    /// The changelog scanner, or the need to rebuild it at `progress.current()`.
    scan: Scan,
    progress: Progress,
    buckets: Buckets,
    encoder: Box<dyn Encoder>,
    /// When the work between batches is due.
    upkeep: Upkeep,
    /// Where a bounded read (`stopping_offset`) stops, and how far it got.
    bounded: BoundedRead,
    /// The snapshot phase (`starting_offset = "full"`) between polls.
    snapshots: Snapshots,
}

/// What the client polls of one batch gathered: the records consumed and what draining them
/// found, and the time spent encoding.
struct Filled {
    drained: Drained,
    encode_time: Duration,
}

impl FlussSource {
    /// What every line about instance `id` starts with: `fluss[<id> <db.table>]`, from a
    /// configuration that may be anything (the table is left out when it cannot be read).
    pub fn log_prefix(id: u32, config_json: &str) -> String {
        crate::telemetry::prefix(id, crate::config::named_table(config_json).as_deref())
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
        let format = format::chosen(&config);
        let fetch = format.fetch(&config);
        let conn = connect::connect(&config, fetch, |error| {
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
        let encoder = format.encoder(&config, &table)?;
        let key_order = format.check_columns(&config, &table.fields, table.primary_key)?;
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
            fetch.readers,
        )
        .await?;
        let summary = open::summary(
            &config,
            &table,
            format.name(),
            partitions.len(),
            bounded.bound().stop(),
        );
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
        telemetry.metrics().committed(&committed);
        telemetry.metrics().partitions(&partitions);
        let mut progress = Progress::new(committed);
        if let Some(saved) = &saved {
            progress = progress.with_set_aside(&saved.positions, &left_out);
        }
        let ctx = Context {
            config,
            table,
            format,
            fetch,
            telemetry,
        };
        Ok(Self {
            scan: Scan::Reading(scanner),
            progress,
            buckets: Buckets::new(stamper, partitions, &all_keys)?.with_filter(filter),
            encoder,
            upkeep: Upkeep::new(Instant::now()),
            bounded,
            snapshots: Snapshots::open(id, &ctx),
            ctx,
        })
    }

    /// The next batch (possibly empty) with its staged state; see the module's "Delivery".
    pub async fn poll(&mut self) -> Result<ProducedMessages> {
        let produced = self.produce().await;
        if produced.is_err() {
            self.ctx.telemetry.metrics().error(ErrorKind::Fatal);
        }
        produced
    }

    /// Whether polling the next batch while the runtime sends this one pays: the payload
    /// format's answer ([`crate::format::Format::polls_ahead`]).
    pub fn poll_ahead(&self) -> bool {
        self.ctx.format.polls_ahead()
    }

    /// Commits (Ack) or rolls back (Nack) what the oldest unanswered batch staged.
    pub async fn on_batch_result(&mut self, result: SourceBatchResult) -> Result<()> {
        match result {
            SourceBatchResult::Ack => {
                self.bounded.acknowledged();
                let committed = self.progress.commit();
                let telemetry = &mut self.ctx.telemetry;
                telemetry.acknowledged(committed.tally);
                telemetry.metrics().acknowledged(
                    committed.tally,
                    self.progress.committed(),
                    &committed.times,
                );
                Ok(())
            }
            SourceBatchResult::Nack => {
                let nacked = self.progress.rollback();
                self.ctx.telemetry.metrics().nacked(nacked.messages);
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
        self.snapshots.give_back_all(&mut self.ctx).await;
        self.snapshots.remove_dir();
        self.ctx.telemetry.closed();
        Ok(())
    }

    /// One batch, the body of [`FlussSource::poll`]: the work between batches, the batch
    /// filled, then handed over.
    async fn produce(&mut self) -> Result<ProducedMessages> {
        self.maintain().await?;
        if self.bounded.bound().finished(self.progress.current()) {
            return self.idle_when_finished().await;
        }
        let config = &self.ctx.config;
        let mut batch = Batch::new(config.batch_size, config.max_batch_bytes);
        let mut positions = self.progress.current().clone();
        let filled = self.fill(&mut batch, &mut positions).await?;
        self.hand_over(batch, positions, filled).await
    }

    /// Fills `batch` until it is full or `poll_interval` passed: queued records are drained
    /// into it, a due snapshot is taken, and the client is polled for more. `positions`
    /// follow every record consumed.
    async fn fill(&mut self, batch: &mut Batch, positions: &mut Positions) -> Result<Filled> {
        let deadline = Instant::now() + self.ctx.config.poll_interval;
        let mut filled = Filled {
            drained: Drained::default(),
            encode_time: Duration::ZERO,
        };
        loop {
            let started = Instant::now();
            let drained = self
                .buckets
                .drain(self.encoder.as_mut(), batch, positions)?;
            filled.encode_time += started.elapsed();
            self.settle(&drained);
            filled.drained.add(drained);
            let now = Instant::now();
            if batch.is_full() || now >= deadline {
                return Ok(filled);
            }
            let due = self
                .buckets
                .snapshot_due(positions)
                .filter(|key| self.snapshots.may_take(*key, now));
            if let Some(key) = due {
                self.take_snapshot(key, positions).await?;
                continue;
            }
            if self.scan.is_stale() {
                self.rebuild(positions).await?;
                if self.scan.is_stale() {
                    // Still unreachable: hand over what there is and try again next poll.
                    tokio::time::sleep(RETRY_PAUSE.min(deadline - now)).await;
                    return Ok(filled);
                }
                continue;
            }
            self.fetch(deadline - now, positions).await?;
        }
    }

    /// What a drain found: the snapshot rows counted, the snapshots handed over noted, and the
    /// scanner dropped when some snapshot failed (it still reads their changelog).
    fn settle(&mut self, drained: &Drained) {
        let (fetched, kept) = drained.snapshot_rows;
        self.ctx.telemetry.metrics().fetched(fetched, kept);
        self.snapshots
            .settled(&drained.finished, &drained.failed, &mut self.ctx.telemetry);
        if !drained.failed.is_empty() {
            self.scan.go_stale();
        }
    }

    /// One client poll of at most `wait`: its records queued per bucket (trimmed at a bounded
    /// read's stop), or its failure recovered from at `positions`.
    async fn fetch(&mut self, wait: Duration, positions: &mut Positions) -> Result<()> {
        let Some(scanner) = self.scan.scanner() else {
            return Ok(());
        };
        let polled = Instant::now();
        let records = match scanner.poll(wait).await {
            Ok(records) => records,
            Err(error) => return self.recover(error, positions).await,
        };
        if records.is_empty() {
            self.upkeep.nothing_arrived(polled);
            return Ok(());
        }
        self.upkeep.not_idle();
        self.ctx.telemetry.recovered();
        if let Err(error) = schema_changes::learn(&records, &self.ctx).await {
            // The records are dropped with the scanner and read again.
            return self.recover(error, positions).await;
        }
        for (bucket, mut records) in records.into_records_by_buckets() {
            let key = BucketKey {
                partition: bucket.partition_id(),
                bucket: bucket.bucket_id(),
            };
            self.bounded
                .bound()
                .trim(&key, &mut records, ScanRecord::offset);
            let fetched = records.len();
            let kept = self.buckets.queue(key, records)?;
            self.ctx.telemetry.metrics().fetched(fetched, kept);
        }
        Ok(())
    }

    /// Hands `batch` over with its staged state: the leases of snapshots handed over given
    /// back, finished buckets unsubscribed, `positions` staged, the messages built.
    async fn hand_over(
        &mut self,
        batch: Batch,
        positions: Positions,
        filled: Filled,
    ) -> Result<ProducedMessages> {
        let Filled {
            drained,
            mut encode_time,
        } = filled;
        self.snapshots.give_back(&mut self.ctx).await;
        // Buckets this poll finished leave the scanner: it stops fetching rows that would
        // only be trimmed.
        for key in self.bounded.reached(self.progress.current(), &positions) {
            self.scan.unsubscribe(key).await;
        }
        let metrics = &self.ctx.telemetry.metrics();
        if metrics.enabled() {
            metrics.snapshots(self.buckets.snapshot_phases(&positions));
        }
        let (count, bytes) = (batch.len(), batch.bytes());
        let tally = Tally {
            messages: count as u64,
            rows: drained.records as u64,
            bytes: bytes as u64,
        };
        let state = self.stage(positions, tally, drained.times)?;
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
            self.ctx
                .telemetry
                .batch(count, drained.records, bytes, encode_time);
        }
        Ok(ProducedMessages {
            schema: self.ctx.format.batch_schema(),
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
            self.ctx.telemetry.finished(stops);
        }
        let state = self.stage(
            self.progress.current().clone(),
            Tally::default(),
            Timestamps::new(),
        )?;
        if state.is_none() {
            let pause = self.ctx.config.poll_interval.max(Duration::from_millis(1));
            tokio::time::sleep(pause).await;
        }
        Ok(ProducedMessages {
            schema: self.ctx.format.batch_schema(),
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
        times: Timestamps,
    ) -> Result<Option<ConnectorState>> {
        let force = tally.messages > 0 || self.bounded.stop_due(self.progress.has_staged());
        if &positions == self.progress.current() && !force {
            return Ok(None);
        }
        let scope = Scope {
            assignment: self.ctx.config.assignment,
            stop: self.bounded.bound().stop(),
        };
        let state = SavedState::encode(
            self.ctx.table.id(),
            &self.ctx.config.qualified_table(),
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
                    self.buckets.partitions(),
                    &mut self.ctx,
                )
                .await?;
        }
        let interval = self.ctx.config.partition_discovery_interval;
        if self.ctx.table.info.is_partitioned()
            && self.upkeep.discovery_due(Instant::now(), interval)
            && let Err(e) = self.discover().await
        {
            self.ctx.telemetry.retrying("listing partitions failed", &e);
        }
        self.snapshots.renew_lease(&mut self.ctx).await;
        if self.upkeep.records_flow() {
            self.upkeep.watermarks().list_when_due(
                Instant::now(),
                self.progress.current(),
                self.buckets.partitions(),
                &self.ctx,
            );
        }
        self.upkeep
            .progress_line(&self.progress, &mut self.ctx.telemetry);
        Ok(())
    }

    /// Subscribes new partitions from their earliest offset and forgets dropped ones.
    async fn discover(&mut self) -> Result<()> {
        let found =
            partition_changes::find(&self.ctx, self.buckets.partitions(), self.bounded.bound())
                .await?;
        let Some(found) = found else {
            return Ok(());
        };
        let dropped = partition_changes::forget(
            &found.changes.dropped,
            &self.ctx,
            &mut self.buckets,
            &mut self.progress,
            &mut self.bounded,
            &self.scan,
        )
        .await;
        self.snapshots.discard_ahead_if_gone(&self.buckets).await;
        let (added, starts) =
            partition_changes::take_on(&found, &self.ctx, &mut self.buckets, &mut self.progress)
                .await?;
        // A failure leaves the scanner to be rebuilt, which subscribes every bucket at its
        // committed position.
        self.scan.subscribe(&starts).await?;
        self.upkeep.watermarks().retain(self.progress.current());
        let telemetry = &mut self.ctx.telemetry;
        telemetry.partitions(&added, &dropped);
        telemetry.metrics().partitions(self.buckets.partitions());
        telemetry.metrics().committed(self.progress.committed());
        Ok(())
    }

    /// Takes the snapshot of `key` (see [`Snapshots::take`]), queues its rows, and subscribes
    /// the scanner to the changelog where the snapshot leaves off: its records queue behind
    /// the snapshot's rows. A stale scanner's rebuild subscribes it (see
    /// [`Buckets::reading`]).
    async fn take_snapshot(&mut self, key: BucketKey, positions: &mut Positions) -> Result<()> {
        let taken = self
            .snapshots
            .take(key, positions, &self.buckets, &mut self.ctx)
            .await?;
        let Some(taken) = taken else {
            return Ok(());
        };
        if let Some(opened) = taken.opened {
            self.buckets.queue_snapshot(key, opened)?;
        }
        let start: Positions = [(key, Position::At(taken.continue_at))]
            .into_iter()
            .collect();
        if let Err(error) = self.scan.subscribe(&start).await {
            if error.fault() != Fault::Retry {
                return Err(error);
            }
            self.ctx
                .telemetry
                .retrying("subscribing to a snapshot's changelog failed", &error);
        }
        Ok(())
    }

    /// Handles a failed client poll (see [`Scan::recover`]); `positions` are where the batch
    /// being built stands. After any poll error the scanner's own position is unknown: it
    /// starts over from ours.
    async fn recover(&mut self, error: Error, positions: &mut Positions) -> Result<()> {
        self.scan
            .recover(error, positions, self.buckets.partitions(), &mut self.ctx)
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
        self.scan.rebuild(&reading, &mut self.ctx).await
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
