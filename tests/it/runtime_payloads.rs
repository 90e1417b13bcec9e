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

//! What a topic holds after the runtime's payload handling (`fluss_source_runner::
//! runtime_payloads`, the decode-then-encode of `iggy-connectors`), for tables where it
//! matters: a log table wider than the runtime's ordered-object limit, and 38-digit decimals.
//! `payload_schema = "json"` (the default) lets the runtime re-encode each payload through
//! simd-json's value tree; `payload_schema = "raw"` with a raw stream passes the plugin's
//! bytes through untouched.

use std::time::{Duration, Instant};

use fluss_source_runner::{
    Batch, Level, ORDERED_KEYS_LIMIT, StreamSchema, encode_messages, logs, runtime_payloads,
};
use fluss_testkit::fluss::metadata::{DataTypes, Schema as TableSchema, TablePath};
use fluss_testkit::fluss::row::{Datum, Decimal, GenericRow};
use fluss_testkit::{tables, unique_table, write};
use iggy_connector_sdk::Schema;
use serde_json::{Value, json};

use crate::fixture::{DEADLINE, cluster, config, harness, rt};

/// Columns of the wide table: more than the runtime keeps in order.
const WIDE_COLUMNS: usize = 40;
const _: () = assert!(
    WIDE_COLUMNS > ORDERED_KEYS_LIMIT,
    "the table must be wider than the limit"
);
const WIDE_ROWS: i64 = 6;

/// `id BIGINT` then `c01 … c39`, cycling INT, STRING and DOUBLE.
fn wide_schema() -> TableSchema {
    (1..WIDE_COLUMNS)
        .fold(
            TableSchema::builder().column("id", DataTypes::bigint()),
            |builder, c| {
                let data_type = match c % 3 {
                    0 => DataTypes::int(),
                    1 => DataTypes::string(),
                    _ => DataTypes::double(),
                };
                builder.column(format!("c{c:02}"), data_type)
            },
        )
        .build()
        .expect("wide schema")
}

fn wide_row(id: i64) -> GenericRow<'static> {
    let mut row = GenericRow::new(WIDE_COLUMNS);
    row.set_field(0, id);
    for c in 1..WIDE_COLUMNS {
        let value = match c % 3 {
            0 => Datum::from((id * 100 + c as i64) as i32),
            1 => Datum::from(format!("r{id}c{c}")),
            _ => Datum::from(id as f64 + c as f64 / 4.0),
        };
        row.set_field(c, value);
    }
    row
}

/// The wide table's column names in schema order.
fn wide_columns() -> Vec<String> {
    std::iter::once("id".to_owned())
        .chain((1..WIDE_COLUMNS).map(|c| format!("c{c:02}")))
        .collect()
}

/// Creates a one-bucket log table from `schema` holding `rows`.
fn log_table(prefix: &str, schema: TableSchema, rows: Vec<GenericRow<'static>>) -> TablePath {
    let path = unique_table(prefix);
    rt().block_on(async {
        let conn = cluster().connection().await;
        let admin = conn.get_admin().expect("admin");
        tables::create_log_table(&admin, &path, schema, 1).await;
        write::append_rows(&conn, &path, rows).await;
    });
    path
}

/// Opens the plugin on `path` with `extra` config keys and acks batches until `rows`
/// messages arrived; returns the batches as the plugin sent them.
fn read_batches(path: &TablePath, extra: Value, rows: usize) -> Vec<Batch> {
    let config = config(path.table(), extra).to_string();
    let instance = harness().open(&config, None).expect("open");
    assert_eq!(instance.start(), 0, "handle_v2 accepted");
    let mut batches = Vec::new();
    let mut received = 0;
    let started = Instant::now();
    while received < rows && started.elapsed() < DEADLINE {
        let Some(batch) = instance.next_batch(Duration::from_millis(250)) else {
            continue;
        };
        received += batch.messages.messages.len();
        assert_eq!(instance.ack(&batch), 0, "ack accepted");
        batches.push(batch);
    }
    assert_eq!(instance.close(), 0, "close succeeds");
    assert_eq!(
        received, rows,
        "every row arrives within {DEADLINE:?}; check the plugin's log lines above"
    );
    batches
}

/// The keys of a flat JSON object in the order the bytes hold them.
fn key_order(payload: &[u8]) -> Vec<String> {
    let mut keys = Vec::new();
    let mut deserializer = serde_json::Deserializer::from_slice(payload);
    let visitor = KeyOrder(&mut keys);
    serde::Deserializer::deserialize_map(&mut deserializer, visitor).expect("a JSON object");
    keys
}

/// Collects map keys in document order (serde_json's `Map` would sort them).
struct KeyOrder<'a>(&'a mut Vec<String>);

impl<'de> serde::de::Visitor<'de> for KeyOrder<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            map.next_value::<serde::de::IgnoredAny>()?;
            self.0.push(key);
        }
        Ok(())
    }
}

fn parse(payload: &[u8]) -> Value {
    serde_json::from_slice(payload).expect("payload is JSON")
}

#[test]
fn a_wide_row_loses_its_key_order_through_a_json_stream_but_not_its_values() {
    let path = log_table(
        "wide_json",
        wide_schema(),
        (0..WIDE_ROWS).map(wide_row).collect(),
    );
    let batches = read_batches(&path, json!({}), WIDE_ROWS as usize);
    let columns = wide_columns();
    for batch in &batches {
        assert_eq!(
            batch.messages.schema,
            Schema::Json,
            "the default payload_schema"
        );
        let topic = runtime_payloads(batch, StreamSchema::Json)
            .unwrap_or_else(|r| panic!("a json stream takes json batches: {}", r.first));
        for (message, written) in batch.messages.messages.iter().zip(&topic) {
            // The plugin writes columns in schema order ...
            assert_eq!(key_order(&message.payload), columns, "plugin bytes");
            // ... but the runtime parses each payload into simd-json's value tree, whose
            // objects wider than ORDERED_KEYS_LIMIT (32) keys are hash maps, and writes it
            // back in hash order: the topic's keys are not in schema order. The values are
            // unchanged.
            let mut order = key_order(written);
            assert_ne!(order, columns, "a {WIDE_COLUMNS}-key object keeps no order");
            order.sort();
            let mut sorted = columns.clone();
            sorted.sort();
            assert_eq!(order, sorted, "every column once");
            assert_eq!(
                parse(written),
                parse(&message.payload),
                "values are unchanged"
            );
        }
    }
}

#[test]
fn a_wide_row_arrives_byte_exact_through_a_raw_stream() {
    let path = log_table(
        "wide_raw",
        wide_schema(),
        (0..WIDE_ROWS).map(wide_row).collect(),
    );
    let batches = read_batches(&path, json!({"payload_schema": "raw"}), WIDE_ROWS as usize);
    let columns = wide_columns();
    let mut ids = Vec::new();
    for batch in &batches {
        assert_eq!(
            batch.messages.schema,
            Schema::Raw,
            "payload_schema = \"raw\""
        );
        let topic = runtime_payloads(batch, StreamSchema::Raw)
            .unwrap_or_else(|r| panic!("a raw stream takes raw batches: {}", r.first));
        for (message, written) in batch.messages.messages.iter().zip(&topic) {
            assert_eq!(
                written, &message.payload,
                "the runtime passes raw bytes through"
            );
            assert_eq!(key_order(written), columns, "keys in schema order");
            ids.push(parse(written)["id"].as_i64().expect("id"));
        }
        // A json stream would refuse these batches (the runtime Nacks them): the stream's
        // schema must say raw too.
        let rejection = runtime_payloads(batch, StreamSchema::Json).expect_err("raw into json");
        assert_eq!(rejection.errors, batch.messages.messages.len() as u64);
    }
    assert_eq!(ids, (0..WIDE_ROWS).collect::<Vec<_>>());
}

/// A 38-digit unscaled value, and its negation.
const UNSCALED: i128 = 12_345_678_901_234_567_890_123_456_789_012_345_678;
const DECIMAL_38_10: &str = "1234567890123456789012345678.9012345678";
const DECIMAL_38_0: &str = "12345678901234567890123456789012345678";

fn decimal_schema() -> TableSchema {
    TableSchema::builder()
        .column("id", DataTypes::bigint())
        .column("d38_10", DataTypes::decimal(38, 10))
        .column("d38_0", DataTypes::decimal(38, 0))
        .build()
        .expect("decimal schema")
}

/// Row 0 holds the positive values, row 1 the negative ones.
fn decimal_row(id: i64) -> GenericRow<'static> {
    let unscaled = if id == 0 { UNSCALED } else { -UNSCALED };
    let decimal = |scale| {
        Datum::Decimal(
            Decimal::from_unscaled_bytes(&unscaled.to_be_bytes(), 38, scale)
                .unwrap_or_else(|e| panic!("DECIMAL(38,{scale}): {e}")),
        )
    };
    let mut row = GenericRow::new(3);
    row.set_field(0, id);
    row.set_field(1, decimal(10));
    row.set_field(2, decimal(0));
    row
}

fn expected_decimals(id: i64) -> (String, String) {
    let sign = if id == 0 { "" } else { "-" };
    (
        format!("{sign}{DECIMAL_38_10}"),
        format!("{sign}{DECIMAL_38_0}"),
    )
}

/// The topic payloads of every batch through `stream`, in order.
fn topic_payloads(batches: &[Batch], stream: StreamSchema) -> Vec<Vec<u8>> {
    batches
        .iter()
        .flat_map(|batch| {
            runtime_payloads(batch, stream)
                .unwrap_or_else(|r| panic!("batch {} rejected: {}", batch.batch_id, r.first))
        })
        .collect()
}

#[test]
fn wide_decimals_keep_every_digit_as_raw_numbers_or_as_json_strings() {
    let path = log_table(
        "wide_decimals",
        decimal_schema(),
        (0..2).map(decimal_row).collect(),
    );

    // Numbers: simd-json would fail on the 38-digit integer and round the fraction, so only a
    // raw stream carries them; the bytes hold the digits exactly.
    let raw = read_batches(
        &path,
        json!({"payload_schema": "raw", "decimal_format": "number"}),
        2,
    );
    for (id, payload) in topic_payloads(&raw, StreamSchema::Raw).iter().enumerate() {
        let (d38_10, d38_0) = expected_decimals(id as i64);
        let text = std::str::from_utf8(payload).expect("UTF-8 JSON");
        assert_eq!(
            text,
            format!("{{\"id\":{id},\"d38_10\":{d38_10},\"d38_0\":{d38_0}}}"),
            "row {id}: numbers exactly as the plugin wrote them"
        );
    }

    // Had these batches declared Schema::Json, the runtime would reject each of them: the
    // 38-digit integer of d38_0 fails simd-json's parse.
    for batch in &raw {
        let rejection = encode_messages(Schema::Json, StreamSchema::Json, &batch.messages.messages)
            .expect_err("38-digit numbers do not parse");
        assert_eq!(rejection.errors, batch.messages.messages.len() as u64);
    }

    // Strings: a json stream re-encodes the value tree, and strings survive it unchanged.
    let json = read_batches(&path, json!({"decimal_format": "string"}), 2);
    for (id, payload) in topic_payloads(&json, StreamSchema::Json).iter().enumerate() {
        let (d38_10, d38_0) = expected_decimals(id as i64);
        assert_eq!(
            parse(payload),
            json!({"id": id, "d38_10": d38_10, "d38_0": d38_0}),
            "row {id}: decimal strings keep every digit"
        );
    }

    // Numbers into a json stream would lose digits or stall the stream: open refuses it.
    let config = config(path.table(), json!({"decimal_format": "number"})).to_string();
    let Err(fluss_source_runner::Error::OpenFailed { id, .. }) = harness().open(&config, None)
    else {
        panic!(
            "decimal_format = \"number\" with payload_schema = \"json\" and DECIMAL(38,·) must fail open"
        );
    };
    // A failed open is logged with the instance prefix.
    let tag = format!("fluss[{id} ");
    let error = logs()
        .into_iter()
        .find(|l| l.level == Level::Error && l.message.starts_with(&tag))
        .unwrap_or_else(|| panic!("plugin {id} logged no ERROR line for the refused open"));
    assert!(
        error.message.contains("payload_schema") && error.message.contains("d38_10"),
        "the refusal names the column and the fix: {}",
        error.message
    );
}
