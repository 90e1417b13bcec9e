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

//! The plugin at scale, through the real `iggy-server` and `iggy-connectors` runtime (as
//! `benches/runtime.rs`, whose machinery it shares through `benches/common/runtime.rs`), against
//! a local Fluss cluster: what many partitions, an idle table of thousands of buckets and many
//! connectors in one runtime cost, each as a ratio to its small counterpart in the same run.
//!
//! One file: the phases share the tables and the cluster, and their figures are printed side by
//! side.
//!
//! Phases (`SCALE_PHASES`, a comma list; default all, in this order):
//! - `log`: the same `SCALE_ROWS` rows (the 10 mixed columns of the other benches, `qty = id %
//!   P`) in a log table of 2 buckets (`log2`) and in one partitioned by `qty` into P partitions
//!   of 2 buckets each (`part`), each read from `earliest` as JSON (the defaults) and as Arrow
//!   IPC (stream `schema = "raw"`);
//! - `idle`: a connector at `latest` on a table nobody writes to, for `SCALE_IDLE_SECS`:
//!   `part` (P x 2 buckets), `part` with `metrics_address` set (the high watermarks are listed
//!   every 5 s for the metrics), and `log2`; before them the Fluss servers alone over
//!   `SCALE_IDLE_BASELINE_SECS`. Figures: CPU seconds per minute of `iggy-connectors`, of the
//!   Fluss JVMs (their `/proc/PID/stat`) and of the machine; the runtime's traffic to each Fluss
//!   server over the window (`ss -ti`'s `data_segs_out` and bytes of the sockets `ss -p` names
//!   with its pid: TCP segments are about requests, but Nagle may merge small ones); and, over
//!   `SCALE_IDLE_CENSUS_SECS` after the window, the requests per second by Fluss API, counted
//!   exactly from the frames of the runtime's socket writes (`strace -f -yy -xx` of
//!   `sendto`/`write`; each frame is a 4-byte length and a header that starts with the API
//!   key). Also the time from the runtime's start to the plugin's `opened` line;
//! - `multi`: `SCALE_TABLES` (10) connectors in one runtime, each on a 2-bucket log table of its
//!   own holding `SCALE_ROWS / SCALE_TABLES` rows and publishing to a topic of its own, against
//!   one connector on `log2` (`SCALE_ROWS` rows), in JSON; each with its ceiling: the SDK's test
//!   source (`sdk/test_source`) in as many connectors, sending the same messages;
//! - `pk`: a primary-key table (`(id, qty)`) of `SCALE_PK_ROWS` rows with 2 buckets (`pk2`) and
//!   one partitioned by `qty` into `SCALE_PK_PARTITIONS` x 2 buckets (`pkpart`), read with
//!   `starting_offset = "full"` (every bucket's KV snapshot, then its changelog) as Debezium JSON
//!   and as Arrow IPC, once every bucket's latest KV snapshot holds all of its rows.
//!
//! Each run is one round in a fresh server and runtime. Its figures: rows/s from the first
//! message to the last landing in the topics (the server's timestamps), the time from the
//! runtime's start to the first message (the runtime's start, the plugin's open, the first
//! batch), `iggy-connectors`' peak RSS (VmHWM), the runtime's saves of the connector's state
//! file (counted with inotify: how many, and the file's size after each), and the CPU the
//! whole machine spent per row, with the 1-minute load average at the run's start (the
//! machine is shared: read the ratios, which are taken within one run), and the bytes the
//! runtime logged. With `SCALE_CENSUS=1` each run's Fluss requests are counted by API as the
//! idle phase counts them (over the whole run, under strace: its rates are then not comparable).
//!
//! Partitions are created one by one through the admin API (`max.partition.num`, 1000 by
//! default in Fluss 0.9.1, is the most a table takes; the bench stops at the first refusal and
//! says so), then each partition's rows are appended as Arrow batches, two per partition (one
//! per bucket).
//!
//! Run (the bench loads `target/release/libiggy_connector_fluss_source.so` and
//! `libiggy_test_source.so`; the Iggy binaries come from `IGGY_BIN_DIR`):
//! ```sh
//! cargo build --release -p iggy_connector_fluss_source -p iggy_test_source
//! IGGY_BIN_DIR=/tmp/iggybin cargo bench --bench scale
//! # a quick pass:
//! SCALE_ROWS=200000 SCALE_PARTITIONS=20 SCALE_IDLE_SECS=30 IGGY_BIN_DIR=/tmp/iggybin cargo bench --bench scale
//! ```
//! Sizes: `SCALE_ROWS` (default 2,000,000), `SCALE_PARTITIONS` (P, default 1000),
//! `SCALE_PK_ROWS` (default `SCALE_ROWS`), `SCALE_PK_PARTITIONS` (default P), `SCALE_TABLES`
//! (default 10), `SCALE_IDLE_SECS` (default 300), `SCALE_IDLE_BASELINE_SECS` (default 60),
//! `SCALE_IDLE_WARMUP_SECS` (after the plugin opened, before the window; default 15),
//! `SCALE_IDLE_CENSUS_SECS` (default 30; 0: no strace), `SCALE_CENSUS=1` (the requests of every
//! throughput run), `SCALE_REPEAT` (rounds of each throughput run of `log` and `pk`, the shapes
//! in turn, default 1: the round with the median rate is shown, with the median peak RSS).
//! `SCALE_PHASES`, `SCALE_FORMATS` (`json,ipc`: the formats of `log` and `pk`) and
//! `SCALE_IDLE_SHAPES` (`part,part_metrics,log2`) select; `FLUSS_BOOTSTRAP`
//! names a running cluster instead of a fresh one (the Fluss CPU figures then need its pids and
//! are left out); `FLUSS_TABLET_HEAP` (default here 2g: thousands of buckets),
//! `RUNTIME_KEEP_LOGS=DIR` (each run's runtime log), `SCALE_PERF=DIR` (a `perf record -a -g`
//! of each throughput run and idle window; `perf report --pid PID`, the pid in the file name,
//! keeps the runtime's samples), `FLUSS_PLUGIN_LIBRARY=PATH` (another build), `SCALE_AB=PATH`
//! (each `log` and `pk` run also with the build at PATH, named `…@b`, in turn with this one's,
//! each against the base table's run of the same build: an A/B on one machine state).

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::census::{Census, RequestCensus, api_name};
use common::runtime::{
    CeilingShape, Outcome, Run, STREAM, ceiling, fmt_rate, measure, plugin_config, start_perf,
    stop_perf, tokio_runtime,
};
use fluss_testkit::fluss::client::FlussConnection;
use fluss_testkit::fluss::metadata::TablePath;
use fluss_testkit::iggy::{ConnectorsRuntime, IggyServer, SourceConnector, Stop};
use fluss_testkit::{Cluster, ClusterOptions, metrics, tables, write};
use serde_json::{Value, json};

/// The partition key: the INT column `qty`, `id % P`.
const PARTITION_KEY: &str = "qty";
/// Buckets of every table (of every partition).
const BUCKETS: i32 = 2;
/// Most rows in one appended batch.
const LOAD_BATCH: usize = 20_000;
/// Longest wait for a connector's `opened` line.
const OPEN_TIMEOUT: Duration = Duration::from_secs(900);

/// The sizes and selections of one invocation.
struct Settings {
    rows: usize,
    partitions: usize,
    pk_rows: usize,
    pk_partitions: usize,
    tables: usize,
    idle: Duration,
    idle_baseline: Duration,
    idle_warmup: Duration,
    census: Duration,
    /// Count each throughput run's Fluss requests (`SCALE_CENSUS=1`).
    census_runs: bool,
    phases: Vec<String>,
    /// The payload formats of the `log` and `pk` phases (`SCALE_FORMATS`: `json`, `ipc`).
    formats: Vec<Format>,
    idle_shapes: Vec<String>,
    /// Rounds of each throughput run of the `log` and `pk` phases (`SCALE_REPEAT`), in turn;
    /// each run's round with the median rate is shown, with the median peak RSS of its rounds.
    repeat: usize,
}

fn list(name: &str, default: &str) -> Vec<String> {
    std::env::var(name)
        .unwrap_or_else(|_| default.to_owned())
        .split(',')
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

impl Settings {
    fn from_env() -> Settings {
        let rows = common::env_usize("SCALE_ROWS", 2_000_000);
        let partitions = common::env_usize("SCALE_PARTITIONS", 1000).max(1);
        let secs = |name, default| Duration::from_secs(common::env_usize(name, default) as u64);
        Settings {
            rows,
            partitions,
            pk_rows: common::env_usize("SCALE_PK_ROWS", rows),
            pk_partitions: common::env_usize("SCALE_PK_PARTITIONS", partitions).max(1),
            tables: common::env_usize("SCALE_TABLES", 10).max(1),
            idle: secs("SCALE_IDLE_SECS", 300),
            idle_baseline: secs("SCALE_IDLE_BASELINE_SECS", 60),
            idle_warmup: secs("SCALE_IDLE_WARMUP_SECS", 15),
            census: secs("SCALE_IDLE_CENSUS_SECS", 30),
            census_runs: std::env::var("SCALE_CENSUS").is_ok_and(|v| v == "1"),
            phases: list("SCALE_PHASES", "log,idle,multi,pk"),
            formats: {
                let named = list("SCALE_FORMATS", "json,ipc");
                [Format::Json, Format::Ipc]
                    .into_iter()
                    .filter(|f| named.iter().any(|n| n == f.name()))
                    .collect()
            },
            idle_shapes: list("SCALE_IDLE_SHAPES", "part,part_metrics,log2"),
            repeat: common::env_usize("SCALE_REPEAT", 1).max(1),
        }
    }

    fn phase(&self, name: &str) -> bool {
        self.phases.iter().any(|p| p == name)
    }
}

/// A table of the bench and what it holds.
#[derive(Clone)]
struct Table {
    path: TablePath,
    rows: usize,
    /// Partitions (0: not partitioned).
    partitions: usize,
}

/// The ids of partition `p` of `partitions`: `p, p + P, …` below `rows`.
fn partition_ids(p: usize, partitions: usize, rows: usize) -> Vec<i64> {
    (p..rows).step_by(partitions).map(|i| i as i64).collect()
}

/// Every row `0..rows` (`qty = id % modulus`) in batches of [`LOAD_BATCH`].
fn contiguous_batches(
    rows: usize,
    modulus: usize,
) -> impl Iterator<Item = arrow_array::RecordBatch> {
    (0..rows).step_by(LOAD_BATCH).map(move |start| {
        let ids: Vec<i64> = (start..(start + LOAD_BATCH).min(rows))
            .map(|i| i as i64)
            .collect();
        common::mixed_batch_of(&ids, modulus as i64)
    })
}

/// The same rows partition by partition: each partition's in (at least) two batches, one per
/// bucket with the round-robin writer.
fn partition_batches(
    rows: usize,
    partitions: usize,
) -> impl Iterator<Item = arrow_array::RecordBatch> {
    (0..partitions).flat_map(move |p| {
        let ids = partition_ids(p, partitions, rows);
        let chunk = ids.len().div_ceil(BUCKETS as usize).clamp(1, LOAD_BATCH);
        ids.chunks(chunk)
            .map(|c| common::mixed_batch_of(c, partitions as i64))
            .collect::<Vec<_>>()
    })
}

/// Creates a table (`pk`: primary key `(id, qty)`), partitioned into `partitions` by `qty`
/// unless that is 0, and writes `rows` rows into it (`qty = id % modulus` in a table without
/// partitions). Returns the table and the partitions the cluster accepted: fewer than asked
/// when it refused one, and then the rows' `qty` is `id %` that many.
async fn load(
    cluster: &Cluster,
    name: &str,
    pk: bool,
    rows: usize,
    partitions: usize,
    modulus: usize,
) -> Table {
    let conn = FlussConnection::new(cluster.config())
        .await
        .expect("connect");
    let admin = conn.get_admin().expect("admin");
    let path = tables::unique_table(name);
    let schema = if pk {
        common::mixed_pk_schema()
    } else {
        common::mixed_schema()
    };
    let started = Instant::now();
    let mut made = 0;
    if partitions > 0 {
        tables::create_partitioned_table(&admin, &path, schema, PARTITION_KEY, BUCKETS).await;
        let values: Vec<String> = (0..partitions).map(|p| p.to_string()).collect();
        let (infos, refused) =
            tables::create_partitions(&admin, &path, PARTITION_KEY, &values).await;
        made = infos.len();
        if let Some(refused) = refused {
            eprintln!(
                "scale: the cluster accepts {made} partitions of {path}, not {partitions}: \
                 {refused}"
            );
        }
        eprintln!(
            "scale: {path}: {made} partitions x {BUCKETS} buckets in {:.1?}",
            started.elapsed()
        );
    } else if pk {
        tables::create_pk_table(&admin, &path, schema, BUCKETS).await;
    } else {
        tables::create_log_table(&admin, &path, schema, BUCKETS).await;
    }
    let started = Instant::now();
    let written = match (pk, partitions > 0) {
        (false, false) => {
            write::append_batches(&conn, &path, contiguous_batches(rows, modulus)).await
        }
        (false, true) => write::append_batches(&conn, &path, partition_batches(rows, made)).await,
        (true, false) => {
            write::upsert_batches(&conn, &path, contiguous_batches(rows, modulus)).await
        }
        (true, true) => write::upsert_batches(&conn, &path, partition_batches(rows, made)).await,
    };
    eprintln!(
        "scale: wrote {written} rows into {path} in {:.1?}",
        started.elapsed()
    );
    Table {
        path,
        rows: written,
        partitions: made,
    }
}

/// How a run's payloads are encoded.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Format {
    /// JSON rows (Debezium events on a primary-key table), stream `schema = "json"`.
    Json,
    /// Arrow IPC, stream `schema = "raw"`.
    Ipc,
}

impl Format {
    fn name(self) -> &'static str {
        match self {
            Format::Json => "json",
            Format::Ipc => "ipc",
        }
    }
}

/// A run of the plugin with one connector per table of `tables`, reading all of their rows
/// (`census`: its requests counted, [`Run::census`]).
fn plugin_run(
    cluster: &Cluster,
    label: &str,
    plugin: &Path,
    tables: &[&Table],
    format: Format,
    extra: Value,
    census: bool,
) -> Run {
    let mut extra = extra;
    if format == Format::Ipc {
        extra
            .as_object_mut()
            .expect("object")
            .insert("payload_format".into(), json!("arrow_ipc"));
    }
    let rows: usize = tables.iter().map(|t| t.rows).sum();
    Run {
        label: label.to_owned(),
        library: plugin.to_owned(),
        plugin_configs: tables
            .iter()
            .map(|t| plugin_config(cluster, &t.path, &extra))
            .collect(),
        stream_schema: match format {
            Format::Json => "json",
            Format::Ipc => "raw",
        },
        batch_length: None,
        linger_time: None,
        messages: (format == Format::Json).then_some(rows as u64),
        // Arrow IPC ends when the topics stop growing: a plugin reading many partitions may
        // pause for seconds (listing their offsets) between two messages.
        settle: Some(Duration::from_secs(20)),
        census,
    }
}

/// One measured run, and the run its ratio is taken against (its name).
struct Measured {
    name: String,
    outcome: Outcome,
    base: Option<String>,
}

/// Runs `run` and checks that it delivered `rows` rows; with `SCALE_PERF=DIR`, a
/// `perf record -a -g` of the run into DIR (as `RUNTIME_PERF` in `benches/runtime.rs`).
fn measured(base_dir: &Path, run: &Run, rows: usize, base: Option<&str>) -> Measured {
    let perf = std::env::var_os("SCALE_PERF").map(PathBuf::from);
    if let Some(dir) = &perf {
        std::fs::create_dir_all(dir).expect("perf dir");
    }
    let outcome = measure(base_dir, run, perf.as_deref());
    assert_eq!(outcome.rows, rows as u64, "{}: rows delivered", run.label);
    eprintln!(
        "scale: {:<14} {:>9}/s, first message after {:.2} s, RSS {:.1} MiB, {} saves of {:.0} B, machine {:.2} us/row, load {:.2}",
        run.label,
        fmt_rate(outcome.rate()),
        outcome.first_after,
        outcome.rss_kib as f64 / 1024.0,
        outcome.saves.count,
        outcome.saves.per_save(),
        outcome.machine_us_per_row(),
        outcome.load
    );
    Measured {
        name: run.label.clone(),
        outcome,
        base: base.map(str::to_owned),
    }
}

/// The throughput runs of a phase: for each format of `SCALE_FORMATS` and each build of
/// `builds` (a name suffix and its library), the base table and the other of `tables` (each
/// named), read with `extra` in the plugin's configuration; `SCALE_REPEAT` rounds of each in
/// turn (so a slow moment of the machine does not fall on one run's rounds only), each run
/// against the base table's run of its format and build, the median round of each shown.
fn throughput(
    cluster: &Cluster,
    settings: &Settings,
    dir: &Path,
    builds: &[(String, PathBuf)],
    tables: [(&str, &Table); 2],
    extra: Value,
) -> Vec<Measured> {
    let mut runs = Vec::new();
    for &format in &settings.formats {
        let mut shapes = Vec::new();
        for (suffix, library) in builds {
            let base = format!("{}_{}{suffix}", tables[0].0, format.name());
            for (name, table) in tables {
                let name = format!("{name}_{}{suffix}", format.name());
                let base_of = (name != base).then(|| base.clone());
                shapes.push((name, table, library, base_of));
            }
        }
        for _ in 0..settings.repeat {
            for (name, table, library, base_of) in &shapes {
                let run = plugin_run(
                    cluster,
                    name,
                    library,
                    &[table],
                    format,
                    extra.clone(),
                    settings.census_runs,
                );
                runs.push(measured(dir, &run, table.rows, base_of.as_deref()));
            }
        }
    }
    medians(runs)
}

/// Of the rounds of each run in `all` (in their first round's order), the one with the
/// median rate, showing the median of the rounds' peak RSS (a peak moves from round to round,
/// as the allocator returns memory sooner or later); with more than one round, every round's
/// rate and peak RSS are printed first.
fn medians(all: Vec<Measured>) -> Vec<Measured> {
    let mut names: Vec<String> = Vec::new();
    for m in &all {
        if !names.contains(&m.name) {
            names.push(m.name.clone());
        }
    }
    let mut all: Vec<Option<Measured>> = all.into_iter().map(Some).collect();
    names
        .iter()
        .map(|name| {
            let mut rounds: Vec<Measured> = all
                .iter_mut()
                .filter(|m| m.as_ref().is_some_and(|m| &m.name == name))
                .filter_map(Option::take)
                .collect();
            let mut peaks: Vec<u64> = rounds.iter().map(|m| m.outcome.rss_kib).collect();
            peaks.sort_unstable();
            rounds.sort_by(|a, b| a.outcome.rate().total_cmp(&b.outcome.rate()));
            if rounds.len() > 1 {
                let rates: Vec<String> =
                    rounds.iter().map(|m| fmt_rate(m.outcome.rate())).collect();
                let peaks: Vec<String> = peaks
                    .iter()
                    .map(|kib| format!("{:.1}", *kib as f64 / 1024.0))
                    .collect();
                eprintln!(
                    "scale: {name:<14} rounds (rows/s, sorted): {}; peak RSS MiB (sorted): {}",
                    rates.join(", "),
                    peaks.join(", ")
                );
            }
            let mut median = rounds.swap_remove(rounds.len() / 2);
            median.outcome.rss_kib = peaks[peaks.len() / 2];
            median
        })
        .collect()
}

/// The throughput table of `runs`: each against its base run; the requests of runs counted
/// with `SCALE_CENSUS` (only those to a server of `servers`, if known).
fn print_runs(title: &str, runs: &[Measured], servers: &[Server]) {
    println!("\n{title}");
    println!(
        "{:<14} {:>9} {:>10} {:>8} {:>8} {:>8} {:>7} {:>8} {:>8} {:>8} {:>8} {:>6}",
        "run",
        "rows",
        "rows/s",
        "vs base",
        "1st msg",
        "RSS MiB",
        "saves",
        "B/save",
        "st B/row",
        "us/row",
        "log KiB",
        "load"
    );
    for m in runs {
        let o = &m.outcome;
        let ratio = m
            .base
            .as_ref()
            .and_then(|b| runs.iter().find(|r| &r.name == b))
            .map_or("".to_owned(), |b| {
                format!("{:.2}x", o.rate() / b.outcome.rate())
            });
        println!(
            "{:<14} {:>9} {:>10} {:>8} {:>7.2}s {:>8.1} {:>7} {:>8.0} {:>8.2} {:>8.2} {:>8.0} {:>6.2}",
            m.name,
            o.rows,
            fmt_rate(o.rate()),
            ratio,
            o.first_after,
            o.rss_kib as f64 / 1024.0,
            o.saves.count,
            o.saves.per_save(),
            o.saves.bytes as f64 / o.rows.max(1) as f64,
            o.machine_us_per_row(),
            o.log_bytes as f64 / 1024.0,
            o.load,
        );
    }
    println!(
        "(rows/s: first to last message in the topics; vs base: rows/s against the run named in \
         its base; 1st msg: from the runtime's start; RSS: iggy-connectors peak; saves: the \
         runtime's writes of the state file(s), B/save their mean size, st B/row: state bytes \
         written per row; us/row: CPU of every process on the machine per row; log: the \
         runtime's log; load: 1-minute load average at the start)"
    );
    for m in runs {
        if let Some(requests) = &m.outcome.requests {
            let to_fluss: Vec<_> = requests
                .iter()
                .filter(|((port, _), _)| to_fluss(servers, *port))
                .collect();
            println!(
                "{:<14} {} requests to Fluss (under strace): {}",
                m.name,
                to_fluss.iter().map(|(_, n)| **n).sum::<u64>(),
                to_fluss
                    .iter()
                    .map(|((port, key), n)| format!(
                        "{} {} {n}",
                        server_name(servers, *port),
                        api_name(*key)
                    ))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
}

/// A Fluss server process of a local cluster: name, pid, client port.
type Server = (String, String, Option<u16>);

/// Whether `port` is a Fluss server's (any port when the servers are unknown).
fn to_fluss(servers: &[Server], port: u16) -> bool {
    servers.is_empty() || servers.iter().any(|s| s.2 == Some(port))
}

/// The name of the server listening on `port`, else `:port`.
fn server_name(servers: &[Server], port: u16) -> String {
    servers
        .iter()
        .find(|(_, _, p)| *p == Some(port))
        .map_or(format!(":{port}"), |(name, _, _)| name.clone())
}

/// The Fluss server processes of a local cluster: name, pid, client port.
fn fluss_servers(cluster: &Cluster) -> Vec<Server> {
    let Some(dir) = cluster.dir() else {
        return Vec::new();
    };
    let read = |sub: &str, name: &str| {
        std::fs::read_to_string(dir.join(sub).join(name))
            .ok()
            .map(|s| s.trim().to_owned())
    };
    let mut names: Vec<String> = std::fs::read_dir(dir.join("pids"))
        .map(|entries| {
            entries
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    // The script's watchdog has a pid file too; it is no server.
    names.retain(|n| n != "watchdog");
    names.sort();
    names
        .into_iter()
        .filter_map(|name| {
            let pid = read("pids", &name)?;
            let port = read("ports", &name).and_then(|p| p.parse().ok());
            Some((name, pid, port))
        })
        .collect()
}

/// The runtime's TCP traffic to one peer port (`ss -ti` counters of its sockets).
#[derive(Clone, Copy, Default, Debug)]
struct Traffic {
    connections: u64,
    segs_out: u64,
    segs_in: u64,
    bytes_out: u64,
    bytes_in: u64,
}

/// The counters of every established TCP socket of process `pid`, summed per peer port.
fn traffic(pid: u32) -> BTreeMap<u16, Traffic> {
    let out = std::process::Command::new("ss")
        .args(["-tinpH"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let tag = format!("pid={pid},");
    let mut per_port: BTreeMap<u16, Traffic> = BTreeMap::new();
    let mut current: Option<u16> = None;
    for line in out.lines() {
        if !line.starts_with(char::is_whitespace) {
            // State, Recv-Q, Send-Q, local, peer, users:(…)
            let fields: Vec<&str> = line.split_whitespace().collect();
            current = (fields.first() == Some(&"ESTAB") && line.contains(&tag))
                .then(|| fields.get(4)?.rsplit_once(':')?.1.parse().ok())
                .flatten();
            if let Some(port) = current {
                per_port.entry(port).or_default().connections += 1;
            }
            continue;
        }
        let Some(port) = current else { continue };
        let entry = per_port.entry(port).or_default();
        for field in line.split_whitespace() {
            let Some((key, value)) = field.split_once(':') else {
                continue;
            };
            let Ok(value) = value.parse::<u64>() else {
                continue;
            };
            match key {
                "data_segs_out" => entry.segs_out += value,
                "data_segs_in" => entry.segs_in += value,
                "bytes_sent" => entry.bytes_out += value,
                "bytes_received" => entry.bytes_in += value,
                _ => {}
            }
        }
    }
    per_port
}

/// CPU seconds of each Fluss server so far.
fn fluss_cpu(servers: &[Server]) -> Vec<f64> {
    servers
        .iter()
        .map(|(_, pid, _)| common::cpu_seconds(pid))
        .collect()
}

/// What an idle window measured.
struct Idle {
    name: String,
    /// Seconds from the runtime's start to the plugin's `opened` line.
    open: f64,
    window: f64,
    connector_cpu: f64,
    /// Per Fluss server, in the order of [`fluss_servers`].
    fluss: Vec<f64>,
    machine: f64,
    /// Per peer port: the counters' growth over the window.
    traffic: BTreeMap<u16, Traffic>,
    /// Connections per peer port at the end (a different number at the start is noted).
    reconnected: bool,
    rss_kib: u64,
    /// The plugin's WARN lines in the runtime log.
    warnings: usize,
    /// Bytes the runtime logged over the window.
    log_bytes: u64,
    /// `fluss_source_errors_total` and `fluss_source_outages_total`, with metrics on.
    errors: Option<(f64, f64)>,
    /// Requests per (peer port, API key) over the census after the window, and its seconds.
    census: Option<(Census, f64)>,
    load: f64,
}

/// The Fluss servers alone over `window`: CPU seconds of each, and of the machine.
fn fluss_alone(servers: &[Server], window: Duration) -> (Vec<f64>, f64) {
    let cpu = fluss_cpu(servers);
    let machine = common::machine_busy_seconds();
    std::thread::sleep(window);
    let after = fluss_cpu(servers);
    (
        after.iter().zip(&cpu).map(|(a, b)| a - b).collect(),
        common::machine_busy_seconds() - machine,
    )
}

/// One connector at `latest` on `table`, idle for `settings.idle` after it opened.
fn idle_run(
    base_dir: &Path,
    name: &str,
    plugin: &Path,
    config: Value,
    servers: &[Server],
    settings: &Settings,
) -> Idle {
    let dir = base_dir.join(name);
    let _ = std::fs::remove_dir_all(&dir);
    let mut server = IggyServer::start(&dir);
    let metrics_port = config
        .get("metrics_address")
        .and_then(Value::as_str)
        .and_then(|a| a.rsplit_once(':')?.1.parse::<u16>().ok());
    let connector = SourceConnector::new("bench", plugin, STREAM, "rows", "json", config);
    let load = common::load_average();
    let started = Instant::now();
    let mut runtime = ConnectorsRuntime::start(&server, &dir.join("runtime"), &[connector]);
    let pid = runtime.pid().expect("runtime pid");
    runtime.wait_for_log("opened", 1, OPEN_TIMEOUT);
    let open = started.elapsed().as_secs_f64();
    std::thread::sleep(settings.idle_warmup);
    let log_path = runtime.log_path();
    let log_size = || std::fs::metadata(&log_path).map_or(0, |m| m.len());
    let log_before = log_size();
    let before = (
        common::cpu_seconds(&pid.to_string()),
        fluss_cpu(servers),
        common::machine_busy_seconds(),
        traffic(pid),
        Instant::now(),
    );
    let perf = std::env::var_os("SCALE_PERF").and_then(|dir| {
        let dir = PathBuf::from(dir);
        std::fs::create_dir_all(&dir).expect("perf dir");
        start_perf(pid, &dir.join(format!("{name}-{pid}.data")))
    });
    let deadline = Instant::now() + settings.idle;
    while Instant::now() < deadline {
        std::thread::sleep((deadline - Instant::now()).min(Duration::from_secs(5)));
        assert!(
            runtime.is_running(),
            "{name}: iggy-connectors exited; see {}",
            runtime.log_path().display()
        );
    }
    stop_perf(perf);
    let window = before.4.elapsed().as_secs_f64();
    let connector_cpu = common::cpu_seconds(&pid.to_string()) - before.0;
    let fluss = fluss_cpu(servers)
        .iter()
        .zip(&before.1)
        .map(|(a, b)| a - b)
        .collect();
    let machine = common::machine_busy_seconds() - before.2;
    let after = traffic(pid);
    let log_bytes = log_size().saturating_sub(log_before);
    let rss_kib = common::peak_rss_kib(&pid.to_string());
    let errors = metrics_port.and_then(|port| {
        let (_, samples) = metrics::scrape(port).ok()?;
        let sum = |metric: &str| {
            samples
                .iter()
                .filter(|((n, _), _)| n == metric)
                .map(|(_, v)| v)
                .sum::<f64>()
        };
        Some((
            sum("fluss_source_errors_total"),
            sum("fluss_source_outages_total"),
        ))
    });
    let census = (!settings.census.is_zero())
        .then(|| RequestCensus::start(pid, &dir))
        .flatten()
        .and_then(|census| {
            std::thread::sleep(settings.census);
            census.finish()
        })
        .map(|counts| (counts, settings.census.as_secs_f64()));
    if census.is_none() && !settings.census.is_zero() {
        eprintln!("scale: {name}: no request census (strace could not attach)");
    }
    let warnings = runtime
        .log()
        .lines()
        .filter(|l| l.contains("WARN") && l.contains("fluss["))
        .count();
    runtime.stop(Stop::Kill);
    server.stop();
    if let Some(keep) = std::env::var_os("RUNTIME_KEEP_LOGS") {
        let keep = PathBuf::from(keep);
        let _ = std::fs::create_dir_all(&keep);
        let _ = std::fs::copy(runtime.log_path(), keep.join(format!("{name}.log")));
    }
    let _ = std::fs::remove_dir_all(&dir);
    let mut reconnected = false;
    let grown = after
        .iter()
        .map(|(port, a)| {
            let b = before.3.get(port).copied().unwrap_or_default();
            reconnected |= a.connections != b.connections;
            (
                *port,
                Traffic {
                    connections: a.connections,
                    segs_out: a.segs_out.saturating_sub(b.segs_out),
                    segs_in: a.segs_in.saturating_sub(b.segs_in),
                    bytes_out: a.bytes_out.saturating_sub(b.bytes_out),
                    bytes_in: a.bytes_in.saturating_sub(b.bytes_in),
                },
            )
        })
        .collect();
    let idle = Idle {
        name: name.to_owned(),
        open,
        window,
        connector_cpu,
        fluss,
        machine,
        traffic: grown,
        reconnected,
        rss_kib,
        warnings,
        log_bytes,
        errors,
        census,
        load,
    };
    eprintln!(
        "scale: {name}: opened after {open:.1} s; {:.2} CPU s/min over {window:.0} s",
        idle.connector_cpu * 60.0 / window
    );
    idle
}

fn print_idle(settings: &Settings, servers: &[Server], alone: &(Vec<f64>, f64), runs: &[Idle]) {
    let per_min = |cpu: f64, secs: f64| cpu * 60.0 / secs.max(1e-6);
    let alone_secs = settings.idle_baseline.as_secs_f64();
    println!(
        "\nidle: {} s windows ({} s warm-up after `opened`); CPU seconds per minute",
        settings.idle.as_secs(),
        settings.idle_warmup.as_secs()
    );
    println!(
        "Fluss alone over {alone_secs:.0} s: {}; machine {:.2}",
        servers
            .iter()
            .zip(&alone.0)
            .map(|((name, _, _), cpu)| format!("{name} {:.2}", per_min(*cpu, alone_secs)))
            .collect::<Vec<_>>()
            .join(", "),
        per_min(alone.1, alone_secs)
    );
    println!(
        "{:<14} {:>7} {:>10} {:>10} {:>10} {:>8} {:>6} {:>6}  to each Fluss server: TCP segments/s out, bytes/s out / in",
        "run", "open s", "connector", "Fluss", "machine", "RSS MiB", "WARN", "load"
    );
    for run in runs {
        let fluss: f64 = run.fluss.iter().sum();
        let traffic = run
            .traffic
            .iter()
            .filter(|(port, _)| to_fluss(servers, **port))
            .map(|(port, t)| {
                format!(
                    "{} {:.1}/s, {:.0} / {:.0} B/s",
                    server_name(servers, *port),
                    t.segs_out as f64 / run.window,
                    t.bytes_out as f64 / run.window,
                    t.bytes_in as f64 / run.window,
                )
            })
            .collect::<Vec<_>>()
            .join("; ");
        println!(
            "{:<14} {:>7.1} {:>10.2} {:>10.2} {:>10.2} {:>8.1} {:>6} {:>6.2}  {traffic}{}",
            run.name,
            run.open,
            per_min(run.connector_cpu, run.window),
            per_min(fluss, run.window),
            per_min(run.machine, run.window),
            run.rss_kib as f64 / 1024.0,
            run.warnings,
            run.load,
            if run.reconnected {
                " (connections changed in the window)"
            } else {
                ""
            }
        );
        if !servers.is_empty() {
            println!(
                "{:<14} Fluss per server: {}; over Fluss alone: {:+.2}; the runtime logged {:.1} KiB/min",
                "",
                servers
                    .iter()
                    .zip(&run.fluss)
                    .map(|((name, _, _), cpu)| format!("{name} {:.2}", per_min(*cpu, run.window)))
                    .collect::<Vec<_>>()
                    .join(", "),
                per_min(fluss, run.window) - per_min(alone.0.iter().sum(), alone_secs),
                per_min(run.log_bytes as f64, run.window) / 1024.0
            );
        }
        if let Some((counts, secs)) = &run.census {
            println!(
                "{:<14} requests/s over a {secs:.0} s census: {}",
                "",
                counts
                    .iter()
                    .filter(|((port, _), _)| to_fluss(servers, *port))
                    .map(|((port, key), n)| format!(
                        "{} {} {:.2}",
                        server_name(servers, *port),
                        api_name(*key),
                        *n as f64 / secs
                    ))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        if let Some((errors, outages)) = run.errors {
            println!("{:<14} metrics: {errors} errors, {outages} outages", "");
        }
    }
    println!(
        "(open s: from the runtime's start to the plugin's `opened` line; connector: \
         iggy-connectors; Fluss: its JVMs; TCP segments: the data segments the runtime sent, \
         about one per request (Nagle may put several small ones in one, a request over 8 KiB \
         takes two); requests/s: counted from the frames of the runtime's socket writes \
         (strace) after the window)"
    );
}

/// The ceiling's shape of a JSON run: the plugin's first payload, verbatim, 1000 a batch.
const JSON_CEILING: CeilingShape = CeilingShape {
    batch: Some(1000),
    literal_payload: true,
};

fn main() {
    let settings = Settings::from_env();
    if std::env::var_os("FLUSS_TABLET_HEAP").is_none() {
        // Thousands of buckets (and their KV stores) in one tablet server.
        // TODO: Audit that the environment access only happens in single-threaded code.
        unsafe { std::env::set_var("FLUSS_TABLET_HEAP", "2g") };
    }
    let base = std::env::temp_dir().join(format!("fluss-scale-bench-{}", std::process::id()));
    std::fs::create_dir_all(&base).expect("bench dir");
    let plugin = common::library("libiggy_connector_fluss_source.so");
    // The builds the `log` and `pk` runs are made with: this one, and with `SCALE_AB=PATH` also
    // the one at PATH (its runs named `…@b`).
    let mut builds = vec![(String::new(), plugin.clone())];
    if let Some(other) = std::env::var_os("SCALE_AB") {
        builds.push(("@b".to_owned(), PathBuf::from(other)));
    }
    let test_source = common::library("libiggy_test_source.so");
    println!(
        "scale bench: {} rows, {} partitions x {BUCKETS} buckets; primary key: {} rows, {} \
         partitions; {} tables; idle {} s; load average at the start {:.2}",
        settings.rows,
        settings.partitions,
        settings.pk_rows,
        settings.pk_partitions,
        settings.tables,
        settings.idle.as_secs(),
        common::load_average()
    );
    let cluster: &Cluster = match std::env::var("FLUSS_BOOTSTRAP") {
        Ok(_) => Cluster::shared(),
        Err(_) => Box::leak(Box::new(Cluster::start(ClusterOptions::default()))),
    };
    let servers = fluss_servers(cluster);
    let rt = tokio_runtime();

    // The partitioned log table first: the cluster may take fewer partitions than asked, and
    // every log table's `qty` then follows the partitions it took.
    let part = (settings.phase("log") || settings.phase("idle")).then(|| {
        let rows = if settings.phase("log") {
            settings.rows
        } else {
            0
        };
        rt.block_on(load(
            cluster,
            "scale_part",
            false,
            rows,
            settings.partitions,
            0,
        ))
    });
    let modulus = part.as_ref().map_or(settings.partitions, |t| t.partitions);
    let log2 =
        (settings.phase("log") || settings.phase("multi") || settings.phase("idle")).then(|| {
            rt.block_on(load(
                cluster,
                "scale_log2",
                false,
                settings.rows,
                0,
                modulus,
            ))
        });

    if settings.phase("log") {
        let part = part.as_ref().expect("the partitioned table");
        let log2 = log2.as_ref().expect("the 2-bucket table");
        let runs = throughput(
            cluster,
            &settings,
            &base,
            &builds,
            [("log2", log2), ("part", part)],
            json!({}),
        );
        print_runs(
            &format!(
                "log tables: {} rows in 2 buckets (log2) and in {} partitions x 2 buckets (part)",
                settings.rows, part.partitions
            ),
            &runs,
            &servers,
        );
    }

    if settings.phase("idle") {
        let part = part.as_ref().expect("the partitioned table");
        let log2 = log2.as_ref().expect("the 2-bucket table");
        eprintln!(
            "scale: the Fluss servers alone for {} s",
            settings.idle_baseline.as_secs()
        );
        let alone = fluss_alone(&servers, settings.idle_baseline);
        let mut runs = Vec::new();
        for shape in &settings.idle_shapes {
            let (table, extra) = match shape.as_str() {
                "part" => (part, json!({})),
                "part_metrics" => (
                    part,
                    json!({"metrics_address": format!("127.0.0.1:{}", metrics::free_port())}),
                ),
                "log2" => (log2, json!({})),
                other => panic!("SCALE_IDLE_SHAPES: unknown shape {other:?}"),
            };
            let mut config = plugin_config(cluster, &table.path, &extra);
            config["starting_offset"] = json!("latest");
            runs.push(idle_run(
                &base,
                &format!("idle_{shape}"),
                &plugin,
                config,
                &servers,
                &settings,
            ));
        }
        print_idle(&settings, &servers, &alone, &runs);
    }

    if settings.phase("multi") {
        let log2 = log2.as_ref().expect("the 2-bucket table");
        let per_table = settings.rows / settings.tables;
        let many: Vec<Table> = (0..settings.tables)
            .map(|i| {
                rt.block_on(load(
                    cluster,
                    &format!("scale_multi{i}"),
                    false,
                    per_table,
                    0,
                    modulus,
                ))
            })
            .collect();
        let one = plugin_run(
            cluster,
            "one_json",
            &plugin,
            &[log2],
            Format::Json,
            json!({}),
            settings.census_runs,
        );
        let all: Vec<&Table> = many.iter().collect();
        let ten = plugin_run(
            cluster,
            &format!("many{}_json", settings.tables),
            &plugin,
            &all,
            Format::Json,
            json!({}),
            settings.census_runs,
        );
        let mut runs = Vec::new();
        for (run, rows) in [(one, log2.rows), (ten, per_table * settings.tables)] {
            let ours = measured(&base, &run, rows, None);
            let ceiling_run = ceiling(&run, &ours.outcome, &JSON_CEILING, &test_source);
            let theirs = measure(&base, &ceiling_run, None);
            eprintln!(
                "scale: {:<14} ceiling {}/s (messages are rows), RSS {:.1} MiB",
                ceiling_run.label,
                fmt_rate(theirs.rate()),
                theirs.rss_kib as f64 / 1024.0
            );
            runs.push((ours, theirs));
        }
        println!(
            "\none runtime: 1 connector on {} rows against {} connectors on {} tables of {} rows \
             (JSON); ceiling: the test source in as many connectors",
            log2.rows, settings.tables, settings.tables, per_table
        );
        println!(
            "{:<14} {:>10} {:>10} {:>8} {:>10} {:>10} {:>9} {:>10} {:>6}",
            "run",
            "rows/s",
            "ceiling",
            "of it",
            "RSS MiB",
            "ceil RSS",
            "1st msg",
            "mach us/row",
            "load"
        );
        for (ours, theirs) in &runs {
            let o = &ours.outcome;
            println!(
                "{:<14} {:>10} {:>10} {:>7.2}x {:>10.1} {:>10.1} {:>8.2}s {:>10.2} {:>6.2}",
                ours.name,
                fmt_rate(o.rate()),
                fmt_rate(theirs.rate()),
                o.rate() / theirs.rate(),
                o.rss_kib as f64 / 1024.0,
                theirs.rss_kib as f64 / 1024.0,
                o.first_after,
                o.machine_us_per_row(),
                o.load
            );
        }
        if let [(one, one_ceiling), (ten, ten_ceiling)] = &runs[..] {
            println!(
                "{} connectors / 1: rows/s {:.2}x (ceiling {:.2}x), RSS {:.2}x",
                settings.tables,
                ten.outcome.rate() / one.outcome.rate(),
                ten_ceiling.rate() / one_ceiling.rate(),
                ten.outcome.rss_kib as f64 / one.outcome.rss_kib.max(1) as f64
            );
        }
    }

    if settings.phase("pk") {
        let pkpart = rt.block_on(load(
            cluster,
            "scale_pkpart",
            true,
            settings.pk_rows,
            settings.pk_partitions,
            0,
        ));
        let pk2 = rt.block_on(load(
            cluster,
            "scale_pk2",
            true,
            settings.pk_rows,
            0,
            pkpart.partitions,
        ));
        for table in [&pk2, &pkpart] {
            rt.block_on(common::kv_snapshots_caught_up(cluster, &table.path));
        }
        let runs = throughput(
            cluster,
            &settings,
            &base,
            &builds,
            [("pk2", &pk2), ("pkpart", &pkpart)],
            json!({"starting_offset": "full"}),
        );
        print_runs(
            &format!(
                "primary-key tables, `starting_offset = \"full\"`: {} rows in 2 buckets (pk2) and \
                 in {} partitions x 2 buckets (pkpart)",
                pk2.rows, pkpart.partitions
            ),
            &runs,
            &servers,
        );
    }
    println!("load average at the end {:.2}", common::load_average());
    let _ = std::fs::remove_dir_all(&base);
}
