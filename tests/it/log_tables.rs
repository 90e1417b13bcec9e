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

//! Log tables to JSON messages: exactly-once with Acks, resume from saved state, Nack
//! redelivery, starting offsets, partitions, and every value type.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::time::Duration;

use fluss_testkit::fluss::metadata::TablePath;
use fluss_testkit::tables::{self, sample_amount, sample_name, sample_row};
use fluss_testkit::{unique_table, write};
use serde_json::json;

use crate::fixture::{Answer, Received, Stream, assert_bucket_order, cluster, config, ids, rt};

/// Creates a log table with the sample schema and `buckets` buckets holding ids `range`.
pub(crate) fn log_table(prefix: &str, buckets: i32, range: std::ops::Range<i64>) -> TablePath {
    let path = unique_table(prefix);
    rt().block_on(async {
        let conn = cluster().connection().await;
        let admin = conn.get_admin().expect("admin");
        tables::create_log_table(&admin, &path, tables::sample_log_schema(), buckets).await;
        write::append_rows(&conn, &path, range.map(sample_row)).await;
    });
    path
}

fn append(path: &TablePath, range: std::ops::Range<i64>) {
    rt().block_on(async {
        let conn = cluster().connection().await;
        write::append_rows(&conn, path, range.map(sample_row)).await;
    });
}

fn assert_exactly(ids: &[i64], range: std::ops::Range<i64>) {
    let expected: Vec<i64> = range.collect();
    let mut got = ids.to_vec();
    got.sort_unstable();
    let unique: HashSet<i64> = got.iter().copied().collect();
    assert_eq!(
        unique.len(),
        got.len(),
        "{} repeated rows",
        got.len() - unique.len()
    );
    assert_eq!(got.len(), expected.len(), "row count");
    assert_eq!(got, expected, "the stream holds exactly the table's rows");
}

#[test]
fn hundred_thousand_rows_arrive_exactly_once_in_bucket_order() {
    let path = log_table("exactly_once", 3, 0..100_000);
    let mut stream =
        Stream::open(&config(path.table(), json!({"batch_size": 5000})), None).expect("open");
    let got = stream.read(100_000, Answer::AckAll);
    assert_eq!(got, 100_000);
    // Nothing more arrives once everything was acked.
    assert_eq!(stream.read_for(Duration::from_secs(2), Answer::AckAll), 0);
    assert_exactly(&ids(&stream.acked), 0..100_000);
    assert_bucket_order(&stream.acked);
    let buckets: BTreeSet<i32> = stream.acked.iter().map(|m| m.bucket).collect();
    assert_eq!(buckets, BTreeSet::from([0, 1, 2]), "all buckets were read");
    // Values follow the writer's formula; ids are unique.
    for m in stream.acked.iter().take(1000) {
        let id = m.payload["id"].as_i64().unwrap();
        assert_eq!(m.payload["name"], sample_name(id));
        assert_eq!(m.payload["amount"].as_f64().unwrap(), sample_amount(id));
        assert_eq!(m.change_type.as_deref(), Some("+A"));
        assert!(m.timestamp > 1_600_000_000_000, "commit timestamp in ms");
    }
    let message_ids: HashSet<u128> = stream.acked.iter().map(|m| m.id).collect();
    assert_eq!(message_ids.len(), 100_000, "message ids are unique");
}

#[test]
fn restart_from_saved_state_loses_and_repeats_nothing() {
    let path = log_table("resume", 3, 0..100_000);
    let cfg = config(path.table(), json!({"batch_size": 1000}));
    let mut first = Stream::open(&cfg, None).expect("open");
    first.read(40_000, Answer::AckAll);
    let before = first.acked.clone();
    let state = first.close();
    assert!(state.is_some(), "a state was persisted");
    assert!(before.len() >= 40_000 && before.len() < 41_000);

    let mut second = Stream::open(&cfg, state).expect("reopen with saved state");
    second.read(100_000 - before.len(), Answer::AckAll);
    let mut all = before.clone();
    all.extend(second.acked.iter().cloned());
    assert_exactly(&ids(&all), 0..100_000);
    assert_bucket_order(&all);
}

#[test]
fn nack_every_third_batch_redelivers_the_same_rows() {
    let path = log_table("nack", 3, 0..30_000);
    let mut stream = Stream::open(&cfg_small_batches(&path), None).expect("open");
    stream.read(30_000, Answer::NackEvery(3));
    assert!(!stream.nacked.is_empty(), "some batches were nacked");
    assert_exactly(&ids(&stream.acked), 0..30_000);
    assert_bucket_order(&stream.acked);
    // Every nacked message came again with the same id.
    let acked_ids: HashMap<u128, i64> = stream
        .acked
        .iter()
        .map(|m| (m.id, m.payload["id"].as_i64().unwrap()))
        .collect();
    for m in &stream.nacked {
        assert_eq!(
            acked_ids.get(&m.id),
            Some(&m.payload["id"].as_i64().unwrap()),
            "nacked message {} was redelivered with the same id",
            m.id
        );
    }
}

fn cfg_small_batches(path: &TablePath) -> serde_json::Value {
    config(path.table(), json!({"batch_size": 700}))
}

#[test]
fn starting_offsets_start_where_they_should() {
    let path = log_table("starts", 1, 0..100);
    // earliest
    let mut s = Stream::open(
        &config(path.table(), json!({"starting_offset": "earliest"})),
        None,
    )
    .unwrap();
    s.read(100, Answer::AckAll);
    assert_exactly(&ids(&s.acked), 0..100);
    s.close();
    // integer offset
    let mut s = Stream::open(&config(path.table(), json!({"starting_offset": 60})), None).unwrap();
    s.read(40, Answer::AckAll);
    assert_exactly(&ids(&s.acked), 60..100);
    assert_eq!(s.acked[0].offset, 60);
    s.close();
    // latest: only rows written after open
    let mut s = Stream::open(
        &config(path.table(), json!({"starting_offset": "latest"})),
        None,
    )
    .unwrap();
    assert_eq!(s.read_for(Duration::from_secs(2), Answer::AckAll), 0);
    std::thread::sleep(Duration::from_millis(1500));
    let boundary = now_ms();
    std::thread::sleep(Duration::from_millis(50));
    append(&path, 100..150);
    s.read(50, Answer::AckAll);
    assert_exactly(&ids(&s.acked), 100..150);
    s.close();
    // timestamp: rows committed at or after the boundary
    let mut s = Stream::open(
        &config(
            path.table(),
            json!({ "starting_offset": format!("timestamp:{boundary}") }),
        ),
        None,
    )
    .unwrap();
    s.read(50, Answer::AckAll);
    assert_exactly(&ids(&s.acked), 100..150);
    s.close();
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

#[test]
fn projection_and_metadata() {
    let path = log_table("projection", 2, 0..10);
    let mut s = Stream::open(
        &config(
            path.table(),
            json!({"columns": ["amount", "id"], "include_metadata": true}),
        ),
        None,
    )
    .unwrap();
    s.read(10, Answer::AckAll);
    assert_eq!(s.acked.len(), 10);
    for m in &s.acked {
        let text = String::from_utf8(m.raw.clone()).unwrap();
        let id = m.payload["id"].as_i64().unwrap();
        let prefix = format!(
            "{{\"amount\":{:?},\"id\":{id},\"_fluss\":{{",
            sample_amount(id)
        );
        assert!(
            text.starts_with(&prefix),
            "projected order, then metadata: {text}"
        );
        assert_eq!(m.payload.as_object().unwrap().len(), 3, "{text}");
        let meta = &m.payload["_fluss"];
        assert_eq!(meta["bucket"], m.bucket);
        assert_eq!(meta["offset"], m.offset);
        assert_eq!(meta["timestamp"], m.timestamp);
        assert!(meta["partition"].is_null());
    }
}

#[test]
fn partitions_added_while_streaming_are_read_and_dropped_ones_forgotten() {
    let path = unique_table("partitions");
    let conn = rt().block_on(cluster().connection());
    let admin = conn.get_admin().unwrap();
    rt().block_on(async {
        tables::create_partitioned_table(
            &admin,
            &path,
            tables::sample_partitioned_schema(false),
            "region",
            2,
        )
        .await;
        tables::create_partition(&admin, &path, "region", "eu").await;
        write::append_rows(
            &conn,
            &path,
            (0..100).map(|id| tables::sample_partitioned_row(id, "eu")),
        )
        .await;
    });
    let mut s = Stream::open(
        &config(path.table(), json!({"partition_discovery_interval": "1s"})),
        None,
    )
    .unwrap();
    s.read(100, Answer::AckAll);
    assert_exactly(&ids(&s.acked), 0..100);
    assert!(s.acked.iter().all(|m| m.partition.as_deref() == Some("eu")));
    rt().block_on(async {
        tables::create_partition(&admin, &path, "region", "us").await;
        write::append_rows(
            &conn,
            &path,
            (100..200).map(|id| tables::sample_partitioned_row(id, "us")),
        )
        .await;
    });
    s.read(200, Answer::AckAll);
    assert_exactly(&ids(&s.acked), 0..200);
    assert!(
        s.acked[100..]
            .iter()
            .all(|m| m.partition.as_deref() == Some("us"))
    );
    rt().block_on(tables::drop_partition(&admin, &path, "region", "eu"));
    rt().block_on(write::append_rows(
        &conn,
        &path,
        (200..250).map(|id| tables::sample_partitioned_row(id, "us")),
    ));
    s.read(250, Answer::AckAll);
    assert_exactly(&ids(&s.acked), 0..250);
    let state = s.close().expect("state");
    // The dropped partition is gone from the state; a restart reads nothing again.
    let mut again = Stream::open(&config(path.table(), json!({})), Some(state)).unwrap();
    assert_eq!(again.read_for(Duration::from_secs(3), Answer::AckAll), 0);
}

#[test]
fn a_column_added_while_streaming_reaches_the_next_rows_without_a_restart() {
    use fluss_testkit::fluss::metadata::{
        AddColumn, AlterTableChanges, ColumnPositionType, DataTypes, JsonSerde,
    };
    use fluss_testkit::fluss::row::GenericRow;

    let path = log_table("evolution", 2, 0..100);
    let cfg = config(path.table(), json!({}));
    let mut s = Stream::open(&cfg, None).unwrap();
    s.read(100, Answer::AckAll);
    rt().block_on(async {
        let conn = cluster().connection().await;
        let admin = conn.get_admin().unwrap();
        let note = serde_json::to_vec(&DataTypes::string().serialize_json().unwrap()).unwrap();
        admin
            .alter_table(
                &path,
                false,
                AlterTableChanges {
                    add_columns: vec![AddColumn {
                        column_name: "note".into(),
                        data_type_json: note,
                        comment: None,
                        position: ColumnPositionType::Last,
                    }],
                    ..Default::default()
                },
            )
            .await
            .expect("add column");
        // A fresh connection sees the new schema and writes four columns.
        let writer_conn = cluster().connection().await;
        write::append_rows(
            &writer_conn,
            &path,
            (100..150).map(|id| {
                let mut row = GenericRow::new(4);
                row.set_field(0, id);
                row.set_field(1, sample_name(id));
                row.set_field(2, sample_amount(id));
                row.set_field(3, format!("note-{id}"));
                row
            }),
        )
        .await;
    });
    // The running stream shows the new column from the first row written with it (more in
    // schema_changes.rs).
    s.read(150, Answer::AckAll);
    assert_exactly(&ids(&s.acked), 0..150);
    let keys = |m: &Received| m.payload.as_object().unwrap().len();
    assert!(s.acked[..100].iter().all(|m| keys(m) == 3));
    assert!(s.acked[100..].iter().all(|m| keys(m) == 4));
    let state = s.close();
    // A fresh read shows every row in the schema it was written with.
    let mut again = Stream::open(
        &config(path.table(), json!({"starting_offset": "earliest"})),
        None,
    )
    .unwrap();
    again.read(150, Answer::AckAll);
    assert_exactly(&ids(&again.acked), 0..150);
    let with_note: Vec<_> = again
        .acked
        .iter()
        .filter(|m| m.payload.get("note").is_some_and(|n| !n.is_null()))
        .collect();
    assert_eq!(
        with_note.len(),
        50,
        "rows written after the change carry the new column"
    );
    assert_eq!(
        again.acked.iter().filter(|m| keys(m) == 3).count(),
        100,
        "rows written before the change keep their shape"
    );
    assert!(state.is_some());
}

#[test]
fn open_batch_and_close_lines_are_logged() {
    use fluss_source_runner::{Level, logs};
    let path = log_table("logging", 2, 0..20);
    let mut s = Stream::open(
        &config(path.table(), json!({"verbose_logging": true})),
        None,
    )
    .unwrap();
    s.read(20, Answer::AckAll);
    s.close();
    let table = format!("{}.{}", path.database(), path.table());
    let mine: Vec<_> = logs()
        .into_iter()
        .filter(|l| l.message.contains(&table))
        .collect();
    let opened: Vec<_> = mine
        .iter()
        .filter(|l| l.message.contains("opened log table"))
        .collect();
    assert_eq!(opened.len(), 1, "one open line: {mine:?}");
    assert_eq!(opened[0].level, Level::Info);
    assert!(
        opened[0].message.contains("2 buckets")
            && opened[0].message.contains("bucket 0@0")
            && opened[0].message.contains("bucket 1@0"),
        "{}",
        opened[0].message
    );
    assert!(
        mine.iter()
            .any(|l| l.level == Level::Info && l.message.contains("batch handed over messages=")),
        "verbose_logging puts batch lines at INFO: {mine:?}"
    );
    assert!(
        mine.iter()
            .any(|l| l.message.contains("closed after 20 acknowledged messages"))
    );
    assert!(mine.iter().all(|l| l.level != Level::Error));
}
