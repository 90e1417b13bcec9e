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
    pub const fn bucket(bucket: BucketId) -> Self {
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

/// A log offset within one bucket (fluss-rs has ids for tables, partitions and buckets but
/// none for offsets).
pub type Offset = i64;

/// Where a bucket is read from next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Position {
    /// The bucket's log (a primary-key table's changelog) is read from this next offset.
    At(Offset),
    /// The bucket is in its snapshot phase (`starting_offset = "full"`): its snapshot has not
    /// been handed over whole yet, so it is not read from its changelog, and its snapshot is
    /// taken again after a restart or a Nack.
    Snapshot {
        /// Where the changelog must continue at the latest, once an attempt at the snapshot
        /// started to be handed over (`None` before that): the offset that first attempt's
        /// changelog continued at. Rows of that attempt may already be delivered when the
        /// snapshot must be taken again, and a later snapshot no longer holds keys deleted in
        /// between; so every later attempt continues the changelog at this first offset,
        /// whose changes (deletes included) bring the rows of the earlier attempt up to date.
        floor: Option<Offset>,
        /// How far the current attempt got: the KV snapshot it reads and how many of its
        /// rows were handed over in batches that were then acknowledged (`None` before any
        /// batch of it was). A restart or Nack goes on from there in the same snapshot.
        resume: Option<Resume>,
    },
}

/// Where a bucket's snapshot goes on: its KV snapshot and the rows of it already handed over
/// (counted in key order before any `filter`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Resume {
    /// The KV snapshot's id.
    pub snapshot: i64,
    /// Its first rows (in key order) that were read past: handed over, or left out by a filter.
    pub rows: u64,
    /// Read through a `filter`: how many of those rows the filter kept, which is the index of
    /// the next row handed over. `None` without a filter, where every row counts.
    pub kept: Option<u64>,
}

impl Position {
    /// A bucket whose snapshot is still to be taken, no attempt handed over yet.
    pub const SNAPSHOT: Self = Self::Snapshot {
        floor: None,
        resume: None,
    };

    /// A bucket resuming snapshot 1 after 10 of its rows, its changelog continuing at 4
    /// (tests of what treats such a bucket apart from one that handed nothing over).
    #[cfg(test)]
    pub(crate) const RESUMED: Self = Self::Snapshot {
        floor: Some(4),
        resume: Some(Resume {
            snapshot: 1,
            rows: 10,
            kept: None,
        }),
    };

    /// The next offset of its log, `None` in the snapshot phase.
    pub fn offset(self) -> Option<Offset> {
        match self {
            Self::At(offset) => Some(offset),
            Self::Snapshot { .. } => None,
        }
    }

    /// Whether the bucket is still in its snapshot phase.
    pub fn is_snapshot(self) -> bool {
        matches!(self, Self::Snapshot { .. })
    }
}

impl std::fmt::Display for Position {
    /// The offset, or `snapshot` (how the open line shows where a bucket starts).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::At(offset) => write!(f, "{offset}"),
            Self::Snapshot { .. } => f.write_str("snapshot"),
        }
    }
}

/// Where each bucket is read from next.
pub type Positions = BTreeMap<BucketKey, Position>;

/// An offset per bucket, as Fluss lists them (earliest, latest, by timestamp) and as a stop
/// point keeps them.
pub type Offsets = BTreeMap<BucketKey, Offset>;

/// The commit timestamp (epoch milliseconds) of the last row of each bucket in a batch.
pub type Timestamps = BTreeMap<BucketKey, i64>;

/// Every bucket of `offsets`, read from its offset.
pub fn at(offsets: Offsets) -> Positions {
    offsets
        .into_iter()
        .map(|(key, offset)| (key, Position::At(offset)))
        .collect()
}

/// Positions the unit tests of several modules share.
#[cfg(test)]
pub(crate) mod samples {
    use super::{BucketKey, Offsets, Positions, at};

    /// Three buckets, one of them of partition 7, at offsets 10, 0 and `i64::MAX`.
    pub(crate) fn offsets() -> Offsets {
        let mut o = Offsets::new();
        o.insert(BucketKey::bucket(0), 10);
        o.insert(BucketKey::bucket(2), 0);
        o.insert(
            BucketKey {
                partition: Some(7),
                bucket: 1,
            },
            i64::MAX,
        );
        o
    }

    /// [`offsets`] as positions read from those offsets.
    pub(crate) fn positions() -> Positions {
        at(offsets())
    }
}
