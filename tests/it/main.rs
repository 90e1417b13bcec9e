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

//! Integration tests against a real Fluss cluster, driving the built plugin library through
//! the runner over the real C ABI (`test = false`: `cargo test --test it`, which the README's
//! test command runs); the cluster is started by `fluss-testkit` on first use.

mod all_types;
mod arrow_ipc;
mod authorization;
mod bad_input;
mod bounded;
mod changelog;
mod crashes;
mod failover;
mod faults;
mod filters;
mod fixture;
mod kv_files;
mod log_lines;
mod log_tables;
mod metrics;
mod object_store;
mod pk_script;
mod process;
mod pruning;
mod regions;
mod runtime_payloads;
mod scale_out;
mod schema_changes;
mod snapshots;
mod table_changes;
