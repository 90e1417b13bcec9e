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

//! `[plugin_config]`: the JSON the runtime passes, read by serde into [`Config`].
//!
//! [`Config`] lists every key once: its type, its default and the values it accepts are
//! declared on its field. Each key is read on its own, so an error names the key, the bad
//! value and what is accepted ([`section`]); the keys that only mean something together are
//! checked against each other after that ([`Config::parse`]).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;
use snafu::Snafu;

use crate::filter::FilterText;
use crate::scope::prune::PartitionFilter;
use crate::scope::share::Assignment;
use crate::scope::stop::StoppingOffset;

mod endpoints;
mod offsets;
pub mod options;
mod sasl;
mod section;
mod selections;
mod values;

use options::{
    ChangelogFormat, DecimalFormat, HeaderSet, IpcCompression, JsonOptions, OutOfRangePolicy,
    PayloadFormat, PayloadSchema, StartingOffset, TableType, TemporalFormat,
};
pub use sasl::{Sasl, Secret};
use values::Ranged;

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

/// The plugin configuration: a field per `[plugin_config]` key, then the fields built from
/// several keys. The order of the keys is the order [`keys`] and serde's unknown-key message
/// list them in, and the order their values are checked in.
///
/// Each key's field names its parser (`deserialize_with`) and its default (`default`: a
/// function, or the `#[default]` value of its type); a key without a default is required.
/// Read it with [`Config::parse`], which builds the fields of several keys: serde alone leaves
/// them at their defaults.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
// How serde's messages name the section when it is not an object: "invalid type: integer
// `5`, expected struct RawConfig".
#[serde(deny_unknown_fields, expecting = "struct RawConfig")]
pub struct Config {
    /// `host:port[,host:port…]` of the Fluss coordinator.
    #[serde(deserialize_with = "endpoints::servers")]
    pub bootstrap_servers: String,
    /// Database of the table to read.
    #[serde(deserialize_with = "values::name")]
    pub database: String,
    /// Name of the table to read.
    #[serde(deserialize_with = "values::name")]
    pub table: String,
    /// The table kind the user expects.
    #[serde(default, deserialize_with = "values::choice")]
    pub table_type: TableType,
    /// Where buckets without saved state begin.
    #[serde(default, deserialize_with = "offsets::starting")]
    pub starting_offset: StartingOffset,
    /// Column projection (`None` = all columns).
    #[serde(default, deserialize_with = "selections::columns")]
    pub columns: Option<Vec<String>>,
    /// Row filter (`None` = every row), checked against the table at open.
    #[serde(default, deserialize_with = "selections::filter")]
    pub filter: Option<FilterText>,
    /// Payload encoding.
    #[serde(default, deserialize_with = "values::choice")]
    pub payload_format: PayloadFormat,
    /// The Iggy schema JSON payloads declare.
    #[serde(default, deserialize_with = "values::choice")]
    pub payload_schema: PayloadSchema,
    /// Which headers messages carry.
    #[serde(default, deserialize_with = "selections::headers")]
    pub headers: HeaderSet,
    /// Arrow IPC body compression.
    #[serde(default, deserialize_with = "values::choice")]
    pub arrow_ipc_compression: IpcCompression,
    /// Shape of primary-key table changes.
    #[serde(default, deserialize_with = "values::choice")]
    pub changelog_format: ChangelogFormat,
    /// Most messages in one batch. At most a million: the runtime keeps a whole batch in
    /// memory twice (decoded and encoded).
    #[serde(
        default = "values::number::<DEFAULT_BATCH_SIZE>",
        deserialize_with = "Ranged::<1, 1_000_000>::deserialize"
    )]
    pub batch_size: usize,
    /// Longest wait for data before a partial batch is handed over.
    #[serde(
        default = "values::millis::<500>",
        deserialize_with = "values::duration"
    )]
    pub poll_interval: Duration,
    /// Soft cap on the payload bytes of one batch: by default 8 MiB, which bounds the memory
    /// of one batch in flight; at least 1 KiB, so that one row always fits.
    #[serde(
        default = "values::number::<{ 8 * 1024 * 1024 }>",
        deserialize_with = "Ranged::<1024, { usize::MAX }>::deserialize"
    )]
    pub max_batch_bytes: usize,
    /// How often partitions are listed (`ZERO` = only at open).
    #[serde(
        default = "values::seconds::<60>",
        deserialize_with = "values::duration_or_off"
    )]
    pub partition_discovery_interval: Duration,
    /// What to do with a saved offset that is no longer on the server.
    #[serde(default, deserialize_with = "values::choice")]
    pub on_offset_out_of_range: OutOfRangePolicy,
    /// `temporal_format`, read through [`Config::json`].
    #[serde(default, deserialize_with = "values::choice")]
    temporal_format: TemporalFormat,
    /// `decimal_format`, read through [`Config::json`].
    #[serde(default, deserialize_with = "values::choice")]
    decimal_format: DecimalFormat,
    /// Add a `_fluss` metadata object to log-table JSON rows.
    #[serde(default, deserialize_with = "values::flag")]
    pub include_metadata: bool,
    /// `sasl_mechanism`, read through [`Config::sasl`].
    #[serde(default, deserialize_with = "sasl::mechanism")]
    sasl_mechanism: Option<String>,
    /// `sasl_username`, read through [`Config::sasl`].
    #[serde(default, deserialize_with = "values::some_name")]
    sasl_username: Option<String>,
    /// `sasl_password`, read through [`Config::sasl`].
    #[serde(default, deserialize_with = "sasl::password")]
    sasl_password: Option<Secret>,
    /// How long open keeps retrying an unreachable cluster.
    #[serde(
        default = "values::seconds::<30>",
        deserialize_with = "values::duration"
    )]
    pub connect_timeout: Duration,
    /// Per-batch logs at INFO instead of DEBUG.
    #[serde(default, deserialize_with = "values::flag")]
    pub verbose_logging: bool,
    /// `instance_index`, read through [`Config::assignment`]. Instances are at most 65536:
    /// far more than any table has buckets.
    #[serde(
        default = "values::number::<0>",
        deserialize_with = "Ranged::<0, 65_535>::deserialize"
    )]
    instance_index: usize,
    /// `instance_count`, read through [`Config::assignment`] (0 is refused there, with a
    /// message of its own).
    #[serde(
        default = "values::number::<1>",
        deserialize_with = "Ranged::<0, 65_536>::deserialize"
    )]
    instance_count: usize,
    /// Where a bounded read stops (`None` = never).
    #[serde(default, deserialize_with = "offsets::stopping")]
    pub stopping_offset: Option<StoppingOffset>,
    /// The partitions read (`None` = all).
    #[serde(default, deserialize_with = "selections::partitions")]
    pub partitions: Option<PartitionFilter>,
    /// One of [`IGNORED_KEYS`]. Its value is checked all the same (a positive `i32` less
    /// one), so that a file setting it opens exactly when it would if the key had an effect.
    #[serde(
        default,
        deserialize_with = "Ranged::<1, { i32::MAX as usize - 1 }>::check"
    )]
    snapshot_max_bucket_rows: (),
    /// Where the Prometheus endpoint listens (`None` = no metrics).
    #[serde(default, deserialize_with = "endpoints::metrics_address")]
    pub metrics_address: Option<SocketAddr>,
    /// The `connector` label of this connector's metrics (`None` = `db.table`).
    #[serde(default, deserialize_with = "values::some_name")]
    pub metrics_connector: Option<String>,
    /// Where a bucket's KV snapshot files are copied while its snapshot is read: by default a
    /// directory under the OS temp directory.
    #[serde(default = "snapshot_dir", deserialize_with = "values::path")]
    pub snapshot_dir: PathBuf,

    /// JSON value formats (`temporal_format`, `decimal_format`).
    #[serde(skip)]
    pub json: JsonOptions,
    /// SASL credentials, if any (`sasl_mechanism`, `sasl_username`, `sasl_password`).
    #[serde(skip)]
    pub sasl: Option<Sasl>,
    /// This instance's share of the buckets (`instance_index`, `instance_count`).
    #[serde(skip)]
    pub assignment: Assignment,
    /// The keys of [`IGNORED_KEYS`] the section sets.
    #[serde(skip)]
    pub ignored: Vec<&'static str>,
}

/// The default `snapshot_dir`.
fn snapshot_dir() -> PathBuf {
    std::env::temp_dir().join("iggy-fluss-source-snapshots")
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
        let (config, given) = section::read::<Self>(value)?;
        config.joined(&given)
    }

    /// The fields built from several keys, after the checks between those keys; `given` are
    /// the keys the section sets.
    fn joined(mut self, given: &[&'static str]) -> Result<Self, ConfigError> {
        self.json = JsonOptions {
            temporal: self.temporal_format,
            decimal: self.decimal_format,
        };
        self.sasl = sasl::credentials(
            self.sasl_mechanism.clone(),
            self.sasl_username.clone(),
            self.sasl_password.clone(),
        )?;
        // Both fit in u32: their fields' ranges bound them.
        let (index, count) = (self.instance_index as u32, self.instance_count as u32);
        self.assignment = Assignment::try_new(index, count).map_err(|message| ConfigError {
            key: if count == 0 {
                "instance_count"
            } else {
                "instance_index"
            },
            message,
        })?;
        self.ignored = IGNORED_KEYS
            .iter()
            .map(|(key, _)| *key)
            .filter(|key| given.contains(key))
            .collect();
        Ok(self)
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
/// for [`Config`].
pub fn keys() -> &'static [&'static str] {
    section::fields::<Config>()
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod doc_tests;
