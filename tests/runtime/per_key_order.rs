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

//! Per-key order through the real runtime: every change of a primary-key table, written in
//! rounds that interleave the keys, reaches a one-partition topic in the order it was written,
//! key by key. This is what the README's "Per-key order and topic partitions" promises.

use std::collections::BTreeMap;

use fluss_testkit::fluss::row::GenericRow;
use fluss_testkit::iggy::Stop;
use fluss_testkit::tables::sample_pk_schema;
use fluss_testkit::write::{self, Change};
use serde_json::{Value, json};

use crate::fixture::{
    World, assert_ids, assert_one_partition, bucket, connector, create_table, offset, rt,
};

const TOPIC: &str = "customers_in_order";
const KEYS: i64 = 30;
/// Each key is written this many times: an insert, then updates.
const VERSIONS: i64 = 6;
/// Keys 1..=DELETED are deleted after their last update.
const DELETED: i64 = 5;

fn version(id: i64, v: i64) -> GenericRow<'static> {
    let mut row = GenericRow::new(3);
    row.set_field(0, id);
    row.set_field(1, format!("v{v}"));
    row.set_field(2, v as f64);
    row
}

/// What a consumer of one key sees: `(op, name of the image the event carries)`.
fn step(event: &Value) -> (String, String) {
    let op = event["op"].as_str().expect("op").to_owned();
    let image = if op == "d" {
        &event["before"]
    } else {
        &event["after"]
    };
    let name = image["name"]
        .as_str()
        .expect("name in the image")
        .to_owned();
    (op, name)
}

#[test]
fn a_one_partition_topic_keeps_every_keys_changes_in_write_order() {
    let world = World::new("per_key_order");
    let (table, table_id) = create_table("rt_order", sample_pk_schema(), 3);
    // One round per version, each round writing every key once and flushed on its own, so the
    // changes of one key are spread over several record batches, between other keys' changes.
    rt().block_on(async {
        let connection = fluss_testkit::Cluster::shared().connection().await;
        for v in 0..VERSIONS {
            let round = (1..=KEYS).map(|id| Change::Upsert(version(id, v)));
            write::write_changes(&connection, &table, round).await;
        }
        let deletes = (1..=DELETED).map(|id| Change::Delete(version(id, VERSIONS - 1)));
        write::write_changes(&connection, &table, deletes).await;
    });
    let expected: BTreeMap<i64, Vec<(String, String)>> = (1..=KEYS)
        .map(|id| {
            let mut steps = vec![("c".to_owned(), "v0".to_owned())];
            steps.extend((1..VERSIONS).map(|v| ("u".to_owned(), format!("v{v}"))));
            if id <= DELETED {
                steps.push(("d".to_owned(), format!("v{}", VERSIONS - 1)));
            }
            (id, steps)
        })
        .collect();
    let events: usize = expected.values().map(Vec::len).sum();

    let mut runtime = world.runtime(&[connector(
        "fluss_customers_in_order",
        &table,
        TOPIC,
        "json",
        json!({ "changelog_format": "debezium", "starting_offset": "earliest", "batch_size": 7 }),
    )]);
    world.wait_for(TOPIC, &format!("{events} change events"), |m| {
        m.len() >= events
    });
    runtime.stop(Stop::Interrupt);
    let messages = world.messages(TOPIC);
    assert_eq!(messages.len(), events, "one event per change, none twice");
    assert_one_partition(&world, TOPIC, &messages);
    assert_ids(&messages, table_id);
    assert!(
        messages.windows(2).all(|w| w[0].offset < w[1].offset),
        "the topic is read back in Iggy offset order"
    );

    let mut seen: BTreeMap<i64, Vec<(String, String)>> = BTreeMap::new();
    let mut last_offset: BTreeMap<i32, i64> = BTreeMap::new();
    for m in &messages {
        let event: Value = serde_json::from_slice(&m.payload).expect("payload is JSON");
        let image = if event["op"] == "d" {
            &event["before"]
        } else {
            &event["after"]
        };
        let id = image["id"].as_i64().expect("key in the image");
        seen.entry(id).or_default().push(step(&event));
        if let Some(previous) = last_offset.insert(bucket(m), offset(m)) {
            assert!(
                previous < offset(m),
                "bucket {}: fluss_offset {} after {previous}; the partition holds a bucket's changes out of order",
                bucket(m),
                offset(m)
            );
        }
    }
    for (id, steps) in &expected {
        assert_eq!(
            seen.get(id),
            Some(steps),
            "key {id}: its changes in the topic's order against the order they were written"
        );
    }
    assert_eq!(seen.len(), expected.len(), "no key beyond those written");
}
