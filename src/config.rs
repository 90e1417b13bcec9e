//! `[plugin_config]`: the raw JSON the runtime passes, validated key by key into [`Config`].
//!
//! The runtime hands the section over as compact JSON. Its environment overrides are
//! type-guessed (`…_PLUGIN_CONFIG_BATCH_SIZE=500` arrives as a number, `…=true` as a bool), so
//! every numeric or boolean key accepts both the JSON type and its text. Each key is converted
//! on its own, so an error names the key, the bad value and what is accepted.

use std::fmt;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;
use snafu::Snafu;

use crate::options::{
    ChangelogFormat, Choice, DecimalFormat, Header, HeaderSet, IpcCompression, JsonOptions,
    OutOfRangePolicy, PayloadFormat, PayloadSchema, StartingOffset, TableType, TemporalFormat,
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
}

impl Config {
    /// `db.table`, as used in headers and logs.
    pub fn qualified_table(&self) -> String {
        format!("{}.{}", self.database, self.table)
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
            message: format!("{e}; see the README for the accepted keys"),
        })?;
        raw.validate()
    }
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
}

impl RawConfig {
    fn validate(self) -> Result<Config, ConfigError> {
        let bootstrap_servers = bootstrap(required("bootstrap_servers", self.bootstrap_servers)?)?;
        let database = name("database", required("database", self.database)?)?;
        let table = name("table", required("table", self.table)?)?;
        let sasl = sasl(self.sasl_mechanism, self.sasl_username, self.sasl_password)?;
        Ok(Config {
            bootstrap_servers,
            database,
            table,
            table_type: choice("table_type", self.table_type, TableType::Auto)?,
            starting_offset: starting_offset(self.starting_offset)?,
            columns: columns(self.columns)?,
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
        })
    }
}

fn required(key: &'static str, value: Option<Value>) -> Result<Value, ConfigError> {
    match value {
        Some(Value::Null) | None => Err(ConfigError {
            key,
            message: format!("`{key}` is required"),
        }),
        Some(v) => Ok(v),
    }
}

/// A string, or a number/bool given where text was meant (env overrides are type-guessed).
fn text(key: &'static str, value: &Value, accepted: &str) -> Result<String, ConfigError> {
    match value {
        Value::String(s) => Ok(s.trim().to_owned()),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        _ => Err(invalid(key, value, accepted)),
    }
}

fn name(key: &'static str, value: Value) -> Result<String, ConfigError> {
    let s = text(key, &value, "give the name as a string")?;
    if s.is_empty() {
        return Err(invalid(key, &value, "it must not be empty"));
    }
    Ok(s)
}

fn bootstrap(value: Value) -> Result<String, ConfigError> {
    const KEY: &str = "bootstrap_servers";
    const ACCEPTED: &str = "use host:port[,host:port…], e.g. \"127.0.0.1:9123\"";
    let s = text(KEY, &value, ACCEPTED)?;
    let servers: Vec<&str> = s.split(',').map(str::trim).collect();
    let well_formed = servers.iter().all(|server| {
        server
            .rsplit_once(':')
            .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok())
    });
    if !well_formed {
        return Err(invalid(KEY, &value, ACCEPTED));
    }
    Ok(servers.join(","))
}

fn accepted_names<T: Choice>() -> String {
    let names: Vec<String> = T::CHOICES.iter().map(|(n, _)| format!("\"{n}\"")).collect();
    format!("use one of {}", names.join(", "))
}

fn choice<T: Choice>(
    key: &'static str,
    value: Option<Value>,
    default: T,
) -> Result<T, ConfigError> {
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return Ok(default);
    };
    let s = text(key, &value, &accepted_names::<T>())?;
    T::CHOICES
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(&s))
        .map(|(_, t)| *t)
        .ok_or_else(|| invalid(key, &value, &accepted_names::<T>()))
}

/// `headers`: `"all"`, `"none"`, or a list (or comma-separated string) of header names.
fn headers(value: Option<Value>) -> Result<HeaderSet, ConfigError> {
    const KEY: &str = "headers";
    let accepted = || {
        format!(
            "use \"all\", \"none\" or a list of header names ({})",
            accepted_names::<Header>().trim_start_matches("use one of ")
        )
    };
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return Ok(HeaderSet::ALL);
    };
    let names: Vec<String> = match &value {
        Value::String(s) if s.trim().eq_ignore_ascii_case("all") => return Ok(HeaderSet::ALL),
        Value::String(s) if s.trim().eq_ignore_ascii_case("none") => return Ok(HeaderSet::NONE),
        Value::String(s) => s.split(',').map(|n| n.trim().to_owned()).collect(),
        Value::Array(items) => items
            .iter()
            .map(|item| text(KEY, item, &accepted()))
            .collect::<Result<_, _>>()?,
        _ => return Err(invalid(KEY, &value, &accepted())),
    };
    let mut selected = Vec::with_capacity(names.len());
    for name in &names {
        let header = Header::CHOICES
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, h)| *h)
            .ok_or_else(|| ConfigError {
                key: KEY,
                message: format!(
                    "`headers` names an unknown header \"{name}\"; {}",
                    accepted()
                ),
            })?;
        selected.push(header);
    }
    Ok(HeaderSet::of(&selected))
}

fn integer(
    key: &'static str,
    value: Option<Value>,
    default: usize,
    min: usize,
    max: usize,
) -> Result<usize, ConfigError> {
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return Ok(default);
    };
    let accepted = if max == usize::MAX {
        format!("use a whole number ≥ {min}")
    } else {
        format!("use a whole number from {min} to {max}")
    };
    let parsed = match &value {
        Value::Number(n) => n.as_u64().and_then(|n| usize::try_from(n).ok()),
        Value::String(s) => s.trim().replace('_', "").parse::<usize>().ok(),
        _ => None,
    };
    match parsed {
        Some(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(invalid(key, &value, &accepted)),
    }
}

fn duration(
    key: &'static str,
    value: Option<Value>,
    default: Duration,
    zero_allowed: bool,
) -> Result<Duration, ConfigError> {
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return Ok(default);
    };
    let accepted = if zero_allowed {
        "use a duration such as \"500ms\", \"30s\" or \"1m\" (\"0s\" turns it off)"
    } else {
        "use a positive duration such as \"500ms\", \"30s\" or \"1m\""
    };
    let s = text(key, &value, accepted)?;
    let parsed = if s == "0" {
        Some(Duration::ZERO)
    } else {
        humantime::parse_duration(&s).ok()
    };
    match parsed {
        Some(d) if zero_allowed || !d.is_zero() => Ok(d),
        _ => Err(invalid(key, &value, accepted)),
    }
}

fn boolean(key: &'static str, value: Option<Value>, default: bool) -> Result<bool, ConfigError> {
    match value {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Bool(b)) => Ok(b),
        Some(Value::String(s)) if s.trim().eq_ignore_ascii_case("true") => Ok(true),
        Some(Value::String(s)) if s.trim().eq_ignore_ascii_case("false") => Ok(false),
        Some(other) => Err(invalid(key, &other, "use true or false")),
    }
}

fn starting_offset(value: Option<Value>) -> Result<StartingOffset, ConfigError> {
    const KEY: &str = "starting_offset";
    const ACCEPTED: &str = "use \"earliest\", \"latest\", \"timestamp:<RFC 3339 UTC time or epoch ms>\" or a non-negative offset";
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return Ok(StartingOffset::Earliest);
    };
    let s = text(KEY, &value, ACCEPTED)?;
    let lower = s.to_ascii_lowercase();
    let parsed = if lower == "earliest" {
        Some(StartingOffset::Earliest)
    } else if lower == "latest" {
        Some(StartingOffset::Latest)
    } else if let Some(ts) = lower.strip_prefix("timestamp:") {
        timestamp_millis(ts.trim()).map(StartingOffset::Timestamp)
    } else {
        s.parse::<i64>()
            .ok()
            .filter(|o| *o >= 0)
            .map(StartingOffset::Offset)
    };
    parsed.ok_or_else(|| invalid(KEY, &value, ACCEPTED))
}

/// Epoch milliseconds from either digits or an RFC 3339 UTC time (`2026-11-30T12:00:00Z`).
fn timestamp_millis(s: &str) -> Option<i64> {
    if let Ok(ms) = s.parse::<i64>() {
        return Some(ms);
    }
    let time = humantime::parse_rfc3339_weak(&s.to_ascii_uppercase().replace('Z', "")).ok()?;
    let millis = time.duration_since(std::time::UNIX_EPOCH).ok()?.as_millis();
    i64::try_from(millis).ok()
}

fn columns(value: Option<Value>) -> Result<Option<Vec<String>>, ConfigError> {
    const KEY: &str = "columns";
    const ACCEPTED: &str = "use a list of column names, e.g. [\"id\", \"name\"]";
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let names: Vec<String> = match &value {
        // A comma-separated string is what an environment override naturally gives.
        Value::String(s) => s.split(',').map(|c| c.trim().to_owned()).collect(),
        Value::Array(items) => items
            .iter()
            .map(|item| text(KEY, item, ACCEPTED))
            .collect::<Result<_, _>>()?,
        _ => return Err(invalid(KEY, &value, ACCEPTED)),
    };
    if names.is_empty() || names.iter().any(String::is_empty) {
        return Err(invalid(KEY, &value, ACCEPTED));
    }
    let mut seen = std::collections::HashSet::new();
    if let Some(dup) = names.iter().find(|n| !seen.insert(n.as_str())) {
        return Err(ConfigError {
            key: KEY,
            message: format!("`columns` lists \"{dup}\" twice; list each column once"),
        });
    }
    Ok(Some(names))
}

fn sasl(
    mechanism: Option<Value>,
    username: Option<Value>,
    password: Option<Value>,
) -> Result<Option<Sasl>, ConfigError> {
    let username = username
        .filter(|v| !v.is_null())
        .map(|v| name("sasl_username", v))
        .transpose()?;
    // The password's value is never echoed, even when it is malformed.
    let password = match password.filter(|v| !v.is_null()) {
        None => None,
        Some(Value::String(s)) => Some(Secret(s)),
        Some(Value::Number(n)) => Some(Secret(n.to_string())),
        Some(_) => {
            return Err(ConfigError {
                key: "sasl_password",
                message: "`sasl_password` must be a string".into(),
            })
        }
    };
    let mechanism = mechanism
        .filter(|v| !v.is_null())
        .map(|v| {
            let m = text("sasl_mechanism", &v, "use \"PLAIN\"")?;
            if m.eq_ignore_ascii_case("plain") {
                Ok("PLAIN".to_owned())
            } else {
                Err(invalid(
                    "sasl_mechanism",
                    &v,
                    "the Fluss client supports only \"PLAIN\"",
                ))
            }
        })
        .transpose()?;
    match (username, password) {
        (None, None) if mechanism.is_none() => Ok(None),
        (Some(username), Some(password)) => Ok(Some(Sasl {
            mechanism: mechanism.unwrap_or_else(|| "PLAIN".to_owned()),
            username,
            password,
        })),
        (None, _) => Err(ConfigError {
            key: "sasl_username",
            message: "SASL needs `sasl_username` as well as `sasl_password`".into(),
        }),
        (Some(_), None) => Err(ConfigError {
            key: "sasl_password",
            message: "SASL needs `sasl_password` as well as `sasl_username`".into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(extra: Value) -> Result<Config, ConfigError> {
        let mut base =
            json!({"bootstrap_servers": "127.0.0.1:9123", "database": "fluss", "table": "orders"});
        if let (Value::Object(b), Value::Object(e)) = (&mut base, extra) {
            b.extend(e);
        }
        Config::parse(&base.to_string())
    }

    fn error_for(extra: Value) -> ConfigError {
        parse(extra).expect_err("config should be refused")
    }

    #[test]
    fn defaults_match_the_product_contract() {
        let c = parse(json!({})).unwrap();
        assert_eq!(c.table_type, TableType::Auto);
        assert_eq!(c.starting_offset, StartingOffset::Earliest);
        assert_eq!(c.columns, None);
        assert_eq!(c.payload_format, PayloadFormat::Json);
        assert_eq!(c.payload_schema, PayloadSchema::Json);
        assert_eq!(c.headers, HeaderSet::ALL);
        assert_eq!(c.arrow_ipc_compression, IpcCompression::None);
        assert_eq!(c.changelog_format, ChangelogFormat::Debezium);
        assert_eq!(c.batch_size, 1000);
        assert_eq!(c.poll_interval, Duration::from_millis(500));
        assert_eq!(c.max_batch_bytes, 8_388_608);
        assert_eq!(c.partition_discovery_interval, Duration::from_secs(60));
        assert_eq!(c.on_offset_out_of_range, OutOfRangePolicy::Earliest);
        assert_eq!(c.json.temporal, TemporalFormat::Iso8601);
        assert_eq!(c.json.decimal, DecimalFormat::String);
        assert!(!c.include_metadata);
        assert_eq!(c.sasl, None);
        assert_eq!(c.connect_timeout, Duration::from_secs(30));
        assert!(!c.verbose_logging);
        assert_eq!(c.qualified_table(), "fluss.orders");
    }

    #[test]
    fn null_config_says_to_add_the_section() {
        let e = Config::parse("null").unwrap_err();
        assert_eq!(e.key, "plugin_config");
        assert!(e.message.contains("no [plugin_config] section"), "{e}");
    }

    #[test]
    fn empty_object_names_the_first_missing_key() {
        let e = Config::parse("{}").unwrap_err();
        assert_eq!(e.key, "bootstrap_servers");
        assert_eq!(
            e.to_string(),
            "invalid plugin_config: `bootstrap_servers` is required"
        );
    }

    #[test]
    fn database_and_table_are_required() {
        let e = Config::parse(r#"{"bootstrap_servers":"h:1","table":"t"}"#).unwrap_err();
        assert_eq!(e.key, "database");
        let e = Config::parse(r#"{"bootstrap_servers":"h:1","database":"d"}"#).unwrap_err();
        assert_eq!(e.key, "table");
        let e = error_for(json!({"table": ""}));
        assert!(e.message.contains("must not be empty"), "{e}");
    }

    #[test]
    fn malformed_json_is_refused() {
        let e = Config::parse("{not json").unwrap_err();
        assert_eq!(e.key, "plugin_config");
        assert!(e.message.contains("not valid JSON"), "{e}");
    }

    #[test]
    fn unknown_keys_are_refused_by_name() {
        let e = error_for(json!({"batchsize": 10}));
        assert_eq!(e.key, "plugin_config");
        assert!(e.message.contains("unknown field `batchsize`"), "{e}");
    }

    #[test]
    fn bootstrap_servers_must_be_host_port_pairs() {
        let c = parse(json!({"bootstrap_servers": "a:1, b:2"})).unwrap();
        assert_eq!(c.bootstrap_servers, "a:1,b:2");
        for bad in [
            json!("localhost"),
            json!("h:port"),
            json!(":9123"),
            json!(5),
        ] {
            let e = error_for(json!({ "bootstrap_servers": bad }));
            assert_eq!(e.key, "bootstrap_servers", "{bad}");
            assert!(e.message.contains("host:port"), "{e}");
        }
    }

    #[test]
    fn enums_accept_their_names_in_any_case_and_list_choices() {
        let c = parse(json!({"table_type": "PRIMARY_KEY", "payload_format": "arrow_ipc",
            "arrow_ipc_compression": "zstd", "changelog_format": "flat",
            "on_offset_out_of_range": "fail", "temporal_format": "epoch", "decimal_format": "number"}))
        .unwrap();
        assert_eq!(c.table_type, TableType::PrimaryKey);
        assert_eq!(c.payload_format, PayloadFormat::ArrowIpc);
        assert_eq!(c.arrow_ipc_compression, IpcCompression::Zstd);
        assert_eq!(c.changelog_format, ChangelogFormat::Flat);
        assert_eq!(c.on_offset_out_of_range, OutOfRangePolicy::Fail);
        assert_eq!(c.json.temporal, TemporalFormat::Epoch);
        assert_eq!(c.json.decimal, DecimalFormat::Number);
        let e = error_for(json!({"payload_format": "avro"}));
        assert_eq!(
            e.to_string(),
            "invalid plugin_config: `payload_format` = \"avro\" is not valid; use one of \"json\", \"arrow_ipc\""
        );
        for key in [
            "table_type",
            "arrow_ipc_compression",
            "changelog_format",
            "on_offset_out_of_range",
            "temporal_format",
            "decimal_format",
        ] {
            let e = error_for(json!({ key: "bogus" }));
            assert_eq!(e.key, key);
            assert!(e.message.contains("use one of"), "{e}");
        }
    }

    #[test]
    fn payload_schema_is_json_or_raw() {
        let c = parse(json!({"payload_schema": "RAW"})).unwrap();
        assert_eq!(c.payload_schema, PayloadSchema::Raw);
        let e = error_for(json!({"payload_schema": "avro"}));
        assert_eq!(
            e.to_string(),
            "invalid plugin_config: `payload_schema` = \"avro\" is not valid; use one of \"json\", \"raw\""
        );
    }

    #[test]
    fn headers_are_all_none_or_a_list_of_names() {
        assert_eq!(
            parse(json!({"headers": "all"})).unwrap().headers,
            HeaderSet::ALL
        );
        assert_eq!(
            parse(json!({"headers": "None"})).unwrap().headers,
            HeaderSet::NONE
        );
        assert_eq!(
            parse(json!({"headers": []})).unwrap().headers,
            HeaderSet::NONE
        );
        let two = HeaderSet::of(&[Header::Offset, Header::Bucket]);
        assert_eq!(
            parse(json!({"headers": ["fluss_offset", "fluss_bucket"]}))
                .unwrap()
                .headers,
            two
        );
        assert_eq!(
            parse(json!({"headers": "fluss_offset, FLUSS_BUCKET"}))
                .unwrap()
                .headers,
            two,
            "a comma-separated string, as an environment override gives it"
        );
        let e = error_for(json!({"headers": ["fluss_offset", "offset"]}));
        assert_eq!(
            e.to_string(),
            "invalid plugin_config: `headers` names an unknown header \"offset\"; use \"all\", \"none\" or a list of header names (\"fluss_table\", \"fluss_bucket\", \"fluss_offset\", \"fluss_timestamp\", \"fluss_change_type\", \"fluss_partition\", \"fluss_row_count\")"
        );
        let e = error_for(json!({"headers": 5}));
        assert_eq!(e.key, "headers");
    }

    #[test]
    fn integers_accept_numbers_and_numeric_strings() {
        let c = parse(json!({"batch_size": "250", "max_batch_bytes": 1_048_576})).unwrap();
        assert_eq!(c.batch_size, 250);
        assert_eq!(c.max_batch_bytes, 1_048_576);
        let c = parse(json!({"batch_size": "1_000"})).unwrap();
        assert_eq!(c.batch_size, 1000);
        for bad in [
            json!(0),
            json!(-1),
            json!(1.5),
            json!("ten"),
            json!(2_000_000),
        ] {
            let e = error_for(json!({ "batch_size": bad }));
            assert_eq!(e.key, "batch_size");
            assert!(e.message.contains("from 1 to 1000000"), "{e}");
        }
        let e = error_for(json!({"max_batch_bytes": 100}));
        assert!(e.message.contains("≥ 1024"), "{e}");
    }

    #[test]
    fn durations_are_humantime() {
        let c = parse(json!({"poll_interval": "250ms", "connect_timeout": "2m",
            "partition_discovery_interval": "0s"}))
        .unwrap();
        assert_eq!(c.poll_interval, Duration::from_millis(250));
        assert_eq!(c.connect_timeout, Duration::from_secs(120));
        assert_eq!(c.partition_discovery_interval, Duration::ZERO);
        let e = error_for(json!({"poll_interval": "soon"}));
        assert_eq!(
            e.to_string(),
            "invalid plugin_config: `poll_interval` = \"soon\" is not valid; use a positive duration such as \"500ms\", \"30s\" or \"1m\""
        );
        let e = error_for(json!({"connect_timeout": "0s"}));
        assert_eq!(e.key, "connect_timeout");
        let e = error_for(json!({"partition_discovery_interval": [1]}));
        assert_eq!(e.key, "partition_discovery_interval");
    }

    #[test]
    fn booleans_accept_text() {
        let c = parse(json!({"include_metadata": "TRUE", "verbose_logging": true})).unwrap();
        assert!(c.include_metadata);
        assert!(c.verbose_logging);
        let e = error_for(json!({"verbose_logging": "yes"}));
        assert_eq!(e.key, "verbose_logging");
        assert!(e.message.contains("true or false"));
    }

    #[test]
    fn starting_offsets() {
        let cases = [
            (json!("earliest"), StartingOffset::Earliest),
            (json!("LATEST"), StartingOffset::Latest),
            (json!(42), StartingOffset::Offset(42)),
            (json!("42"), StartingOffset::Offset(42)),
            (
                json!("timestamp:1764500000000"),
                StartingOffset::Timestamp(1_764_500_000_000),
            ),
            (
                json!("timestamp:2026-11-30T12:00:00Z"),
                StartingOffset::Timestamp(1_796_040_000_000),
            ),
            (
                json!("timestamp:2026-11-30T12:00:00.250Z"),
                StartingOffset::Timestamp(1_796_040_000_250),
            ),
        ];
        for (input, expected) in cases {
            let c = parse(json!({ "starting_offset": input })).unwrap();
            assert_eq!(c.starting_offset, expected, "{input}");
        }
        for bad in [json!("first"), json!(-5), json!("timestamp:yesterday")] {
            let e = error_for(json!({ "starting_offset": bad }));
            assert_eq!(e.key, "starting_offset", "{bad}");
            assert!(e.message.contains("\"earliest\""), "{e}");
        }
    }

    #[test]
    fn columns_accept_lists_and_comma_strings() {
        let c = parse(json!({"columns": ["id", "name"]})).unwrap();
        assert_eq!(c.columns, Some(vec!["id".into(), "name".into()]));
        let c = parse(json!({"columns": "id, name"})).unwrap();
        assert_eq!(c.columns, Some(vec!["id".into(), "name".into()]));
        for bad in [json!([]), json!([""]), json!({"a": 1})] {
            let e = error_for(json!({ "columns": bad }));
            assert_eq!(e.key, "columns", "{bad}");
        }
        let e = error_for(json!({"columns": ["id", "id"]}));
        assert!(e.message.contains("twice"), "{e}");
    }

    #[test]
    fn sasl_needs_both_credentials_and_plain() {
        let c = parse(json!({"sasl_username": "alice", "sasl_password": "alice-secret"})).unwrap();
        let sasl = c.sasl.clone().unwrap();
        assert_eq!(sasl.mechanism, "PLAIN");
        assert_eq!(sasl.username, "alice");
        assert_eq!(sasl.password.expose(), "alice-secret");
        let e = error_for(json!({"sasl_username": "alice"}));
        assert_eq!(e.key, "sasl_password");
        let e = error_for(json!({"sasl_password": "x"}));
        assert_eq!(e.key, "sasl_username");
        let e = error_for(
            json!({"sasl_mechanism": "SCRAM-SHA-256", "sasl_username": "a", "sasl_password": "b"}),
        );
        assert_eq!(e.key, "sasl_mechanism");
        assert!(e.message.contains("only \"PLAIN\""));
    }

    #[test]
    fn the_password_never_shows_in_debug_or_errors() {
        let c =
            parse(json!({"sasl_username": "alice", "sasl_password": "hunter2-secret"})).unwrap();
        let debug = format!("{c:?}");
        assert!(!debug.contains("hunter2"), "{debug}");
        assert!(debug.contains("***"));
        let e = error_for(json!({"sasl_password": ["hunter2-secret"], "sasl_username": "a"}));
        assert!(!e.to_string().contains("hunter2"), "{e}");
    }
}

/// The README's options table must list exactly the keys this parser accepts, with defaults
/// that mean what omitting the key means.
#[cfg(test)]
mod readme_tests {
    use super::*;
    use serde_json::json;

    /// `(key, type, default)` of each row of the README's "Configuration options" table.
    fn readme_rows() -> Vec<(String, String, String)> {
        let readme = include_str!("../README.md");
        let section = readme
            .split("## Configuration options")
            .nth(1)
            .expect("README has a Configuration options section");
        section
            .lines()
            .skip_while(|l| !l.starts_with("| Option"))
            .skip(2)
            .take_while(|l| l.starts_with('|'))
            .map(|line| {
                let cells: Vec<String> = line
                    .split('|')
                    .map(|c| c.trim().trim_matches('`').to_owned())
                    .collect();
                (cells[1].clone(), cells[2].clone(), cells[3].clone())
            })
            .collect()
    }

    /// The keys serde accepts, read from its "expected one of" message.
    fn accepted_keys() -> Vec<String> {
        let e = Config::parse(r#"{"__probe__": 1}"#).unwrap_err();
        let list = e
            .message
            .split("expected one of ")
            .nth(1)
            .expect("serde lists the fields");
        let mut keys: Vec<String> = list
            .split(',')
            .map(|k| k.trim().split('`').nth(1).unwrap_or_default().to_owned())
            .filter(|k| !k.is_empty())
            .collect();
        keys.sort();
        keys
    }

    #[test]
    fn the_readme_table_lists_every_key_exactly_once() {
        let mut documented: Vec<String> = readme_rows().into_iter().map(|r| r.0).collect();
        documented.sort();
        let mut unique = documented.clone();
        unique.dedup();
        assert_eq!(unique, documented, "a key is listed twice in the README");
        assert_eq!(
            documented,
            accepted_keys(),
            "README options table vs Config"
        );
    }

    #[test]
    fn readme_defaults_mean_what_omitting_the_key_means() {
        let base = json!({"bootstrap_servers": "h:1", "database": "d", "table": "t"});
        let omitted = Config::parse(&base.to_string()).unwrap();
        let mut checked = 0;
        for (key, _, default) in readme_rows() {
            if ["required", "all", "none"].contains(&default.as_str()) || key == "sasl_mechanism" {
                continue;
            }
            let value: serde_json::Value = serde_json::from_str(&default)
                .unwrap_or_else(|_| panic!("README default of `{key}` is not JSON: {default}"));
            let mut explicit = base.clone();
            explicit[&key] = value;
            let parsed = Config::parse(&explicit.to_string())
                .unwrap_or_else(|e| panic!("README default of `{key}` is refused: {e}"));
            assert_eq!(
                parsed, omitted,
                "README default of `{key}` differs from the code's"
            );
            checked += 1;
        }
        assert!(checked >= 15, "only {checked} defaults checked");
    }
}
