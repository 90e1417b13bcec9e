//! Apache Fluss source connector for the Apache Iggy connectors runtime.
//!
//! The runtime loads this crate as a `cdylib` and drives [`FlussSource`] over the C ABI that
//! [`iggy_connector_sdk::source_connector!`] exports. It reads one Fluss table (a log table
//! or the changelog of a primary-key table) with `fluss-rs`, turns records into Iggy messages
//! and persists the next offset of every bucket through the runtime's state file.
//!
//! Modules, in the order data flows:
//! - [`options`]: the values of every enumerated key, listed once;
//! - [`config`]: `[plugin_config]` parsed and validated key by key;
//! - [`assign`]: which buckets one instance of several reads (scale-out);
//! - [`bound`]: where a bounded read stops;
//! - [`prune`]: which partitions are read;
//! - [`connect`]: the cluster connection, client tuning and the deadline of every call;
//! - [`table`]: the configured table, checked against `table_type` and `columns`;
//! - [`bucket`]: bucket keys and positions (a leaf every module may use);
//! - [`filter`]: the `filter` key: parsed, checked, evaluated on batches, pushed down;
//! - [`state`]: positions, staged until Ack, persisted as versioned MessagePack;
//! - [`scan`]: the fluss-rs scanner, starting offsets, partition discovery and bucket snapshots;
//! - [`buckets`]: the registry of buckets read, their stamps and queued records;
//! - [`batch`]: batch limits across several client polls;
//! - [`runtime_json`]: what the runtime's re-encoding of JSON payloads can carry;
//! - [`encode`]: records to payloads (JSON rows, …);
//! - [`message`]: message ids and headers, stamped per bucket;
//! - [`telemetry`]: every log line;
//! - [`source`]: the `Source` implementation that wires them together.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod assign;
pub mod batch;
pub mod bound;
pub mod bucket;
pub mod buckets;
pub mod config;
pub mod connect;
pub mod encode;
pub mod error;
pub mod filter;
pub mod message;
pub mod options;
pub mod prune;
pub mod runtime_json;
pub mod scan;
pub mod source;
pub mod state;
pub mod table;
pub mod telemetry;

pub use source::FlussSource;

iggy_connector_sdk::source_connector!(FlussSource);
