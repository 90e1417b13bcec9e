//! Where a position applies: a bucket of the table, or of one of its partitions. A leaf
//! module, so every other module can name buckets without importing each other.

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

/// Whether `offset` marks a bucket still in its snapshot phase.
pub fn is_snapshot_pending(offset: i64) -> bool {
    offset == SNAPSHOT_PENDING
}
