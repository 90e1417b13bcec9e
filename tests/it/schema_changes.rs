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

//! Columns added while the connector streams (`ALTER TABLE … ADD COLUMN`, on the shared
//! cluster; each test owns its table): rows written after each change carry the new columns
//! in JSON, Debezium and Arrow IPC without a restart, rows written before keep their shape, a
//! `columns` projection keeps its columns, a `filter` keeps working, one INFO line per change
//! and instance; then a restart from the saved state, a fresh read of every version from the
//! earliest offset, a KV snapshot holding rows of two schema ids, and the changes Fluss
//! refuses.
//!
//! One file because its tests share the versioned rows, the
//! `ALTER TABLE` step and the JSON and Arrow IPC row checks at its top; each
//! test covers one table kind or one refusal from start to end.

use std::collections::BTreeMap;

use arrow_array::RecordBatch;
use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_schema::DataType as ArrowType;
use fluss_source_runner::{Level, logs};
use fluss_testkit::fluss::client::FlussConnection;
use fluss_testkit::fluss::metadata::{
    AlterTableChanges, DataTypes, DropColumn, ModifyColumn, RenameColumn, Schema, TablePath,
};
use fluss_testkit::fluss::row::GenericRow;
use fluss_testkit::write::{self, Change};
use fluss_testkit::{tables, unique_table};
use serde_json::{Map, Value, json};

use crate::arrow_ipc::decode;
use crate::fixture::{Answer, Received, Stream, cluster, config, rt};
use crate::snapshots::kv_snapshots_caught_up;

/// Every header the fixture decodes, plus the schema id.
const HEADERS: [&str; 6] = [
    "fluss_bucket",
    "fluss_offset",
    "fluss_timestamp",
    "fluss_change_type",
    "fluss_row_count",
    "fluss_schema_id",
];

/// The values of row `id` in schema version `version` (1: `id, name`; 2: `+ c1 STRING`;
/// 3: `+ c2 INT`, null for odd ids), in column order. `tag` varies the name per write.
fn values(id: i64, version: i32, tag: &str) -> Vec<(&'static str, Value)> {
    let mut row = vec![("id", json!(id)), ("name", json!(format!("{tag}-{id}")))];
    if version >= 2 {
        row.push(("c1", json!(format!("c1-{id}"))));
    }
    if version >= 3 {
        row.push((
            "c2",
            if id % 2 == 0 {
                json!(id * 10)
            } else {
                Value::Null
            },
        ));
    }
    row
}

/// The row `values(id, version, tag)` to write with schema `version`.
fn row(id: i64, version: i32, tag: &str) -> GenericRow<'static> {
    let values = values(id, version, tag);
    let mut row = GenericRow::new(values.len());
    for (i, (_, value)) in values.iter().enumerate() {
        match value {
            Value::Number(n) if i == 0 => row.set_field(i, n.as_i64().unwrap()),
            Value::Number(n) => row.set_field(i, n.as_i64().unwrap() as i32),
            Value::String(s) => row.set_field(i, s.clone()),
            _ => {} // null
        }
    }
    row
}

/// The JSON object of `values`, keys in column order, padded with nulls up to `columns`
/// columns (an image shown in a newer version).
fn object(values: &[(&'static str, Value)], columns: &[&'static str]) -> String {
    let mut out = String::from("{");
    for (i, name) in columns.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let value = values
            .iter()
            .find(|(n, _)| n == name)
            .map_or(Value::Null, |(_, v)| v.clone());
        out.push_str(&format!("{}:{value}", json!(name)));
    }
    out.push('}');
    out
}

/// The columns of schema `version`.
fn columns(version: i32) -> Vec<&'static str> {
    ["id", "name", "c1", "c2"][..version as usize + 1].to_vec()
}

fn base_schema(primary_key: bool) -> Schema {
    let builder = Schema::builder()
        .column("id", DataTypes::bigint())
        .column("name", DataTypes::string());
    let builder = if primary_key {
        builder.primary_key(vec!["id"]).expect("primary key")
    } else {
        builder
    };
    builder.build().expect("schema")
}

/// Adds column version + 1 (`c1 STRING` or `c2 INT`) and waits until the table shows it.
fn add_column(conn: &FlussConnection, path: &TablePath, version: i32) {
    let (name, data_type) = match version {
        2 => ("c1", DataTypes::string()),
        _ => ("c2", DataTypes::int()),
    };
    rt().block_on(async {
        let admin = conn.get_admin().expect("admin");
        tables::add_column(&admin, path, name, data_type)
            .await
            .unwrap_or_else(|e| panic!("ADD COLUMN {name}: {e}"));
        tables::wait_schema_id(&admin, path, version).await;
    });
}

/// Appends rows `ids` of schema `version`, one at a time: right after an `ALTER TABLE` a
/// tablet server may not know the new schema yet (see `write::append_rows_after_schema_change`).
fn append(conn: &FlussConnection, path: &TablePath, ids: std::ops::Range<i64>, version: i32) {
    rt().block_on(write::append_rows_after_schema_change(
        conn,
        path,
        ids.map(|id| row(id, version, "n")),
    ));
}

fn instance_config(table: &str, extra: Value) -> Value {
    let mut c = config(table, json!({ "headers": HEADERS }));
    if let (Value::Object(c), Value::Object(e)) = (&mut c, extra) {
        c.extend(e);
    }
    c
}

/// The INFO lines about schema changes of `table` logged after index `since`.
fn change_lines(table: &str, since: usize) -> Vec<String> {
    let tag = format!("{}.{table}", tables::TEST_DATABASE);
    logs()
        .into_iter()
        .skip(since)
        .filter(|l| {
            l.level == Level::Info
                && l.message.contains(&tag)
                && l.message.contains("schema changed")
        })
        .map(|l| l.message)
        .collect()
}

/// Row `row` of an Arrow IPC batch as `name: value` pairs (the types these tests use).
fn ipc_row(batch: &RecordBatch, row: usize) -> Map<String, Value> {
    let schema = batch.schema();
    schema
        .fields()
        .iter()
        .zip(batch.columns())
        .map(|(field, column)| {
            let value = if column.is_null(row) {
                Value::Null
            } else {
                match column.data_type() {
                    ArrowType::Int64 => json!(column.as_primitive::<Int64Type>().value(row)),
                    ArrowType::Int32 => json!(column.as_primitive::<Int32Type>().value(row)),
                    ArrowType::Utf8 => json!(column.as_string::<i32>().value(row)),
                    ArrowType::Timestamp(..) => Value::Null,
                    other => panic!("column {}: unexpected type {other}", field.name()),
                }
            };
            (field.name().clone(), value)
        })
        .collect()
}

/// A row of an Arrow IPC message: its message's table columns and schema id, and its values.
type IpcRow = (Vec<String>, Option<i32>, Map<String, Value>);

/// Every row of the IPC messages, with the column names and schema id of its message.
fn ipc_rows(messages: &[Received]) -> Vec<IpcRow> {
    let mut rows = Vec::new();
    for m in messages {
        let batch = decode(m);
        let names: Vec<String> = batch
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .filter(|n| !n.starts_with('_'))
            .collect();
        for r in 0..batch.num_rows() {
            rows.push((names.clone(), m.schema_id, ipc_row(&batch, r)));
        }
    }
    rows
}

/// Reads Arrow IPC messages from `s` until they hold `rows` rows.
fn read_rows(s: &mut Stream, rows: usize) {
    let rows_of = |messages: &[Received]| -> usize {
        messages
            .iter()
            .map(|m| m.row_count.unwrap_or(0) as usize)
            .sum()
    };
    s.read_until(&format!("{rows} rows"), Answer::AckAll, |s| {
        rows_of(&s.acked) >= rows
    });
}

/// The version row `id` of the log test was written with.
fn log_version(id: i64) -> i32 {
    match id {
        0..10 => 1,
        10..20 => 2,
        _ => 3,
    }
}

fn assert_log_json(messages: &[Received], ids: std::ops::Range<i64>) {
    let by_id: BTreeMap<i64, &Received> = messages
        .iter()
        .map(|m| (m.payload["id"].as_i64().unwrap(), m))
        .collect();
    assert_eq!(by_id.len(), messages.len(), "no row twice");
    assert_eq!(
        by_id.keys().copied().collect::<Vec<_>>(),
        ids.clone().collect::<Vec<_>>()
    );
    for id in ids {
        let version = log_version(id);
        let m = by_id[&id];
        assert_eq!(
            String::from_utf8_lossy(&m.raw),
            object(&values(id, version, "n"), &columns(version)),
            "row {id}: the keys of its version, in column order"
        );
        assert_eq!(m.schema_id, Some(version), "row {id}: fluss_schema_id");
    }
}

#[test]
fn columns_added_to_a_log_table_while_streaming_reach_json_and_arrow_ipc() {
    let path = unique_table("schema_log");
    let conn = rt().block_on(cluster().connection());
    rt().block_on(async {
        let admin = conn.get_admin().unwrap();
        tables::create_log_table(&admin, &path, base_schema(false), 2).await;
    });
    let table = path.table().to_owned();
    let since = logs().len();
    append(&conn, &path, 0..10, 1);
    let mut json_stream = Stream::open(&instance_config(&table, json!({})), None).unwrap();
    let mut ipc = Stream::open(
        &instance_config(
            &table,
            json!({"payload_format": "arrow_ipc", "filter": "id >= 5"}),
        ),
        None,
    )
    .unwrap();
    let mut projected = Stream::open(
        &instance_config(&table, json!({"columns": ["id", "name"]})),
        None,
    )
    .unwrap();
    let read_all = |streams: [&mut Stream; 3], want: [usize; 3]| {
        for (s, want) in streams.into_iter().zip(want) {
            s.read(want, Answer::AckAll);
        }
    };
    read_all([&mut json_stream, &mut ipc, &mut projected], [10, 1, 10]);
    add_column(&conn, &path, 2);
    append(&conn, &path, 10..20, 2);
    read_all([&mut json_stream, &mut ipc, &mut projected], [20, 2, 20]);
    add_column(&conn, &path, 3);
    append(&conn, &path, 20..30, 3);
    json_stream.read(30, Answer::AckAll);
    projected.read(30, Answer::AckAll);
    read_rows(&mut ipc, 25);

    assert_log_json(&json_stream.acked, 0..30);
    // The projection keeps exactly its columns, in the open-time schema.
    for m in &projected.acked {
        let id = m.payload["id"].as_i64().unwrap();
        assert_eq!(
            String::from_utf8_lossy(&m.raw),
            object(&values(id, 1, "n"), &columns(1))
        );
        assert_eq!(m.schema_id, Some(1));
    }
    assert_eq!(projected.acked.len(), 30);
    // Arrow IPC: each message carries its rows' schema; the filter applies to every version.
    let rows = ipc_rows(&ipc.acked);
    let mut seen: Vec<i64> = rows
        .iter()
        .map(|(_, _, r)| r["id"].as_i64().unwrap())
        .collect();
    seen.sort_unstable();
    assert_eq!(
        seen,
        (5..30).collect::<Vec<_>>(),
        "the filter keeps id >= 5"
    );
    for (names, schema_id, r) in &rows {
        let id = r["id"].as_i64().unwrap();
        let version = log_version(id);
        assert_eq!(*schema_id, Some(version), "row {id}");
        assert_eq!(
            names,
            &columns(version),
            "row {id}: the columns of its version"
        );
        let expected: Map<String, Value> = values(id, version, "n")
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
        let mut r = r.clone();
        assert!(
            r.remove("_log_offset").is_some_and(|o| o.is_i64()),
            "row {id}: read through a filter, a log table's rows lead with their offsets"
        );
        assert_eq!(r, expected, "row {id}");
    }
    // One INFO line per change and instance (the projected one sees none).
    let lines = change_lines(&table, since);
    let count = |needle: &str| lines.iter().filter(|l| l.contains(needle)).count();
    assert_eq!(
        count("schema changed from id 1 to id 2: columns added: c1;"),
        2,
        "{lines:#?}"
    );
    assert_eq!(
        count("schema changed from id 2 to id 3: columns added: c2;"),
        2,
        "{lines:#?}"
    );
    assert_eq!(lines.len(), 4, "{lines:#?}");
    drop(ipc);
    drop(projected);

    // A restart from the saved state after the changes goes on in the newest schema.
    let state = json_stream.close();
    append(&conn, &path, 30..35, 3);
    let mut resumed = Stream::open(&instance_config(&table, json!({})), state).unwrap();
    resumed.read(5, Answer::AckAll);
    assert_log_json(&resumed.acked, 30..35);
    drop(resumed);

    // A fresh read from the earliest offset, opened with schema 3, shows every version as written.
    let mut fresh = Stream::open(&instance_config(&table, json!({})), None).unwrap();
    fresh.read(35, Answer::AckAll);
    assert_log_json(&fresh.acked, 0..35);
}

/// What the primary-key test writes, in order: (id, version, tag) upserts or deletes.
enum Write {
    Upsert(i64, i32, &'static str),
    Delete(i64, i32, &'static str),
}

/// Applies `writes` in order, one at a time: right after an `ALTER TABLE` a tablet server may
/// not know the new schema yet (see `write::write_changes_after_schema_change`).
fn apply(conn: &FlussConnection, path: &TablePath, writes: &[Write]) {
    rt().block_on(write::write_changes_after_schema_change(
        conn,
        path,
        writes.iter().map(|w| match *w {
            Write::Upsert(id, version, tag) => Change::Upsert(row(id, version, tag)),
            Write::Delete(id, version, tag) => Change::Delete(row(id, version, tag)),
        }),
    ));
}

/// The Debezium `(op, before, after)` each write gives, shown in schema `version` (the one
/// the table has when it is written): the images as JSON text, keys in column order.
fn expected_events(
    writes: &[Write],
    version: i32,
    table: &mut BTreeMap<i64, Vec<(&'static str, Value)>>,
) -> Vec<(i64, String)> {
    let columns = columns(version);
    let mut events = Vec::new();
    for w in writes {
        let (id, event) = match *w {
            Write::Upsert(id, v, tag) => {
                let after = values(id, v, tag);
                let event = match table.insert(id, after.clone()) {
                    None => format!(
                        r#"{{"op":"c","before":null,"after":{}"#,
                        object(&after, &columns)
                    ),
                    Some(before) => format!(
                        r#"{{"op":"u","before":{},"after":{}"#,
                        object(&before, &columns),
                        object(&after, &columns)
                    ),
                };
                (id, event)
            }
            Write::Delete(id, ..) => {
                let before = table.remove(&id).expect("deletes an existing key");
                (
                    id,
                    format!(
                        r#"{{"op":"d","before":{},"after":null"#,
                        object(&before, &columns)
                    ),
                )
            }
        };
        events.push((id, event));
    }
    events
}

/// The part of a Debezium event the expectation covers: up to `source`.
fn event_head(m: &Received) -> String {
    let raw = String::from_utf8_lossy(&m.raw);
    let end = raw.find(r#","source":"#).expect("a source block");
    raw[..end].to_owned()
}

/// Per key, the events in order.
fn per_key(events: impl IntoIterator<Item = (i64, String)>) -> BTreeMap<i64, Vec<String>> {
    let mut map: BTreeMap<i64, Vec<String>> = BTreeMap::new();
    for (id, e) in events {
        map.entry(id).or_default().push(e);
    }
    map
}

#[test]
fn columns_added_to_a_primary_key_table_while_streaming_reach_debezium_and_arrow_ipc() {
    let path = unique_table("schema_pk");
    let conn = rt().block_on(cluster().connection());
    rt().block_on(async {
        let admin = conn.get_admin().unwrap();
        tables::create_pk_table(&admin, &path, base_schema(true), 2).await;
    });
    let table = path.table().to_owned();
    let rounds: [(i32, Vec<Write>); 3] = [
        (1, (0..10).map(|id| Write::Upsert(id, 1, "n")).collect()),
        (
            2,
            (5..15)
                .map(|id| Write::Upsert(id, 2, "u"))
                .chain((0..2).map(|id| Write::Delete(id, 2, "n")))
                .collect(),
        ),
        (
            3,
            (12..17)
                .map(|id| Write::Upsert(id, 3, "w"))
                .chain([Write::Delete(2, 3, "n")])
                .collect(),
        ),
    ];
    let mut model = BTreeMap::new();
    let mut expected = Vec::new();
    let mut debezium = Stream::open(&instance_config(&table, json!({})), None).unwrap();
    let mut ipc = Stream::open(
        &instance_config(&table, json!({"payload_format": "arrow_ipc"})),
        None,
    )
    .unwrap();
    for (version, writes) in &rounds {
        if *version > 1 {
            add_column(&conn, &path, *version);
        }
        apply(&conn, &path, writes);
        let events = expected_events(writes, *version, &mut model);
        let schema_ids = events.iter().map(|(id, _)| (*id, *version));
        expected.extend(
            events
                .iter()
                .cloned()
                .zip(schema_ids)
                .map(|(e, (_, v))| (e, v)),
        );
        debezium.read(expected.len(), Answer::AckAll);
    }
    // Round 2: 5 update pairs, 5 inserts, 2 deletes; round 3: 3 pairs, 2 inserts, 1 delete.
    let changelog_rows = 10 + (2 * 5 + 5 + 2) + (2 * 3 + 2 + 1);
    read_rows(&mut ipc, changelog_rows);

    let got = per_key(debezium.acked.iter().map(|m| {
        let id = m
            .payload
            .get("after")
            .filter(|a| !a.is_null())
            .or(m.payload.get("before"))
            .and_then(|r| r["id"].as_i64())
            .unwrap();
        (id, event_head(m))
    }));
    let want = per_key(expected.iter().map(|((id, e), _)| (*id, e.clone())));
    assert_eq!(
        got, want,
        "every change, each image in the schema it was written in"
    );
    let mut ids_by_version: BTreeMap<i32, usize> = BTreeMap::new();
    for m in &debezium.acked {
        *ids_by_version.entry(m.schema_id.unwrap()).or_default() += 1;
    }
    let mut want_by_version: BTreeMap<i32, usize> = BTreeMap::new();
    for (_, v) in &expected {
        *want_by_version.entry(*v).or_default() += 1;
    }
    assert_eq!(
        ids_by_version, want_by_version,
        "fluss_schema_id of the events"
    );

    // Arrow IPC: the changelog columns, then the columns of each row's version.
    let rows = ipc_rows(&ipc.acked);
    assert_eq!(rows.len(), changelog_rows);
    for (names, schema_id, _) in &rows {
        let version = schema_id.expect("fluss_schema_id");
        assert_eq!(names, &columns(version));
    }
    let last_per_key: BTreeMap<i64, Map<String, Value>> = rows
        .iter()
        .map(|(_, _, r)| (r["id"].as_i64().unwrap(), r.clone()))
        .collect();
    for (id, values) in &model {
        let row = &last_per_key[id];
        let want: Map<String, Value> = values
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        let row: Map<String, Value> = row
            .iter()
            .filter(|(k, _)| !k.starts_with('_'))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        assert_eq!(row, want, "key {id}: its last image");
    }
    drop(ipc);

    // A restart after the changes: the next change comes in the newest schema.
    let state = debezium.close();
    let writes = [Write::Upsert(20, 3, "r"), Write::Upsert(3, 3, "r")];
    apply(&conn, &path, &writes);
    let after_restart = expected_events(&writes, 3, &mut model);
    let mut resumed = Stream::open(&instance_config(&table, json!({})), state).unwrap();
    resumed.read(2, Answer::AckAll);
    assert_eq!(
        per_key(resumed.acked.iter().map(|m| {
            let id = m.payload["after"]["id"].as_i64().unwrap();
            (id, event_head(m))
        })),
        per_key(after_restart)
    );
}

#[test]
fn a_snapshot_holding_rows_of_two_schema_ids_shows_them_in_the_newest() {
    let path = unique_table("schema_snap");
    let conn = rt().block_on(cluster().connection());
    rt().block_on(async {
        let admin = conn.get_admin().unwrap();
        tables::create_pk_table(&admin, &path, base_schema(true), 1).await;
    });
    let table = path.table().to_owned();
    apply(
        &conn,
        &path,
        &(0..6)
            .map(|id| Write::Upsert(id, 1, "n"))
            .collect::<Vec<_>>(),
    );
    kv_snapshots_caught_up(&conn, &path);
    add_column(&conn, &path, 2);
    let newer: Vec<Write> = (6..10)
        .chain(0..2)
        .map(|id| Write::Upsert(id, 2, "u"))
        .collect();
    apply(&conn, &path, &newer);
    kv_snapshots_caught_up(&conn, &path);
    let mut s = Stream::open(
        &instance_config(&table, json!({"starting_offset": "full"})),
        None,
    )
    .unwrap();
    s.read(10, Answer::AckAll);
    let mut got: BTreeMap<i64, String> = BTreeMap::new();
    for m in &s.acked {
        assert_eq!(m.payload["op"], "r", "{}", event_head(m));
        assert_eq!(m.schema_id, Some(2), "snapshot rows are shown in schema 2");
        got.insert(m.payload["after"]["id"].as_i64().unwrap(), event_head(m));
    }
    assert_eq!(s.acked.len(), 10);
    let want: BTreeMap<i64, String> = (0..10)
        .map(|id| {
            let image = if (2..6).contains(&id) {
                values(id, 1, "n")
            } else {
                values(id, 2, "u")
            };
            (
                id,
                format!(
                    r#"{{"op":"r","before":null,"after":{}"#,
                    object(&image, &columns(2))
                ),
            )
        })
        .collect();
    assert_eq!(got, want, "rows written before the change have c1 null");
}

#[test]
fn fluss_refuses_schema_changes_other_than_adding_nullable_columns_at_the_end() {
    let path = unique_table("schema_refused");
    let conn = rt().block_on(cluster().connection());
    rt().block_on(async {
        let admin = conn.get_admin().unwrap();
        tables::create_log_table(&admin, &path, base_schema(false), 1).await;
        let refused = [
            (
                "must be nullable",
                tables::add_column_change("c1", DataTypes::int().as_non_nullable()),
            ),
            (
                "Not support drop column",
                AlterTableChanges {
                    drop_columns: vec![DropColumn {
                        column_name: "name".into(),
                    }],
                    ..Default::default()
                },
            ),
            (
                "Not support rename column",
                AlterTableChanges {
                    rename_columns: vec![RenameColumn {
                        old_column_name: "name".into(),
                        new_column_name: "label".into(),
                    }],
                    ..Default::default()
                },
            ),
            (
                "Not support modify column",
                AlterTableChanges {
                    modify_columns: vec![ModifyColumn {
                        column_name: "name".into(),
                        data_type_json: tables::add_column_change("x", DataTypes::bigint())
                            .add_columns
                            .remove(0)
                            .data_type_json
                            .into(),
                        comment: None,
                        position: None,
                    }],
                    ..Default::default()
                },
            ),
        ];
        for (answer, change) in refused {
            let error = tables::alter(&admin, &path, change)
                .await
                .expect_err("refused");
            assert!(error.contains(answer), "{answer}: {error}");
        }
        let info = admin.get_table_info(&path).await.unwrap();
        assert_eq!(info.get_schema_id(), 1, "the schema did not change");
    });
}
