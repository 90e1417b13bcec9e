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

//! The data shared by the benches: a 10-column batch of mixed types (the shape the project's
//! throughput figures are quoted for) and its Fluss schema, the tables the benches read, and
//! what a run cost the machine (CPU, peak RSS, load). [`runtime`]: runs through the real Iggy
//! runtime; [`census`]: the Fluss requests a process sends.
#![allow(dead_code)] // each bench uses a different part

pub mod census;
pub mod runtime;

use std::sync::Arc;

use arrow_array::{
    BooleanArray, Date32Array, Decimal128Array, Float64Array, Int32Array, Int64Array, RecordBatch,
    StringArray, TimestampMicrosecondArray,
};
use arrow_schema::{DataType as ArrowType, Field, Schema as ArrowSchema, TimeUnit};
use std::path::PathBuf;
use std::time::Instant;

use std::collections::HashMap;

use fluss_testkit::fluss::client::{EARLIEST_OFFSET, FlussConnection};
use fluss_testkit::fluss::config::Config;
use fluss_testkit::fluss::metadata::{DataField, DataTypes, Schema, TableDescriptor, TablePath};
use fluss_testkit::{Cluster, tables};

/// The peak resident set (`VmHWM`, KiB) of process `pid` (`"self"`: this one), 0 when unknown.
pub fn peak_rss_kib(pid: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).map(str::to_owned))
        })
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// The unit of `/proc`'s CPU times: Linux reports them in USER_HZ, which is 100 on every
/// architecture it exposes to user space.
const USER_HZ: f64 = 100.0;

/// CPU seconds the whole machine has spent busy so far (every core, every process: user, nice,
/// system, irq, softirq, steal of `/proc/stat`'s `cpu` line): what a run costs the machine
/// when its servers share it, and with the wall time how close the cores were to saturated.
pub fn machine_busy_seconds() -> f64 {
    std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|stat| {
            let line = stat.lines().find(|l| l.starts_with("cpu "))?;
            let ticks: Vec<u64> = line
                .split_whitespace()
                .skip(1)
                .map(|v| v.parse().unwrap_or(0))
                .collect();
            // user nice system idle iowait irq softirq steal: all but idle and iowait.
            let busy = [0, 1, 2, 5, 6, 7]
                .iter()
                .map(|&i| ticks.get(i).copied().unwrap_or(0))
                .sum::<u64>();
            Some(busy as f64 / USER_HZ)
        })
        .unwrap_or(0.0)
}

/// The 1-minute load average (`/proc/loadavg`, what `uptime` shows first), 0 when unknown.
pub fn load_average() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0)
}

/// CPU seconds (user + system, all threads) process `pid` has used so far: a cost per row that
/// holds on a loaded machine, where wall-clock rates move with the load.
pub fn cpu_seconds(pid: &str) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            // The fields after the command name (which may hold spaces) in parentheses.
            let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
            // utime and stime: fields 14 and 15 of stat(5), 12 and 13 after the name.
            let ticks =
                fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
            Some(ticks as f64 / USER_HZ)
        })
        .unwrap_or(0.0)
}

/// A size from the environment (`_` allowed as a digit separator), or `default`.
pub fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(default)
}

/// The rows a batch's messages hold (see [`rows_in`]).
pub fn rows_in_batch(batch: &iggy_connector_fluss_source::sdk::ProducedMessages) -> usize {
    batch.messages.iter().map(rows_in).sum()
}

/// The rows a produced message holds: its `fluss_row_count` header (an Arrow IPC message),
/// else 1 (a JSON row or change).
pub fn rows_in(message: &iggy_connector_fluss_source::sdk::ProducedMessage) -> usize {
    message
        .headers
        .as_ref()
        .and_then(|h| {
            h.iter()
                .find(|(k, _)| k.as_str().is_ok_and(|k| k == "fluss_row_count"))
                .and_then(|(_, v)| v.as_i64().ok())
        })
        .map_or(1, |n| n as usize)
}

/// A library in the target directory of this bench binary (`target/release/` next to its
/// `deps/`), which must be built already. `FLUSS_PLUGIN_LIBRARY=PATH` names another build of
/// the plugin instead (an A/B of two commits with one bench binary).
pub fn library(name: &str) -> PathBuf {
    let other_plugin = std::env::var_os("FLUSS_PLUGIN_LIBRARY")
        .filter(|_| name == "libiggy_connector_fluss_source.so")
        .map(PathBuf::from);
    let lib = other_plugin
        .or_else(|| {
            let exe = std::env::current_exe().ok()?;
            Some(exe.parent()?.parent()?.join(name))
        })
        .expect("target directory");
    assert!(
        lib.exists(),
        "{} is missing; run `cargo build --release -p iggy_connector_fluss_source -p iggy_test_source`",
        lib.display()
    );
    lib
}

/// Rows per append while loading a table.
const LOAD_BATCH: usize = 20_000;

/// The Fluss schema of [`mixed_batch`].
pub fn mixed_schema() -> Schema {
    Schema::builder()
        .column("id", DataTypes::bigint())
        .column("qty", DataTypes::int())
        .column("price", DataTypes::double())
        .column("name", DataTypes::string())
        .column("active", DataTypes::boolean())
        .column("amount", DataTypes::decimal(18, 4))
        .column("created", DataTypes::timestamp_with_precision(6))
        .column("day", DataTypes::date())
        .column("note", DataTypes::string())
        .column("ref", DataTypes::bigint())
        .build()
        .expect("schema")
}

/// [`mixed_schema`] with the primary key `(id, qty)` (`qty` can then partition the table).
pub fn mixed_pk_schema() -> Schema {
    Schema::builder()
        .with_columns(mixed_schema().columns().to_vec())
        .primary_key(vec!["id", "qty"])
        .expect("primary key")
        .build()
        .expect("schema")
}

/// The Fluss fields of [`mixed_batch`], for the encoders.
pub fn mixed_fields() -> Vec<DataField> {
    mixed_schema().row_type().fields().clone()
}

/// Rows `start..start + rows`: BIGINT id, INT, DOUBLE, STRING of 21 chars, BOOLEAN,
/// DECIMAL(18,4), TIMESTAMP(6), DATE, a STRING with 10% nulls, BIGINT.
pub fn mixed_batch(start: i64, rows: usize) -> RecordBatch {
    let ids: Vec<i64> = (start..start + rows as i64).collect();
    mixed_batch_of(&ids, 1000)
}

/// The rows of [`mixed_batch`] with these `ids`, their `qty` (INT) `id % qty_modulus` instead
/// of `id % 1000`: the partition of a table partitioned by `qty` into `qty_modulus` partitions.
pub fn mixed_batch_of(ids: &[i64], qty_modulus: i64) -> RecordBatch {
    let schema = Arc::new(ArrowSchema::new(vec![
        Field::new("id", ArrowType::Int64, true),
        Field::new("qty", ArrowType::Int32, true),
        Field::new("price", ArrowType::Float64, true),
        Field::new("name", ArrowType::Utf8, true),
        Field::new("active", ArrowType::Boolean, true),
        Field::new("amount", ArrowType::Decimal128(18, 4), true),
        Field::new(
            "created",
            ArrowType::Timestamp(TimeUnit::Microsecond, None),
            true,
        ),
        Field::new("day", ArrowType::Date32, true),
        Field::new("note", ArrowType::Utf8, true),
        Field::new("ref", ArrowType::Int64, true),
    ]));
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from(ids.to_vec())),
            Arc::new(Int32Array::from_iter_values(
                ids.iter().map(|i| (i % qty_modulus) as i32),
            )),
            Arc::new(Float64Array::from_iter_values(
                ids.iter().map(|i| *i as f64 * 0.25),
            )),
            Arc::new(StringArray::from_iter_values(
                ids.iter().map(|i| format!("customer-{i:012}")),
            )),
            Arc::new(BooleanArray::from_iter(
                ids.iter().map(|i| Some(i % 2 == 0)),
            )),
            Arc::new(
                Decimal128Array::from_iter_values(ids.iter().map(|i| *i as i128 * 12_345))
                    .with_precision_and_scale(18, 4)
                    .expect("decimal"),
            ),
            Arc::new(TimestampMicrosecondArray::from_iter_values(
                ids.iter().map(|i| 1_700_000_000_000_000 + i * 1_000),
            )),
            Arc::new(Date32Array::from_iter_values(
                ids.iter().map(|i| 19_000 + (i % 1000) as i32),
            )),
            Arc::new(StringArray::from_iter(
                ids.iter()
                    .map(|i| (i % 10 != 0).then(|| format!("note {i}"))),
            )),
            Arc::new(Int64Array::from_iter_values(ids.iter().map(|i| i * 7))),
        ],
    )
    .expect("batch")
}

/// Creates and fills the benches' two tables: a 3-bucket log table of `rows` [`mixed_batch`]
/// rows and a 3-bucket primary-key table of `pk_rows` sample rows; `what` names the bench in
/// its progress lines.
pub async fn load_tables(
    cluster: &Cluster,
    what: &str,
    rows: usize,
    pk_rows: usize,
) -> (TablePath, TablePath) {
    let conn = FlussConnection::new(cluster.config())
        .await
        .expect("connect");
    let admin = conn.get_admin().expect("admin");
    let log = tables::unique_table("bench_log");
    tables::create_log_table(&admin, &log, mixed_schema(), 3).await;
    let started = Instant::now();
    let table = conn.get_table(&log).await.expect("table");
    let writer = table
        .new_append()
        .and_then(|a| a.create_writer())
        .expect("writer");
    let mut at = 0;
    while at < rows {
        let n = LOAD_BATCH.min(rows - at);
        drop(
            writer
                .append_arrow_batch(mixed_batch(at as i64, n))
                .expect("append"),
        );
        at += n;
    }
    writer.flush().await.expect("flush");
    eprintln!(
        "{what}: loaded {rows} log rows into {log} in {:.1?}",
        started.elapsed()
    );

    let pk = tables::unique_table("bench_pk");
    let descriptor = TableDescriptor::builder()
        .schema(tables::sample_pk_schema())
        .distributed_by(Some(3), vec!["id".to_string()])
        .build()
        .expect("pk descriptor");
    tables::create_table(&admin, &pk, &descriptor).await;
    let started = Instant::now();
    fluss_testkit::write::upsert_rows(&conn, &pk, (0..pk_rows as i64).map(tables::sample_row))
        .await;
    eprintln!(
        "{what}: loaded {pk_rows} primary-key rows in {:.1?}",
        started.elapsed()
    );
    (log, pk)
}

/// A connection for the bare scanners, and the earliest offset of every bucket of `path`.
pub async fn bare_setup(
    bootstrap: &str,
    path: &TablePath,
    max_poll_records: usize,
) -> (FlussConnection, HashMap<i32, i64>) {
    let conn = FlussConnection::new(Config {
        bootstrap_servers: bootstrap.to_owned(),
        scanner_log_max_poll_records: max_poll_records,
        ..Config::default()
    })
    .await
    .expect("connect");
    let info = conn
        .get_admin()
        .expect("admin")
        .get_table_info(path)
        .await
        .expect("table");
    let offsets = (0..info.get_num_buckets())
        .map(|b| (b, EARLIEST_OFFSET))
        .collect();
    (conn, offsets)
}

/// What the bare fluss-rs batch scanner read: every row from earliest, and when its first
/// non-empty poll came.
pub struct BareScan {
    /// Rows read.
    pub rows: usize,
    /// When the scanner was subscribed.
    pub subscribed: Instant,
    /// When the first non-empty poll returned, and how many rows it held.
    pub first_poll: (Instant, usize),
}

/// The bare Arrow batch scanner (the baseline of the end-to-end figures) reading the log
/// table `path` from earliest until `rows` rows arrived.
pub async fn bare_scanner(bootstrap: &str, path: &TablePath, rows: usize) -> BareScan {
    let (conn, offsets) = bare_setup(
        bootstrap,
        path,
        Config::default().scanner_log_max_poll_records,
    )
    .await;
    let table = conn.get_table(path).await.expect("table");
    let scanner = table
        .new_scan()
        .create_record_batch_log_scanner()
        .expect("scanner");
    let subscribed = Instant::now();
    scanner
        .subscribe_buckets(&offsets)
        .await
        .expect("subscribe");
    let mut seen = 0;
    let mut first: Option<(Instant, usize)> = None;
    while seen < rows {
        for batch in scanner
            .poll(std::time::Duration::from_millis(500))
            .await
            .expect("poll")
        {
            seen += batch.num_records();
            first.get_or_insert((Instant::now(), seen));
        }
    }
    BareScan {
        rows: seen,
        subscribed,
        first_poll: first.expect("rows arrived"),
    }
}

/// Waits until the latest KV snapshot of every bucket of `path` holds all of its changes (its
/// log offset is the bucket's high watermark), so a snapshot mode reads no changelog.
pub async fn kv_snapshots_caught_up(cluster: &Cluster, path: &TablePath) {
    let conn = FlussConnection::new(cluster.config())
        .await
        .expect("connect");
    let admin = conn.get_admin().expect("admin");
    let started = Instant::now();
    fluss_testkit::tables::kv_snapshots_caught_up(
        &admin,
        path,
        std::time::Duration::from_secs(1800),
    )
    .await;
    eprintln!(
        "KV snapshots of {path} caught up after {:.1?}",
        started.elapsed()
    );
}

/// Runs this bench's executable again as a child (`--child <mode> <args>…`) and returns the
/// numbers of the `RESULT <mode> <number>…` line every child mode prints when it is done;
/// panics with the child's stderr when it printed none.
pub fn child_result(mode: &str, args: &[&str]) -> Vec<f64> {
    let exe = std::env::current_exe().expect("the bench's executable");
    let out = std::process::Command::new(exe)
        .arg("--child")
        .arg(mode)
        .args(args)
        .output()
        .expect("child");
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with("RESULT"))
        .unwrap_or_else(|| panic!("{mode} failed: {}", String::from_utf8_lossy(&out.stderr)));
    line.split_whitespace()
        .skip(2)
        .map(|field| {
            field
                .parse()
                .unwrap_or_else(|_| panic!("{mode}: {field:?} in {line:?} is not a number"))
        })
        .collect()
}
