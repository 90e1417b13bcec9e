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

//! The KV snapshot lease: while a bucket's snapshot is read, the coordinator keeps its files
//! on remote storage (it would otherwise delete them once `kv.snapshot.num-retained` newer
//! ones exist). One lease per connector instance and table, named after them, so a restart
//! takes over the lease it held; renewed while any bucket holds part of it. Snapshots are
//! leased a group at a time (see `crate::snapshot::listed`) and given back together: the
//! buckets handed over wait until [`GIVE_BACK_AT`] of them do, the first of them has waited
//! [`GIVE_BACK_AFTER`], or no other snapshot is held, then go in one request (a request per
//! poll would cost a coordinator round trip per small bucket). Closing keeps it: a restart
//! within [`DURATION`] goes on with the same snapshots, and an abandoned lease expires by
//! itself.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use fluss::metadata::{KvSnapshotLeaseForBucket, KvSnapshotLeaseForTable, TableBucket};
use fluss::{SnapshotId, TableId};

use crate::client::connect::{CALL_TIMEOUT, call};
use crate::client::table::Table;
use crate::error::Result;
use crate::position::BucketKey;

/// How long the lease lasts unless renewed: a stopped connector's lease expires by itself.
pub const DURATION: Duration = Duration::from_secs(30 * 60);
/// How often the lease is renewed while some bucket holds part of it.
const RENEW_EVERY: Duration = Duration::from_secs(60);
/// Handed-over snapshots are given back once this many wait: a lease group's worth.
pub const GIVE_BACK_AT: usize = 16;
/// ... or once the first of them has waited this long, so the coordinator can delete their
/// files soon after they are read.
pub const GIVE_BACK_AFTER: Duration = Duration::from_secs(1);

/// This instance's lease and the snapshots it holds.
pub struct Lease {
    id: String,
    table_id: TableId,
    held: BTreeMap<BucketKey, SnapshotId>,
    /// Buckets whose snapshot was handed over, not given back yet.
    handed_over: HandedOver,
    renewed: Instant,
}

impl Lease {
    /// The lease of connector `connector` (instance `instance`) on table `table_id`.
    pub fn new(connector: u32, table_id: TableId, instance: u32) -> Self {
        Self {
            id: format!("iggy-fluss-source-{connector}-{table_id}-{instance}"),
            table_id,
            held: BTreeMap::new(),
            handed_over: HandedOver::default(),
            renewed: Instant::now(),
        }
    }

    /// The lease's id, as the coordinator knows it.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Leases snapshot `snapshot` of bucket `key`; `false` when the coordinator no longer
    /// has it (a newer one replaced it meanwhile).
    pub async fn acquire(
        &mut self,
        table: &Table,
        key: BucketKey,
        snapshot: SnapshotId,
    ) -> Result<bool> {
        let leased = self.acquire_all(table, &[(key, snapshot)]).await?;
        Ok(leased.contains(&key))
    }

    /// Leases the snapshots of `wanted` in one request; returns the buckets whose snapshot it
    /// holds now (the coordinator no longer has the others: newer ones replaced them).
    pub async fn acquire_all(
        &mut self,
        table: &Table,
        wanted: &[(BucketKey, SnapshotId)],
    ) -> Result<Vec<BucketKey>> {
        let request = KvSnapshotLeaseForTable {
            table_id: self.table_id,
            bucket_snapshots: wanted
                .iter()
                .map(|(key, snapshot)| KvSnapshotLeaseForBucket {
                    partition_id: key.partition,
                    bucket_id: key.bucket,
                    snapshot_id: *snapshot,
                })
                .collect(),
        };
        let result = self.request(table, vec![request]).await?;
        let refused = |key: &BucketKey| {
            result.unavailable_snapshots.iter().any(|t| {
                t.bucket_snapshots
                    .iter()
                    .any(|b| b.partition_id == key.partition && b.bucket_id == key.bucket)
            })
        };
        let mut leased = Vec::with_capacity(wanted.len());
        for (key, snapshot) in wanted {
            if !refused(key) {
                self.held.insert(*key, *snapshot);
                leased.push(*key);
            }
        }
        Ok(leased)
    }

    /// Extends the lease when it is due (every minute while it holds a snapshot).
    pub async fn renew(&mut self, table: &Table) -> Result<()> {
        if self.held.is_empty() || self.renewed.elapsed() < RENEW_EVERY {
            return Ok(());
        }
        self.request(table, Vec::new()).await.map(drop)
    }

    async fn request(
        &mut self,
        table: &Table,
        snapshots: Vec<KvSnapshotLeaseForTable>,
    ) -> Result<fluss::metadata::AcquireKvSnapshotLeaseResult> {
        let millis = i64::try_from(DURATION.as_millis()).unwrap_or(i64::MAX);
        let result = call(
            "create_kv_snapshot_lease",
            CALL_TIMEOUT,
            table
                .admin
                .create_kv_snapshot_lease(&self.id, millis, snapshots),
        )
        .await?;
        self.renewed = Instant::now();
        Ok(result)
    }

    /// Notes that bucket `key`'s snapshot was handed over: [`Lease::give_back`] returns it.
    pub fn handed_over(&mut self, key: BucketKey) {
        if self.held.remove(&key).is_some() {
            self.handed_over.push(key, Instant::now());
        }
    }

    /// Gives back the snapshots handed over, in one request, once they are due (see the
    /// module's rule). Whatever becomes of the request, they are no longer held: one not
    /// given back expires with the lease.
    pub async fn give_back(&mut self, table: &Table) -> Result<()> {
        if !self.handed_over.due(Instant::now(), self.held.is_empty()) {
            return Ok(());
        }
        self.give_back_all(table).await
    }

    /// Gives back every snapshot handed over, due or not (at close).
    pub async fn give_back_all(&mut self, table: &Table) -> Result<()> {
        let keys = self.handed_over.take();
        if keys.is_empty() {
            return Ok(());
        }
        let buckets = keys
            .into_iter()
            .map(|key| TableBucket::new_with_partition(self.table_id, key.partition, key.bucket))
            .collect();
        call(
            "release_kv_snapshot_lease",
            CALL_TIMEOUT,
            table.admin.release_kv_snapshot_lease(&self.id, buckets),
        )
        .await
    }
}

/// The buckets whose snapshot was handed over and is not given back yet, and since when the
/// first of them waits.
#[derive(Debug, Default)]
struct HandedOver {
    keys: Vec<BucketKey>,
    since: Option<Instant>,
}

impl HandedOver {
    fn push(&mut self, key: BucketKey, now: Instant) {
        self.since.get_or_insert(now);
        self.keys.push(key);
    }

    /// Whether they should be given back now (`nothing_held`: no other snapshot is held, so
    /// no more are coming soon).
    fn due(&self, now: Instant, nothing_held: bool) -> bool {
        let Some(since) = self.since else {
            return false;
        };
        nothing_held
            || self.keys.len() >= GIVE_BACK_AT
            || now.saturating_duration_since(since) >= GIVE_BACK_AFTER
    }

    fn take(&mut self) -> Vec<BucketKey> {
        self.since = None;
        std::mem::take(&mut self.keys)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(bucket: i32) -> BucketKey {
        BucketKey {
            partition: Some(7),
            bucket,
        }
    }

    #[test]
    fn handed_over_snapshots_wait_for_a_group_a_second_or_the_last_one() {
        let start = Instant::now();
        let mut waiting = HandedOver::default();
        assert!(!waiting.due(start, true), "nothing waits");
        waiting.push(key(0), start);
        assert!(!waiting.due(start, false));
        assert!(waiting.due(start, true), "no other snapshot is held");
        assert!(
            waiting.due(start + GIVE_BACK_AFTER, false),
            "waited long enough"
        );
        for bucket in 1..GIVE_BACK_AT as i32 - 1 {
            waiting.push(key(bucket), start + Duration::from_millis(10));
        }
        assert!(!waiting.due(start + Duration::from_millis(500), false));
        waiting.push(key(99), start + Duration::from_millis(20));
        assert!(waiting.due(start, false), "a group's worth waits");
        let taken = waiting.take();
        assert_eq!(taken.len(), GIVE_BACK_AT);
        assert_eq!(taken.first(), Some(&key(0)));
        assert!(!waiting.due(start + GIVE_BACK_AFTER * 2, true), "none left");
        waiting.push(key(3), start + GIVE_BACK_AFTER * 2);
        assert!(
            !waiting.due(start + GIVE_BACK_AFTER * 2, false),
            "the wait starts again with the next one"
        );
    }
}
