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

//! The runtime's connector file (contract §5.1, §5.2), its plugin-config env overrides
//! (§2.1) and plugin path resolution (§5.6).

use iggy_connector_sdk::Schema;
use serde::Deserialize;
use snafu::ResultExt;
use std::path::{Path, PathBuf};

use crate::error::{
    ConnectorInvalidSnafu, ConnectorParseSnafu, PluginNotFoundSnafu, ReadSnafu, Result,
};

/// One connector file, as the runtime reads it.
#[derive(Debug, Clone, Deserialize)]
pub struct ConnectorFile {
    /// `source` or `sink`; the runner runs sources only.
    #[serde(rename = "type")]
    pub kind: String,
    /// Connector key: state file name and env-override prefix.
    pub key: String,
    /// Disabled connectors are not loaded by the runtime.
    pub enabled: bool,
    /// Config version.
    pub version: u64,
    /// Display name.
    pub name: String,
    /// Plugin library path, extension optional.
    pub path: String,
    /// Only used by the runtime's HTTP API.
    #[serde(default)]
    pub plugin_config_format: Option<String>,
    /// Runtime per-batch log level switch.
    #[serde(default)]
    pub verbose: bool,
    /// Runtime benchmark events.
    #[serde(default)]
    pub benchmark: bool,
    /// Target streams; only the last one is effective in the runtime.
    #[serde(default)]
    pub streams: Vec<StreamConfig>,
    /// Passed to the plugin as compact JSON.
    #[serde(default)]
    pub plugin_config: Option<toml::Value>,
    /// Runtime-side transforms; the runner does not apply them.
    #[serde(default)]
    pub transforms: Option<toml::Table>,
}

/// One `[[streams]]` entry.
#[derive(Debug, Clone, Deserialize)]
pub struct StreamConfig {
    /// Stream name or id.
    pub stream: toml::Value,
    /// Topic name or id.
    pub topic: toml::Value,
    /// Encoder the runtime uses for the stream.
    pub schema: Schema,
    /// Max messages per producer request (default 1000).
    #[serde(default)]
    pub batch_length: Option<u32>,
    /// Min gap between producer requests (default "5ms").
    #[serde(default)]
    pub linger_time: Option<String>,
    /// Avro encoder only.
    #[serde(default)]
    pub avro_schema_json: Option<String>,
    /// Avro encoder only.
    #[serde(default)]
    pub avro_schema_path: Option<String>,
}

impl ConnectorFile {
    /// Reads and parses a connector file; it must describe a source.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).context(ReadSnafu { path })?;
        Self::parse(path, &text)
    }

    /// Parses connector file text (`path` is only for messages).
    pub fn parse(path: &Path, text: &str) -> Result<Self> {
        let file: Self = toml::from_str(text).context(ConnectorParseSnafu { path })?;
        snafu::ensure!(
            file.kind == "source",
            ConnectorInvalidSnafu {
                path,
                reason: format!(
                    "type = {:?}; the runner runs sources only. use type = \"source\"",
                    file.kind
                ),
            }
        );
        Ok(file)
    }

    /// The JSON text the runtime passes to `iggy_source_open`: `[plugin_config]` as
    /// compact JSON (`null` when absent), after applying
    /// `IGGY_CONNECTORS_SOURCE_<KEY>_PLUGIN_CONFIG_<FIELD>` overrides from `env`.
    pub fn plugin_config_json(&self, env: impl IntoIterator<Item = (String, String)>) -> String {
        let mut config = match &self.plugin_config {
            Some(value) => serde_json::to_value(value).unwrap_or(serde_json::Value::Null),
            None => serde_json::Value::Null,
        };
        let prefix = format!(
            "IGGY_CONNECTORS_SOURCE_{}_PLUGIN_CONFIG_",
            self.key.to_uppercase()
        );
        for (name, value) in env {
            let Some(field) = name.strip_prefix(&prefix) else {
                continue;
            };
            if field.is_empty() {
                continue;
            }
            if !config.is_object() {
                config = serde_json::Value::Object(serde_json::Map::new());
            }
            if let Some(object) = config.as_object_mut() {
                object.insert(field.to_lowercase(), infer_env_value(&value));
            }
        }
        config.to_string()
    }

    /// Notes about parts of the file the runner does not emulate.
    pub fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if self.transforms.as_ref().is_some_and(|t| !t.is_empty()) {
            notes.push(
                "[transforms.*] are applied by the runtime, not by the runner; ignored".to_owned(),
            );
        }
        if self.streams.len() > 1 {
            notes.push("several [[streams]]: the runtime uses only the last one".to_owned());
        }
        notes
    }
}

/// Type inference of the runtime's env provider: `true`/`false` → bool, integer or float
/// → number, `[a, b]` → array (elements inferred the same way), otherwise string.
pub fn infer_env_value(text: &str) -> serde_json::Value {
    let trimmed = text.trim();
    if trimmed == "true" {
        return serde_json::Value::Bool(true);
    }
    if trimmed == "false" {
        return serde_json::Value::Bool(false);
    }
    if let Ok(int) = trimmed.parse::<i64>() {
        return int.into();
    }
    if let Ok(uint) = trimmed.parse::<u64>() {
        return uint.into();
    }
    if let Ok(float) = trimmed.parse::<f64>()
        && let Some(number) = serde_json::Number::from_f64(float)
    {
        return serde_json::Value::Number(number);
    }
    if let Some(inner) = trimmed.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
        if inner.trim().is_empty() {
            return serde_json::Value::Array(Vec::new());
        }
        return serde_json::Value::Array(inner.split(',').map(infer_env_value).collect());
    }
    serde_json::Value::String(text.to_owned())
}

/// Resolves a plugin path like the runtime (§5.6): append `.so` unless the extension is
/// `so`/`dylib`/`dll`; use it if it exists (absolute or relative to the cwd); otherwise
/// look for the file name in the executable's directory, the cwd and the system
/// library directories.
pub fn resolve_plugin_path(path: &str) -> Result<PathBuf> {
    let mut candidate = PathBuf::from(path);
    let has_library_extension = candidate
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| matches!(e, "so" | "dylib" | "dll"));
    if !has_library_extension {
        candidate = PathBuf::from(format!("{path}.{}", std::env::consts::DLL_EXTENSION));
    }
    let mut searched = vec![candidate.clone()];
    if candidate.exists() {
        return Ok(candidate);
    }
    if candidate.is_relative()
        && let Some(name) = candidate.file_name()
    {
        let mut dirs = Vec::new();
        if let Some(dir) = std::env::current_exe()
            .ok()
            .and_then(|e| e.parent().map(Path::to_path_buf))
        {
            dirs.push(dir);
        }
        if let Ok(cwd) = std::env::current_dir() {
            dirs.push(cwd);
        }
        for dir in [
            "/usr/lib",
            "/usr/lib64",
            "/lib",
            "/lib64",
            "/usr/local/lib",
            "/usr/local/lib64",
        ] {
            dirs.push(PathBuf::from(dir));
        }
        for dir in dirs {
            let found = dir.join(name);
            if found.exists() {
                return Ok(found);
            }
            searched.push(found);
        }
    }
    PluginNotFoundSnafu {
        path,
        searched: searched
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
    }
    .fail()
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r#"
type = "source"
key = "fluss"
enabled = true
version = 0
name = "Fluss source"
path = "target/release/libiggy_connector_fluss_source"
plugin_config_format = "toml"
verbose = true

[[streams]]
stream = "fluss"
topic = "orders"
schema = "json"
batch_length = 1000
linger_time = "5ms"

[plugin_config]
bootstrap_servers = "localhost:9123"
batch_size = 1_000
poll_interval = "100ms"
nested = { a = [1, 2] }

[transforms.add_fields]
enabled = true
"#;

    fn file() -> ConnectorFile {
        ConnectorFile::parse(Path::new("c.toml"), FILE).unwrap()
    }

    #[test]
    fn parses_the_runtime_format() {
        let file = file();
        assert_eq!(file.key, "fluss");
        assert_eq!(file.streams[0].schema, Schema::Json);
        assert_eq!(file.streams[0].batch_length, Some(1000));
        assert_eq!(file.notes().len(), 1, "transforms note");
    }

    #[test]
    fn plugin_config_is_compact_json_with_sorted_keys() {
        assert_eq!(
            file().plugin_config_json(Vec::new()),
            r#"{"batch_size":1000,"bootstrap_servers":"localhost:9123","nested":{"a":[1,2]},"poll_interval":"100ms"}"#
        );
    }

    #[test]
    fn missing_plugin_config_is_null() {
        let text = FILE.split("[plugin_config]").next().unwrap();
        let file = ConnectorFile::parse(Path::new("c.toml"), text).unwrap();
        assert_eq!(file.plugin_config_json(Vec::new()), "null");
    }

    #[test]
    fn env_overrides_set_top_level_keys_with_inferred_types() {
        let env = vec![
            (
                "IGGY_CONNECTORS_SOURCE_FLUSS_PLUGIN_CONFIG_INITIAL_OFFSET".to_owned(),
                "0".to_owned(),
            ),
            (
                "IGGY_CONNECTORS_SOURCE_FLUSS_PLUGIN_CONFIG_POLL_INTERVAL".to_owned(),
                "1s".to_owned(),
            ),
            (
                "IGGY_CONNECTORS_SOURCE_FLUSS_PLUGIN_CONFIG_VERBOSE".to_owned(),
                "true".to_owned(),
            ),
            (
                "IGGY_CONNECTORS_SOURCE_FLUSS_PLUGIN_CONFIG_RATIO".to_owned(),
                "0.5".to_owned(),
            ),
            (
                "IGGY_CONNECTORS_SOURCE_FLUSS_PLUGIN_CONFIG_TABLES".to_owned(),
                "[a, 2]".to_owned(),
            ),
            (
                "IGGY_CONNECTORS_SOURCE_OTHER_PLUGIN_CONFIG_X".to_owned(),
                "1".to_owned(),
            ),
        ];
        let json: serde_json::Value =
            serde_json::from_str(&file().plugin_config_json(env)).unwrap();
        assert_eq!(json["initial_offset"], 0);
        assert_eq!(json["poll_interval"], "1s");
        assert_eq!(json["verbose"], true);
        assert_eq!(json["ratio"], 0.5);
        assert_eq!(json["tables"], serde_json::json!(["a", 2]));
        assert!(json.get("x").is_none());
    }

    #[test]
    fn rejects_a_sink() {
        let text = FILE.replace("type = \"source\"", "type = \"sink\"");
        let error = ConnectorFile::parse(Path::new("c.toml"), &text).unwrap_err();
        assert!(error.to_string().contains("sources only"), "{error}");
    }

    #[test]
    fn plugin_path_gets_the_extension() {
        let dir = std::env::temp_dir().join(format!("runner-path-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let lib = dir.join("libx.so");
        std::fs::write(&lib, b"").unwrap();
        let resolved = resolve_plugin_path(dir.join("libx").to_str().unwrap()).unwrap();
        assert_eq!(resolved, lib);
        assert!(resolve_plugin_path("/nonexistent/libnothing").is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
