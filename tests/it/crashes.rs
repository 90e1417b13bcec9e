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

//! Crashes of the host process: the `fluss-source-runner` binary is killed with SIGKILL at
//! random moments while it streams, and restarted from its state file each time. Every row
//! arrives; the only repeats are rows of the batch in flight at a kill; per-bucket order
//! holds. Also the memory bound of a long stream, measured on the same binary.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use fluss_testkit::fluss::row::GenericRow;
use fluss_testkit::{tables, unique_table};
use serde_json::{Value, json};

use fluss_testkit::seed::Rng;

use crate::fixture::{DEADLINE, cluster, config, rt};
use crate::pk_script::{apply_script, lookup_all, replay, script, script_state};
use crate::process::{
    Line, assert_run_order, connector_file, count_lines, read_lines, scratch_dir, spawn_runner,
};

pub(crate) const KILLS: usize = 10;

/// The variable that replays a crash test's kills (its seed is printed as `VAR=SEED`).
pub(crate) const SEED_VAR: &str = "FLUSS_IT_CRASH_SEED";

/// What the kill loop saw.
pub(crate) struct Runs {
    /// The complete lines of each run, in run order (the last run ended by itself).
    pub(crate) runs: Vec<Vec<Line>>,
}

impl Runs {
    /// Every line of every run, in delivery order.
    pub(crate) fn all(&self) -> impl Iterator<Item = &Line> {
        self.runs.iter().flatten()
    }

    /// Checks order within runs and returns, per kill, how many delivered rows the next run
    /// repeated. Panics on a repeat within one run.
    fn repeats_per_kill(&self) -> Vec<usize> {
        let mut seen: HashSet<&str> = HashSet::new();
        let mut repeats = Vec::new();
        for (run, lines) in self.runs.iter().enumerate() {
            assert_run_order(lines, run);
            let mut again = 0;
            let mut this_run: HashSet<&str> = HashSet::new();
            for line in lines {
                assert!(
                    this_run.insert(&line.id),
                    "run {run}: message id {} delivered twice without a crash",
                    line.id
                );
                if seen.contains(line.id.as_str()) {
                    again += 1;
                }
            }
            seen.extend(this_run);
            if run > 0 {
                repeats.push(again);
            }
        }
        repeats
    }
}

/// How long a run's output may stand still before the stream counts as delivered.
const DRY: Duration = Duration::from_secs(10);

/// Runs the binary, kills it with SIGKILL `KILLS` times once its output of that run reached
/// a random line count in `kill_after` (at once, or after a random 0-20 ms, to hit every
/// phase of a batch: encoding, writing lines, saving state, acking), then lets a last run
/// go on until `done` accepts the lines of all runs.
pub(crate) fn stream_with_kills(
    name: &str,
    plugin_config: &Value,
    kill_after: (u64, u64),
    rng: &mut Rng,
    done: &dyn Fn(&[&Line]) -> bool,
) -> Runs {
    let dir = scratch_dir(name);
    let connector = connector_file(&dir, Some(plugin_config));
    let state = dir.join("source.state");
    let mut runs = Vec::new();
    for run in 0..KILLS {
        let output = dir.join(format!("run-{run}.jsonl"));
        let mut child = spawn_runner(&connector, &state, &output, &[]);
        let target = rng.between(kill_after.0, kill_after.1) as usize;
        // Every other kill comes right after a batch's lines are out, which is most often
        // before its state is saved: the case that repeats the batch.
        let eager = run % 2 == 0;
        let started = Instant::now();
        // (lines, when they last grew): a run whose output stops growing has delivered what
        // was left (the earlier runs' kills landed late); it is killed there, idle.
        let mut grown = (0, Instant::now());
        loop {
            let lines = count_lines(&output);
            if lines >= target {
                break;
            }
            if lines != grown.0 {
                grown = (lines, Instant::now());
            } else if grown.1.elapsed() > DRY {
                eprintln!(
                    "run {run}: the stream ran dry at {lines} of {target} lines; killed idle"
                );
                break;
            }
            if let Some(status) = child.try_wait().expect("try_wait") {
                panic!(
                    "run {run} ended by itself ({status}) before the kill; stderr:\n{}",
                    std::fs::read_to_string(output.with_extension("stderr")).unwrap_or_default()
                );
            }
            if started.elapsed() >= DEADLINE {
                // Not left running after the test.
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "run {run} wrote {lines} of {target} lines in {DEADLINE:?}; stderr in {}",
                    output.with_extension("stderr").display()
                );
            }
            if !eager {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        if !eager {
            std::thread::sleep(Duration::from_millis(rng.between(0, 20)));
        }
        child.kill().expect("SIGKILL the runner");
        child.wait().expect("reap the runner");
        runs.push(read_lines(&output));
    }
    // The last run goes on until the lines of every run hold what `done` waits for, then
    // stops as an operator stops it (SIGTERM: it closes after the batch in flight).
    let output = dir.join("final.jsonl");
    let mut last = spawn_runner(&connector, &state, &output, &[]);
    let started = Instant::now();
    loop {
        let lines = read_lines(&output);
        let all: Vec<&Line> = runs.iter().flatten().chain(&lines).collect();
        if done(&all) {
            break;
        }
        if let Some(status) = last.try_wait().expect("try_wait") {
            panic!(
                "the last run ended by itself ({status}) before it delivered what was expected; stderr:\n{}",
                std::fs::read_to_string(output.with_extension("stderr")).unwrap_or_default()
            );
        }
        if started.elapsed() > DEADLINE {
            let _ = last.kill();
            let _ = last.wait();
            panic!(
                "the last run did not deliver what was expected within {DEADLINE:?} ({} lines); stderr in {}",
                lines.len(),
                output.with_extension("stderr").display()
            );
        }
        // Each check parses every line written so far: not more often than the runner needs.
        std::thread::sleep(Duration::from_millis(500));
    }
    // SAFETY: kill(2) on the pid of a child this test started and has not reaped.
    unsafe { libc::kill(last.id() as libc::pid_t, libc::SIGTERM) };
    let status = last.wait().expect("reap the last run");
    assert!(
        status.success(),
        "the last run failed ({status}); stderr:\n{}",
        std::fs::read_to_string(output.with_extension("stderr")).unwrap_or_default()
    );
    runs.push(read_lines(&output));
    let _ = std::fs::remove_dir_all(&dir);
    Runs { runs }
}

fn assert_repeats_bounded(what: &str, runs: &Runs, batch_size: usize) -> usize {
    let repeats = runs.repeats_per_kill();
    eprintln!("{what}: rows repeated after each kill: {repeats:?} (batch_size {batch_size})");
    for (kill, count) in repeats.iter().enumerate() {
        assert!(
            *count <= batch_size,
            "{what}: kill {kill} was followed by {count} repeated rows, more than one batch ({batch_size}); \
             state must be saved before each Ack and only the batch in flight may come again"
        );
    }
    repeats.iter().sum()
}

#[test]
fn kill_9_at_random_moments_loses_nothing() {
    let started = Instant::now();
    let mut rng = Rng::from_env(SEED_VAR);
    const ROWS: i64 = 200_000;
    const BATCH: usize = 1000;
    let log = unique_table("crash_log");
    rt().block_on(async {
        let conn = cluster().connection().await;
        let admin = conn.get_admin().unwrap();
        tables::create_log_table(&admin, &log, tables::sample_log_schema(), 3).await;
        fluss_testkit::write::append_rows(&conn, &log, (0..ROWS).map(tables::sample_row)).await;
    });
    eprintln!("crash: wrote {ROWS} rows in {:?}", started.elapsed());
    let streaming = Instant::now();
    let every_row = |lines: &[&Line]| {
        let ids: HashSet<i64> = lines
            .iter()
            .filter_map(|l| l.payload["id"].as_i64())
            .collect();
        ids.len() as i64 >= ROWS
    };
    let runs = stream_with_kills(
        "crash_log",
        &config(log.table(), json!({"batch_size": BATCH})),
        (2_000, 15_000),
        &mut rng,
        &every_row,
    );
    let repeated = assert_repeats_bounded("log table", &runs, BATCH);
    let ids: HashSet<i64> = runs
        .all()
        .map(|l| l.payload["id"].as_i64().expect("id"))
        .collect();
    let missing: Vec<i64> = (0..ROWS).filter(|i| !ids.contains(i)).take(10).collect();
    assert!(
        missing.is_empty(),
        "rows lost across {KILLS} kills, e.g. ids {missing:?}"
    );
    assert_eq!(ids.len() as i64, ROWS, "only written rows arrive");
    eprintln!(
        "crash: log table streamed through {KILLS} kills in {:?}, {repeated} rows repeated",
        streaming.elapsed()
    );

    let pk_started = Instant::now();
    let pk = unique_table("crash_pk");
    let ops = script(5_000, PK_KEYS, rng.bits());
    rt().block_on(async {
        let conn = cluster().connection().await;
        let admin = conn.get_admin().unwrap();
        tables::create_pk_table(&admin, &pk, tables::sample_pk_schema(), 2).await;
        apply_script(&conn, &pk, &ops, None).await;
    });
    let expected = script_state(&ops, "");
    const PK_BATCH: usize = 50;
    let replays = |lines: &[&Line]| replay(lines.iter().map(|l| &l.payload)) == expected;
    let runs = stream_with_kills(
        "crash_pk",
        &config(pk.table(), json!({"batch_size": PK_BATCH})),
        (100, 500),
        &mut rng,
        &replays,
    );
    assert_repeats_bounded("primary-key table", &runs, PK_BATCH);
    // Replaying every delivered change in delivery order (repeats included: a repeated
    // suffix of one bucket's changes is idempotent) must give the table's current content.
    let changes: HashSet<&str> = runs.all().map(|line| line.id.as_str()).collect();
    let replayed = replay(runs.all().map(|line| &line.payload));
    let looked_up = rt().block_on(lookup_all(&pk, PK_KEYS, &[None]));
    assert_eq!(
        looked_up, expected,
        "the table itself differs from the script; the writer or cluster lost a change"
    );
    assert_eq!(
        replayed, expected,
        "replaying the delivered changes does not give the table's content"
    );
    eprintln!(
        "crash: primary-key table ({} changes delivered, {} keys live) through {KILLS} kills in {:?}; test total {:?}",
        changes.len(),
        expected.len(),
        pk_started.elapsed(),
        started.elapsed()
    );
}

const PK_KEYS: i64 = 500;

/// Peak RSS of the runner streaming large rows stays under 64 MiB + 3 × `max_batch_bytes`.
///
/// Size: `FLUSS_IT_MEMORY_ROWS` rows of 1 KiB; the default, 50,000 (50 MiB, about 16 s), is
/// what CI runs. The full run of 1,000,000 rows (1 GiB) was done once on the 2-core dev box
/// with a debug build: written in 62 s, streamed in 199 s (5,000 rows/s), peak RSS 38 MiB
/// against a bound of 76 MiB (`max_batch_bytes` 4 MiB); 50,000 rows peak at 33 MiB.
#[test]
fn peak_memory_stays_bounded() {
    let started = Instant::now();
    let rows: i64 = std::env::var("FLUSS_IT_MEMORY_ROWS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(50_000);
    const MAX_BATCH_BYTES: u64 = 4 * 1024 * 1024;
    let path = unique_table("memory");
    // Hex from a generator, not one repeated character: Fluss compresses Arrow batches, and
    // the point is 1 KiB per row after decompression as well as on the wire.
    let payload = |id: i64| -> String {
        let mut rng = Rng::new(id as u64 ^ 0x9e37_79b9_7f4a_7c15);
        (0..125)
            .map(|_| format!("{:08x}", rng.bits() as u32))
            .collect()
    };
    rt().block_on(async {
        let conn = cluster().connection().await;
        let admin = conn.get_admin().unwrap();
        tables::create_log_table(&admin, &path, tables::sample_log_schema(), 2).await;
        // Chunks keep the writer's buffered memory (and the test's) small.
        let mut written = 0;
        while written < rows {
            let end = (written + 20_000).min(rows);
            fluss_testkit::write::append_rows(
                &conn,
                &path,
                (written..end).map(|id| {
                    let mut row = GenericRow::new(3);
                    row.set_field(0, id);
                    row.set_field(1, payload(id));
                    row.set_field(2, id as f64);
                    row
                }),
            )
            .await;
            written = end;
        }
    });
    let wrote = started.elapsed();
    let dir = scratch_dir("memory");
    let connector = connector_file(
        &dir,
        Some(&config(
            path.table(),
            json!({"batch_size": 1000, "max_batch_bytes": MAX_BATCH_BYTES}),
        )),
    );
    let streaming = Instant::now();
    // Lines go to /dev/null (1 GiB of output is not the point); the runner's summary line
    // counts the messages, and GNU time reports the peak RSS of the whole process. It stops
    // once every row is acknowledged; only a stream that stands still for 120 s ends it
    // sooner (and fails the count below).
    let ran = std::process::Command::new("/usr/bin/time")
        .arg("-v")
        .arg(crate::process::runner_binary())
        .arg("--connector")
        .arg(&connector)
        .arg("--plugin")
        .arg(crate::fixture::plugin_path())
        .arg("--state")
        .arg(dir.join("source.state"))
        .args(["--output", "/dev/null", "--idle-exit", "120s"])
        .args(["--max-messages", &rows.to_string()])
        .output()
        .expect("run the runner under /usr/bin/time (apt-get install time)");
    let stderr = String::from_utf8_lossy(&ran.stderr);
    assert!(ran.status.success(), "the runner failed:\n{stderr}");
    let number_after = |prefix: &str| -> u64 {
        stderr
            .lines()
            .find_map(|l| l.trim().strip_prefix(prefix))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no {prefix:?} in the output:\n{stderr}"))
    };
    let peak_kib = number_after("Maximum resident set size (kbytes):");
    let summary = stderr
        .lines()
        .find(|l| l.starts_with("INFO runner: stopped"))
        .unwrap_or_else(|| panic!("no runner summary:\n{stderr}"));
    let messages: i64 = summary
        .rsplit(", ")
        .next()
        .and_then(|m| m.strip_suffix(" messages"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("cannot read the message count from {summary:?}"));
    let took = streaming.elapsed();
    let bound_kib = 64 * 1024 + 3 * MAX_BATCH_BYTES / 1024;
    eprintln!(
        "memory: {rows} rows of 1 KiB written in {wrote:?}, streamed in {took:?} ({:.0} rows/s); peak RSS {} MiB, bound {} MiB",
        rows as f64 / took.as_secs_f64(),
        peak_kib / 1024,
        bound_kib / 1024
    );
    assert_eq!(messages, rows, "every row was delivered once");
    assert!(
        peak_kib < bound_kib,
        "peak RSS {peak_kib} KiB exceeds 64 MiB + 3 x max_batch_bytes = {bound_kib} KiB"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
