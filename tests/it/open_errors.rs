//! `open` refuses what it cannot serve with a non-zero code, before reading anything.

use serde_json::json;

use crate::fixture::{cluster, config, rt, Answer, Stream};
use fluss_testkit::{tables, unique_table};

fn open_fails(config: serde_json::Value, state: Option<Vec<u8>>) {
    match Stream::open(&config, state) {
        Ok(_) => panic!("open should fail for {config}"),
        Err(code) => assert_ne!(code, 0),
    }
}

fn log_table(prefix: &str) -> String {
    let path = unique_table(prefix);
    rt().block_on(async {
        let conn = cluster().connection().await;
        let admin = conn.get_admin().unwrap();
        tables::create_log_table(&admin, &path, tables::sample_log_schema(), 1).await;
    });
    path.table().to_owned()
}

#[test]
fn missing_table_wrong_type_and_unknown_column_fail_open() {
    open_fails(config("no_such_table", json!({})), None);
    open_fails(
        json!({"bootstrap_servers": cluster().bootstrap(), "database": "no_such_db", "table": "t"}),
        None,
    );
    let table = log_table("open_errors");
    open_fails(config(&table, json!({"table_type": "primary_key"})), None);
    open_fails(config(&table, json!({"columns": ["id", "nope"]})), None);
    open_fails(config(&table, json!({"batch_size": "many"})), None);
    open_fails(config(&table, json!({"unknown_key": 1})), None);
    open_fails(serde_json::Value::Null, None);
    open_fails(config(&table, json!({})), Some(b"not a state".to_vec()));
    // The same config opens fine.
    Stream::open(&config(&table, json!({"table_type": "log"})), None).expect("valid config opens");
}

#[test]
fn state_of_another_table_is_refused() {
    let a = log_table("state_a");
    let b = log_table("state_b");
    rt().block_on(async {
        let conn = cluster().connection().await;
        fluss_testkit::write::append_rows(
            &conn,
            &fluss_testkit::fluss::metadata::TablePath::new(tables::TEST_DATABASE, a.clone()),
            (0..10).map(tables::sample_row),
        )
        .await;
    });
    let mut s = Stream::open(&config(&a, json!({})), None).unwrap();
    s.read(10, std::time::Duration::from_secs(15), Answer::AckAll);
    let state = s.close().expect("state");
    open_fails(config(&b, json!({})), Some(state));
}

#[test]
fn unreachable_cluster_fails_after_connect_timeout() {
    let started = std::time::Instant::now();
    open_fails(
        json!({"bootstrap_servers": "127.0.0.1:1", "database": "d", "table": "t", "connect_timeout": "2s"}),
        None,
    );
    let took = started.elapsed();
    assert!(
        took >= std::time::Duration::from_millis(1500) && took < std::time::Duration::from_secs(20),
        "open gave up after {took:?}"
    );
}
