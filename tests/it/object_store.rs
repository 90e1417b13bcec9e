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

//! Remote storage on an object store: a cluster whose `remote.data.dir` is on S3 (a local
//! moto server) uploads its KV snapshots there. The plugin reads them with the session
//! credentials Fluss hands out (the tablet servers trade their static keys for them through
//! STS), and replaying what arrives gives the table; without the store, the snapshot is
//! retried with a line naming the failure and nothing is delivered in its place. A log
//! table whose segments are tiered to the same store reads back every row in order.

use std::time::Duration;

use fluss_source_runner::{Level, logs};
use fluss_testkit::s3::S3Server;
use fluss_testkit::{Cluster, ClusterOptions, poll_until, tables, unique_table};
use serde_json::json;

use crate::fixture::{Answer, Stream, config_on, rt};
use crate::pk_script::{apply_script, lookup_all_on, replay, script};
use crate::snapshots::kv_snapshots_taken;

const KEYS: i64 = 2000;

/// A single-tablet cluster whose remote storage is `s3`'s bucket, with `extra` settings.
fn cluster_on(s3: &S3Server, extra: &[(&str, &str)]) -> Cluster {
    let mut conf = s3.cluster_conf();
    conf.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    Cluster::start(ClusterOptions {
        conf,
        ..ClusterOptions::default()
    })
}

#[test]
fn a_log_tiered_to_s3_delivers_every_row_in_order() {
    const ROWS: i64 = 3000;
    // The reads below reach S3 (see the wait for the local segment's deletion): without the
    // region they fail with `region is missing`.
    assert_eq!(
        std::env::var("AWS_REGION").as_deref(),
        Ok("us-east-1"),
        "set AWS_REGION=us-east-1 (scripts/test.sh does): fluss-rs 1.0.0 reads a log tiered to S3 \
         with the region from the environment only (README, Limitations)"
    );
    let s3 = S3Server::start("fluss");
    // Small segments, copied to remote storage every second, one kept locally.
    let cluster = cluster_on(
        &s3,
        &[
            ("log.segment.file-size", "1kb"),
            ("remote.log.task-interval-duration", "1s"),
            ("table.log.tiered.local-segments", "1"),
        ],
    );
    let path = unique_table("s3_tiered");
    let conn = rt().block_on(cluster.connection());
    rt().block_on(async {
        let admin = conn.get_admin().expect("admin");
        tables::create_log_table(&admin, &path, tables::sample_log_schema(), 1).await;
        for chunk in 0..30 {
            fluss_testkit::write::append_rows(
                &conn,
                &path,
                (chunk * 100..(chunk + 1) * 100).map(tables::sample_row),
            )
            .await;
        }
    });
    rt().block_on(poll_until(
        Duration::from_secs(60),
        Duration::from_millis(500),
        "log segments on S3",
        || async {
            let segments = s3.list("remote/log/").len();
            (segments >= 5)
                .then_some(())
                .ok_or(format!("{segments} objects under remote/log/"))
        },
    ));
    // The first rows must come from S3: wait until the tablet server deleted its local copy of
    // the first segment (else it serves them itself and S3 is never read).
    let dir = cluster.dir().expect("a local cluster").join("data");
    rt().block_on(poll_until(
        Duration::from_secs(90),
        Duration::from_millis(500),
        "the first log segment deleted locally after its upload",
        || async {
            let local = files_named(&dir, &format!("{:020}.log", 0), path.table());
            local
                .is_empty()
                .then_some(())
                .ok_or(format!("still local: {local:?}"))
        },
    ));
    let since = logs().len();
    let mut s = Stream::open(&config_on(&cluster, path.table(), json!({})), None).expect("open");
    s.read(ROWS as usize, Answer::AckAll);
    let ids: Vec<i64> = s
        .acked
        .iter()
        .map(|m| m.payload["id"].as_i64().expect("id"))
        .collect();
    s.close();
    let errors: Vec<_> = logs()
        .into_iter()
        .skip(since)
        .filter(|l| matches!(l.level, Level::Error | Level::Warn))
        .map(|l| l.message)
        .collect();
    eprintln!(
        "object_store: {} of {ROWS} rows of a log tiered to S3 read; WARN/ERROR: {errors:#?}",
        ids.len()
    );
    assert_eq!(ids, (0..ROWS).collect::<Vec<_>>(), "every row, in order");
}

/// Files named `name` under `dir` in a directory whose name starts with `table` (a table's
/// directory is its name and id).
fn files_named(dir: &std::path::Path, name: &str, table: &str) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut todo = vec![(dir.to_path_buf(), false)];
    while let Some((dir, in_table)) = todo.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            let file_name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                todo.push((path, in_table || file_name.starts_with(table)));
            } else if in_table && file_name == name {
                found.push(path);
            }
        }
    }
    found
}

#[test]
fn kv_snapshots_on_s3_are_read_with_the_credentials_fluss_hands_out() {
    let s3 = S3Server::start("fluss");
    let cluster = cluster_on(&s3, &[]);
    let path = unique_table("s3_snapshot");
    let conn = rt().block_on(cluster.connection());
    rt().block_on(async {
        let admin = conn.get_admin().expect("admin");
        tables::create_pk_table(&admin, &path, tables::sample_pk_schema(), 2).await;
        apply_script(&conn, &path, &script(4000, KEYS, 7), None).await;
    });
    kv_snapshots_taken(&conn, &path, None, 2);
    let uploaded = s3.list("remote/");
    assert!(
        uploaded.iter().any(|key| key.contains("/kv/")),
        "the KV snapshot files are on S3, got {uploaded:?}"
    );
    let config = config_on(
        &cluster,
        path.table(),
        json!({"starting_offset": "full", "batch_size": 300}),
    );

    let since = logs().len();
    let expected = rt().block_on(lookup_all_on(&cluster, &path, KEYS, &[None]));
    let mut s = Stream::open(&config, None).expect("open");
    s.read_until("rows that replay to the table", Answer::AckAll, |s| {
        replay(s.acked.iter().map(|m| &m.payload)) == expected
    });
    let acked = std::mem::take(&mut s.acked);
    s.close();
    let snapshot_rows = acked
        .iter()
        .filter(|m| m.payload.get("__op").unwrap_or(&m.payload["op"]) == "r")
        .count();
    assert_eq!(
        snapshot_rows,
        expected.len(),
        "every row of the table comes from the KV snapshots"
    );
    assert_eq!(
        replay(acked.iter().map(|m| &m.payload)),
        expected,
        "replaying the snapshot gives the table"
    );
    let errors: Vec<_> = logs()
        .into_iter()
        .skip(since)
        .filter(|l| l.level == Level::Error)
        .collect();
    assert!(errors.is_empty(), "no ERROR: {errors:#?}");

    // Without the object store the servers themselves stall on it (the coordinator does not
    // answer the lease within the call's deadline): the bucket's snapshot is retried with a
    // line naming the failure, nothing is delivered in its place, nothing panics.
    drop(s3);
    let since = logs().len();
    let mut s = Stream::open(&config, None).expect("open");
    let started = std::time::Instant::now();
    let failure = loop {
        s.read_for(Duration::from_secs(1), Answer::AckAll);
        let failure = logs().into_iter().skip(since).find(|l| {
            matches!(l.level, Level::Warn | Level::Error)
                && (l.message.contains("taking the snapshot of bucket 0 failed")
                    || l.message.contains("KV snapshot file"))
        });
        if let Some(failure) = failure {
            break failure;
        }
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "no WARN or ERROR line within 90 s without the object store"
        );
    };
    eprintln!(
        "object_store: {snapshot_rows} snapshot rows read from S3; without it: {:?} {}",
        failure.level, failure.message
    );
    assert!(s.acked.is_empty(), "nothing delivered without the snapshot");
    s.close();
}
