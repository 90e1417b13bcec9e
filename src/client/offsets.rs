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

//! Turning `starting_offset` and `on_offset_out_of_range` into concrete log offsets.
//!
//! Positions are always real offsets (never fluss-rs' `EARLIEST_OFFSET` marker), so what is
//! persisted and logged says exactly where each bucket stands.

use std::collections::{BTreeMap, HashMap};

use fluss::rpc::message::OffsetSpec;
use fluss::{BucketId, PartitionId};

use crate::client::connect::{CALL_TIMEOUT, call};
use crate::client::table::Table;
use crate::config::options::{OutOfRangePolicy, StartingOffset};
use crate::error::Result;
use crate::position::{BucketKey, Offset, Offsets, Position, Positions, at};

/// Asks the server for `spec` in every bucket of `keys`, one request per partition.
pub async fn list(
    table: &Table,
    keys: &[BucketKey],
    partition_names: &HashMap<PartitionId, String>,
    spec: OffsetSpec,
) -> Result<Offsets> {
    let mut by_partition: BTreeMap<Option<PartitionId>, Vec<BucketId>> = BTreeMap::new();
    for key in keys {
        by_partition
            .entry(key.partition)
            .or_default()
            .push(key.bucket);
    }
    let mut positions = Offsets::new();
    for (partition, buckets) in by_partition {
        let offsets = match partition {
            None => {
                call(
                    "list_offsets",
                    CALL_TIMEOUT,
                    table
                        .admin
                        .list_offsets(&table.path, &buckets, spec.clone()),
                )
                .await?
            }
            Some(id) => {
                let Some(name) = partition_names.get(&id) else {
                    continue;
                };
                call(
                    "list_partition_offsets",
                    CALL_TIMEOUT,
                    table
                        .admin
                        .list_partition_offsets(&table.path, name, &buckets, spec.clone()),
                )
                .await?
            }
        };
        for (bucket, offset) in offsets {
            positions.insert(BucketKey { partition, bucket }, offset);
        }
    }
    Ok(positions)
}

/// Where buckets without saved state begin, per `starting_offset`. With `full`, a bucket of a
/// primary-key table begins with its snapshot ([`Position::SNAPSHOT`]), and one of a log
/// table at its earliest offset.
pub async fn starting(
    table: &Table,
    keys: &[BucketKey],
    partition_names: &HashMap<PartitionId, String>,
    start: StartingOffset,
) -> Result<Positions> {
    match start {
        StartingOffset::Full if table.primary_key => {
            Ok(keys.iter().map(|k| (*k, Position::SNAPSHOT)).collect())
        }
        start => Ok(at(resolve(table, keys, partition_names, start).await?)),
    }
}

/// The log offset of every bucket of `keys` that `start` names (`full` names the earliest).
pub async fn resolve(
    table: &Table,
    keys: &[BucketKey],
    partition_names: &HashMap<PartitionId, String>,
    start: StartingOffset,
) -> Result<Offsets> {
    if keys.is_empty() {
        return Ok(Offsets::new());
    }
    match start {
        StartingOffset::Offset(offset) => Ok(keys.iter().map(|k| (*k, offset)).collect()),
        StartingOffset::Full | StartingOffset::Earliest => {
            list(table, keys, partition_names, OffsetSpec::Earliest).await
        }
        StartingOffset::Latest => list(table, keys, partition_names, OffsetSpec::Latest).await,
        StartingOffset::Timestamp(ms) => {
            let found = list(table, keys, partition_names, OffsetSpec::Timestamp(ms)).await?;
            // A timestamp after the last record has no offset yet: start at the end.
            let missing: Vec<BucketKey> = keys
                .iter()
                .filter(|k| found.get(k).is_none_or(|o| *o < 0))
                .copied()
                .collect();
            let latest = list(table, &missing, partition_names, OffsetSpec::Latest).await?;
            let mut positions = found;
            positions.retain(|_, o| *o >= 0);
            positions.extend(latest);
            Ok(positions)
        }
    }
}

/// What `on_offset_out_of_range` makes of one bucket's position, given the log it has now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reset {
    /// The position is inside the log: nothing to do.
    Keep,
    /// The log was truncated past the position: continue at `to`, skipping `from..to`.
    Skip { from: Offset, to: Offset },
    /// The position is past the log end (the server lost its tail, or the state is from the
    /// future): every row below the new end was delivered already, and new rows will reuse
    /// the lost offsets, so every policy continues at the end, skipping nothing.
    PastEnd { from: Offset, to: Offset },
    /// `on_offset_out_of_range = "fail"`: stop.
    Fail,
    /// `on_offset_out_of_range = "snapshot"`: the log was truncated past the position; the
    /// bucket takes its snapshot again (primary-key tables).
    Snapshot { from: Offset, start: Offset },
}

/// The decision for a bucket at `position` whose log holds `start..=end`.
pub fn reset(position: Offset, start: Offset, end: Offset, policy: OutOfRangePolicy) -> Reset {
    if (start..=end).contains(&position) {
        return Reset::Keep;
    }
    if policy == OutOfRangePolicy::Fail {
        return Reset::Fail;
    }
    if position > end {
        return Reset::PastEnd {
            from: position,
            to: end,
        };
    }
    let to = match policy {
        OutOfRangePolicy::Latest => end,
        OutOfRangePolicy::Snapshot => {
            return Reset::Snapshot {
                from: position,
                start,
            };
        }
        OutOfRangePolicy::Earliest | OutOfRangePolicy::Fail => start,
    };
    Reset::Skip { from: position, to }
}

#[cfg(test)]
mod reset_tests {
    use super::*;
    use OutOfRangePolicy::{Earliest, Fail, Latest, Snapshot};

    #[test]
    fn positions_inside_the_log_are_kept_under_every_policy() {
        for policy in [Earliest, Latest, Fail, Snapshot] {
            for position in [10, 15, 20] {
                assert_eq!(reset(position, 10, 20, policy), Reset::Keep, "{position}");
            }
        }
    }

    #[test]
    fn a_truncated_log_skips_to_its_start_or_end() {
        assert_eq!(reset(3, 10, 20, Earliest), Reset::Skip { from: 3, to: 10 });
        assert_eq!(reset(3, 10, 20, Latest), Reset::Skip { from: 3, to: 20 });
        assert_eq!(reset(3, 10, 20, Fail), Reset::Fail);
        assert_eq!(
            reset(3, 10, 20, Snapshot),
            Reset::Snapshot { from: 3, start: 10 }
        );
    }

    #[test]
    fn a_position_past_the_end_continues_at_the_end_unless_failing() {
        assert_eq!(
            reset(25, 10, 20, Earliest),
            Reset::PastEnd { from: 25, to: 20 }
        );
        assert_eq!(
            reset(25, 10, 20, Latest),
            Reset::PastEnd { from: 25, to: 20 }
        );
        assert_eq!(reset(25, 10, 20, Fail), Reset::Fail);
    }

    #[test]
    fn an_empty_log_keeps_only_its_single_offset() {
        assert_eq!(reset(0, 0, 0, Fail), Reset::Keep);
        assert_eq!(reset(1, 0, 0, Earliest), Reset::PastEnd { from: 1, to: 0 });
    }
}
