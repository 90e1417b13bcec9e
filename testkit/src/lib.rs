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
//! - [`write`] appends, upserts and deletes rows; [`read`] scans a log back.
//! - [`poll_until`] retries a probe until it succeeds or panics with the last
//!   error, instead of fixed sleeps.
//!
//! Each function here panics on failure with a message that says what to
//! look at: this crate is only used by tests.

pub mod all_types;
mod cluster;
pub mod iggy;
mod poll;
pub mod read;
pub mod tables;
pub mod write;

pub use cluster::{Cluster, ClusterOptions, SaslUser};
pub use poll::poll_until;
pub use tables::unique_table;

/// The fluss-rs crate this testkit is built against, for tests that need
/// its types without a direct dependency.
pub use fluss;
