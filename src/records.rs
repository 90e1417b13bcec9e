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

//! Fetched records and the Arrow batches they point into: the runs of records that share one
//! batch, which the filter and every encoder walk. A leaf, so both take it from here.

use arrow_array::RecordBatch;
use fluss::record::ScanRecord;
use snafu::Snafu;

/// fluss-rs handed over a scanned record without the Arrow batch it points into.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Snafu)]
#[snafu(display(
    "fluss-rs returned a record without its Arrow batch; this is a bug in the client, please report it"
))]
pub struct RecordWithoutBatch;

/// The Arrow batch a scanned record points into; fluss-rs always sets it for scanned rows.
pub fn arrow_batch(batch: Option<&RecordBatch>) -> Result<&RecordBatch, RecordWithoutBatch> {
    batch.ok_or(RecordWithoutBatch)
}

/// Splits `records` into runs that share one Arrow record batch, so a column encoder is built
/// once per run instead of once per row. Yields `(start, end, batch)`.
pub fn batch_runs(
    records: &[ScanRecord],
) -> impl Iterator<Item = (usize, usize, Option<&RecordBatch>)> + '_ {
    let mut start = 0;
    std::iter::from_fn(move || {
        if start >= records.len() {
            return None;
        }
        let batch = records[start].row().get_record_batch();
        let mut end = start + 1;
        while end < records.len() && same_batch(records[end].row().get_record_batch(), batch) {
            end += 1;
        }
        let run = (start, end, batch);
        start = end;
        Some(run)
    })
}

/// Whether two records point into the same fetched Arrow batch (the scanner shares one batch
/// among all the records it decoded from it).
pub fn same_batch(a: Option<&RecordBatch>, b: Option<&RecordBatch>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => std::ptr::eq(a, b),
        _ => false,
    }
}
