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

//! The `fluss-source-runner` binary end to end: stop after N messages, restart from the
//! saved state, and every message arrives exactly once across both runs; payloads go
//! through the stream's encoder, and batches the runtime would reject are Nacked.

mod common;

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output};

fn connector_file(dir: &Path, plugin_config: &str) -> std::path::PathBuf {
    connector_file_with_stream(dir, "json", plugin_config)
}

/// A connector file for the test source whose stream has `schema = "{stream_schema}"`.
fn connector_file_with_stream(
    dir: &Path,
    stream_schema: &str,
    plugin_config: &str,
) -> std::path::PathBuf {
    let lib = common::test_source_library();
    let lib_without_extension = lib.with_extension("");
    let text = format!(
        r#"type = "source"
key = "counter"
enabled = true
version = 1
name = "test counter"
path = "{}"
plugin_config_format = "toml"

[[streams]]
stream = "test"
topic = "numbers"
schema = "{stream_schema}"

[plugin_config]
{plugin_config}

[transforms.add_fields]
enabled = false
"#,
        lib_without_extension.display()
    );
    let path = dir.join("counter.toml");
    std::fs::write(&path, text).expect("write connector file");
    path
}

fn runner(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fluss-source-runner"))
        .args(args)
        .current_dir(dir)
        .env("IGGY_CONNECTORS_SOURCE_COUNTER_PLUGIN_CONFIG_BATCH", "7")
        .output()
        .expect("run the binary")
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("output file")
        .lines()
        .map(|line| serde_json::from_str(line).expect("each line is JSON"))
        .collect()
}

fn ids(lines: &[Value]) -> Vec<u64> {
    lines
        .iter()
        .map(|l| {
            l["id"]
                .as_str()
                .expect("id string")
                .parse()
                .expect("decimal")
        })
        .collect()
}

#[test]
fn stop_restart_from_state_delivers_each_message_exactly_once() {
    let dir = common::scratch_dir("cli-resume");
    let connector = connector_file(&dir, "total = 50");
    let connector = connector.to_str().unwrap();

    let first = runner(
        &dir,
        &[
            "--connector",
            connector,
            "--output",
            "one.jsonl",
            "--max-messages",
            "20",
            "--nack-every",
            "2",
        ],
    );
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let stderr = String::from_utf8_lossy(&first.stderr);
    assert!(
        stderr.contains("transforms"),
        "transforms are noted: {stderr}"
    );
    let one = lines(&dir.join("one.jsonl"));
    // Batches of 7 (env override); every second one Nacked and redelivered.
    assert_eq!(ids(&one), (0..21).collect::<Vec<u64>>());
    assert_eq!(one[0]["payload"], serde_json::json!({"n": 0}));
    assert_eq!(
        one[0]["headers"],
        serde_json::json!({"n": 0, "source": "test"})
    );
    assert_eq!(one[0]["schema"], "json");
    let batches: BTreeSet<u64> = one.iter().map(|l| l["batch"].as_u64().unwrap()).collect();
    assert_eq!(
        batches,
        BTreeSet::from([1, 3, 5]),
        "Nacked batches 2 and 4 are not written"
    );
    assert!(
        dir.join("local_state/source_counter.state").exists(),
        "state saved by default path"
    );

    let second = runner(
        &dir,
        &[
            "--connector",
            connector,
            "--output",
            "two.jsonl",
            "--idle-exit",
            "500ms",
        ],
    );
    assert!(
        second.status.success(),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
    let two = lines(&dir.join("two.jsonl"));
    assert_eq!(
        ids(&two),
        (21..50).collect::<Vec<u64>>(),
        "resumed after the last Ack"
    );

    let union: Vec<u64> = ids(&one).into_iter().chain(ids(&two)).collect();
    assert_eq!(
        union,
        (0..50).collect::<Vec<u64>>(),
        "each message exactly once"
    );
}

#[test]
fn max_batches_stops_and_stdout_carries_the_lines() {
    let dir = common::scratch_dir("cli-stdout");
    let connector = connector_file(&dir, "total = 50");
    let output = runner(
        &dir,
        &[
            "--connector",
            connector.to_str().unwrap(),
            "--state",
            "s.state",
            "--max-batches",
            "2",
        ],
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(stdout.lines().count(), 14, "two batches of 7");
    assert!(dir.join("s.state").exists());
}

#[test]
fn failed_open_exits_non_zero_with_the_plugin_error() {
    let dir = common::scratch_dir("cli-fail");
    let connector = connector_file(&dir, "fail_open = true");
    let output = runner(&dir, &["--connector", connector.to_str().unwrap()]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("ERROR") && stderr.contains("simulated cause"),
        "plugin error on stderr: {stderr}"
    );
}

#[test]
fn sigterm_closes_and_exits_zero() {
    let dir = common::scratch_dir("cli-signal");
    let connector = connector_file(&dir, "total = 10");
    let child = Command::new(env!("CARGO_BIN_EXE_fluss-source-runner"))
        .args([
            "--connector",
            connector.to_str().unwrap(),
            "--output",
            "out.jsonl",
        ])
        .current_dir(&dir)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    std::thread::sleep(std::time::Duration::from_millis(700));
    // SAFETY: plain kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let output = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("Signal"), "{stderr}");
    assert!(
        stderr.contains("closed committed=10"),
        "plugin close ran: {stderr}"
    );
    assert_eq!(lines(&dir.join("out.jsonl")).len(), 10);
}

#[test]
fn a_raw_stream_rejects_every_json_batch() {
    let dir = common::scratch_dir("cli-raw-stream");
    // The test source declares Schema::Json; the runtime's raw encoder refuses JSON payloads.
    let connector = connector_file_with_stream(&dir, "raw", "total = 50");
    let output = runner(
        &dir,
        &[
            "--connector",
            connector.to_str().unwrap(),
            "--output",
            "out.jsonl",
            "--max-batches",
            "3",
        ],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let rejected: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("ERROR runner: Rejected source batch "))
        .collect();
    assert_eq!(rejected.len(), 3, "one runtime line per batch: {stderr}");
    for line in &rejected {
        assert!(
            line.contains(" after 7 decode or processing errors for source connector with ID: ")
                && line.contains("a json payload cannot go to a raw stream"),
            "every message of the batch counts, the cause is named: {line}"
        );
    }
    assert!(
        stderr.contains("3 batches, 0 acked, 3 nacked (3 rejected), 0 messages"),
        "summary counts the rejections: {stderr}"
    );
    assert!(lines(&dir.join("out.jsonl")).is_empty(), "nothing written");
    assert!(
        !dir.join("local_state/source_counter.state").exists(),
        "no state saved for a rejected batch"
    );
}

#[test]
fn matching_stream_schemas_deliver_every_batch() {
    for stream in ["json", "text"] {
        let dir = common::scratch_dir(&format!("cli-{stream}-stream"));
        let connector = connector_file_with_stream(&dir, stream, "total = 21");
        let output = runner(
            &dir,
            &[
                "--connector",
                connector.to_str().unwrap(),
                "--output",
                "out.jsonl",
                "--max-messages",
                "21",
            ],
        );
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{stream}: {stderr}");
        assert!(
            stderr.contains("3 batches, 3 acked, 0 nacked (0 rejected), 21 messages"),
            "{stream}: {stderr}"
        );
        let out = lines(&dir.join("out.jsonl"));
        assert_eq!(ids(&out), (0..21).collect::<Vec<u64>>(), "{stream}");
        assert_eq!(out[20]["payload"], serde_json::json!({"n": 20}), "{stream}");
    }
}

#[test]
fn a_stream_schema_the_runner_cannot_emulate_fails_at_start() {
    let dir = common::scratch_dir("cli-avro-stream");
    let connector = connector_file_with_stream(&dir, "avro", "total = 5");
    let output = runner(&dir, &["--connector", connector.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("the runner emulates only json, raw and text streams"),
        "{stderr}"
    );
}
