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

//! Primary-key snapshots (`starting_offset = "full"`, `on_offset_out_of_range = "snapshot"`),
//! read from the KV snapshot files Fluss's tablet servers upload to remote storage (as Flink's
//! Fluss source reads them), under one roof. The source sees a narrow API: [`Snapshots`] takes a
//! bucket's snapshot ([`Snapshots::take`], a [`Taken`]), notes it finished or failed
//! ([`Snapshots::settled`]) and releases it ([`Snapshots::give_back`]); a [`HandOver`] gives
//! its rows, filtered and stamped, a chunk at a time. The source's buckets are seen through
//! [`Reads`], and every line goes through the [`crate::telemetry::Telemetry`] of the
//! [`crate::context::Context`] it hands over.
//!
//! In the order a snapshot travels:
//! - [`kv`]: the remote side: a bucket's latest snapshot, leased, its files copied into
//!   `snapshot_dir`;
//! - [`files`]: the local copy read without RocksDB into Arrow batches (no request);
//! - [`listed`], [`opening`], [`opened_ahead`]: snapshots listed and leased a group at a time,
//!   copied and opened, the next ones ahead of their turn;
//! - [`phase`]: [`Snapshots`], what the snapshot phase holds between polls;
//! - [`hand_over`]: a bucket's snapshot rows while they are handed over;
//! - [`log`]: the lines the snapshot phase writes.

pub mod files;
pub mod hand_over;
pub mod kv;
pub mod listed;
pub mod log;
pub mod opened_ahead;
pub mod opening;
pub mod phase;

pub use hand_over::{HandOver, Report};
pub use phase::{Reads, Snapshots, Taken};
