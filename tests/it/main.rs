//! Integration tests against a real Fluss cluster, driving the built plugin library through
//! the runner over the real C ABI. Enabled by the `fluss-it` feature (the README's test
//! command turns it on); the cluster is started by `fluss-testkit` on first use.
#![cfg(feature = "fluss-it")]

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
mod log_lines;
mod log_tables;
mod pk_script;
mod process;
mod pruning;
mod regions;
mod runtime_payloads;
mod scale_out;
mod snapshots;
mod table_changes;
