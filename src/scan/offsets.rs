//! Turning `starting_offset` and `on_offset_out_of_range` into concrete log offsets.
//!
//! Positions are always real offsets (never fluss-rs' `EARLIEST_OFFSET` marker), so what is
//! persisted and logged says exactly where each bucket stands.

use std::collections::{BTreeMap, HashMap};

use fluss::rpc::message::OffsetSpec;
use fluss::PartitionId;

use crate::connect::{call, Table, CALL_TIMEOUT};
use crate::error::Result;
use crate::options::StartingOffset;
use crate::state::{BucketKey, Positions};

/// Asks the server for `spec` in every bucket of `keys`, one request per partition.
pub async fn list(
    table: &Table,
    keys: &[BucketKey],
    partition_names: &HashMap<PartitionId, String>,
    spec: OffsetSpec,
) -> Result<Positions> {
    let mut by_partition: BTreeMap<Option<PartitionId>, Vec<i32>> = BTreeMap::new();
    for key in keys {
        by_partition
            .entry(key.partition)
            .or_default()
            .push(key.bucket);
    }
    let mut positions = Positions::new();
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

/// Where buckets without saved state begin, per `starting_offset`.
pub async fn starting(
    table: &Table,
    keys: &[BucketKey],
    partition_names: &HashMap<PartitionId, String>,
    start: StartingOffset,
) -> Result<Positions> {
    if keys.is_empty() {
        return Ok(Positions::new());
    }
    match start {
        StartingOffset::Offset(offset) => Ok(keys.iter().map(|k| (*k, offset)).collect()),
        StartingOffset::Earliest => list(table, keys, partition_names, OffsetSpec::Earliest).await,
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
