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

//! The change-event (Debezium, flat) and Arrow IPC encoders on the same in-memory records:
//! 100,000 records over the 10-column mixed batch, as the scanner hands them over (records
//! sharing one Arrow batch). Inputs are built outside the timed loop.
//!
//! Run: `cargo bench --bench envelope_encode`.

mod common;

use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use fluss_testkit::fluss::metadata::RowType;
use fluss_testkit::fluss::record::{ChangeType, ScanRecord};
use fluss_testkit::fluss::row::ColumnarRow;
use iggy_connector_fluss_source::config::options::{
    ChangelogFormat, HeaderSet, IpcCompression, JsonOptions,
};
use iggy_connector_fluss_source::encode::Encoder;
use iggy_connector_fluss_source::encode::batch::Batch;
use iggy_connector_fluss_source::encode::cdc::ChangeMessages;
use iggy_connector_fluss_source::encode::ipc::{IpcMessages, Leading};
use iggy_connector_fluss_source::encode::stamp::{BucketStamp, Stamper};
use iggy_connector_fluss_source::position::BucketKey;
use iggy_connector_fluss_source::schemas::Schemas;

const ROWS: usize = 100_000;

/// Records over one batch; `changes` cycles `+I, -U, +U, -D` (else every record is `+A`).
fn records(changes: bool) -> Vec<ScanRecord> {
    let batch = Arc::new(common::mixed_batch(0, ROWS));
    let row_type = Arc::new(RowType::new(common::mixed_fields()));
    let first = ColumnarRow::new(batch, row_type, 0, None).expect("row");
    let cycle = [
        ChangeType::Insert,
        ChangeType::UpdateBefore,
        ChangeType::UpdateAfter,
        ChangeType::Delete,
    ];
    (0..ROWS)
        .map(|i| {
            let mut row = first.clone();
            row.set_row_id(i);
            let change = if changes {
                cycle[i % 4]
            } else {
                ChangeType::AppendOnly
            };
            ScanRecord::new(row, i as i64, 1_700_000_000_000, change)
        })
        .collect()
}

/// The stamp of bucket 0 of `bench.t`, with every header.
fn stamp() -> BucketStamp {
    Stamper::new(1, "bench.t", HeaderSet::ALL)
        .and_then(|stamper| stamper.bucket(BucketKey::bucket(0), None))
        .expect("stamp")
}

fn changelog(c: &mut Criterion) {
    let stamp = stamp();
    let records = records(true);
    let mut group = c.benchmark_group("changelog");
    group.throughput(Throughput::Elements(ROWS as u64));
    for (name, format) in [
        ("debezium", ChangelogFormat::Debezium),
        ("flat", ChangelogFormat::Flat),
    ] {
        let mut encoder = ChangeMessages::new(
            "bench",
            "t",
            Schemas::new(1, common::mixed_fields(), false),
            JsonOptions::default(),
            format,
        );
        group.bench_function(BenchmarkId::new("encode", name), |b| {
            b.iter(|| {
                let mut batch = Batch::new(ROWS, usize::MAX);
                let consumed = encoder
                    .encode(&stamp, &records, &mut batch)
                    .expect("encode");
                assert_eq!(consumed, ROWS);
                batch
            })
        });
    }
    group.finish();
}

fn ipc(c: &mut Criterion) {
    let stamp = stamp();
    let records = records(false);
    let mut group = c.benchmark_group("ipc");
    group.throughput(Throughput::Elements(ROWS as u64));
    for (name, compression) in [
        ("none", IpcCompression::None),
        ("lz4", IpcCompression::Lz4),
        ("zstd", IpcCompression::Zstd),
    ] {
        let mut encoder = IpcMessages::new(
            Leading::Nothing,
            Schemas::new(1, Vec::new(), true),
            compression,
            8 << 20,
        )
        .expect("encoder");
        group.bench_function(BenchmarkId::new("encode", name), |b| {
            b.iter(|| {
                let mut batch = Batch::new(1000, usize::MAX);
                let consumed = encoder
                    .encode(&stamp, &records, &mut batch)
                    .expect("encode");
                assert_eq!(consumed, ROWS);
                batch
            })
        });
    }
    group.finish();
}

criterion_group!(benches, changelog, ipc);
criterion_main!(benches);
