//! Primary-key tables as change events: applying the delivered events in order per key must
//! reproduce the table, checked against a lookup of every key.

use std::collections::BTreeMap;
use std::time::Duration;

use fluss_testkit::fluss::client::FlussConnection;
use fluss_testkit::fluss::metadata::{DataTypes, Schema, TableDescriptor, TablePath};
use fluss_testkit::fluss::row::{DataGetters, GenericRow};
use fluss_testkit::{tables, unique_table};
use serde_json::{json, Value};

use crate::fixture::{cluster, config, rt, Answer, Received, Stream};

const IDLE: Duration = Duration::from_secs(8);
const KEYS: i64 = 1000;

/// The table as a map from key (id, region) to (name, amount).
type TableState = BTreeMap<(i64, String), (String, f64)>;

/// A deterministic mix of inserts, updates (some keys many times) and deletes.
#[derive(Debug, Clone)]
enum Op {
    Upsert(i64, String, f64),
    Delete(i64),
}

fn script(ops: usize, seed: u64) -> Vec<Op> {
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
                (next() % KEYS as u64) as i64
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
fn script_state(ops: &[Op], region: &str) -> TableState {
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

fn row(id: i64, name: &str, amount: f64, region: Option<&str>) -> GenericRow<'static> {
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
async fn apply_script(conn: &FlussConnection, path: &TablePath, ops: &[Op], region: Option<&str>) {
    let table = conn.get_table(path).await.expect("get_table");
    let writer = table
        .new_upsert()
        .and_then(|u| u.create_writer())
        .expect("upsert writer");
    for op in ops {
        let result = match op {
            Op::Upsert(id, name, amount) => writer.upsert(&row(*id, name, *amount, region)),
            Op::Delete(id) => writer.delete(&row(*id, "", 0.0, region)),
        };
        drop(result.expect("write accepted"));
    }
    tokio::time::timeout(Duration::from_secs(120), writer.flush())
        .await
        .expect("flush in time")
        .expect("flush");
}

/// Looks every key up in the table (on its own connection: the default lookup batching waits
/// 100 ms per lookup, and these are sequential).
async fn lookup_all(path: &TablePath, regions: &[Option<&str>]) -> TableState {
    let mut config = cluster().config();
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
        for id in 0..KEYS {
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

/// Applies Debezium or flat events in delivery order.
fn replay(events: &[Received]) -> TableState {
    let mut state = TableState::new();
    for event in events {
        let p = &event.payload;
        let (op, image) = if let Some(op) = p.get("__op") {
            (op.as_str().unwrap(), p)
        } else {
            let op = p["op"].as_str().unwrap();
            (op, if op == "d" { &p["before"] } else { &p["after"] })
        };
        match op {
            "c" | "u" => {
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
    let ops = script(10_000, 7);
    rt().block_on(apply_script(&conn, &path, &ops, None));
    let expected = rt().block_on(lookup_all(&path, &[None]));
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
        s.read(usize::MAX, IDLE, Answer::AckAll);
        assert_eq!(
            replay(&s.acked),
            expected,
            "{format} events replay to the table"
        );
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
    let ops = script(10_000, 11);
    rt().block_on(apply_script(&conn, &path, &ops, None));
    let expected = rt().block_on(lookup_all(&path, &[None]));
    let cfg = config(path.table(), json!({"batch_size": 300}));
    let mut first = Stream::open(&cfg, None).expect("open");
    first.read(3000, IDLE, Answer::NackEvery(3));
    let mut events = first.acked.clone();
    let state = first.close();
    let mut second = Stream::open(&cfg, state).expect("reopen");
    second.read(usize::MAX, IDLE, Answer::NackEvery(3));
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
    let ops = script(2_000, 3);
    rt().block_on(apply_script(&conn, &path, &ops, None));
    let expected = rt().block_on(lookup_all(&path, &[None]));
    let mut s = Stream::open(&config(path.table(), json!({})), None).expect("open");
    s.read(usize::MAX, IDLE, Answer::AckAll);
    assert_eq!(replay(&s.acked), expected);
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
        apply_script(&conn, &path, &script(2_000, 5), Some("eu")).await;
        apply_script(&conn, &path, &script(2_000, 6), Some("us")).await;
    });
    let expected = rt().block_on(lookup_all(&path, &[Some("eu"), Some("us")]));
    let mut s = Stream::open(
        &config(path.table(), json!({"changelog_format": "flat"})),
        None,
    )
    .expect("open");
    s.read(usize::MAX, IDLE, Answer::AckAll);
    assert_eq!(replay(&s.acked), expected);
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
    s.read(usize::MAX, Duration::from_secs(4), Answer::AckAll);
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
    s.read(usize::MAX, Duration::from_secs(4), Answer::AckAll);
    let ops: Vec<&str> = s
        .acked
        .iter()
        .map(|m| m.payload["op"].as_str().unwrap())
        .collect();
    assert_eq!(ops.iter().filter(|o| **o == "u").count(), 1, "{ops:?}");
}
