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

//! `payload_format = "arrow_ipc"` into a `schema = "raw"` stream: the runtime passes the
//! bytes through, and each payload read back is one Arrow IPC stream of the rows written.

use std::collections::{BTreeMap, BTreeSet};

use arrow_array::{Array, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow_ipc::reader::StreamReader;
use fluss_testkit::iggy::{Message, Stop};
use fluss_testkit::tables::{sample_amount, sample_log_schema, sample_name, sample_row};
use serde_json::json;

use crate::fixture::{
    World, append, assert_ids, assert_one_partition, bucket, connector, create_table, offset,
};

const ROWS: i64 = 3000;
const TOPIC: &str = "orders_ipc";

fn row_count(m: &Message) -> i64 {
    m.header("fluss_row_count")
        .as_i64()
        .expect("fluss_row_count is an int64 header")
}

fn column<'a, T: 'static>(batch: &'a RecordBatch, name: &str) -> &'a T {
    batch
        .column_by_name(name)
        .unwrap_or_else(|| panic!("column {name}"))
        .as_any()
        .downcast_ref::<T>()
        .unwrap_or_else(|| panic!("type of column {name}"))
}

#[test]
fn arrow_ipc_payloads_decode_to_the_rows_written() {
    let world = World::new("arrow_ipc");
    let (table, table_id) = create_table("rt_ipc", sample_log_schema(), 3);
    // Three appends make several Fluss record batches per bucket.
    for part in 0..3 {
        append(
            &table,
            (part * ROWS / 3..(part + 1) * ROWS / 3).map(sample_row),
        );
    }
    let mut runtime = world.runtime(&[connector(
        "fluss_orders_ipc",
        &table,
        TOPIC,
        "raw",
        json!({ "payload_format": "arrow_ipc" }),
    )]);
    world.wait_for(TOPIC, &format!("{ROWS} rows in IPC messages"), |m| {
        m.iter().map(row_count).sum::<i64>() >= ROWS
    });
    runtime.stop(Stop::Interrupt);
    let messages = world.messages(TOPIC);
    assert_one_partition(&world, TOPIC, &messages);
    assert_ids(&messages, table_id);

    let mut rows = BTreeSet::new();
    let mut next_offset: BTreeMap<i32, i64> = BTreeMap::new();
    for m in &messages {
        let mut reader = StreamReader::try_new(m.payload.as_slice(), None).expect("an IPC stream");
        let batch = reader.next().expect("one batch").expect("a valid batch");
        assert!(reader.next().is_none(), "exactly one batch per message");
        assert_eq!(
            batch.num_rows() as i64,
            row_count(m),
            "fluss_row_count matches the batch"
        );
        assert!(
            !m.headers.contains_key("fluss_change_type"),
            "IPC messages carry no change type"
        );
        // Per bucket each message starts where the previous one ended.
        let expected = next_offset.entry(bucket(m)).or_insert(0);
        assert_eq!(
            offset(m),
            *expected,
            "bucket {} continues at its next offset",
            bucket(m)
        );
        *expected += row_count(m);

        let ids = column::<Int64Array>(&batch, "id");
        let names = column::<StringArray>(&batch, "name");
        let amounts = column::<Float64Array>(&batch, "amount");
        for i in 0..batch.num_rows() {
            let id = ids.value(i);
            assert_eq!(names.value(i), sample_name(id), "name of row {id}");
            assert_eq!(amounts.value(i), sample_amount(id), "amount of row {id}");
            assert!(rows.insert(id), "row {id} came twice");
        }
    }
    assert_eq!(
        rows,
        (0..ROWS).collect(),
        "the batches hold every row written"
    );
}
