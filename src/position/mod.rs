//! Where a position applies (a bucket of the table, or of one of its partitions) and what
//! it is. A leaf, so every other module can name buckets and positions without importing
//! each other.
//!
//! - [`progress`]: positions staged per batch until the runtime acknowledges them.

pub mod progress;

use std::collections::BTreeMap;

use fluss::{BucketId, PartitionId};
use serde::{Deserialize, Serialize};

/// Where a position applies: one bucket of the table, or of one of its partitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct BucketKey {
    /// The partition id for partitioned tables.
    pub partition: Option<PartitionId>,
    /// The bucket number.
    pub bucket: BucketId,
}

impl BucketKey {
    /// The key of bucket `bucket` of a non-partitioned table.
    pub fn bucket(bucket: BucketId) -> Self {
        Self {
            partition: None,
            bucket,
        }
    }
}

impl std::fmt::Display for BucketKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.partition {
            Some(p) => write!(f, "partition {p} bucket {}", self.bucket),
            None => write!(f, "bucket {}", self.bucket),
        }
    }
}

/// The next offset to read, per bucket.
pub type Positions = BTreeMap<BucketKey, i64>;

/// The position of a bucket whose snapshot (`starting_offset = "full"`) has not been handed
/// over whole yet: the bucket is not read from its changelog, and its snapshot is taken again
/// after a restart or a Nack. Never a real offset (those are ≥ 0).
pub const SNAPSHOT_PENDING: i64 = -1;

/// Whether `offset` marks a bucket still in its snapshot phase ([`SNAPSHOT_PENDING`] or
/// [`snapshot_pending_from`]).
pub fn is_snapshot_pending(offset: i64) -> bool {
    offset < 0
}

/// The position of a bucket in its snapshot phase whose snapshot taken at `continue_at` has
/// started to be handed over. Rows of that attempt may already be delivered when its snapshot
/// must be taken again (a Nack or a restart before its last row is acknowledged), and a later
/// snapshot no longer holds keys deleted in between; so every later attempt continues the
/// changelog at this first `continue_at`, whose changes (deletes included) bring the rows of
/// the earlier attempt up to date.
pub fn snapshot_pending_from(continue_at: i64) -> i64 {
    -2 - continue_at.max(0)
}

/// Where the changelog of a bucket in its snapshot phase must continue at the latest (see
/// [`snapshot_pending_from`]); `None` before any attempt was handed over.
pub fn snapshot_floor(offset: i64) -> Option<i64> {
    (offset <= -2).then(|| -2 - offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_floor_round_trips_and_stays_pending() {
        assert_eq!(snapshot_floor(SNAPSHOT_PENDING), None);
        for offset in [0, 1, 2738, i64::MAX - 2] {
            let marker = snapshot_pending_from(offset);
            assert!(is_snapshot_pending(marker), "{offset}");
            assert_eq!(snapshot_floor(marker), Some(offset));
        }
        assert!(!is_snapshot_pending(0));
        assert_eq!(snapshot_floor(0), None);
    }
}
