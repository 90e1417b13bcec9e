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
//! directory of their own in the connector instance's directory under `snapshot_dir`
//! ([`SnapshotDir`]: private to the process's user), under the file names RocksDB expects.
//! The bucket's directory is removed when the copy is dropped.
//!
//! The files' sizes are asked for first, so a snapshot that does not fit (the bound of a
//! snapshot opened ahead, or the space free in `snapshot_dir`) writes nothing; a disk that
//! fills meanwhile fails the copy with the same error, naming the bytes needed.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use fluss::SnapshotId;
use fluss::io::{FileIO, FileRead};

use crate::client::connect::{CALL_TIMEOUT, call};
use crate::client::table::Table;
use crate::error::{Error, Result};
use crate::position::{BucketKey, Offset};
use crate::snapshot::kv::credentials::{SharedCredentials, needs_credentials};
use crate::snapshot::kv::local_dir::{self, SnapshotDir};

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
    /// The instance's directory holding `dir`, kept (and locked) while a copy in it lives.
    _owner: Option<Arc<SnapshotDir>>,
}

impl LocalCopy {
    /// A directory that already holds a snapshot's files (tests and benches build their own);
    /// removed when this is dropped, as a fetched copy is.
    pub fn existing(dir: PathBuf, log_offset: Offset) -> Self {
        Self {
            dir,
            bytes: 0,
            log_offset,
            _owner: None,
        }
    }

    /// The directory RocksDB opens.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for LocalCopy {
    fn drop(&mut self) {
        // Best effort: a leftover directory is removed by the next copy of the same bucket,
        // or with the instance's directory.
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Copies the files of snapshot `snapshot` of bucket `key` into a fresh directory in `dir`
/// (the connector instance's). With `most`, a snapshot whose files take more bytes is not
/// copied (`None`), and nothing of it is written.
pub async fn copy(
    table: &Table,
    key: BucketKey,
    snapshot: SnapshotId,
    dir: &Arc<SnapshotDir>,
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
    let mut remote = Vec::with_capacity(metadata.snapshot_files.len());
    for file in &metadata.snapshot_files {
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
        let input = RemoteFile::open(key, &file.remote_path, &props).await?;
        remote.push((input, &file.local_file_name));
    }
    let needed: u64 = remote.iter().map(|(input, _)| input.size).sum();
    if most.is_some_and(|most| needed > most) {
        return Ok(None);
    }
    let own = dir.ensure().map_err(|e| disk_error(key, dir.path(), e))?;
    let name = match key.partition {
        Some(partition) => format!("p{partition}-b{}", key.bucket),
        None => format!("b{}", key.bucket),
    };
    let bucket_dir = own.join(name);
    if bucket_dir.exists() {
        std::fs::remove_dir_all(&bucket_dir).map_err(|e| disk_error(key, &bucket_dir, e))?;
    }
    let free = local_dir::available(own).map_err(|e| disk_error(key, own, e))?;
    if free < needed {
        return Err(no_space(key, dir, needed, free));
    }
    local_dir::create_private_dir(&bucket_dir).map_err(|e| disk_error(key, &bucket_dir, e))?;
    // From here on the directory is removed again whatever happens.
    let mut local = LocalCopy {
        dir: bucket_dir,
        bytes: 0,
        log_offset: metadata.log_offset,
        _owner: Some(Arc::clone(dir)),
    };
    for (input, local_name) in remote {
        let target = local.dir.join(local_name);
        input.copy_to(&target).await.map_err(|e| match e {
            Error::SnapshotDisk { cause, .. }
                if cause.kind() == std::io::ErrorKind::StorageFull =>
            {
                let free = local_dir::available(own).unwrap_or(0);
                no_space(key, dir, needed, free)
            }
            other => other,
        })?;
        local.bytes += input.size;
    }
    Ok(Some(local))
}

/// `snapshot_dir` has no room for the `needed` bytes of `key`'s snapshot.
fn no_space(key: BucketKey, dir: &SnapshotDir, needed: u64, free: u64) -> Error {
    Error::SnapshotSpace {
        key,
        root: dir.root().to_path_buf(),
        needed,
        free,
    }
}

/// One remote file of a snapshot, its size known.
struct RemoteFile {
    key: BucketKey,
    remote: String,
    input: fluss::io::InputFile,
    size: u64,
}

impl RemoteFile {
    /// The remote file `remote` of bucket `key` (`props`: the object store's credentials and
    /// settings), and its size.
    async fn open(key: BucketKey, remote: &str, props: &HashMap<String, String>) -> Result<Self> {
        let remote_error = |cause| Error::SnapshotRemote {
            key,
            path: remote.to_owned(),
            cause: Box::new(cause),
        };
        // fluss-rs's FileIO takes URLs; a coordinator on a local file system names plain
        // paths.
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
        Ok(Self {
            key,
            remote: remote.to_owned(),
            input,
            size,
        })
    }

    /// Copies the file to `target` (created private to this user).
    async fn copy_to(&self, target: &Path) -> Result<()> {
        let (key, remote) = (self.key, self.remote.as_str());
        let reader = remote_call(key, remote, self.input.reader()).await?;
        let disk = |cause| disk_error(key, target, cause);
        let mut out = local_dir::create_private_file(target).map_err(disk)?;
        let mut at = 0;
        while at < self.size {
            let end = (at + CHUNK).min(self.size);
            let bytes = remote_call(key, remote, reader.read(at..end)).await?;
            out.write_all(&bytes).map_err(disk)?;
            at = end;
        }
        // Not synced to disk: the copy is a cache for this process, read through the page
        // cache; after a crash it is removed and copied again, and a disk that fills fails
        // the writes above.
        Ok(())
    }
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
