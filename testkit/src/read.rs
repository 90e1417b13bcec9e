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

//! Reading a table back with the plain fluss-rs record scanner: the
//! reference the connector's output is compared with.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use fluss::client::{EARLIEST_OFFSET, FlussConnection};
use fluss::metadata::TablePath;
use fluss::record::ScanRecord;

/// One record with the bucket it came from (fluss-rs' own iterator drops it).
pub struct BucketRecord {
    /// Bucket id within the table (or partition).
    pub bucket: i32,
    /// The record: offset, change type, row.
    pub record: ScanRecord,
}

impl std::fmt::Debug for BucketRecord {
    // ScanRecord has no Debug; the position is what failure messages need.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BucketRecord")
            .field("bucket", &self.bucket)
            .field("offset", &self.record.offset())
            .field("change_type", &self.record.change_type())
            .finish()
    }
}

/// Reads a non-partitioned table (log or primary-key changelog) from the
/// earliest offset of every bucket until `expected` records arrived.
/// Panics after `timeout` with the count so far. Must run inside a Tokio
/// runtime (the scanner spawns tasks).
pub async fn read_records(
    connection: &FlussConnection,
    path: &TablePath,
    expected: usize,
    timeout: Duration,
) -> Vec<BucketRecord> {
    let table = connection
        .get_table(path)
        .await
        .unwrap_or_else(|e| panic!("get_table {path}: {e}"));
    let buckets = table.get_table_info().get_num_buckets();
    let scanner = table
        .new_scan()
        .create_log_scanner()
        .unwrap_or_else(|e| panic!("log scanner for {path}: {e}"));
    let offsets: HashMap<i32, i64> = (0..buckets).map(|b| (b, EARLIEST_OFFSET)).collect();
    scanner
        .subscribe_buckets(&offsets)
        .await
        .unwrap_or_else(|e| panic!("subscribe {path}: {e}"));
    let deadline = Instant::now() + timeout;
    let mut out = Vec::with_capacity(expected);
    while out.len() < expected {
        assert!(
            Instant::now() < deadline,
            "read {} of {expected} records from {path} within {timeout:?}",
            out.len()
        );
        let records = scanner
            .poll(Duration::from_millis(500))
            .await
            .unwrap_or_else(|e| panic!("poll {path} after {} records: {e}", out.len()));
        for (bucket, records) in records.into_records_by_buckets() {
            out.extend(records.into_iter().map(|record| BucketRecord {
                bucket: bucket.bucket_id(),
                record,
            }));
        }
    }
    out
}
