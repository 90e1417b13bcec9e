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

//! The testkit against a real Fluss 0.9.1 cluster (`test = false`):
//! `cargo test -p fluss-testkit --test cluster`.

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use fluss_testkit::all_types::{all_types_columns, all_types_row, create_all_types_table};
use fluss_testkit::fluss::client::{EARLIEST_OFFSET, FlussConnection};
use fluss_testkit::fluss::config::Config;
use fluss_testkit::fluss::rpc::FlussError;
use fluss_testkit::fluss::rpc::message::OffsetSpec;
use fluss_testkit::read::{BucketRecord, read_records};
use fluss_testkit::tables::{
    create_log_table, sample_amount, sample_log_schema, sample_name, sample_row,
};
use fluss_testkit::write::append_rows;
use fluss_testkit::{Cluster, ClusterOptions, unique_table};

use fluss_testkit::fluss::row::{DataGetters, InternalRow};

const ROWS: i64 = 10_000;

/// Checks that `records` hold each sample row `0..rows` exactly once, with
/// the values [`sample_row`] wrote.
fn assert_sample_rows(records: &[BucketRecord], rows: i64) {
    let mut seen = BTreeSet::new();
    for r in records {
        let row = &r.record.row;
        let id = row.get_long(0).expect("id");
        assert!(seen.insert(id), "row {id} delivered twice");
        assert_eq!(row.get_string(1).expect("name"), sample_name(id));
        assert_eq!(row.get_double(2).expect("amount"), sample_amount(id));
    }
    assert_eq!(seen.len() as i64, rows, "distinct rows read");
    assert_eq!(seen.first(), Some(&0));
    assert_eq!(seen.last(), Some(&(rows - 1)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smoke_writes_and_reads_10k_rows_on_three_buckets() {
    let cluster = Cluster::shared();
    let (connection, admin) = cluster.admin().await;
    let path = unique_table("smoke");
    let info = create_log_table(&admin, &path, sample_log_schema(), 3).await;
    assert_eq!(info.get_num_buckets(), 3);

    let written = append_rows(&connection, &path, (0..ROWS).map(sample_row)).await;
    assert_eq!(written as i64, ROWS);

    let records = read_records(&connection, &path, ROWS as usize, Duration::from_secs(60)).await;
    assert_eq!(records.len() as i64, ROWS, "records read");
    let buckets: BTreeSet<i32> = records.iter().map(|r| r.bucket).collect();
    assert_eq!(
        buckets,
        BTreeSet::from([0, 1, 2]),
        "rows spread over all buckets"
    );
    assert_sample_rows(&records, ROWS);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_type_table_round_trips_through_fluss() {
    let cluster = Cluster::shared();
    let (connection, admin) = cluster.admin().await;
    let path = unique_table("all_types");
    create_all_types_table(&admin, &path, 1).await;
    append_rows(&connection, &path, (0..8).map(all_types_row)).await;
    let records = read_records(&connection, &path, 8, Duration::from_secs(60)).await;
    assert_eq!(records.len(), 8);
    let width = all_types_columns().len();
    for r in &records {
        let row = &r.record.row;
        assert_eq!(row.get_field_count(), width);
        let id = row.get_long(0).expect("id");
        // Kind 3 rows are NULL everywhere but the id.
        assert_eq!(
            row.is_null_at(1).expect("null check"),
            id % 4 == 3,
            "row {id}"
        );
    }
}

/// Reads a 2-bucket table while tablet server 0 (leader of one bucket) is
/// stopped and started again: the read must finish with every row once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_survives_a_tablet_server_restart() {
    let cluster = Cluster::start(ClusterOptions {
        tablets: 2,
        ..ClusterOptions::default()
    });
    let (connection, admin) = cluster.admin().await;
    let path = unique_table("tablet_restart");
    create_log_table(&admin, &path, sample_log_schema(), 2).await;
    append_rows(&connection, &path, (0..ROWS).map(sample_row)).await;

    // Small fetches so the read is really in the middle when the server stops.
    let reader = FlussConnection::new(Config {
        scanner_log_fetch_max_bytes_for_bucket: 16 * 1024,
        scanner_log_fetch_max_bytes: 32 * 1024,
        scanner_log_max_poll_records: 200,
        ..cluster.config()
    })
    .await
    .expect("reader connection");
    let table = reader.get_table(&path).await.expect("table");
    let scanner = table.new_scan().create_log_scanner().expect("scanner");
    scanner
        .subscribe_buckets(&HashMap::from([(0, EARLIEST_OFFSET), (1, EARLIEST_OFFSET)]))
        .await
        .expect("subscribe");

    let mut records = Vec::new();
    let mut restarted = false;
    let deadline = Instant::now() + Duration::from_secs(180);
    while (records.len() as i64) < ROWS {
        assert!(
            Instant::now() < deadline,
            "read {} of {ROWS} rows; cluster status:\n{}\n{}",
            records.len(),
            cluster.status(),
            cluster.logs()
        );
        let polled = scanner
            .poll(Duration::from_millis(500))
            .await
            .expect("poll");
        for (bucket, rs) in polled.into_records_by_buckets() {
            records.extend(rs.into_iter().map(|record| BucketRecord {
                bucket: bucket.bucket_id(),
                record,
            }));
        }
        if !restarted && records.len() >= 1_000 {
            let stopped_at = records.len();
            let started = Instant::now();
            tokio::task::block_in_place(|| cluster.stop_tablet(0));
            let stop_took = started.elapsed();
            // Keep polling while it is down: the scanner must not fail.
            for _ in 0..4 {
                let polled = scanner
                    .poll(Duration::from_millis(500))
                    .await
                    .expect("poll while down");
                for (bucket, rs) in polled.into_records_by_buckets() {
                    records.extend(rs.into_iter().map(|record| BucketRecord {
                        bucket: bucket.bucket_id(),
                        record,
                    }));
                }
            }
            tokio::task::block_in_place(|| cluster.start_tablet(0));
            eprintln!(
                "tablet 0 stopped after {stopped_at} rows (stop took {stop_took:?}), \
                 {} rows read while down, back after {:?}",
                records.len() - stopped_at,
                started.elapsed()
            );
            restarted = true;
        }
    }
    assert!(restarted, "the tablet server was never restarted mid-read");
    assert_sample_rows(&records, ROWS);
}

/// A SASL listener accepts admin/admin-secret and refuses a wrong password
/// or an unknown user. Prints the exact errors fluss-rs returns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sasl_listener_checks_passwords() {
    let cluster = Cluster::start(ClusterOptions {
        sasl: true,
        ..ClusterOptions::default()
    });
    let users = cluster.sasl_users();
    assert!(
        users
            .iter()
            .any(|u| u.username == "admin" && u.password == "admin-secret")
    );
    assert!(
        users
            .iter()
            .any(|u| u.username == "alice" && u.password == "alice-secret")
    );

    for user in users {
        let connection = FlussConnection::new(cluster.sasl_config(&user.username, &user.password))
            .await
            .unwrap_or_else(|e| panic!("{} must be accepted: {e}", user.username));
        let admin = connection.get_admin().expect("admin");
        let nodes = admin
            .get_server_nodes()
            .await
            .expect("server nodes over SASL");
        assert!(!nodes.is_empty());
    }

    for (what, config) in [
        (
            "wrong password",
            cluster.sasl_config("admin", "wrong-password"),
        ),
        (
            "unknown user",
            cluster.sasl_config("mallory", "admin-secret"),
        ),
    ] {
        let error =
            match tokio::time::timeout(Duration::from_secs(30), FlussConnection::new(config)).await
            {
                Ok(Ok(_)) => panic!("{what}: connection must be refused"),
                Ok(Err(error)) => error,
                Err(_) => panic!("{what}: connecting hangs instead of failing"),
            };
        eprintln!(
            "SASL {what}: Display = {error}\nSASL {what}: Debug = {error:?}\n\
             SASL {what}: api_error = {:?}, is_retriable = {}",
            error.api_error(),
            error.is_retriable()
        );
        assert_eq!(
            error.api_error(),
            Some(FlussError::AuthenticateException),
            "{what}: {error:?}"
        );
    }

    // A plaintext client on the SASL port, and a SASL client on the plain
    // port: record what happens (no assertion on the shape beyond failing
    // or hanging, which the connector's timeouts must cover).
    let sasl_addr = cluster
        .sasl_bootstrap()
        .expect("sasl bootstrap")
        .to_string();
    let plain_on_sasl = Config {
        bootstrap_servers: sasl_addr,
        ..Config::default()
    };
    let sasl_on_plain = Config {
        bootstrap_servers: cluster.bootstrap().to_string(),
        ..cluster.sasl_config("admin", "admin-secret")
    };
    for (what, config) in [
        ("plaintext client on the SASL listener", plain_on_sasl),
        ("SASL client on the plaintext listener", sasl_on_plain),
    ] {
        match tokio::time::timeout(Duration::from_secs(20), FlussConnection::new(config)).await {
            Ok(Ok(connection)) => {
                let nodes = tokio::time::timeout(
                    Duration::from_secs(20),
                    connection.get_admin().expect("admin").get_server_nodes(),
                )
                .await;
                eprintln!("{what}: connected; get_server_nodes = {nodes:?}");
            }
            Ok(Err(error)) => eprintln!(
                "{what}: Display = {error}\n{what}: Debug = {error:?}\n{what}: api_error = {:?}, is_retriable = {}",
                error.api_error(),
                error.is_retriable()
            ),
            Err(_) => eprintln!("{what}: FlussConnection::new hangs (no answer within 20 s)"),
        }
    }
}

/// kill -9 the only tablet server, restart the coordinator, start the tablet
/// server again: old data is still there and new tables work.
///
/// With one replica, a restarted tablet server first becomes a follower and
/// truncates its log to the last high-watermark checkpoint (written every
/// 5 s by default), so rows written just before a kill -9 would be lost.
/// The checkpoint interval is shortened so the test is about recovery, not
/// about that race.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_serves_again_after_kill_and_coordinator_restart() {
    let cluster = Cluster::start(ClusterOptions {
        conf: vec![(
            "log.replica.high-watermark.checkpoint-interval".into(),
            "100ms".into(),
        )],
        ..ClusterOptions::default()
    });
    let (connection, admin) = cluster.admin().await;
    let before = unique_table("before_kill");
    create_log_table(&admin, &before, sample_log_schema(), 1).await;
    append_rows(&connection, &before, (0..100).map(sample_row)).await;
    // Let at least one checkpoint cover the rows (see the test's docs).
    tokio::time::sleep(Duration::from_millis(500)).await;
    drop(admin);
    drop(connection);

    let started = Instant::now();
    tokio::task::block_in_place(|| {
        cluster.kill_tablet(0);
        cluster.restart_coordinator();
        cluster.start_tablet(0);
    });
    eprintln!(
        "kill + coordinator restart + tablet start took {:?}",
        started.elapsed()
    );

    let (connection, admin) = cluster.admin().await;
    fluss_testkit::tables::wait_table_ready(&admin, &before, 1).await;
    let latest = admin
        .list_offsets(&before, &[0], OffsetSpec::Latest)
        .await
        .expect("latest offsets");
    let earliest = admin
        .list_offsets(&before, &[0], OffsetSpec::Earliest)
        .await
        .expect("earliest offsets");
    eprintln!("after restart: earliest {earliest:?}, latest {latest:?}");
    let records = read_records(&connection, &before, 100, Duration::from_secs(60)).await;
    assert_sample_rows(&records, 100);

    let after = unique_table("after_kill");
    create_log_table(&admin, &after, sample_log_schema(), 2).await;
    append_rows(&connection, &after, (0..500).map(sample_row)).await;
    let records = read_records(&connection, &after, 500, Duration::from_secs(60)).await;
    assert_sample_rows(&records, 500);
}

/// The primary-key and partition helpers: upsert and delete show up in the
/// changelog, partitions can be created, written, listed and dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pk_and_partition_helpers_work() {
    use fluss_testkit::fluss::record::ChangeType;
    use fluss_testkit::tables::{
        create_partition, create_partitioned_table, create_pk_table, drop_partition,
        sample_partitioned_row, sample_partitioned_schema, sample_pk_schema,
    };
    use fluss_testkit::write::{delete_rows, upsert_rows};

    let cluster = Cluster::shared();
    let (connection, admin) = cluster.admin().await;

    let pk = unique_table("pk");
    create_pk_table(&admin, &pk, sample_pk_schema(), 2).await;
    upsert_rows(&connection, &pk, (0..10).map(sample_row)).await;
    delete_rows(&connection, &pk, (0..3).map(sample_row)).await;
    let records = read_records(&connection, &pk, 13, Duration::from_secs(60)).await;
    let inserts = records
        .iter()
        .filter(|r| *r.record.change_type() == ChangeType::Insert)
        .count();
    let deletes = records
        .iter()
        .filter(|r| *r.record.change_type() == ChangeType::Delete)
        .count();
    assert_eq!(
        (inserts, deletes),
        (10, 3),
        "changelog of {pk}: {records:?}"
    );

    let partitioned = unique_table("partitioned");
    let info = create_partitioned_table(
        &admin,
        &partitioned,
        sample_partitioned_schema(false),
        "region",
        2,
    )
    .await;
    assert!(info.is_partitioned());
    let eu = create_partition(&admin, &partitioned, "region", "eu").await;
    let us = create_partition(&admin, &partitioned, "region", "us").await;
    assert_ne!(eu.get_partition_id(), us.get_partition_id());
    append_rows(
        &connection,
        &partitioned,
        (0..20).map(|id| sample_partitioned_row(id, if id % 2 == 0 { "eu" } else { "us" })),
    )
    .await;
    let offsets = admin
        .list_partition_offsets(&partitioned, "eu", &[0, 1], OffsetSpec::Latest)
        .await
        .expect("eu offsets");
    assert_eq!(offsets.values().sum::<i64>(), 10, "rows in partition eu");
    drop_partition(&admin, &partitioned, "region", "eu").await;
    let left: Vec<String> = admin
        .list_partition_infos(&partitioned)
        .await
        .expect("partitions")
        .iter()
        .map(|p| p.get_partition_name())
        .collect();
    assert_eq!(left, vec!["us".to_string()]);
}

/// `scripts/NAME` of this repository with `args`: (success, stderr).
fn script(name: &str, args: &[&std::ffi::OsStr]) -> (bool, String) {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the repository");
    let output = std::process::Command::new(repo.join("scripts").join(name))
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("run scripts/{name}: {e}"));
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// What the scripts refuse before they start anything: a coordinator port that is taken or no
/// port, a local Fluss in a directory that is in use, `stop` of a directory that is no local
/// Fluss (its files are left alone); `stop` of a directory that is gone is no error.
#[test]
fn the_cluster_scripts_refuse_taken_ports_and_used_directories() {
    let scratch = std::env::temp_dir().join(format!("fluss-refusals-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).expect("scratch dir");
    let cluster = scratch.join("cluster");

    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let port = taken.local_addr().expect("its address").port().to_string();
    let (ok, stderr) = script(
        "fluss-cluster.sh",
        &[
            "start".as_ref(),
            cluster.as_os_str(),
            "--coordinator-port".as_ref(),
            port.as_ref(),
        ],
    );
    assert!(
        !ok && stderr.contains(&format!("127.0.0.1:{port} is in use")),
        "{stderr}"
    );
    assert!(
        !cluster.exists(),
        "nothing was started in {}",
        cluster.display()
    );
    let (ok, stderr) = script(
        "fluss-cluster.sh",
        &[
            "start".as_ref(),
            cluster.as_os_str(),
            "--coordinator-port".as_ref(),
            "90x".as_ref(),
        ],
    );
    assert!(!ok && stderr.contains("must be a port number"), "{stderr}");

    let used = scratch.join("used");
    std::fs::create_dir_all(&used).expect("a directory in use");
    std::fs::write(used.join("keep"), "data").expect("a file in it");
    let (ok, stderr) = script("local-fluss.sh", &["start".as_ref(), used.as_os_str()]);
    assert!(!ok && stderr.contains("is not empty"), "{stderr}");
    let (ok, stderr) = script("local-fluss.sh", &["stop".as_ref(), used.as_os_str()]);
    assert!(
        !ok && stderr.contains("is not a local Fluss directory"),
        "{stderr}"
    );
    assert!(used.join("keep").exists(), "stop left the directory alone");
    let gone = scratch.join("gone");
    let (ok, stderr) = script("local-fluss.sh", &["stop".as_ref(), gone.as_os_str()]);
    assert!(ok && stderr.contains("nothing to stop"), "{stderr}");
    let (ok, stderr) = script("local-fluss.sh", &["start".as_ref()]);
    assert!(
        !ok && stderr.contains("local-fluss.sh start DIR"),
        "{stderr}"
    );
    drop(taken);
    let _ = std::fs::remove_dir_all(&scratch);
}
