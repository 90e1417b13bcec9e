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

//! The Prometheus endpoint inside the real runtime: two connectors of one `iggy-connectors`
//! process share one `metrics_address`, each under its connector key, with exact figures once
//! every row is in its topic, and the port is free again after the runtime stops.

use std::net::TcpListener;
use std::time::Duration;

use fluss_testkit::iggy::Stop;
use fluss_testkit::metrics::{free_port, of, one, scrape_until};
use fluss_testkit::tables::{sample_log_schema, sample_row};
use serde_json::json;

use crate::fixture::{World, append, connector, create_table};

const ROWS: i64 = 3000;

#[test]
fn two_connectors_share_one_endpoint_in_the_runtime() {
    let world = World::new("metrics");
    let (orders, _) = create_table("rt_metrics_orders", sample_log_schema(), 3);
    let (refunds, _) = create_table("rt_metrics_refunds", sample_log_schema(), 1);
    append(&orders, (0..ROWS).map(sample_row));
    append(&refunds, (0..ROWS / 3).map(sample_row));
    let port = free_port();
    let address = format!("127.0.0.1:{port}");
    let mut runtime = world.runtime(&[
        connector(
            "fluss_orders",
            &orders,
            "orders",
            "json",
            json!({"metrics_address": address, "metrics_connector": "fluss_orders"}),
        ),
        connector(
            "fluss_refunds",
            &refunds,
            "refunds",
            "json",
            json!({"metrics_address": address, "metrics_connector": "fluss_refunds"}),
        ),
    ]);
    world.wait_for("orders", "every order", |m| m.len() >= ROWS as usize);
    world.wait_for("refunds", "every refund", |m| {
        m.len() >= (ROWS / 3) as usize
    });
    let samples = scrape_until(port, Duration::from_secs(30), "no lag anywhere", |s| {
        [("fluss_orders", 3), ("fluss_refunds", 1)]
            .iter()
            .all(|(c, buckets)| {
                let lag = of(s, "fluss_source_lag_records", c);
                lag.len() == *buckets && lag.values().all(|l| *l == 0.0)
            })
    });
    for (key, rows, topic) in [
        ("fluss_orders", ROWS, "orders"),
        ("fluss_refunds", ROWS / 3, "refunds"),
    ] {
        let positions = of(&samples, "fluss_source_position", key);
        assert_eq!(positions.values().sum::<f64>(), rows as f64, "{key}");
        assert_eq!(of(&samples, "fluss_source_high_watermark", key), positions);
        assert_eq!(
            one(&samples, "fluss_source_rows_delivered_total", key),
            rows as f64
        );
        // The runtime re-encodes JSON payloads (`7.50` becomes `7.5`), so the topic's bytes
        // are close to, not equal to, what the plugin handed over.
        let stored: usize = world.messages(topic).iter().map(|m| m.payload.len()).sum();
        let handed = one(&samples, "fluss_source_payload_bytes_total", key);
        let ratio = handed / stored as f64;
        assert!((0.8..1.25).contains(&ratio), "{key}: {handed} vs {stored}");
        assert_eq!(one(&samples, "fluss_source_up", key), 1.0);
        assert_eq!(one(&samples, "fluss_source_opens_total", key), 1.0);
    }
    runtime.stop(Stop::Interrupt);
    TcpListener::bind(("127.0.0.1", port)).expect("the port is freed when the runtime stops");
}
