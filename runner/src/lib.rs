//! Loads a source plugin over the Iggy connectors C ABI and drives it the way the
//! runtime does, without Iggy: for tests ([`Harness`]) and for trying a connector file
//! from the command line ([`run()`], binary `fluss-source-runner`).
//!
//! * [`harness`]: dlopen, the five symbols, send/log callbacks, [`Instance`];
//! * [`connector`]: the runtime's connector TOML, env overrides, plugin path lookup;
//! * [`state`]: the state file, saved atomically before each Ack;
//! * [`payload`]: what the runtime writes for a batch (decode by the batch schema, encode by
//!   the stream's), or its rejection;
//! * [`output`]: one JSON line per message;
//! * [`run`](mod@run): the delivery loop with its stop conditions.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod connector;
pub mod error;
pub mod harness;
pub mod output;
pub mod payload;
pub mod run;
pub mod state;

pub use connector::ConnectorFile;
pub use error::{Error, Result};
pub use harness::{
    exported_iggy_symbols, logs, Batch, Harness, Instance, Level, LogLine, SOURCE_SYMBOLS,
};
pub use payload::{
    encode_messages, runtime_payloads, MessageError, Rejection, StreamSchema, UnsupportedStream,
    ORDERED_KEYS_LIMIT,
};
pub use run::{run, Output, RunOptions, RunSummary, StopReason};
