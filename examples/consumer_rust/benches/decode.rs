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

//! Zero-copy decoding of megabyte Arrow IPC payloads, from memory: the consumer's
//! [`ipc::decode`] against arrow-ipc's `StreamReader` over the same bytes.
//!
//! The payloads have the shape the connector sends for the benches' log table (`benches/` of
//! the repository: ten columns, DECIMAL(18,4) among them, 12,000 rows, about 1.1 MB each,
//! uncompressed, written with arrow-ipc's default options as the plugin writes them). Each is
//! decoded where a poll response would put it: at an address aligned for every buffer (decoded
//! in place, each buffer checked to lie inside the payload), and 4 bytes off (copied once,
//! whole, then decoded in place). Rates are the best of `DECODE_PASSES` (default 7) passes.
//!
//! ```text
//! cargo test --release --locked --manifest-path examples/consumer_rust/Cargo.toml --bench decode
//! ```

// The consumer's own decoding (its unit tests come along, unused here).
#[allow(dead_code)]
#[path = "../src/ipc.rs"]
mod ipc;

use std::sync::Arc;
use std::time::Instant;

use arrow_array::{
    ArrayRef, BooleanArray, Date32Array, Decimal128Array, Float64Array, Int32Array, Int64Array,
    RecordBatch, StringArray, TimestampMicrosecondArray,
};
use arrow_buffer::Buffer;
use arrow_ipc::reader::StreamReader;
use arrow_ipc::writer::StreamWriter;
use arrow_schema::{DataType, Field, Schema, TimeUnit};
use bytes::{Bytes, BytesMut};
use ipc::Decoded;

const ROWS_PER_PAYLOAD: i64 = 12_000;
const PAYLOADS: i64 = 48;

fn batch(start: i64) -> RecordBatch {
    let ids = start..start + ROWS_PER_PAYLOAD;
    let field = |name: &str, data_type: DataType| Field::new(name, data_type, true);
    let schema = Schema::new(vec![
        field("id", DataType::Int64),
        field("qty", DataType::Int32),
        field("price", DataType::Float64),
        field("name", DataType::Utf8),
        field("active", DataType::Boolean),
        field("amount", DataType::Decimal128(18, 4)),
        field("created", DataType::Timestamp(TimeUnit::Microsecond, None)),
        field("day", DataType::Date32),
        field("note", DataType::Utf8),
        field("ref", DataType::Int64),
    ]);
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values(ids.clone())),
        Arc::new(Int32Array::from_iter_values(
            ids.clone().map(|i| (i % 1000) as i32),
        )),
        Arc::new(Float64Array::from_iter_values(
            ids.clone().map(|i| i as f64 * 0.25),
        )),
        Arc::new(StringArray::from_iter_values(
            ids.clone().map(|i| format!("customer-{i:012}")),
        )),
        Arc::new(BooleanArray::from_iter(
            ids.clone().map(|i| Some(i % 2 == 0)),
        )),
        Arc::new(
            Decimal128Array::from_iter_values(ids.clone().map(|i| i as i128 * 12_345))
                .with_precision_and_scale(18, 4)
                .expect("decimal"),
        ),
        Arc::new(TimestampMicrosecondArray::from_iter_values(
            ids.clone().map(|i| 1_700_000_000_000_000 + i * 1_000),
        )),
        Arc::new(Date32Array::from_iter_values(
            ids.clone().map(|i| 19_000 + (i % 1000) as i32),
        )),
        Arc::new(StringArray::from_iter(
            ids.clone()
                .map(|i| (i % 10 != 0).then(|| format!("note {i}"))),
        )),
        Arc::new(Int64Array::from_iter_values(ids.map(|i| i * 7))),
    ];
    RecordBatch::try_new(Arc::new(schema), columns).expect("batch")
}

fn payload(batch: &RecordBatch) -> Vec<u8> {
    let mut writer = StreamWriter::try_new(Vec::new(), &batch.schema()).expect("writer");
    writer.write(batch).expect("write");
    writer.finish().expect("finish");
    writer.into_inner().expect("bytes")
}

/// The payload `shift` bytes after a 64-byte aligned address: where a poll response would hold
/// it.
fn placed(bytes: &[u8], shift: usize) -> Bytes {
    let mut backing = BytesMut::zeroed(bytes.len() + 64 + shift);
    let start = backing.as_ptr().align_offset(64) + shift;
    backing[start..start + bytes.len()].copy_from_slice(bytes);
    backing.freeze().slice(start..start + bytes.len())
}

/// Rows per second of each way over all payloads, the best of `passes`; the ways take turns
/// within each pass, so that a change of the machine's load hits them alike.
fn rates<const N: usize>(passes: usize, rows: usize, ways: [&dyn Fn() -> usize; N]) -> [f64; N] {
    let mut best = [f64::MAX; N];
    for _ in 0..passes {
        for (way, best) in ways.iter().zip(&mut best) {
            let started = Instant::now();
            assert_eq!(way(), rows, "every pass decodes every row");
            *best = best.min(started.elapsed().as_secs_f64());
        }
    }
    best.map(|seconds| rows as f64 / seconds.max(1e-9))
}

fn main() {
    let passes: usize = std::env::var("DECODE_PASSES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(7);
    let batches: Vec<RecordBatch> = (0..PAYLOADS).map(|i| batch(i * ROWS_PER_PAYLOAD)).collect();
    let payloads: Vec<Vec<u8>> = batches.iter().map(payload).collect();
    let rows = (PAYLOADS * ROWS_PER_PAYLOAD) as usize;
    let bytes: usize = payloads.iter().map(Vec::len).sum();
    let aligned: Vec<Bytes> = payloads.iter().map(|p| placed(p, 0)).collect();
    let shifted: Vec<Bytes> = payloads.iter().map(|p| placed(p, 4)).collect();

    // The proof of no copy: every buffer of every aligned payload's batch lies in its bytes.
    for (payload, expected) in aligned.iter().zip(&batches) {
        let (decoded, how) = ipc::decode(payload.clone()).expect("decode");
        assert_eq!(how, Decoded::InPlace);
        assert!(ipc::points_into(&decoded, &Buffer::from(payload.clone())));
        assert_eq!(&decoded, expected);
    }
    for (payload, expected) in shifted.iter().zip(&batches) {
        let (decoded, how) = ipc::decode(payload.clone()).expect("decode");
        assert_eq!((&decoded, how), (expected, Decoded::AlignedCopy));
    }

    let decode_all = |payloads: &[Bytes]| {
        payloads
            .iter()
            .map(|p| ipc::decode(p.clone()).expect("decode").0.num_rows())
            .sum()
    };
    let read_all = |payloads: &[Bytes]| {
        payloads
            .iter()
            .map(|p| {
                let mut reader = StreamReader::try_new(p.as_ref(), None).expect("reader");
                reader.next().expect("a batch").expect("decode").num_rows()
            })
            .sum()
    };
    let [in_place, copied, reader] = rates(
        passes,
        rows,
        [&|| decode_all(&aligned), &|| decode_all(&shifted), &|| {
            read_all(&aligned)
        }],
    );
    let mib_per_s = |rows_per_s: f64| rows_per_s * bytes as f64 / rows as f64 / (1 << 20) as f64;
    println!(
        "{PAYLOADS} payloads of {ROWS_PER_PAYLOAD} rows, {} bytes each on average, best of {passes} passes:",
        bytes / PAYLOADS as usize
    );
    for (what, r) in [
        ("in place (aligned payloads)", in_place),
        ("one copy, then in place (misaligned payloads)", copied),
        ("arrow-ipc StreamReader (same bytes, from memory)", reader),
    ] {
        println!(
            "  {what}: {:.1} M rows/s, {:.0} MiB/s, {:.2}x StreamReader",
            r / 1e6,
            mib_per_s(r),
            r / reader
        );
    }
}
