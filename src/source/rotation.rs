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

//! Which buckets a listing of offsets asks about: [`Rotation`] walks a partitioned table's
//! partitions a slice per listing, so a listing costs the same whatever the number of
//! partitions.

use std::collections::BTreeSet;
use std::ops::Bound;

use fluss::PartitionId;

use crate::position::BucketKey;

/// At most this many partitions are listed at a time (by the liveness probe, and for the high
/// watermarks). Fluss lists offsets one partition per request, and fluss-rs refreshes its
/// whole client metadata (every partition of the table, two metadata requests) for each such
/// request, so listing every partition costs O(P²) CPU and 3P requests. Eight partitions answer
/// well within the probe's time limit at any number of partitions; one answer is enough to
/// notice an outage, and every bucket is listed once in ⌈P / 8⌉ listings.
pub(super) const PARTITIONS_PER_LISTING: usize = 8;

/// Where the walk over the partitions stands: the partition listed last.
/// Partitions are taken in id order, so partitions that appear or disappear between listings
/// change neither the order nor the place of the others.
#[derive(Debug, Default)]
pub(super) struct Rotation {
    /// `None`: nothing listed yet (the walk starts at the lowest id).
    last: Option<PartitionId>,
}

impl Rotation {
    /// The buckets of `keys` the next listing asks about, and the walk moved past them: every
    /// bucket of no partition (a non-partitioned table's, listed in one request), and the
    /// buckets of the next [`PARTITIONS_PER_LISTING`] partitions after the last listed one,
    /// wrapping around to the lowest id.
    pub(super) fn next(&mut self, keys: impl IntoIterator<Item = BucketKey>) -> Vec<BucketKey> {
        let mut keys: Vec<BucketKey> = keys.into_iter().collect();
        let partitions: BTreeSet<PartitionId> = keys.iter().filter_map(|k| k.partition).collect();
        if partitions.len() <= PARTITIONS_PER_LISTING {
            return keys;
        }
        let after = self.last.map_or(Bound::Unbounded, Bound::Excluded);
        // More partitions than a slice: the wrap never reaches those taken before it.
        let slice: Vec<PartitionId> = partitions
            .range((after, Bound::Unbounded))
            .chain(&partitions)
            .take(PARTITIONS_PER_LISTING)
            .copied()
            .collect();
        self.last = slice.last().copied();
        keys.retain(|key| key.partition.is_none_or(|p| slice.contains(&p)));
        keys
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two buckets of each partition in `ids`.
    fn keys(ids: impl IntoIterator<Item = PartitionId>) -> Vec<BucketKey> {
        ids.into_iter()
            .flat_map(|p| {
                (0..2).map(move |bucket| BucketKey {
                    partition: Some(p),
                    bucket,
                })
            })
            .collect()
    }

    /// The partitions of a probe's buckets, each once, in id order.
    fn partitions(probed: &[BucketKey]) -> Vec<PartitionId> {
        let ids: BTreeSet<PartitionId> = probed.iter().filter_map(|k| k.partition).collect();
        ids.into_iter().collect()
    }

    #[test]
    fn a_non_partitioned_table_is_probed_whole_every_time() {
        let mut rotation = Rotation::default();
        let all: Vec<BucketKey> = (0..100).map(BucketKey::bucket).collect();
        for _ in 0..3 {
            assert_eq!(rotation.next(all.clone()), all);
        }
    }

    #[test]
    fn a_few_partitions_are_probed_whole_every_time() {
        let mut rotation = Rotation::default();
        let all = keys(0..PARTITIONS_PER_LISTING as PartitionId);
        for _ in 0..3 {
            assert_eq!(rotation.next(all.clone()), all);
        }
        assert!(rotation.next(Vec::new()).is_empty());
    }

    #[test]
    fn the_partitions_are_probed_a_slice_at_a_time_every_bucket_of_them_and_wrap() {
        let mut rotation = Rotation::default();
        let all = keys(100..120);
        let first = rotation.next(all.clone());
        assert_eq!(partitions(&first), (100..108).collect::<Vec<_>>());
        assert_eq!(
            first.len(),
            2 * PARTITIONS_PER_LISTING,
            "both buckets of each"
        );
        assert_eq!(
            partitions(&rotation.next(all.clone())),
            (108..116).collect::<Vec<_>>()
        );
        assert_eq!(
            partitions(&rotation.next(all.clone())),
            (100..104).chain(116..120).collect::<Vec<_>>(),
            "the last four, then the walk starts over"
        );
        assert_eq!(
            partitions(&rotation.next(all)),
            (104..112).collect::<Vec<_>>()
        );
    }

    #[test]
    fn every_partition_is_probed_within_its_share_of_probes() {
        let count = 1000;
        let mut rotation = Rotation::default();
        let all = keys(0..count);
        let mut seen = BTreeSet::new();
        let probes = (count as usize).div_ceil(PARTITIONS_PER_LISTING);
        for _ in 0..probes {
            let probed = rotation.next(all.clone());
            assert!(partitions(&probed).len() <= PARTITIONS_PER_LISTING);
            seen.extend(probed);
        }
        assert_eq!(seen.len(), all.len(), "every bucket within ⌈P / N⌉ probes");
    }

    #[test]
    fn partitions_appearing_or_disappearing_between_probes_leave_the_walk_in_place() {
        let mut rotation = Rotation::default();
        assert_eq!(
            partitions(&rotation.next(keys(0..20))),
            (0..8).collect::<Vec<_>>()
        );
        // Partition 7 (the last probed) and 8 (the next) are dropped, 30 and 31 created.
        let changed = keys((0..7).chain(9..20).chain(30..32));
        assert_eq!(
            partitions(&rotation.next(changed.clone())),
            (9..17).collect::<Vec<_>>()
        );
        assert_eq!(
            partitions(&rotation.next(changed)),
            (0..3).chain(17..20).chain(30..32).collect::<Vec<_>>(),
            "the new partitions in their turn, then the walk wraps"
        );
        // Down to a handful: probed whole, and the walk goes on from there once they grow.
        assert_eq!(partitions(&rotation.next(keys(0..3))), vec![0, 1, 2]);
        assert_eq!(
            partitions(&rotation.next(keys(0..20))),
            (3..11).collect::<Vec<_>>()
        );
    }
}
