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

//! Scale-out: which buckets one instance of a set reads (`instance_index`, `instance_count`).
//!
//! Every bucket of every partition has exactly one owner, computed from its key alone, so
//! instances agree without talking to each other, and partitions created later are shared out
//! the same way. The owner is the one Flink's Fluss source gives a split (its
//! `FlinkSourceEnumerator::getSplitOwner`):
//!
//! ```text
//! start = partition id ? ((Long.hashCode(partition id) * 31) & 0x7FFFFFFF) % count : 0
//! owner = (start + bucket) % count
//! ```
//!
//! where `Long.hashCode(p) = (int) (p ^ (p >>> 32))` and the multiplication wraps like Java's
//! `int`. The partition's offset keeps bucket 0 of every partition off the same instance.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::position::BucketKey;

/// This instance's share of the table: it reads the buckets whose owner is `index` among
/// `count` instances. Persisted in the state (positionally: `[index, count]`), so a restart
/// under another share is refused instead of reading buckets another instance owns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Assignment {
    /// This instance's number, `0..count`.
    pub index: u32,
    /// How many instances share the table (at least 1).
    pub count: u32,
}

impl Default for Assignment {
    /// One instance reading everything (also what state written before assignments existed
    /// means).
    fn default() -> Self {
        Self::ALL
    }
}

impl Assignment {
    /// One instance reading every bucket.
    pub const ALL: Self = Self { index: 0, count: 1 };

    /// The share `index` of `count`; `Err` says what is wrong with the pair.
    pub fn try_new(index: u32, count: u32) -> Result<Self, String> {
        if count == 0 {
            return Err("`instance_count` = 0 is not valid; use the number of connector instances sharing the table (1 or more)".into());
        }
        if index >= count {
            return Err(format!(
                "`instance_index` = {index} is not below `instance_count` = {count}; set `instance_count` to the number of instances sharing the table on every one of them, and give each its own `instance_index` from 0 to {}",
                count - 1
            ));
        }
        Ok(Self { index, count })
    }

    /// Whether this instance reads `key`.
    pub fn owns(&self, key: &BucketKey) -> bool {
        owner(key, self.count) == self.index
    }
}

impl fmt::Display for Assignment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "instance_index = {}, instance_count = {}",
            self.index, self.count
        )
    }
}

impl Assignment {
    /// The WARN an instance of more instances than the table has buckets logs at open, or
    /// `None`. `partitions` is the number of partitions read now (`None`: not partitioned),
    /// `owned` how many buckets this instance reads of them. Unpartitioned, instances
    /// `buckets..count` own nothing, ever. Partitioned, each partition's buckets go to
    /// `buckets` of the instances, starting at a different one per partition, so many
    /// partitions spread evenly: only an instance that owns none of the current ones is named.
    pub fn oversized(
        &self,
        buckets: i32,
        partitions: Option<usize>,
        owned: usize,
    ) -> Option<String> {
        let buckets = u32::try_from(buckets).unwrap_or(0);
        if self.count <= buckets {
            return None;
        }
        let fix = format!("lower `instance_count` to {buckets} or fewer on every instance");
        match partitions {
            None if self.index >= buckets => Some(format!(
                "{self}, but the table has {buckets} buckets: this instance owns none and stays idle; {fix}"
            )),
            None => Some(format!(
                "{self}, but the table has {buckets} buckets: instances {buckets} to {} stay idle; {fix}",
                self.count - 1
            )),
            Some(n) if n > 0 && owned == 0 => Some(format!(
                "{self}, but the table has {buckets} buckets per partition and none of its {n} partitions has one for this instance: it stays idle until a partition is created that does; {fix} to use every instance"
            )),
            Some(_) => None,
        }
    }
}

/// The instance (`0..count`) that reads `key`, as Flink's Fluss source assigns splits.
pub fn owner(key: &BucketKey, count: u32) -> u32 {
    let count = i64::from(count.max(1));
    let start = key.partition.map_or(0, |p| {
        // Java's `Long.hashCode`, then `* 31` in wrapping 32-bit arithmetic.
        let hash = (p ^ ((p as u64) >> 32) as i64) as i32;
        i64::from(hash.wrapping_mul(31) & 0x7FFF_FFFF) % count
    });
    // A bucket id is never negative; `rem_euclid` keeps the result in range regardless.
    ((start + i64::from(key.bucket)).rem_euclid(count)) as u32
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn key(partition: Option<i64>, bucket: i32) -> BucketKey {
        BucketKey { partition, bucket }
    }

    #[test]
    fn every_bucket_has_exactly_one_owner() {
        for count in 1..=5 {
            let shares: Vec<Assignment> = (0..count)
                .map(|i| Assignment::try_new(i, count).unwrap())
                .collect();
            for partition in [None, Some(0), Some(1), Some(17), Some(1 << 40), Some(-3)] {
                for bucket in 0..7 {
                    let k = key(partition, bucket);
                    let owners = shares.iter().filter(|s| s.owns(&k)).count();
                    assert_eq!(owners, 1, "{k} with {count} instances");
                }
            }
        }
    }

    #[test]
    fn the_owner_matches_flinks_split_owner() {
        // Non-partitioned: bucket % count.
        assert_eq!(owner(&key(None, 5), 3), 2);
        // Partition 1: Long.hashCode(1) = 1, start = 31 % 3 = 1, owner = (1 + 5) % 3 = 0.
        assert_eq!(owner(&key(Some(1), 5), 3), 0);
        // Partition 2^32 + 1: hashCode = 1 ^ 1 = 0, start = 0.
        assert_eq!(owner(&key(Some((1 << 32) + 1), 4), 3), 1);
        // Partition 100000000: 31 * 1e8 wraps in Java's int to -1194967296; & 0x7FFFFFFF
        // gives 952516352, % 7 = 4.
        assert_eq!(owner(&key(Some(100_000_000), 0), 7), 4);
    }

    #[test]
    fn seven_buckets_spread_over_three_instances() {
        let mut per_instance: BTreeMap<u32, usize> = BTreeMap::new();
        for partition in 0..6 {
            for bucket in 0..7 {
                *per_instance
                    .entry(owner(&key(Some(partition), bucket), 3))
                    .or_default() += 1;
            }
        }
        assert_eq!(per_instance.len(), 3, "{per_instance:?}");
        assert!(per_instance.values().all(|n| *n >= 12), "{per_instance:?}");
    }

    #[test]
    fn bad_pairs_are_refused_with_the_fix() {
        let e = Assignment::try_new(0, 0).unwrap_err();
        assert!(e.contains("`instance_count` = 0 is not valid"), "{e}");
        let e = Assignment::try_new(3, 3).unwrap_err();
        assert_eq!(
            e,
            "`instance_index` = 3 is not below `instance_count` = 3; set `instance_count` to the number of instances sharing the table on every one of them, and give each its own `instance_index` from 0 to 2"
        );
        assert_eq!(Assignment::try_new(0, 1).unwrap(), Assignment::ALL);
        assert!(Assignment::ALL.owns(&key(Some(9), 3)));
    }

    #[test]
    fn more_instances_than_buckets_is_named_with_the_fix() {
        let share = |i| Assignment::try_new(i, 4).unwrap();
        assert_eq!(share(3).oversized(4, None, 1), None);
        assert_eq!(share(3).oversized(4, Some(2), 0), None);
        let idle = share(3).oversized(3, None, 0).expect("idle");
        assert_eq!(
            idle,
            "instance_index = 3, instance_count = 4, but the table has 3 buckets: this instance owns none and stays idle; lower `instance_count` to 3 or fewer on every instance"
        );
        // Every bucket of an unpartitioned table goes to `bucket % count`: index 3 owns none.
        assert!((0..3).all(|b| !share(3).owns(&key(None, b))));
        let busy = share(0).oversized(3, None, 1).expect("busy");
        assert!(busy.contains("instances 3 to 3 stay idle"), "{busy}");
        // Partitioned: only an instance without a bucket of the current partitions is named;
        // a table without partitions yet, or an instance with buckets, is not.
        let partitioned = share(1).oversized(2, Some(1), 0).expect("partitioned");
        assert!(
            partitioned.contains("none of its 1 partitions has one for this instance"),
            "{partitioned}"
        );
        assert_eq!(share(1).oversized(2, Some(0), 0), None);
        assert_eq!(share(1).oversized(2, Some(5), 3), None);
    }
}
