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

//! `payload_format = "arrow_ipc"`: every payload is a self-contained Arrow IPC stream; the
//! decoded batches add up to the table, through restarts and Nacks, in Rust and in pyarrow.

use std::collections::BTreeMap;
use std::process::Command;

use arrow_array::{Array, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow_ipc::reader::StreamReader;
use fluss_testkit::fluss::metadata::TablePath;
use fluss_testkit::tables::{self, sample_amount, sample_name, sample_row};
use fluss_testkit::{unique_table, write};
use serde_json::json;

use crate::fixture::{Answer, Received, Stream, cluster, config, rt};

/// The rows of Arrow IPC messages.
fn rows(messages: &[Received]) -> usize {
    messages
        .iter()
        .map(|m| m.row_count.expect("fluss_row_count") as usize)
        .sum()
}

/// The one record batch of an Arrow IPC message, checked against its `fluss_row_count`.
pub(crate) fn decode(message: &Received) -> RecordBatch {
    let mut reader = StreamReader::try_new(message.raw.as_slice(), None).expect("IPC stream");
    let batch = reader.next().expect("one batch").expect("valid batch");
    assert!(reader.next().is_none(), "exactly one batch per message");
    assert_eq!(
        Some(batch.num_rows() as i64),
        message.row_count,
        "fluss_row_count matches the batch"
    );
    batch
}

/// Column `name` of `batch` as its concrete Arrow array type.
pub(crate) fn column<'a, T: 'static>(batch: &'a RecordBatch, name: &str) -> &'a T {
    batch
        .column_by_name(name)
        .unwrap_or_else(|| panic!("column {name}"))
        .as_any()
        .downcast_ref::<T>()
        .unwrap_or_else(|| panic!("type of {name}"))
}

fn log_table(prefix: &str, rows: i64) -> TablePath {
    let path = unique_table(prefix);
    rt().block_on(async {
        let conn = cluster().connection().await;
        let admin = conn.get_admin().unwrap();
        tables::create_log_table(&admin, &path, tables::sample_log_schema(), 3).await;
        // Several writes make several Fluss record batches per bucket.
        for chunk in 0..4 {
            let per = rows / 4;
            write::append_rows(
                &conn,
                &path,
                (chunk * per..(chunk + 1) * per).map(sample_row),
            )
            .await;
        }
    });
    path
}

#[test]
fn log_table_batches_add_up_to_the_table_through_restart_and_nacks() {
    let path = log_table("ipc_log", 20_000);
    let cfg = config(
        path.table(),
        json!({"payload_format": "arrow_ipc", "arrow_ipc_compression": "lz4", "batch_size": 2,
               "max_batch_bytes": 16384}),
    );
    let mut first = Stream::open(&cfg, None).expect("open");
    first.read(4, Answer::NackEvery(2));
    let mut messages = first.acked.clone();
    let first_nacks = first.nacked.len();
    let state = first.close();
    let mut second = Stream::open(&cfg, state).expect("reopen");
    let first_rows = rows(&messages);
    second.read_until("the table's 20000 rows", Answer::NackEvery(2), |s| {
        first_rows + rows(&s.acked) >= 20_000
    });
    assert!(
        first_nacks > 0 && !second.nacked.is_empty(),
        "batches were nacked"
    );
    messages.extend(second.acked.iter().cloned());
    let mut ids = Vec::new();
    for m in &messages {
        let batch = decode(m);
        assert!(
            m.raw.len() <= 16384 * 2,
            "a message stays near max_batch_bytes ({} bytes)",
            m.raw.len()
        );
        let id = column::<Int64Array>(&batch, "id");
        let name = column::<StringArray>(&batch, "name");
        let amount = column::<Float64Array>(&batch, "amount");
        for i in 0..batch.num_rows() {
            assert_eq!(name.value(i), sample_name(id.value(i)));
            assert_eq!(amount.value(i), sample_amount(id.value(i)));
        }
        // The header offset is the first row's; rows of one message are consecutive.
        ids.extend(id.values().iter().copied());
        assert_eq!(m.change_type, None, "no change type on IPC messages");
    }
    ids.sort_unstable();
    assert_eq!(
        ids,
        (0..20_000).collect::<Vec<_>>(),
        "every row exactly once"
    );
}

#[test]
fn primary_key_changelog_batches_lead_with_change_columns() {
    let path = unique_table("ipc_pk");
    let conn = rt().block_on(cluster().connection());
    let admin = conn.get_admin().unwrap();
    rt().block_on(async {
        tables::create_pk_table(&admin, &path, tables::sample_pk_schema(), 2).await;
        write::upsert_rows(&conn, &path, (0..100).map(sample_row)).await;
        let mut updated = Vec::new();
        for id in 0..50 {
            let mut row = sample_row(id);
            row.set_field(1, format!("updated-{id}"));
            updated.push(row);
        }
        write::upsert_rows(&conn, &path, updated).await;
        write::delete_rows(&conn, &path, (90..100).map(sample_row)).await;
    });
    let mut s = Stream::open(
        &config(path.table(), json!({"payload_format": "arrow_ipc"})),
        None,
    )
    .expect("open");
    // 100 inserts, 50 updates (a -U and a +U row each) and 10 deletes.
    s.read_until("the 210 rows of the changelog", Answer::AckAll, |s| {
        rows(&s.acked) >= 210
    });
    let mut state: BTreeMap<i64, String> = BTreeMap::new();
    let mut kinds = BTreeMap::new();
    for m in &s.acked {
        let batch = decode(m);
        let names: Vec<&str> = batch
            .schema_ref()
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .collect();
        assert_eq!(
            names,
            [
                "_change_type",
                "_log_offset",
                "_commit_timestamp",
                "id",
                "name",
                "amount"
            ]
        );
        let change = column::<StringArray>(&batch, "_change_type");
        let offset = column::<Int64Array>(&batch, "_log_offset");
        let id = column::<Int64Array>(&batch, "id");
        let name = column::<StringArray>(&batch, "name");
        assert_eq!(
            offset.value(0),
            m.offset,
            "header offset is the first row's"
        );
        for i in 0..batch.num_rows() {
            *kinds.entry(change.value(i).to_owned()).or_insert(0) += 1;
            match change.value(i) {
                "insert" | "update_after" => {
                    state.insert(id.value(i), name.value(i).to_owned());
                }
                "delete" => {
                    state.remove(&id.value(i));
                }
                "update_before" => {}
                other => panic!("unknown change type {other}"),
            }
        }
    }
    let expected: BTreeMap<i64, String> = (0..90)
        .map(|id| {
            let name = if id < 50 {
                format!("updated-{id}")
            } else {
                sample_name(id)
            };
            (id, name)
        })
        .collect();
    assert_eq!(state, expected);
    assert_eq!(kinds.get("insert"), Some(&100));
    assert_eq!(kinds.get("update_before"), Some(&50));
    assert_eq!(kinds.get("update_after"), Some(&50));
    assert_eq!(kinds.get("delete"), Some(&10));
}

#[test]
fn pyarrow_reads_every_payload() {
    // pyarrow from the suites' virtual environment.
    let python = fluss_testkit::python::python();
    let path = log_table("ipc_pyarrow", 4_000);
    let mut s = Stream::open(
        &config(
            path.table(),
            json!({"payload_format": "arrow_ipc", "arrow_ipc_compression": "zstd"}),
        ),
        None,
    )
    .expect("open");
    s.read_until("the table's 4000 rows", Answer::AckAll, |s| {
        rows(&s.acked) >= 4_000
    });
    let dir = std::env::temp_dir().join(format!("ipc-payloads-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (i, m) in s.acked.iter().enumerate() {
        std::fs::write(dir.join(format!("{i:06}.arrows")), &m.raw).unwrap();
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/read_ipc.py");
    let output = Command::new(&python)
        .arg(script)
        .arg(&dir)
        .output()
        .expect("run the pyarrow reader");
    std::fs::remove_dir_all(&dir).ok();
    assert!(
        output.status.success(),
        "pyarrow failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["messages"], s.acked.len());
    assert_eq!(report["rows"], 4_000);
    let mut ids: Vec<i64> = report["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..4_000).collect::<Vec<_>>());
    assert_eq!(report["schemas"], json!([["id", "name", "amount"]]));
}
