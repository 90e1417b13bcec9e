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
    Batch, Harness, Instance, Level, LogLine, SOURCE_SYMBOLS, exported_iggy_symbols, logs,
};
pub use payload::{
    MessageError, ORDERED_KEYS_LIMIT, Rejection, StreamSchema, UnsupportedStream, encode_messages,
    runtime_payloads,
};
pub use run::{Output, RunOptions, RunSummary, StopReason, run};
