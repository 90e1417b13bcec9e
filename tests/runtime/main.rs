//! The plugin inside the real Apache Iggy runtime: `iggy-server` and `iggy-connectors`
//! (prebuilt, from `IGGY_BIN_DIR`), reading tables of the testkit's real Fluss cluster, with
//! every topic read back through the `iggy` CLI (`test = false`: `cargo test --test runtime`,
//! run by `scripts/test-runtime.sh`); without the binaries every test fails and says how to get them.
//! `readme` runs the README's deploy steps as written.

mod arrow_ipc;
mod consumers;
mod debezium;
mod fixture;
mod iggy_outage;
mod key_order;
mod log_json;
mod metrics;
mod nack_storm;
mod per_key_order;
mod readme;
mod schema_changes;
mod snapshot;
