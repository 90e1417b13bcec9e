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

//! Shared pieces of the integration tests: the loaded plugin, a stream reader that acts like
//! the runtime (persisting state only on Ack), and table helpers.

use std::collections::{BTreeMap, HashMap};
use std::sync::LazyLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use fluss_source_runner::{Batch, Harness, Instance, Level, logs};
use fluss_testkit::Cluster;
use fluss_testkit::fluss::metadata::TablePath;
use fluss_testkit::fluss::rpc::message::OffsetSpec;
use iggy_connector_fluss_source::position::{BucketKey, Position};
use iggy_connector_fluss_source::state::SavedState;
use iggy_connector_sdk::{ConnectorState, HeaderKey, HeaderValue, Schema};
use serde_json::{Value, json};

pub use fluss_testkit::{plugin_path, rt};

static HARNESS: LazyLock<Harness> =
    LazyLock::new(|| Harness::load(plugin_path()).expect("load the plugin library"));

/// The loaded plugin (one per test process, like the runtime's one dlopen per path).
pub fn harness() -> &'static Harness {
    &HARNESS
}

/// Plugin ids for raw ABI calls, far from the harness' counter (which starts at 1), so they
/// never collide with an instance another test opened.
static RAW_ID: AtomicU32 = AtomicU32::new(900_000);

/// A plugin id no instance of this process has used.
pub fn raw_id() -> u32 {
    RAW_ID.fetch_add(1, Ordering::Relaxed)
}

/// `iggy_source_open` under a fresh id with `config` (JSON text) and `state`, which must fail:
/// the id and the ERROR lines logged for it.
pub fn open_refused(config: &str, state: Option<&[u8]>) -> (u32, Vec<String>) {
    let id = raw_id();
    let code = harness().call_open(id, config, state);
    let lines: Vec<String> = logs()
        .into_iter()
        .filter(|l| l.level == Level::Error && fluss_testkit::names_instance(&l.message, id))
        .map(|l| l.message)
        .collect();
    assert_ne!(
        code, 0,
        "open of plugin {id} should fail; ERROR lines: {lines:#?}"
    );
    (id, lines)
}

/// The prefix of every line the plugin logs about instance `id` opened with `config`:
/// `fluss[<id> <db.table>]`, or `fluss[<id>]` when the config names no table.
pub fn instance_prefix(id: u32, config: Option<&Value>) -> String {
    let name = |key: &str| config.and_then(|c| c.get(key)).and_then(Value::as_str);
    match (name("database"), name("table")) {
        (Some(db), Some(table)) if !db.is_empty() && !table.is_empty() => {
            format!("fluss[{id} {db}.{table}]")
        }
        _ => format!("fluss[{id}]"),
    }
}

/// The ERROR lines this process logged that contain `needle`, leaving out the first `since`
/// log lines.
pub fn error_lines(needle: &str, since: usize) -> Vec<String> {
    logs()
        .into_iter()
        .skip(since)
        .filter(|l| l.level == Level::Error && l.message.contains(needle))
        .map(|l| l.message)
        .collect()
}

/// The shared cluster of this test binary.
pub fn cluster() -> &'static Cluster {
    Cluster::shared()
}

/// A plugin config for `table` in the test database, with `extra` keys merged in.
pub fn config(table: &str, extra: Value) -> Value {
    config_on(cluster(), table, extra)
}

/// A plugin config for `table` in the test database of `cluster`, with `extra` keys merged in.
pub fn config_on(cluster: &Cluster, table: &str, extra: Value) -> Value {
    merged(
        json!({
            "bootstrap_servers": cluster.bootstrap(),
            "database": fluss_testkit::tables::TEST_DATABASE,
            "table": table,
            "poll_interval": "200ms",
            "connect_timeout": "20s",
            // The changelog tests read the changelog; `full` (the default) has tests of its own.
            "starting_offset": "earliest",
        }),
        extra,
    )
}

/// The log end (the offset after its last record) of every bucket of `path` on `cluster`, or
/// of its partition `partition`, keyed as the plugin keys buckets.
pub fn log_ends(
    cluster: &Cluster,
    path: &TablePath,
    partition: Option<&str>,
) -> Vec<(BucketKey, i64)> {
    rt().block_on(async {
        let conn = cluster.connection().await;
        let admin = conn.get_admin().expect("admin");
        let info = admin.get_table_info(path).await.expect("table info");
        let buckets: Vec<i32> = (0..info.get_num_buckets()).collect();
        let (partition_id, listed) = match partition {
            None => (
                None,
                admin.list_offsets(path, &buckets, OffsetSpec::Latest).await,
            ),
            Some(name) => {
                let id = admin
                    .list_partition_infos(path)
                    .await
                    .expect("list partitions")
                    .into_iter()
                    .find(|p| p.get_partition_name() == name)
                    .unwrap_or_else(|| panic!("no partition {name}"))
                    .get_partition_id();
                let listed = admin
                    .list_partition_offsets(path, name, &buckets, OffsetSpec::Latest)
                    .await;
                (Some(id), listed)
            }
        };
        let listed = listed.expect("list_offsets");
        buckets
            .iter()
            .map(|bucket| {
                let key = BucketKey {
                    partition: partition_id,
                    bucket: *bucket,
                };
                (key, listed[bucket])
            })
            .collect()
    })
}

/// `base` with the keys of `extra` added or replaced.
pub fn merged(mut base: Value, extra: Value) -> Value {
    if let (Value::Object(b), Value::Object(e)) = (&mut base, extra) {
        b.extend(e);
    }
    base
}

/// One message as a consumer sees it.
#[derive(Debug, Clone)]
pub struct Received {
    pub id: u128,
    pub bucket: i32,
    pub offset: i64,
    pub partition: Option<String>,
    pub change_type: Option<String>,
    pub timestamp: i64,
    /// The parsed payload for JSON batches (`Null` for raw ones).
    pub payload: Value,
    /// `fluss_row_count` (Arrow IPC messages).
    pub row_count: Option<i64>,
    /// `fluss_schema_id` (when `headers` names it).
    pub schema_id: Option<i32>,
    /// The payload bytes as sent (key order is part of the contract; `Value` sorts keys).
    pub raw: Vec<u8>,
}

fn header<'a>(
    headers: &'a BTreeMap<HeaderKey, HeaderValue>,
    name: &str,
) -> Option<&'a HeaderValue> {
    headers.get(&HeaderKey::new(name).expect("header key"))
}

fn decode(batch: &Batch) -> Vec<Received> {
    let json = matches!(batch.messages.schema, Schema::Json);
    batch
        .messages
        .messages
        .iter()
        .map(|m| {
            let headers = m.headers.as_ref().expect("every message has headers");
            Received {
                id: m.id.expect("every message has an id"),
                bucket: header(headers, "fluss_bucket").unwrap().as_i32().unwrap(),
                offset: header(headers, "fluss_offset").unwrap().as_i64().unwrap(),
                partition: header(headers, "fluss_partition")
                    .map(|p| p.as_str().unwrap().to_owned()),
                change_type: header(headers, "fluss_change_type")
                    .map(|p| p.as_str().unwrap().to_owned()),
                timestamp: header(headers, "fluss_timestamp")
                    .unwrap()
                    .as_i64()
                    .unwrap(),
                payload: if json {
                    serde_json::from_slice(&m.payload).expect("payload is JSON")
                } else {
                    Value::Null
                },
                row_count: header(headers, "fluss_row_count").map(|c| c.as_i64().unwrap()),
                schema_id: header(headers, "fluss_schema_id").map(|c| c.as_i32().unwrap()),
                raw: m.payload.clone(),
            }
        })
        .collect()
}

/// How long a test waits for what it expects (a count of messages, a table's rows, a log
/// line) before it fails: far beyond what it takes on an idle machine, so that only a stream
/// that stopped, not a slow one, fails the test.
pub const DEADLINE: Duration = Duration::from_secs(180);

/// How a reader answers batches.
#[derive(Debug, Clone, Copy)]
pub enum Answer {
    /// Ack every batch.
    AckAll,
    /// Nack every n-th batch (1-based), ack the others.
    NackEvery(u64),
}

/// A running plugin instance read the way the runtime reads it.
pub struct Stream {
    instance: Option<Instance>,
    /// The state the runtime would have persisted (from the last acked batch that had one).
    pub state: Option<Vec<u8>>,
    /// Every message of every acked batch, in order.
    pub acked: Vec<Received>,
    /// Every message of every nacked batch, in order.
    pub nacked: Vec<Received>,
    batches: u64,
}

impl Stream {
    /// Opens an instance with `config` and saved `state`; `Err` carries open's return code.
    pub fn open(config: &Value, state: Option<Vec<u8>>) -> Result<Self, i32> {
        let instance = match harness().open(&config.to_string(), state.as_deref()) {
            Ok(instance) => instance,
            Err(fluss_source_runner::Error::OpenFailed { code, .. }) => return Err(code),
            Err(e) => panic!("open: {e}"),
        };
        assert_eq!(instance.start(), 0, "handle_v2 accepted");
        Ok(Self {
            instance: Some(instance),
            state,
            acked: Vec::new(),
            nacked: Vec::new(),
            batches: 0,
        })
    }

    fn instance(&self) -> &Instance {
        self.instance.as_ref().expect("stream is open")
    }

    /// Polls once (up to 250 ms) and answers the batch, if one came, per `answer`; whether
    /// one came.
    fn step(&mut self, answer: Answer) -> bool {
        let Some(batch) = self.instance().next_batch(Duration::from_millis(250)) else {
            return false;
        };
        self.batches += 1;
        let received = decode(&batch);
        let nack = matches!(answer, Answer::NackEvery(n) if self.batches.is_multiple_of(n));
        if nack {
            assert_eq!(self.instance().nack(&batch), 0, "nack accepted");
            self.nacked.extend(received);
        } else {
            if let Some(state) = &batch.messages.state {
                self.state = Some(state.0.clone());
            }
            assert_eq!(self.instance().ack(&batch), 0, "ack accepted");
            self.acked.extend(received);
        }
        true
    }

    /// Reads (answering per `answer`) until `done` accepts the stream, checked before every
    /// poll; panics after [`DEADLINE`] naming `what`. Tests wait for what they expect, never
    /// for a pause in the stream: a loaded machine pauses a server for seconds mid-read.
    pub fn read_until(
        &mut self,
        what: &str,
        answer: Answer,
        mut done: impl FnMut(&Stream) -> bool,
    ) {
        let started = Instant::now();
        while !done(self) {
            assert!(
                started.elapsed() < DEADLINE,
                "timed out after {DEADLINE:?} waiting for {what}; {} messages acknowledged, {} nacked",
                self.acked.len(),
                self.nacked.len()
            );
            self.step(answer);
        }
    }

    /// Reads until `want` messages were acknowledged in all ([`Stream::read_until`] for a
    /// count); returns that count.
    pub fn read(&mut self, want: usize, answer: Answer) -> usize {
        self.read_until(&format!("{want} acknowledged messages"), answer, |s| {
            s.acked.len() >= want
        });
        self.acked.len()
    }

    /// Whether the state the runtime would have saved commits every bucket of `ends` at its
    /// offset or past it (a bucket in its snapshot phase is not).
    pub fn committed_to(&self, ends: &[(BucketKey, i64)]) -> bool {
        let Some(state) = &self.state else {
            return ends.iter().all(|(_, end)| *end == 0);
        };
        let saved = SavedState::decode(&ConnectorState(state.clone()))
            .expect("the plugin reads the state it wrote");
        ends.iter().all(
            |(key, end)| matches!(saved.positions.get(key), Some(Position::At(at)) if at >= end),
        )
    }

    /// Reads until every bucket's acknowledged position reached its end in `ends` ([`log_ends`]
    /// listed after the last write): everything written was delivered and acknowledged.
    pub fn read_to(&mut self, ends: &[(BucketKey, i64)], answer: Answer) {
        self.read_until(
            &format!("the acknowledged positions to reach the log ends {ends:?}"),
            answer,
            |s| s.committed_to(ends),
        );
    }

    /// Reads whatever comes within `period`, for checks that nothing more (or nothing at all)
    /// comes; returns how many messages were acknowledged in it.
    pub fn read_for(&mut self, period: Duration, answer: Answer) -> usize {
        let (started, before) = (Instant::now(), self.acked.len());
        while started.elapsed() < period {
            self.step(answer);
        }
        self.acked.len() - before
    }

    /// Closes the instance and returns the persisted state.
    pub fn close(mut self) -> Option<Vec<u8>> {
        if let Some(instance) = self.instance.take() {
            assert_eq!(instance.close(), 0, "close succeeds");
        }
        self.state.take()
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        if let Some(instance) = self.instance.take() {
            instance.close();
        }
    }
}

/// Checks that `messages` hold each bucket's offsets in strictly increasing order.
pub fn assert_bucket_order(messages: &[Received]) {
    let mut last: HashMap<(Option<String>, i32), i64> = HashMap::new();
    for m in messages {
        let key = (m.partition.clone(), m.bucket);
        if let Some(prev) = last.get(&key) {
            assert!(
                m.offset > *prev,
                "bucket {key:?}: offset {} came after {prev}",
                m.offset
            );
        }
        last.insert(key, m.offset);
    }
}

/// The `id` column of each message, as i64.
pub fn ids(messages: &[Received]) -> Vec<i64> {
    messages
        .iter()
        .map(|m| m.payload["id"].as_i64().expect("id column"))
        .collect()
}
