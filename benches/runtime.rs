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

//! Throughput where users run the plugin: a real `iggy-server` and the `iggy-connectors`
//! runtime loading the release build of the plugin, against a real local Fluss cluster.
//!
//! One file: each shape's server, runtime and connector files, its ceiling run and the figures
//! only make sense side by side.
//!
//! Each shape runs in a fresh server and runtime of its own, then its ceiling: the SDK's test
//! source (`sdk/test_source`) emitting as many messages of the same payload (a real message's
//! JSON text, or its size for raw payloads) and the same header kinds and sizes, with the same
//! batch and stream settings. The ratio to the ceiling is the plugin's share of what the
//! runtime can move with that message shape. Shapes:
//! - `json`: a log table in JSON mode, defaults (`batch_size` 1000, stream `schema = "json"`);
//! - `json_raw`: `payload_schema = "raw"` and `headers = "none"`, stream `schema = "raw"`;
//! - `json_5000`: `batch_size = 5000` and the stream's `batch_length = 5000`;
//! - `debezium`: a primary-key table's changelog as Debezium events;
//! - `snapshot`: the same table from its KV snapshots (`starting_offset = "full"`, Debezium `r`
//!   events), once every bucket's latest KV snapshot holds the whole table;
//! - `snapshot_ipc`: the same KV snapshots as Arrow IPC (stream `schema = "raw"`);
//! - `ipc`, `ipc_lz4`, `ipc_zstd`: Arrow IPC (stream `schema = "raw"`) uncompressed and with
//!   each `arrow_ipc_compression`, also against the bare fluss-rs batch scanner;
//! - `ipc_filtered`: `ipc` through a filter that keeps every row, so each message leads with
//!   the rows' `_log_offset` (against a `RUNTIME_BASELINE` without it: what the column costs). With the
//!   default 1,000,000 rows an IPC run lasts under a second (82 messages) and single rounds
//!   move by 2x; measure them with `E2E_ROWS=5000000 RUNTIME_SHAPES=ipc,ipc_lz4,ipc_zstd`.
//!
//! Rows/s count from the first message to the last landing in the topic (the server's
//! timestamps of offset 0 and of the last offset; one partition), so the runtime's start and
//! the plugin's open are left out. Peak RSS is the `iggy-connectors` process's VmHWM.
//!
//! Run (the bench loads `target/release/libiggy_connector_fluss_source.so` and
//! `libiggy_test_source.so`; the Iggy binaries come from `IGGY_BIN_DIR`):
//! ```sh
//! cargo build --release -p iggy_connector_fluss_source -p iggy_test_source
//! IGGY_BIN_DIR=/tmp/iggybin E2E_REPEAT=3 cargo bench --bench runtime
//! ```
//! `E2E_ROWS` (log table, default 1,000,000), `E2E_PK_ROWS` (default 500,000), `E2E_REPEAT`
//! (rounds, default 3; each figure is the median over rounds), `RUNTIME_SHAPES` (a comma list
//! of the shapes above), `RUNTIME_PERF=DIR` (`perf record -g` of the runtime during each
//! plugin run, into DIR), `RUNTIME_KEEP_LOGS=DIR` (each run's runtime log, copied into DIR), `RUNTIME_SWEEP=N` (instead of the shapes: the test source alone
//! with N messages per variant of header set, payload size and batching), `FLUSS_BOOTSTRAP`
//! (a running cluster instead of a fresh one), `RUNTIME_BASELINE=PATH` (every shape also with
//! that build of the plugin, right after this one in each round, and the ratios per round: an
//! A/B of two commits in one run), `FLUSS_PLUGIN_LIBRARY=PATH` (that build instead of this
//! one). Each run also reports the CPU time `iggy-connectors` used per row, which holds better
//! than rows/s on a loaded machine, and the CPU the whole machine (every process) spent per row
//! with how busy its cores were.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::runtime::{
    CeilingShape, Outcome, Run, ceiling, fmt_rate, measure, median, plugin_config, tokio_runtime,
};
use fluss::metadata::TablePath;
use fluss_testkit::fluss;
use fluss_testkit::{Cluster, ClusterOptions};
use serde_json::{Value, json};

/// The bare fluss-rs batch scanner over the whole log table: rows/s from its first non-empty
/// poll to the last row (the same span the runtime figures use).
async fn bare_scanner(bootstrap: &str, path: &TablePath, rows: usize) -> f64 {
    let scan = common::bare_scanner(bootstrap, path, rows).await;
    let (at, first_rows) = scan.first_poll;
    let rate = (scan.rows - first_rows) as f64 / at.elapsed().as_secs_f64();
    eprintln!(
        "bare batch scanner: {} rows, first poll {first_rows}, from subscribe {:.0} rows/s",
        scan.rows,
        scan.rows as f64 / scan.subscribed.elapsed().as_secs_f64()
    );
    rate
}

/// One message shape: the plugin's run, and how its ceiling is built from what it delivered.
#[derive(Clone)]
struct ShapeSpec {
    name: &'static str,
    /// Run with the `RUNTIME_BASELINE` build of the plugin (an A/B within each round).
    baseline: bool,
    pk: bool,
    plugin: Value,
    stream_schema: &'static str,
    batch_length: Option<u32>,
    /// The ceiling's batch size (`None`: from the plugin's message size, Arrow IPC).
    batch: Option<u64>,
    /// The ceiling sends the plugin's first payload text (JSON streams) or only its size.
    literal_payload: bool,
}

fn shapes() -> Vec<ShapeSpec> {
    vec![
        ShapeSpec {
            name: "json",
            baseline: false,
            pk: false,
            plugin: json!({}),
            stream_schema: "json",
            batch_length: None,
            batch: Some(1000),
            literal_payload: true,
        },
        ShapeSpec {
            name: "json_raw",
            baseline: false,
            pk: false,
            plugin: json!({"payload_schema": "raw", "headers": "none"}),
            stream_schema: "raw",
            batch_length: None,
            batch: Some(1000),
            literal_payload: false,
        },
        ShapeSpec {
            name: "json_5000",
            baseline: false,
            pk: false,
            plugin: json!({"batch_size": 5000}),
            stream_schema: "json",
            batch_length: Some(5000),
            batch: Some(5000),
            literal_payload: true,
        },
        ShapeSpec {
            name: "debezium",
            baseline: false,
            pk: true,
            plugin: json!({"changelog_format": "debezium"}),
            stream_schema: "json",
            batch_length: None,
            batch: Some(1000),
            literal_payload: true,
        },
        ShapeSpec {
            name: "snapshot",
            baseline: false,
            pk: true,
            plugin: json!({"changelog_format": "debezium", "starting_offset": "full"}),
            stream_schema: "json",
            batch_length: None,
            batch: Some(1000),
            literal_payload: true,
        },
    ]
    .into_iter()
    .chain([ShapeSpec {
        name: "snapshot_ipc",
        baseline: false,
        pk: true,
        plugin: json!({"payload_format": "arrow_ipc", "starting_offset": "full"}),
        stream_schema: "raw",
        batch_length: None,
        batch: None,
        literal_payload: false,
    }])
    .chain([ShapeSpec {
        // A filter that keeps every row: the rows of `ipc` behind each row's `_log_offset`.
        name: "ipc_filtered",
        baseline: false,
        pk: false,
        plugin: json!({"payload_format": "arrow_ipc", "filter": "id >= 0"}),
        stream_schema: "raw",
        batch_length: None,
        batch: None,
        literal_payload: false,
    }])
    .chain(
        [("ipc", "none"), ("ipc_lz4", "lz4"), ("ipc_zstd", "zstd")].map(|(name, compression)| {
            ShapeSpec {
                name,
                baseline: false,
                pk: false,
                plugin: json!({"payload_format": "arrow_ipc", "arrow_ipc_compression": compression}),
                stream_schema: "raw",
                batch_length: None,
                batch: None,
                literal_payload: false,
            }
        }),
    )
    .collect()
}

/// The log table's Arrow IPC shapes, compared with the bare scanner.
fn is_ipc(shape: &ShapeSpec) -> bool {
    shape.name.starts_with("ipc")
}

/// Shapes of a few large Arrow IPC messages: a run ends when the topic stops growing, and
/// counts rows.
fn arrow_payload(shape: &ShapeSpec) -> bool {
    shape.plugin.get("payload_format") == Some(&json!("arrow_ipc"))
}

fn ceiling_run(shape: &ShapeSpec, run: &Run, plugin: &Outcome, test_source: &Path) -> Run {
    let mut ceiling = ceiling(
        run,
        plugin,
        &CeilingShape {
            batch: shape.batch,
            literal_payload: shape.literal_payload,
        },
        test_source,
    );
    ceiling.label = format!("{}_ceiling", shape.name);
    ceiling
}

fn main() {
    let base = std::env::temp_dir().join(format!("fluss-runtime-bench-{}", std::process::id()));
    std::fs::create_dir_all(&base).expect("bench dir");
    let test_source = common::library("libiggy_test_source.so");
    if let Ok(sweep) = std::env::var("RUNTIME_SWEEP") {
        let total = sweep.replace('_', "").parse().unwrap_or(500_000);
        run_sweep(
            &base,
            &test_source,
            total,
            common::env_usize("E2E_REPEAT", 3).max(1),
        );
        let _ = std::fs::remove_dir_all(&base);
        return;
    }
    let plugin = common::library("libiggy_connector_fluss_source.so");
    let rows = common::env_usize("E2E_ROWS", 1_000_000);
    let pk_rows = common::env_usize("E2E_PK_ROWS", 500_000);
    let repeat = common::env_usize("E2E_REPEAT", 3).max(1);
    let selected: Option<Vec<String>> = std::env::var("RUNTIME_SHAPES")
        .ok()
        .map(|s| s.split(',').map(|s| s.trim().to_owned()).collect());
    let shapes: Vec<ShapeSpec> = shapes()
        .into_iter()
        .filter(|s| {
            selected
                .as_ref()
                .is_none_or(|l| l.iter().any(|n| n == s.name))
        })
        .collect();
    // `RUNTIME_BASELINE=PATH`: every shape also with that build of the plugin, right after this
    // one in each round, so that both meet the same load.
    let baseline = std::env::var_os("RUNTIME_BASELINE").map(PathBuf::from);
    let shapes: Vec<ShapeSpec> = match &baseline {
        None => shapes,
        Some(path) => {
            assert!(
                path.exists(),
                "RUNTIME_BASELINE: {} is missing",
                path.display()
            );
            shapes
                .into_iter()
                .flat_map(|s| {
                    let base = ShapeSpec {
                        name: format!("{}@baseline", s.name).leak(),
                        baseline: true,
                        ..s.clone()
                    };
                    [s, base]
                })
                .collect()
        }
    };
    let perf_dir = std::env::var_os("RUNTIME_PERF").map(PathBuf::from);
    if let Some(dir) = &perf_dir {
        std::fs::create_dir_all(dir).expect("perf dir");
    }
    let cluster = match std::env::var("FLUSS_BOOTSTRAP") {
        Ok(_) => Cluster::shared(),
        Err(_) => Box::leak(Box::new(Cluster::start(ClusterOptions::default()))),
    };
    let (log, pk) =
        tokio_runtime().block_on(common::load_tables(cluster, "runtime bench", rows, pk_rows));
    if shapes.iter().any(|s| s.name.starts_with("snapshot")) {
        tokio_runtime().block_on(common::kv_snapshots_caught_up(cluster, &pk));
    }

    // Per shape: (plugin, ceiling) outcomes per round; bare scanner rates per round.
    let mut results: BTreeMap<&str, Vec<(Outcome, Outcome)>> = BTreeMap::new();
    let mut bare = Vec::new();
    for round in 0..repeat {
        for shape in &shapes {
            let table = if shape.pk { &pk } else { &log };
            // The changelog path; the `snapshot` shape sets `full`.
            let config = plugin_config(cluster, table, &shape.plugin);
            let expected = if shape.pk { pk_rows } else { rows } as u64;
            let run = Run {
                label: format!("{}_r{round}", shape.name),
                library: match (&baseline, shape.baseline) {
                    (Some(path), true) => path.clone(),
                    _ => plugin.clone(),
                },
                plugin_configs: vec![config],
                stream_schema: shape.stream_schema,
                batch_length: shape.batch_length,
                linger_time: None,
                messages: (!arrow_payload(shape)).then_some(expected),
                settle: None,
                census: false,
            };
            let ours = measure(&base, &run, perf_dir.as_deref());
            assert_eq!(ours.rows, expected, "{}: rows delivered", run.label);
            let mut ceiling = ceiling_run(shape, &run, &ours, &test_source);
            ceiling.label = format!("{}_r{round}", ceiling.label);
            let theirs = measure(&base, &ceiling, None);
            eprintln!(
                "round {round} {:<10} {:>9}/s ({:.2} s, wall {:.2} s, {} msgs, RSS {:.1} MiB, CPU {:.2} us/row, machine {:.2} us/row at {:.0}% busy); ceiling {:>9}/s ({:.2} s, RSS {:.1} MiB, CPU {:.2} us/row, machine {:.2} us/row at {:.0}% busy)",
                shape.name,
                fmt_rate(ours.rate()),
                ours.span,
                ours.wall,
                ours.messages,
                ours.rss_kib as f64 / 1024.0,
                ours.cpu_us_per_row(),
                ours.machine_us_per_row(),
                ours.machine_load() * 100.0,
                fmt_rate(theirs.rate() * ours.rows as f64 / ours.messages as f64),
                theirs.span,
                theirs.rss_kib as f64 / 1024.0,
                theirs.cpu * 1e6 / ours.rows.max(1) as f64,
                theirs.machine_cpu * 1e6 / ours.rows.max(1) as f64,
                theirs.machine_load() * 100.0,
            );
            results.entry(shape.name).or_default().push((ours, theirs));
            if is_ipc(shape) && bare.len() == round {
                let rate = tokio_runtime().block_on(bare_scanner(cluster.bootstrap(), &log, rows));
                eprintln!("round {round} bare batch scanner {}/s", fmt_rate(rate));
                bare.push(rate);
            }
        }
    }

    println!("\n{repeat} rounds, medians; rows/s from the first message to the last in the topic");
    println!(
        "{:<10} {:>9} {:>10} {:>12} {:>8} {:>10} {:>12} {:>10}",
        "shape", "messages", "rows/s", "ceiling", "ratio", "bytes/msg", "RSS", "ceil RSS"
    );
    for shape in &shapes {
        let Some(runs) = results.get(shape.name) else {
            continue;
        };
        // The ceiling as rows/s: its messages/s times the plugin's rows per message.
        let per_msg = |o: &Outcome| o.rows as f64 / o.messages as f64;
        let ours = median(runs.iter().map(|(o, _)| o.rate()).collect());
        let ceiling = median(runs.iter().map(|(o, c)| c.rate() * per_msg(o)).collect());
        let ratio = median(
            runs.iter()
                .map(|(o, c)| o.rate() / (c.rate() * per_msg(o)))
                .collect(),
        );
        let rss = median(runs.iter().map(|(o, _)| o.rss_kib as f64).collect()) / 1024.0;
        let rss_high = runs.iter().map(|(o, _)| o.rss_kib).max().unwrap_or(0) as f64 / 1024.0;
        let ceiling_rss = median(runs.iter().map(|(_, c)| c.rss_kib as f64).collect()) / 1024.0;
        let o = &runs[0].0;
        println!(
            "{:<10} {:>9} {:>10} {:>12} {:>7.2}x {:>10} {:>5.1} ({:.1}) {:>7.1} MiB",
            shape.name,
            o.messages,
            fmt_rate(ours),
            fmt_rate(ceiling),
            ratio,
            o.payload_bytes / o.messages,
            rss,
            rss_high,
            ceiling_rss,
        );
        println!(
            "           per round: {}",
            runs.iter()
                .map(|(o, c)| format!(
                    "{} / {} = {:.2}",
                    fmt_rate(o.rate()),
                    fmt_rate(c.rate() * per_msg(o)),
                    o.rate() / (c.rate() * per_msg(o))
                ))
                .collect::<Vec<_>>()
                .join("; ")
        );
        let cpu = median(runs.iter().map(|(o, _)| o.cpu_us_per_row()).collect());
        let ceiling_cpu = median(
            runs.iter()
                .map(|(o, c)| c.cpu * 1e6 / o.rows.max(1) as f64)
                .collect(),
        );
        println!(
            "           iggy-connectors CPU per row: {cpu:.2} us (ceiling {ceiling_cpu:.2} us); per round: {}",
            runs.iter()
                .map(|(o, _)| format!("{:.2}", o.cpu_us_per_row()))
                .collect::<Vec<_>>()
                .join(", ")
        );
        println!(
            "           machine CPU per row (every process): {:.2} us, cores {:.0}% busy (ceiling {:.2} us, {:.0}%); per round: {}",
            median(runs.iter().map(|(o, _)| o.machine_us_per_row()).collect()),
            median(runs.iter().map(|(o, _)| o.machine_load()).collect()) * 100.0,
            median(
                runs.iter()
                    .map(|(o, c)| c.machine_cpu * 1e6 / o.rows.max(1) as f64)
                    .collect()
            ),
            median(runs.iter().map(|(_, c)| c.machine_load()).collect()) * 100.0,
            runs.iter()
                .map(|(o, _)| format!(
                    "{:.2} us at {:.0}%",
                    o.machine_us_per_row(),
                    o.machine_load() * 100.0
                ))
                .collect::<Vec<_>>()
                .join(", ")
        );
        if is_ipc(shape) && !bare.is_empty() {
            let bare_rate = median(bare.clone());
            let vs_bare = median(
                runs.iter()
                    .zip(&bare)
                    .map(|((o, _), b)| o.rate() / b)
                    .collect(),
            );
            println!(
                "           bare batch scanner {}/s; ipc through the runtime = {vs_bare:.2}x bare (per round: {})",
                fmt_rate(bare_rate),
                bare.iter()
                    .map(|b| fmt_rate(*b))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    println!(
        "(ratio: to the test source with the same payloads, headers and batching; RSS: iggy-connectors peak, median (highest))"
    );
    if baseline.is_some() {
        println!("\nthis build / RUNTIME_BASELINE, per round (rows/s; CPU per row)");
        for shape in shapes.iter().filter(|s| !s.baseline) {
            let (Some(this), Some(base)) = (
                results.get(shape.name),
                results.get(format!("{}@baseline", shape.name).as_str()),
            ) else {
                continue;
            };
            let rate: Vec<f64> = this
                .iter()
                .zip(base)
                .map(|((a, _), (b, _))| a.rate() / b.rate())
                .collect();
            let cpu: Vec<f64> = this
                .iter()
                .zip(base)
                .map(|((a, _), (b, _))| a.cpu_us_per_row() / b.cpu_us_per_row())
                .collect();
            let list = |v: &[f64]| {
                v.iter()
                    .map(|r| format!("{r:.2}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            println!(
                "{:<10} rows/s {:.2}x (per round {}); CPU per row {:.2}x (per round {})",
                shape.name,
                median(rate.clone()),
                list(&rate),
                median(cpu.clone()),
                list(&cpu)
            );
        }
    }
    let _ = std::fs::remove_dir_all(&base);
}

/// The test source alone through the runtime, one variant of the message shape at a time:
/// header sets, payload size, declared schema, `batch` and the stream's batching.
fn run_sweep(base: &Path, test_source: &Path, total: u64, repeat: usize) {
    let table = json!({"name": "fluss_table", "kind": "string", "size": 32});
    let bucket = json!({"name": "fluss_bucket", "kind": "int32"});
    let offset = json!({"name": "fluss_offset", "kind": "int64"});
    let timestamp = json!({"name": "fluss_timestamp", "kind": "int64"});
    let change = json!({"name": "fluss_change_type", "kind": "string", "size": 2});
    let five = json!([table, bucket, offset, timestamp, change]);
    let strings5 = json!([
        {"name": "fluss_table", "kind": "string", "size": 32},
        {"name": "fluss_bucket", "kind": "string", "size": 4},
        {"name": "fluss_offset", "kind": "string", "size": 8},
        {"name": "fluss_timestamp", "kind": "string", "size": 8},
        {"name": "fluss_change_type", "kind": "string", "size": 2},
    ]);
    let ints5 = json!([
        {"name": "fluss_table", "kind": "int64"},
        {"name": "fluss_bucket", "kind": "int32"},
        {"name": "fluss_offset", "kind": "int64"},
        {"name": "fluss_timestamp", "kind": "int64"},
        {"name": "fluss_change_type", "kind": "int32"},
    ]);
    // (label, payload size, declared and stream schema, headers, batch, batch_length, linger)
    type Variant = (
        &'static str,
        usize,
        &'static str,
        Value,
        u64,
        Option<u32>,
        Option<&'static str>,
    );
    let variants: Vec<Variant> = vec![
        (
            "raw 256 B, no headers",
            256,
            "raw",
            json!("none"),
            1000,
            None,
            None,
        ),
        (
            "raw 256 B, 1 int64",
            256,
            "raw",
            json!([offset]),
            1000,
            None,
            None,
        ),
        (
            "raw 256 B, 3 ints",
            256,
            "raw",
            json!([bucket, offset, timestamp]),
            1000,
            None,
            None,
        ),
        (
            "raw 256 B, 5 (plugin's)",
            256,
            "raw",
            five.clone(),
            1000,
            None,
            None,
        ),
        ("raw 256 B, 5 ints", 256, "raw", ints5, 1000, None, None),
        (
            "raw 256 B, 5 strings",
            256,
            "raw",
            strings5,
            1000,
            None,
            None,
        ),
        (
            "raw 64 B, no headers",
            64,
            "raw",
            json!("none"),
            1000,
            None,
            None,
        ),
        (
            "raw 1 KiB, no headers",
            1024,
            "raw",
            json!("none"),
            1000,
            None,
            None,
        ),
        (
            "json 256 B, no headers",
            256,
            "json",
            json!("none"),
            1000,
            None,
            None,
        ),
        (
            "json 256 B, 5 (plugin's)",
            256,
            "json",
            five.clone(),
            1000,
            None,
            None,
        ),
        (
            "raw 256 B, none, batch 5000",
            256,
            "raw",
            json!("none"),
            5000,
            None,
            None,
        ),
        (
            "raw 256 B, none, 5000/5000",
            256,
            "raw",
            json!("none"),
            5000,
            Some(5000),
            None,
        ),
        (
            "raw 256 B, none, linger 1ms",
            256,
            "raw",
            json!("none"),
            1000,
            None,
            Some("1ms"),
        ),
        (
            "raw 256 B, none, 5000/5000 20ms",
            256,
            "raw",
            json!("none"),
            5000,
            Some(5000),
            Some("20ms"),
        ),
        (
            "raw 256 B, 5, 5000/5000",
            256,
            "raw",
            five,
            5000,
            Some(5000),
            None,
        ),
    ];
    let mut rates: Vec<Vec<(f64, u64)>> = vec![Vec::new(); variants.len()];
    for round in 0..repeat {
        for (i, (label, size, schema, headers, batch, batch_length, linger)) in
            variants.iter().enumerate()
        {
            let run = Run {
                label: format!("sweep{i}_r{round}"),
                library: test_source.to_owned(),
                plugin_configs: vec![json!({
                    "total": total,
                    "batch": batch,
                    "poll_ahead": true,
                    "payload_size": size,
                    "headers": headers,
                    "schema": schema,
                })],
                stream_schema: schema,
                batch_length: *batch_length,
                linger_time: linger.map(str::to_owned),
                messages: Some(total),
                settle: None,
                census: false,
            };
            let outcome = measure(base, &run, None);
            eprintln!(
                "round {round} {label:<34} {:>9}/s RSS {:.1} MiB",
                fmt_rate(outcome.rate()),
                outcome.rss_kib as f64 / 1024.0
            );
            rates[i].push((outcome.rate(), outcome.rss_kib));
        }
    }
    println!("\n{repeat} rounds, {total} messages each; medians (per round)");
    let base_rate = median(rates[0].iter().map(|r| r.0).collect());
    for ((label, ..), runs) in variants.iter().zip(&rates) {
        let rate = median(runs.iter().map(|r| r.0).collect());
        println!(
            "{label:<34} {:>9}/s {:>5.2}x  RSS {:>5.1} MiB  ({})",
            fmt_rate(rate),
            rate / base_rate,
            median(runs.iter().map(|r| r.1 as f64).collect()) / 1024.0,
            runs.iter()
                .map(|r| fmt_rate(r.0))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
}
