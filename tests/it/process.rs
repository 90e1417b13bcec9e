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

//! Driving the `fluss-source-runner` binary as a child process, the way an operator (or the
//! runtime's host process) runs the plugin: a connector file, a state file and an output
//! file. Used by the crash, bad-input and memory tests, which need a process they can kill
//! or whose stderr holds every log line of exactly one plugin instance.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

use crate::fixture::plugin_path;

/// `target/<profile>/fluss-source-runner`, built by `cargo build --workspace`: the directory
/// above this test binary's `deps/`, whichever plugin library the tests load.
pub fn runner_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let bin = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("the test binary lies in target/<profile>/deps")
        .join("fluss-source-runner");
    assert!(
        bin.exists(),
        "{} is missing; build it with `cargo build --workspace --all-features` (the README test command does)",
        bin.display()
    );
    bin
}

/// A fresh directory for one test's connector, state and output files.
pub fn scratch_dir(name: &str) -> PathBuf {
    static SEQ: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "fluss-it-{name}-{}-{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

/// A TOML value for a JSON value (strings, numbers, bools, arrays, objects as inline tables).
fn toml_value(value: &Value) -> String {
    match value {
        // A JSON string literal is a valid TOML basic string (same escapes).
        Value::String(_) | Value::Number(_) | Value::Bool(_) => value.to_string(),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(toml_value).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(map) => format!(
            "{{ {} }}",
            map.iter()
                .map(|(k, v)| format!("{} = {}", Value::from(k.as_str()), toml_value(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Value::Null => "\"\"".to_owned(),
    }
}

/// Writes a connector file whose `[plugin_config]` is `config` (an object), or which has no
/// `[plugin_config]` section at all when `config` is `None`.
pub fn connector_file(dir: &Path, config: Option<&Value>) -> PathBuf {
    let mut text = String::from(
        "type = \"source\"\nkey = \"fluss_it\"\nenabled = true\nversion = 1\nname = \"fluss it\"\npath = \"unused\"\n\n[[streams]]\nstream = \"s\"\ntopic = \"t\"\nschema = \"json\"\n",
    );
    if let Some(config) = config {
        text.push_str("\n[plugin_config]\n");
        let object = config.as_object().expect("plugin config is an object");
        for (key, value) in object {
            if !value.is_null() {
                text.push_str(&format!("{key} = {}\n", toml_value(value)));
            }
        }
    }
    let path = dir.join("connector.toml");
    std::fs::write(&path, text).expect("write connector file");
    path
}

/// The runner command for `connector` with the plugin of this build, `state` and `output`.
pub fn runner_command(connector: &Path, state: &Path, output: &Path) -> Command {
    let mut command = Command::new(runner_binary());
    command
        .arg("--connector")
        .arg(connector)
        .arg("--plugin")
        .arg(plugin_path())
        .arg("--state")
        .arg(state)
        .arg("--output")
        .arg(output)
        .stdin(Stdio::null());
    command
}

/// Starts the runner with stderr captured to `<output>.stderr`.
pub fn spawn_runner(connector: &Path, state: &Path, output: &Path, extra: &[&str]) -> Child {
    let stderr = std::fs::File::create(output.with_extension("stderr")).expect("stderr file");
    runner_command(connector, state, output)
        .args(extra)
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .expect("start fluss-source-runner")
}

/// Runs the runner to its end and returns its output.
pub fn run_runner(connector: &Path, state: &Path, output: &Path, extra: &[&str]) -> Output {
    runner_command(connector, state, output)
        .args(extra)
        .output()
        .expect("run fluss-source-runner")
}

/// Lines the plugin logged at ERROR (the runner prints plugin lines as `ERROR <target>: …`
/// and its own as `ERROR runner: …`).
pub fn plugin_errors(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.starts_with("ERROR ") && !l.starts_with("ERROR runner:"))
        .collect()
}

/// One delivered message as the runner wrote it.
#[derive(Debug, Clone)]
pub struct Line {
    pub id: String,
    pub bucket: i64,
    pub offset: i64,
    pub payload: Value,
}

/// The complete lines of an output file (a kill can leave a partial last line, which is
/// not counted: its batch was never acknowledged).
pub fn read_lines(path: &Path) -> Vec<Line> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => panic!("read {}: {e}", path.display()),
    };
    let complete = match text.rfind('\n') {
        Some(end) => &text[..=end],
        None => "",
    };
    complete
        .lines()
        .map(|line| {
            let v: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("output line is not JSON ({e}): {line}"));
            Line {
                id: v["id"].as_str().expect("id").to_owned(),
                bucket: v["headers"]["fluss_bucket"]
                    .as_i64()
                    .expect("bucket header"),
                offset: v["headers"]["fluss_offset"]
                    .as_i64()
                    .expect("offset header"),
                payload: v["payload"].clone(),
            }
        })
        .collect()
}

/// Counts complete lines without parsing them.
pub fn count_lines(path: &Path) -> usize {
    std::fs::read(path)
        .map(|bytes| bytes.iter().filter(|b| **b == b'\n').count())
        .unwrap_or(0)
}

/// Checks strictly increasing offsets per bucket within one run's output.
pub fn assert_run_order(lines: &[Line], run: usize) {
    let mut last: HashMap<i64, i64> = HashMap::new();
    for line in lines {
        if let Some(prev) = last.insert(line.bucket, line.offset) {
            assert!(
                line.offset > prev,
                "run {run}: bucket {} offset {} came after {prev}; per-bucket order is broken",
                line.bucket,
                line.offset
            );
        }
    }
}
