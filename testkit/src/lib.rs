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

//! A real Apache Fluss 0.9.1 cluster for this repository's integration tests,
//! plus helpers that create and fill test tables with fluss-rs.
//!
//! - [`Cluster`] starts ZooKeeper, a coordinator and tablet servers through
//!   `scripts/fluss-cluster.sh` (jars from Maven Central, no docker), waits
//!   until the cluster really serves, and stops it by process id. A watchdog
//!   stops it as well when the test process dies, however it dies.
//! - [`Cluster::shared`] is the one cluster of a test binary, or the external
//!   cluster named by `FLUSS_BOOTSTRAP`.
//! - [`tables`] creates log, primary-key, partitioned and every-type tables
//!   with unique names and waits until their buckets have leaders.
//! - [`mod@write`] appends, upserts and deletes rows; [`read`] scans a log back.
//! - [`runtime`]: the shared Tokio runtime of a test binary, and [`runtime::on_own_runtime`]
//!   for blocking waits; [`plugin_path`] finds the built plugin library.
//! - [`kv_files`]: RocksDB checkpoints written by the RocksDB of Fluss's tablet servers.
//! - [`seed`]: the generator of randomised tests, its seed printed and taken from the environment.
//! - [`s3`]: a local S3 server for clusters whose remote storage is an object store.
//! - [`python`]: the suites' Python (a virtual environment with pyarrow, the Iggy client, moto).
//! - [`metrics`] scrapes the plugin's Prometheus endpoint and parses the samples.
//! - [`poll_until`] retries a probe until it succeeds or panics with the last
//!   error, instead of fixed sleeps.
//! - [`orphans`]: the test process adopts and reaps what its shell scripts leave running.
//! - [`toxiproxy`]: a real TCP fault proxy between clients and a proxied cluster's servers.
//!
//! Each function here panics on failure with a message that says what to
//! look at: this crate is only used by tests.

pub mod all_types;
mod cluster;
pub mod iggy;
pub mod kv_files;
pub mod metrics;
pub mod orphans;
mod poll;
pub mod python;
pub mod read;
pub mod runtime;
pub mod s3;
pub mod seed;
pub mod tables;
pub mod toxiproxy;
pub mod write;

pub use cluster::{Cluster, ClusterOptions, SaslUser, Server};
pub use poll::{poll_for, poll_until};
pub use runtime::rt;
pub use tables::unique_table;

/// What the panic message of a test starts with when the machine, not the code under test,
/// failed it: a Fluss cluster that did not start (twice), or a coordinator that gives a new
/// table's buckets no leaders (after it was restarted and the table created again).
/// `scripts/run-again.sh` runs such a test once more, alone, and counts it in the summary; a
/// test that fails in any other way fails the run.
pub const ENVIRONMENT_FAULT: &str = "environment fault: ";

/// The plugin library the tests load: the one `FLUSS_PLUGIN_LIBRARY` names (scripts/release.sh
/// runs suites against its artifact's library so), else the one built with the running test
/// binary. `cargo test` builds the package's cdylib into `target/<profile>/deps/` beside the test
/// binaries (it copies it up to `target/<profile>/` only when asked to build the library itself,
/// as `cargo build` is), so a fresh `cargo test` finds it there.
pub fn plugin_path() -> std::path::PathBuf {
    const NAME: &str = "libiggy_connector_fluss_source.so";
    if let Some(lib) = std::env::var_os("FLUSS_PLUGIN_LIBRARY").filter(|l| !l.is_empty()) {
        let lib = std::path::PathBuf::from(lib);
        assert!(
            lib.is_file(),
            "FLUSS_PLUGIN_LIBRARY={} is not a file",
            lib.display()
        );
        return lib;
    }
    let exe = std::env::current_exe().expect("test binary path");
    let deps = exe.parent().expect("target/<profile>/deps directory");
    let profile = deps.parent().expect("target/<profile> directory");
    [deps, profile]
        .iter()
        .map(|dir| dir.join(NAME))
        .find(|lib| lib.exists())
        .unwrap_or_else(|| {
            panic!(
                "{NAME} is in neither {} nor {}; build it with `cargo build -p iggy_connector_fluss_source`",
                deps.display(),
                profile.display()
            )
        })
}

/// Whether a log line names plugin instance `id` in any form: the instance prefix
/// (`fluss[<id> <db.table>]` or `fluss[<id>]`) or the SDK's default `plugin <id>:`, so a line
/// that lacks the prefix is still found (and fails a comparison of the whole line).
pub fn names_instance(message: &str, id: u32) -> bool {
    [
        format!("fluss[{id} "),
        format!("fluss[{id}]"),
        format!("plugin {id}:"),
    ]
    .iter()
    .any(|tag| message.contains(tag))
}

/// The fluss-rs crate this testkit is built against, for tests that need
/// its types without a direct dependency.
pub use fluss;
