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

//! The keys of `[plugin_config]`, as serde reads them: [`Keys`].

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use super::DEFAULT_BATCH_SIZE;
use super::options::{
    ChangelogFormat, DecimalFormat, HeaderSet, IpcCompression, OutOfRangePolicy, PayloadFormat,
    PayloadSchema, StartingOffset, TableType, TemporalFormat,
};
use super::sasl::{self, Secret};
use super::values::{self, Ranged};
use super::{endpoints, offset_keys, selections};
use crate::filter::FilterText;
use crate::scope::prune::PartitionFilter;
use crate::scope::stop::StoppingOffset;

/// Every `[plugin_config]` key, a field each with the value it is given or its default: nothing
/// here is built from several keys ([`Config`](super::Config) is). The order of the fields is
/// the order [`keys()`](super::keys()) and serde's unknown-key message list the keys in, and the
/// order their values are checked in.
///
/// Each field names its parser (`deserialize_with`) and its default (`default`: a function, or
/// the `#[default]` value of its type); a key without a default is required. Read it with
/// [`Config::parse`](super::Config::parse), which puts the key in front of each refusal.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
// How serde's messages name the section when it is not an object: "invalid type: integer
// `5`, expected a [plugin_config] section".
#[serde(deny_unknown_fields, expecting = "a [plugin_config] section")]
pub struct Keys {
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
    #[serde(default, deserialize_with = "offset_keys::starting")]
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
    /// `temporal_format`, read through [`Config::json`](super::Config::json).
    #[serde(default, deserialize_with = "values::choice")]
    pub temporal_format: TemporalFormat,
    /// `decimal_format`, read through [`Config::json`](super::Config::json).
    #[serde(default, deserialize_with = "values::choice")]
    pub decimal_format: DecimalFormat,
    /// Add a `_fluss` metadata object to log-table JSON rows.
    #[serde(default, deserialize_with = "values::flag")]
    pub include_metadata: bool,
    /// `sasl_mechanism`, read through [`Config::sasl`](super::Config::sasl).
    #[serde(default, deserialize_with = "sasl::mechanism")]
    pub sasl_mechanism: Option<String>,
    /// `sasl_username`, read through [`Config::sasl`](super::Config::sasl).
    #[serde(default, deserialize_with = "values::some_name")]
    pub sasl_username: Option<String>,
    /// `sasl_password`, read through [`Config::sasl`](super::Config::sasl).
    #[serde(default, deserialize_with = "sasl::password")]
    pub sasl_password: Option<Secret>,
    /// How long open keeps retrying an unreachable cluster.
    #[serde(
        default = "values::seconds::<30>",
        deserialize_with = "values::duration"
    )]
    pub connect_timeout: Duration,
    /// Per-batch logs at INFO instead of DEBUG.
    #[serde(default, deserialize_with = "values::flag")]
    pub verbose_logging: bool,
    /// `instance_index`, read through [`Config::assignment`](super::Config::assignment).
    /// Instances are at most 65536: far more than any table has buckets.
    #[serde(
        default = "values::number::<0>",
        deserialize_with = "Ranged::<0, 65_535>::deserialize"
    )]
    pub instance_index: usize,
    /// `instance_count`, read through [`Config::assignment`](super::Config::assignment) (0 is
    /// refused there, with a message of its own).
    #[serde(
        default = "values::number::<1>",
        deserialize_with = "Ranged::<0, 65_536>::deserialize"
    )]
    pub instance_count: usize,
    /// Where a bounded read stops (`None` = never).
    #[serde(default, deserialize_with = "offset_keys::stopping")]
    pub stopping_offset: Option<StoppingOffset>,
    /// The partitions read (`None` = all).
    #[serde(default, deserialize_with = "selections::partitions")]
    pub partitions: Option<PartitionFilter>,
    /// One of [`IGNORED_KEYS`](super::IGNORED_KEYS). Its value is checked all the same (a
    /// positive `i32` less one), so that a file setting it opens exactly when it would if the key
    /// had an effect.
    #[serde(
        default,
        deserialize_with = "Ranged::<1, { i32::MAX as usize - 1 }>::check"
    )]
    pub snapshot_max_bucket_rows: (),
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
}

/// The default `snapshot_dir`.
fn snapshot_dir() -> PathBuf {
    std::env::temp_dir().join("iggy-fluss-source-snapshots")
}
