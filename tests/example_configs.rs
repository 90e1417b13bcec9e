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

//! The shipped connector files and runtime config parse in the runtime's format, and their
//! `[plugin_config]` sections pass the plugin's own validation.

use std::path::{Path, PathBuf};

use fluss_source_runner::ConnectorFile;
use iggy_connector_fluss_source::config::Config;
use iggy_connector_fluss_source::config::options::PayloadFormat;
use iggy_connector_fluss_source::sdk::Schema;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn connector_files() -> Vec<PathBuf> {
    let mut files = vec![root().join("config.toml")];
    let dir = root().join("example_config/connectors");
    let mut examples: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("example_config/connectors")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    examples.sort();
    assert!(examples.len() >= 3, "one example per mode: {examples:?}");
    files.extend(examples);
    files
}

fn check(path: &Path) -> (ConnectorFile, Config) {
    let file = ConnectorFile::load(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(
        file.streams.len(),
        1,
        "{}: exactly one [[streams]]",
        path.display()
    );
    assert!(
        file.path.ends_with("libiggy_connector_fluss_source"),
        "{}: path names the plugin",
        path.display()
    );
    let json = file.plugin_config_json(std::iter::empty());
    let config = Config::parse(&json).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let expected = match config.payload_format {
        PayloadFormat::Json => Schema::Json,
        PayloadFormat::ArrowIpc => Schema::Raw,
    };
    assert_eq!(
        file.streams[0].schema,
        expected,
        "{}: the stream schema fits payload_format",
        path.display()
    );
    (file, config)
}

#[test]
fn every_connector_file_is_valid() {
    let mut keys = std::collections::HashSet::new();
    let mut formats = std::collections::HashSet::new();
    for path in connector_files() {
        let (file, config) = check(&path);
        if path.starts_with(root().join("example_config")) {
            assert!(keys.insert(file.key.clone()), "duplicate key {}", file.key);
        }
        formats.insert(format!(
            "{:?}/{:?}",
            config.payload_format, config.table_type
        ));
    }
    assert!(
        formats.len() >= 3,
        "log JSON, primary-key JSON and Arrow IPC: {formats:?}"
    );
}

#[test]
fn the_runtime_config_points_at_the_examples() {
    let path = root().join("example_config/config.toml");
    let text = std::fs::read_to_string(&path).expect("runtime config");
    let config: toml::Table = toml::from_str(&text).expect("TOML");
    for section in ["iggy", "state", "connectors"] {
        assert!(config.contains_key(section), "[{section}] present");
    }
    let connectors = config["connectors"].as_table().unwrap();
    assert_eq!(connectors["config_type"].as_str(), Some("local"));
    let dir = root().join(connectors["config_dir"].as_str().unwrap());
    assert!(dir.is_dir(), "config_dir {} exists", dir.display());
    assert!(config["state"]["path"].as_str().is_some());
    assert!(config["iggy"]["address"].as_str().is_some());
}
