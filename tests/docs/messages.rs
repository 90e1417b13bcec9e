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

//! The reference tables of docs/messages.md against the code: the Debezium envelope's fields as
//! the change encoder writes them, and the Arrow type of every Fluss type as the payloads carry
//! it (`fluss::record::to_arrow_type`, the schema of every batch the plugin reads and writes).

use std::collections::BTreeSet;
use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType as Arrow, TimeUnit};
use fluss::metadata::{DataField, DataType, DataTypes, RowType};
use fluss::record::{ChangeType, ScanRecord, to_arrow_schema, to_arrow_type};
use fluss::row::ColumnarRow;
use iggy_connector_fluss_source::config::options::{ChangelogFormat, HeaderSet, JsonOptions};
use iggy_connector_fluss_source::encode::Encoder;
use iggy_connector_fluss_source::encode::batch::Batch;
use iggy_connector_fluss_source::encode::cdc::ChangeMessages;
use iggy_connector_fluss_source::encode::stamp::{BucketStamp, SnapshotIndex, Stamper};
use iggy_connector_fluss_source::position::BucketKey;
use iggy_connector_fluss_source::schemas::Schemas;
use serde_json::Value;

use crate::{read, section};

/// The cells of the rows of the first table in `text`, header and separator left out.
fn table_rows(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(|row| {
            row.trim_matches('|')
                .split(" | ")
                .map(|cell| cell.trim().to_owned())
                .collect()
        })
        .collect()
}

/// A cell's code span (`` `x` `` → `x`).
fn code(cell: &str) -> &str {
    let start = cell.find('`').map_or(0, |i| i + 1);
    let end = cell[start..].find('`').map_or(cell.len(), |i| start + i);
    &cell[start..end]
}

fn fields() -> Vec<DataField> {
    vec![
        DataTypes::field("id", DataTypes::bigint()),
        DataTypes::field("name", DataTypes::string()),
    ]
}

/// Records of `(id, name, change)` rows in one Arrow batch, offsets from 10.
fn records(rows: &[(i64, &str, ChangeType)]) -> Vec<ScanRecord> {
    let row_type = RowType::new(fields());
    let schema = to_arrow_schema(&row_type).expect("schema");
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0))),
        Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.1))),
    ];
    let batch = Arc::new(RecordBatch::try_new(schema, columns).expect("batch"));
    let row_type = Arc::new(row_type);
    rows.iter()
        .enumerate()
        .map(|(i, (_, _, change))| {
            let row = ColumnarRow::new(batch.clone(), row_type.clone(), i, None).expect("row");
            ScanRecord::new(row, 10 + i as i64, 1000 + i as i64, *change)
        })
        .collect()
}

/// The Debezium events the encoder makes of `records` with `stamp`.
fn events(stamp: &BucketStamp, records: &[ScanRecord]) -> Vec<(String, Value)> {
    let mut encoder = ChangeMessages::new(
        "db",
        "t",
        Schemas::new(0, fields(), false),
        JsonOptions::default(),
        ChangelogFormat::Debezium,
    );
    let mut batch = Batch::new(100, 1 << 20);
    let consumed = encoder.encode(stamp, records, &mut batch).expect("encode");
    assert_eq!(consumed, records.len());
    batch
        .into_messages()
        .expect("messages")
        .into_iter()
        .map(|m| {
            let text = String::from_utf8(m.payload).expect("UTF-8");
            let value = serde_json::from_str(&text).expect("JSON");
            (text, value)
        })
        .collect()
}

/// The fields of an event as the table names them, in the order they appear in its text.
fn event_fields(text: &str, value: &Value) -> Vec<String> {
    let mut names: Vec<(usize, String)> = Vec::new();
    for (key, inner) in value.as_object().expect("an object") {
        let at = text
            .find(&format!("\"{key}\":"))
            .expect("the key in the text");
        if key == "source" {
            for inner_key in inner.as_object().expect("source is an object").keys() {
                let inner_at = text[at..]
                    .find(&format!("\"{inner_key}\":"))
                    .expect("the source key");
                names.push((at + inner_at, format!("source.{inner_key}")));
            }
        } else {
            // The top-level `ts_ms` comes after `source`, whose own `ts_ms` is found first.
            let at = if key == "ts_ms" {
                text.rfind("\"ts_ms\":").expect("ts_ms")
            } else {
                at
            };
            names.push((at, key.clone()));
        }
    }
    names.sort();
    names.into_iter().map(|(_, name)| name).collect()
}

#[test]
fn the_debezium_table_names_every_field_the_encoder_writes() {
    let messages = read("docs/messages.md");
    let envelope = section(&messages, "## The Debezium envelope");
    let rows = table_rows(envelope);
    let documented: Vec<String> = rows.iter().map(|r| code(&r[0]).to_owned()).collect();
    assert!(documented.len() >= 10, "{documented:?}");

    let stamp = Stamper::new(7, "db.t", HeaderSet::ALL)
        .expect("stamper")
        .bucket(BucketKey::bucket(1), None)
        .expect("bucket");
    use ChangeType::*;
    let mut all = events(
        &stamp,
        &records(&[
            (1, "a", Insert),
            (1, "a", UpdateBefore),
            (1, "b", UpdateAfter),
            (2, "x", UpdateAfter),
            (1, "b", Delete),
        ]),
    );
    all.extend(events(
        &stamp.snapshot(900, SnapshotIndex::Every),
        &records(&[(3, "s", Insert)]),
    ));
    let mut ops = BTreeSet::new();
    for (text, value) in &all {
        assert_eq!(
            event_fields(text, value),
            documented,
            "docs/messages.md lists every field of {text}, in its order"
        );
        let op = value["op"].as_str().expect("op").to_owned();
        let (before, after) = (&value["before"], &value["after"]);
        match op.as_str() {
            "c" | "r" => assert!(before.is_null() && after.is_object(), "{text}"),
            "d" => assert!(before.is_object() && after.is_null(), "{text}"),
            "u" => assert!(after.is_object(), "{text}"),
            other => panic!("op {other} is not documented: {text}"),
        }
        assert!(
            value["source"].get("snapshot").is_none(),
            "no source.snapshot, as the table says: {text}"
        );
        ops.insert(op);
    }
    assert_eq!(
        ops,
        ["c", "d", "r", "u"].map(str::to_owned).into(),
        "each op once at least"
    );
    let op_row = &rows[0][2];
    for op in &ops {
        assert!(
            op_row.contains(&format!("`{op}` (")),
            "the op row explains `{op}`: {op_row}"
        );
    }
    let updates: Vec<&Value> = all
        .iter()
        .map(|(_, v)| v)
        .filter(|v| v["op"] == "u")
        .collect();
    assert!(
        updates[0]["before"].is_object() && updates[1]["before"].is_null(),
        "a pair has both images, a lone +U no `before`: {updates:?}"
    );
    assert_eq!(
        updates[0]["source"]["offset"], 11,
        "a pair's offset is its -U's"
    );
    let read_event = &all.last().expect("the snapshot row").1;
    assert_eq!(
        read_event["source"]["offset"], 900,
        "a snapshot row's offset is the snapshot's"
    );
}

/// The Fluss types of each row of the Arrow table, with the values its placeholders (`p`, `s`,
/// `n`) take in the documented Arrow and pyarrow names.
fn table_types(label: &str) -> Vec<(DataType, Vec<(&'static str, String)>)> {
    let plain = |t: DataType| vec![(t, Vec::new())];
    let precisions = |lo: u32, hi: u32, make: fn(u32) -> DataType| {
        (lo..=hi).map(|p| (make(p), Vec::new())).collect::<Vec<_>>()
    };
    match label {
        "BOOLEAN" => plain(DataTypes::boolean()),
        "TINYINT" => plain(DataTypes::tinyint()),
        "SMALLINT" => plain(DataTypes::smallint()),
        "INT" => plain(DataTypes::int()),
        "BIGINT" => plain(DataTypes::bigint()),
        "FLOAT" => plain(DataTypes::float()),
        "DOUBLE" => plain(DataTypes::double()),
        "CHAR(n), STRING" => vec![
            (DataTypes::char(5), Vec::new()),
            (DataTypes::string(), Vec::new()),
        ],
        "DECIMAL(p,s)" => [(5, 2), (18, 4), (38, 10)]
            .into_iter()
            .map(|(p, s)| {
                (
                    DataTypes::decimal(p, s),
                    vec![("p", p.to_string()), ("s", s.to_string())],
                )
            })
            .collect(),
        "DATE" => plain(DataTypes::date()),
        "TIME(0)" => precisions(0, 0, DataTypes::time_with_precision),
        "TIME(1) to TIME(3)" => precisions(1, 3, DataTypes::time_with_precision),
        "TIME(4) to TIME(6)" => precisions(4, 6, DataTypes::time_with_precision),
        "TIME(7) to TIME(9)" => precisions(7, 9, DataTypes::time_with_precision),
        "TIMESTAMP(0)" => precisions(0, 0, DataTypes::timestamp_with_precision),
        "TIMESTAMP(1) to TIMESTAMP(3)" => precisions(1, 3, DataTypes::timestamp_with_precision),
        "TIMESTAMP(4) to TIMESTAMP(6)" => precisions(4, 6, DataTypes::timestamp_with_precision),
        "TIMESTAMP(7) to TIMESTAMP(9)" => precisions(7, 9, DataTypes::timestamp_with_precision),
        "TIMESTAMP_LTZ(0)" => precisions(0, 0, DataTypes::timestamp_ltz_with_precision),
        "TIMESTAMP_LTZ(1) to TIMESTAMP_LTZ(3)" => {
            precisions(1, 3, DataTypes::timestamp_ltz_with_precision)
        }
        "TIMESTAMP_LTZ(4) to TIMESTAMP_LTZ(6)" => {
            precisions(4, 6, DataTypes::timestamp_ltz_with_precision)
        }
        "TIMESTAMP_LTZ(7) to TIMESTAMP_LTZ(9)" => {
            precisions(7, 9, DataTypes::timestamp_ltz_with_precision)
        }
        "BYTES" => plain(DataTypes::bytes()),
        "BINARY(n)" => [1, 4, 16]
            .into_iter()
            .map(|n| (DataTypes::binary(n), vec![("n", n.to_string())]))
            .collect(),
        "ARRAY&lt;T&gt;" => plain(DataTypes::array(DataTypes::int())),
        "MAP&lt;K,V&gt;" => plain(DataTypes::map(DataTypes::string(), DataTypes::int())),
        "ROW&lt;…&gt;" => plain(DataTypes::row(vec![DataTypes::field(
            "x",
            DataTypes::bigint(),
        )])),
        other => panic!("docs/messages.md lists a Fluss type this test does not know: {other}"),
    }
}

/// `text` with each placeholder `k` that stands alone (between other characters than letters,
/// digits and `_`) replaced by `v`: `Decimal128(p, s)` → `Decimal128(5, 2)`.
fn substitute(text: &str, k: &str, v: &str) -> String {
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(k) {
        let before = rest[..at].chars().next_back().or(out.chars().next_back());
        let after = rest[at + k.len()..].chars().next();
        out.push_str(&rest[..at]);
        out.push_str(if word(before) || word(after) { k } else { v });
        rest = &rest[at + k.len()..];
    }
    out.push_str(rest);
    out
}

/// pyarrow's name of a leaf type (`str(pyarrow type)`).
fn pyarrow(arrow: &Arrow) -> String {
    let unit = |u: &TimeUnit| match u {
        TimeUnit::Second => "s",
        TimeUnit::Millisecond => "ms",
        TimeUnit::Microsecond => "us",
        TimeUnit::Nanosecond => "ns",
    };
    match arrow {
        Arrow::Boolean => "bool".into(),
        Arrow::Int8 => "int8".into(),
        Arrow::Int16 => "int16".into(),
        Arrow::Int32 => "int32".into(),
        Arrow::Int64 => "int64".into(),
        Arrow::Float32 => "float".into(),
        Arrow::Float64 => "double".into(),
        Arrow::Utf8 => "string".into(),
        Arrow::Binary => "binary".into(),
        Arrow::FixedSizeBinary(n) => format!("fixed_size_binary[{n}]"),
        Arrow::Decimal128(p, s) => format!("decimal128({p}, {s})"),
        Arrow::Date32 => "date32[day]".into(),
        Arrow::Time32(u) => format!("time32[{}]", unit(u)),
        Arrow::Time64(u) => format!("time64[{}]", unit(u)),
        Arrow::Timestamp(u, None) => format!("timestamp[{}]", unit(u)),
        Arrow::Timestamp(u, Some(tz)) => format!("timestamp[{}, tz={tz}]", unit(u)),
        other => panic!("no leaf type: {other:?}"),
    }
}

#[test]
fn the_arrow_table_is_the_mapping_of_every_payload() {
    let messages = read("docs/messages.md");
    let mapping = section(&messages, "## Type mapping (Arrow IPC)");
    let rows = table_rows(mapping);
    assert!(rows.len() >= 20, "{rows:?}");
    let mut labels = BTreeSet::new();
    for row in &rows {
        let (label, documented, py) = (&row[0], code(&row[1]), code(&row[2]));
        assert!(labels.insert(label.clone()), "{label} twice");
        for (fluss, values) in table_types(label) {
            let arrow = to_arrow_type(&fluss).expect("every Fluss type maps to Arrow");
            match &arrow {
                Arrow::List(item) => {
                    assert_eq!(documented, "List", "{label}");
                    assert_eq!(item.name(), "item", "{label}: the element field's name");
                    assert!(py.starts_with("list<item: "), "{label}: {py}");
                }
                Arrow::Map(entries, sorted) => {
                    assert_eq!(documented, "Map", "{label}");
                    assert!(!sorted && !entries.is_nullable(), "{label}: {arrow:?}");
                    assert_eq!(entries.name(), "entries");
                    let Arrow::Struct(kv) = entries.data_type() else {
                        panic!("{label}: {arrow:?}")
                    };
                    let names: Vec<&str> = kv.iter().map(|f| f.name().as_str()).collect();
                    assert_eq!(names, ["key", "value"], "{label}");
                    assert!(py.starts_with("map<"), "{label}: {py}");
                }
                Arrow::Struct(_) => {
                    assert_eq!(documented, "Struct", "{label}");
                    assert!(py.starts_with("struct<"), "{label}: {py}");
                }
                leaf => {
                    let with = |text: &str| {
                        values
                            .iter()
                            .fold(text.to_owned(), |t, (k, v)| substitute(&t, k, v))
                    };
                    assert_eq!(
                        format!("{leaf:?}"),
                        with(documented),
                        "{label} ({fluss:?}) maps to what docs/messages.md says"
                    );
                    assert_eq!(pyarrow(leaf), with(py), "{label}: pyarrow's name");
                }
            }
        }
    }
    let covered = [
        "BOOLEAN",
        "TINYINT",
        "SMALLINT",
        "INT",
        "BIGINT",
        "FLOAT",
        "DOUBLE",
        "STRING",
        "DECIMAL",
        "DATE",
        "TIME",
        "TIMESTAMP",
        "TIMESTAMP_LTZ",
        "BYTES",
        "BINARY",
        "ARRAY",
        "MAP",
        "ROW",
    ];
    for kind in covered {
        assert!(
            labels.iter().any(|l| l
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .any(|w| w == kind)),
            "docs/messages.md maps {kind} to Arrow"
        );
    }
}
