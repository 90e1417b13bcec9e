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

//! Partition pruning: `partitions` reads only the partitions it selects, also those created
//! while the stream runs; a partition left out keeps its saved position for a later, wider
//! selection; a selection the table cannot have is refused at open.

use std::time::Duration;

use fluss_testkit::tables;
use fluss_testkit::{unique_table, write};
use serde_json::json;

use crate::bad_input::{Case, refused};
use crate::fixture::{Answer, Stream, assert_bucket_order, cluster, config, ids, rt};
use crate::regions::{add_region, regions_table, write_region};

fn sorted(mut ids: Vec<i64>) -> Vec<i64> {
    ids.sort_unstable();
    ids
}

#[test]
fn only_selected_partitions_are_read_including_new_ones() {
    let path = regions_table("pruning", 2, &["eu", "us"]);
    write_region(&path, "eu", 0..100);
    write_region(&path, "us", 100..200);
    let cfg = config(
        path.table(),
        json!({"partitions": ["region=eu", "region=ap"], "partition_discovery_interval": "1s"}),
    );
    let mut s = Stream::open(&cfg, None).expect("open");
    s.read(100, Answer::AckAll);
    assert_eq!(s.read_for(Duration::from_secs(2), Answer::AckAll), 0);
    assert_eq!(sorted(ids(&s.acked)), (0..100).collect::<Vec<_>>());
    add_region(&path, "ap");
    add_region(&path, "sa");
    write_region(&path, "ap", 200..300);
    write_region(&path, "sa", 300..400);
    write_region(&path, "eu", 400..450);
    write_region(&path, "us", 450..500);
    s.read(250, Answer::AckAll);
    // Discovery runs every second: a non-matching partition would have shown up by now.
    assert_eq!(s.read_for(Duration::from_secs(4), Answer::AckAll), 0);
    let expected: Vec<i64> = (0..100).chain(200..300).chain(400..450).collect();
    assert_eq!(sorted(ids(&s.acked)), expected, "only eu and ap rows");
    assert!(
        s.acked
            .iter()
            .all(|m| matches!(m.partition.as_deref(), Some("eu" | "ap")))
    );
    assert_bucket_order(&s.acked);
    let state = s.close().expect("state");
    // A restart keeps the selection and reads nothing again.
    let mut again = Stream::open(&cfg, Some(state)).expect("reopen");
    assert_eq!(again.read_for(Duration::from_secs(3), Answer::AckAll), 0);
}

#[test]
fn a_narrowed_selection_keeps_the_left_out_positions_for_a_wider_one() {
    let path = regions_table("pruning_narrow", 2, &["eu", "us"]);
    write_region(&path, "eu", 0..100);
    write_region(&path, "us", 100..200);
    let both = config(
        path.table(),
        json!({"partitions": ["region=eu", "region=us"]}),
    );
    let eu = config(path.table(), json!({"partitions": "region=eu"}));
    let mut s = Stream::open(&both, None).expect("open");
    s.read(200, Answer::AckAll);
    assert_eq!(sorted(ids(&s.acked)), (0..200).collect::<Vec<_>>());
    let state = s.close().expect("state");
    // Narrowed to eu: us is left out; its position must survive the states written now.
    write_region(&path, "eu", 200..250);
    write_region(&path, "us", 250..300);
    let mut narrow = Stream::open(&eu, Some(state)).expect("reopen narrowed");
    narrow.read(50, Answer::AckAll);
    assert_eq!(narrow.read_for(Duration::from_secs(3), Answer::AckAll), 0);
    assert_eq!(sorted(ids(&narrow.acked)), (200..250).collect::<Vec<_>>());
    let state = narrow.close().expect("state after the eu rows");
    // Widened again: us resumes where the first stream stopped, eu where the second did.
    let mut wide = Stream::open(&both, Some(state)).expect("reopen widened");
    wide.read(50, Answer::AckAll);
    assert_eq!(wide.read_for(Duration::from_secs(3), Answer::AckAll), 0);
    assert_eq!(
        sorted(ids(&wide.acked)),
        (250..300).collect::<Vec<_>>(),
        "only the us rows written while it was left out"
    );
    assert_bucket_order(&wide.acked);
}

#[test]
fn a_selection_the_table_cannot_have_is_refused_at_open() {
    let partitioned = regions_table("pruning_bad", 1, &["eu"]);
    let plain = unique_table("pruning_plain");
    rt().block_on(async {
        let (conn, admin) = cluster().admin().await;
        tables::create_log_table(&admin, &plain, tables::sample_log_schema(), 1).await;
        write::append_rows(&conn, &plain, (0..3).map(tables::sample_row)).await;
    });
    let db = tables::TEST_DATABASE;
    let cases = [
        Case::new(
            "a key the table is not partitioned by",
            config(
                partitioned.table(),
                json!({"partitions": ["region=eu", "country=fr"]}),
            ),
            format!(
                "`partitions` names the partition key `country`, but table {db}.{} is partitioned by region; use those keys",
                partitioned.table()
            ),
        ),
        Case::new(
            "a table without partitions",
            config(plain.table(), json!({"partitions": "region=eu"})),
            format!(
                "`partitions`: table {db}.{} is not partitioned; remove `partitions`",
                plain.table()
            ),
        ),
        Case::new(
            "an entry without a value",
            config(partitioned.table(), json!({"partitions": ["region"]})),
            "invalid plugin_config: `partitions` entry \"region\" is not valid; give each entry as key=value pairs joined by '/', e.g. [\"region=eu\", \"region=us/year=2024\"]",
        ),
    ];
    for case in &cases {
        refused(case);
    }
}
