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

//! A bucket's KV snapshot files, copied from remote storage (through fluss-rs's `FileIO`:
//! a local or shared file system, or S3 and OSS with the credentials Fluss hands out) into a
//! directory of their own under `snapshot_dir`, under the file names RocksDB expects. The
//! directory is removed when the copy is dropped.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use fluss::SnapshotId;
use fluss::io::{FileIO, FileRead};

use crate::client::connect::{CALL_TIMEOUT, call};
use crate::client::kv_snapshot::credentials::{SharedCredentials, needs_credentials};
use crate::client::table::Table;
use crate::error::{Error, Result};
use crate::position::{BucketKey, Offset};

/// Bytes read from remote storage per request (held in memory while written to disk).
const CHUNK: u64 = 1 << 20;
/// How long one chunk may take.
const CHUNK_TIMEOUT: Duration = Duration::from_secs(60);

/// A snapshot's files on local disk; the directory goes when this is dropped.
#[derive(Debug)]
pub struct LocalCopy {
    dir: PathBuf,
    /// Bytes of all its files.
    pub bytes: u64,
    /// The log offset the snapshot was taken at, as its metadata says.
    pub log_offset: Offset,
}

impl LocalCopy {
    /// A directory that already holds a snapshot's files (tests and benches build their own);
    /// removed when this is dropped, as a fetched copy is.
    pub fn existing(dir: PathBuf, log_offset: Offset) -> Self {
        Self {
            dir,
            bytes: 0,
            log_offset,
        }
    }

    /// The directory RocksDB opens.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for LocalCopy {
    fn drop(&mut self) {
        // Best effort: a leftover directory is removed by the next copy of the same bucket.
        let _ = std::fs::remove_dir_all(&self.dir);
        // The owner's directory too, once it holds no other bucket's copy.
        if let Some(owner) = self.dir.parent() {
            let _ = std::fs::remove_dir(owner);
        }
    }
}

/// Copies the files of snapshot `snapshot` of bucket `key` into a fresh directory under
/// `root`/`owner` (`owner` names the connector instance: several may share `root`). With
/// `most`, a snapshot whose files take more bytes is not copied (`None`): no file of it is
/// written beyond the first that would pass the bound, and none is kept.
pub async fn copy(
    table: &Table,
    key: BucketKey,
    snapshot: SnapshotId,
    root: &Path,
    owner: &str,
    credentials: &SharedCredentials,
    most: Option<u64>,
) -> Result<Option<LocalCopy>> {
    let metadata = call(
        "get_kv_snapshot_metadata",
        CALL_TIMEOUT,
        table
            .admin
            .get_kv_snapshot_metadata(table.id(), key.partition, key.bucket, snapshot),
    )
    .await?;
    let name = match key.partition {
        Some(partition) => format!("p{partition}-b{}", key.bucket),
        None => format!("b{}", key.bucket),
    };
    let dir = root.join(owner).join(name);
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(|e| disk_error(key, &dir, e))?;
    }
    std::fs::create_dir_all(&dir).map_err(|e| disk_error(key, &dir, e))?;
    // From here on the directory is removed again whatever happens.
    let mut local = LocalCopy {
        dir,
        bytes: 0,
        log_offset: metadata.log_offset,
    };
    for file in &metadata.snapshot_files {
        let target = local.dir.join(&file.local_file_name);
        let props = if needs_credentials(&file.remote_path) {
            credentials
                .lock()
                .await
                .props(&table.conn, &file.remote_path)
                .await
                .map_err(|missing| Error::SnapshotCredentials {
                    key,
                    path: file.remote_path.clone(),
                    reason: missing.to_string(),
                })?
        } else {
            Default::default()
        };
        let room = most.map_or(u64::MAX, |most| most.saturating_sub(local.bytes));
        match fetch(key, &file.remote_path, &props, &target, room).await? {
            Some(size) => local.bytes += size,
            None => return Ok(None),
        }
    }
    Ok(Some(local))
}

/// Copies one remote file to `target` (`props`: the object store's credentials and
/// settings); returns its size, `None` without writing it when it is larger than `room`.
async fn fetch(
    key: BucketKey,
    remote: &str,
    props: &HashMap<String, String>,
    target: &Path,
    room: u64,
) -> Result<Option<u64>> {
    let remote_error = |cause| Error::SnapshotRemote {
        key,
        path: remote.to_owned(),
        cause: Box::new(cause),
    };
    // fluss-rs's FileIO takes URLs; a coordinator on a local file system names plain paths.
    let url = if remote.contains("://") {
        remote.to_owned()
    } else {
        format!("file://{remote}")
    };
    let io = FileIO::from_url(&url)
        .and_then(|builder| {
            builder
                .with_props(props.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                .build()
        })
        .map_err(remote_error)?;
    let input = io.new_input(&url).map_err(remote_error)?;
    let size = remote_call(key, remote, input.metadata()).await?.size;
    if size > room {
        return Ok(None);
    }
    let reader = remote_call(key, remote, input.reader()).await?;
    let disk = |cause| disk_error(key, target, cause);
    let mut out = std::fs::File::create(target).map_err(disk)?;
    let mut at = 0;
    while at < size {
        let end = (at + CHUNK).min(size);
        let bytes = remote_call(key, remote, reader.read(at..end)).await?;
        out.write_all(&bytes).map_err(disk)?;
        at = end;
    }
    // Not synced to disk: the copy is a cache for this process, which RocksDB reads through
    // the page cache; after a crash it is removed and copied again, and a full disk fails
    // the writes above.
    Ok(Some(size))
}

/// A local file or directory of bucket `key`'s snapshot could not be written.
fn disk_error(key: BucketKey, path: &Path, cause: std::io::Error) -> Error {
    Error::SnapshotDisk {
        key,
        path: path.to_path_buf(),
        cause,
    }
}

/// One remote storage request for bucket `key`'s file `remote`, with a deadline.
async fn remote_call<T>(
    key: BucketKey,
    remote: &str,
    fut: impl std::future::Future<Output = fluss::error::Result<T>>,
) -> Result<T> {
    match tokio::time::timeout(CHUNK_TIMEOUT, fut).await {
        Ok(result) => result.map_err(|cause| Error::SnapshotRemote {
            key,
            path: remote.to_owned(),
            cause: Box::new(cause),
        }),
        Err(_) => Err(Error::Timeout {
            op: "reading a KV snapshot file",
            after: CHUNK_TIMEOUT,
        }),
    }
}
