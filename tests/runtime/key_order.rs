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

//! Key order of wide JSON rows. The plugin writes an object's keys in schema order. With
//! `payload_schema = "raw"` and a `raw` stream the runtime passes those bytes through; with the
//! default `json` pairing it parses each payload into a simd_json value and writes it again,
//! and simd_json's object (a halfbrown map) keeps insertion order only up to 32 keys, so a
//! 40-column row comes out in hash order, with the same values.

use std::collections::BTreeMap;

use fluss_testkit::fluss::metadata::{DataTypes, Schema};
use fluss_testkit::fluss::row::GenericRow;
use fluss_testkit::iggy::{Message, Stop};
use serde_json::{Value, json};

use crate::fixture::{World, append, assert_ids, connector, create_table};

const COLUMNS: usize = 40;
const ROWS: i64 = 200;

fn name(column: usize) -> String {
    format!("c{column:02}")
}

fn schema() -> Schema {
    let mut builder = Schema::builder();
    for c in 0..COLUMNS {
        let data_type = match c % 4 {
            0 => DataTypes::bigint(),
            1 => DataTypes::string(),
            2 => DataTypes::int(),
            _ => DataTypes::boolean(),
        };
        builder = builder.column(name(c), data_type);
    }
    builder.build().expect("40-column schema")
}

fn row(r: i64) -> GenericRow<'static> {
    let mut row = GenericRow::new(COLUMNS);
    for c in 0..COLUMNS {
        match c % 4 {
            0 => row.set_field(c, r * 1000 + c as i64),
            1 => row.set_field(c, format!("v{r}-{c}")),
            2 => row.set_field(c, c as i32 - 20),
            _ => row.set_field(c, (r + c as i64) % 2 == 0),
        }
    }
    row
}

/// Row `r` as the plugin writes it: keys in schema order, no spaces.
fn expected_bytes(r: i64) -> Vec<u8> {
    let fields: Vec<String> = (0..COLUMNS)
        .map(|c| {
            let value = match c % 4 {
                0 => (r * 1000 + c as i64).to_string(),
                1 => format!("\"v{r}-{c}\""),
                2 => (c as i32 - 20).to_string(),
                _ => ((r + c as i64) % 2 == 0).to_string(),
            };
            format!("\"{}\":{value}", name(c))
        })
        .collect();
    format!("{{{}}}", fields.join(",")).into_bytes()
}

/// The row number of a payload (column c00 is `r * 1000`).
fn row_of(m: &Message) -> i64 {
    let payload: Value = serde_json::from_slice(&m.payload).expect("payload is JSON");
    payload["c00"].as_i64().expect("c00") / 1000
}

/// Whether the keys appear in schema order in the payload text.
fn in_schema_order(payload: &[u8]) -> bool {
    let text = std::str::from_utf8(payload).expect("UTF-8 payload");
    let positions: Vec<usize> = (0..COLUMNS)
        .map(|c| text.find(&format!("\"{}\":", name(c))).expect("every key"))
        .collect();
    positions.windows(2).all(|w| w[0] < w[1])
}

#[test]
fn raw_payload_schema_keeps_the_key_order_json_keeps_the_values() {
    let world = World::new("key_order");
    let (table, table_id) = create_table("rt_wide", schema(), 2);
    append(&table, (0..ROWS).map(row));
    let mut runtime = world.runtime(&[
        connector(
            "fluss_wide_raw",
            &table,
            "wide_raw",
            "raw",
            json!({ "payload_schema": "raw" }),
        ),
        connector("fluss_wide_json", &table, "wide_json", "json", json!({})),
    ]);
    let raw = world.wait_for("wide_raw", &format!("{ROWS} rows"), |m| {
        m.len() >= ROWS as usize
    });
    let json = world.wait_for("wide_json", &format!("{ROWS} rows"), |m| {
        m.len() >= ROWS as usize
    });
    runtime.stop(Stop::Interrupt);
    assert_ids(&raw, table_id);
    assert_ids(&json, table_id);

    let raw: BTreeMap<i64, &Message> = raw.iter().map(|m| (row_of(m), m)).collect();
    let json: BTreeMap<i64, &Message> = json.iter().map(|m| (row_of(m), m)).collect();
    assert_eq!(raw.len(), ROWS as usize, "every row once in the raw topic");
    assert_eq!(
        json.len(),
        ROWS as usize,
        "every row once in the json topic"
    );
    for r in 0..ROWS {
        let expected = expected_bytes(r);
        assert_eq!(
            String::from_utf8_lossy(&raw[&r].payload),
            String::from_utf8_lossy(&expected),
            "raw topic: row {r} byte for byte, keys in schema order"
        );
        let reencoded = &json[&r].payload;
        assert_eq!(
            serde_json::from_slice::<Value>(reencoded).expect("JSON"),
            serde_json::from_slice::<Value>(&expected).expect("JSON"),
            "json topic: row {r} has the same values"
        );
        assert!(
            !in_schema_order(reencoded),
            "json topic: row {r} kept schema order, but the runtime's re-encoding of a {COLUMNS}-key object should not: {}",
            String::from_utf8_lossy(reencoded)
        );
    }
}
