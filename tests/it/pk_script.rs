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

//! A primary-key workload shared by the change-event tests: a deterministic script of inserts,
//! updates (some keys many times) and deletes; writing it; looking every key up; and replaying
//! delivered events, which must give the same table.

use std::collections::BTreeMap;

use fluss_testkit::fluss::client::FlussConnection;
use fluss_testkit::fluss::metadata::TablePath;
use fluss_testkit::fluss::row::{DataGetters, GenericRow};
use fluss_testkit::write::{Change, write_changes};
use serde_json::Value;

use crate::fixture::cluster;

/// The table as a map from key (id, region) to (name, amount).
pub type TableState = BTreeMap<(i64, String), (String, f64)>;

/// A deterministic mix of inserts, updates (some keys many times) and deletes.
#[derive(Debug, Clone)]
pub enum Op {
    Upsert(i64, String, f64),
    Delete(i64),
}

pub fn script(ops: usize, keys: i64, seed: u64) -> Vec<Op> {
    let mut rng = seed;
    let mut next = move || {
        rng = rng
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        rng >> 33
    };
    let mut live = std::collections::HashSet::new();
    (0..ops)
        .map(|i| {
            // A fifth of the operations go to ten hot keys, so some keys change many times.
            let id = if next() % 5 == 0 {
                (next() % 10) as i64
            } else {
                (next() % keys as u64) as i64
            };
            if live.contains(&id) && next() % 4 == 0 {
                live.remove(&id);
                Op::Delete(id)
            } else {
                live.insert(id);
                Op::Upsert(id, format!("name-{id}-v{i}"), i as f64)
            }
        })
        .collect()
}

/// The table the script should leave behind, computed without Fluss.
pub fn script_state(ops: &[Op], region: &str) -> TableState {
    let mut state = TableState::new();
    for op in ops {
        match op {
            Op::Upsert(id, name, amount) => {
                state.insert((*id, region.to_owned()), (name.clone(), *amount));
            }
            Op::Delete(id) => {
                state.remove(&(*id, region.to_owned()));
            }
        }
    }
    state
}

pub fn row(id: i64, name: &str, amount: f64, region: Option<&str>) -> GenericRow<'static> {
    let mut row = GenericRow::new(if region.is_some() { 4 } else { 3 });
    row.set_field(0, id);
    row.set_field(1, name.to_owned());
    row.set_field(2, amount);
    if let Some(region) = region {
        row.set_field(3, region.to_owned());
    }
    row
}

/// Runs the script through one upsert writer (per-key order is the writer's order).
pub async fn apply_script(
    conn: &FlussConnection,
    path: &TablePath,
    ops: &[Op],
    region: Option<&str>,
) {
    let changes = ops.iter().map(|op| match op {
        Op::Upsert(id, name, amount) => Change::Upsert(row(*id, name, *amount, region)),
        Op::Delete(id) => Change::Delete(row(*id, "", 0.0, region)),
    });
    write_changes(conn, path, changes).await;
}

/// Looks every key up in the table (on its own connection: the default lookup batching waits
/// 100 ms per lookup, and these are sequential).
pub async fn lookup_all(path: &TablePath, keys: i64, regions: &[Option<&str>]) -> TableState {
    lookup_all_on(cluster(), path, keys, regions).await
}

/// [`lookup_all`] on another cluster than the shared one.
pub async fn lookup_all_on(
    cluster: &fluss_testkit::Cluster,
    path: &TablePath,
    keys: i64,
    regions: &[Option<&str>],
) -> TableState {
    let mut config = cluster.config();
    config.lookup_batch_timeout_ms = 1;
    let conn = FlussConnection::new(config)
        .await
        .expect("lookup connection");
    let table = conn.get_table(path).await.expect("get_table");
    let mut lookuper = table
        .new_lookup()
        .and_then(|l| l.create_lookuper())
        .expect("lookuper");
    let mut state = TableState::new();
    for region in regions {
        for id in 0..keys {
            let mut key = GenericRow::new(if region.is_some() { 2 } else { 1 });
            key.set_field(0, id);
            if let Some(region) = region {
                key.set_field(1, region.to_string());
            }
            let result = lookuper.lookup(&key).await.expect("lookup");
            if let Some(found) = result.get_single_row().expect("one row") {
                state.insert(
                    (id, region.unwrap_or_default().to_owned()),
                    (
                        found.get_string(1).expect("name").to_owned(),
                        found.get_double(2).expect("amount"),
                    ),
                );
            }
        }
    }
    state
}

fn key_of(image: &Value) -> (i64, String) {
    (
        image["id"].as_i64().expect("id"),
        image["region"].as_str().unwrap_or_default().to_owned(),
    )
}

fn value_of(image: &Value) -> (String, f64) {
    (
        image["name"].as_str().expect("name").to_owned(),
        image["amount"].as_f64().expect("amount"),
    )
}

/// Applies Debezium or flat event payloads in delivery order.
pub fn replay<'a>(payloads: impl IntoIterator<Item = &'a Value>) -> TableState {
    let mut state = TableState::new();
    for p in payloads {
        let (op, image) = if let Some(op) = p.get("__op") {
            (op.as_str().unwrap(), p)
        } else {
            let op = p["op"].as_str().unwrap();
            (op, if op == "d" { &p["before"] } else { &p["after"] })
        };
        match op {
            // `r`: a snapshot row (`starting_offset = "full"`).
            "c" | "u" | "r" => {
                state.insert(key_of(image), value_of(image));
            }
            "d" => {
                state.remove(&key_of(image));
            }
            other => panic!("unknown op {other} in {p}"),
        }
    }
    state
}
