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

//! Apache Fluss source connector for the Apache Iggy connectors runtime.
//!
//! The runtime loads this crate as a `cdylib` and drives [`FlussSource`] over the C ABI that
//! [`connector`] exports (with [`sdk`], the only code bound to the connector SDK). It reads one Fluss table (a log table
//! or the changelog of a primary-key table) with `fluss-rs`, turns records into Iggy messages
//! and persists the next offset of every bucket through the runtime's state file.
//!
//! Modules, in the order data flows:
//! - [`config`]: `[plugin_config]` parsed and validated key by key, with the option enums;
//! - [`scope`]: what this instance reads: its share of the buckets, the stop point, the partitions;
//! - [`filter`]: the `filter` language: parsed, checked, evaluated on batches, pushed down (a leaf);
//! - [`client`]: talking to Fluss: connection, table, scanners, schema versions, offsets,
//!   discovery, and a KV snapshot found, leased and copied to local disk;
//! - [`snapshot_files`]: a KV snapshot's local copy read with RocksDB into Arrow batches (no
//!   request to the cluster);
//! - [`records`]: fetched records and the Arrow batches they point into (a leaf);
//! - [`schemas`]: the table's schema versions, found per batch by its column count (a leaf);
//! - [`position`]: bucket keys, positions, and their staging until Ack;
//! - [`state`]: positions persisted as versioned MessagePack;
//! - [`json`]: Arrow columns to JSON values (a leaf);
//! - [`encode`]: records to messages: ids and headers, JSON rows, change envelopes, Arrow IPC;
//! - [`metrics`]: the Prometheus endpoint (`metrics_address`) and what it shows (imports only
//!   [`position`]);
//! - [`source`]: the `Source` implementation: wiring, the open-time checks, the snapshot phase,
//!   the delivery queue, telemetry;
//! - [`error`]: the error type and the classification of fluss-rs errors.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod client;
pub mod config;
pub mod connector;
pub mod context;
pub mod encode;
pub mod error;
pub mod filter;
pub mod format;
pub mod json;
pub mod metrics;
pub mod position;
pub mod records;
pub mod schemas;
pub mod scope;
pub mod sdk;
pub mod snapshot;
pub mod source;
pub mod state;
pub mod telemetry;

pub use source::FlussSource;
