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

//! A counting source for testing the SDK and the runner over the real C ABI.
//!
//! Config (all optional; `null` = defaults):
//! `{"total": 100, "batch": 10, "fail_open": false, "panic_in_poll_at": null,
//!   "poll_delay_ms": 0, "poll_busy_ms": 0, "fail_poll_times": 0, "poll_ahead": false}`.
//! `poll_delay_ms` waits (awaits a timer) in each poll; `poll_busy_ms` holds the polling
//! thread without awaiting anything, as a poll that encodes a whole batch at once does.
//! Message `k` (0-based) has id `k`, payload `{"n":k}` (JSON) and headers
//! `source = "test"`, `n = k` (Uint64). `poll` stages the next counter and returns it as
//! state; Ack commits it, Nack discards it, so a Nacked batch comes again with the
//! same ids. After `total` messages it returns empty batches. With `poll_ahead` the SDK
//! polls the next batch while one is in flight; staged counters then form a queue.
//!
//! Message shapes, for measuring the runtime with payloads and headers like a real source's:
//! - `payload`: this exact text as every message's payload (e.g. a real row's JSON);
//! - `payload_size`: `{"n":k,"p":"xx…"}` padded to this many bytes (valid JSON; never
//!   shorter than the unpadded object); not together with `payload`;
//! - `headers`: `"none"` (no header map at all) or a list of
//!   `{"name": "fluss_offset", "kind": "int64"}` / `{"name": "fluss_table", "kind": "string",
//!   "size": 24}`: integer kinds (`int32`, `int64`, `uint64`) carry `k`, `bool` alternates,
//!   `string` and `raw` carry `size` bytes (default 8); absent: the two headers above;
//! - `schema`: the schema the batches declare, `"json"` (default) or `"raw"`.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

use iggy_connector_sdk::{
    ConnectorState, HeaderKey, HeaderValue, ProducedMessage, ProducedMessages, Schema, Source,
    SourceBatchResult, source_connector,
};
use serde::{Deserialize, Serialize};
use snafu::{ResultExt, Snafu};
use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;
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
    /// A message-shape option is not valid.
    #[snafu(display("config: {message}"))]
    Shape {
        /// What is wrong and how to fix it.
        message: String,
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
    poll_busy_ms: u64,
    fail_poll_times: u32,
    poll_ahead: bool,
    payload: Option<String>,
    payload_size: Option<usize>,
    headers: Option<serde_json::Value>,
    schema: Option<Schema>,
}

/// One entry of the `headers` list.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct HeaderSpec {
    name: String,
    kind: String,
    size: Option<usize>,
}

/// How a header's value follows the message counter `k`.
#[derive(Debug, Clone, Copy)]
enum Varies {
    Int32,
    Int64,
    Uint64,
    Bool,
    Fixed,
}

type HeaderMap = BTreeMap<HeaderKey, HeaderValue>;

/// What every message carries: a prebuilt header map (cloned per message, like the Fluss
/// plugin's templates) with the keys whose values follow `k`.
#[derive(Debug)]
struct Shape {
    schema: Schema,
    payload: Payload,
    headers: Option<(HeaderMap, Vec<(HeaderKey, Varies)>)>,
}

#[derive(Debug)]
enum Payload {
    Counter,
    Literal(Vec<u8>),
    Padded(usize),
}

impl Payload {
    fn of(&self, k: u64) -> Vec<u8> {
        match self {
            Payload::Counter => format!("{{\"n\":{k}}}").into_bytes(),
            Payload::Literal(bytes) => bytes.clone(),
            Payload::Padded(size) => {
                let mut text = String::with_capacity(*size);
                let _ = write!(text, "{{\"n\":{k},\"p\":\"");
                let pad = size.saturating_sub(text.len() + 2);
                text.extend(std::iter::repeat_n('x', pad));
                text.push_str("\"}");
                text.into_bytes()
            }
        }
    }
}

fn shape_error(message: impl Into<String>) -> Error {
    Error::Shape {
        message: message.into(),
    }
}

fn sdk(source: iggy_connector_sdk::Error) -> Error {
    shape_error(source.to_string())
}

impl Shape {
    fn from_config(config: &Config) -> Result<Self, Error> {
        let payload = match (&config.payload, config.payload_size) {
            (Some(_), Some(_)) => {
                return Err(shape_error(
                    "`payload` and `payload_size` exclude each other; keep one",
                ));
            }
            (Some(text), None) => Payload::Literal(text.clone().into_bytes()),
            (None, Some(size)) => Payload::Padded(size),
            (None, None) => Payload::Counter,
        };
        let headers = match &config.headers {
            None => {
                let mut map = BTreeMap::new();
                map.insert(
                    HeaderKey::from_static_str("source").map_err(sdk)?,
                    HeaderValue::from_static_str("test").map_err(sdk)?,
                );
                let n = HeaderKey::from_static_str("n").map_err(sdk)?;
                map.insert(n.clone(), HeaderValue::from_u64(0));
                Some((map, vec![(n, Varies::Uint64)]))
            }
            Some(serde_json::Value::String(none)) if none == "none" => None,
            Some(list) => {
                let specs: Vec<HeaderSpec> = serde_json::from_value(list.clone()).map_err(|e| {
                    shape_error(format!(
                        "`headers`: {e}; use \"none\" or a list of {{name, kind, size}}"
                    ))
                })?;
                let mut map = BTreeMap::new();
                let mut varying = Vec::new();
                for spec in specs {
                    let key = HeaderKey::new(&spec.name).map_err(sdk)?;
                    let size = spec.size.unwrap_or(8);
                    let (value, varies) = match spec.kind.as_str() {
                        "int32" => (HeaderValue::from_i32(0), Varies::Int32),
                        "int64" => (HeaderValue::from_i64(0), Varies::Int64),
                        "uint64" => (HeaderValue::from_u64(0), Varies::Uint64),
                        "bool" => (HeaderValue::from_bool(false), Varies::Bool),
                        "string" => (
                            HeaderValue::from_str(&"x".repeat(size)).map_err(sdk)?,
                            Varies::Fixed,
                        ),
                        "raw" => (
                            HeaderValue::from_raw(&vec![b'x'; size]).map_err(sdk)?,
                            Varies::Fixed,
                        ),
                        other => {
                            return Err(shape_error(format!(
                                "header {}: kind \"{other}\" is not one of int32, int64, uint64, bool, string, raw",
                                spec.name
                            )));
                        }
                    };
                    if !matches!(varies, Varies::Fixed) {
                        varying.push((key.clone(), varies));
                    }
                    map.insert(key, value);
                }
                (!map.is_empty()).then_some((map, varying))
            }
        };
        Ok(Shape {
            schema: config.schema.unwrap_or(Schema::Json),
            payload,
            headers,
        })
    }

    fn message(&self, k: u64) -> ProducedMessage {
        let headers = self.headers.as_ref().map(|(template, varying)| {
            let mut map = template.clone();
            for (key, varies) in varying {
                let value = match varies {
                    Varies::Int32 => HeaderValue::from_i32(k as i32),
                    Varies::Int64 => HeaderValue::from_i64(k as i64),
                    Varies::Uint64 => HeaderValue::from_u64(k),
                    Varies::Bool => HeaderValue::from_bool(k % 2 == 1),
                    Varies::Fixed => continue,
                };
                if let Some(slot) = map.get_mut(key) {
                    *slot = value;
                }
            }
            map
        });
        ProducedMessage {
            id: Some(u128::from(k)),
            headers,
            payload: self.payload.of(k),
            ..ProducedMessage::default()
        }
    }
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
    poll_busy: Duration,
    failures_left: u32,
    poll_ahead: bool,
    committed: u64,
    /// Counters staged by batches not answered yet, oldest first.
    staged: VecDeque<u64>,
    shape: Shape,
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
        let shape = Shape::from_config(&config)?;
        info!(committed, "test source {id} opened");
        Ok(Self {
            id,
            total: config.total.unwrap_or(100),
            batch: config.batch.unwrap_or(10).max(1),
            panic_at: config.panic_in_poll_at,
            poll_delay: Duration::from_millis(config.poll_delay_ms),
            poll_busy: Duration::from_millis(config.poll_busy_ms),
            failures_left: config.fail_poll_times,
            poll_ahead: config.poll_ahead,
            committed,
            staged: VecDeque::new(),
            shape,
        })
    }

    async fn poll(&mut self) -> Result<ProducedMessages, Error> {
        if !self.poll_delay.is_zero() {
            tokio::time::sleep(self.poll_delay).await;
        }
        if !self.poll_busy.is_zero() {
            std::thread::sleep(self.poll_busy);
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
            return Ok(ProducedMessages::empty(self.shape.schema));
        }
        if let Some(at) = self.panic_at
            && (start..end).contains(&at)
        {
            panic!("test source {}: panic_in_poll_at = {at}", self.id);
        }
        let messages = (start..end).map(|k| self.shape.message(k)).collect();
        self.staged.push_back(end);
        let state = ConnectorState::serialize(&State { next: end }).context(StateSnafu)?;
        Ok(ProducedMessages {
            schema: self.shape.schema,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(config: serde_json::Value) -> Result<Shape, Error> {
        let config: Config = serde_json::from_value(config).unwrap();
        Shape::from_config(&config)
    }

    #[test]
    fn default_shape_is_the_counter_with_two_headers() {
        let m = shape(serde_json::json!({})).unwrap().message(7);
        assert_eq!(m.payload, br#"{"n":7}"#);
        assert_eq!(m.id, Some(7));
        let headers = m.headers.unwrap();
        assert_eq!(headers.len(), 2);
        let n = HeaderKey::new("n").unwrap();
        assert_eq!(headers[&n].as_u64().unwrap(), 7);
    }

    #[test]
    fn padded_payloads_are_json_of_the_asked_size() {
        let s = shape(serde_json::json!({"payload_size": 256, "schema": "raw"})).unwrap();
        assert_eq!(s.schema, Schema::Raw);
        for k in [0, 9, 123_456_789] {
            let payload = s.message(k).payload;
            assert_eq!(payload.len(), 256);
            let value: serde_json::Value = serde_json::from_slice(&payload).unwrap();
            assert_eq!(value["n"], k);
        }
        // Never shorter than the object itself.
        let tiny = shape(serde_json::json!({"payload_size": 3})).unwrap();
        assert_eq!(tiny.message(5).payload, br#"{"n":5,"p":""}"#);
    }

    #[test]
    fn literal_payload_and_listed_headers() {
        let s = shape(serde_json::json!({
            "payload": "{\"a\":1}",
            "headers": [
                {"name": "t", "kind": "string", "size": 24},
                {"name": "b", "kind": "int32"},
                {"name": "o", "kind": "int64"},
                {"name": "r", "kind": "raw", "size": 3},
                {"name": "f", "kind": "bool"},
            ]
        }))
        .unwrap();
        let m = s.message(41);
        assert_eq!(m.payload, br#"{"a":1}"#);
        let h = m.headers.unwrap();
        let get = |name: &str| h[&HeaderKey::new(name).unwrap()].clone();
        assert_eq!(get("t").as_str().unwrap(), "x".repeat(24));
        assert_eq!(get("b").as_i32().unwrap(), 41);
        assert_eq!(get("o").as_i64().unwrap(), 41);
        assert_eq!(get("r").as_raw().unwrap(), b"xxx");
        assert!(get("f").as_bool().unwrap());
    }

    #[test]
    fn headers_none_or_empty_carry_no_map() {
        for headers in [serde_json::json!("none"), serde_json::json!([])] {
            let s = shape(serde_json::json!({ "headers": headers })).unwrap();
            assert!(s.message(1).headers.is_none());
        }
    }

    #[test]
    fn bad_shapes_are_refused_with_the_fix() {
        let both = shape(serde_json::json!({"payload": "x", "payload_size": 9}));
        assert!(both.unwrap_err().to_string().contains("keep one"));
        let kind = shape(serde_json::json!({"headers": [{"name": "a", "kind": "f16"}]}));
        assert!(kind.unwrap_err().to_string().contains("is not one of"));
        let text = shape(serde_json::json!({"headers": "some"}));
        assert!(text.unwrap_err().to_string().contains("\"none\""));
    }
}
