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

//! Result timeout, Nack limit and poll-error backoff, with the SDK's timings shortened
//! through its `IGGY_SOURCE_*` variables. A separate test binary because those
//! variables are process-wide and read at every open.

mod common;

use fluss_source_runner::{Batch, Harness, Instance, Level, logs};
use std::sync::Once;
use std::time::{Duration, Instant};

fn harness() -> Harness {
    static ENV: Once = Once::new();
    ENV.call_once(|| {
        // TODO: Audit that the environment access only happens in single-threaded code.
        unsafe { std::env::set_var("IGGY_SOURCE_RESULT_TIMEOUT_MS", "200") };
        // TODO: Audit that the environment access only happens in single-threaded code.
        unsafe { std::env::set_var("IGGY_SOURCE_NACK_BACKOFF_MS", "10") };
        // TODO: Audit that the environment access only happens in single-threaded code.
        unsafe { std::env::set_var("IGGY_SOURCE_MAX_NACKS", "3") };
    });
    Harness::load(common::test_source_library()).expect("load the test source")
}

fn next(instance: &Instance) -> Batch {
    instance
        .next_batch(Duration::from_secs(5))
        .expect("a batch within 5 s")
}

fn first_id(batch: &Batch) -> Option<u128> {
    batch.messages.messages[0].id
}

fn plugin_errors(id: u32, needle: &str) -> usize {
    let prefix = format!("plugin {id}:");
    logs()
        .iter()
        .filter(|l| {
            l.level == Level::Error && l.message.starts_with(&prefix) && l.message.contains(needle)
        })
        .count()
}

#[test]
fn unanswered_batch_times_out_as_nack_and_a_late_result_is_refused() {
    let harness = harness();
    let instance = harness.open(r#"{"total":100,"batch":10}"#, None).unwrap();
    instance.start();
    let first = next(&instance);
    let started = Instant::now();
    let again = next(&instance);
    assert!(
        started.elapsed() >= Duration::from_millis(150),
        "redelivered before the timeout"
    );
    assert_eq!(
        first_id(&again),
        first_id(&first),
        "same data after the timeout"
    );
    assert_eq!(
        instance.ack(&first),
        -1,
        "late result for the timed-out batch"
    );
    assert_eq!(instance.ack(&again), 0);
    assert_eq!(instance.close(), 0);
}

#[test]
fn polling_stops_after_the_nack_limit() {
    let harness = harness();
    let instance = harness.open(r#"{"total":100,"batch":10}"#, None).unwrap();
    instance.start();
    for n in 1..=3 {
        let batch = next(&instance);
        // Every Nack is answered 0, the one that stops polling too: the SDK logs why itself,
        // where a -1 would only make the runtime log "Plugin returned: -1".
        assert_eq!(instance.nack(&batch), 0, "nack {n}");
    }
    assert!(
        instance.next_batch(Duration::from_millis(500)).is_none(),
        "polling stopped"
    );
    assert_eq!(
        plugin_errors(
            instance.id(),
            "the runtime did not accept 3 batches in a row, so polling stops"
        ),
        1,
        "one line for the whole storm"
    );
    assert_eq!(plugin_errors(instance.id(), "Likely causes"), 1);
    assert_eq!(instance.close(), 0);
}

#[test]
fn poll_errors_are_logged_with_their_chain_and_retried() {
    let harness = harness();
    let instance = harness
        .open(r#"{"total":5,"batch":5,"fail_poll_times":2}"#, None)
        .unwrap();
    instance.start();
    let batch = next(&instance);
    assert_eq!(first_id(&batch), Some(0));
    assert_eq!(plugin_errors(instance.id(), "poll failed"), 2);
    assert_eq!(instance.ack(&batch), 0);
    assert_eq!(instance.close(), 0);
}
