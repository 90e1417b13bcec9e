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

//! `payload_format = "json"`: one JSON object per log-table row ([`RowMessages`]) or per
//! change of a primary-key table ([`ChangeMessages`]), declared `Schema::Json` or
//! `Schema::Raw` as `payload_schema` says; [`runtime_json`]: what the runtime's handling of
//! `Schema::Json` payloads keeps.

pub mod runtime_json;

use fluss::metadata::DataField;

use crate::client::connect::Fetch;
use crate::client::table::Table;
use crate::config::options::PayloadSchema;
use crate::config::{Config, ConfigError};
use crate::encode::Encoder;
use crate::encode::cdc::ChangeMessages;
use crate::encode::rows::RowMessages;
use crate::error::Result;
use crate::format::Format;
use crate::sdk::Schema;

/// JSON payloads, with the schema their batches declare.
pub struct Json {
    schema: PayloadSchema,
}

impl Json {
    /// The JSON format of `config` (`payload_schema`).
    pub fn new(config: &Config) -> Self {
        Self {
            schema: config.payload_schema,
        }
    }
}

impl Format for Json {
    fn name(&self) -> &'static str {
        "json"
    }

    fn encoder(&self, config: &Config, table: &Table) -> Result<Box<dyn Encoder>> {
        Ok(if table.primary_key {
            Box::new(ChangeMessages::new(
                &config.database,
                &config.table,
                table.schemas.clone(),
                config.json,
                config.changelog_format,
            ))
        } else {
            Box::new(RowMessages::new(
                table.schemas.clone(),
                config.json,
                config.include_metadata,
            ))
        })
    }

    fn batch_schema(&self) -> Schema {
        match self.schema {
            PayloadSchema::Json => Schema::Json,
            PayloadSchema::Raw => Schema::Raw,
        }
    }

    /// The next batch is encoded while the runtime decodes the previous one's messages, on
    /// another core (BENCHMARKS.md, "Through the stand-in runner").
    fn polls_ahead(&self) -> bool {
        true
    }

    /// Building messages is what limits JSON, so one scanner, and fetch rounds of four
    /// buckets' worth: more would only hold more memory. A poll may return a whole batch,
    /// which keeps the number of polls (each a pass over the fetch buffer) low.
    fn fetch(&self, config: &Config) -> Fetch {
        Fetch {
            records_per_poll: config.batch_size.max(500),
            readers: 1,
            round_bytes_at_least: 0,
        }
    }

    /// A read batch per `batch_size` messages.
    fn snapshot_read_rows(&self, config: &Config) -> usize {
        config.batch_size.clamp(256, 16_384)
    }

    fn check_columns(
        &self,
        config: &Config,
        fields: &[DataField],
        changelog: bool,
    ) -> Result<Option<String>, ConfigError> {
        match self.schema {
            PayloadSchema::Json => runtime_json::check(config, fields, changelog),
            // The runtime passes raw payloads through untouched.
            PayloadSchema::Raw => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::format::chosen;
    use crate::format::test_support::config;
    use crate::sdk::Schema;

    #[test]
    fn json_reads_with_one_scanner_a_batch_per_poll() {
        let config = config(json!({"batch_size": 2000}));
        let format = chosen(&config);
        assert_eq!(format.name(), "json");
        let fetch = format.fetch(&config);
        assert_eq!((fetch.readers, fetch.records_per_poll), (1, 2000));
        assert_eq!(fetch.round_bytes_at_least, 0);
        assert_eq!(
            format.fetch(&self::config(json!({}))).records_per_poll,
            1000
        );
        assert_eq!(format.snapshot_read_rows(&config), 2000);
        assert!(format.polls_ahead());
    }

    #[test]
    fn the_batch_schema_is_payload_schema() {
        let json = config(json!({}));
        assert_eq!(chosen(&json).batch_schema(), Schema::Json);
        let raw = config(json!({"payload_schema": "raw"}));
        assert_eq!(chosen(&raw).batch_schema(), Schema::Raw);
    }
}
