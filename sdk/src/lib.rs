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

//! Source half of the Apache Iggy connector SDK, written from the runtime's C ABI
//! contract: implement [`Source`], then `source_connector!(MySource);` in a `cdylib`.
//!
//! * [`message`]: the batch wire types (postcard, byte-compatible with upstream), with the
//!   header types ([`HeaderKey`], [`HeaderValue`]) and their base64 layout in
//!   `message/header/`;
//! * [`error`]: the SDK's error and the `source()` chain renderer;
//! * [`ffi`]: `source_connector!` and the panic guard around every `extern "C"` body;
//! * [`container`]: per-id instances and their entry points; its `delivery` submodule runs
//!   the poll loop (one batch in flight, Nack backoff) timed by [`BatchPolicy`];
//! * [`log`]: `tracing` events forwarded to the runtime's log callback;
//! * [`runtime`]: the plugin's own Tokio runtime.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod container;
pub mod error;
pub mod ffi;
mod header_kind;
pub mod log;
pub mod message;
pub mod runtime;

use std::future::Future;

pub use container::{BatchPolicy, SendCallback};
pub use error::Error;
pub use log::LogCallback;
pub use message::{
    ConnectorState, HeaderField, HeaderKey, HeaderKind, HeaderValue, ProducedMessage,
    ProducedMessages, Schema,
};

/// The runtime's verdict on one batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SourceBatchResult {
    /// Delivered to Iggy and, if the batch carried state, the state file was written.
    Ack,
    /// Not (completely) delivered; the state file was not advanced.
    Nack,
}

/// A source plugin. The SDK drives it, one instance per plugin id, on its own runtime.
///
/// # Delivery contract
/// * Exactly one batch is in flight: after `poll` returns a non-empty batch, the SDK
///   sends it and calls [`Source::on_batch_result`] before it sends the next one. Unless
///   [`Source::poll_ahead`] says otherwise, the next `poll` also waits for that result.
/// * Stage in `poll`, commit on Ack: `poll` must not advance what it persists or
///   acknowledges upstream; it returns the *candidate* position as
///   [`ProducedMessages::state`] and keeps it staged. On `Ack` the runtime has delivered
///   the batch and saved that state: make it the committed position. On `Nack` discard
///   the staged progress so the next `poll` returns the same data again (at-least-once).
/// * A batch with no messages and no state is not sent; return one when there is
///   nothing to do, ideally after waiting a little so the loop does not spin.
/// * Nacks back off 100 ms doubling to 5 s; after 5 in a row (reset by an Ack) the
///   instance stops polling. A `poll` error is logged with its cause chain and retried
///   after the same backoff. No result within 30 s counts as Nack.
/// * `close` runs after the loop stopped: a pending batch has been rolled back with
///   `on_batch_result(Nack)` and an in-progress `poll` future was dropped, so `poll`
///   must be cancel-safe (hold nothing that a drop would corrupt).
pub trait Source: Sized + Send + 'static {
    /// The plugin's error; logged with its full `source()` chain.
    type Error: std::error::Error + Send + Sync + 'static;

    /// Opens an instance. `config_json` is exactly the text the runtime passed (compact
    /// JSON, `null` when the connector file has no `[plugin_config]`); the plugin parses
    /// it. `state` is what the runtime saved after the last acknowledged batch.
    /// An error fails the connector; it is logged once, with its cause chain.
    fn open(
        id: u32,
        config_json: &str,
        state: Option<ConnectorState>,
    ) -> impl Future<Output = Result<Self, Self::Error>> + Send;

    /// What every line the SDK logs about instance `id` starts with, before `: ` (default
    /// `plugin <id>`). A plugin whose own lines carry a prefix returns that one, so the lines
    /// of one instance share it, a failed `open` included. `config_json` is the text `open`
    /// gets, which may be anything (lossily decoded when it is not UTF-8), so this must not
    /// fail.
    fn log_prefix(id: u32, config_json: &str) -> String {
        let _ = config_json;
        format!("plugin {id}")
    }

    /// Produces the next batch (possibly empty) with its staged state.
    fn poll(&mut self) -> impl Future<Output = Result<ProducedMessages, Self::Error>> + Send;

    /// Whether `poll` may run while the previous batch is in flight, so the next batch is
    /// ready when the result arrives (default `false`). The batch still waits for that
    /// result before it is sent, and at most one batch is polled ahead. A source that
    /// answers `true` stages per batch: `on_batch_result` then concerns the *oldest* staged
    /// batch, and after a Nack the SDK drops the batch polled ahead without sending it, so
    /// a Nack must roll back everything staged, back to the last committed position.
    /// `batch_result` waits for the poll ahead to finish before the hook runs.
    fn poll_ahead(&self) -> bool {
        false
    }

    /// Commits (Ack) or rolls back (Nack) what the oldest unanswered `poll` staged. Keep it
    /// short: the runtime waits for it.
    fn on_batch_result(
        &mut self,
        result: SourceBatchResult,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// Releases resources; called once, after polling stopped.
    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send;
}
