//! A counting source for testing the SDK and the runner over the real C ABI.
//!
//! Config (all optional; `null` = defaults):
//! `{"total": 100, "batch": 10, "fail_open": false, "panic_in_poll_at": null,
//!   "poll_delay_ms": 0, "fail_poll_times": 0, "poll_ahead": false}`.
//! Message `k` (0-based) has id `k`, payload `{"n":k}` (JSON) and headers
//! `source = "test"`, `n = k` (Uint64). `poll` stages the next counter and returns it as
//! state; Ack commits it, Nack discards it, so a Nacked batch comes again with the
//! same ids. After `total` messages it returns empty batches. With `poll_ahead` the SDK
//! polls the next batch while one is in flight; staged counters then form a queue.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

use iggy_connector_sdk::{
    source_connector, ConnectorState, HeaderKey, HeaderValue, ProducedMessage, ProducedMessages,
    Schema, Source, SourceBatchResult,
};
use serde::{Deserialize, Serialize};
use snafu::{ResultExt, Snafu};
use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;
use tracing::info;

/// Errors of the test source.
#[derive(Debug, Snafu)]
pub enum Error {
    /// The config JSON does not parse.
    #[snafu(display("config: {source}. fix the JSON"))]
    Config {
        /// serde_json's error.
        source: serde_json::Error,
    },
    /// `fail_open = true`.
    #[snafu(display("open refused because fail_open = true"))]
    Refused {
        /// A simulated cause, so the chain has two links.
        source: std::io::Error,
    },
    /// Saved state does not decode.
    #[snafu(display("state: cannot restore"))]
    State {
        /// The SDK error.
        source: iggy_connector_sdk::Error,
    },
    /// `fail_poll_times` not yet used up.
    #[snafu(display("poll failed on purpose ({left} failures left)"))]
    PollFailure {
        /// Failures still to come.
        left: u32,
    },
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct Config {
    total: Option<u64>,
    batch: Option<u64>,
    fail_open: bool,
    panic_in_poll_at: Option<u64>,
    poll_delay_ms: u64,
    fail_poll_times: u32,
    poll_ahead: bool,
}

#[derive(Debug, Serialize, Deserialize)]
struct State {
    next: u64,
}

/// The source: counts from the committed position.
pub struct TestSource {
    id: u32,
    total: u64,
    batch: u64,
    panic_at: Option<u64>,
    poll_delay: Duration,
    failures_left: u32,
    poll_ahead: bool,
    committed: u64,
    /// Counters staged by batches not answered yet, oldest first.
    staged: VecDeque<u64>,
    source_key: HeaderKey,
    source_value: HeaderValue,
    n_key: HeaderKey,
}

impl Source for TestSource {
    type Error = Error;

    async fn open(
        id: u32,
        config_json: &str,
        state: Option<ConnectorState>,
    ) -> Result<Self, Error> {
        let config: Option<Config> = serde_json::from_str(config_json).context(ConfigSnafu)?;
        let config = config.unwrap_or_default();
        if config.fail_open {
            return Err(Error::Refused {
                source: std::io::Error::other("simulated cause"),
            });
        }
        let committed = match state {
            Some(state) => state.deserialize::<State>().context(StateSnafu)?.next,
            None => 0,
        };
        info!(committed, "test source {id} opened");
        Ok(Self {
            id,
            total: config.total.unwrap_or(100),
            batch: config.batch.unwrap_or(10).max(1),
            panic_at: config.panic_in_poll_at,
            poll_delay: Duration::from_millis(config.poll_delay_ms),
            failures_left: config.fail_poll_times,
            poll_ahead: config.poll_ahead,
            committed,
            staged: VecDeque::new(),
            source_key: HeaderKey::from_static_str("source")
                .map_err(|e| Error::State { source: e })?,
            source_value: HeaderValue::from_static_str("test")
                .map_err(|e| Error::State { source: e })?,
            n_key: HeaderKey::from_static_str("n").map_err(|e| Error::State { source: e })?,
        })
    }

    async fn poll(&mut self) -> Result<ProducedMessages, Error> {
        if !self.poll_delay.is_zero() {
            tokio::time::sleep(self.poll_delay).await;
        }
        if self.failures_left > 0 {
            self.failures_left -= 1;
            return PollFailureSnafu {
                left: self.failures_left,
            }
            .fail();
        }
        let start = self.staged.back().copied().unwrap_or(self.committed);
        let end = (start + self.batch).min(self.total);
        if start >= end {
            tokio::time::sleep(Duration::from_millis(10)).await;
            return Ok(ProducedMessages::empty(Schema::Json));
        }
        if let Some(at) = self.panic_at {
            if (start..end).contains(&at) {
                panic!("test source {}: panic_in_poll_at = {at}", self.id);
            }
        }
        let messages = (start..end)
            .map(|k| {
                let mut headers = BTreeMap::new();
                headers.insert(self.source_key.clone(), self.source_value.clone());
                headers.insert(self.n_key.clone(), HeaderValue::from_u64(k));
                ProducedMessage {
                    id: Some(u128::from(k)),
                    headers: Some(headers),
                    payload: format!("{{\"n\":{k}}}").into_bytes(),
                    ..ProducedMessage::default()
                }
            })
            .collect();
        self.staged.push_back(end);
        let state = ConnectorState::serialize(&State { next: end }).context(StateSnafu)?;
        Ok(ProducedMessages {
            schema: Schema::Json,
            messages,
            state: Some(state),
        })
    }

    fn poll_ahead(&self) -> bool {
        self.poll_ahead
    }

    async fn on_batch_result(&mut self, result: SourceBatchResult) -> Result<(), Error> {
        match result {
            SourceBatchResult::Ack => {
                if let Some(next) = self.staged.pop_front() {
                    self.committed = next;
                }
            }
            SourceBatchResult::Nack => self.staged.clear(),
        }
        Ok(())
    }

    async fn close(&mut self) -> Result<(), Error> {
        info!(committed = self.committed, "test source {} closed", self.id);
        Ok(())
    }
}

source_connector!(TestSource);
