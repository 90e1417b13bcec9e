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

//! A partitioned log table for the scale-out, bounded and pruning tests: the sample
//! partitioned schema, partitioned by `region`, its rows spread over the buckets by `id`
//! (a bucket key, so every bucket gets rows instead of the sticky writer's one).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use fluss_testkit::fluss::metadata::{TableDescriptor, TablePath};
use fluss_testkit::tables::{self, sample_partitioned_row};
use fluss_testkit::{unique_table, write};

use crate::fixture::{Answer, Stream, cluster, rt};

/// Creates a table partitioned by `region` with `buckets` buckets keyed by `id`, and the
/// partitions `regions`.
pub fn regions_table(prefix: &str, buckets: i32, regions: &[&str]) -> TablePath {
    let path = unique_table(prefix);
    rt().block_on(async {
        let (_conn, admin) = cluster().admin().await;
        let descriptor = TableDescriptor::builder()
            .schema(tables::sample_partitioned_schema(false))
            .partitioned_by(vec!["region"])
            .distributed_by(Some(buckets), vec!["id".to_owned()])
            .build()
            .expect("partitioned table descriptor");
        tables::create_table(&admin, &path, &descriptor).await;
    });
    for region in regions {
        add_region(&path, region);
    }
    path
}

/// Adds the partition `region=<region>` (and waits until its buckets have leaders).
pub fn add_region(path: &TablePath, region: &str) {
    rt().block_on(async {
        let (_conn, admin) = cluster().admin().await;
        tables::create_partition(&admin, path, "region", region).await;
    });
}

/// Appends the rows `ids` to partition `region`.
pub fn write_region(path: &TablePath, region: &str, ids: std::ops::Range<i64>) {
    rt().block_on(async {
        let conn = cluster().connection().await;
        write::append_rows(
            &conn,
            path,
            ids.map(|id| sample_partitioned_row(id, region)),
        )
        .await;
    });
}

/// Partition name → partition id.
pub fn partition_ids(path: &TablePath) -> HashMap<String, i64> {
    rt().block_on(async {
        let (_conn, admin) = cluster().admin().await;
        admin
            .list_partition_infos(path)
            .await
            .expect("list partitions")
            .into_iter()
            .map(|p| (p.get_partition_name(), p.get_partition_id()))
            .collect()
    })
}

/// Reads `streams` in turns (acking everything) until they acked `total` messages together,
/// or `timeout` passes. Returns the total.
pub fn read_together(streams: &mut [Stream], total: usize, timeout: Duration) -> usize {
    let started = Instant::now();
    let acked = |streams: &[Stream]| streams.iter().map(|s| s.acked.len()).sum::<usize>();
    while acked(streams) < total && started.elapsed() < timeout {
        for stream in streams.iter_mut() {
            stream.read_for(Duration::from_millis(300), Answer::AckAll);
        }
    }
    acked(streams)
}
