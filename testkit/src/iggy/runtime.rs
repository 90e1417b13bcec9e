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

//! `iggy-connectors`: its config, one file per source connector, and the running process.

use super::*;

/// One `[[streams]]` entry and `[plugin_config]` of a source connector file.
#[derive(Debug, Clone)]
pub struct SourceConnector {
    /// The connector's key (its state file is `source_<key>.state`).
    pub key: String,
    /// The plugin library; a `.so` suffix is dropped, since the runtime appends it.
    pub plugin: PathBuf,
    /// Target stream (created by the runtime when missing).
    pub stream: String,
    /// Target topic (created with 1 partition when missing).
    pub topic: String,
    /// The stream encoder: `json`, `raw`, …
    pub schema: String,
    /// Producer batch length (runtime default 1000).
    pub batch_length: Option<u32>,
    /// Producer linger time, e.g. `"5ms"` (runtime default).
    pub linger_time: Option<String>,
    /// The plugin's configuration, written as TOML.
    pub plugin_config: serde_json::Value,
}

#[derive(Serialize)]
struct ConnectorFile<'a> {
    r#type: &'static str,
    key: &'a str,
    enabled: bool,
    version: u64,
    name: &'a str,
    path: String,
    streams: [StreamEntry<'a>; 1],
    plugin_config: &'a serde_json::Value,
}

#[derive(Serialize)]
struct StreamEntry<'a> {
    stream: &'a str,
    topic: &'a str,
    schema: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    batch_length: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    linger_time: Option<&'a str>,
}

impl SourceConnector {
    /// A connector `key` writing to `stream`/`topic` with encoder `schema`.
    pub fn new(
        key: &str,
        plugin: &Path,
        stream: &str,
        topic: &str,
        schema: &str,
        plugin_config: serde_json::Value,
    ) -> SourceConnector {
        SourceConnector {
            key: key.to_owned(),
            plugin: plugin.to_owned(),
            stream: stream.to_owned(),
            topic: topic.to_owned(),
            schema: schema.to_owned(),
            batch_length: None,
            linger_time: None,
            plugin_config,
        }
    }

    /// The connector file's TOML text.
    pub fn to_toml(&self) -> String {
        let plugin = self.plugin.to_string_lossy();
        let file = ConnectorFile {
            r#type: "source",
            key: &self.key,
            enabled: true,
            version: 0,
            name: &self.key,
            path: plugin.strip_suffix(".so").unwrap_or(&plugin).to_owned(),
            streams: [StreamEntry {
                stream: &self.stream,
                topic: &self.topic,
                schema: &self.schema,
                batch_length: self.batch_length,
                linger_time: self.linger_time.as_deref(),
            }],
            plugin_config: &self.plugin_config,
        };
        toml::to_string(&file).unwrap_or_else(|e| panic!("connector {} as TOML: {e}", self.key))
    }
}

/// A running `iggy-connectors` runtime with its config, connector files, state and log in
/// one directory.
pub struct ConnectorsRuntime {
    binaries: Binaries,
    dir: PathBuf,
    process: Option<Process>,
}

impl ConnectorsRuntime {
    /// Writes the runtime config (for `server`, root credentials, HTTP off) and the
    /// connector files into `dir`, and starts the runtime.
    pub fn start(
        server: &IggyServer,
        dir: &Path,
        connectors: &[SourceConnector],
    ) -> ConnectorsRuntime {
        let mut runtime = ConnectorsRuntime {
            binaries: Binaries::from_env(),
            dir: dir.to_owned(),
            process: None,
        };
        let connectors_dir = runtime.dir.join("connectors");
        for made in [&connectors_dir, &runtime.state_dir()] {
            fs::create_dir_all(made).unwrap_or_else(|e| panic!("create {}: {e}", made.display()));
        }
        for connector in connectors {
            write(
                &connectors_dir.join(format!("{}.toml", connector.key)),
                &connector.to_toml(),
            );
        }
        let config = toml::toml! {
            [iggy]
            address = (server.address())
            username = USERNAME
            password = PASSWORD

            [state]
            path = (runtime.state_dir().to_string_lossy().into_owned())

            [connectors]
            config_type = "local"
            config_dir = (connectors_dir.to_string_lossy().into_owned())

            [http]
            enabled = false
        };
        write(&runtime.config_path(), &config.to_string());
        runtime.spawn();
        runtime
    }

    fn spawn(&mut self) {
        let mut command = Command::new(&self.binaries.connectors);
        command
            .env("IGGY_CONNECTORS_CONFIG_PATH", self.config_path())
            // The runtime's default level, pinned: tests count INFO lines, and a RUST_LOG of
            // the caller's shell would add or hide some.
            .env("RUST_LOG", "info");
        self.process = Some(Process::spawn("iggy-connectors", command, &self.log_path()));
    }

    /// Writes `connector`'s file anew: the runtime reads it at its next start (an operator
    /// changing a connector's settings between restarts).
    pub fn rewrite(&self, connector: &SourceConnector) {
        write(
            &self
                .dir
                .join("connectors")
                .join(format!("{}.toml", connector.key)),
            &connector.to_toml(),
        );
    }

    /// Starts the runtime again with the same config and state dir (stopping it first with
    /// SIGINT if it still runs).
    pub fn restart(&mut self) {
        self.stop(Stop::Interrupt);
        self.spawn();
    }

    /// Ends the runtime with `stop` and waits for it; `None` if it was not running.
    pub fn stop(&mut self, stop: Stop) -> Option<ExitStatus> {
        self.process.take().map(|process| process.stop(stop))
    }

    /// The runtime's process id while it runs (for `/proc/<pid>/status` or `perf -p`).
    pub fn pid(&self) -> Option<u32> {
        self.process.as_ref().map(|process| process.child.id())
    }

    /// Whether the runtime process still runs.
    pub fn is_running(&mut self) -> bool {
        self.process
            .as_mut()
            .is_some_and(|process| process.exited().is_none())
    }

    /// The runtime config file (`IGGY_CONNECTORS_CONFIG_PATH`).
    pub fn config_path(&self) -> PathBuf {
        self.dir.join("runtime.toml")
    }

    /// The `[state] path` directory.
    pub fn state_dir(&self) -> PathBuf {
        Self::state_dir_in(&self.dir)
    }

    /// The `[state] path` directory of a runtime started in `dir`, before it starts (to watch
    /// it with [`super::StateSaves`]).
    pub fn state_dir_in(dir: &Path) -> PathBuf {
        dir.join("state")
    }

    /// Where the runtime keeps the state of connector `key`.
    pub fn state_file(&self, key: &str) -> PathBuf {
        self.state_dir().join(format!("source_{key}.state"))
    }

    /// The runtime's stdout and stderr, across restarts.
    pub fn log_path(&self) -> PathBuf {
        self.dir.join("iggy-connectors.log")
    }

    /// The log so far, without terminal colours; the plugin's own lines are in it too.
    pub fn log(&self) -> String {
        read_log(&self.log_path())
    }

    /// Waits until the log holds `needle` `times` times or more; returns the log.
    pub fn wait_for_log(&self, needle: &str, times: usize, deadline: Duration) -> String {
        wait_until(
            deadline,
            &format!("{times}× {needle:?} in {}", self.log_path().display()),
            || {
                let log = self.log();
                if log.matches(needle).count() >= times {
                    Ok(log)
                } else {
                    Err(format!("log tail:\n{}", tail(&self.log_path())))
                }
            },
        )
    }
}
