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

//! A primary-key table with many keys snapshotted through the runtime (`starting_offset =
//! "full"`, the default): every live key arrives once as a Debezium `r` event read from the
//! buckets' KV snapshot files, and replaying them key by key gives the table.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use fluss_testkit::fluss::rpc::message::OffsetSpec;
use fluss_testkit::iggy::Stop;
use fluss_testkit::tables::{sample_amount, sample_name, sample_pk_schema, sample_row};
use fluss_testkit::write::{self, Change};
use fluss_testkit::{Cluster, poll_until};
use serde_json::{Value, json};

use crate::fixture::{STREAM, World, connector, create_table, rt};

const TOPIC: &str = "customers_snapshot";
const KEYS: i64 = 200_000;
const BUCKETS: i32 = 3;

#[test]
fn a_snapshot_of_200_000_keys_replays_to_the_table() {
    let world = World::new("snapshot");
    let (table, _) = create_table("rt_snap", sample_pk_schema(), BUCKETS);
    // 200,000 keys, then 1,000 of them updated and 1,000 deleted.
    let updated = |id: i64| json!({ "id": id, "name": format!("updated-{id}"), "amount": -1.0 });
    let loaded = Instant::now();
    rt().block_on(async {
        let connection = Cluster::shared().connection().await;
        write::upsert_rows(&connection, &table, (1..=KEYS).map(sample_row)).await;
        let changes = (1..=1000)
            .map(|id| {
                let mut row = sample_row(id);
                row.set_field(1, format!("updated-{id}"));
                row.set_field(2, -1.0);
                Change::Upsert(row)
            })
            .chain((1001..=2000).map(|id| Change::Delete(sample_row(id))));
        write::write_changes(&connection, &table, changes).await;
        // Every bucket's latest KV snapshot holds all of it: only snapshot rows come.
        let admin = connection.get_admin().expect("admin");
        let buckets: Vec<i32> = (0..BUCKETS).collect();
        poll_until(
            Duration::from_secs(120),
            Duration::from_millis(500),
            "a KV snapshot of every bucket at its high watermark",
            || async {
                let ends = admin
                    .list_offsets(&table, &buckets, OffsetSpec::Latest)
                    .await
                    .map_err(|e| e.to_string())?;
                let latest = admin
                    .get_latest_kv_snapshots(&table, None)
                    .await
                    .map_err(|e| e.to_string())?;
                let caught_up = latest
                    .latest_snapshots
                    .iter()
                    .filter(|s| s.log_offset == ends.get(&s.bucket_id).copied())
                    .count();
                if caught_up == BUCKETS as usize {
                    Ok(())
                } else {
                    Err(format!("{caught_up} of {BUCKETS} buckets caught up"))
                }
            },
        )
        .await;
    });
    eprintln!("runtime snapshot: table loaded in {:.1?}", loaded.elapsed());
    let expected: BTreeMap<i64, Value> = (1..=KEYS)
        .filter(|id| !(1001..=2000).contains(id))
        .map(|id| {
            let row = if id <= 1000 {
                updated(id)
            } else {
                json!({ "id": id, "name": sample_name(id), "amount": sample_amount(id) })
            };
            (id, row)
        })
        .collect();

    let started = Instant::now();
    let mut runtime = world.runtime(&[connector(
        "fluss_snapshot",
        &table,
        TOPIC,
        "json",
        json!({ "changelog_format": "debezium", "batch_size": 5000 }),
    )]);
    loop {
        let count = world.server.topic(STREAM, TOPIC).map_or(0, |t| t.messages);
        if count >= expected.len() as u64 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(600),
            "{count} of {} messages after 10 minutes",
            expected.len()
        );
        std::thread::sleep(Duration::from_secs(2));
    }
    eprintln!(
        "runtime snapshot: {} keys delivered in {:.1?}",
        expected.len(),
        started.elapsed()
    );
    runtime.stop(Stop::Interrupt);
    let messages = world.messages(TOPIC);
    assert_eq!(messages.len(), expected.len(), "one event per live key");
    // Snapshot ids: layout version 10 (the top two bits), one per row of the snapshot.
    assert!(
        messages.iter().all(|m| m.id >> 126 == 2),
        "snapshot ids have layout version 10"
    );
    let ids: std::collections::HashSet<u128> = messages.iter().map(|m| m.id).collect();
    assert_eq!(ids.len(), messages.len(), "one id per message");
    let mut table_now: BTreeMap<i64, Value> = BTreeMap::new();
    for m in &messages {
        let event: Value = serde_json::from_slice(&m.payload).expect("payload is JSON");
        assert_eq!(event["op"], "r", "only snapshot events: {event}");
        assert!(event["before"].is_null());
        let id = event["after"]["id"].as_i64().expect("key");
        assert!(
            table_now.insert(id, event["after"].clone()).is_none(),
            "key {id} twice"
        );
    }
    assert_eq!(
        table_now, expected,
        "replaying the snapshot events per key gives the table"
    );
}
