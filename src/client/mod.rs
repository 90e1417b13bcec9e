//! Talking to Fluss: everything that sends a request to the cluster.
//!
//! - [`connect`]: the connection, client tuning and the deadline of every call;
//! - [`table`]: the configured table, checked against `table_type` and `columns`;
//! - [`scanner`]: the record scanners, read ahead by background tasks;
//! - [`schema_fetch`]: schema versions added while the table is read, fetched as batches show
//!   them (kept in [`crate::schemas`]);
//! - [`offsets`]: offsets of buckets (starting, stop, log range) and the out-of-range rule;
//! - [`discovery`]: the table's partitions, listed at open and then periodically;
//! - [`kv_snapshot`]: a bucket's KV snapshot (`starting_offset = "full"`): found, leased and
//!   copied to local disk, where [`crate::snapshot_files`] reads it.

pub mod connect;
pub mod discovery;
pub mod kv_snapshot;
pub mod offsets;
pub mod scanner;
pub mod schema_fetch;
pub mod table;
