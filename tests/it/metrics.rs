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

//! The Prometheus endpoint (`metrics_address`): exact figures against a table of known size,
//! lag that falls to 0 as the connector catches up, two connectors sharing one endpoint, and
//! a port that cannot be bound.

use std::collections::BTreeMap;
use std::net::TcpListener;

use fluss_testkit::metrics::{free_port, of, one, scrape, scrape_until};
use serde_json::json;

use crate::bad_input::{Case, refused, refused_in_process};
use crate::fixture::{Answer, DEADLINE, Stream, config};
use crate::log_tables::log_table;

#[test]
fn lag_is_exact_before_delivery_and_falls_to_zero_once_idle() {
    let path = log_table("metrics_lag", 3, 0..3000);
    let port = free_port();
    let connector = "metrics_lag";
    let extra = json!({
        "batch_size": 500,
        "metrics_address": format!("127.0.0.1:{port}"),
        "metrics_connector": connector,
    });
    let mut stream = Stream::open(&config(path.table(), extra), None).expect("open");
    // Nothing is acknowledged yet: every bucket's lag is its whole high watermark.
    let before = scrape_until(port, DEADLINE, "three high watermarks", |s| {
        of(s, "fluss_source_high_watermark", connector).len() == 3
    });
    let high = of(&before, "fluss_source_high_watermark", connector);
    assert_eq!(high.values().sum::<f64>(), 3000.0, "{high:?}");
    assert_eq!(of(&before, "fluss_source_lag_records", connector), high);
    assert!(
        of(&before, "fluss_source_position", connector)
            .values()
            .all(|p| *p == 0.0)
    );
    assert_eq!(one(&before, "fluss_source_up", connector), 1.0);
    assert_eq!(one(&before, "fluss_source_opens_total", connector), 1.0);
    assert_eq!(
        one(&before, "fluss_source_rows_delivered_total", connector),
        0.0
    );
    let labels = &before
        .keys()
        .find(|(n, l)| n == "fluss_source_lag_records" && l["connector"] == connector)
        .expect("a lag series")
        .1;
    assert_eq!(labels["instance"], "0");
    assert_eq!(
        labels["table"],
        format!("{}.{}", path.database(), path.table())
    );
    assert_eq!(labels["partition"], "");

    assert_eq!(stream.read(3000, Answer::AckAll), 3000);
    let after = scrape_until(port, DEADLINE, "lag 0 on every bucket", |s| {
        let lag = of(s, "fluss_source_lag_records", connector);
        lag.len() == 3 && lag.values().all(|l| *l == 0.0)
    });
    assert_eq!(of(&after, "fluss_source_position", connector), high);
    assert_eq!(
        of(&after, "fluss_source_ms_behind", connector),
        high.keys().map(|b| (b.clone(), 0.0)).collect(),
        "no lag, no delay"
    );
    assert!(
        of(&after, "fluss_source_snapshot_phase", connector)
            .values()
            .all(|p| *p == 0.0)
    );
    let payload: usize = stream.acked.iter().map(|m| m.raw.len()).sum();
    for (name, want) in [
        ("fluss_source_rows_fetched_total", 3000.0),
        ("fluss_source_rows_filtered_total", 0.0),
        ("fluss_source_rows_delivered_total", 3000.0),
        ("fluss_source_messages_acked_total", 3000.0),
        ("fluss_source_messages_nacked_total", 0.0),
        ("fluss_source_payload_bytes_total", payload as f64),
        ("fluss_source_outages_total", 0.0),
    ] {
        assert_eq!(one(&after, name, connector), want, "{name}");
    }
    let kinds: BTreeMap<String, f64> = after
        .iter()
        .filter(|((n, l), _)| n == "fluss_source_errors_total" && l["connector"] == connector)
        .map(|((_, l), v)| (l["kind"].clone(), *v))
        .collect();
    assert_eq!(
        kinds,
        ["fatal", "out_of_range", "refused", "transient"]
            .map(|k| (k.to_owned(), 0.0))
            .into()
    );
    stream.close();
    // The last connector using the port closed: it is free again.
    TcpListener::bind(("127.0.0.1", port)).expect("the port is freed at close");
}

#[test]
fn two_connectors_share_one_endpoint_and_nacks_and_filters_count() {
    let first = log_table("metrics_first", 1, 0..100);
    let second = log_table("metrics_second", 2, 0..200);
    let port = free_port();
    let address = format!("127.0.0.1:{port}");
    let mut a = Stream::open(
        &config(
            first.table(),
            json!({"metrics_address": address, "filter": "id < 40"}),
        ),
        None,
    )
    .expect("open the first");
    let mut b = Stream::open(
        &config(
            second.table(),
            json!({"metrics_address": address, "batch_size": 50}),
        ),
        None,
    )
    .expect("the second shares the address");
    // The second batch of `b` is Nacked once; its rows come again.
    assert_eq!(a.read(40, Answer::AckAll), 40);
    assert_eq!(b.read(200, Answer::NackEvery(2)), 200);
    let (fa, fb) = (
        format!("{}.{}", first.database(), first.table()),
        format!("{}.{}", second.database(), second.table()),
    );
    let both = scrape_until(port, DEADLINE, "both connectors caught up", |s| {
        [&fa, &fb].iter().all(|c| {
            let lag = of(s, "fluss_source_lag_records", c);
            !lag.is_empty() && lag.values().all(|l| *l == 0.0)
        })
    });
    // The filter is pushed down, so the server may skip whole batches: only what was
    // fetched is counted, and what passed it is exactly what was delivered.
    let fetched = one(&both, "fluss_source_rows_fetched_total", &fa);
    let filtered = one(&both, "fluss_source_rows_filtered_total", &fa);
    assert!((40.0..=100.0).contains(&fetched), "{fetched}");
    assert_eq!(fetched - filtered, 40.0);
    assert_eq!(one(&both, "fluss_source_rows_delivered_total", &fa), 40.0);
    assert_eq!(
        of(&both, "fluss_source_position", &fa)
            .values()
            .sum::<f64>(),
        100.0
    );
    assert_eq!(one(&both, "fluss_source_rows_delivered_total", &fb), 200.0);
    assert_eq!(
        one(&both, "fluss_source_messages_nacked_total", &fb),
        b.nacked.len() as f64
    );
    assert!(!b.nacked.is_empty());
    assert_eq!(
        of(&both, "fluss_source_position", &fb)
            .values()
            .sum::<f64>(),
        200.0
    );

    // The same labels twice in one process are refused, naming the fix.
    refused_in_process(&Case::new(
        "metrics labels taken",
        config(second.table(), json!({"metrics_address": address})),
        format!(
            "another connector in this process already reports metrics as connector=\"{fb}\" instance=\"0\"; set `metrics_connector` to each connector's key so their series stay apart"
        ),
    ));

    a.close();
    let (status, after) = scrape(port).expect("the second still serves the endpoint");
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert_eq!(one(&after, "fluss_source_up", &fa), 0.0);
    assert_eq!(one(&after, "fluss_source_closes_total", &fa), 1.0);
    assert!(of(&after, "fluss_source_position", &fa).is_empty());
    assert_eq!(one(&after, "fluss_source_up", &fb), 1.0);
    b.close();
    assert!(scrape(port).is_err(), "no listener after the last close");
}

#[test]
fn a_port_in_use_fails_open_with_one_error_line() {
    let path = log_table("metrics_port", 1, 0..1);
    let taken = TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = taken.local_addr().expect("address");
    refused(&Case::new(
        "metrics port in use",
        config(
            path.table(),
            json!({"metrics_address": address.to_string()}),
        ),
        format!(
            "metrics_address = \"{address}\" cannot be listened on (Address already in use (os error 98)); choose a free port (or another address) in `metrics_address`, or remove the key to run without metrics"
        ),
    ));
}
