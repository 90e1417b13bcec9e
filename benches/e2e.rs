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

//! End-to-end throughput against a real local Fluss cluster, side by side in one run:
//! (a) a bare fluss-rs `RecordBatchLogScanner` reading the whole log table (the baseline),
//! (b) the plugin through the runner's C-ABI harness in JSON mode,
//! (c) the same in Arrow IPC mode,
//! (d) a primary-key table's changelog as Debezium JSON,
//! (e) the same table from its snapshot (`starting_offset = "full"`, Debezium `r` events),
//! (f) the same snapshot as Arrow IPC,
//! (g) (b) with the Prometheus endpoint on (`metrics_address`), for the cost of the metrics,
//! (h) the primary-key table's changelog as Arrow IPC (what (f) is compared with).
//!
//! Each measurement runs in its own child process (this binary with `--child MODE`) so that its
//! peak RSS (VmHWM) is its own. Prints rows/s, the ratio to (a) and peak RSS per mode, and for
//! the snapshot modes the peak bytes of KV snapshot files in their `snapshot_dir` (sampled
//! every 20 ms). The snapshot modes first wait until every bucket's latest KV snapshot holds the
//! whole table, so no row comes from the changelog.
//!
//! Run: `cargo build --release -p iggy_connector_fluss_source && cargo bench --bench e2e`.
//! Sizes: `E2E_ROWS` (log table, default 2,000,000) and `E2E_PK_ROWS` (default 500,000);
//! `E2E_REPEAT` rounds of all modes (default 3), each figure the median over the rounds.
//! `FLUSS_BOOTSTRAP` reuses a running cluster instead of starting one. `E2E_MODES` (e.g.
//! `debezium,snapshot,snapshot_ipc`) runs only the named modes (the primary-key ones alone:
//! `E2E_MODES=debezium,changelog_ipc,snapshot,snapshot_ipc E2E_ROWS=0`).

mod common;

use std::time::{Duration, Instant};

use fluss::metadata::TablePath;
use fluss_testkit::fluss;
use fluss_testkit::{Cluster, ClusterOptions, tables};
use iggy_connector_fluss_source::snapshot::kv::local_dir::disk_bytes;

/// The bare record scanner (what the plugin reads with), for locating costs; one scanner
/// polled in a loop, with the plugin's Arrow IPC poll size (`max_batch_bytes / 320` for the
/// default 8 MiB) unless `E2E_POLL_RECORDS` says otherwise.
async fn bare_records(bootstrap: &str, path: &TablePath, rows: usize) -> usize {
    let poll_records = common::env_usize("E2E_POLL_RECORDS", (8 << 20) / 320);
    let (conn, offsets) = common::bare_setup(bootstrap, path, poll_records).await;
    let table = conn.get_table(path).await.expect("table");
    let scanner = table.new_scan().create_log_scanner().expect("scanner");
    scanner
        .subscribe_buckets(&offsets)
        .await
        .expect("subscribe");
    let mut seen = 0;
    while seen < rows {
        seen += scanner
            .poll(Duration::from_millis(500))
            .await
            .expect("poll")
            .count();
    }
    seen
}

/// (b)-(d): the plugin library over the C ABI, acking every batch, until `rows` rows (or
/// changes) arrived.
fn through_plugin(config: serde_json::Value, rows: usize) -> usize {
    let lib = common::library("libiggy_connector_fluss_source.so");
    let harness = fluss_source_runner::Harness::load(&lib).expect("load plugin");
    let instance = harness.open(&config.to_string(), None).expect("open");
    assert_eq!(instance.start(), 0);
    let mut seen = 0usize;
    let mut progress = Instant::now();
    while seen < rows {
        let Some(batch) = instance.next_batch(Duration::from_secs(60)) else {
            panic!("no batch for 60 s after {seen} rows");
        };
        let n = common::rows_in_batch(&batch.messages);
        if n > 0 {
            progress = Instant::now();
        }
        assert!(
            progress.elapsed() < Duration::from_secs(60),
            "no rows for 60 s after {seen} rows (batches of {} messages)",
            batch.messages.messages.len()
        );
        seen += n;
        assert_eq!(instance.ack(&batch), 0);
    }
    instance.close();
    seen
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn child(args: &[String]) {
    let mode = args[0].as_str();
    let bootstrap = &args[1];
    let table = &args[2];
    let rows: usize = args[3].parse().expect("rows");
    let path = TablePath::new(tables::TEST_DATABASE, table.clone());
    let config = |extra: serde_json::Value| {
        let mut c = serde_json::json!({
            "bootstrap_servers": bootstrap,
            "database": tables::TEST_DATABASE,
            "table": table,
            "poll_interval": "100ms",
            // The changelog path; the `snapshot*` modes set `full` themselves.
            "starting_offset": "earliest",
        });
        if let (Some(c), Some(e)) = (c.as_object_mut(), extra.as_object()) {
            c.extend(e.clone());
        }
        c
    };
    let snapshot_dir = std::env::temp_dir().join(format!("e2e-snapshots-{}", std::process::id()));
    let disk = DiskPeak::watch(snapshot_dir.clone());
    let started = Instant::now();
    let seen = match mode {
        "bare" => {
            runtime()
                .block_on(common::bare_scanner(bootstrap, &path, rows))
                .rows
        }
        "records" => runtime().block_on(bare_records(bootstrap, &path, rows)),
        "json" => through_plugin(config(serde_json::json!({"batch_size": 5000})), rows),
        // An ephemeral port: each child process has its own listener.
        "json_metrics" => through_plugin(
            config(serde_json::json!({"batch_size": 5000, "metrics_address": "127.0.0.1:0"})),
            rows,
        ),
        "ipc" => through_plugin(
            config(serde_json::json!({"payload_format": "arrow_ipc", "batch_size": 50})),
            rows,
        ),
        "debezium" => through_plugin(config(serde_json::json!({"batch_size": 5000})), rows),
        "changelog_ipc" => through_plugin(
            config(serde_json::json!({"payload_format": "arrow_ipc", "batch_size": 50})),
            rows,
        ),
        "snapshot" => through_plugin(
            config(serde_json::json!({
                "batch_size": 5000,
                "starting_offset": "full",
                "snapshot_dir": snapshot_dir,
            })),
            rows,
        ),
        "snapshot_ipc" => through_plugin(
            config(serde_json::json!({
                "payload_format": "arrow_ipc",
                "batch_size": 50,
                "starting_offset": "full",
                "snapshot_dir": snapshot_dir,
            })),
            rows,
        ),
        other => panic!("unknown mode {other}"),
    };
    let secs = started.elapsed().as_secs_f64();
    let disk = disk.stop();
    let _ = std::fs::remove_dir_all(&snapshot_dir);
    println!(
        "RESULT {mode} {seen} {secs:.3} {} {disk}",
        common::peak_rss_kib("self")
    );
}

/// The peak bytes of the files under a directory, sampled by a thread of its own.
struct DiskPeak {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    sampler: std::thread::JoinHandle<u64>,
}

impl DiskPeak {
    fn watch(dir: std::path::PathBuf) -> Self {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let sampler = std::thread::spawn({
            let stop = stop.clone();
            move || {
                let mut peak = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    peak = peak.max(disk_bytes(&dir));
                    std::thread::sleep(Duration::from_millis(20));
                }
                peak
            }
        });
        Self { stop, sampler }
    }

    fn stop(self) -> u64 {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.sampler.join().unwrap_or(0)
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(at) = args.iter().position(|a| a == "--child") {
        child(&args[at + 1..]);
        return;
    }
    let rows = common::env_usize("E2E_ROWS", 2_000_000);
    let pk_rows = common::env_usize("E2E_PK_ROWS", 500_000);
    let cluster = match std::env::var("FLUSS_BOOTSTRAP") {
        Ok(_) => Cluster::shared(),
        Err(_) => Box::leak(Box::new(Cluster::start(ClusterOptions::default()))),
    };
    let (log, pk) = runtime().block_on(common::load_tables(cluster, "e2e", rows, pk_rows));
    let repeat = common::env_usize("E2E_REPEAT", 3).max(1);
    let modes = [
        ("bare", &log, rows),
        ("records", &log, rows),
        ("json", &log, rows),
        ("json_metrics", &log, rows),
        ("ipc", &log, rows),
        ("debezium", &pk, pk_rows),
        ("changelog_ipc", &pk, pk_rows),
        ("snapshot", &pk, pk_rows),
        ("snapshot_ipc", &pk, pk_rows),
    ];
    let selected = std::env::var("E2E_MODES").ok();
    let modes: Vec<_> = modes
        .into_iter()
        .filter(|(mode, _, _)| {
            selected
                .as_deref()
                .is_none_or(|list| list.split(',').any(|m| m.trim() == *mode))
        })
        .collect();
    if modes
        .iter()
        .any(|(mode, _, _)| mode.starts_with("snapshot"))
    {
        runtime().block_on(common::kv_snapshots_caught_up(cluster, &pk));
    }
    // Rounds of every mode in turn, so a slow patch of the shared machine hits all modes alike;
    // each figure is the median over the rounds.
    let mut runs: Vec<Vec<(f64, f64, f64, f64)>> = vec![Vec::new(); modes.len()];
    for _ in 0..repeat {
        for (i, (mode, table, n)) in modes.iter().enumerate() {
            let run = run_child(mode, cluster.bootstrap(), table.table(), *n);
            eprintln!(
                "{mode}: {} rows in {:.2} s, peak RSS {:.1} MiB, peak disk {:.1} MiB",
                run.0,
                run.1,
                run.2 / 1024.0,
                run.3 / (1 << 20) as f64
            );
            runs[i].push(run);
        }
    }
    let median = |values: &mut Vec<f64>| {
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    };
    let rate_of =
        |runs: &[(f64, f64, f64, f64)]| median(&mut runs.iter().map(|r| r.0 / r.1).collect());
    // Ratios are to the first mode run (the bare scanner unless `E2E_MODES` leaves it out).
    let bare_rate = rate_of(&runs[0]);
    println!("\n{repeat} rounds; medians per mode");
    println!(
        "mode          rows        seconds  rows/s      vs first peak RSS (highest)  peak disk"
    );
    for ((mode, _, _), runs) in modes.iter().zip(&runs) {
        let rate = rate_of(runs);
        let secs = median(&mut runs.iter().map(|r| r.1).collect());
        let rss = median(&mut runs.iter().map(|r| r.2).collect());
        let highest = runs.iter().map(|r| r.2).fold(0.0, f64::max);
        let disk = runs.iter().map(|r| r.3).fold(0.0, f64::max);
        println!(
            "{mode:<13} {:<11} {secs:<8.2} {rate:<11.0} {:<8.2} {:.1} MiB ({:.1})  {:.1} MiB",
            runs[0].0,
            rate / bare_rate,
            rss / 1024.0,
            highest / 1024.0,
            disk / (1 << 20) as f64
        );
    }
    println!(
        "(debezium and snapshot* read the primary-key table; their ratios compare rates across tables)"
    );
}

/// Runs one mode in a child process: (rows seen, seconds, peak RSS in KiB, peak bytes in its
/// `snapshot_dir`).
fn run_child(mode: &str, bootstrap: &str, table: &str, rows: usize) -> (f64, f64, f64, f64) {
    match common::child_result(mode, &[bootstrap, table, &rows.to_string()])[..] {
        [seen, secs, rss, disk] => (seen, secs, rss, disk),
        ref other => panic!("{mode}: want rows, seconds, peak RSS and disk bytes, got {other:?}"),
    }
}
