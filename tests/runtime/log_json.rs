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

//! A log table as JSON with the plugin's defaults, through a graceful restart of the runtime
//! while rows are still being written.

use std::collections::{BTreeMap, BTreeSet};

use fluss_testkit::iggy::{Message, Stop};
use fluss_testkit::tables::{sample_amount, sample_log_schema, sample_name, sample_row};
use iggy_connector_fluss_source::config::DEFAULT_BATCH_SIZE;
use serde_json::{Value, json};

use crate::fixture::{
    World, append, assert_ids, assert_one_partition, bucket, connector, create_table, lines_with,
    offset,
};

const ROWS: i64 = 6000;
const BUCKETS: i32 = 3;
const TOPIC: &str = "orders";
const KEY: &str = "fluss_orders";

/// Writes the first half of the rows, starts the runtime, and writes the rest in small
/// appends while the runtime reads, is stopped with `stop` and starts again, so the stop lands
/// between batches of a table that is still growing. Returns the world, the table id, the
/// messages and how many the topic held at the restart.
fn read_through_a_restart(test: &str, stop: Stop) -> (World, i64, Vec<Message>, usize) {
    let world = World::new(test);
    let (table, table_id) = create_table(test, sample_log_schema(), BUCKETS);
    append(&table, (0..ROWS / 2).map(sample_row));
    let mut runtime = world.runtime(&[connector(KEY, &table, TOPIC, "json", json!({}))]);
    let writer = {
        let table = table.clone();
        std::thread::spawn(move || {
            for chunk in (ROWS / 2..ROWS).step_by(100) {
                append(&table, (chunk..chunk + 100).map(sample_row));
            }
        })
    };
    world.wait_for(TOPIC, "the first rows", |m| m.len() >= 1000);
    let status = runtime.stop(stop).expect("the runtime was running");
    if stop != Stop::Kill {
        assert!(
            status.success(),
            "iggy-connectors exits cleanly on {stop:?}: {status}"
        );
    }
    assert!(
        runtime.state_file(KEY).exists(),
        "the runtime saved the plugin's state at {}",
        runtime.state_file(KEY).display()
    );
    let at_restart = world.messages(TOPIC).len();
    runtime.restart();
    writer.join().expect("writer thread");
    let distinct = |messages: &[Message]| {
        messages
            .iter()
            .map(|m| (bucket(m), offset(m)))
            .collect::<BTreeSet<_>>()
            .len()
    };
    world.wait_for(TOPIC, &format!("{ROWS} distinct rows"), |m| {
        distinct(m) >= ROWS as usize
    });
    runtime.stop(Stop::Interrupt);
    let log = runtime.log();
    assert_eq!(
        lines_with(&log, "(saved state)").len(),
        1,
        "the second open resumed from the runtime's state file"
    );
    let closes = if stop == Stop::Kill { 1 } else { 2 };
    assert_eq!(
        lines_with(&log, "closed after").len(),
        closes,
        "the plugin closes once per graceful stop"
    );
    let messages = world.messages(TOPIC);
    (world, table_id, messages, at_restart)
}

/// Checks the topic against the table: the documented ids, the rows as payloads, every row
/// present, and per bucket offsets 0, 1, 2, … in topic order with no gap; the restart may
/// step back once per bucket, over what was in flight (sent, not yet acked). Returns the
/// number of repeated messages.
fn assert_rows(world: &World, table_id: i64, messages: &[Message]) -> i64 {
    assert_one_partition(world, TOPIC, messages);
    assert_ids(messages, table_id);
    let mut ids = BTreeSet::new();
    for m in messages {
        // Re-encoded by the runtime (simd_json): same values, key order not guaranteed.
        let payload: Value = serde_json::from_slice(&m.payload).expect("payload is JSON");
        let id = payload["id"].as_i64().expect("id column");
        assert_eq!(
            payload,
            json!({ "id": id, "name": sample_name(id), "amount": sample_amount(id) }),
            "payload of row {id}"
        );
        assert_eq!(
            m.header("fluss_change_type").as_str(),
            Some("+A"),
            "log rows are appends"
        );
        ids.insert(id);
    }
    assert_eq!(ids, (0..ROWS).collect(), "every row arrived");

    let mut by_bucket: BTreeMap<i32, Vec<i64>> = BTreeMap::new();
    for m in messages {
        by_bucket.entry(bucket(m)).or_default().push(offset(m));
    }
    assert_eq!(by_bucket.len(), BUCKETS as usize, "rows in every bucket");
    let mut repeats = 0;
    for (b, offsets) in &by_bucket {
        assert_eq!(offsets[0], 0, "bucket {b} starts at its log start");
        let mut rewinds = 0;
        for pair in offsets.windows(2) {
            let (prev, next) = (pair[0], pair[1]);
            if next != prev + 1 {
                assert!(next <= prev, "bucket {b}: gap from offset {prev} to {next}");
                rewinds += 1;
                repeats += prev + 1 - next;
            }
        }
        assert!(
            rewinds <= 1,
            "bucket {b} stepped back {rewinds} times over one restart: {offsets:?}"
        );
    }
    assert!(
        repeats <= DEFAULT_BATCH_SIZE as i64,
        "{repeats} rows repeated over one restart; at most the batch in flight ({DEFAULT_BATCH_SIZE}) may"
    );
    assert_eq!(
        messages.len() as i64,
        ROWS + repeats,
        "only the repeats counted above came twice"
    );
    repeats
}

#[test]
fn every_row_arrives_once_in_bucket_order_through_a_graceful_restart() {
    let (world, table_id, messages, at_restart) =
        read_through_a_restart("rt_log_sigint", Stop::Interrupt);
    let repeats = assert_rows(&world, table_id, &messages);
    assert!(
        (1000..=messages.len()).contains(&at_restart),
        "the restart came after {at_restart} messages"
    );
    eprintln!(
        "graceful restart: {} messages, {repeats} repeated, {at_restart} before the restart",
        messages.len()
    );
}

#[test]
fn a_killed_runtime_resumes_without_a_gap_and_the_server_keeps_the_topic() {
    let (mut world, table_id, messages, at_restart) =
        read_through_a_restart("rt_log_sigkill", Stop::Kill);
    let repeats = assert_rows(&world, table_id, &messages);
    // The server's own restart on the same data dir keeps every message.
    world.server.restart();
    assert_eq!(
        world.messages(TOPIC),
        messages,
        "the topic is the same after iggy-server restarted on its data dir"
    );
    eprintln!(
        "SIGKILL restart: {} messages, {repeats} repeated, {at_restart} before the restart",
        messages.len()
    );
}
