//! One parser per kind of value. The runtime's environment overrides are type-guessed, so
//! numbers and booleans are also accepted as text and text as numbers; every refusal names
//! the key, the value and what is accepted.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::Value;

use super::{invalid, ConfigError, Sasl, Secret};
use crate::config::options::{Choice, Header, HeaderSet, StartingOffset};
use crate::filter::FilterText;
use crate::scope::prune::PartitionFilter;
use crate::scope::share::Assignment;
use crate::scope::stop::StoppingOffset;

pub(super) fn required(key: &'static str, value: Option<Value>) -> Result<Value, ConfigError> {
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

pub(super) fn name(key: &'static str, value: Value) -> Result<String, ConfigError> {
    let s = text(key, &value, "give the name as a string")?;
    if s.is_empty() {
        return Err(invalid(key, &value, "it must not be empty"));
    }
    Ok(s)
}

/// `snapshot_dir`: a directory path; by default one under the OS temp directory.
pub(super) fn snapshot_dir(value: Option<Value>) -> Result<std::path::PathBuf, ConfigError> {
    let Some(value) = value else {
        return Ok(std::env::temp_dir().join("iggy-fluss-source-snapshots"));
    };
    let path = name("snapshot_dir", value)?;
    Ok(std::path::PathBuf::from(path))
}

pub(super) fn bootstrap(value: Value) -> Result<String, ConfigError> {
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

pub(super) fn choice<T: Choice>(
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
pub(super) fn headers(value: Option<Value>) -> Result<HeaderSet, ConfigError> {
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

pub(super) fn integer(
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

pub(super) fn duration(
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

pub(super) fn boolean(
    key: &'static str,
    value: Option<Value>,
    default: bool,
) -> Result<bool, ConfigError> {
    match value {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Bool(b)) => Ok(b),
        Some(Value::String(s)) if s.trim().eq_ignore_ascii_case("true") => Ok(true),
        Some(Value::String(s)) if s.trim().eq_ignore_ascii_case("false") => Ok(false),
        Some(other) => Err(invalid(key, &other, "use true or false")),
    }
}

pub(super) fn starting_offset(value: Option<Value>) -> Result<StartingOffset, ConfigError> {
    const KEY: &str = "starting_offset";
    const ACCEPTED: &str = "use \"full\", \"earliest\", \"latest\", \"timestamp:<RFC 3339 UTC time or epoch ms>\" or a non-negative offset";
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return Ok(StartingOffset::Full);
    };
    let s = text(KEY, &value, ACCEPTED)?;
    let lower = s.to_ascii_lowercase();
    let parsed = if lower == "full" {
        Some(StartingOffset::Full)
    } else if lower == "earliest" {
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

pub(super) fn columns(value: Option<Value>) -> Result<Option<Vec<String>>, ConfigError> {
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

/// `filter`: its syntax is checked here, its columns and literals against the table at open.
pub(super) fn filter(value: Option<Value>) -> Result<Option<FilterText>, ConfigError> {
    const KEY: &str = "filter";
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    // Not `text()`: the filter is not trimmed, so error columns count from its first
    // character, and a number is not a filter.
    let Value::String(text) = &value else {
        return Err(invalid(
            KEY,
            &value,
            "use a condition as a string, e.g. \"amount > 100 AND region IN ('eu', 'us')\"",
        ));
    };
    FilterText::parse(text).map(Some).map_err(|e| ConfigError {
        key: KEY,
        message: e.to_string(),
    })
}

pub(super) fn sasl(
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

/// Most instances one table can be shared by: far more than any table has buckets.
const MAX_INSTANCES: usize = 65_536;

/// `instance_index` and `instance_count`: this instance's share of the buckets.
pub(super) fn assignment(
    index: Option<Value>,
    count: Option<Value>,
) -> Result<Assignment, ConfigError> {
    let index = integer("instance_index", index, 0, 0, MAX_INSTANCES - 1)?;
    let count = integer("instance_count", count, 1, 0, MAX_INSTANCES)?;
    // Both fit in u32: they are bounded by MAX_INSTANCES above.
    Assignment::try_new(index as u32, count as u32).map_err(|message| ConfigError {
        key: if count == 0 {
            "instance_count"
        } else {
            "instance_index"
        },
        message,
    })
}

/// `stopping_offset`: `"latest"` or `"timestamp:<RFC 3339 UTC time or epoch ms>"`.
pub(super) fn stopping_offset(value: Option<Value>) -> Result<Option<StoppingOffset>, ConfigError> {
    const KEY: &str = "stopping_offset";
    const ACCEPTED: &str = "use \"latest\" (the offsets at first open) or \"timestamp:<RFC 3339 UTC time or epoch ms>\", or remove the key to read without end";
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let s = text(KEY, &value, ACCEPTED)?.to_ascii_lowercase();
    let parsed = if s == "latest" {
        Some(StoppingOffset::Latest)
    } else {
        s.strip_prefix("timestamp:")
            .and_then(|ts| timestamp_millis(ts.trim()))
            .map(StoppingOffset::Timestamp)
    };
    parsed
        .map(Some)
        .ok_or_else(|| invalid(KEY, &value, ACCEPTED))
}

/// `partitions`: a list (or comma-separated string) of `key=value[/key=value…]` entries.
pub(super) fn partitions(value: Option<Value>) -> Result<Option<PartitionFilter>, ConfigError> {
    const KEY: &str = "partitions";
    const ACCEPTED: &str =
        "use a list of key=value[/key=value…] entries, e.g. [\"region=eu\", \"region=us\"]";
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let entries: Vec<String> = match &value {
        Value::String(s) => s.split(',').map(|e| e.trim().to_owned()).collect(),
        Value::Array(items) => items
            .iter()
            .map(|item| text(KEY, item, ACCEPTED))
            .collect::<Result<_, _>>()?,
        _ => return Err(invalid(KEY, &value, ACCEPTED)),
    };
    PartitionFilter::parse(&entries)
        .map(Some)
        .map_err(|message| ConfigError { key: KEY, message })
}

/// `metrics_address`: an IP address and port to listen on (`None` when unset).
pub(super) fn metrics_address(value: Option<Value>) -> Result<Option<SocketAddr>, ConfigError> {
    const KEY: &str = "metrics_address";
    const ACCEPTED: &str =
        "use ip:port, e.g. \"127.0.0.1:9187\" (or \"0.0.0.0:9187\" to listen on every interface)";
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let s = text(KEY, &value, ACCEPTED)?;
    s.parse::<SocketAddr>()
        .map(Some)
        .map_err(|_| invalid(KEY, &value, ACCEPTED))
}
