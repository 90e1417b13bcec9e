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

//! Primary-key snapshots from the KV snapshot files Fluss's tablet servers upload to remote
//! storage every `kv.snapshot.interval` (as Flink's Fluss source reads them): the latest
//! snapshot of a bucket, leased so the server keeps its files, copied into `snapshot_dir`
//! and read with RocksDB in bounded Arrow batches. The snapshot holds exactly the changes
//! below its log offset, so the bucket's changelog continues there: the switch is exact.
//!
//! - [`latest`]: a bucket's latest snapshot (id and log offset);
//! - [`lease`]: the lease that keeps its files on remote storage while it is read;
//! - [`credentials`]: what an object store holding the files needs, from Fluss;
//! - [`files`]: its files copied into a local directory, removed when dropped;
//! - [`local_dir`]: the connector instance's directory under `snapshot_dir` that holds those
//!   copies, private to the process's user, and the leftovers of runs that ended without
//!   closing.
//!
//! Those local files are read by [`crate::snapshot::files`], which sends no request; a bucket's
//! snapshot opened for reading is a [`crate::snapshot::files::Opened`].

pub mod credentials;
pub mod files;
pub mod latest;
pub mod lease;
pub mod local_dir;
