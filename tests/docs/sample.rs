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

//! The README's sample output is what the code produces: each line is rebuilt from the row it
//! shows, through the plugin's own encoders and stamps (with `headers = "all"`, as the
//! quickstart reads the demo tables) and the runner's rendering of what the runtime writes to
//! a `json` topic, and compared byte for byte.

use std::sync::Arc;

use arrow_array::{
    ArrayRef, Decimal128Array, Int32Array, Int64Array, RecordBatch, StringArray,
    TimestampMillisecondArray,
};
use fluss::metadata::{DataField, DataTypes, RowType};
use fluss::record::{ChangeType, ScanRecord, to_arrow_schema};
use fluss::row::ColumnarRow;
use fluss_source_runner::output::render_batch;
use fluss_source_runner::{Batch as RunnerBatch, StreamSchema};
use iggy_connector_fluss_source::config::options::{ChangelogFormat, HeaderSet, JsonOptions};
use iggy_connector_fluss_source::encode::Encoder;
use iggy_connector_fluss_source::encode::batch::Batch;
use iggy_connector_fluss_source::encode::cdc::ChangeMessages;
use iggy_connector_fluss_source::encode::rows::RowMessages;
use iggy_connector_fluss_source::encode::stamp::{BucketStamp, Stamper};
use iggy_connector_fluss_source::position::BucketKey;
use iggy_connector_fluss_source::schemas::Schemas;
use iggy_connector_sdk::{ProducedMessages, Schema};
use serde_json::Value;

use crate::{code_blocks, read, section};

/// The sample lines of the README's quickstart, in order.
fn readme_sample() -> Vec<String> {
    let readme = read("README.md");
    let quickstart = section(&readme, "## Quickstart");
    let blocks = code_blocks(quickstart, "json");
    assert_eq!(blocks.len(), 1, "one block of sample output");
    blocks[0].lines().map(str::to_owned).collect()
}

/// The quickstart's demo tables (testkit's `fluss-demo-writer`).
fn orders_fields() -> Vec<DataField> {
    vec![
        DataTypes::field("order_id", DataTypes::bigint()),
        DataTypes::field("customer_id", DataTypes::int()),
        DataTypes::field("item", DataTypes::string()),
        DataTypes::field("amount", DataTypes::decimal(10, 2)),
        DataTypes::field("ordered_at", DataTypes::timestamp_ltz_with_precision(3)),
    ]
}

fn customers_fields() -> Vec<DataField> {
    vec![
        DataTypes::field("customer_id", DataTypes::int()),
        DataTypes::field("name", DataTypes::string()),
        DataTypes::field("tier", DataTypes::string()),
    ]
}

/// One record of one row, as fluss-rs hands it over: `columns` in the Arrow types of
/// `to_arrow_schema`.
fn record(
    fields: Vec<DataField>,
    columns: Vec<ArrayRef>,
    offset: i64,
    timestamp: i64,
    change: ChangeType,
) -> ScanRecord {
    let row_type = RowType::new(fields);
    let schema = to_arrow_schema(&row_type).expect("the demo table's Arrow schema");
    let batch = RecordBatch::try_new(schema, columns).expect("one row of the demo table");
    let row = ColumnarRow::new(Arc::new(batch), Arc::new(row_type), 0, None).expect("row");
    ScanRecord::new(row, offset, timestamp, change)
}

/// The line the runner prints for the one message `encoder` makes of `record`, as batch
/// `batch_id` through a `json` stream.
fn line(
    encoder: &mut dyn Encoder,
    stamp: &BucketStamp,
    record: ScanRecord,
    batch_id: u64,
) -> String {
    let mut batch = Batch::new(10, 1 << 20);
    let consumed = encoder
        .encode(stamp, std::slice::from_ref(&record), &mut batch)
        .expect("encode");
    assert_eq!(consumed, 1);
    let messages = batch.into_messages().expect("messages");
    assert_eq!(messages.len(), 1, "one message per row");
    let batch = RunnerBatch {
        batch_id,
        messages: ProducedMessages {
            schema: Schema::Json,
            messages,
            state: None,
        },
        encoded_len: 0,
    };
    let mut out = String::new();
    render_batch(&batch, Some(StreamSchema::Json), &mut out).expect("the runtime accepts it");
    out.trim_end().to_owned()
}

/// Field `key` of the sample line's JSON at `path` (e.g. `["payload", "ts_ms"]`).
fn field(line: &str, path: &[&str]) -> Value {
    let value: Value = serde_json::from_str(line).expect("a sample line is JSON");
    path.iter().fold(value, |v, key| v[*key].clone())
}

#[test]
fn the_readme_sample_output_is_what_the_code_produces() {
    let sample = readme_sample();
    assert_eq!(
        sample.len(),
        2,
        "a demo.orders line and a demo.customers line"
    );

    // demo.orders, table id 0: a log row with `include_metadata = true` (the quickstart's).
    let stamp = Stamper::new(0, "demo.orders", HeaderSet::ALL)
        .expect("stamper")
        .bucket(BucketKey::bucket(0), None)
        .expect("bucket 0");
    let mut rows = RowMessages::new(
        Schemas::new(0, orders_fields(), false),
        JsonOptions::default(),
        true,
    );
    let ordered_at = 1_796_030_494_040; // 2026-11-30T09:21:34.040Z
    let order = record(
        orders_fields(),
        vec![
            Arc::new(Int64Array::from(vec![4])),
            Arc::new(Int32Array::from(vec![4])),
            Arc::new(StringArray::from(vec!["juice"])),
            Arc::new(
                Decimal128Array::from(vec![750])
                    .with_precision_and_scale(10, 2)
                    .expect("DECIMAL(10, 2)"),
            ),
            Arc::new(TimestampMillisecondArray::from(vec![ordered_at]).with_timezone("UTC")),
        ],
        1,
        1_796_030_494_042,
        ChangeType::AppendOnly,
    );
    assert_eq!(
        line(&mut rows, &stamp, order, 2),
        sample[0],
        "the README's demo.orders line is what the plugin and the runtime make of that row"
    );

    // demo.customers, table id 1: an insert as a Debezium event; its top-level `ts_ms` is the
    // wall clock when the plugin made the event, taken from the sample.
    let stamp = Stamper::new(1, "demo.customers", HeaderSet::ALL)
        .expect("stamper")
        .with_primary_key(&["customer_id".to_owned()])
        .expect("primary key")
        .bucket(BucketKey::bucket(0), None)
        .expect("bucket 0");
    let mut changes = ChangeMessages::new(
        "demo",
        "customers",
        Schemas::new(0, customers_fields(), false),
        JsonOptions::default(),
        ChangelogFormat::Debezium,
    );
    let customer = record(
        customers_fields(),
        vec![
            Arc::new(Int32Array::from(vec![1])),
            Arc::new(StringArray::from(vec!["customer-1"])),
            Arc::new(StringArray::from(vec!["silver"])),
        ],
        0,
        1_796_030_494_047,
        ChangeType::Insert,
    );
    let produced = line(&mut changes, &stamp, customer, 2);
    let now = field(&produced, &["payload", "ts_ms"]);
    let shown = field(&sample[1], &["payload", "ts_ms"]);
    assert!(
        now.as_i64().is_some() && shown.as_i64().is_some(),
        "{produced}"
    );
    let at = produced.rfind("\"ts_ms\":").expect("the event's own ts_ms");
    let produced = format!("{}\"ts_ms\":{shown}}}}}", &produced[..at]);
    assert_eq!(
        produced, sample[1],
        "the README's demo.customers line is what the plugin and the runtime make of that change \
         (`fluss_primary_key` included: `headers = \"all\"`)"
    );
}
