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

//! Scale-out: three instances (`instance_index` 0, 1, 2 of `instance_count` 3) share a
//! partitioned table that gains a partition while they run; a state written under another
//! share is refused at open; more instances than buckets are named at open.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use fluss_source_runner::{Level, logs};
use iggy_connector_fluss_source::position::BucketKey;
use iggy_connector_fluss_source::scope::share::owner;
use serde_json::{Value, json};

use crate::bad_input::{Case, refused};
use crate::fixture::{
    Answer, Received, Stream, assert_bucket_order, cluster, config, ids, log_ends,
};
use crate::log_tables::log_table;
use crate::regions::{add_region, partition_ids, read_together, regions_table, write_region};

const TIMEOUT: Duration = Duration::from_secs(90);

fn share(table: &str, index: u32) -> Value {
    config(
        table,
        json!({
            "instance_index": index,
            "instance_count": 3,
            "partition_discovery_interval": "1s",
            "batch_size": 150,
        }),
    )
}

/// (partition name, bucket) → the instances that delivered rows of it.
fn readers_of(runs: &[Vec<Received>]) -> BTreeMap<(String, i32), BTreeSet<usize>> {
    let mut readers: BTreeMap<(String, i32), BTreeSet<usize>> = BTreeMap::new();
    for (instance, messages) in runs.iter().enumerate() {
        for m in messages {
            let partition = m.partition.clone().expect("a partitioned table's message");
            readers
                .entry((partition, m.bucket))
                .or_default()
                .insert(instance);
        }
    }
    readers
}

#[test]
fn three_instances_read_every_row_once_and_keep_their_buckets_across_restarts() {
    let path = regions_table("scale_out", 7, &["eu", "us"]);
    write_region(&path, "eu", 0..700);
    write_region(&path, "us", 700..1400);
    let mut streams: Vec<Stream> = (0..3)
        .map(|i| Stream::open(&share(path.table(), i), None).expect("open"))
        .collect();
    assert_eq!(read_together(&mut streams, 1400, TIMEOUT), 1400);
    add_region(&path, "ap");
    write_region(&path, "ap", 1400..2100);
    write_region(&path, "eu", 2100..2200);
    assert_eq!(
        read_together(&mut streams, 2200, TIMEOUT),
        2200,
        "the new partition is shared out too"
    );
    // Nothing more comes: no row was read twice.
    assert_eq!(
        read_together(&mut streams, 2201, Duration::from_secs(3)),
        2200
    );
    let first: Vec<Vec<Received>> = streams.iter().map(|s| s.acked.clone()).collect();
    let states: Vec<Option<Vec<u8>>> = streams.into_iter().map(Stream::close).collect();

    // Restarts from their states keep their shares.
    write_region(&path, "ap", 2200..2400);
    write_region(&path, "us", 2400..2500);
    let mut again: Vec<Stream> = states
        .into_iter()
        .enumerate()
        .map(|(i, state)| {
            let state = state.expect("each instance persisted a state");
            Stream::open(&share(path.table(), i as u32), Some(state)).expect("reopen")
        })
        .collect();
    assert_eq!(read_together(&mut again, 300, TIMEOUT), 300);
    assert_eq!(read_together(&mut again, 301, Duration::from_secs(3)), 300);
    let second: Vec<Vec<Received>> = again.iter().map(|s| s.acked.clone()).collect();
    drop(again);

    let mut all: Vec<i64> = first.iter().chain(&second).flat_map(|m| ids(m)).collect();
    all.sort_unstable();
    assert_eq!(
        all,
        (0..2500).collect::<Vec<_>>(),
        "the union of the three instances is every row exactly once"
    );
    for run in first.iter().chain(&second) {
        assert_bucket_order(run);
    }
    let readers = readers_of(&first);
    assert_eq!(
        readers.len(),
        21,
        "every bucket of the three partitions had rows: {readers:?}"
    );
    let ids_of = partition_ids(&path);
    for ((partition, bucket), instances) in &readers {
        assert_eq!(
            instances.len(),
            1,
            "{partition} bucket {bucket} read by {instances:?}"
        );
        let key = BucketKey {
            partition: Some(ids_of[partition]),
            bucket: *bucket,
        };
        let expected = owner(&key, 3) as usize;
        assert!(
            instances.contains(&expected),
            "{partition} bucket {bucket} belongs to instance {expected}, read by {instances:?}"
        );
    }
    for (partition_bucket, instances) in readers_of(&second) {
        assert_eq!(
            readers.get(&partition_bucket),
            Some(&instances),
            "{partition_bucket:?}: after the restart the same instance reads it"
        );
    }
    for (i, run) in first.iter().enumerate() {
        assert!(!run.is_empty(), "instance {i} read nothing");
    }
}

#[test]
fn a_state_written_under_another_share_is_refused_at_open() {
    let path = regions_table("scale_out_state", 3, &["eu"]);
    write_region(&path, "eu", 0..60);
    let table = path.table();
    let mut one_of_three = Stream::open(&share(table, 1), None).expect("open");
    one_of_three.read(1, Answer::AckAll);
    let shared_state = one_of_three
        .close()
        .expect("a state after rows of instance 1");
    let mut single = Stream::open(&config(table, json!({})), None).expect("open");
    single.read(60, Answer::AckAll);
    let single_state = single.close().expect("a state after 60 rows");
    let reset = "delete the connector's state file (<state.path>/source_<key>.state in the runtime config) to start again from `starting_offset`";
    let cases = [
        Case::new(
            "instance 1 of 3 reopened as 1 of 2",
            config(table, json!({"instance_index": 1, "instance_count": 2})),
            format!("the saved state was written with instance_index = 1, instance_count = 3, but this connector is configured with instance_index = 1, instance_count = 2 (a state holds the positions of one share of the buckets; they are not re-mapped); set `instance_index` = 1 and `instance_count` = 3 again, or {reset}"),
        )
        .with_state(shared_state.clone()),
        Case::new(
            "instance 1 of 3 reopened alone",
            config(table, json!({})),
            format!("the saved state was written with instance_index = 1, instance_count = 3, but this connector is configured with instance_index = 0, instance_count = 1 (a state holds the positions of one share of the buckets; they are not re-mapped); set `instance_index` = 1 and `instance_count` = 3 again, or {reset}"),
        )
        .with_state(shared_state),
        Case::new(
            "a single instance's state reopened as instance 0 of 3",
            config(table, json!({"instance_index": 0, "instance_count": 3})),
            format!("the saved state was written with instance_index = 0, instance_count = 1, but this connector is configured with instance_index = 0, instance_count = 3 (a state holds the positions of one share of the buckets; they are not re-mapped); set `instance_index` = 0 and `instance_count` = 1 again, or {reset}"),
        )
        .with_state(single_state),
        Case::new(
            "an index beyond the count",
            config(table, json!({"instance_index": 3, "instance_count": 3})),
            "invalid plugin_config: `instance_index` = 3 is not below `instance_count` = 3; set `instance_count` to the number of instances sharing the table on every one of them, and give each its own `instance_index` from 0 to 2",
        ),
    ];
    for case in &cases {
        refused(case);
    }
}

#[test]
fn more_instances_than_buckets_warn_at_open_and_the_idle_one_reads_nothing() {
    let path = log_table("scale_out_oversized", 3, 0..90);
    let table = path.table();
    let of_four = |index: u32| config(table, json!({"instance_index": index, "instance_count": 4}));
    let since = logs().len();
    let mut idle = Stream::open(&of_four(3), None).expect("an idle instance still opens");
    assert_eq!(idle.read_for(Duration::from_secs(5), Answer::AckAll), 0);
    idle.close();
    let ends = log_ends(cluster(), &path, None);
    let mut rows = 0;
    for index in 0..3 {
        let mut busy = Stream::open(&of_four(index), None).expect("open");
        // Until its one bucket is read to the end: its share of the 90 rows.
        let own: Vec<_> = ends
            .iter()
            .filter(|(key, _)| key.bucket == index as i32)
            .cloned()
            .collect();
        busy.read_to(&own, Answer::AckAll);
        let buckets: BTreeSet<i32> = busy.acked.iter().map(|m| m.bucket).collect();
        assert!(
            buckets.is_subset(&BTreeSet::from([index as i32])),
            "instance {index} of 4 reads bucket {index} only: {buckets:?}"
        );
        rows += busy.acked.len();
        busy.close();
    }
    assert_eq!(rows, 90, "instances 0 to 2 of 4 read the whole table");
    let warns: Vec<String> = logs()
        .into_iter()
        .skip(since)
        .filter(|l| l.level == Level::Warn && l.message.contains(table))
        .map(|l| l.message)
        .collect();
    assert_eq!(warns.len(), 4, "one WARN per instance: {warns:#?}");
    assert!(
        warns[0].ends_with("instance_index = 3, instance_count = 4, but the table has 3 buckets: this instance owns none and stays idle; lower `instance_count` to 3 or fewer on every instance"),
        "{}",
        warns[0]
    );
    assert!(
        warns[1].contains("instances 3 to 3 stay idle"),
        "{}",
        warns[1]
    );
}
