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

//! The plugin inside the real Apache Iggy runtime: `iggy-server` and `iggy-connectors`
//! (prebuilt, from `IGGY_BIN_DIR`), reading tables of the testkit's real Fluss cluster, with
//! every topic read back through the `iggy` CLI (`test = false`: `cargo test --test runtime`,
//! run by `scripts/test-runtime.sh`); without the binaries every test fails and says how to get them.
//! `readme` runs the README's deploy steps as written.

mod arrow_ipc;
mod consumers;
mod debezium;
mod faults;
mod fixture;
mod full_disk;
mod iggy_outage;
mod key_order;
mod log_json;
mod metrics;
mod nack_storm;
mod per_key_order;
mod readme;
mod schema_changes;
mod snapshot;
