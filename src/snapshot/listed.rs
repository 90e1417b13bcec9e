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

//! KV snapshots listed and leased ahead of their buckets' turn, a group at a time: each
//! partition of the group listed once (one request lists all its buckets), the table's schema
//! fetched once after the listings, and one lease request for the whole group. Taken one
//! bucket at a time, each bucket costs all three requests, and the coordinator's work on
//! them, not the bucket's rows, sets the pace of a table of many small buckets.
//!
//! A snapshot leased ahead is read when its bucket's turn comes, even if a newer one was taken
//! meanwhile: the lease keeps its files, and the bucket's changelog continues at the offset it
//! was taken at. Only buckets that have handed nothing over yet are leased ahead (one resuming
//! an earlier attempt goes on with that attempt's snapshot).

use std::collections::btree_map::{BTreeMap, Entry};
use std::sync::Arc;

use fluss::SnapshotId;

use crate::client::discovery::PartitionNames;
use crate::client::table::Table;
use crate::error::Result;
use crate::position::{BucketKey, Position, Positions};
use crate::snapshot::kv::latest::in_partition_of;
use crate::snapshot::opening::Opening;

/// The most buckets listed and leased together.
pub(super) const GROUP: usize = 16;

/// A bucket's snapshot, leased, with what opening it takes (the schema fetched after it was
/// listed).
pub(super) type Leased = (SnapshotId, Arc<Opening>);

/// The snapshots leased ahead of their buckets' turn ([`Leased`] each).
pub(super) struct Listed<V = Leased> {
    leased: BTreeMap<BucketKey, V>,
}

impl<V> Default for Listed<V> {
    fn default() -> Self {
        Self {
            leased: BTreeMap::new(),
        }
    }
}

impl<V> Listed<V> {
    /// The snapshot leased ahead for `key`, if any; it is no longer kept here.
    pub(super) fn take(&mut self, key: BucketKey) -> Option<V> {
        self.leased.remove(&key)
    }

    /// Keeps the snapshot leased ahead for `key` until its turn.
    pub(super) fn keep(&mut self, key: BucketKey, leased: V) {
        self.leased.insert(key, leased);
    }

    /// Forgets the buckets `reads` no longer reads (their partitions were dropped): their
    /// leases expire with the lease's next renewal missing them.
    pub(super) fn retain(&mut self, reads: impl Fn(BucketKey) -> bool) {
        self.leased.retain(|key, _| reads(*key));
    }

    /// The buckets to list and lease with `key`: `key` first, then up to [`GROUP`] in all of
    /// the buckets of `positions` after it that have handed nothing over yet, that `reads`
    /// says are read and that hold no snapshot leased ahead.
    pub(super) fn group(
        &self,
        key: BucketKey,
        positions: &Positions,
        reads: impl Fn(BucketKey) -> bool,
    ) -> Vec<BucketKey> {
        let after = positions
            .range(key..)
            .filter(|(other, position)| {
                **other != key
                    && **position == Position::SNAPSHOT
                    && reads(**other)
                    && !self.leased.contains_key(*other)
            })
            .map(|(other, _)| *other);
        std::iter::once(key).chain(after).take(GROUP).collect()
    }
}

/// The latest KV snapshot of each bucket of `group` that has one, each partition listed once
/// (when its first bucket in the group comes).
pub(super) async fn latest(
    group: &[BucketKey],
    table: &Table,
    names: &PartitionNames,
) -> Result<Vec<(BucketKey, SnapshotId)>> {
    let mut listings = BTreeMap::new();
    let mut latest = Vec::with_capacity(group.len());
    for member in group {
        let listing = match listings.entry(member.partition) {
            Entry::Occupied(listing) => listing.into_mut(),
            Entry::Vacant(entry) => entry.insert(in_partition_of(table, *member, names).await?),
        };
        if let Some(found) = listing.get(&member.bucket) {
            latest.push((*member, found.id));
        }
    }
    Ok(latest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_starts_at_its_bucket_and_takes_the_next_untouched_buckets_read() {
        let b = |partition: i64, bucket: i32| BucketKey {
            partition: Some(partition),
            bucket,
        };
        let resumed = Position::RESUMED;
        let mut positions: Positions = (0..20)
            .flat_map(|p| [(b(p, 0), Position::SNAPSHOT), (b(p, 1), Position::SNAPSHOT)])
            .collect();
        positions.insert(b(1, 0), resumed);
        positions.insert(b(1, 1), Position::At(3));
        let mut listed = Listed::<SnapshotId>::default();
        let group = listed.group(b(0, 1), &positions, |key| key != b(2, 1));
        assert_eq!(group.len(), GROUP);
        assert_eq!(&group[..3], [b(0, 1), b(2, 0), b(3, 0)], "{group:?}");
        assert!(!group.contains(&b(0, 0)), "only buckets after it");

        // A resumed bucket is its own group's first; buckets leased ahead are not leased again.
        listed.keep(b(2, 0), 1);
        let group = listed.group(b(1, 0), &positions, |_| true);
        assert_eq!(&group[..3], [b(1, 0), b(2, 1), b(3, 0)], "{group:?}");
        assert!(listed.take(b(2, 0)).is_some());
        assert!(listed.take(b(2, 0)).is_none(), "taken once");

        listed.keep(b(5, 0), 1);
        listed.retain(|key| key.partition != Some(5));
        assert!(listed.take(b(5, 0)).is_none(), "its partition was dropped");
    }
}
