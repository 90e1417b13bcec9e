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

//! Partition discovery: fluss-rs has no watcher, so partitions are listed at open and then
//! every `partition_discovery_interval`; new ones are read from their earliest offset and
//! dropped ones are forgotten.

use std::collections::{HashMap, HashSet};

use fluss::PartitionId;

use crate::client::connect::{CALL_TIMEOUT, call};
use crate::client::table::Table;
use crate::error::Result;
use crate::scope::prune::PartitionFilter;

/// Partition id → partition name (values joined by `$`, as Fluss names them).
pub type PartitionNames = HashMap<PartitionId, String>;

/// The partitions the table has now, those `filter` selects (`partitions`) if given.
pub async fn list(table: &Table, filter: Option<&PartitionFilter>) -> Result<PartitionNames> {
    Ok(list_split(table, filter).await?.0)
}

/// The partitions the table has now: those `filter` selects, and the ids of those it leaves
/// out (whose saved positions a state keeps for a later, wider selection).
pub async fn list_split(
    table: &Table,
    filter: Option<&PartitionFilter>,
) -> Result<(PartitionNames, HashSet<PartitionId>)> {
    let infos = call(
        "list_partition_infos",
        CALL_TIMEOUT,
        table.admin.list_partition_infos(&table.path),
    )
    .await?;
    let mut selected = PartitionNames::new();
    let mut left_out = HashSet::new();
    for info in infos {
        let spec = info.get_resolved_partition_spec();
        if filter.is_none_or(|f| f.matches(spec.get_partition_keys(), spec.get_partition_values()))
        {
            selected.insert(info.get_partition_id(), info.get_partition_name());
        } else {
            left_out.insert(info.get_partition_id());
        }
    }
    Ok((selected, left_out))
}

/// What changed between two listings.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Changes {
    /// Partitions that appeared, sorted by id.
    pub added: Vec<PartitionId>,
    /// Partitions that disappeared, sorted by id.
    pub dropped: Vec<PartitionId>,
}

/// Compares the known partitions with a new listing.
pub fn diff(known: &PartitionNames, now: &PartitionNames) -> Changes {
    let mut added: Vec<PartitionId> = now
        .keys()
        .filter(|p| !known.contains_key(p))
        .copied()
        .collect();
    let mut dropped: Vec<PartitionId> = known
        .keys()
        .filter(|p| !now.contains_key(p))
        .copied()
        .collect();
    added.sort_unstable();
    dropped.sort_unstable();
    Changes { added, dropped }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(ids: &[PartitionId]) -> PartitionNames {
        ids.iter().map(|id| (*id, format!("p{id}"))).collect()
    }

    #[test]
    fn diff_finds_added_and_dropped() {
        let changes = diff(&names(&[1, 2, 3]), &names(&[2, 3, 5, 4]));
        assert_eq!(
            changes,
            Changes {
                added: vec![4, 5],
                dropped: vec![1]
            }
        );
        assert_eq!(diff(&names(&[1]), &names(&[1])), Changes::default());
    }
}
