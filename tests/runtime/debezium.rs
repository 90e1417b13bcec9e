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

//! A primary-key table as Debezium change events: inserts, updates and deletes arrive, and
//! replaying them key by key gives the final table.

use std::collections::BTreeMap;

use fluss_testkit::fluss::row::GenericRow;
use fluss_testkit::iggy::Stop;
use fluss_testkit::tables::{sample_amount, sample_name, sample_pk_schema, sample_row};
use fluss_testkit::write::{self, Change};
use serde_json::{Value, json};

use crate::fixture::{World, assert_ids, assert_one_partition, connector, create_table, rt};

const TOPIC: &str = "customers_cdc";

fn updated(id: i64) -> GenericRow<'static> {
    let mut row = GenericRow::new(3);
    row.set_field(0, id);
    row.set_field(1, format!("updated-{id}"));
    row.set_field(2, id as f64 * 100.0);
    row
}

#[test]
fn debezium_events_replay_to_the_final_table() {
    let world = World::new("debezium");
    let (table, table_id) = create_table("rt_pk", sample_pk_schema(), 3);
    // 100 inserts, 20 updates, 10 deletes, and one deleted key inserted again.
    let changes = (1..=100)
        .map(|id| Change::Upsert(sample_row(id)))
        .chain((1..=20).map(|id| Change::Upsert(updated(id))))
        .chain((91..=100).map(|id| Change::Delete(sample_row(id))))
        .chain([Change::Upsert(sample_row(95))]);
    rt().block_on(async {
        let connection = fluss_testkit::Cluster::shared().connection().await;
        write::write_changes(&connection, &table, changes).await;
    });
    let expected: BTreeMap<i64, Value> = (1..=90)
        .chain([95])
        .map(|id| {
            let row = if id <= 20 {
                json!({ "id": id, "name": format!("updated-{id}"), "amount": id as f64 * 100.0 })
            } else {
                json!({ "id": id, "name": sample_name(id), "amount": sample_amount(id) })
            };
            (id, row)
        })
        .collect();
    // Each -U/+U pair is one "u" event: 101 c + 20 u + 10 d.
    const EVENTS: usize = 131;

    let mut runtime = world.runtime(&[connector(
        "fluss_customers",
        &table,
        TOPIC,
        "json",
        // The changelog replay; `full` (the default) would start with the table's rows as
        // snapshot events (tests/it/snapshots.rs).
        json!({ "changelog_format": "debezium", "starting_offset": "earliest" }),
    )]);
    world.wait_for(TOPIC, &format!("{EVENTS} change events"), |m| {
        m.len() >= EVENTS
    });
    runtime.stop(Stop::Interrupt);
    let messages = world.messages(TOPIC);
    assert_eq!(messages.len(), EVENTS, "one event per change, none twice");
    assert_one_partition(&world, TOPIC, &messages);
    assert_ids(&messages, table_id);

    let mut table_now: BTreeMap<i64, Value> = BTreeMap::new();
    let mut ops: BTreeMap<(String, String), usize> = BTreeMap::new();
    for m in &messages {
        let event: Value = serde_json::from_slice(&m.payload).expect("payload is JSON");
        let op = event["op"].as_str().expect("op").to_owned();
        let change = m
            .header("fluss_change_type")
            .as_str()
            .expect("change type")
            .to_owned();
        *ops.entry((op.clone(), change)).or_default() += 1;
        let key = |image: &Value| image["id"].as_i64().expect("key in the image");
        match op.as_str() {
            "c" | "r" | "u" => {
                table_now.insert(key(&event["after"]), event["after"].clone());
            }
            "d" => {
                assert!(event["after"].is_null(), "a delete has no after image");
                table_now.remove(&key(&event["before"]));
            }
            other => panic!("unexpected op {other:?} in {event}"),
        }
        assert_eq!(event["source"]["table"], table.table(), "source.table");
    }
    assert_eq!(
        table_now, expected,
        "replaying the events per key gives the table"
    );
    let count = |op: &str, change: &str| ops.get(&(op.into(), change.into())).copied();
    assert_eq!(count("c", "+I"), Some(101), "inserts: {ops:?}");
    assert_eq!(count("u", "+U"), Some(20), "updates: {ops:?}");
    assert_eq!(count("d", "-D"), Some(10), "deletes: {ops:?}");
}
