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

//! The binding to apache/iggy's connector SDK: [`FlussSource`], whose methods are plain, wrapped
//! in the SDK's `Source`, and the runtime's C ABI. With [`crate::sdk`] (the message types), the
//! only code that names `iggy_connector_sdk`.
//!
//! What the SDK's container leaves to the source, done here so the connector behaves as its
//! documentation says:
//! - it sends every polled batch, also one with neither messages nor state, and answers each;
//!   only the answers to batches that staged something reach [`FlussSource`];
//! - it polls again at once after a failed poll: a failed poll is logged with its causes and
//!   followed by a pause (100 ms, doubled per failure in a row up to 5 s) and an empty batch;
//! - it does not log why `open` failed: the error and its causes are logged here;
//! - it does not catch panics: one in the source is logged, and the instance stops producing
//!   until it is restarted;
//! - it stops polling after [`NACKS_IN_A_ROW`] Nacks in a row with a line that names no cause:
//!   the line logged here says what it means and how to recover.
//!
//! The SDK polls the next batch only after the previous one's result, so
//! [`FlussSource::poll_ahead`] goes unused.

use std::fmt;
use std::panic::AssertUnwindSafe;
use std::time::Duration;

use async_trait::async_trait;
use futures::FutureExt as _;
use tokio::sync::Mutex;

use crate::sdk::{ConnectorState, ProducedMessages, Schema, SourceBatchResult};
use crate::source::FlussSource;

/// The pause after the first failed poll in a row, doubled per failure up to [`MOST_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(100);
/// The longest pause after failed polls.
const MOST_PAUSE: Duration = Duration::from_secs(5);
/// Nacks in a row after which the SDK's container stops polling.
const NACKS_IN_A_ROW: u32 = 5;

/// The instance the SDK holds: the connector file's values until `open`, then the source.
pub struct FlussConnector {
    id: u32,
    /// `[plugin_config]` as the JSON text the plugin parses.
    config: String,
    state: Option<ConnectorState>,
    prefix: String,
    inner: Mutex<Inner>,
}

/// What the polls and their answers share.
#[derive(Default)]
struct Inner {
    /// The open source; `None` before `open`, after a failed one or after a panic.
    source: Option<FlussSource>,
    /// Whether the batch in flight staged something (its answer goes to the source).
    staged: bool,
    /// Failed polls in a row.
    failures: u32,
    /// Nacks in a row, of every batch (as the SDK's container counts them).
    nacks: u32,
    /// A panic stopped the instance.
    stopped: bool,
}

impl FlussConnector {
    /// What `source_connector!` builds the instance from: its id, `[plugin_config]` (parsed
    /// as JSON by the SDK, written back to text for the plugin's own parser) and the state
    /// saved after its last acknowledged batch.
    pub fn new(id: u32, config: serde_json::Value, state: Option<ConnectorState>) -> Self {
        let config = config.to_string();
        let prefix = FlussSource::log_prefix(id, &config);
        Self {
            id,
            config,
            state,
            prefix,
            inner: Mutex::new(Inner::default()),
        }
    }
}

/// Logs a panic of the source during `during`: the instance stops producing until restarted.
fn stop_after_panic(
    prefix: &str,
    inner: &mut Inner,
    during: &str,
    panic: &(dyn std::any::Any + Send),
) {
    let message = panic
        .downcast_ref::<&str>()
        .map(|text| (*text).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic payload".to_owned());
    tracing::error!(
        "{prefix}: panic in {during}: {message}; the instance stops producing until restarted"
    );
    inner.source = None;
    inner.stopped = true;
}

impl fmt::Debug for FlussConnector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FlussConnector")
            .field("id", &self.id)
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

/// An error and its causes, as one line.
fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(inner) = cause {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        cause = inner.source();
    }
    text
}

#[async_trait]
impl iggy_connector_sdk::Source for FlussConnector {
    async fn open(&mut self) -> Result<(), iggy_connector_sdk::Error> {
        let state = self.state.take();
        let opened = AssertUnwindSafe(FlussSource::open(self.id, &self.config, state))
            .catch_unwind()
            .await;
        let inner = self.inner.get_mut();
        match opened {
            Ok(Ok(source)) => {
                inner.source = Some(source);
                Ok(())
            }
            Ok(Err(error)) => {
                let line = chain(&error);
                tracing::error!("{}: open failed: {line}", self.prefix);
                Err(iggy_connector_sdk::Error::InitError(line))
            }
            Err(panic) => {
                stop_after_panic(&self.prefix, inner, "open", panic.as_ref());
                Err(iggy_connector_sdk::Error::InitError("open panicked".into()))
            }
        }
    }

    async fn poll(&self) -> Result<ProducedMessages, iggy_connector_sdk::Error> {
        let mut inner = self.inner.lock().await;
        inner.staged = false;
        let Some(source) = inner.source.as_mut() else {
            drop(inner);
            // Not open, or stopped by a panic: nothing is produced until a restart (the
            // SDK drops this future when it closes the instance).
            std::future::pending::<()>().await;
            return Err(iggy_connector_sdk::Error::InitError("not open".into()));
        };
        match AssertUnwindSafe(source.poll()).catch_unwind().await {
            Ok(Ok(batch)) => {
                inner.failures = 0;
                inner.staged = !batch.messages.is_empty() || batch.state.is_some();
                Ok(batch)
            }
            Ok(Err(error)) => {
                tracing::error!("{}: {}", self.prefix, chain(&error));
                inner.failures = inner.failures.saturating_add(1);
                let pause = FIRST_PAUSE
                    .saturating_mul(1 << inner.failures.saturating_sub(1).min(10))
                    .min(MOST_PAUSE);
                drop(inner);
                tokio::time::sleep(pause).await;
                Ok(ProducedMessages {
                    schema: Schema::Raw,
                    messages: Vec::new(),
                    state: None,
                })
            }
            Err(panic) => {
                stop_after_panic(&self.prefix, &mut inner, "poll", panic.as_ref());
                Err(iggy_connector_sdk::Error::InvalidState)
            }
        }
    }

    async fn on_batch_result(
        &self,
        result: SourceBatchResult,
    ) -> Result<(), iggy_connector_sdk::Error> {
        let mut inner = self.inner.lock().await;
        inner.nacks = match result {
            SourceBatchResult::Ack => 0,
            SourceBatchResult::Nack => inner.nacks.saturating_add(1),
        };
        if inner.nacks == NACKS_IN_A_ROW {
            tracing::error!(
                "{}: the runtime did not accept {NACKS_IN_A_ROW} batches in a row, so polling stops until the connector is restarted; nothing after the last accepted batch was acknowledged, so nothing is lost. Likely causes: the `[[streams]] schema` does not fit the payloads (the runtime logs \"Rejected source batch\" or \"Failed to decode message payload\"; raw payloads need `schema = \"raw\"`, JSON payloads declared as json need `schema = \"json\"`), or the Iggy server cannot be reached (the runtime logs \"Failed to send\"). Fix the cause, then restart the connector",
                self.prefix
            );
        }
        if !std::mem::take(&mut inner.staged) {
            return Ok(());
        }
        let Some(source) = inner.source.as_mut() else {
            return Ok(());
        };
        match AssertUnwindSafe(source.on_batch_result(result))
            .catch_unwind()
            .await
        {
            Ok(Ok(())) => Ok(()),
            Ok(Err(error)) => {
                let line = chain(&error);
                tracing::error!("{}: {line}", self.prefix);
                Err(iggy_connector_sdk::Error::Storage(line))
            }
            Err(panic) => {
                stop_after_panic(&self.prefix, &mut inner, "on_batch_result", panic.as_ref());
                Err(iggy_connector_sdk::Error::InvalidState)
            }
        }
    }

    async fn close(&mut self) -> Result<(), iggy_connector_sdk::Error> {
        let inner = self.inner.get_mut();
        let Some(mut source) = inner.source.take() else {
            if inner.stopped {
                tracing::info!("{}: closed after a panic", self.prefix);
            }
            return Ok(());
        };
        match AssertUnwindSafe(source.close()).catch_unwind().await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(error)) => {
                let line = chain(&error);
                tracing::warn!("{}: close: {line}", self.prefix);
                Err(iggy_connector_sdk::Error::Storage(line))
            }
            Err(_) => {
                tracing::error!("{}: panic in close", self.prefix);
                Ok(())
            }
        }
    }
}

iggy_connector_sdk::source_connector!(FlussConnector);
