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

//! `[plugin_config]`: the JSON the runtime passes, read by serde into [`Keys`], then built into
//! [`Config`].
//!
//! [`Keys`] lists every key once: its type, its default and the values it accepts are declared
//! on its field. Each key is read on its own, so an error names the key, the bad value and what
//! is accepted ([`section`]). [`Config`] is the configuration the plugin uses, built once from
//! the keys ([`Config::parse`]): the keys that only mean something together are checked against
//! each other there and replaced by the value built from them.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;
use snafu::Snafu;

use crate::filter::FilterText;
use crate::scope::prune::PartitionFilter;
use crate::scope::share::Assignment;
use crate::scope::stop::StoppingOffset;

mod endpoints;
mod keys;
mod offset_keys;
pub mod options;
mod sasl;
mod section;
mod selections;
mod values;

pub use keys::Keys;
use options::{
    ChangelogFormat, HeaderSet, IpcCompression, JsonOptions, OutOfRangePolicy, PayloadFormat,
    PayloadSchema, StartingOffset, TableType,
};
pub use sasl::{Sasl, Secret};

/// Default `batch_size`: upstream Iggy sources and the runtime's producer batch 1000 messages.
pub const DEFAULT_BATCH_SIZE: usize = 1000;
/// Keys that are accepted but have no effect, each with the reason the WARN names.
pub const IGNORED_KEYS: [(&str, &str); 1] = [(
    "snapshot_max_bucket_rows",
    "snapshots are read from KV snapshot files a batch at a time, with no cap",
)];

/// A configuration key that is missing or has a value the plugin cannot use.
#[derive(Debug, Snafu, PartialEq, Eq)]
#[snafu(display("invalid plugin_config: {message}"))]
pub struct ConfigError {
    /// The key at fault (`plugin_config` for the section as a whole).
    pub key: &'static str,
    /// What is wrong and what is accepted.
    pub message: String,
}

/// The validated plugin configuration, built once from [`Keys`] by [`Config::parse`]: a field
/// per key the plugin uses as given, and in place of the keys that only mean something
/// together, the value built from them ([`Config::json`], [`Config::sasl`],
/// [`Config::assignment`], [`Config::ignored`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// `host:port[,host:port…]` of the Fluss coordinator.
    pub bootstrap_servers: String,
    /// Database of the table to read.
    pub database: String,
    /// Name of the table to read.
    pub table: String,
    /// The table kind the user expects.
    pub table_type: TableType,
    /// Where buckets without saved state begin.
    pub starting_offset: StartingOffset,
    /// Column projection (`None` = all columns).
    pub columns: Option<Vec<String>>,
    /// Row filter (`None` = every row), checked against the table at open.
    pub filter: Option<FilterText>,
    /// Payload encoding.
    pub payload_format: PayloadFormat,
    /// The Iggy schema JSON payloads declare.
    pub payload_schema: PayloadSchema,
    /// Which headers messages carry.
    pub headers: HeaderSet,
    /// Arrow IPC body compression.
    pub arrow_ipc_compression: IpcCompression,
    /// Shape of primary-key table changes.
    pub changelog_format: ChangelogFormat,
    /// Most messages in one batch (at most a million).
    pub batch_size: usize,
    /// Longest wait for data before a partial batch is handed over.
    pub poll_interval: Duration,
    /// Soft cap on the payload bytes of one batch (at least 1 KiB).
    pub max_batch_bytes: usize,
    /// How often partitions are listed (`ZERO` = only at open).
    pub partition_discovery_interval: Duration,
    /// What to do with a saved offset that is no longer on the server.
    pub on_offset_out_of_range: OutOfRangePolicy,
    /// JSON value formats (`temporal_format`, `decimal_format`).
    pub json: JsonOptions,
    /// Add a `_fluss` metadata object to log-table JSON rows.
    pub include_metadata: bool,
    /// SASL credentials, if any (`sasl_mechanism`, `sasl_username`, `sasl_password`).
    pub sasl: Option<Sasl>,
    /// How long open keeps retrying an unreachable cluster.
    pub connect_timeout: Duration,
    /// Per-batch logs at INFO instead of DEBUG.
    pub verbose_logging: bool,
    /// This instance's share of the buckets (`instance_index`, `instance_count`).
    pub assignment: Assignment,
    /// Where a bounded read stops (`None` = never).
    pub stopping_offset: Option<StoppingOffset>,
    /// The partitions read (`None` = all).
    pub partitions: Option<PartitionFilter>,
    /// The keys of [`IGNORED_KEYS`] the section sets.
    pub ignored: Vec<&'static str>,
    /// Where the Prometheus endpoint listens (`None` = no metrics).
    pub metrics_address: Option<SocketAddr>,
    /// The `connector` label of this connector's metrics (`None` = `db.table`).
    pub metrics_connector: Option<String>,
    /// Where a bucket's KV snapshot files are copied while its snapshot is read.
    pub snapshot_dir: PathBuf,
}

impl Config {
    /// `db.table`, as used in headers and logs.
    pub fn qualified_table(&self) -> String {
        format!("{}.{}", self.database, self.table)
    }

    /// The `connector` label of the metrics: `metrics_connector`, else `db.table`.
    pub fn metrics_label(&self) -> String {
        self.metrics_connector
            .clone()
            .unwrap_or_else(|| self.qualified_table())
    }

    /// One WARN line's text per key of [`IGNORED_KEYS`] that is set: it has no effect and can
    /// be removed.
    pub fn ignored_warnings(&self) -> Vec<String> {
        IGNORED_KEYS
            .iter()
            .filter(|(key, _)| self.ignored.contains(key))
            .map(|(key, why)| {
                format!("`{key}` has no effect ({why}); remove it from [plugin_config]")
            })
            .collect()
    }

    /// Parses the JSON text the runtime passes to `iggy_source_open`.
    pub fn parse(json: &str) -> Result<Self, ConfigError> {
        let value: Value = serde_json::from_str(json).map_err(|e| ConfigError {
            key: "plugin_config",
            message: format!("the plugin configuration is not valid JSON ({e})"),
        })?;
        if value.is_null() {
            return Err(ConfigError {
                key: "plugin_config",
                message: "the connector file has no [plugin_config] section; add one with at least `bootstrap_servers`, `database` and `table`".into(),
            });
        }
        let (keys, given) = section::read::<Keys>(value)?;
        Self::from_keys(keys, &given)
    }

    /// The configuration `keys` give, after the checks between keys; `given` are the keys the
    /// section sets.
    fn from_keys(keys: Keys, given: &[&'static str]) -> Result<Self, ConfigError> {
        let Keys {
            bootstrap_servers,
            database,
            table,
            table_type,
            starting_offset,
            columns,
            filter,
            payload_format,
            payload_schema,
            headers,
            arrow_ipc_compression,
            changelog_format,
            batch_size,
            poll_interval,
            max_batch_bytes,
            partition_discovery_interval,
            on_offset_out_of_range,
            temporal_format,
            decimal_format,
            include_metadata,
            sasl_mechanism,
            sasl_username,
            sasl_password,
            connect_timeout,
            verbose_logging,
            instance_index,
            instance_count,
            stopping_offset,
            partitions,
            // Checked by its parser; `given` says whether it is set.
            snapshot_max_bucket_rows: (),
            metrics_address,
            metrics_connector,
            snapshot_dir,
        } = keys;
        let sasl = sasl::credentials(sasl_mechanism, sasl_username, sasl_password)?;
        // Both fit in u32: their fields' ranges bound them.
        let (index, count) = (instance_index as u32, instance_count as u32);
        let assignment = Assignment::try_new(index, count).map_err(|message| ConfigError {
            key: if count == 0 {
                "instance_count"
            } else {
                "instance_index"
            },
            message,
        })?;
        let ignored = IGNORED_KEYS
            .iter()
            .map(|(key, _)| *key)
            .filter(|key| given.contains(key))
            .collect();
        Ok(Self {
            bootstrap_servers,
            database,
            table,
            table_type,
            starting_offset,
            columns,
            filter,
            payload_format,
            payload_schema,
            headers,
            arrow_ipc_compression,
            changelog_format,
            batch_size,
            poll_interval,
            max_batch_bytes,
            partition_discovery_interval,
            on_offset_out_of_range,
            json: JsonOptions {
                temporal: temporal_format,
                decimal: decimal_format,
            },
            include_metadata,
            sasl,
            connect_timeout,
            verbose_logging,
            assignment,
            stopping_offset,
            partitions,
            ignored,
            metrics_address,
            metrics_connector,
            snapshot_dir,
        })
    }
}

/// The `db.table` that the JSON text `json` names, both keys read as [`Config::parse`] reads
/// them; `None` when either is missing or invalid or the text is no JSON object. It names the
/// instance in the lines of an `open` that fails before (or while) its configuration is read.
pub fn named_table(json: &str) -> Option<String> {
    let value: Value = serde_json::from_str(json).ok()?;
    let name = |key| values::read_name::<serde_json::Error>(value.get(key)?).ok();
    Some(format!("{}.{}", name("database")?, name("table")?))
}

/// Every key `[plugin_config]` accepts, in declaration order: the field list serde derives
/// for [`Keys`].
pub fn keys() -> &'static [&'static str] {
    section::fields::<Keys>()
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod doc_tests;
