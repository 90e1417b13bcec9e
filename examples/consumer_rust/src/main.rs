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

//! A consumer of the Fluss source connector's topic that applies every row exactly once and
//! decodes Arrow IPC payloads without copying them (docs/consuming.md).
//!
//! ```text
//! fluss-iggy-consumer --stream fluss --topic orders --format arrow|json|debezium
//!     [--server 127.0.0.1:8090] [--user iggy] [--password iggy] [--partition 0] [--key a,b]
//!     [--stop-file FILE] [--result FILE]
//! ```
//!
//! It polls the topic from its first message and prints a running count per poll on stderr:
//! messages, rows held, repeats dropped. `arrow` keeps the rows of a log table as zero-copy
//! slices of the received payloads; `json` keeps log rows; `debezium` keeps a primary-key
//! table's current state per key, whose columns each message names in its `fluss_primary_key`
//! header (`--key` names them for messages without it). With `--stop-file` it stops at the first empty poll after
//! that file exists and writes the rows (or the state), the repeats it dropped and, for
//! `arrow`, how each payload was decoded and the decode rate against arrow-ipc's
//! `StreamReader` over the same bytes, as JSON to `--result` (or stdout).
//!
//! A real application stores its Iggy offset and the de-duplicator's positions together with
//! the effect of the rows, so that its own restarts apply each row once too.

mod dedup;
mod ipc;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow_array::{Array, ArrayRef, Int64Array, ListArray, MapArray, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use dedup::{BucketId, Deduplicator, MessageId, Positions};
use iggy::prelude::*;
use ipc::Decoded;
use serde_json::{Value, json};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Format {
    Arrow,
    Json,
    Debezium,
}

struct Args {
    server: String,
    user: String,
    password: String,
    stream: String,
    topic: String,
    partition: u32,
    format: Format,
    key: Option<Vec<String>>,
    stop_file: Option<PathBuf>,
    result: Option<PathBuf>,
}

fn args() -> Result<Args, String> {
    let mut given: BTreeMap<String, String> = BTreeMap::new();
    let mut words = std::env::args().skip(1);
    while let Some(flag) = words.next() {
        let name = flag
            .strip_prefix("--")
            .ok_or(format!("unexpected argument {flag:?}"))?;
        let value = words.next().ok_or(format!("{flag} needs a value"))?;
        given.insert(name.to_owned(), value);
    }
    let mut take = |name: &str, default: Option<&str>| {
        given
            .remove(name)
            .or(default.map(str::to_owned))
            .ok_or(format!("--{name} is required"))
    };
    let format = match take("format", None)?.as_str() {
        "arrow" => Format::Arrow,
        "json" => Format::Json,
        "debezium" => Format::Debezium,
        other => return Err(format!("--format {other:?}: use arrow, json or debezium")),
    };
    let args = Args {
        server: take("server", Some("127.0.0.1:8090"))?,
        user: take("user", Some("iggy"))?,
        password: take("password", Some("iggy"))?,
        stream: take("stream", None)?,
        topic: take("topic", None)?,
        partition: take("partition", Some("0"))?
            .parse()
            .map_err(|e| format!("--partition: {e}"))?,
        format,
        key: take("key", Some(""))
            .ok()
            .filter(|s| !s.is_empty())
            .map(|s| s.split(',').map(str::to_owned).collect()),
        stop_file: take("stop-file", Some(""))
            .ok()
            .filter(|s| !s.is_empty())
            .map(PathBuf::from),
        result: take("result", Some(""))
            .ok()
            .filter(|s| !s.is_empty())
            .map(PathBuf::from),
    };
    match given.keys().next() {
        Some(unknown) => Err(format!("unknown option --{unknown}")),
        None => Ok(args),
    }
}

/// What the consumer builds from the rows it applies.
enum Sink {
    /// Log rows as zero-copy slices of the payloads, with every payload kept for the rate check.
    Batches {
        batches: Vec<RecordBatch>,
        payloads: Vec<bytes::Bytes>,
        decoded: BTreeMap<&'static str, u64>,
    },
    /// Log rows as JSON objects.
    Rows(Vec<Value>),
    /// A primary-key table's current state: key (as JSON text) -> (bucket, row); the key
    /// columns from `--key` or the first message's `fluss_primary_key` header.
    State {
        key: Option<Vec<String>>,
        state: BTreeMap<String, (BucketId, Value)>,
    },
}

impl Sink {
    fn rows_held(&self) -> usize {
        match self {
            Sink::Batches { batches, .. } => batches.iter().map(RecordBatch::num_rows).sum(),
            Sink::Rows(rows) => rows.len(),
            Sink::State { state, .. } => state.len(),
        }
    }

    fn apply(&mut self, message: &IggyMessage, dedup: &mut Deduplicator) -> Result<(), String> {
        let id = MessageId::parse(message.header.id)?;
        match self {
            Sink::Batches {
                batches,
                payloads,
                decoded,
            } => {
                let (batch, how) = ipc::decode(message.payload.clone()).map_err(|e| {
                    format!(
                        "message {}: not an Arrow IPC stream: {e}",
                        message.header.offset
                    )
                })?;
                let offsets = batch
                    .column_by_name("_log_offset")
                    .and_then(|column| column.as_any().downcast_ref::<Int64Array>());
                let positions =
                    Positions::of(&id, batch.num_rows(), offsets.map(|o| o.values().as_ref()));
                let seen = dedup.admit(id, positions).seen;
                // A slice is a view: the rows not applied yet, still in the payload's bytes;
                // the rows of a log table without their positions.
                let table_columns: Vec<usize> = (0..batch.num_columns())
                    .filter(|i| batch.schema().field(*i).name() != "_log_offset")
                    .collect();
                let fresh = batch
                    .slice(seen, batch.num_rows() - seen)
                    .project(&table_columns)
                    .map_err(|e| e.to_string())?;
                batches.push(fresh);
                payloads.push(message.payload.clone());
                let name = match how {
                    Decoded::InPlace => "in_place",
                    Decoded::AlignedCopy => "aligned_copy",
                    Decoded::Decompressed => "decompressed",
                };
                *decoded.entry(name).or_default() += 1;
            }
            Sink::Rows(rows) => {
                if dedup.admit(id, Positions::Consecutive(1)).seen == 0 {
                    rows.push(parse(message)?);
                }
            }
            Sink::State { key, state } => {
                let verdict = dedup.admit(id, Positions::Consecutive(1));
                if verdict.new_snapshot {
                    state.retain(|_, (bucket, _)| *bucket != id.bucket);
                }
                if verdict.seen == 1 {
                    return Ok(());
                }
                let columns = match key {
                    Some(columns) => columns,
                    None => key.insert(primary_key(message)?),
                };
                let event = parse(message)?;
                let key_of = |image: &Value| {
                    Value::Array(columns.iter().map(|c| image[c.as_str()].clone()).collect())
                        .to_string()
                };
                if event["op"] == "d" {
                    state.remove(&key_of(&event["before"]));
                } else {
                    state.insert(key_of(&event["after"]), (id.bucket, event["after"].clone()));
                }
            }
        }
        Ok(())
    }

    fn result(self) -> Result<Value, String> {
        Ok(match self {
            Sink::Batches {
                batches,
                payloads,
                decoded,
            } => {
                let mut writer = arrow_json::ArrayWriter::new(Vec::new());
                for batch in &batches {
                    writer
                        .write(&json_ready(batch)?)
                        .map_err(|e| e.to_string())?;
                }
                writer.finish().map_err(|e| e.to_string())?;
                let rows: Value = serde_json::from_slice(&writer.into_inner()).unwrap_or(json!([]));
                json!({ "rows": rows, "decoded": decoded, "decode_rate": decode_rates(&payloads)? })
            }
            Sink::Rows(rows) => json!({ "rows": rows }),
            Sink::State { state, .. } => {
                json!({ "state": state.into_values().map(|(_, row)| row).collect::<Vec<_>>() })
            }
        })
    }
}

/// `batch` as arrow-json writes it: a MAP column whose keys are not strings (which arrow-json
/// refuses) as the list of its `{"key", "value"}` entries, as the connector's own JSON has it.
/// The entries are the map's own buffers, not a copy.
fn json_ready(batch: &RecordBatch) -> Result<RecordBatch, String> {
    let columns = batch
        .columns()
        .iter()
        .map(|column| match column.as_any().downcast_ref::<MapArray>() {
            Some(map) if map.key_type() != &DataType::Utf8 => {
                let entries = map.entries().clone();
                let field = Arc::new(Field::new("entries", entries.data_type().clone(), false));
                let list = ListArray::try_new(
                    field,
                    map.offsets().clone(),
                    Arc::new(entries),
                    map.nulls().cloned(),
                )
                .map_err(|e| e.to_string())?;
                Ok(Arc::new(list) as ArrayRef)
            }
            _ => Ok(column.clone()),
        })
        .collect::<Result<Vec<_>, String>>()?;
    let fields: Vec<Field> = batch
        .schema()
        .fields()
        .iter()
        .zip(&columns)
        .map(|(field, column)| {
            Field::new(
                field.name(),
                column.data_type().clone(),
                field.is_nullable(),
            )
        })
        .collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).map_err(|e| e.to_string())
}

/// The key columns a message names in its `fluss_primary_key` header.
fn primary_key(message: &IggyMessage) -> Result<Vec<String>, String> {
    let headers = message
        .user_headers_map()
        .map_err(|e| format!("message {}: headers: {e}", message.header.offset))?
        .unwrap_or_default();
    let named = headers
        .iter()
        .find(|(key, _)| key.as_str().is_ok_and(|key| key == "fluss_primary_key"))
        .and_then(|(_, value)| value.as_str().ok());
    let named = named.ok_or_else(|| {
        format!(
            "message {}: no fluss_primary_key header names the key columns: set headers = \"all\" on the connector, or pass --key",
            message.header.offset
        )
    })?;
    Ok(named.split(',').map(str::to_owned).collect())
}

fn parse(message: &IggyMessage) -> Result<Value, String> {
    serde_json::from_slice(&message.payload).map_err(|e| {
        format!(
            "message {}: payload is not JSON: {e}",
            message.header.offset
        )
    })
}

/// Rows per second decoded in place against arrow-ipc's `StreamReader` reading the same payloads
/// from memory (best of five passes each).
fn decode_rates(payloads: &[bytes::Bytes]) -> Result<Value, String> {
    let best = |pass: &dyn Fn() -> Result<usize, String>| -> Result<(f64, usize), String> {
        let mut best = f64::MAX;
        let mut rows = 0;
        for _ in 0..5 {
            let started = Instant::now();
            rows = pass()?;
            best = best.min(started.elapsed().as_secs_f64());
        }
        Ok((rows as f64 / best.max(1e-9), rows))
    };
    let (in_place, rows) = best(&|| {
        payloads.iter().try_fold(0, |n, p| {
            Ok(n + ipc::decode(p.clone())
                .map_err(|e| e.to_string())?
                .0
                .num_rows())
        })
    })?;
    let (reader, _) = best(&|| {
        payloads.iter().try_fold(0, |n, p| {
            let mut reader = arrow_ipc::reader::StreamReader::try_new(p.as_ref(), None)
                .map_err(|e| e.to_string())?;
            let batch = reader
                .next()
                .ok_or("an empty stream")?
                .map_err(|e| e.to_string())?;
            Ok(n + batch.num_rows())
        })
    })?;
    Ok(
        json!({ "rows": rows, "in_place_rows_per_s": in_place, "stream_reader_rows_per_s": reader,
               "ratio": in_place / reader }),
    )
}

fn fail(what: &'static str) -> impl Fn(IggyError) -> String {
    move |e| format!("{what}: {e}")
}

async fn consume(args: Args) -> Result<(), String> {
    let client = IggyClient::builder()
        .with_tcp()
        .with_server_address(args.server.clone())
        .build()
        .map_err(fail("client"))?;
    client.connect().await.map_err(fail("connect"))?;
    client
        .login_user(&args.user, &args.password)
        .await
        .map_err(fail("login"))?;
    let stream = Identifier::named(&args.stream).map_err(fail("stream name"))?;
    let topic = Identifier::named(&args.topic).map_err(fail("topic name"))?;
    let mut sink = match args.format {
        Format::Arrow => Sink::Batches {
            batches: Vec::new(),
            payloads: Vec::new(),
            decoded: BTreeMap::new(),
        },
        Format::Json => Sink::Rows(Vec::new()),
        Format::Debezium => Sink::State {
            key: args.key.clone(),
            state: BTreeMap::new(),
        },
    };
    let mut dedup = Deduplicator::default();
    let (mut next, mut messages) = (0u64, 0u64);
    loop {
        let polled = client
            .poll_messages(
                &stream,
                &topic,
                Some(args.partition),
                &Consumer::default(),
                &PollingStrategy::offset(next),
                1000,
                false,
            )
            .await;
        let polled = match polled {
            Ok(polled) => polled.messages,
            // Before the runtime created the topic.
            Err(_) if messages == 0 => Vec::new(),
            Err(e) => return Err(format!("poll {}/{}: {e}", args.stream, args.topic)),
        };
        for message in &polled {
            sink.apply(message, &mut dedup)?;
            next = message.header.offset + 1;
        }
        if !polled.is_empty() {
            messages += polled.len() as u64;
            eprintln!(
                "consumer: {messages} messages, {} rows held, {} repeated rows dropped",
                sink.rows_held(),
                dedup.repeats
            );
        } else if args.stop_file.as_ref().is_some_and(|f| f.exists()) {
            break;
        } else {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    eprintln!(
        "consumer: done, {messages} messages, {} rows held, {} repeated rows dropped",
        sink.rows_held(),
        dedup.repeats
    );
    let mut result = sink.result()?;
    result["messages"] = json!(messages);
    result["repeats"] = json!(dedup.repeats);
    let text = result.to_string();
    match &args.result {
        Some(path) => {
            std::fs::write(path, text).map_err(|e| format!("write {}: {e}", path.display()))
        }
        None => {
            println!("{text}");
            Ok(())
        }
    }
}

#[tokio::main]
async fn main() {
    let outcome = match args() {
        Ok(args) => consume(args).await,
        Err(usage) => Err(usage),
    };
    if let Err(error) = outcome {
        eprintln!("consumer: {error}");
        std::process::exit(1);
    }
}
