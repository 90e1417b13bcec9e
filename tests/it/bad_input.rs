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

//! Bad input: `open` refuses what it cannot serve and a runtime that misbehaves cannot break
//! an instance.
//!
//! Every refused open is checked twice: in process (`iggy_source_open` returns non-zero and
//! logs one ERROR line naming the cause) and through the `fluss-source-runner` binary with a
//! state file (exit code, exactly one plugin ERROR line on stderr, no panic, the state file's
//! bytes unchanged, no output).
//!
//! One file because every refusal goes through the two checks at its top
//! ([`Case`], [`refused_in_process`] and the runner's), which `log_lines.rs` and `metrics.rs`
//! reuse for refusals of their own.

use std::time::{Duration, Instant};

use fluss_source_runner::logs;
use fluss_testkit::fluss::metadata::TablePath;
use fluss_testkit::{Cluster, ClusterOptions, tables, unique_table};
use serde_json::{Value, json};

use crate::fixture::{
    Answer, Stream, cluster, config, harness, instance_prefix, open_refused, raw_id, rt,
};
use crate::process::{connector_file, plugin_errors, run_runner, scratch_dir};

/// One input `open` must refuse and the whole ERROR line it must give (after
/// `fluss[<id> <db.table>]: open failed: `).
pub(crate) struct Case {
    what: &'static str,
    /// The plugin config; `None` = no `[plugin_config]` section (the runtime passes `null`).
    config: Option<Value>,
    state: Option<Vec<u8>>,
    expect: String,
}

impl Case {
    pub(crate) fn new(what: &'static str, config: Value, expect: impl Into<String>) -> Self {
        Self {
            what,
            config: Some(config),
            state: None,
            expect: expect.into(),
        }
    }

    pub fn with_state(mut self, state: Vec<u8>) -> Self {
        self.state = Some(state);
        self
    }
}

/// `iggy_source_open` in this process: non-zero, one ERROR line for this id, with `expect`.
pub(crate) fn refused_in_process(case: &Case) {
    let json = case
        .config
        .as_ref()
        .map_or_else(|| "null".to_owned(), Value::to_string);
    eprintln!("{}: open must fail", case.what);
    let (id, lines) = open_refused(&json, case.state.as_deref());
    assert_eq!(
        lines.len(),
        1,
        "{}: want exactly one ERROR line for plugin {id}, got {lines:#?}",
        case.what
    );
    assert_eq!(
        lines[0],
        format!(
            "{}: open failed: {}",
            instance_prefix(id, case.config.as_ref()),
            case.expect
        ),
        "{}: the whole ERROR line",
        case.what
    );
    assert_no_repeated_cause(&lines[0]);
    // A failed open leaves nothing behind: the id is free again.
    assert_eq!(
        harness().call_close(id),
        -1,
        "{}: nothing to close after a failed open",
        case.what
    );
}

/// The runner binary with a state file: fails, one plugin ERROR line, state bytes unchanged.
fn refused_by_runner(case: &Case) {
    let dir = scratch_dir("bad_input");
    let connector = connector_file(&dir, case.config.as_ref());
    let state = dir.join("source.state");
    if let Some(before) = &case.state {
        std::fs::write(&state, before).expect("write state file");
    }
    let output = dir.join("out.jsonl");
    let ran = run_runner(&connector, &state, &output, &["--idle-exit", "1s"]);
    let stderr = String::from_utf8_lossy(&ran.stderr);
    assert!(
        !ran.status.success(),
        "{}: the runner should fail; stderr:\n{stderr}",
        case.what
    );
    assert!(
        stderr.contains("iggy_source_open returned"),
        "{}: the runner should report the failed open; stderr:\n{stderr}",
        case.what
    );
    let errors = plugin_errors(&stderr);
    assert_eq!(
        errors.len(),
        1,
        "{}: want exactly one plugin ERROR line; stderr:\n{stderr}",
        case.what
    );
    let (head, message) = errors[0]
        .split_once(": open failed: ")
        .unwrap_or_else(|| panic!("{}: not an open failure: {}", case.what, errors[0]));
    // The runner's own instance id: the prefix for id 0 without its id.
    let table_tag = instance_prefix(0, case.config.as_ref()).replacen("fluss[0", "", 1);
    assert!(
        head.starts_with("ERROR iggy_connector_sdk::container: fluss[")
            && head.ends_with(&table_tag),
        "{}: the line carries the instance prefix (ending {table_tag:?}): {}",
        case.what,
        errors[0]
    );
    assert_eq!(message, case.expect, "{}: the whole ERROR line", case.what);
    assert!(
        !stderr.to_lowercase().contains("panic"),
        "{}: a panic crossed the boundary; stderr:\n{stderr}",
        case.what
    );
    match &case.state {
        Some(before) => assert_eq!(
            &std::fs::read(&state).expect("state file still there"),
            before,
            "{}: a failed open must leave the state file untouched",
            case.what
        ),
        None => assert!(
            !state.exists(),
            "{}: a failed open must not create a state file",
            case.what
        ),
    }
    assert!(
        std::fs::metadata(&output).map_or(true, |m| m.len() == 0),
        "{}: nothing may be delivered",
        case.what
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// No part of a line between `: ` or `; ` separators comes twice (a cause printed once by
/// its error and again by the chain).
pub fn assert_no_repeated_cause(line: &str) {
    let parts: Vec<&str> = line
        .split([':', ';'])
        .map(str::trim)
        .filter(|p| p.len() >= 12)
        .collect();
    for (i, part) in parts.iter().enumerate() {
        assert!(
            !parts[i + 1..].contains(part),
            "{part:?} appears twice in: {line}"
        );
    }
}

/// `case` refused in process and by the runner binary.
pub(crate) fn refused(case: &Case) {
    refused_in_process(case);
    refused_by_runner(case);
}

fn log_table(prefix: &str, rows: i64) -> TablePath {
    let path = unique_table(prefix);
    rt().block_on(async {
        let conn = cluster().connection().await;
        let admin = conn.get_admin().unwrap();
        tables::create_log_table(&admin, &path, tables::sample_log_schema(), 1).await;
        if rows > 0 {
            fluss_testkit::write::append_rows(&conn, &path, (0..rows).map(tables::sample_row))
                .await;
        }
    });
    path
}

fn starting_offset_error(value: &str) -> String {
    format!(
        "invalid plugin_config: `starting_offset` = {value} is not valid; use \"full\", \"earliest\", \"latest\", \"timestamp:<RFC 3339 UTC time or epoch ms>\" or a non-negative offset"
    )
}

/// serde's own list of the accepted keys, which the plugin passes on as it is.
fn unknown_key_error() -> String {
    let e = iggy_connector_fluss_source::config::Config::parse(r#"{"unknown_key": 1}"#)
        .expect_err("unknown key refused");
    assert!(
        e.message
            .starts_with("unknown field `unknown_key`, expected one of `bootstrap_servers`"),
        "{e}"
    );
    e.to_string()
}

/// The line for state bytes that do not decode; rmp-serde's own words in the middle depend on
/// where the bytes stop, so they come from the plugin's decoder.
fn undecodable_state(bytes: &[u8]) -> String {
    let line = state_refusal(bytes);
    assert!(
        line.starts_with(&format!(
            "the saved state ({} bytes) is not a Fluss source state (",
            bytes.len()
        )) && line.ends_with("); delete the connector's state file (<state.path>/source_<key>.state in the runtime config) to start again from `starting_offset`"),
        "{line}"
    );
    line
}

/// The line for state bytes the plugin refuses.
fn state_refusal(bytes: &[u8]) -> String {
    iggy_connector_fluss_source::state::SavedState::decode(&iggy_connector_sdk::ConnectorState(
        bytes.to_vec(),
    ))
    .expect_err("the bytes are refused")
    .to_string()
}

/// The line for a state this plugin wrote, changed after it was written.
fn damaged_state(bytes: &[u8]) -> String {
    let line = state_refusal(bytes);
    assert_eq!(
        line,
        format!(
            "the saved state ({} bytes) does not match its checksum: the state file was changed after the connector wrote it (damaged on disk or in a copy, or edited), so its positions cannot be trusted; put back a copy of the file taken before, or delete the connector's state file (<state.path>/source_<key>.state in the runtime config) to start again from `starting_offset`",
            bytes.len()
        )
    );
    line
}

/// `state` with one bit flipped in the offset of its first bucket, which still decodes: without
/// the checksum it would resume at another offset.
fn flipped_offset(state: &[u8]) -> Vec<u8> {
    // The log table's one bucket read 10 rows: its position (None, 0, 10) is `93 c0 00 0a`.
    let at = state
        .windows(4)
        .position(|w| w == [0x93, 0xc0, 0x00, 0x0a])
        .expect("the position of bucket 0 at offset 10 in the state");
    let mut flipped = state.to_vec();
    flipped[at + 3] ^= 0x04;
    flipped
}

fn table_id(path: &TablePath) -> i64 {
    rt().block_on(async {
        let conn = cluster().connection().await;
        let admin = conn.get_admin().unwrap();
        admin
            .get_table_info(path)
            .await
            .expect("table info")
            .get_table_id()
    })
}

#[test]
fn bad_config_and_state_are_refused_at_open() {
    let started = Instant::now();
    let path = log_table("bad_input", 10);
    let table = path.table().to_owned();
    let pk = unique_table("bad_input_pk");
    rt().block_on(async {
        let conn = cluster().connection().await;
        let admin = conn.get_admin().unwrap();
        tables::create_pk_table(&admin, &pk, tables::sample_pk_schema(), 1).await;
    });
    // Valid state of this table, to hand to another one.
    let mut s = Stream::open(&config(&table, json!({})), None).expect("valid config opens");
    s.read(10, Answer::AckAll);
    let state = s.close().expect("state after 10 rows");
    let other = log_table("bad_input_other", 0);

    let db = tables::TEST_DATABASE;
    let reset = "delete the connector's state file (<state.path>/source_<key>.state in the runtime config) to start again from `starting_offset`";
    let cases = [
        Case::new(
            "unknown database",
            json!({"bootstrap_servers": cluster().bootstrap(), "database": "no_such_db", "table": "t"}),
            "table no_such_db.t does not exist; create it or fix `database`/`table`",
        )
        .with_state(state.clone()),
        Case::new(
            "unknown table",
            config("no_such_table", json!({})),
            format!("table {db}.no_such_table does not exist; create it or fix `database`/`table`"),
        )
        .with_state(state.clone()),
        Case::new(
            "unknown column",
            config(&table, json!({"columns": ["id", "nope"]})),
            format!("`columns`: table {db}.{table} has no column \"nope\"; its columns are id, name, amount"),
        )
        .with_state(state.clone()),
        Case::new(
            "log table read as primary_key",
            config(&table, json!({"table_type": "primary_key"})),
            format!("table {db}.{table} is a log table but `table_type` is \"primary_key\"; set `table_type = \"log\"` or \"auto\""),
        )
        .with_state(state.clone()),
        Case::new(
            "primary-key table read as log",
            config(pk.table(), json!({"table_type": "log"})),
            format!("table {db}.{} is a primary_key table but `table_type` is \"log\"; set `table_type = \"primary_key\"` or \"auto\"", pk.table()),
        ),
        Case::new(
            "malformed duration",
            config(&table, json!({"poll_interval": "soon"})),
            "invalid plugin_config: `poll_interval` = \"soon\" is not valid; use a positive duration such as \"500ms\", \"30s\" or \"1m\"",
        ),
        Case::new(
            "malformed starting offset",
            config(&table, json!({"starting_offset": "yesterday"})),
            starting_offset_error("\"yesterday\""),
        ),
        Case::new(
            "negative starting offset",
            config(&table, json!({"starting_offset": -5})),
            starting_offset_error("-5"),
        ),
        Case::new(
            "unknown enum value",
            config(&table, json!({"payload_format": "xml"})),
            "invalid plugin_config: `payload_format` = \"xml\" is not valid; use one of \"json\", \"arrow_ipc\"",
        ),
        Case::new(
            "unknown out-of-range policy",
            config(&table, json!({"on_offset_out_of_range": "skip"})),
            "invalid plugin_config: `on_offset_out_of_range` = \"skip\" is not valid; use one of \"earliest\", \"latest\", \"fail\", \"snapshot\"",
        ),
        Case::new(
            "batch size not a number",
            config(&table, json!({"batch_size": "many"})),
            "invalid plugin_config: `batch_size` = \"many\" is not valid; use a whole number from 1 to 1000000",
        ),
        Case::new(
            "unknown key",
            config(&table, json!({"unknown_key": 1})),
            unknown_key_error(),
        ),
        Case::new(
            "missing table key",
            json!({"bootstrap_servers": cluster().bootstrap(), "database": "d"}),
            "invalid plugin_config: `table` is required",
        ),
        Case {
            what: "no [plugin_config] (null)",
            config: None,
            state: None,
            expect: "invalid plugin_config: the connector file has no [plugin_config] section; add one with at least `bootstrap_servers`, `database` and `table`".into(),
        },
        Case::new(
            "empty [plugin_config]",
            json!({}),
            "invalid plugin_config: `bootstrap_servers` is required",
        ),
        Case::new(
            "corrupted state",
            config(&table, json!({})),
            undecodable_state(b"\xc1garbage, not MessagePack"),
        )
        .with_state(b"\xc1garbage, not MessagePack".to_vec()),
        Case::new(
            "truncated state",
            config(&table, json!({})),
            damaged_state(&state[..state.len() / 2]),
        )
        .with_state(state[..state.len() / 2].to_vec()),
        Case::new(
            "state with a flipped bit",
            config(&table, json!({})),
            damaged_state(&flipped_offset(&state)),
        )
        .with_state(flipped_offset(&state)),
        Case::new(
            "state of another table",
            config(other.table(), json!({})),
            format!(
                "the saved state belongs to table {db}.{table} (id {}), but {db}.{} has id {} (the table was dropped and re-created, or the connector now reads another table); {reset}",
                table_id(&path),
                other.table(),
                table_id(&other)
            ),
        )
        .with_state(state.clone()),
    ];
    for case in &cases {
        refused(case);
    }
    // The same table and state open fine.
    Stream::open(&config(&table, json!({"table_type": "log"})), Some(state))
        .expect("valid config and state open");
    eprintln!(
        "bad_config_and_state_are_refused_at_open: {} cases in {:?}",
        cases.len(),
        started.elapsed()
    );
}

#[test]
fn unreachable_cluster_fails_after_connect_timeout() {
    let case = Case::new(
        "unreachable bootstrap",
        json!({"bootstrap_servers": "127.0.0.1:1", "database": "d", "table": "t", "connect_timeout": "2s"}),
        "cannot reach the Fluss cluster at 127.0.0.1:1 within 2s: Fluss connect failed: IO Error: Connection refused (os error 111); check `bootstrap_servers` and that the coordinator is running",
    );
    let started = Instant::now();
    refused_in_process(&case);
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(1500) && took < Duration::from_secs(20),
        "open gave up after {took:?}; it should keep trying for `connect_timeout` (2s)"
    );
    refused_by_runner(&case);
}

#[test]
fn refused_credentials_fail_open() {
    let started = Instant::now();
    let sasl = Cluster::start(ClusterOptions {
        sasl: true,
        ..ClusterOptions::default()
    });
    let bootstrap = sasl.sasl_bootstrap().expect("SASL listener").to_owned();
    let user = sasl.sasl_users()[0].clone();
    let path = unique_table("bad_sasl");
    rt().block_on(async {
        let conn = sasl.connection().await;
        let admin = conn.get_admin().unwrap();
        tables::create_log_table(&admin, &path, tables::sample_log_schema(), 1).await;
    });
    let base = json!({
        "bootstrap_servers": bootstrap,
        "database": path.database(),
        "table": path.table(),
        "connect_timeout": "5s",
    });
    let with = |extra: Value| {
        let mut c = base.clone();
        c.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        c
    };
    refused(&Case::new(
        "wrong SASL password",
        with(
            json!({"sasl_mechanism": "PLAIN", "sasl_username": user.username, "sasl_password": "wrong-password"}),
        ),
        format!(
            "Fluss refused the connection to {bootstrap}: Fluss connect failed: Authentication failed: Invalid username or password (error code 46); check `sasl_username`/`sasl_password` (and that `bootstrap_servers` names the SASL listener)"
        ),
    ));
    refused(&Case::new(
        "SASL listener without credentials",
        base.clone(),
        format!(
            "Fluss refused the connection to {bootstrap}: Fluss connect failed: The connection has not completed authentication yet. This may be caused by a missing or incorrect configuration of 'client.security.protocol' on the client side. (error code 46); check `sasl_username`/`sasl_password` (and that `bootstrap_servers` names the SASL listener)"
        ),
    ));
    // The password never shows up in any log line.
    assert!(
        logs().iter().all(|l| !l.message.contains("wrong-password")),
        "a password was logged"
    );
    // The right credentials open.
    let mut s = Stream::open(
        &with(json!({"sasl_mechanism": "PLAIN", "sasl_username": user.username, "sasl_password": user.password})),
        None,
    )
    .expect("the right credentials open");
    assert_eq!(s.read(0, Answer::AckAll), 0);
    drop(s);
    drop(sasl);
    eprintln!("refused_credentials_fail_open: {:?}", started.elapsed());
}

/// A runtime that calls with wrong ids, answers the wrong batch, opens an id twice or closes
/// mid-batch gets a refusal (-1), never a panic, and the instance keeps its data intact.
#[test]
fn runtime_misbehaviour_is_refused() {
    let started = Instant::now();
    let path = log_table("misbehave", 300);
    let cfg = config(path.table(), json!({"batch_size": 50}));
    let h = harness();

    // Unknown ids.
    let unknown = raw_id();
    assert_eq!(h.call_handle(unknown), -1, "handle of an unknown id");
    assert_eq!(
        h.call_batch_result(unknown, 1, 0),
        -1,
        "result for an unknown id"
    );
    assert_eq!(h.call_close(unknown), -1, "close of an unknown id");

    let instance = h.open(&cfg.to_string(), None).expect("open");
    assert_eq!(instance.start(), 0);
    assert_eq!(instance.start(), -1, "a second handle_v2 is refused");

    // Open twice with the same id: refused, the running instance is unaffected.
    assert_eq!(
        h.call_open(instance.id(), &cfg.to_string(), None),
        -1,
        "open of an id that is already open"
    );

    let first = instance
        .next_batch(Duration::from_secs(15))
        .expect("first batch");
    assert_eq!(first.messages.messages.len(), 50);
    // A result for another batch id, and an invalid result byte for another id, are refused
    // without touching the pending batch.
    assert_eq!(instance.result(first.batch_id + 7, 0), -1, "wrong batch id");
    assert_eq!(instance.result(first.batch_id + 8, 1), -1, "wrong batch id");
    assert!(
        instance.next_batch(Duration::from_millis(300)).is_none(),
        "no second batch while the first awaits its result"
    );
    assert_eq!(instance.ack(&first), 0, "the right result is accepted");
    assert_eq!(
        instance.ack(&first),
        -1,
        "a second result for the same batch"
    );

    let second = instance
        .next_batch(Duration::from_secs(15))
        .expect("second batch");
    let offsets = |b: &fluss_source_runner::Batch| -> Vec<i64> {
        b.messages
            .messages
            .iter()
            .map(|m| {
                m.headers.as_ref().unwrap()
                    [&iggy_connector_sdk::HeaderKey::new("fluss_offset").unwrap()]
                    .as_i64()
                    .unwrap()
            })
            .collect()
    };
    assert_eq!(
        offsets(&second),
        (50..100).collect::<Vec<_>>(),
        "the stream continues right after the acked batch"
    );
    // Close while `second` awaits its result: prompt, and nothing is sent afterwards.
    let late_before = fluss_source_runner::harness::late_sends();
    let closing = Instant::now();
    assert_eq!(instance.close(), 0, "close with a batch pending");
    let took = closing.elapsed();
    assert!(
        took < Duration::from_secs(3),
        "close with a pending batch took {took:?}"
    );
    assert_eq!(instance.ack(&second), -1, "a result after close is refused");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        fluss_source_runner::harness::late_sends(),
        late_before,
        "the plugin sent a batch after close returned"
    );
    drop(instance);
    assert!(
        logs()
            .iter()
            .all(|l| !l.message.to_lowercase().contains("panic")),
        "a panic was logged"
    );
    eprintln!("runtime_misbehaviour_is_refused: {:?}", started.elapsed());
}

/// Two instances of the plugin in one process, each reading its own table, do not mix.
#[test]
fn two_instances_read_their_own_tables() {
    let a = log_table("two_a", 2000);
    let b = log_table("two_b", 0);
    rt().block_on(async {
        let conn = cluster().connection().await;
        fluss_testkit::write::append_rows(&conn, &b, (100_000..101_500).map(tables::sample_row))
            .await;
    });
    let read = |path: &TablePath, want: usize| {
        let mut s =
            Stream::open(&config(path.table(), json!({"batch_size": 100})), None).expect("open");
        s.read(want, Answer::AckAll);
        let ids = crate::fixture::ids(&s.acked);
        crate::fixture::assert_bucket_order(&s.acked);
        ids
    };
    let (ids_a, ids_b) = std::thread::scope(|scope| {
        let ta = scope.spawn(|| read(&a, 2000));
        let tb = scope.spawn(|| read(&b, 1500));
        (ta.join().unwrap(), tb.join().unwrap())
    });
    assert_eq!(ids_a, (0..2000).collect::<Vec<_>>(), "table A, in order");
    assert_eq!(
        ids_b,
        (100_000..101_500).collect::<Vec<_>>(),
        "table B, in order"
    );
}
