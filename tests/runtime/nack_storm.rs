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

//! A Nack storm: Arrow IPC payloads (`Schema::Raw`) into a `schema = "json"` stream. The
//! runtime cannot encode a raw payload as JSON, so it rejects every batch; the plugin backs
//! off, says so once, stops polling, and closes having had nothing acknowledged.

use fluss_testkit::iggy::Stop;
use fluss_testkit::tables::{sample_log_schema, sample_row};
use serde_json::json;

use crate::fixture::{DELIVERY, World, append, connector, create_table, lines_with};

const TOPIC: &str = "orders_mismatch";
const KEY: &str = "fluss_mismatch";

/// Whether `line` puts the number 0 next to the word "acknowledged" ("0 acknowledged",
/// "acknowledged 0", "acknowledged=0", "acknowledged: 0").
fn reports_zero_acknowledged(line: &str) -> bool {
    let words: Vec<&str> = line
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    words.iter().enumerate().any(|(i, w)| {
        w.starts_with("acknowledged")
            && ((i > 0 && words[i - 1] == "0") || words.get(i + 1) == Some(&"0"))
    })
}

#[test]
fn a_nack_storm_delivers_nothing_and_is_reported_once() {
    let world = World::new("nack_storm");
    let (table, _) = create_table("rt_storm", sample_log_schema(), 3);
    append(&table, (0..300).map(sample_row));
    let mut runtime = world.runtime(&[connector(
        KEY,
        &table,
        TOPIC,
        "json",
        json!({ "payload_format": "arrow_ipc" }),
    )]);
    // The plugin's storm line (after the SDK's consecutive-Nack limit) ends the storm.
    runtime.wait_for_log("in a row", 1, DELIVERY);
    runtime.stop(Stop::Interrupt);
    let log = runtime.log();

    assert!(
        world.messages(TOPIC).is_empty(),
        "nothing lands in the topic when every batch is rejected"
    );
    assert!(
        !lines_with(&log, "Rejected source batch").is_empty(),
        "the runtime rejects the batches it cannot encode"
    );
    let storm = lines_with(&log, "in a row");
    assert_eq!(
        storm.len(),
        1,
        "the Nack storm is reported exactly once: {storm:#?}"
    );
    // Every Nack reaches the plugin: no batch-result call fails before the storm is reported.
    // apache/iggy's SDK stops an instance at its fifth Nack in a row and answers that call with
    // -1 after passing it on, so one failed call may follow the storm line (this repository's
    // SDK stops polling instead and answers 0).
    let storm_at = log
        .lines()
        .position(|line| line.contains("in a row"))
        .expect("the storm line");
    let failed: Vec<(usize, &str)> = log
        .lines()
        .enumerate()
        .filter(|(_, line)| line.contains("Plugin returned: -1"))
        .collect();
    assert!(
        failed.len() <= 1 && failed.iter().all(|(at, _)| *at > storm_at),
        "every Nack reached the plugin (no failed batch-result call before the storm line): {failed:#?}"
    );
    let closed = lines_with(&log, "closed after");
    assert_eq!(closed.len(), 1, "the plugin closed once: {closed:#?}");
    assert!(
        reports_zero_acknowledged(closed[0]),
        "the closing line reports 0 acknowledged messages: {}",
        closed[0]
    );
    assert!(
        !runtime.state_file(KEY).exists(),
        "no state is saved without an Ack"
    );
}

#[test]
fn zero_acknowledged_is_recognised() {
    assert!(reports_zero_acknowledged(
        "fluss[1 a.b]: closed after 0 acknowledged messages (0 rows)"
    ));
    assert!(reports_zero_acknowledged(
        "closed after: acknowledged=0 polled=12"
    ));
    assert!(!reports_zero_acknowledged(
        "closed after 10 acknowledged messages"
    ));
    assert!(!reports_zero_acknowledged("closed after 0 messages"));
}
