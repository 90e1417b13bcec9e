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

//! Runs through the real `iggy-server` and `iggy-connectors` (`IGGY_BIN_DIR`), shared by
//! `benches/runtime.rs` and `benches/scale.rs`: one [`Run`] is a fresh server and runtime with
//! one or more connectors of one plugin, each publishing to a topic of its own in the stream
//! [`STREAM`]; [`measure`] waits until they delivered everything and reads back what the
//! server holds (rows/s between the server timestamps of the first and the last message),
//! what `iggy-connectors` used (peak RSS, CPU) and how often it saved each connector's state.
//! [`ceiling`] builds the run of the SDK's test source that sends the same messages.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use fluss_testkit::fluss::metadata::TablePath;
use fluss_testkit::iggy::{
    ConnectorsRuntime, HeaderValue, IggyServer, Message, Saves, SourceConnector, StateSaves, Stop,
    parse_messages,
};
use fluss_testkit::{Cluster, tables};
use serde_json::{Value, json};

use super::census::{Census, RequestCensus};

/// The stream every run publishes to.
pub const STREAM: &str = "bench";
/// Longest wait for one run to deliver everything.
const RUN_TIMEOUT: Duration = Duration::from_secs(900);
/// An Arrow IPC run is complete when the stream's count stays the same this long.
const SETTLED: Duration = Duration::from_secs(3);
/// The plugin's default `max_batch_bytes`: the ceiling of Arrow IPC batches as many messages.
pub const MAX_BATCH_BYTES: usize = 8 << 20;

/// The plugin's config for `table` of the test database, read from its earliest offset (the
/// changelog path of a primary-key table), with `extra` keys added or replacing those.
pub fn plugin_config(cluster: &Cluster, table: &TablePath, extra: &Value) -> Value {
    let mut config = json!({
        "bootstrap_servers": cluster.bootstrap(),
        "database": tables::TEST_DATABASE,
        "table": table.table(),
        "starting_offset": "earliest",
    });
    let object = config.as_object_mut().expect("object");
    object.extend(extra.as_object().expect("object").clone());
    config
}

/// A multi-thread Tokio runtime for a bench's own fluss-rs calls.
pub fn tokio_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// What one runtime runs and how the stream is set up.
#[derive(Clone)]
pub struct Run {
    pub label: String,
    pub library: PathBuf,
    /// One connector per entry, all of `library`: the first publishes to the topic `rows`
    /// (key `bench`), the others to `rows1`, `rows2`, … (keys `bench1`, …).
    pub plugin_configs: Vec<Value>,
    pub stream_schema: &'static str,
    pub batch_length: Option<u32>,
    pub linger_time: Option<String>,
    /// Messages to wait for, in all topics; `None`: until the count settles (Arrow IPC).
    pub messages: Option<u64>,
    /// How long the count must stay the same to count as settled (`None`: 3 s); longer for a
    /// plugin that may pause between messages (many partitions).
    pub settle: Option<Duration>,
    /// Count the runtime's Fluss requests by API over the run ([`RequestCensus`]: strace,
    /// which slows the runtime, so the run's rates are not comparable with others).
    pub census: bool,
}

impl Run {
    /// The connector key and topic of connector `i`.
    fn names(i: usize) -> (String, String) {
        if i == 0 {
            ("bench".into(), "rows".into())
        } else {
            (format!("bench{i}"), format!("rows{i}"))
        }
    }
}

/// What one run measured.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub messages: u64,
    /// Seconds from the first message's server timestamp to the last's (over every topic).
    pub span: f64,
    /// Seconds from starting the runtime to seeing the last message.
    pub wall: f64,
    /// Seconds from starting the runtime to the first message's server timestamp: the
    /// runtime's start, the plugin's open and its first batch.
    pub first_after: f64,
    pub rss_kib: u64,
    /// CPU seconds `iggy-connectors` used (start, open and the whole read, until the last
    /// message was seen).
    pub cpu: f64,
    /// CPU seconds the whole machine was busy over the same time (every process: the Fluss
    /// cluster, `iggy-server`, `iggy-connectors`, this bench's polling).
    pub machine_cpu: f64,
    /// The first message of the first topic.
    pub first: Message,
    /// Rows in the messages that landed with the first one (they are not counted in the
    /// span's rate).
    pub first_rows: u64,
    /// Rows in all messages (the `fluss_row_count` headers for Arrow IPC, else `messages`).
    pub rows: u64,
    pub payload_bytes: u64,
    /// The runtime's saves of the connectors' state files, summed over the connectors.
    pub saves: Saves,
    /// The 1-minute load average when the run started.
    pub load: f64,
    /// The runtime's Fluss requests over the run, with [`Run::census`].
    pub requests: Option<Census>,
    /// Bytes the runtime logged (its stdout and stderr, the plugin's lines with them).
    pub log_bytes: u64,
}

impl Outcome {
    /// Rows per second over the span.
    pub fn rate(&self) -> f64 {
        (self.rows - self.first_rows) as f64 / self.span.max(1e-6)
    }

    /// CPU microseconds of the runtime process per row.
    pub fn cpu_us_per_row(&self) -> f64 {
        self.cpu * 1e6 / self.rows.max(1) as f64
    }

    /// CPU microseconds the whole machine spent per row.
    pub fn machine_us_per_row(&self) -> f64 {
        self.machine_cpu * 1e6 / self.rows.max(1) as f64
    }

    /// How busy the machine's cores were over the run (1.0: every core all the time).
    pub fn machine_load(&self) -> f64 {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        self.machine_cpu / (self.wall.max(1e-6) * cores)
    }
}

/// The `fluss_row_count` header of an Arrow IPC message.
pub fn row_count(m: &Message) -> Option<u64> {
    m.headers
        .get("fluss_row_count")
        .and_then(HeaderValue::as_i64)
        .map(|n| n as u64)
}

/// `count` messages of `topic` from `offset` (partition 0).
fn messages_at(
    server: &IggyServer,
    dir: &Path,
    topic: &str,
    offset: u64,
    count: u64,
) -> Vec<Message> {
    let file = dir.join(format!("poll-{topic}-{offset}.bin"));
    server
        .cli(&[
            "message",
            "poll",
            "--offset",
            &offset.to_string(),
            "-m",
            &count.to_string(),
            "--output-file",
            &file.to_string_lossy(),
            STREAM,
            topic,
            "0",
        ])
        .unwrap_or_else(|e| panic!("{e}"));
    let bytes = std::fs::read(&file).unwrap_or_default();
    let _ = std::fs::remove_file(&file);
    parse_messages(&bytes).unwrap_or_else(|e| panic!("{topic} messages at {offset}: {e}"))
}

/// Starts a perf recording while `_pid` runs, into `out` (ended with SIGINT by
/// [`stop_perf`]).
pub fn start_perf(_pid: u32, out: &Path) -> Option<Child> {
    Command::new("perf")
        // System-wide: `-p` missed the plugin's own threads; `perf report --pid PID` (the
        // pid is in the file name) keeps the runtime's samples.
        .args(["record", "-a", "-g", "-F", "499", "-o"])
        .arg(out)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()
}

pub fn stop_perf(perf: Option<Child>) {
    if let Some(mut perf) = perf {
        // perf writes its file on SIGINT; our own child, not reaped yet, so its pid is ours.
        let _ = Command::new("kill")
            .args(["-INT", &perf.id().to_string()])
            .status();
        let _ = perf.wait();
    }
}

/// Microseconds since the Unix epoch, the clock of the server's message timestamps.
fn epoch_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// What one topic holds: its message count, first and last message, rows, payload bytes, and
/// the rows that landed with its first message.
struct TopicRead {
    first: Message,
    last: Message,
    rows: u64,
    first_rows: u64,
    bytes: u64,
}

/// Reads back one topic of `messages` messages; `counted`: Arrow IPC, every message is read
/// for its row count and size.
fn read_topic(
    server: &IggyServer,
    dir: &Path,
    label: &str,
    topic: &str,
    messages: u64,
    counted: bool,
) -> TopicRead {
    let first = messages_at(server, dir, topic, 0, 1).remove(0);
    let last = messages_at(server, dir, topic, messages - 1, 1).remove(0);
    if !counted {
        let bytes = first.payload.len() as u64 * messages;
        return TopicRead {
            first,
            last,
            rows: messages,
            first_rows: 1,
            bytes,
        };
    }
    let mut first_rows = row_count(&first).expect("an Arrow IPC message has fluss_row_count");
    let mut rows = 0;
    let mut bytes = 0;
    let mut offset = 0;
    while offset < messages {
        let chunk = messages_at(server, dir, topic, offset, 100);
        assert!(
            !chunk.is_empty(),
            "{label}: nothing at {topic} offset {offset}"
        );
        for m in &chunk {
            rows += row_count(m).unwrap_or(0);
            if m.timestamp == first.timestamp && m.offset > 0 {
                // Landed with the first message (one send): outside the span as well.
                first_rows += row_count(m).unwrap_or(0);
            }
            bytes += m.payload.len() as u64;
        }
        offset += chunk.len() as u64;
    }
    TopicRead {
        first,
        last,
        rows,
        first_rows,
        bytes,
    }
}

/// One run in a server and runtime of its own (its data dir removed afterwards).
pub fn measure(base: &Path, run: &Run, perf_dir: Option<&Path>) -> Outcome {
    let dir = base.join(&run.label);
    let _ = std::fs::remove_dir_all(&dir);
    let mut server = IggyServer::start(&dir);
    let connectors: Vec<SourceConnector> = run
        .plugin_configs
        .iter()
        .enumerate()
        .map(|(i, config)| {
            let (key, topic) = Run::names(i);
            let mut connector = SourceConnector::new(
                &key,
                &run.library,
                STREAM,
                &topic,
                run.stream_schema,
                config.clone(),
            );
            connector.batch_length = run.batch_length;
            connector.linger_time = run.linger_time.clone();
            connector
        })
        .collect();
    let runtime_dir = dir.join("runtime");
    let saves = StateSaves::watch(&ConnectorsRuntime::state_dir_in(&runtime_dir));
    let load = super::load_average();
    let started = Instant::now();
    let started_us = epoch_us();
    let machine_started = super::machine_busy_seconds();
    let mut runtime = ConnectorsRuntime::start(&server, &runtime_dir, &connectors);
    let pid = runtime.pid().expect("runtime pid");
    let perf = perf_dir.and_then(|d| start_perf(pid, &d.join(format!("{}-{pid}.data", run.label))));
    let census = run
        .census
        .then(|| RequestCensus::start(pid, &dir))
        .flatten();
    // Several topics are counted in one call per stream; a stream that holds several
    // connectors' topics is polled less often, since each call is a CLI process.
    let interval = Duration::from_millis(if connectors.len() > 1 { 1000 } else { 250 });
    // What the runtime and the machine had used when the count last changed: the end of a
    // settled run, whose wait for the count to settle is no part of it.
    let used = || {
        (
            Instant::now(),
            super::cpu_seconds(&pid.to_string()),
            super::machine_busy_seconds(),
        )
    };
    let mut last = (0u64, used());
    let total = loop {
        std::thread::sleep(interval);
        assert!(
            runtime.is_running(),
            "{}: iggy-connectors exited; see {}",
            run.label,
            runtime.log_path().display()
        );
        let count = server.stream_messages(STREAM).unwrap_or(0);
        if count != last.0 {
            last = (count, used());
        }
        match run.messages {
            Some(n) if count >= n => {
                last.1 = used();
                break count;
            }
            None if count > 0 && last.1.0.elapsed() >= run.settle.unwrap_or(SETTLED) => {
                break count;
            }
            _ => {}
        }
        assert!(
            started.elapsed() < RUN_TIMEOUT,
            "{}: {count} messages after {RUN_TIMEOUT:?}; see {}",
            run.label,
            runtime.log_path().display()
        );
    };
    let (ended, cpu, machine_ended) = last.1;
    let wall = (ended - started).as_secs_f64();
    let machine_cpu = machine_ended - machine_started;
    let rss_kib = super::peak_rss_kib(&pid.to_string());
    stop_perf(perf);
    let requests = census.and_then(RequestCensus::finish);
    runtime.stop(Stop::Kill);
    let log_bytes = std::fs::metadata(runtime.log_path()).map_or(0, |m| m.len());
    // The runtime writes `<file>.tmp` and renames it into place: only the state files count.
    let state_files: Vec<String> = connectors
        .iter()
        .filter_map(|c| {
            let file = runtime.state_file(&c.key);
            Some(file.file_name()?.to_string_lossy().into_owned())
        })
        .collect();
    let saves = saves
        .finish()
        .into_iter()
        .filter(|(name, _)| state_files.contains(name))
        .fold(Saves::default(), |sum, (_, s)| Saves {
            count: sum.count + s.count,
            bytes: sum.bytes + s.bytes,
            largest: sum.largest.max(s.largest),
        });
    let counted = run.messages.is_none();
    let mut reads = Vec::new();
    let mut in_topics = 0;
    for i in 0..connectors.len() {
        let (_, topic) = Run::names(i);
        let messages = server.topic(STREAM, &topic).map_or(0, |t| t.messages);
        assert!(messages > 0, "{}: nothing in topic {topic}", run.label);
        in_topics += messages;
        reads.push(read_topic(
            &server, &dir, &run.label, &topic, messages, counted,
        ));
    }
    assert_eq!(in_topics, total, "{}: messages per topic", run.label);
    let earliest = reads
        .iter()
        .min_by_key(|r| r.first.timestamp)
        .expect("a topic");
    let latest = reads.iter().map(|r| r.last.timestamp).max().unwrap_or(0);
    let span = latest.saturating_sub(earliest.first.timestamp) as f64 / 1e6;
    let first_after = earliest.first.timestamp.saturating_sub(started_us) as f64 / 1e6;
    let first_rows = earliest.first_rows;
    let first = reads[0].first.clone();
    server.stop();
    if let Some(keep) = std::env::var_os("RUNTIME_KEEP_LOGS") {
        let keep = PathBuf::from(keep);
        let _ = std::fs::create_dir_all(&keep);
        let _ = std::fs::copy(runtime.log_path(), keep.join(format!("{}.log", run.label)));
    }
    let _ = std::fs::remove_dir_all(&dir);
    Outcome {
        messages: total,
        span,
        wall,
        first_after,
        rss_kib,
        cpu,
        machine_cpu,
        first,
        first_rows,
        rows: reads.iter().map(|r| r.rows).sum(),
        payload_bytes: reads.iter().map(|r| r.bytes).sum(),
        saves,
        load,
        requests,
        log_bytes,
    }
}

/// The test source's `headers` list with the kinds and sizes of `m`'s headers.
pub fn header_spec(m: &Message) -> Value {
    let specs: Vec<Value> = m
        .headers
        .iter()
        .map(|(name, value)| match value {
            HeaderValue::String(s) => json!({"name": name, "kind": "string", "size": s.len()}),
            HeaderValue::Raw(r) => json!({"name": name, "kind": "raw", "size": r.len()}),
            HeaderValue::Int32(_) => json!({"name": name, "kind": "int32"}),
            HeaderValue::Int64(_) => json!({"name": name, "kind": "int64"}),
            HeaderValue::Uint64(_) => json!({"name": name, "kind": "uint64"}),
            HeaderValue::Bool(_) => json!({"name": name, "kind": "bool"}),
            other => panic!("header {name}: no test-source kind for {other:?}"),
        })
        .collect();
    if specs.is_empty() {
        json!("none")
    } else {
        Value::Array(specs)
    }
}

/// How a ceiling run copies a plugin run's messages.
pub struct CeilingShape {
    /// The test source's batch size (`None`: as many of the plugin's average message as fit
    /// in [`MAX_BATCH_BYTES`], Arrow IPC).
    pub batch: Option<u64>,
    /// Send the plugin's first payload verbatim (JSON), else payloads of its average size.
    pub literal_payload: bool,
}

/// The ceiling of `plugin`'s run: the test source in as many connectors as `run` had, each
/// sending its share of `plugin`'s messages with the same payload, header kinds and sizes,
/// and batching.
pub fn ceiling(run: &Run, plugin: &Outcome, shape: &CeilingShape, test_source: &Path) -> Run {
    let avg_payload = (plugin.payload_bytes / plugin.messages.max(1)) as usize;
    let batch = shape
        .batch
        .unwrap_or_else(|| (MAX_BATCH_BYTES / avg_payload.max(1)).max(1) as u64);
    let connectors = run.plugin_configs.len().max(1) as u64;
    let per_connector = plugin.messages / connectors;
    let mut config = json!({
        "total": per_connector,
        "batch": batch,
        "poll_ahead": true,
        "headers": header_spec(&plugin.first),
        "schema": if run.stream_schema == "raw" { "raw" } else { "json" },
    });
    let object = config.as_object_mut().expect("object");
    if shape.literal_payload {
        let text = String::from_utf8(plugin.first.payload.clone()).expect("JSON payload");
        object.insert("payload".into(), Value::String(text));
    } else {
        object.insert("payload_size".into(), json!(avg_payload));
    }
    Run {
        label: format!("{}_ceiling", run.label),
        library: test_source.to_owned(),
        plugin_configs: vec![config; connectors as usize],
        stream_schema: run.stream_schema,
        batch_length: run.batch_length,
        linger_time: None,
        messages: Some(per_connector * connectors),
        settle: None,
        census: false,
    }
}

/// The middle value (the upper one of an even count).
pub fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// A rate as `1.23 M` or `456 K`.
pub fn fmt_rate(rate: f64) -> String {
    if rate >= 1e6 {
        format!("{:.2} M", rate / 1e6)
    } else {
        format!("{:.0} K", rate / 1e3)
    }
}
