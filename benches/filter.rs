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

//! Row filter cost and gain against a real local Fluss cluster: the plugin over the C ABI
//! reading the whole 2,000,000-row log table of the e2e bench without a filter and with
//! `filter = "qty < 10"` (`qty` is `id % 1000`, so 1% of the rows, spread over every batch),
//! in JSON and in Arrow IPC.
//!
//! A run ends when the positions in the batch state reach the end of every bucket, so
//! "rows/s scanned" counts every row read (delivered or filtered out) and "messages/s" what
//! was handed to the runtime. The test cluster (Fluss 0.9.1) does not filter on the server,
//! so the figures are the client-side filter's alone; a server that skips batches by their
//! statistics would only shorten the filtered runs.
//!
//! Each mode runs in its own child process (this binary with `--child MODE`).
//! Run: `cargo build --release -p iggy_connector_fluss_source && cargo bench --bench filter`.
//! `E2E_ROWS` (default 2,000,000), `FLUSS_BOOTSTRAP` reuses a running cluster.

mod common;

use std::time::{Duration, Instant};

use fluss_testkit::{Cluster, ClusterOptions, tables};
use iggy_connector_fluss_source::state::SavedState;

/// Keeps 1% of the rows.
const FILTER: &str = "qty < 10";

/// Reads through the plugin until the positions cover `rows` rows; (messages, rows in them).
fn through_plugin(config: serde_json::Value, rows: i64) -> (usize, usize) {
    let lib = common::library("libiggy_connector_fluss_source.so");
    let harness = fluss_source_runner::Harness::load(&lib).expect("load plugin");
    let instance = harness.open(&config.to_string(), None).expect("open");
    assert_eq!(instance.start(), 0);
    let (mut messages, mut delivered) = (0, 0);
    loop {
        let Some(batch) = instance.next_batch(Duration::from_secs(60)) else {
            panic!("no batch for 60 s after {messages} messages");
        };
        messages += batch.messages.messages.len();
        delivered += common::rows_in_batch(&batch.messages);
        let scanned: i64 = batch
            .messages
            .state
            .as_ref()
            .map(|s| {
                SavedState::decode(s)
                    .expect("state")
                    .positions
                    .values()
                    .filter_map(|position| position.offset())
                    .sum()
            })
            .unwrap_or(0);
        assert_eq!(instance.ack(&batch), 0);
        if scanned >= rows {
            break;
        }
    }
    instance.close();
    (messages, delivered)
}

fn child(args: &[String]) {
    let (mode, bootstrap, table) = (args[0].as_str(), &args[1], &args[2]);
    let rows: i64 = args[3].parse().expect("rows");
    let mut config = serde_json::json!({
        "bootstrap_servers": bootstrap,
        "database": tables::TEST_DATABASE,
        "table": table,
        "poll_interval": "100ms",
        "batch_size": 5000,
    });
    let c = config.as_object_mut().expect("object");
    if mode.starts_with("ipc") {
        c.insert("payload_format".into(), "arrow_ipc".into());
        c.insert("batch_size".into(), 50.into());
    }
    if mode.ends_with("filtered") {
        c.insert("filter".into(), FILTER.into());
    }
    let started = Instant::now();
    let (messages, delivered) = through_plugin(config, rows);
    let secs = started.elapsed().as_secs_f64();
    println!("RESULT {mode} {messages} {delivered} {secs:.3}");
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(at) = args.iter().position(|a| a == "--child") {
        child(&args[at + 1..]);
        return;
    }
    let rows = common::env_usize("E2E_ROWS", 2_000_000);
    let cluster = match std::env::var("FLUSS_BOOTSTRAP") {
        Ok(_) => Cluster::shared(),
        Err(_) => Box::leak(Box::new(Cluster::start(ClusterOptions::default()))),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (log, _) = rt.block_on(common::load_tables(cluster, "filter", rows, 1));
    println!("filter `{FILTER}` over {rows} rows; one run per mode");
    println!(
        "mode           messages  rows out  seconds  rows/s scanned  messages/s  scan vs unfiltered"
    );
    let mut unfiltered = 0.0;
    for mode in ["json", "json_filtered", "ipc", "ipc_filtered"] {
        let result =
            common::child_result(mode, &[cluster.bootstrap(), log.table(), &rows.to_string()]);
        let [messages, delivered, secs] = result[..] else {
            panic!("{mode}: want messages, rows and seconds, got {result:?}");
        };
        let scan_rate = rows as f64 / secs;
        if !mode.ends_with("filtered") {
            unfiltered = scan_rate;
        }
        println!(
            "{mode:<14} {messages:<9} {delivered:<9} {secs:<8.2} {scan_rate:<15.0} {:<11.0} {:.2}",
            messages / secs,
            scan_rate / unfiltered
        );
    }
}
