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

//! Row filters (`filter`): exactly the matching rows in every payload format, positions past
//! the filtered-out rows, update pairs of a primary-key changelog split by the filter, and a
//! bad filter refused at open with one error pointing at its position.
//!
//! On the log table the filter is also pushed down. The test cluster (Fluss 0.9.1, the
//! newest release) predates server-side filtering: it refuses `table.statistics.columns`
//! ("not a recognized Fluss table property in the current cluster version") and ignores the
//! FetchLog filter fields, so what is checked here is that pushdown is harmless and the
//! client-side result exact; that the server skips batches cannot be shown against it.

use std::collections::BTreeSet;
use std::time::Duration;

use arrow_array::{Float64Array, Int64Array, StringArray};
use fluss_testkit::fluss::metadata::{TableDescriptor, TablePath};
use fluss_testkit::fluss::row::GenericRow;
use fluss_testkit::write::{Change, write_changes};
use fluss_testkit::{tables, unique_table};
use serde_json::{Value, json};

use crate::arrow_ipc::decode;
use crate::bad_input::{Case, refused};
use crate::fixture::{Answer, Received, Stream, assert_bucket_order, cluster, config, ids, rt};

const ROWS: i64 = 6_000;
/// Keeps ids 5000..=5099, and 7 and 17: 102 rows.
const FILTER: &str = "id >= 5000 AND id < 5100 OR (id < 1000 AND name IN ('name-7', 'name-17'))";

fn expected(id: i64) -> bool {
    (5000..5100).contains(&id) || id == 7 || id == 17
}

/// A 3-bucket log table written in 12 appends (several batches per bucket, so some batches
/// hold no matching row).
fn log_table(prefix: &str) -> TablePath {
    let path = unique_table(prefix);
    rt().block_on(async {
        let conn = cluster().connection().await;
        let admin = conn.get_admin().unwrap();
        let descriptor = TableDescriptor::builder()
            .schema(tables::sample_log_schema())
            .distributed_by(Some(3), vec![])
            .build()
            .expect("descriptor");
        tables::create_table(&admin, &path, &descriptor).await;
        for chunk in 0..12 {
            let ids = chunk * ROWS / 12..(chunk + 1) * ROWS / 12;
            fluss_testkit::write::append_rows(&conn, &path, ids.map(tables::sample_row)).await;
        }
    });
    path
}

#[test]
fn only_matching_rows_arrive_in_every_format_and_positions_pass_the_rest() {
    let path = log_table("filter_log");
    let filter = FILTER;
    let want: BTreeSet<i64> = (0..ROWS).filter(|id| expected(*id)).collect();
    assert_eq!(want.len(), 102);

    let cfg = config(path.table(), json!({"filter": filter, "batch_size": 50}));
    let mut json_rows = Stream::open(&cfg, None).expect("open with a filter");
    json_rows.read(want.len(), Answer::NackEvery(3));
    // Then nothing more: each matching row came once.
    json_rows.read_for(Duration::from_secs(2), Answer::NackEvery(3));
    assert!(!json_rows.nacked.is_empty(), "some batches were nacked");
    assert_bucket_order(&json_rows.acked);
    let got: Vec<i64> = ids(&json_rows.acked);
    assert_eq!(got.len(), want.len(), "each matching row once: {got:?}");
    assert_eq!(got.iter().copied().collect::<BTreeSet<_>>(), want);
    for m in &json_rows.acked {
        let id = m.payload["id"].as_i64().unwrap();
        assert_eq!(
            m.payload,
            json!({"id": id, "name": tables::sample_name(id), "amount": tables::sample_amount(id)})
        );
    }

    // Each row's offset, as the JSON messages (one row each) name it.
    let json_offsets: BTreeSet<(i32, i64, i64)> = json_rows
        .acked
        .iter()
        .map(|m| (m.bucket, m.offset, m.payload["id"].as_i64().unwrap()))
        .collect();
    // The saved positions are past the filtered-out tail: a restart delivers nothing, then
    // only new matching rows.
    let state = json_rows.close();
    let mut again = Stream::open(&cfg, state).expect("reopen");
    assert_eq!(again.read_for(Duration::from_secs(4), Answer::AckAll), 0);
    rt().block_on(async {
        let conn = cluster().connection().await;
        fluss_testkit::write::append_rows(&conn, &path, (6_000..6_020).map(tables::sample_row))
            .await;
        fluss_testkit::write::append_rows(&conn, &path, [tables::sample_row(5_050)]).await;
    });
    again.read(1, Answer::AckAll);
    assert_eq!(ids(&again.acked), [5_050], "only the new matching row");

    let ipc_cfg = config(
        path.table(),
        json!({"filter": filter, "payload_format": "arrow_ipc"}),
    );
    let mut ipc = Stream::open(&ipc_cfg, None).expect("open arrow_ipc with a filter");
    let rows = |messages: &[Received]| -> usize {
        messages
            .iter()
            .map(|m| m.row_count.unwrap_or(0) as usize)
            .sum()
    };
    // Each matching row, 5050 twice; then nothing more.
    ipc.read_until("the matching rows", Answer::AckAll, |s| {
        rows(&s.acked) > want.len()
    });
    ipc.read_for(Duration::from_secs(2), Answer::AckAll);
    let mut ipc_ids = BTreeSet::new();
    for m in &ipc.acked {
        let batch = decode(m);
        let column = |name: &str| {
            batch
                .column_by_name(name)
                .and_then(|c| c.as_any().downcast_ref::<Int64Array>().cloned())
                .unwrap_or_else(|| panic!("{name} column"))
        };
        let (offsets, column) = (column("_log_offset"), column("id"));
        assert!(
            column.iter().all(|id| id.is_some_and(expected)),
            "only matching rows in IPC batches"
        );
        assert_eq!(
            offsets.value(0),
            m.offset,
            "the first row's offset is the header's"
        );
        for (offset, id) in offsets.values().iter().zip(column.values()) {
            assert!(
                *id == 5_050 || json_offsets.contains(&(m.bucket, *offset, *id)),
                "row {id} at offset {offset} of bucket {}: its `_log_offset` is its own",
                m.bucket
            );
        }
        ipc_ids.extend(column.iter().flatten());
    }
    assert_eq!(ipc_ids, want);
    let rows: i64 = ipc.acked.iter().map(|m| m.row_count.unwrap_or(0)).sum();
    assert_eq!(
        rows as usize,
        want.len() + 1,
        "each matching row once (5050 was written twice)"
    );
    assert!(
        ipc.acked.len() < want.len() / 4,
        "matching rows of a batch travel together: {} messages for {rows} rows",
        ipc.acked.len(),
    );
}

fn pk_row(id: i64, amount: f64) -> GenericRow<'static> {
    let mut row = GenericRow::new(3);
    row.set_field(0, id);
    row.set_field(1, format!("n{id}"));
    row.set_field(2, amount);
    row
}

/// (op, before amount, after amount) of each change event.
fn changes(events: &[crate::fixture::Received]) -> Vec<(String, Value, Value)> {
    events
        .iter()
        .map(|m| {
            let p = &m.payload;
            let op = p
                .get("__op")
                .unwrap_or(&p["op"])
                .as_str()
                .unwrap()
                .to_owned();
            match p.get("__op") {
                Some(_) => (op, Value::Null, p["amount"].clone()),
                None => (
                    op,
                    p["before"]["amount"].clone(),
                    p["after"]["amount"].clone(),
                ),
            }
        })
        .collect()
}

#[test]
fn updates_crossing_the_filter_become_the_filtered_views_changes() {
    let path = unique_table("filter_pk");
    rt().block_on(async {
        let conn = cluster().connection().await;
        let admin = conn.get_admin().unwrap();
        tables::create_pk_table(&admin, &path, tables::sample_pk_schema(), 1).await;
        write_changes(
            &conn,
            &path,
            [
                Change::Upsert(pk_row(1, 150.0)), // +I matches: c
                Change::Upsert(pk_row(2, 50.0)),  // +I does not: nothing
                Change::Upsert(pk_row(1, 20.0)),  // leaves the view: d of 150
                Change::Upsert(pk_row(2, 200.0)), // enters it: c of 200
                Change::Upsert(pk_row(1, 30.0)),  // outside before and after: nothing
                Change::Upsert(pk_row(2, 300.0)), // inside before and after: u 200 → 300
                Change::Delete(pk_row(2, 0.0)),   // -D of a matching row: d of 300
                Change::Delete(pk_row(1, 0.0)),   // -D of a row outside: nothing
            ],
        )
        .await;
    });
    let debezium = [
        ("c", Value::Null, json!(150.0)),
        ("d", json!(150.0), Value::Null),
        ("c", Value::Null, json!(200.0)),
        ("u", json!(200.0), json!(300.0)),
        ("d", json!(300.0), Value::Null),
    ];
    for format in ["debezium", "flat"] {
        let cfg = config(
            path.table(),
            json!({"filter": "amount >= 100", "changelog_format": format}),
        );
        let mut s = Stream::open(&cfg, None).expect("open");
        s.read(debezium.len(), Answer::AckAll);
        s.read_for(Duration::from_secs(2), Answer::AckAll);
        let want: Vec<(String, Value, Value)> = debezium
            .iter()
            .map(|(op, before, after)| match format {
                "flat" => (
                    op.to_string(),
                    Value::Null,
                    if after.is_null() {
                        before.clone()
                    } else {
                        after.clone()
                    },
                ),
                _ => (op.to_string(), before.clone(), after.clone()),
            })
            .collect();
        assert_eq!(changes(&s.acked), want, "{format}");
        let state = s.close();
        let mut again = Stream::open(&cfg, state).expect("reopen");
        assert_eq!(
            again.read_for(Duration::from_secs(3), Answer::AckAll),
            0,
            "{format}: the position passed the filtered-out changes"
        );
    }
    let cfg = config(
        path.table(),
        json!({"filter": "amount >= 100", "payload_format": "arrow_ipc"}),
    );
    let mut ipc = Stream::open(&cfg, None).expect("open arrow_ipc");
    // The six rows of the filtered view's changes, then nothing more.
    ipc.read_until("six rows of changes", Answer::AckAll, |s| {
        s.acked
            .iter()
            .map(|m| m.row_count.unwrap_or(0))
            .sum::<i64>()
            >= 6
    });
    ipc.read_for(Duration::from_secs(2), Answer::AckAll);
    let mut rows = Vec::new();
    for m in &ipc.acked {
        let batch = decode(m);
        let types = batch
            .column_by_name("_change_type")
            .and_then(|c| c.as_any().downcast_ref::<StringArray>().cloned())
            .expect("_change_type");
        let amounts = batch
            .column_by_name("amount")
            .and_then(|c| c.as_any().downcast_ref::<Float64Array>().cloned())
            .expect("amount");
        for i in 0..batch.num_rows() {
            rows.push((types.value(i).to_owned(), amounts.value(i)));
        }
    }
    let want = [
        ("insert", 150.0),
        ("delete", 150.0),
        ("insert", 200.0),
        ("update_before", 200.0),
        ("update_after", 300.0),
        ("delete", 300.0),
    ];
    assert_eq!(
        rows,
        want.map(|(t, a)| (t.to_owned(), a)),
        "Arrow IPC carries the filtered view's change types"
    );
}

#[test]
fn a_bad_filter_fails_open_pointing_at_the_position() {
    let path = unique_table("filter_bad");
    rt().block_on(async {
        let conn = cluster().connection().await;
        let admin = conn.get_admin().unwrap();
        tables::create_log_table(&admin, &path, tables::sample_log_schema(), 1).await;
    });
    let table = path.table();
    let with = |filter: &str| config(table, json!({ "filter": filter }));
    for case in [
        Case::new(
            "syntax",
            with("name = 'a' AND id >="),
            "invalid plugin_config: `filter`: at column 21: expected a value after `>=`, found end of input",
        ),
        Case::new(
            "unknown column",
            with("id > 1 AND nmae = 'x'"),
            "`filter`: at column 12: unknown column `nmae`; the table's columns are id, name, amount",
        ),
        Case::new(
            "type mismatch",
            with("id = 'seven'"),
            "`filter`: at column 6: column `id` is BIGINT; expected an integer from -9223372036854775808 to 9223372036854775807, found 'seven'",
        ),
        Case::new(
            "projected away",
            config(
                table,
                json!({"filter": "amount > 1", "columns": ["id", "name"]}),
            ),
            "`filter`: at column 1: column `amount` is not read: `columns` leaves it out; add it to `columns`",
        ),
    ] {
        refused(&case);
    }
}
