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

//! The payload format (`payload_format`), chosen once at open: one value that answers every
//! question whose answer depends on it, so no other module asks which format is configured.
//!
//! A format builds the encoder of the table's rows, names the schema its batches declare,
//! says whether polling the next batch ahead pays, sizes the client's fetches and the reads of
//! a KV snapshot, and checks the table's columns against what its payloads must carry. Adding
//! a format is a file with a type that implements [`Format`] and a variant of
//! [`PayloadFormat`]; [`chosen`] is where the compiler asks for it.
//!
//! - [`json`]: one JSON object per row or change;
//! - [`arrow_ipc`]: Arrow IPC streams of many rows each.

pub mod arrow_ipc;
pub mod json;

use fluss::metadata::DataField;

use crate::client::connect::Fetch;
use crate::client::table::Table;
use crate::config::options::PayloadFormat;
use crate::config::{Config, ConfigError};
use crate::encode::Encoder;
use crate::error::Result;
use crate::sdk::Schema;

/// Everything that depends on the payload format. Each method is answered by every format:
/// none has a default, so a new format is asked each question by the compiler.
pub trait Format: Send + Sync {
    /// The format's name, as `payload_format` spells it.
    fn name(&self) -> &'static str;

    /// The encoder of `table`'s rows, with the options of `config`.
    fn encoder(&self, config: &Config, table: &Table) -> Result<Box<dyn Encoder>>;

    /// The schema every batch declares to the runtime.
    fn batch_schema(&self) -> Schema;

    /// Whether building the next batch while the runtime sends the previous one pays for
    /// holding two batches in memory (an SDK that can polls ahead where this says so).
    fn polls_ahead(&self) -> bool;

    /// How the client fetches for `config`: rows per poll, scanners, the least bytes a
    /// fetch round asks for.
    fn fetch(&self, config: &Config) -> Fetch;

    /// How many rows of a KV snapshot are read at once, for `config`.
    fn snapshot_read_rows(&self, config: &Config) -> usize;

    /// Checks the scanned columns `fields` (of a primary-key table's changelog when
    /// `changelog`) against what the payloads must carry through the runtime: the text of a
    /// WARN line when something changes on the way, an error when the payloads cannot pass.
    /// Run at open and again when the table's schema changes.
    fn check_columns(
        &self,
        config: &Config,
        fields: &[DataField],
        changelog: bool,
    ) -> Result<Option<String>, ConfigError>;
}

/// The format `payload_format` names, with its options from `config`.
pub fn chosen(config: &Config) -> Box<dyn Format> {
    match config.payload_format {
        PayloadFormat::Json => Box::new(json::Json::new(config)),
        PayloadFormat::ArrowIpc => Box::new(arrow_ipc::ArrowIpc::new(config)),
    }
}

#[cfg(test)]
pub(crate) mod test_support {
    use crate::config::Config;

    /// A configuration of table `db.t` with `extra` keys (a JSON object's members).
    pub fn config(extra: serde_json::Value) -> Config {
        let mut base =
            serde_json::json!({"bootstrap_servers": "h:1", "database": "db", "table": "t"});
        if let (serde_json::Value::Object(b), serde_json::Value::Object(e)) = (&mut base, extra) {
            b.extend(e);
        }
        Config::parse(&base.to_string()).unwrap()
    }
}
