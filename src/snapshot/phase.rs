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

//! Taking bucket snapshots (`starting_offset = "full"`) while polling, from the buckets' KV
//! snapshot files (see [`crate::snapshot::kv`]): handed over one bucket at a time (the
//! next one opened meanwhile, [`super::opened_ahead`]), read a bounded batch at a time on a
//! thread of its own ([`crate::snapshot::files::read_ahead::ReadAhead`]) while the previous
//! batch is encoded. A
//! bucket's position stays [`Position::Snapshot`] until the last of its snapshot's rows is in
//! a batch; a Nack or a restart before that batch is acknowledged goes on after the rows
//! acknowledged, in the same snapshot. A bucket without a KV snapshot yet (nothing written to
//! it, or its first snapshot not taken yet) reads its changelog from its earliest offset,
//! which then still holds every change.
//!
//! [`Snapshots`] owns what the snapshot phase holds between polls: the KV snapshot lease, the
//! object-store credentials and the bucket opened ahead. A snapshot taken ([`Taken`]) goes to
//! the caller, which queues its rows and subscribes the changelog where it leaves off.

use std::sync::Arc;
use std::time::{Duration, Instant};

use fluss::SnapshotId;
use fluss::rpc::message::OffsetSpec;

use crate::client::discovery::PartitionNames;
use crate::client::offsets;
use crate::client::table::Table;
use crate::context::Context;
use crate::error::{Error, Fault, RETRY_PAUSE, Result};
use crate::position::{BucketKey, Offset, Position, Positions, Resume};
use crate::snapshot::files::Opened;
use crate::snapshot::hand_over::Report;
use crate::snapshot::kv::credentials::SharedCredentials;
use crate::snapshot::kv::lease::Lease;
use crate::snapshot::kv::local_dir::{self, SnapshotDir};
use crate::snapshot::listed::{self, Leased, Listed};
use crate::snapshot::opened_ahead::{self, Ahead, Turn};
use crate::snapshot::opening::{Copied, Opening};
use crate::telemetry::Telemetry;

/// The snapshot phase's state: the lease of the buckets taking their snapshot, the snapshots
/// leased ahead of their turn, credentials for KV snapshot files on an object store (fetched
/// on first need), and the next bucket's snapshot, opened while the one before it is handed
/// over.
pub struct Snapshots {
    /// The bucket whose snapshot failed for a cause the operator fixes, and when it is tried
    /// again.
    backoff: Option<Backoff>,
    lease: Lease,
    /// The instance's directory under `snapshot_dir`, named after the lease.
    dir: Arc<SnapshotDir>,
    listed: Listed,
    credentials: SharedCredentials,
    ahead: Ahead,
}

/// The longest pause between two attempts at a bucket's snapshot that keeps failing for a cause
/// the operator fixes (see [`needs_operator`]).
const RETRY_MOST: Duration = Duration::from_secs(10);

/// When a bucket's snapshot that failed for a cause the operator fixes is tried again: each
/// failure in a row doubles the pause, from [`RETRY_PAUSE`] up to [`RETRY_MOST`], so a full
/// disk or an unreachable store costs a few requests a minute rather than two a second, and
/// the buckets already past their snapshot are read meanwhile.
struct Backoff {
    key: BucketKey,
    pause: Duration,
    next: Instant,
}

/// The buckets the instance reads, as the snapshot phase asks about them.
pub trait Reads {
    /// Whether bucket `key` is read.
    fn reads(&self, key: BucketKey) -> bool;
    /// Partition id → name of every partition read.
    fn partitions(&self) -> &PartitionNames;
}

/// A bucket's snapshot taken: where its changelog continues, for the scanner to subscribe,
/// and its rows to hand over first (`None`: the bucket has no KV snapshot and is read from
/// its changelog).
pub struct Taken {
    /// The offset the bucket's changelog continues at.
    pub continue_at: Offset,
    /// The snapshot, opened.
    pub opened: Option<Opened>,
}

impl Snapshots {
    /// Nothing taken yet for instance `id`. The snapshots' files go to `snapshot_dir`, into a
    /// directory named after the instance's lease and this process: the lease's id is unique
    /// in its cluster, but runtimes reading several clusters share a host (and a
    /// `snapshot_dir`). A primary-key table's instance first removes (or reports) what runs
    /// that ended without closing left there.
    pub fn open(id: u32, ctx: &Context) -> Self {
        let (table, config) = (&ctx.table, &ctx.config);
        if table.primary_key {
            // Only primary-key tables copy KV snapshot files.
            for leftover in local_dir::remove_leftovers(&config.snapshot_dir) {
                ctx.telemetry.snapshot_leftover(&leftover);
            }
        }
        let lease = Lease::new(id, table.id(), config.assignment.index);
        let name = format!("{}-{}", lease.id(), std::process::id());
        Self {
            backoff: None,
            dir: Arc::new(SnapshotDir::new(&config.snapshot_dir, &name)),
            lease,
            listed: Listed::default(),
            credentials: SharedCredentials::default(),
            ahead: Ahead::default(),
        }
    }

    /// Renews the lease when due; a failure is logged (it is retried on the next poll).
    pub async fn renew_lease(&mut self, ctx: &mut Context) {
        if let Err(e) = self.lease.renew(&ctx.table).await {
            ctx.telemetry.retrying(
                &format!("renewing the KV snapshot lease {} failed", self.lease.id()),
                &e,
            );
        }
    }

    /// Takes the snapshot of `key`, a bucket `buckets` reads; a bucket without a KV snapshot
    /// is read from its changelog instead. `None` when a transient failure was logged, to be
    /// retried later.
    pub async fn take(
        &mut self,
        key: BucketKey,
        positions: &mut Positions,
        buckets: &impl Reads,
        ctx: &mut Context,
    ) -> Result<Option<Taken>> {
        match self.try_take(key, positions, buckets, ctx).await {
            Err(error) if error.fault() == Fault::Retry => {
                failed(&mut ctx.telemetry, key, &error);
                if needs_operator(&error) {
                    let pause = match &self.backoff {
                        Some(backoff) if backoff.key == key => (backoff.pause * 2).min(RETRY_MOST),
                        _ => RETRY_PAUSE,
                    };
                    self.backoff = Some(Backoff {
                        key,
                        pause,
                        next: Instant::now() + pause,
                    });
                }
                tokio::time::sleep(RETRY_PAUSE).await;
                Ok(None)
            }
            result => {
                self.backoff.take_if(|backoff| backoff.key == key);
                result.map(Some)
            }
        }
    }

    /// Whether `key`'s snapshot may be tried now: not while its pause after failures in a
    /// row lasts.
    pub fn may_take(&self, key: BucketKey, now: Instant) -> bool {
        self.backoff
            .as_ref()
            .is_none_or(|backoff| backoff.key != key || now >= backoff.next)
    }

    async fn try_take(
        &mut self,
        key: BucketKey,
        positions: &mut Positions,
        buckets: &impl Reads,
        ctx: &Context,
    ) -> Result<Taken> {
        ctx.telemetry.snapshot_started(key);
        // A resume goes on numbering the rows as the attempt it comes from did: one saved
        // without a filter (or before filtered rows were numbered among the kept ones) while a
        // filter is set, or the other way round, starts the snapshot over.
        let filtered = ctx.config.filter.is_some();
        let resume = match positions.get(&key) {
            Some(Position::Snapshot { resume, .. }) => {
                resume.filter(|resume| resume.kept.is_some() == filtered)
            }
            _ => None,
        };
        let taken = match self
            .open_snapshot(key, resume, positions, buckets, ctx)
            .await?
        {
            Some(mut opened) => {
                match positions.get(&key) {
                    Some(Position::Snapshot {
                        floor: Some(floor), ..
                    }) => {
                        opened.continue_from(*floor);
                    }
                    // The first attempt: its rows are about to be handed over.
                    _ => {
                        let floor = Some(opened.continue_at);
                        positions.insert(
                            key,
                            Position::Snapshot {
                                floor,
                                resume: None,
                            },
                        );
                    }
                }
                self.open_ahead(key, positions, buckets, ctx).await;
                Taken {
                    continue_at: opened.continue_at,
                    opened: Some(opened),
                }
            }
            None => {
                let earliest = earliest(&ctx.table, key, buckets.partitions()).await?;
                ctx.telemetry.snapshot_absent(key, earliest);
                // After an attempt that handed rows over, from where its changelog continued.
                let at = match positions.get(&key) {
                    Some(Position::Snapshot {
                        floor: Some(floor), ..
                    }) => *floor,
                    _ => earliest,
                };
                positions.insert(key, Position::At(at));
                Taken {
                    continue_at: at,
                    opened: None,
                }
            }
        };
        Ok(taken)
    }

    /// The KV snapshot of `key` to read, leased, copied and opened, past the rows `resume`
    /// says were handed over; `None` if the bucket has none.
    async fn open_snapshot(
        &mut self,
        key: BucketKey,
        resume: Option<Resume>,
        positions: &Positions,
        buckets: &impl Reads,
        ctx: &Context,
    ) -> Result<Option<Opened>> {
        let (table, telemetry) = (&ctx.table, &ctx.telemetry);
        let started = Instant::now();
        // The same snapshot as the attempt `resume` comes from, while Fluss still has it.
        if let Some(resume) = resume {
            let gone = if self.lease.acquire(table, key, resume.snapshot).await? {
                let opening = Opening::prepare(ctx, &self.dir, &self.credentials).await?;
                let copied = self
                    .copy(&opening, key, resume.snapshot, resume.rows, started)
                    .await;
                match copied {
                    // The lease was granted, but Fluss had already deleted the snapshot.
                    Err(error) if snapshot_not_found(&error) => true,
                    result => {
                        return result.map(|copied| {
                            let mut opened = copied.logged(telemetry);
                            opened.first_index = resume.kept.unwrap_or(opened.skipped);
                            Some(opened)
                        });
                    }
                }
            } else {
                true
            };
            if gone {
                telemetry.warn(&format!(
                    "{key}: KV snapshot {} is gone (its lease expired or Fluss deleted it) after {} of its rows were handed over; the bucket's snapshot starts over from its newest KV snapshot, and its changelog continues where the first attempt's did",
                    resume.snapshot, resume.rows
                ));
            }
        } else {
            if let Some(turn) = self.ahead.take(key).await {
                match turn {
                    // Opened while the buckets before it were handed over; its time counts from
                    // its turn.
                    Turn::Opened(copied) => {
                        return unanswered_if_gone(key, copied).map(|copied| {
                            let mut opened = copied.logged(telemetry);
                            opened.started = started;
                            Some(opened)
                        });
                    }
                    // Too large to open ahead: opened now, below.
                    Turn::AtItsTurn(leased) => self.listed.keep(key, leased),
                }
            }
        }
        let leased = self.leased_latest(key, positions, buckets, ctx).await?;
        let Some((snapshot, opening)) = leased else {
            return Ok(None);
        };
        let copied = self.copy(&opening, key, snapshot, 0, started).await;
        unanswered_if_gone(key, copied).map(|copied| Some(copied.logged(telemetry)))
    }

    /// The latest KV snapshot of `key`, leased, with what opening it takes; `None` while the
    /// bucket has none. Unless it was leased ahead, it is listed and leased with the next
    /// buckets due after it ([`listed`]), which keep theirs until their turn.
    async fn leased_latest(
        &mut self,
        key: BucketKey,
        positions: &Positions,
        buckets: &impl Reads,
        ctx: &Context,
    ) -> Result<Option<Leased>> {
        let table = &ctx.table;
        if let Some(leased) = self.listed.take(key) {
            return Ok(Some(leased));
        }
        let group = self
            .listed
            .group(key, positions, |other| buckets.reads(other));
        let latest = listed::latest(&group, table, buckets.partitions()).await?;
        if latest.is_empty() {
            return Ok(None);
        }
        // Fetched after the listings: it knows every schema version their snapshots hold.
        let opening = Arc::new(Opening::prepare(ctx, &self.dir, &self.credentials).await?);
        let has_one = latest.iter().any(|(other, _)| *other == key);
        let leased = self.lease.acquire_all(table, &latest).await?;
        table
            .know_partitions(leased.iter().filter_map(|other| other.partition))
            .await;
        let mut own = None;
        for (other, snapshot) in latest {
            if !leased.contains(&other) {
                continue;
            }
            if other == key {
                own = Some((snapshot, Arc::clone(&opening)));
            } else {
                self.listed.keep(other, (snapshot, Arc::clone(&opening)));
            }
        }
        match own {
            Some(own) => Ok(Some(own)),
            // Listed without a snapshot: read from its changelog.
            None if !has_one => Ok(None),
            // Replaced by a newer snapshot between the listing and the lease.
            None => Err(Error::SnapshotUnanswered { key }),
        }
    }

    /// Copies KV snapshot `snapshot` of `key` (leased) and opens it past its first `skip` rows.
    async fn copy(
        &mut self,
        opening: &Opening,
        key: BucketKey,
        snapshot: SnapshotId,
        skip: u64,
        started: Instant,
    ) -> Result<Copied> {
        let mut copied = opening.open(key, snapshot, skip, started, None).await;
        // No room while buckets opened ahead hold their files: they give them back (and are
        // opened again at their turn), so this bucket, whose turn it is, is not kept waiting.
        if matches!(copied, Err(Error::SnapshotSpace { .. })) && !self.ahead.is_empty() {
            self.ahead.discard_unless(|_| false).await;
            copied = opening.open(key, snapshot, skip, started, None).await;
        }
        // Without a bound on its size it is always copied.
        copied?.ok_or(Error::SnapshotUnanswered { key })
    }

    /// Opens the snapshots of the buckets due after `current` (whose snapshot was just
    /// queued) that have handed nothing over yet, as many as [`Ahead::room`] allows.
    /// Failures are left to their turn.
    async fn open_ahead(
        &mut self,
        current: BucketKey,
        positions: &Positions,
        buckets: &impl Reads,
        ctx: &Context,
    ) {
        while let Some(most) = self.ahead.room() {
            let Some(next) = opened_ahead::next(current, positions, |key| {
                buckets.reads(key) && !self.ahead.has(key)
            }) else {
                return;
            };
            let started = Instant::now();
            let leased = self.leased_latest(next, positions, buckets, ctx).await;
            let Ok(Some(leased)) = leased else {
                return;
            };
            self.ahead.start(next, leased, started, most);
        }
    }

    /// Drops the snapshots opened ahead (a Nack, the close).
    pub async fn discard_ahead(&mut self) {
        self.ahead.discard_unless(|_| false).await;
    }

    /// Removes the instance's directory under `snapshot_dir` (the close).
    pub fn remove_dir(&self) {
        self.dir.remove();
    }

    /// Drops the snapshots opened or leased ahead whose bucket `buckets` does not read (its
    /// partition was dropped), so their files do not wait for the next snapshot or the close.
    pub async fn discard_ahead_if_gone(&mut self, buckets: &impl Reads) {
        self.listed.retain(|key| buckets.reads(key));
        self.ahead.discard_unless(|key| buckets.reads(key)).await;
    }

    /// After a drain: notes the snapshots `finished` (given back by [`Snapshots::give_back`])
    /// and logs why the `failed` ones failed (their buckets take their snapshot again).
    pub fn settled(
        &mut self,
        finished: &[Report],
        failed_now: &[(BucketKey, Error)],
        telemetry: &mut Telemetry,
    ) {
        for report in finished {
            telemetry.snapshot_finished(report);
            self.lease.handed_over(report.key);
        }
        for (key, error) in failed_now {
            failed(telemetry, *key, error);
        }
    }

    /// Gives back the leases of the snapshots handed over once they are due (see
    /// [`crate::snapshot::kv::lease`]), in one request; a failure is logged (the lease
    /// expires by itself).
    pub async fn give_back(&mut self, ctx: &mut Context) {
        let given = self.lease.give_back(&ctx.table).await;
        self.given_back(given, &mut ctx.telemetry);
    }

    /// Gives back the leases of every snapshot handed over, due or not (at close).
    pub async fn give_back_all(&mut self, ctx: &mut Context) {
        let given = self.lease.give_back_all(&ctx.table).await;
        self.given_back(given, &mut ctx.telemetry);
    }

    fn given_back(&self, given: Result<()>, telemetry: &mut Telemetry) {
        if let Err(error) = given {
            telemetry.retrying(
                &format!(
                    "giving back snapshots of the KV snapshot lease {} failed (it expires by itself)",
                    self.lease.id()
                ),
                &error,
            );
        }
    }
}

/// Whether a failed snapshot needs the operator (storage, disk, a corrupt copy) rather than
/// a moment (a transient Fluss failure).
fn needs_operator(error: &Error) -> bool {
    matches!(
        error,
        Error::SnapshotRemote { .. }
            | Error::SnapshotCredentials { .. }
            | Error::SnapshotDisk { .. }
            | Error::SnapshotSpace { .. }
            | Error::SnapshotCorrupt { .. }
    )
}

/// Logs why bucket `key`'s snapshot failed: an ERROR for what needs the operator, a WARN for
/// a transient Fluss failure.
fn failed(telemetry: &mut Telemetry, key: BucketKey, error: &Error) {
    if needs_operator(error) {
        telemetry.refused(error);
    } else {
        telemetry.retrying(&format!("taking the snapshot of {key} failed"), error);
    }
}

/// The earliest offset of bucket `key`.
async fn earliest(table: &Table, key: BucketKey, names: &PartitionNames) -> Result<Offset> {
    offsets::list(table, &[key], names, OffsetSpec::Earliest)
        .await?
        .get(&key)
        .copied()
        .ok_or(Error::SnapshotUnanswered { key })
}

/// A snapshot listed and leased, then deleted before its files were copied, is not an
/// error: the next attempt lists the bucket's snapshots anew.
fn unanswered_if_gone<T>(key: BucketKey, opened: Result<T>) -> Result<T> {
    match opened {
        Err(error) if snapshot_not_found(&error) => Err(Error::SnapshotUnanswered { key }),
        result => result,
    }
}

/// Whether `error` says the coordinator does not know the KV snapshot asked for (it was
/// deleted).
fn snapshot_not_found(error: &Error) -> bool {
    matches!(error, Error::Fluss { cause, .. }
        if cause.api_error() == Some(fluss::error::FlussError::KvSnapshotNotExist))
}
