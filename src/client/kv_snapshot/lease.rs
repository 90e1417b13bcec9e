//! The KV snapshot lease: while a bucket's snapshot is read, the coordinator keeps its files
//! on remote storage (it would otherwise delete them once `kv.snapshot.num-retained` newer
//! ones exist). One lease per connector instance and table, named after them, so a restart
//! takes over the lease it held; renewed while any bucket holds part of it. Snapshots are
//! leased a group at a time (see `source::snapshot::listed`) and given back together, the
//! buckets handed over since the last request in one request. Closing keeps it: a restart
//! within [`DURATION`] goes on with the same snapshots, and an abandoned lease expires by
//! itself.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use fluss::metadata::{KvSnapshotLeaseForBucket, KvSnapshotLeaseForTable, TableBucket};
use fluss::{SnapshotId, TableId};

use crate::client::connect::{call, CALL_TIMEOUT};
use crate::client::table::Table;
use crate::error::Result;
use crate::position::BucketKey;

/// How long the lease lasts unless renewed: a stopped connector's lease expires by itself.
pub const DURATION: Duration = Duration::from_secs(30 * 60);
/// How often the lease is renewed while some bucket holds part of it.
const RENEW_EVERY: Duration = Duration::from_secs(60);

/// This instance's lease and the snapshots it holds.
pub struct Lease {
    id: String,
    table_id: TableId,
    held: BTreeMap<BucketKey, SnapshotId>,
    /// Buckets whose snapshot was handed over, not given back yet.
    handed_over: Vec<BucketKey>,
    renewed: Instant,
}

impl Lease {
    /// The lease of connector `connector` (instance `instance`) on table `table_id`.
    pub fn new(connector: u32, table_id: TableId, instance: u32) -> Self {
        Self {
            id: format!("iggy-fluss-source-{connector}-{table_id}-{instance}"),
            table_id,
            held: BTreeMap::new(),
            handed_over: Vec::new(),
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
            self.handed_over.push(key);
        }
    }

    /// Gives back the snapshots handed over since the last call, in one request. Whatever
    /// becomes of the request, they are no longer held: one not given back expires with the
    /// lease.
    pub async fn give_back(&mut self, table: &Table) -> Result<()> {
        if self.handed_over.is_empty() {
            return Ok(());
        }
        let buckets = std::mem::take(&mut self.handed_over)
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
