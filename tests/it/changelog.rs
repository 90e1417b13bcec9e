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

//! Primary-key tables as change events: applying the delivered events in order per key must
//! reproduce the table, checked against a lookup of every key.

use std::time::Duration;

use fluss_testkit::fluss::client::FlussConnection;
use fluss_testkit::fluss::metadata::{DataTypes, Schema, TableDescriptor, TablePath};
use fluss_testkit::{tables, unique_table};
use serde_json::json;

use crate::fixture::{Answer, Received, Stream, cluster, config, rt};
use crate::pk_script::{TableState, apply_script, lookup_all, row, script, script_state};

const KEYS: i64 = 1000;

/// Replays delivered messages.
fn replay(events: &[Received]) -> TableState {
    crate::pk_script::replay(events.iter().map(|m| &m.payload))
}

fn pk_table(prefix: &str, descriptor: TableDescriptor) -> (FlussConnection, TablePath) {
    let path = unique_table(prefix);
    let conn = rt().block_on(cluster().connection());
    let admin = conn.get_admin().unwrap();
    rt().block_on(tables::create_table(&admin, &path, &descriptor));
    (conn, path)
}

fn pk_descriptor(properties: &[(&str, &str)]) -> TableDescriptor {
    let mut builder = TableDescriptor::builder()
        .schema(tables::sample_pk_schema())
        .distributed_by(Some(3), vec!["id".to_string()]);
    for (k, v) in properties {
        builder = builder.property(*k, *v);
    }
    builder.build().expect("descriptor")
}

#[test]
fn mixed_changes_replay_to_the_final_table_in_both_formats() {
    let (conn, path) = pk_table("cdc_mixed", pk_descriptor(&[]));
    let ops = script(10_000, KEYS, 7);
    rt().block_on(apply_script(&conn, &path, &ops, None));
    let expected = rt().block_on(lookup_all(&path, KEYS, &[None]));
    assert_eq!(
        expected,
        script_state(&ops, ""),
        "the lookups agree with the script"
    );
    assert!(expected.len() > 100, "the script leaves a populated table");
    for format in ["debezium", "flat"] {
        let mut s = Stream::open(
            &config(
                path.table(),
                json!({ "changelog_format": format, "batch_size": 500 }),
            ),
            None,
        )
        .expect("open");
        s.read_until("events that replay to the table", Answer::AckAll, |s| {
            replay(&s.acked) == expected
        });
        let ops: std::collections::HashSet<&str> = s
            .acked
            .iter()
            .map(|m| {
                m.payload
                    .get("__op")
                    .unwrap_or(&m.payload["op"])
                    .as_str()
                    .unwrap()
            })
            .collect();
        assert_eq!(ops.len(), 3, "{format}: c, u and d all occur: {ops:?}");
        let ids: std::collections::HashSet<u128> = s.acked.iter().map(|m| m.id).collect();
        assert_eq!(ids.len(), s.acked.len(), "one id per change");
        if format == "debezium" {
            let e = &s.acked[0].payload;
            assert_eq!(e["source"]["connector"], "fluss");
            assert_eq!(e["source"]["table"], path.table());
            assert_eq!(e["source"]["offset"], s.acked[0].offset);
            assert_eq!(e["source"]["bucket"], s.acked[0].bucket);
        }
    }
}

#[test]
fn restart_and_nacks_keep_the_final_state() {
    let (conn, path) = pk_table("cdc_restart", pk_descriptor(&[]));
    let ops = script(10_000, KEYS, 11);
    rt().block_on(apply_script(&conn, &path, &ops, None));
    let expected = rt().block_on(lookup_all(&path, KEYS, &[None]));
    let cfg = config(path.table(), json!({"batch_size": 300}));
    let mut first = Stream::open(&cfg, None).expect("open");
    first.read(3000, Answer::NackEvery(3));
    let mut events = first.acked.clone();
    let state = first.close();
    let mut second = Stream::open(&cfg, state).expect("reopen");
    second.read_until(
        "events of both runs that replay to the table",
        Answer::NackEvery(3),
        |s| crate::pk_script::replay(events.iter().chain(&s.acked).map(|m| &m.payload)) == expected,
    );
    assert!(!second.nacked.is_empty());
    events.extend(second.acked.iter().cloned());
    let ids: std::collections::HashSet<u128> = events.iter().map(|m| m.id).collect();
    assert_eq!(
        ids.len(),
        events.len(),
        "nothing was delivered twice after a clean restart"
    );
    assert_eq!(replay(&events), expected);
}

#[test]
fn wal_changelog_image_gives_updates_without_before() {
    let (conn, path) = pk_table(
        "cdc_wal",
        pk_descriptor(&[("table.changelog.image", "WAL")]),
    );
    let ops = script(2_000, KEYS, 3);
    rt().block_on(apply_script(&conn, &path, &ops, None));
    let expected = rt().block_on(lookup_all(&path, KEYS, &[None]));
    let mut s = Stream::open(&config(path.table(), json!({})), None).expect("open");
    s.read_until("events that replay to the table", Answer::AckAll, |s| {
        replay(&s.acked) == expected
    });
    assert!(
        s.acked
            .iter()
            .any(|m| m.payload["op"] == "u" && m.payload["before"].is_null()),
        "a WAL changelog has updates without a before image"
    );
}

#[test]
fn partitioned_primary_key_table() {
    let schema = Schema::builder()
        .column("id", DataTypes::bigint())
        .column("name", DataTypes::string())
        .column("amount", DataTypes::double())
        .column("region", DataTypes::string())
        .primary_key(vec!["id", "region"])
        .expect("key")
        .build()
        .expect("schema");
    let path = unique_table("cdc_partitioned");
    let conn = rt().block_on(cluster().connection());
    let admin = conn.get_admin().unwrap();
    rt().block_on(async {
        tables::create_partitioned_table(&admin, &path, schema, "region", 2).await;
        tables::create_partition(&admin, &path, "region", "eu").await;
        tables::create_partition(&admin, &path, "region", "us").await;
        apply_script(&conn, &path, &script(2_000, KEYS, 5), Some("eu")).await;
        apply_script(&conn, &path, &script(2_000, KEYS, 6), Some("us")).await;
    });
    let expected = rt().block_on(lookup_all(&path, KEYS, &[Some("eu"), Some("us")]));
    let mut s = Stream::open(
        &config(path.table(), json!({"changelog_format": "flat"})),
        None,
    )
    .expect("open");
    s.read_until("events that replay to the table", Answer::AckAll, |s| {
        replay(&s.acked) == expected
    });
    assert!(s.acked.iter().all(|m| m.partition.is_some()));
}

/// Merge engines and delete behaviour shape the changelog on the server; the events are
/// exactly what it holds.
#[test]
fn merge_engines_produce_what_the_changelog_holds() {
    let write_twice_then_delete = |path: &TablePath| {
        rt().block_on(async {
            let conn = cluster().connection().await;
            fluss_testkit::write::upsert_rows(&conn, path, [row(1, "first", 1.0, None)]).await;
            fluss_testkit::write::upsert_rows(&conn, path, [row(1, "second", 2.0, None)]).await;
            fluss_testkit::write::upsert_rows(&conn, path, [row(2, "other", 3.0, None)]).await;
        })
    };
    // first_row keeps the first value of a key: the second upsert changes nothing.
    let (_, path) = pk_table(
        "cdc_first_row",
        pk_descriptor(&[("table.merge-engine", "first_row")]),
    );
    write_twice_then_delete(&path);
    let mut s = Stream::open(
        &config(path.table(), json!({"changelog_format": "flat"})),
        None,
    )
    .expect("open");
    // Two inserts, then nothing more.
    s.read(2, Answer::AckAll);
    s.read_for(Duration::from_secs(3), Answer::AckAll);
    let events: Vec<(String, String)> = s
        .acked
        .iter()
        .map(|m| {
            (
                m.payload["__op"].as_str().unwrap().to_owned(),
                m.payload["name"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        events,
        [
            ("c".to_owned(), "first".to_owned()),
            ("c".to_owned(), "other".to_owned())
        ],
        "first_row: one insert per key, no update"
    );
    s.close();

    // The default merge engine reports the update of key 1.
    let (_, path) = pk_table("cdc_default_engine", pk_descriptor(&[]));
    write_twice_then_delete(&path);
    let mut s = Stream::open(&config(path.table(), json!({})), None).expect("open");
    // An insert, an update, an insert, then nothing more.
    s.read(3, Answer::AckAll);
    s.read_for(Duration::from_secs(3), Answer::AckAll);
    let ops: Vec<&str> = s
        .acked
        .iter()
        .map(|m| m.payload["op"].as_str().unwrap())
        .collect();
    assert_eq!(ops.iter().filter(|o| **o == "u").count(), 1, "{ops:?}");
}
