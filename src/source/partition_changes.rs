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

//! Partition discovery every `partition_discovery_interval` (the listing and comparison are
//! [`crate::client::discovery`]'s): a new partition's buckets are registered and start at
//! their earliest offset (with their snapshots under `starting_offset = "full"`); a dropped
//! partition's buckets are forgotten everywhere.

use fluss::PartitionId;

use crate::client::discovery::{self, Changes, PartitionNames};
use crate::client::offsets;
use crate::config::options::StartingOffset;
use crate::context::Context;
use crate::error::Result;
use crate::position::Positions;
use crate::position::progress::Progress;
use crate::scope::stop::Bound;
use crate::source::bounded::BoundedRead;
use crate::source::queue::Buckets;
use crate::source::recovery::Scan;

/// What a discovery found.
pub(super) struct Found {
    /// Every partition `partitions` selects, as listed.
    pub now: PartitionNames,
    /// The partitions to take on and to forget.
    pub changes: Changes,
}

/// Lists the partitions and compares them with the `known` ones; `None` when nothing
/// changed. A partition is only taken on if this instance reads some bucket of it: it owns
/// one (`instance_index`) and `bound`, a bounded read's stop point, covers it (it never covers
/// partitions created after it was taken).
pub(super) async fn find(
    ctx: &Context,
    known: &PartitionNames,
    bound: &Bound,
) -> Result<Option<Found>> {
    let Context { table, config, .. } = ctx;
    let now = discovery::list(table, config.partitions.as_ref()).await?;
    let mut changes = discovery::diff(known, &now);
    changes.added.retain(|p| {
        table
            .bucket_keys(config.assignment, [*p])
            .iter()
            .any(|key| bound.reads(key))
    });
    if changes.added.is_empty() && changes.dropped.is_empty() {
        return Ok(None);
    }
    Ok(Some(Found { now, changes }))
}

/// Forgets the `dropped` partitions: their buckets leave `buckets`, `progress`, the bounded
/// read and the scanner. Returns each partition with the name it had.
pub(super) async fn forget(
    dropped: &[PartitionId],
    ctx: &Context,
    buckets: &mut Buckets,
    progress: &mut Progress,
    bounded: &mut BoundedRead,
    scan: &Scan,
) -> Vec<(PartitionId, String)> {
    let mut forgotten = Vec::with_capacity(dropped.len());
    for partition in dropped {
        let name = buckets.drop_partition(*partition).unwrap_or_default();
        for key in ctx.table.bucket_keys(ctx.config.assignment, [*partition]) {
            progress.forget(&key);
            bounded.forget(&key);
            // The scanner already ignores a vanished partition; unsubscribing stops its
            // warnings.
            scan.unsubscribe(key).await;
        }
        forgotten.push((*partition, name));
    }
    forgotten
}

/// Takes on the added partitions of `found`: their buckets' starting positions are looked
/// up, then the buckets are registered in `buckets` and their positions committed in
/// `progress` (only once their starts are known, so a failed lookup is simply retried by the
/// next discovery). Returns each partition taken on with its name, and the starting
/// positions, which the scanner is to subscribe.
pub(super) async fn take_on(
    found: &Found,
    ctx: &Context,
    buckets: &mut Buckets,
    progress: &mut Progress,
) -> Result<(Vec<(PartitionId, String)>, Positions)> {
    let Context { table, config, .. } = ctx;
    let assignment = config.assignment;
    let new_keys = table.bucket_keys(assignment, found.changes.added.iter().copied());
    // New partitions begin at their earliest offset, or with their snapshots under `full`.
    let start = match config.starting_offset {
        StartingOffset::Full => StartingOffset::Full,
        _ => StartingOffset::Earliest,
    };
    let starts = offsets::starting(table, &new_keys, &found.now, start).await?;
    let mut added = Vec::with_capacity(found.changes.added.len());
    for partition in &found.changes.added {
        let Some(name) = found.now.get(partition) else {
            continue;
        };
        let keys = table.bucket_keys(assignment, [*partition]);
        buckets.add_partition(*partition, name.clone(), &keys)?;
        added.push((*partition, name.clone()));
    }
    for (key, position) in &starts {
        progress.set_committed(*key, *position);
    }
    Ok((added, starts))
}
