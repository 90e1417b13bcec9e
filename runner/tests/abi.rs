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

//! The SDK's container behaviour over the real C ABI, through the test source plugin.

mod common;

use fluss_source_runner::harness::late_sends;
use fluss_source_runner::{Batch, Error, Harness, Instance, Level, logs};
use iggy_connector_sdk::ConnectorState;
use serde::Deserialize;
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(5);

fn harness() -> Harness {
    Harness::load(common::test_source_library()).expect("load the test source")
}

fn ids(batch: &Batch) -> Vec<u128> {
    batch
        .messages
        .messages
        .iter()
        .map(|m| m.id.expect("test source sets ids"))
        .collect()
}

#[derive(Deserialize)]
struct State {
    next: u64,
}

fn state_next(batch: &Batch) -> u64 {
    batch
        .messages
        .state
        .as_ref()
        .expect("test source sends state")
        .deserialize::<State>()
        .expect("state decodes")
        .next
}

fn next(instance: &Instance) -> Batch {
    instance
        .next_batch(WAIT)
        .expect("a batch within 5 s; check the plugin's log lines above")
}

fn plugin_lines(id: u32) -> Vec<fluss_source_runner::LogLine> {
    let prefix = format!("plugin {id}:");
    logs()
        .into_iter()
        .filter(|line| line.message.starts_with(&prefix))
        .collect()
}

#[test]
fn acked_batches_deliver_every_message_once_then_nothing() {
    let harness = harness();
    let instance = harness.open(r#"{"total":25,"batch":10}"#, None).unwrap();
    assert_eq!(instance.start(), 0);
    let mut seen = Vec::new();
    let mut batch_ids = Vec::new();
    for _ in 0..3 {
        let batch = next(&instance);
        batch_ids.push(batch.batch_id);
        seen.extend(ids(&batch));
        assert!(batch.encoded_len > 0);
        assert_eq!(instance.ack(&batch), 0, "ack of the pending batch");
    }
    assert_eq!(seen, (0..25).collect::<Vec<u128>>());
    assert_eq!(batch_ids, [1, 2, 3], "batch ids start at 1 and increment");
    assert!(
        instance.next_batch(Duration::from_millis(300)).is_none(),
        "exhausted source sends nothing"
    );
    assert_eq!(instance.close(), 0);
    assert_eq!(late_sends(), 0, "no send callback after close");
}

#[test]
fn messages_carry_payload_headers_and_staged_state() {
    let harness = harness();
    let instance = harness.open(r#"{"total":5,"batch":5}"#, None).unwrap();
    instance.start();
    let batch = next(&instance);
    let first = &batch.messages.messages[0];
    assert_eq!(first.payload, br#"{"n":0}"#);
    let headers = first.headers.as_ref().unwrap();
    let rendered: Vec<String> = headers.iter().map(|(k, v)| format!("{k}={v}")).collect();
    assert_eq!(rendered, ["n=0", "source=test"]);
    assert_eq!(state_next(&batch), 5, "state is the staged position");
    assert_eq!(instance.ack(&batch), 0);
}

#[test]
fn nacked_batch_is_redelivered_with_the_same_ids_and_state() {
    let harness = harness();
    let instance = harness.open(r#"{"total":100,"batch":10}"#, None).unwrap();
    instance.start();
    let first = next(&instance);
    assert_eq!(instance.nack(&first), 0);
    let again = next(&instance);
    assert_eq!(ids(&again), ids(&first), "same ids after a Nack");
    assert_eq!(state_next(&again), state_next(&first));
    assert_eq!(again.batch_id, first.batch_id + 1, "a fresh batch id");
    assert_eq!(instance.ack(&again), 0);
    let third = next(&instance);
    assert_eq!(ids(&third)[0], 10, "the Ack committed the first ten");
    instance.ack(&third);
    instance.close();
}

#[test]
fn state_from_open_resumes_after_the_acked_position() {
    let harness = harness();
    let state = ConnectorState::serialize(&(40_u64,)).unwrap();
    let instance = harness
        .open(r#"{"total":45,"batch":10}"#, Some(&state.0))
        .unwrap();
    instance.start();
    let batch = next(&instance);
    assert_eq!(ids(&batch), (40..45).collect::<Vec<u128>>());
    instance.ack(&batch);
}

#[test]
fn close_with_a_pending_batch_is_prompt_and_rolls_it_back() {
    let harness = harness();
    let instance = harness.open(r#"{"total":100,"batch":10}"#, None).unwrap();
    instance.start();
    let pending = next(&instance);
    let started = Instant::now();
    assert_eq!(instance.close(), 0);
    let took = started.elapsed();
    assert!(took < Duration::from_secs(1), "close took {took:?}");
    assert_eq!(
        harness.call_batch_result(instance.id(), pending.batch_id, 0),
        -1,
        "a result after close is refused"
    );
    assert_eq!(late_sends(), 0, "no send callback after close");
}

#[test]
fn close_cancels_an_in_progress_poll() {
    let harness = harness();
    let instance = harness
        .open(r#"{"total":100,"poll_delay_ms":30000}"#, None)
        .unwrap();
    instance.start();
    std::thread::sleep(Duration::from_millis(50));
    let started = Instant::now();
    assert_eq!(instance.close(), 0);
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "close waited for poll"
    );
}

#[test]
fn close_works_without_start() {
    let harness = harness();
    let instance = harness.open("null", None).unwrap();
    assert_eq!(instance.close(), 0);
    assert_ne!(harness.call_close(instance.id()), 0, "the id is gone");
}

#[test]
fn unknown_ids_are_refused_everywhere() {
    let harness = harness();
    let id = 4_000_000_000;
    assert_ne!(harness.call_handle(id), 0);
    assert_ne!(harness.call_batch_result(id, 1, 0), 0);
    assert_ne!(harness.call_close(id), 0);
}

#[test]
fn duplicate_open_id_is_refused_and_the_first_keeps_working() {
    let harness = harness();
    let instance = harness.open(r#"{"total":10}"#, None).unwrap();
    assert_ne!(harness.call_open(instance.id(), "null", None), 0);
    instance.start();
    let batch = next(&instance);
    assert_eq!(instance.ack(&batch), 0);
    assert_eq!(instance.close(), 0);
}

#[test]
fn results_for_other_batches_or_bad_bytes_are_refused() {
    let harness = harness();
    let instance = harness.open(r#"{"total":100,"batch":10}"#, None).unwrap();
    assert_eq!(instance.result(1, 0), -1, "no batch pending before start");
    instance.start();
    let batch = next(&instance);
    assert_eq!(instance.result(batch.batch_id + 1, 0), -1, "wrong batch id");
    assert_eq!(
        instance.result(batch.batch_id, 7),
        -1,
        "invalid result byte"
    );
    let again = next(&instance);
    assert_eq!(ids(&again), ids(&batch), "the invalid byte acted as a Nack");
    assert_eq!(instance.ack(&again), 0);
    assert_eq!(instance.ack(&again), -1, "a second Ack for the same batch");
}

#[test]
fn two_instances_run_side_by_side() {
    let harness = harness();
    let a = harness.open(r#"{"total":3,"batch":3}"#, None).unwrap();
    let b = harness.open(r#"{"total":7,"batch":7}"#, None).unwrap();
    assert_ne!(a.id(), b.id());
    a.start();
    b.start();
    let (batch_a, batch_b) = (next(&a), next(&b));
    assert_eq!(ids(&batch_a).len(), 3);
    assert_eq!(ids(&batch_b).len(), 7);
    assert_eq!(b.ack(&batch_b), 0);
    assert_eq!(a.ack(&batch_a), 0);
    assert_eq!(a.close(), 0);
    assert!(b.next_batch(Duration::from_millis(200)).is_none());
    assert_eq!(b.close(), 0);
}

#[test]
fn failed_open_returns_non_zero_logs_one_error_and_leaves_nothing() {
    let harness = harness();
    let error = harness.open(r#"{"fail_open":true}"#, None).unwrap_err();
    let Error::OpenFailed { id, code } = error else {
        panic!("expected OpenFailed, got {error}");
    };
    assert_ne!(code, 0);
    let errors: Vec<_> = plugin_lines(id)
        .into_iter()
        .filter(|line| line.level == Level::Error)
        .collect();
    assert_eq!(errors.len(), 1, "one ERROR line: {errors:?}");
    assert!(
        errors[0].message.contains("fail_open") && errors[0].message.contains("simulated cause"),
        "the line carries the cause chain: {}",
        errors[0].message
    );
    assert_ne!(harness.call_close(id), 0, "no instance left behind");
    assert_eq!(
        harness.call_open(id, "null", None),
        0,
        "the id is free again"
    );
    assert_eq!(harness.call_close(id), 0);
}

#[test]
fn bad_config_json_fails_open_with_serde_message() {
    let harness = harness();
    let Err(Error::OpenFailed { id, .. }) = harness.open(r#"{"totl":1}"#, None) else {
        panic!("an unknown key must fail open");
    };
    let lines = plugin_lines(id);
    assert!(
        lines
            .iter()
            .any(|l| l.message.contains("unknown field `totl`")),
        "{lines:?}"
    );
}

#[test]
fn panic_in_poll_is_contained_and_logged() {
    let harness = harness();
    let instance = harness
        .open(r#"{"total":100,"batch":10,"panic_in_poll_at":15}"#, None)
        .unwrap();
    instance.start();
    let batch = next(&instance);
    assert_eq!(instance.ack(&batch), 0);
    assert!(instance.next_batch(Duration::from_millis(500)).is_none());
    let deadline = Instant::now() + WAIT;
    while !plugin_lines(instance.id())
        .iter()
        .any(|l| l.level == Level::Error && l.message.contains("panic in poll"))
    {
        assert!(Instant::now() < deadline, "no 'panic in poll' ERROR line");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(instance.close(), 0);
    let other = harness.open(r#"{"total":1}"#, None).unwrap();
    other.start();
    assert_eq!(other.ack(&next(&other)), 0, "the process still works");
}

#[test]
fn version_is_the_plugin_crate_version() {
    // The test source inherits the workspace's one version, as the runner does.
    assert_eq!(harness().version(), env!("CARGO_PKG_VERSION"));
}

#[test]
fn library_exports_exactly_the_five_source_symbols() {
    let symbols = fluss_source_runner::exported_iggy_symbols(&common::test_source_library())
        .expect("nm (binutils) is installed");
    assert_eq!(symbols, fluss_source_runner::SOURCE_SYMBOLS);
}

#[test]
fn poll_ahead_delivers_every_message_once_in_order() {
    let harness = harness();
    let instance = harness
        .open(r#"{"total":95,"batch":10,"poll_ahead":true}"#, None)
        .unwrap();
    assert_eq!(instance.start(), 0);
    let mut seen = Vec::new();
    let mut batch_ids = Vec::new();
    for _ in 0..10 {
        let batch = next(&instance);
        batch_ids.push(batch.batch_id);
        assert_eq!(
            state_next(&batch),
            ids(&batch).last().map_or(0, |last| *last as u64 + 1),
            "each batch stages the counter after its own messages"
        );
        seen.extend(ids(&batch));
        assert_eq!(instance.ack(&batch), 0);
    }
    assert_eq!(seen, (0..95).collect::<Vec<u128>>());
    assert_eq!(batch_ids, (1..=10).collect::<Vec<u64>>());
    assert!(
        instance.next_batch(Duration::from_millis(300)).is_none(),
        "exhausted source sends nothing"
    );
    assert_eq!(instance.close(), 0);
}

#[test]
fn poll_ahead_nack_drops_the_batch_polled_ahead_and_resends_from_the_last_ack() {
    let harness = harness();
    let instance = harness
        .open(r#"{"total":100,"batch":10,"poll_ahead":true}"#, None)
        .unwrap();
    instance.start();
    let first = next(&instance);
    assert_eq!(instance.ack(&first), 0);
    let second = next(&instance);
    assert_eq!(ids(&second), (10..20).collect::<Vec<u128>>());
    // Meanwhile the SDK has polled 20..30 ahead; the Nack must drop it.
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(instance.nack(&second), 0);
    let again = next(&instance);
    assert_eq!(ids(&again), ids(&second), "the Nacked batch comes again");
    assert_eq!(state_next(&again), 20);
    assert_eq!(instance.ack(&again), 0);
    let third = next(&instance);
    assert_eq!(
        ids(&third),
        (20..30).collect::<Vec<u128>>(),
        "no gap, no repeat"
    );
    assert_eq!(instance.ack(&third), 0);
    instance.close();
}

/// Opens the test source with `config`, holds its first batch 700 ms, acks it and returns how
/// long the second batch came after the ack (checking the second and third batches' ids).
fn gap_after_ack(config: &str) -> Duration {
    let harness = harness();
    let instance = harness.open(config, None).unwrap();
    instance.start();
    let first = instance.next_batch(WAIT).expect("first batch");
    std::thread::sleep(Duration::from_millis(700));
    let acked = Instant::now();
    assert_eq!(instance.ack(&first), 0);
    let second = instance.next_batch(WAIT).expect("second batch");
    let gap = acked.elapsed();
    assert_eq!(ids(&second), (10..20).collect::<Vec<u128>>());
    assert_eq!(instance.ack(&second), 0);
    let third = instance.next_batch(WAIT).expect("third batch");
    assert_eq!(ids(&third), (20..30).collect::<Vec<u128>>());
    instance.close();
    gap
}

#[test]
fn poll_ahead_prepares_the_next_batch_while_one_is_in_flight() {
    // Each poll takes 500 ms. Holding a batch for 700 ms before acking it gives the SDK
    // time to poll the next one, which then follows the ack at once; without poll-ahead it
    // comes a whole poll later.
    let waiting = |poll_ahead: bool| {
        format!(r#"{{"total":100,"batch":10,"poll_delay_ms":500,"poll_ahead":{poll_ahead}}}"#)
    };
    let ahead = gap_after_ack(&waiting(true));
    let serial = gap_after_ack(&waiting(false));
    assert!(
        ahead < Duration::from_millis(300),
        "with poll-ahead: {ahead:?}"
    );
    assert!(serial >= Duration::from_millis(450), "without: {serial:?}");
}

#[test]
fn poll_ahead_sends_a_batch_while_a_poll_that_never_waits_runs() {
    // Each poll holds its thread for 500 ms without awaiting (as a poll encoding a whole
    // batch of rows read ahead does). The batch polled during the first one's flight is sent
    // as soon as the first is acked, beside the poll after it, not after that poll.
    let gap = gap_after_ack(r#"{"total":100,"batch":10,"poll_busy_ms":500,"poll_ahead":true}"#);
    assert!(
        gap < Duration::from_millis(300),
        "the second batch came {gap:?} after the ack: its send waited for the next poll"
    );
}

#[test]
fn poll_ahead_close_with_a_pending_batch_is_prompt_and_sends_nothing_more() {
    let harness = harness();
    let instance = harness
        .open(r#"{"total":100,"batch":10,"poll_ahead":true}"#, None)
        .unwrap();
    instance.start();
    let pending = next(&instance);
    std::thread::sleep(Duration::from_millis(100));
    let started = Instant::now();
    assert_eq!(instance.close(), 0);
    assert!(started.elapsed() < Duration::from_secs(1));
    assert_eq!(
        harness.call_batch_result(instance.id(), pending.batch_id, 0),
        -1
    );
    assert!(instance.next_batch(Duration::from_millis(200)).is_none());
    assert_eq!(late_sends(), 0, "no send callback after close");
}
