//! `[plugin_config]`: the raw JSON the runtime passes, validated key by key into [`Config`].
//!
//! The runtime hands the section over as compact JSON. Its environment overrides are
//! type-guessed (`…_PLUGIN_CONFIG_BATCH_SIZE=500` arrives as a number, `…=true` as a bool), so
//! every numeric or boolean key accepts both the JSON type and its text. Each key is converted
//! on its own, so an error names the key, the bad value and what is accepted.

use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;
use snafu::Snafu;

use crate::filter::FilterText;
use crate::scope::share::Assignment;
use crate::scope::stop::StoppingOffset;
pub mod options;

use crate::scope::prune::PartitionFilter;
use options::{
    ChangelogFormat, DecimalFormat, HeaderSet, IpcCompression, JsonOptions, OutOfRangePolicy,
    PayloadFormat, PayloadSchema, StartingOffset, TableType, TemporalFormat,
};

/// Default `batch_size`: upstream Iggy sources and the runtime's producer batch 1000 messages.
pub const DEFAULT_BATCH_SIZE: usize = 1000;
/// Default `poll_interval`.
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_millis(500);
/// Default `max_batch_bytes` (8 MiB): bounds the memory of one batch in flight.
pub const DEFAULT_MAX_BATCH_BYTES: usize = 8 * 1024 * 1024;
/// Default `partition_discovery_interval`.
pub const DEFAULT_PARTITION_DISCOVERY_INTERVAL: Duration = Duration::from_secs(60);
/// Default `connect_timeout`.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// Largest `batch_size`: the runtime keeps a whole batch in memory twice (decoded and encoded).
pub const MAX_BATCH_SIZE: usize = 1_000_000;
/// What `snapshot_max_bucket_rows` stands for when its value is checked; the key has no effect:
/// snapshots are read from KV snapshot files a batch at a time, with no cap
/// (docs/configuration.md, "Advanced"). It is still parsed, so a connector file that set it
/// keeps opening and a value no release accepted is still refused; setting it logs one WARN at
/// open ([`Config::ignored_warnings`]).
pub const DEFAULT_SNAPSHOT_MAX_BUCKET_ROWS: usize = 1_000_000;
/// Keys that are accepted but have no effect, each with the reason the WARN names.
pub const IGNORED_KEYS: [(&str, &str); 1] = [(
    "snapshot_max_bucket_rows",
    "snapshots are read from KV snapshot files a batch at a time, with no cap",
)];
/// Largest `snapshot_max_bucket_rows` accepted (a positive `i32` less one), so that every file
/// that opened before opens now, and no other.
pub const MAX_SNAPSHOT_MAX_BUCKET_ROWS: usize = i32::MAX as usize - 1;
/// Smallest `max_batch_bytes`: one row must always fit.
pub const MIN_MAX_BATCH_BYTES: usize = 1024;

/// A configuration key that is missing or has a value the plugin cannot use.
#[derive(Debug, Snafu, PartialEq, Eq)]
#[snafu(display("invalid plugin_config: {message}"))]
pub struct ConfigError {
    /// The key at fault (`plugin_config` for the section as a whole).
    pub key: &'static str,
    /// What is wrong and what is accepted.
    pub message: String,
}

fn invalid(key: &'static str, value: &Value, accepted: &str) -> ConfigError {
    ConfigError {
        key,
        message: format!("`{key}` = {value} is not valid; {accepted}"),
    }
}

/// A secret that never appears in `Debug` output or logs.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// The secret text, for handing to the Fluss client only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// SASL/PLAIN credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sasl {
    /// The SASL mechanism; Fluss clients support only `PLAIN`.
    pub mechanism: String,
    /// The user name.
    pub username: String,
    /// The password (redacted in `Debug`).
    pub password: Secret,
}

/// The validated plugin configuration.
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
    /// Most messages in one batch.
    pub batch_size: usize,
    /// Longest wait for data before a partial batch is handed over.
    pub poll_interval: Duration,
    /// Soft cap on the payload bytes of one batch.
    pub max_batch_bytes: usize,
    /// How often partitions are listed (`ZERO` = only at open).
    pub partition_discovery_interval: Duration,
    /// What to do with a saved offset that is no longer on the server.
    pub on_offset_out_of_range: OutOfRangePolicy,
    /// JSON value formats.
    pub json: JsonOptions,
    /// Add a `_fluss` metadata object to log-table JSON rows.
    pub include_metadata: bool,
    /// SASL credentials, if any.
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
    pub snapshot_dir: std::path::PathBuf,
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
        let raw = RawConfig::deserialize(&value).map_err(|e| ConfigError {
            key: "plugin_config",
            message: format!("{e}; see docs/configuration.md for the accepted keys"),
        })?;
        raw.validate()
    }
}

/// The `db.table` that the JSON text `json` names, both keys read as [`Config::parse`] reads
/// them; `None` when either is missing or invalid or the text is no JSON object. It names the
/// instance in the lines of an `open` that fails before (or while) its configuration is read.
pub fn named_table(json: &str) -> Option<String> {
    let value: Value = serde_json::from_str(json).ok()?;
    let key = |key: &'static str| name(key, value.get(key)?.clone()).ok();
    Some(format!("{}.{}", key("database")?, key("table")?))
}

/// Every key `[plugin_config]` accepts, in declaration order: the field list serde derives
/// for [`RawConfig`], so there is no second list to keep in step.
pub fn keys() -> &'static [&'static str] {
    use serde::de::{self, Visitor};

    /// A deserializer that only records the fields a struct asks for.
    struct Fields(&'static [&'static str]);

    impl<'de> serde::Deserializer<'de> for &mut Fields {
        type Error = de::value::Error;

        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("only struct fields are recorded"))
        }

        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            self.0 = fields;
            Err(de::Error::custom("only struct fields are recorded"))
        }

        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
            identifier ignored_any
        }
    }

    let mut fields = Fields(&[]);
    // Always an error: the point is the field list it recorded on the way.
    let _ = RawConfig::deserialize(&mut fields);
    fields.0
}

/// The section as it arrives: every key optional and untyped, unknown keys refused.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    bootstrap_servers: Option<Value>,
    database: Option<Value>,
    table: Option<Value>,
    table_type: Option<Value>,
    starting_offset: Option<Value>,
    columns: Option<Value>,
    filter: Option<Value>,
    payload_format: Option<Value>,
    payload_schema: Option<Value>,
    headers: Option<Value>,
    arrow_ipc_compression: Option<Value>,
    changelog_format: Option<Value>,
    batch_size: Option<Value>,
    poll_interval: Option<Value>,
    max_batch_bytes: Option<Value>,
    partition_discovery_interval: Option<Value>,
    on_offset_out_of_range: Option<Value>,
    temporal_format: Option<Value>,
    decimal_format: Option<Value>,
    include_metadata: Option<Value>,
    sasl_mechanism: Option<Value>,
    sasl_username: Option<Value>,
    sasl_password: Option<Value>,
    connect_timeout: Option<Value>,
    verbose_logging: Option<Value>,
    instance_index: Option<Value>,
    instance_count: Option<Value>,
    stopping_offset: Option<Value>,
    partitions: Option<Value>,
    snapshot_max_bucket_rows: Option<Value>,
    metrics_address: Option<Value>,
    metrics_connector: Option<Value>,
    snapshot_dir: Option<Value>,
}

impl RawConfig {
    fn validate(self) -> Result<Config, ConfigError> {
        let bootstrap_servers = bootstrap(required("bootstrap_servers", self.bootstrap_servers)?)?;
        let database = name("database", required("database", self.database)?)?;
        let table = name("table", required("table", self.table)?)?;
        let sasl = sasl(self.sasl_mechanism, self.sasl_username, self.sasl_password)?;
        let set = |value: &Option<Value>| value.as_ref().is_some_and(|v| !v.is_null());
        let ignored = [(
            "snapshot_max_bucket_rows",
            set(&self.snapshot_max_bucket_rows),
        )]
        .into_iter()
        .filter_map(|(key, given)| given.then_some(key))
        .collect();
        // Still checked: a value no release accepted is refused.
        integer(
            "snapshot_max_bucket_rows",
            self.snapshot_max_bucket_rows,
            DEFAULT_SNAPSHOT_MAX_BUCKET_ROWS,
            1,
            MAX_SNAPSHOT_MAX_BUCKET_ROWS,
        )?;
        Ok(Config {
            bootstrap_servers,
            database,
            table,
            table_type: choice("table_type", self.table_type, TableType::Auto)?,
            starting_offset: starting_offset(self.starting_offset)?,
            columns: columns(self.columns)?,
            filter: filter(self.filter)?,
            payload_format: choice("payload_format", self.payload_format, PayloadFormat::Json)?,
            payload_schema: choice("payload_schema", self.payload_schema, PayloadSchema::Json)?,
            headers: headers(self.headers)?,
            arrow_ipc_compression: choice(
                "arrow_ipc_compression",
                self.arrow_ipc_compression,
                IpcCompression::None,
            )?,
            changelog_format: choice(
                "changelog_format",
                self.changelog_format,
                ChangelogFormat::Debezium,
            )?,
            batch_size: integer(
                "batch_size",
                self.batch_size,
                DEFAULT_BATCH_SIZE,
                1,
                MAX_BATCH_SIZE,
            )?,
            poll_interval: duration(
                "poll_interval",
                self.poll_interval,
                DEFAULT_POLL_INTERVAL,
                false,
            )?,
            max_batch_bytes: integer(
                "max_batch_bytes",
                self.max_batch_bytes,
                DEFAULT_MAX_BATCH_BYTES,
                MIN_MAX_BATCH_BYTES,
                usize::MAX,
            )?,
            partition_discovery_interval: duration(
                "partition_discovery_interval",
                self.partition_discovery_interval,
                DEFAULT_PARTITION_DISCOVERY_INTERVAL,
                true,
            )?,
            on_offset_out_of_range: choice(
                "on_offset_out_of_range",
                self.on_offset_out_of_range,
                OutOfRangePolicy::Earliest,
            )?,
            json: JsonOptions {
                temporal: choice(
                    "temporal_format",
                    self.temporal_format,
                    TemporalFormat::Iso8601,
                )?,
                decimal: choice("decimal_format", self.decimal_format, DecimalFormat::String)?,
            },
            include_metadata: boolean("include_metadata", self.include_metadata, false)?,
            sasl,
            connect_timeout: duration(
                "connect_timeout",
                self.connect_timeout,
                DEFAULT_CONNECT_TIMEOUT,
                false,
            )?,
            verbose_logging: boolean("verbose_logging", self.verbose_logging, false)?,
            assignment: assignment(self.instance_index, self.instance_count)?,
            stopping_offset: stopping_offset(self.stopping_offset)?,
            partitions: partitions(self.partitions)?,
            ignored,
            metrics_address: metrics_address(self.metrics_address)?,
            metrics_connector: self
                .metrics_connector
                .filter(|v| !v.is_null())
                .map(|v| name("metrics_connector", v))
                .transpose()?,
            snapshot_dir: snapshot_dir(self.snapshot_dir)?,
        })
    }
}

mod values;
use values::{
    assignment, boolean, bootstrap, choice, columns, duration, filter, headers, integer,
    metrics_address, name, partitions, required, sasl, snapshot_dir, starting_offset,
    stopping_offset,
};

#[cfg(test)]
mod tests;

#[cfg(test)]
mod doc_tests;
