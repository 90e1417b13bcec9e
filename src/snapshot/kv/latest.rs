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

//! The buckets' latest KV snapshots, as the coordinator lists them: every bucket of one
//! partition (or of an unpartitioned table) in one request.

use std::collections::BTreeMap;

use fluss::{BucketId, SnapshotId};

use crate::client::connect::{CALL_TIMEOUT, call};
use crate::client::discovery::PartitionNames;
use crate::client::table::Table;
use crate::error::{Error, Result};
use crate::position::{BucketKey, Offset};

/// One KV snapshot of a bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Latest {
    /// The snapshot's id (per bucket, increasing).
    pub id: SnapshotId,
    /// The log offset it was taken at: it holds every change below.
    pub log_offset: Offset,
}

/// The latest KV snapshot of every bucket of `key`'s partition (of the table when it is not
/// partitioned) that has one: a bucket has none while no rows were written to it or its
/// first snapshot is not taken yet.
pub async fn in_partition_of(
    table: &Table,
    key: BucketKey,
    names: &PartitionNames,
) -> Result<BTreeMap<BucketId, Latest>> {
    let partition = match key.partition {
        Some(partition) => Some(
            names
                .get(&partition)
                .ok_or(Error::SnapshotUnanswered { key })?
                .as_str(),
        ),
        None => None,
    };
    let listed = call(
        "get_latest_kv_snapshots",
        CALL_TIMEOUT,
        table.admin.get_latest_kv_snapshots(&table.path, partition),
    )
    .await?;
    Ok(listed
        .latest_snapshots
        .iter()
        .filter_map(|snapshot| {
            let latest = Latest {
                id: snapshot.snapshot_id?,
                log_offset: snapshot.log_offset?,
            };
            Some((snapshot.bucket_id, latest))
        })
        .collect())
}
