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

//! The Iggy server stopped for 30 s while the runtime streams a growing log table, then
//! started again on the same data dir and port, with no restart of `iggy-connectors`: every
//! row arrives, each bucket's rows in offset order (a batch the runtime could not send comes
//! again from where its bucket was acknowledged); the runtime's and the plugin's lines about
//! the outage are printed.

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use fluss_testkit::iggy::{Message, Stop};
use fluss_testkit::tables::{sample_log_schema, sample_row};
use serde_json::json;

use crate::fixture::{
    World, append, assert_ids, bucket, connector, create_table, lines_with, offset,
};

const ROWS: i64 = 6000;
const TOPIC: &str = "orders_outage";
const KEY: &str = "fluss_outage";
/// How long the server stays down: the point of the test, not a wait for a condition.
const OUTAGE: Duration = Duration::from_secs(30);

#[test]
fn rows_written_during_a_30_s_iggy_outage_all_arrive() {
    let mut world = World::new("iggy_outage");
    let (table, table_id) = create_table("rt_outage", sample_log_schema(), 3);
    append(&table, (0..ROWS / 3).map(sample_row));
    let mut runtime = world.runtime(&[connector(KEY, &table, TOPIC, "json", json!({}))]);
    world.wait_for(TOPIC, "the first rows", |m| m.len() >= 1000);

    let status = world.server.stop();
    assert!(status.is_some(), "the Iggy server was running");
    let down = Instant::now();
    // Rows written while Iggy is down.
    append(&table, (ROWS / 3..2 * ROWS / 3).map(sample_row));
    std::thread::sleep(OUTAGE.saturating_sub(down.elapsed()));
    world.server.restart();
    append(&table, (2 * ROWS / 3..ROWS).map(sample_row));

    let distinct = |messages: &[Message]| {
        messages
            .iter()
            .map(|m| (bucket(m), offset(m)))
            .collect::<BTreeSet<_>>()
            .len()
    };
    let messages = world.wait_for(
        TOPIC,
        &format!("{ROWS} distinct rows after the outage"),
        |m| distinct(m) >= ROWS as usize,
    );
    runtime.stop(Stop::Interrupt);
    let log = runtime.log();
    assert_ids(&messages, table_id);
    let rewinds = assert_bucket_order(&messages);
    let nack = lines_with(&log, "Nack");
    let failed = lines_with(&log, "ailed");
    eprintln!(
        "iggy_outage: {} messages for {ROWS} rows ({} repeats, {rewinds} offsets not above their bucket's last); runtime log: {} lines with 'Nack', {} with 'failed': {:#?}",
        messages.len(),
        messages.len() - distinct(&messages),
        nack.len(),
        failed.len(),
        failed.iter().take(10).collect::<Vec<_>>()
    );
    assert_eq!(
        distinct(&messages),
        ROWS as usize,
        "every row, once at least"
    );
}

/// Checks that each bucket's rows are in the topic in offset order: every message of a bucket
/// holds the offset after the bucket's message before it, or goes back to an offset it held
/// already (a rewind: rows sent again after a Nack), from where it goes on one by one. A gap
/// (an offset more than one above the one before) is a row skipped or out of order. Each
/// bucket starts at offset 0 (the table was written from empty). Returns the rewinds.
fn assert_bucket_order(messages: &[Message]) -> usize {
    let mut last: HashMap<i32, i64> = HashMap::new();
    let mut rewinds = 0;
    for (at, m) in messages.iter().enumerate() {
        let (bucket, offset) = (bucket(m), offset(m));
        let expected = last.get(&bucket).map_or(0, |previous| previous + 1);
        assert!(
            offset <= expected,
            "bucket {bucket}: message {at} of the topic holds offset {offset}, but the bucket's message before it held {}: the rows between are missing or out of order",
            expected - 1
        );
        if offset < expected {
            rewinds += 1;
        }
        last.insert(bucket, offset);
    }
    rewinds
}
