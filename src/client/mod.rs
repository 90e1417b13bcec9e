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

//! Talking to Fluss: everything that sends a request to the cluster.
//!
//! - [`connect`]: the connection, client tuning and the deadline of every call;
//! - [`table`]: the configured table, checked against `table_type` and `columns`;
//! - [`scanner`]: the record scanners, read ahead by background tasks;
//! - [`schema_fetch`]: schema versions added while the table is read, fetched as batches show
//!   them (kept in [`crate::schemas`]);
//! - [`offsets`]: offsets of buckets (starting, stop, log range) and the out-of-range rule;
//! - [`discovery`]: the table's partitions, listed at open and then periodically.
//!
//! A bucket's KV snapshot is found, leased and copied by [`crate::snapshot::kv`].

pub mod connect;
pub mod discovery;
pub mod offsets;
pub mod scanner;
pub mod schema_fetch;
pub mod table;
