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

//! Soak: the connector in `fluss-source-runner` child processes against a replicated cluster
//! (three tablet servers, replication factor 3) for `SOAK_SECONDS` (default 1800), while a
//! 3-bucket log table and a 3-bucket primary-key table are written without pause and random
//! faults hit the cluster and the host process: a bucket leader killed with -9, a tablet
//! server restarted, the coordinator restarted, a runner killed with -9 and restarted from its
//! state file. At the end every acknowledged write must have arrived (losses must be 0);
//! repeats, faults, and the runners' RSS and open fds (sampled every 10 s) are printed.
//!
//! Not a CI test (`harness = false`, no criterion). Run:
//! `cargo build --release --workspace && SOAK_SECONDS=600 cargo bench --bench soak`.
//! `SOAK_SEED` replays a fault sequence; `SOAK_RUNNER`/`SOAK_PLUGIN` name the binaries
//! (default: next to this bench's profile directory, release first, then debug).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fluss_testkit::fluss::metadata::TablePath;
use fluss_testkit::write::continuous::{Pace, Writer};
use fluss_testkit::{Cluster, ClusterOptions, tables, unique_table};
use serde_json::Value;

const ROUND: i64 = 50;
const KEYS: i64 = 1000;
const FLUSH_TIMEOUT: Duration = Duration::from_secs(60);
const SAMPLE_EVERY: Duration = Duration::from_secs(10);

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(default)
}

/// A small deterministic generator (the seed is printed).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// `target/<profile>/<name>`: release first, then debug, unless `env` names it.
fn binary(env: &str, name: &str) -> PathBuf {
    if let Ok(path) = std::env::var(env) {
        return PathBuf::from(path);
    }
    let exe = std::env::current_exe().expect("bench path");
    let target = exe
        .parent()
        .and_then(|deps| deps.parent())
        .and_then(|profile| profile.parent())
        .expect("target directory");
    for profile in ["release", "debug"] {
        let path = target.join(profile).join(name);
        if path.exists() {
            return path;
        }
    }
    panic!(
        "{name} not found under {}; build it with `cargo build --release --workspace` or set {env}",
        target.display()
    );
}

// ------------------------------------------------------------------------------ writers

/// How the writers write: rounds of 50 rows over 1000 keys, flushed, then a pause.
const PACE: Pace = Pace {
    round: ROUND,
    keys: KEYS,
    delete_every: 0,
    flush_timeout: FLUSH_TIMEOUT,
    pause: Duration::from_millis(200),
    label: None,
};

// ------------------------------------------------------------------------------ runners

/// One connector in a `fluss-source-runner` child: restarted from its state file after a
/// kill, a new output file per run.
struct Connector {
    name: &'static str,
    dir: PathBuf,
    child: Child,
    runs: usize,
    kills: usize,
    /// Runs that ended by themselves.
    exits: usize,
    /// `(rss KiB, open fds)` per sample of the current run, and of every run.
    samples: Vec<(u64, usize)>,
}

impl Connector {
    fn start(name: &'static str, dir: PathBuf, config: &Value) -> Self {
        std::fs::create_dir_all(&dir).expect("connector dir");
        let mut text = String::from(
            "type = \"source\"\nkey = \"soak\"\nenabled = true\nversion = 1\nname = \"soak\"\npath = \"unused\"\n\n[[streams]]\nstream = \"s\"\ntopic = \"t\"\nschema = \"json\"\n\n[plugin_config]\n",
        );
        for (key, value) in config.as_object().expect("config object") {
            text.push_str(&format!("{key} = {value}\n"));
        }
        std::fs::write(dir.join("connector.toml"), text).expect("connector file");
        let child = Self::spawn(&dir, 0);
        Self {
            name,
            dir,
            child,
            runs: 1,
            kills: 0,
            exits: 0,
            samples: Vec::new(),
        }
    }

    fn spawn(dir: &Path, run: usize) -> Child {
        let stderr = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("runner.stderr"))
            .expect("stderr file");
        Command::new(binary("SOAK_RUNNER", "fluss-source-runner"))
            .arg("--connector")
            .arg(dir.join("connector.toml"))
            .arg("--plugin")
            .arg(binary("SOAK_PLUGIN", "libiggy_connector_fluss_source.so"))
            .arg("--state")
            .arg(dir.join("source.state"))
            .arg("--output")
            .arg(dir.join(format!("out-{run:03}.jsonl")))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .expect("start fluss-source-runner")
    }

    /// kill -9 and a restart from the state file.
    fn crash(&mut self) {
        self.child.kill().expect("kill runner");
        self.child.wait().expect("reap runner");
        self.kills += 1;
        self.child = Self::spawn(&self.dir, self.runs);
        self.runs += 1;
    }

    /// Restarts the runner if it ended by itself (e.g. `open` failed while a server was down);
    /// returns whether it had.
    fn revive(&mut self) -> bool {
        match self.child.try_wait() {
            Ok(Some(status)) => {
                println!(
                    "soak: {}: runner exited by itself ({status}); restarting it",
                    self.name
                );
                self.exits += 1;
                self.child = Self::spawn(&self.dir, self.runs);
                self.runs += 1;
                true
            }
            _ => false,
        }
    }

    fn sample(&mut self) {
        let pid = self.child.id();
        let rss = std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("VmRSS:"))
                    .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
            })
            .unwrap_or(0);
        let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count());
        self.samples.push((rss, fds));
    }

    /// Every complete output line of every run, run by run.
    fn lines(&self) -> Vec<Vec<Value>> {
        (0..self.runs)
            .map(|run| {
                let text = std::fs::read_to_string(self.dir.join(format!("out-{run:03}.jsonl")))
                    .unwrap_or_default();
                let complete = &text[..text.rfind('\n').map_or(0, |e| e + 1)];
                complete
                    .lines()
                    .filter_map(|l| serde_json::from_str(l).ok())
                    .collect()
            })
            .collect()
    }

    fn errors(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.join("runner.stderr"))
            .unwrap_or_default()
            .lines()
            .filter(|l| l.starts_with("ERROR ") || l.starts_with("WARN "))
            .map(str::to_owned)
            .collect()
    }
}

fn key_of(payload: &Value) -> String {
    match &payload["name"] {
        Value::String(name) if name.starts_with('w') => name.clone(),
        _ => payload["id"].to_string(),
    }
}

fn count_lines(dir: &Path, runs: usize) -> usize {
    (0..runs)
        .map(|run| {
            std::fs::read(dir.join(format!("out-{run:03}.jsonl")))
                .map_or(0, |b| b.iter().filter(|c| **c == b'\n').count())
        })
        .sum()
}

// ------------------------------------------------------------------------------ main

fn main() {
    // `cargo bench` passes `--bench`; nothing to parse.
    let seconds = env_u64("SOAK_SECONDS", 1800);
    let seed = env_u64(
        "SOAK_SEED",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64),
    );
    println!("soak: {seconds} s, SOAK_SEED={seed}");
    let mut rng = Rng(seed);
    let cluster = Arc::new(Cluster::start(ClusterOptions::replicated()));
    println!(
        "soak: cluster serves after {:.1?}, RSS {:?} KiB",
        cluster.start_time().unwrap_or_default(),
        cluster.memory()
    );
    let log_path = unique_table("soak_log");
    let pk_path = unique_table("soak_pk");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let conn = cluster.connection().await;
        let admin = conn.get_admin().expect("admin");
        tables::create_log_table(&admin, &log_path, tables::sample_log_schema(), 3).await;
        tables::create_pk_table(&admin, &pk_path, tables::sample_pk_schema(), 3).await;
    });
    let work = std::env::temp_dir().join(format!("fluss-soak-{}", std::process::id()));
    let config = |path: &TablePath, extra: &[(&str, &str)]| {
        let mut c = serde_json::json!({
            "bootstrap_servers": cluster.bootstrap(),
            "database": tables::TEST_DATABASE,
            "table": path.table(),
            "batch_size": 500,
            // Measures the changelog path (`full` snapshots are measured by benches/snapshot.rs).
            "starting_offset": "earliest",
        });
        for (k, v) in extra {
            c[*k] = Value::from(*v);
        }
        c
    };
    let mut connectors = [
        Connector::start("log", work.join("log"), &config(&log_path, &[])),
        Connector::start(
            "pk",
            work.join("pk"),
            &config(&pk_path, &[("changelog_format", "flat")]),
        ),
    ];
    let writers = [
        Writer::start(cluster.clone(), log_path.clone(), false, PACE),
        Writer::start(cluster.clone(), pk_path.clone(), true, PACE),
    ];
    let watched = [&log_path, &pk_path];

    let started = Instant::now();
    let end = started + Duration::from_secs(seconds);
    let mut next_sample = Instant::now() + SAMPLE_EVERY;
    let mut next_fault = Instant::now() + Duration::from_secs(30 + rng.below(30));
    let mut faults: BTreeMap<&'static str, usize> = BTreeMap::new();
    while Instant::now() < end {
        if Instant::now() >= next_sample {
            for c in &mut connectors {
                c.revive();
                c.sample();
            }
            next_sample += SAMPLE_EVERY;
        }
        if Instant::now() >= next_fault {
            let kind = match rng.below(4) {
                0 => {
                    let table = watched[rng.below(2) as usize];
                    let bucket = rng.below(3) as i32;
                    if let Some(leader) = cluster.bucket_leader(table, None, bucket) {
                        cluster.kill_tablet(leader);
                        cluster.wait_new_leader(
                            table,
                            None,
                            bucket,
                            leader,
                            Duration::from_secs(90),
                        );
                        cluster.start_tablet(leader);
                        cluster.wait_in_sync(&watched, Duration::from_secs(180));
                    }
                    "leader kill -9"
                }
                1 => {
                    let i = rng.below(cluster.tablets() as u64) as usize;
                    cluster.stop_tablet(i);
                    cluster.start_tablet(i);
                    cluster.wait_in_sync(&watched, Duration::from_secs(180));
                    "tablet restart"
                }
                2 => {
                    cluster.restart_coordinator();
                    "coordinator restart"
                }
                _ => {
                    connectors[rng.below(2) as usize].crash();
                    "runner kill -9"
                }
            };
            *faults.entry(kind).or_default() += 1;
            println!(
                "soak: {:>5.0?} {kind}; written {} + {}, delivered {} + {}",
                started.elapsed(),
                writers[0].count(),
                writers[1].count(),
                count_lines(&connectors[0].dir, connectors[0].runs),
                count_lines(&connectors[1].dir, connectors[1].runs),
            );
            let _ = std::io::stdout().flush();
            next_fault = Instant::now() + Duration::from_secs(20 + rng.below(40));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let [log_writer, pk_writer] = writers;
    let written = [log_writer.finish(), pk_writer.finish()];

    // Every acknowledged write must arrive; wait for the runners to drain.
    let drain = Instant::now();
    let mut report = Vec::new();
    for (c, w) in connectors.iter_mut().zip(&written) {
        let acked: HashSet<&String> = w.acked.iter().collect();
        let lost = loop {
            let keys: HashSet<String> = c
                .lines()
                .iter()
                .flatten()
                .map(|l| key_of(&l["payload"]))
                .collect();
            let lost = acked.iter().filter(|k| !keys.contains(**k)).count();
            if lost == 0 || drain.elapsed() > Duration::from_secs(300) {
                break lost;
            }
            c.revive();
            std::thread::sleep(Duration::from_secs(2));
        };
        c.sample();
        let runs = c.lines();
        let mut order_breaks = 0;
        for run in &runs {
            let mut last: HashMap<i64, i64> = HashMap::new();
            for l in run {
                let bucket = l["headers"]["fluss_bucket"].as_i64().unwrap_or(-1);
                let offset = l["headers"]["fluss_offset"].as_i64().unwrap_or(-1);
                if last
                    .insert(bucket, offset)
                    .is_some_and(|prev| offset <= prev)
                {
                    order_breaks += 1;
                }
            }
        }
        let all: Vec<String> = runs
            .iter()
            .flatten()
            .map(|l| key_of(&l["payload"]))
            .collect();
        let distinct: HashSet<&String> = all.iter().collect();
        let unconfirmed: HashSet<&String> = w.unconfirmed.iter().collect();
        let invented = distinct
            .iter()
            .filter(|k| !acked.contains(**k) && !unconfirmed.contains(**k))
            .count();
        let rss: Vec<u64> = c.samples.iter().map(|s| s.0).collect();
        let fds: Vec<usize> = c.samples.iter().map(|s| s.1).collect();
        report.push(format!(
            "soak: {}: {} acknowledged writes ({} unconfirmed, {} writer rebuilds), {} messages in {} runs ({} kills, {} exits), \
             lost {lost}, repeats {}, invented {invented}, order breaks within a run {order_breaks}, \
             longest flush {:.1?}; RSS KiB first {} last {} peak {}; fds first {} last {} peak {}; \
             {} ERROR/WARN lines",
            c.name,
            w.acked.len(),
            w.unconfirmed.len(),
            w.rebuilds,
            all.len(),
            c.runs,
            c.kills,
            c.exits,
            all.len() - distinct.len(),
            w.longest_flush,
            rss.first().copied().unwrap_or(0),
            rss.last().copied().unwrap_or(0),
            rss.iter().max().copied().unwrap_or(0),
            fds.first().copied().unwrap_or(0),
            fds.last().copied().unwrap_or(0),
            fds.iter().max().copied().unwrap_or(0),
            c.errors().len(),
        ));
        if lost > 0 {
            report.push(format!(
                "soak: {}: LOSS of {lost} acknowledged writes",
                c.name
            ));
        }
    }
    for c in &mut connectors {
        let _ = c.child.kill();
        let _ = c.child.wait();
    }
    println!("soak: faults {faults:?} in {:.0?}", started.elapsed());
    println!("soak: cluster RSS at the end {:?} KiB", cluster.memory());
    for line in &report {
        println!("{line}");
    }
    for c in &connectors {
        let errors = c.errors();
        println!(
            "soak: {}: first ERROR/WARN lines: {:#?}",
            c.name,
            &errors[..errors.len().min(10)]
        );
    }
    let lost = report.iter().any(|l| l.contains("LOSS"));
    if lost {
        println!("soak: FAILED (kept {})", work.display());
        std::process::exit(1);
    }
    let _ = std::fs::remove_dir_all(&work);
}
