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

//! The README's commands, run the way a newcomer runs them: in a fresh `git clone` of HEAD
//! (committed files only), whose target directory starts empty, without a terminal.
//!
//! CI's checkout is such a clone: `.ci/run` runs the first quickstart there before anything else
//! is built and names what it printed and left in `QUICKSTART_FIRST_RUN` (a directory with
//! `stdout`, `stderr`, `status`, `seconds` and the `tmp/` it ran with as TMPDIR). The test then
//! checks that run and takes the other steps in the checkout itself, whose cold build the suites
//! reuse. Without the variable it clones HEAD and runs the first quickstart itself.
//!
//! - `scripts/quickstart.sh --messages N`: builds everything from nothing, prints messages of
//!   both demo tables in the README's shapes, says "stopped everything" and leaves no process
//!   and no temporary directory behind; run a second time with a relative `CARGO_TARGET_DIR`,
//!   through `iggy-server` + `iggy-connectors` when `IGGY_BIN_DIR` is set.
//! - `cargo build --release -p iggy_connector_fluss_source`: the library the deploy step names,
//!   with exactly the five symbols it lists.
//! - `target/release/fluss-source-runner --connector config.toml …` with every documented
//!   option, against a cluster holding the table `config.toml` names.
//!
//! One test runs these steps in order in one clone (a step needs the builds of the ones before
//! it) and removes the clone at the end (in CI's checkout: what the steps added to it). The
//! cold build takes minutes.
//!
//! One file for the same reason: the steps share one clone and one build,
//! and the checks of what each step prints sit above the one test that runs them in order.

use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::LazyLock;
use std::time::{Duration, Instant};

use serde_json::Value;

/// Messages of each demo table the quickstart is asked for.
const MESSAGES: usize = 3;
/// A cold release build of the quickstart's packages, a Fluss start and the first messages. Only a guard
/// against a hang: on a 2-core machine shared with other builds a cold build took over 40 min.
const QUICKSTART_DEADLINE: Duration = Duration::from_secs(120 * 60);
const RELEASE_BUILD_DEADLINE: Duration = Duration::from_secs(120 * 60);

/// The five symbols as the README's deploy step lists them.
const README_SYMBOLS: [&str; 5] = [
    "iggy_source_open",
    "iggy_source_handle_v2",
    "iggy_source_batch_result",
    "iggy_source_close",
    "iggy_source_version",
];

/// The temporary root with scratch files, the clone, and `TMPDIR` for the commands.
struct Workspace {
    root: PathBuf,
    clone: PathBuf,
    tmp: PathBuf,
    /// The first quickstart run that `.ci/run` made in its checkout, which is then the clone.
    recorded: Option<PathBuf>,
}

/// What the steps leave in the clone: removed with it, or one by one from CI's checkout.
const LEFT_IN_THE_CLONE: [&str; 2] = ["target-alias", "local_state"];

/// Removes the clone and everything else of [`WORKSPACE`] when the test ends, also on a panic
/// (a static is never dropped).
struct RemoveWorkspace;

impl Drop for RemoveWorkspace {
    fn drop(&mut self) {
        let ws = &*WORKSPACE;
        if ws.recorded.is_some() {
            for left in LEFT_IN_THE_CLONE {
                let path = ws.clone.join(left);
                let _ = std::fs::remove_file(&path).or_else(|_| std::fs::remove_dir_all(&path));
            }
        }
        let _ = std::fs::remove_dir_all(&ws.root);
    }
}

static WORKSPACE: LazyLock<Workspace> = LazyLock::new(|| {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let root = std::env::temp_dir().join(format!("fluss-readme-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).expect("create the test root");
    if let Some(recorded) = std::env::var_os("QUICKSTART_FIRST_RUN").filter(|d| !d.is_empty()) {
        let recorded = PathBuf::from(recorded);
        let status = Command::new("git")
            .args(["status", "--porcelain", "--ignored=no"])
            .current_dir(&repo)
            .output()
            .expect("git is installed");
        let changed = String::from_utf8_lossy(&status.stdout).into_owned();
        assert!(
            status.status.success() && changed.trim().is_empty(),
            "QUICKSTART_FIRST_RUN is for a fresh clone, but {} has changes:\n{changed}",
            repo.display()
        );
        return Workspace {
            root,
            clone: repo,
            tmp: recorded.join("tmp"),
            recorded: Some(recorded),
        };
    }
    let clone = root.join("clone");
    let tmp = root.join("tmp");
    std::fs::create_dir_all(&tmp).expect("create TMPDIR");
    let status = Command::new("git")
        .args(["clone", "--quiet", "--no-hardlinks"])
        .arg(&repo)
        .arg(&clone)
        .status()
        .expect("git is installed");
    assert!(status.success(), "git clone {} failed", repo.display());
    assert!(
        !clone.join("target").exists(),
        "a fresh clone has no target directory"
    );
    Workspace {
        root,
        clone,
        tmp,
        recorded: None,
    }
});

/// The clone's first quickstart run: the one that builds everything.
fn first_run() -> Run {
    let ws = &*WORKSPACE;
    if let Some(recorded) = &ws.recorded {
        let read = |name: &str| {
            std::fs::read_to_string(recorded.join(name))
                .unwrap_or_else(|e| panic!("{}/{name}: {e}", recorded.display()))
        };
        return Run {
            success: read("status").trim() == "0",
            stdout: read("stdout"),
            stderr: read("stderr"),
            took: Duration::from_secs(read("seconds").trim().parse().expect("seconds")),
        };
    }
    let mut command = clean_command("scripts/quickstart.sh");
    command.args(["--messages", &MESSAGES.to_string()]);
    command.env_remove("IGGY_BIN_DIR");
    run(command, QUICKSTART_DEADLINE, &ws.clone)
}

/// `cargo build --release -p iggy_connector_fluss_source` in the clone, once.
fn release_build() -> PathBuf {
    let ws = &*WORKSPACE;
    let mut command = clean_command("cargo");
    command.args(["build", "--release", "-p", "iggy_connector_fluss_source"]);
    let run = run(command, RELEASE_BUILD_DEADLINE, &ws.clone);
    assert!(
        run.success,
        "the README's release build failed:\n{}",
        run.stderr
    );
    eprintln!("release build took {:?}", run.took);
    ws.clone
        .join("target/release/libiggy_connector_fluss_source.so")
}

/// A command run in the clone with nothing of this build's environment: no target directory
/// of ours, our temporary directory as TMPDIR.
fn clean_command(program: &str) -> Command {
    let ws = &*WORKSPACE;
    let mut command = Command::new(program);
    command.current_dir(&ws.clone).env("TMPDIR", &ws.tmp);
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy().into_owned();
        if key.starts_with("CARGO_") && key != "CARGO_HOME" || key == "RUSTFLAGS" {
            command.env_remove(key);
        }
    }
    command
}

struct Run {
    success: bool,
    stdout: String,
    stderr: String,
    took: Duration,
}

/// Runs `command` with its output captured; past `deadline` it gets SIGINT (the quickstart then
/// cleans up), then SIGKILL, and the test fails with what it printed.
fn run(mut command: Command, deadline: Duration, dir: &Path) -> Run {
    let started = Instant::now();
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("start {command:?} in {}: {e}", dir.display()));
    let reader = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let stdout = reader(Box::new(child.stdout.take().expect("stdout")));
    let stderr = reader(Box::new(child.stderr.take().expect("stderr")));
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if started.elapsed() > deadline {
            // SIGINT, as Ctrl-C would send: the quickstart cleans up on it.
            let _ = Command::new("kill")
                .args(["-INT", &child.id().to_string()])
                .status();
            std::thread::sleep(Duration::from_secs(60));
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{command:?} did not finish within {deadline:?}; stderr:\n{}",
                stderr.join().unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    Run {
        success: status.success(),
        stdout: stdout.join().expect("stdout reader"),
        stderr: stderr.join().expect("stderr reader"),
        took: started.elapsed(),
    }
}

/// Positions of `keys` in `text` are increasing: the JSON keys appear in this order.
fn assert_key_order(text: &str, keys: &[&str]) {
    let mut from = 0;
    for key in keys {
        let needle = format!("\"{key}\":");
        let at = text[from..]
            .find(&needle)
            .unwrap_or_else(|| panic!("{needle} missing or out of order in {text}"));
        from += at + needle.len();
    }
}

fn object_keys(value: &Value) -> BTreeSet<&str> {
    value
        .as_object()
        .unwrap_or_else(|| panic!("an object: {value}"))
        .keys()
        .map(String::as_str)
        .collect()
}

/// A demo.orders row with `_fluss`, as in the README: `{"order_id":…,…,"_fluss":{…}}`.
fn check_order_payload(raw: &str, payload: &Value) {
    assert_key_order(
        raw,
        &[
            "order_id",
            "customer_id",
            "item",
            "amount",
            "ordered_at",
            "_fluss",
            "bucket",
            "partition",
            "offset",
            "timestamp",
        ],
    );
    assert_eq!(
        object_keys(payload),
        BTreeSet::from([
            "order_id",
            "customer_id",
            "item",
            "amount",
            "ordered_at",
            "_fluss"
        ])
    );
    assert!(payload["order_id"].is_i64(), "{payload}");
    assert!(payload["amount"].is_string(), "DECIMAL as text: {payload}");
    assert!(
        payload["ordered_at"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z')),
        "TIMESTAMP_LTZ in ISO 8601 UTC: {payload}"
    );
    assert!(payload["_fluss"]["partition"].is_null(), "{payload}");
    assert!(payload["_fluss"]["offset"].is_i64(), "{payload}");
}

/// A Debezium event of demo.customers, as in the README; returns its `op` (`r` for the rows of
/// a bucket's snapshot, `starting_offset = "full"` being the default).
fn check_customer_payload<'a>(raw: &str, payload: &'a Value) -> &'a str {
    assert_key_order(raw, &["op", "before", "after", "source", "ts_ms"]);
    assert_eq!(
        object_keys(payload),
        BTreeSet::from(["op", "before", "after", "source", "ts_ms"])
    );
    let op = payload["op"].as_str().expect("op");
    assert!(["r", "c", "u", "d"].contains(&op), "{payload}");
    let image = if op == "d" {
        &payload["before"]
    } else {
        &payload["after"]
    };
    assert_eq!(
        object_keys(image),
        BTreeSet::from(["customer_id", "name", "tier"])
    );
    let source = &payload["source"];
    assert_eq!(source["connector"], "fluss");
    assert_eq!(source["db"], "demo");
    assert_eq!(source["table"], "customers");
    assert!(
        source["offset"].is_i64() && source["bucket"].is_i64(),
        "{payload}"
    );
    op
}

/// A snapshot row's id (README): bits 127-126 = 10, so it never equals a changelog id.
fn check_snapshot_id(id: u128) {
    assert_eq!(id >> 126, 2, "id {id:#x}: top bits 10");
}

/// The README's message id layout: bits 127-126 = 01, 71-56 bucket, 55-0 offset.
fn check_id(id: u128, bucket: i64, offset: i64) {
    assert_eq!(id >> 126, 1, "id {id:#x}: top bits 01");
    assert_eq!((id >> 56) & 0xffff, bucket as u128, "id {id:#x}: bucket");
    assert_eq!(id & ((1 << 56) - 1), offset as u128, "id {id:#x}: offset");
}

/// The header names of the README's sample line of `table` (`demo.orders`, `demo.customers`).
fn readme_sample_headers(table: &str) -> BTreeSet<String> {
    let readme = std::fs::read_to_string(WORKSPACE.clone.join("README.md")).expect("README.md");
    let line = readme
        .lines()
        .find(|l| {
            l.starts_with("{\"batch\":") && l.contains(&format!("\"fluss_table\":\"{table}\""))
        })
        .unwrap_or_else(|| panic!("the README shows a sample line of {table}"));
    let message: Value = serde_json::from_str(line).expect("the sample line is JSON");
    object_keys(&message["headers"])
        .into_iter()
        .map(str::to_owned)
        .collect()
}

/// Runner lines: `{"batch":…,"id":"…","headers":{…},"schema":"json","payload":{…}}`, each with
/// the headers of the README's sample line of its table.
fn check_runner_lines(stdout: &str) -> (usize, usize) {
    let (mut orders, mut customers) = (0, 0);
    let sample_headers = [
        ("demo.orders", readme_sample_headers("demo.orders")),
        ("demo.customers", readme_sample_headers("demo.customers")),
    ];
    for line in stdout.lines() {
        let message: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("each stdout line is one JSON message ({e}): {line}"));
        assert_key_order(line, &["batch", "id", "headers", "schema", "payload"]);
        assert_eq!(message["schema"], "json", "{line}");
        let headers = &message["headers"];
        let names: BTreeSet<String> = object_keys(headers)
            .into_iter()
            .map(str::to_owned)
            .collect();
        for (table, expected) in &sample_headers {
            if headers["fluss_table"] == *table {
                assert_eq!(
                    &names, expected,
                    "the headers of {table}'s messages are the README sample's: {line}"
                );
            }
        }
        let id: u128 = message["id"]
            .as_str()
            .and_then(|id| id.parse().ok())
            .unwrap_or_else(|| panic!("id is a decimal u128 string: {line}"));
        let bucket = headers["fluss_bucket"].as_i64().expect("fluss_bucket");
        let offset = headers["fluss_offset"].as_i64().expect("fluss_offset");
        let raw_payload = &line[line.find("\"payload\":").expect("payload")..];
        match headers["fluss_table"].as_str() {
            Some("demo.orders") => {
                assert_eq!(headers["fluss_change_type"], "+A", "{line}");
                check_order_payload(raw_payload, &message["payload"]);
                assert_eq!(message["payload"]["_fluss"]["offset"], offset, "{line}");
                orders += 1;
            }
            Some("demo.customers") => {
                if check_customer_payload(raw_payload, &message["payload"]) == "r" {
                    check_snapshot_id(id);
                    customers += 1;
                    continue;
                }
                customers += 1;
            }
            other => panic!("unexpected fluss_table {other:?}: {line}"),
        }
        check_id(id, bucket, offset);
    }
    (orders, customers)
}

/// Lines read back from Iggy: `{"topic":…,"offset":…,"id":"0x…","payload":{…}}`.
fn check_iggy_lines(stdout: &str) -> (usize, usize) {
    let (mut orders, mut customers) = (0, 0);
    for line in stdout.lines() {
        let message: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("each stdout line is one JSON message ({e}): {line}"));
        let id = message["id"]
            .as_str()
            .and_then(|id| id.strip_prefix("0x"))
            .and_then(|hex| u128::from_str_radix(hex, 16).ok())
            .unwrap_or_else(|| panic!("id is 0x + hex: {line}"));
        let raw_payload = &line[line.find("\"payload\":").expect("payload")..];
        let payload = &message["payload"];
        match message["topic"].as_str() {
            Some("orders") => {
                check_order_payload(raw_payload, payload);
                let fluss = &payload["_fluss"];
                check_id(
                    id,
                    fluss["bucket"].as_i64().unwrap(),
                    fluss["offset"].as_i64().unwrap(),
                );
                orders += 1;
            }
            Some("customers") => {
                if check_customer_payload(raw_payload, payload) == "r" {
                    check_snapshot_id(id);
                    customers += 1;
                    continue;
                }
                let source = &payload["source"];
                check_id(
                    id,
                    source["bucket"].as_i64().unwrap(),
                    source["offset"].as_i64().unwrap(),
                );
                customers += 1;
            }
            other => panic!("unexpected topic {other:?}: {line}"),
        }
    }
    (orders, customers)
}

/// Running, not a zombie, and still the program we started (pids get reused).
fn alive(pid: u32, program: &str) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next());
    if matches!(state, Some("Z" | "X") | None) {
        return false;
    }
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .is_ok_and(|cmdline| String::from_utf8_lossy(&cmdline).contains(program))
}

/// Every process whose command line names `dir` (Fluss JVMs, runners, helpers).
fn processes_naming(dir: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if pid == std::process::id() {
            continue;
        }
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if cmdline.contains(dir) && alive(pid, "") {
                found.push(format!("{pid}: {cmdline}"));
            }
        }
    }
    found
}

/// The run ended well and cleaned up: "stopped everything", its temporary directory gone, none
/// of the processes it started still running.
fn check_stopped_everything(run: &Run) {
    let ws = &*WORKSPACE;
    assert!(
        run.success,
        "the quickstart failed; its stderr:\n{}",
        run.stderr
    );
    let last = run.stderr.lines().last().unwrap_or_default();
    assert_eq!(
        last, "quickstart: stopped everything",
        "the last stderr line; stderr:\n{}",
        run.stderr
    );
    let work = run
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("quickstart: working in "))
        .unwrap_or_else(|| panic!("the quickstart names its directory:\n{}", run.stderr));
    assert!(
        Path::new(work).starts_with(&ws.tmp),
        "{work} is under TMPDIR"
    );
    assert!(!Path::new(work).exists(), "{work} was removed");
    let started: Vec<(u32, String)> = run
        .stderr
        .lines()
        .filter_map(|l| l.strip_prefix("quickstart: started "))
        .filter_map(|l| {
            let (name, pid) = l.strip_suffix(')')?.rsplit_once(" (pid ")?;
            let program = name.split_whitespace().next()?.to_owned();
            Some((pid.parse().ok()?, program))
        })
        .collect();
    assert!(
        started.len() >= 3,
        "the writer and two runners (or the Iggy programs) are announced: {started:?}"
    );
    let left: Vec<_> = started
        .iter()
        .filter(|(pid, program)| alive(*pid, program))
        .collect();
    assert!(
        left.is_empty(),
        "still running after the quickstart: {left:?}"
    );
    let left = processes_naming(work);
    assert!(
        left.is_empty(),
        "processes of {work} still running: {left:?}"
    );
    let rest: Vec<_> = std::fs::read_dir(&ws.tmp)
        .expect("TMPDIR")
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(rest.is_empty(), "left in TMPDIR: {rest:?}");
}

fn quickstart_builds_from_an_empty_target_streams_both_tables_and_stops_everything(run: &Run) {
    eprintln!(
        "clean-clone quickstart (cold build included) took {:?}",
        run.took
    );
    check_stopped_everything(run);
    let (orders, customers) = check_runner_lines(&run.stdout);
    assert!(
        orders >= MESSAGES && customers >= MESSAGES,
        "at least {MESSAGES} messages of each table, got {orders} orders and {customers} customers:\n{}",
        run.stdout
    );
    let clone = &WORKSPACE.clone;
    for built in [
        "target/release/fluss-source-runner",
        "target/release/fluss-demo-writer",
        "target/release/libiggy_connector_fluss_source.so",
    ] {
        assert!(clone.join(built).exists(), "{built} built in the clone");
    }
}

fn quickstart_again_with_a_relative_target_dir_and_through_iggy_when_iggy_bin_dir_is_set() {
    let ws = &*WORKSPACE;
    // A relative CARGO_TARGET_DIR is the clone's target under another name: the build is warm,
    // and the binaries must be found through it.
    let alias = ws.clone.join("target-alias");
    if !alias.exists() {
        std::os::unix::fs::symlink("target", &alias).expect("symlink");
    }
    let mut command = clean_command(&ws.clone.join("scripts/quickstart.sh").to_string_lossy());
    command
        .current_dir(&ws.root)
        .env("CARGO_TARGET_DIR", "target-alias")
        .env("QUICKSTART_MESSAGES", MESSAGES.to_string());
    let iggy = std::env::var_os("IGGY_BIN_DIR").filter(|d| !d.is_empty());
    match &iggy {
        Some(dir) => {
            command.env("IGGY_BIN_DIR", dir);
        }
        None => {
            eprintln!("IGGY_BIN_DIR is not set: the Iggy mode is not exercised, the runner again");
            command.env_remove("IGGY_BIN_DIR");
        }
    }
    let run = run(command, QUICKSTART_DEADLINE, &ws.root);
    eprintln!("second quickstart took {:?}", run.took);
    check_stopped_everything(&run);
    let expected_bin = format!("{}/release", alias.display());
    assert!(
        run.stderr
            .contains(&format!("quickstart: binaries in {expected_bin}")),
        "CARGO_TARGET_DIR=target-alias resolves against the repo root to {expected_bin}:\n{}",
        run.stderr
    );
    let (orders, customers) = if iggy.is_some() {
        assert!(
            run.stderr.contains("started iggy-server")
                && run.stderr.contains("started iggy-connectors")
                && run
                    .stderr
                    .contains("examples/consumer_python/consume.py --server 127.0.0.1:")
                && run
                    .stderr
                    .contains("--stream quickstart --topic customers --format debezium"),
            "{}",
            run.stderr
        );
        check_iggy_lines(&run.stdout)
    } else {
        check_runner_lines(&run.stdout)
    };
    assert!(
        orders >= MESSAGES && customers >= MESSAGES,
        "at least {MESSAGES} messages of each table, got {orders} orders and {customers} customers:\n{}",
        run.stdout
    );
}

/// The user docs (README.md and the chapters in docs/, which hold the runner's command) with
/// runs of whitespace (line breaks) folded to one space.
fn readme() -> String {
    let mut text = std::fs::read_to_string(WORKSPACE.clone.join("README.md")).expect("README.md");
    let mut chapters: Vec<PathBuf> = std::fs::read_dir(WORKSPACE.clone.join("docs"))
        .expect("docs/")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    chapters.sort();
    for chapter in chapters {
        text.push('\n');
        text.push_str(&std::fs::read_to_string(&chapter).expect("a chapter"));
    }
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn the_readme_release_build_produces_the_library_with_its_five_symbols(library: &Path) {
    let readme = readme();
    for text in [
        "cargo build --release -p iggy_connector_fluss_source",
        "`target/release/libiggy_connector_fluss_source.so`",
    ] {
        assert!(readme.contains(text), "the README shows {text}");
    }
    for symbol in README_SYMBOLS {
        assert!(
            readme.contains(&format!("`{symbol}`")),
            "the README lists {symbol}"
        );
    }
    assert!(library.exists(), "{} built", library.display());
    let mut expected = README_SYMBOLS.to_vec();
    expected.sort_unstable();
    let exported = fluss_source_runner::exported_iggy_symbols(library).expect("nm (binutils)");
    assert_eq!(exported, expected, "exactly the README's five symbols");
    let harness = fluss_source_runner::Harness::load(library).expect("load");
    assert_eq!(harness.version(), env!("CARGO_PKG_VERSION"));
}

const ROWS: i64 = 30;

/// The runner command as the README writes it, from the clone's root: `config.toml` names
/// the plugin by file name (found beside the runner in `target/release/`) and the table
/// fluss.orders; the cluster
/// address and a small batch size come from the documented environment overrides.
fn readme_runner(bootstrap: &str, options: &[&str]) -> Run {
    let mut command = clean_command("target/release/fluss-source-runner");
    command
        .args(["--connector", "config.toml"])
        .args(options)
        .env(
            "IGGY_CONNECTORS_SOURCE_FLUSS_ORDERS_SAMPLE_PLUGIN_CONFIG_BOOTSTRAP_SERVERS",
            bootstrap,
        )
        .env(
            "IGGY_CONNECTORS_SOURCE_FLUSS_ORDERS_SAMPLE_PLUGIN_CONFIG_BATCH_SIZE",
            "5",
        );
    let run = run(command, Duration::from_secs(300), &WORKSPACE.clone);
    assert!(run.success, "the runner failed:\n{}", run.stderr);
    run
}

fn delivered_ids(lines: &str) -> Vec<i64> {
    lines
        .lines()
        .map(|line| {
            let message: Value = serde_json::from_str(line).expect("one JSON message per line");
            assert_eq!(message["headers"]["fluss_table"], "fluss.orders", "{line}");
            message["payload"]["id"].as_i64().expect("payload id")
        })
        .collect()
}

fn the_readme_runner_command_with_every_option() {
    let readme = readme();
    let documented = "`target/release/fluss-source-runner --connector config.toml [--state FILE] [--output FILE] [--nack-every N] [--max-messages N] [--idle-exit 5s]`";
    assert!(
        readme.contains(documented),
        "docs/operations.md shows {documented}"
    );

    let cluster = fluss_testkit::Cluster::start(fluss_testkit::ClusterOptions::default());
    let tokio = tokio::runtime::Runtime::new().expect("tokio");
    tokio.block_on(async {
        let (connection, admin) = cluster.admin().await;
        let table = fluss::metadata::TablePath::new("fluss", "orders");
        fluss_testkit::tables::create_log_table(
            &admin,
            &table,
            fluss_testkit::tables::sample_log_schema(),
            3,
        )
        .await;
        fluss_testkit::write::append_rows(
            &connection,
            &table,
            (1..=ROWS).map(fluss_testkit::tables::sample_row),
        )
        .await;
    });
    let scratch = WORKSPACE.root.join("runner");
    std::fs::create_dir_all(&scratch).expect("scratch dir");
    let state = scratch.join("orders.state");
    let (state, one, two) = (
        state.to_str().unwrap(),
        scratch.join("one.jsonl"),
        scratch.join("two.jsonl"),
    );

    // Every option: stop after 20 messages, every second batch Nacked and delivered again.
    let first = readme_runner(
        cluster.bootstrap(),
        &[
            "--state",
            state,
            "--output",
            one.to_str().unwrap(),
            "--nack-every",
            "2",
            "--max-messages",
            "20",
            "--idle-exit",
            "5s",
        ],
    );
    let one = std::fs::read_to_string(&one).expect("--output file");
    let first_ids = delivered_ids(&one);
    assert!(
        (20..25).contains(&first_ids.len()),
        "--max-messages 20 stops after the batch (at most 5) reaching 20: {first_ids:?}"
    );
    assert!(
        first.stderr.contains("stopped (MaxMessages)") && !first.stderr.contains(" 0 nacked"),
        "stopped by --max-messages, with Nacks:\n{}",
        first.stderr
    );
    assert!(Path::new(state).exists(), "--state {state} written");

    // Resumes from --state and reads the rest: it waits for the rows it expects (a server
    // paused on a loaded machine only slows it), --idle-exit is only its deadline.
    let rest = (ROWS as usize - first_ids.len()).to_string();
    let second = readme_runner(
        cluster.bootstrap(),
        &[
            "--state",
            state,
            "--output",
            two.to_str().unwrap(),
            "--max-messages",
            &rest,
            "--idle-exit",
            "120s",
        ],
    );
    assert!(
        second.stderr.contains("stopped (MaxMessages"),
        "{}",
        second.stderr
    );
    let two = std::fs::read_to_string(&two).expect("--output file");
    let mut all: Vec<i64> = first_ids.into_iter().chain(delivered_ids(&two)).collect();
    all.sort_unstable();
    assert_eq!(
        all,
        (1..=ROWS).collect::<Vec<_>>(),
        "each row exactly once across the stop and the restart from --state"
    );

    // Once more from --state: nothing is left, so it stops after 5 s without data.
    let idle = readme_runner(
        cluster.bootstrap(),
        &["--state", state, "--idle-exit", "5s"],
    );
    assert!(idle.stderr.contains("stopped (Idle"), "{}", idle.stderr);
    assert_eq!(
        delivered_ids(&idle.stdout),
        Vec::<i64>::new(),
        "nothing after the last acknowledged row"
    );

    // Only the required option (and a deadline): state in local_state/, lines on stdout.
    let all_rows = ROWS.to_string();
    let third = readme_runner(
        cluster.bootstrap(),
        &["--max-messages", &all_rows, "--idle-exit", "120s"],
    );
    let mut ids = delivered_ids(&third.stdout);
    ids.sort_unstable();
    assert_eq!(
        ids,
        (1..=ROWS).collect::<Vec<_>>(),
        "a fresh state reads all"
    );
    assert!(
        WORKSPACE
            .clone
            .join("local_state/source_fluss_orders_sample.state")
            .exists(),
        "the default state file"
    );
}

// The cold release build in a fresh clone takes about 15 minutes on a 2-core machine; in CI
// (`scripts/test.sh` through `.ci/run`) it is the first quickstart `.ci/run` made.
#[test]
fn the_readme_commands_work_in_a_fresh_clone() {
    let _remove = RemoveWorkspace;
    let started = Instant::now();
    let run = first_run();
    quickstart_builds_from_an_empty_target_streams_both_tables_and_stops_everything(&run);
    quickstart_again_with_a_relative_target_dir_and_through_iggy_when_iggy_bin_dir_is_set();
    let library = release_build();
    the_readme_release_build_produces_the_library_with_its_five_symbols(&library);
    // After the release build: config.toml's `path` finds the library beside the runner.
    the_readme_runner_command_with_every_option();
    eprintln!("the README commands took {:?} in all", started.elapsed());
}
