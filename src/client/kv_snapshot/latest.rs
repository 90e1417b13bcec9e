//! A bucket's latest KV snapshot, as the coordinator lists them.

use fluss::SnapshotId;

use crate::client::connect::{call, CALL_TIMEOUT};
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

/// The latest KV snapshot of bucket `key`, `None` while it has none (no rows were written
/// yet, or the first snapshot is not taken yet).
pub async fn latest(
    table: &Table,
    key: BucketKey,
    names: &PartitionNames,
) -> Result<Option<Latest>> {
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
        .find(|snapshot| snapshot.bucket_id == key.bucket)
        .and_then(|snapshot| {
            Some(Latest {
                id: snapshot.snapshot_id?,
                log_offset: snapshot.log_offset?,
            })
        }))
}
