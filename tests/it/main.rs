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
