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
//! [`connector`] exports. It reads one Fluss table (a log table or the changelog of a
//! primary-key table) with `fluss-rs`, turns records into Iggy messages and persists the next
//! offset of every bucket through the runtime's state file.
//!
//! Modules, in the order data flows, from the connector file to the runtime:
//! - [`config`]: `[plugin_config]`: the keys as serde reads them, and the configuration built
//!   from them once, with the option enums;
//! - [`scope`]: what this instance reads: its share of the buckets, the stop point, the
//!   partitions;
//! - [`filter`]: the `filter` language: parsed, checked, evaluated on batches, pushed down;
//! - [`client`]: talking to Fluss: connection, table, scanners, schema versions, offsets,
//!   partitions;
//! - [`records`]: fetched records and the Arrow batches they point into (imports nothing of
//!   the crate);
//! - [`schemas`]: the table's schema versions, found per batch by its column count;
//! - [`snapshot`]: primary-key snapshots from KV snapshot files: leased, copied, read without
//!   RocksDB, handed over a chunk at a time;
//! - [`position`]: bucket keys, positions, and their staging until Ack;
//! - [`state`]: positions persisted as versioned MessagePack with a checksum;
//! - [`json`]: Arrow columns to JSON values;
//! - [`encode`]: records to messages: ids and headers, JSON rows, change envelopes, Arrow IPC;
//! - [`format`](mod@format): the payload format chosen once at open, which answers every format-specific
//!   question (encoder, batch schema, polling ahead, fetch sizing, column checks);
//! - [`sdk`]: the connector SDK's message types the messages are built as (imports nothing of
//!   the crate);
//! - [`metrics`] and [`telemetry`]: the Prometheus endpoint, and every log line;
//! - [`context`]: what every step of reading is handed once: configuration, table, format,
//!   telemetry;
//! - [`source`]: [`FlussSource`]: the wiring of open, poll and the batch results;
//! - [`connector`]: [`FlussSource`] bound to the SDK (with [`sdk`], the only code that names
//!   it), and the runtime's C ABI;
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
