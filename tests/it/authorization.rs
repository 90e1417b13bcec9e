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

//! Fluss ACLs on a dedicated SASL cluster with the authorizer on (`authorizer.enabled`,
//! `super.users: User:admin`): a user without READ on the table cannot open it; READ revoked
//! while streaming stops the stream without losing its state, and granting it back resumes
//! it. Tables and ACLs are managed over the plaintext listener, which is the cluster's
//! internal one and so is not checked by the authorizer.

use std::time::{Duration, Instant};

use fluss_source_runner::{Level, logs};
use fluss_testkit::fluss::client::FlussAdmin;
use fluss_testkit::fluss::metadata::{
    AclFilter, AclInfo, OperationType, PermissionType, ResourceType, TablePath,
};
use fluss_testkit::{Cluster, ClusterOptions, tables, unique_table};
use serde_json::{Value, json};

use crate::fixture::{Answer, Stream, error_lines, harness, ids, open_refused, rt};

fn sasl_cluster() -> Cluster {
    Cluster::start(ClusterOptions {
        sasl: true,
        conf: vec![
            ("authorizer.enabled".into(), "true".into()),
            ("super.users".into(), "User:admin".into()),
        ],
        ..ClusterOptions::default()
    })
}

/// A plugin config reading `table` as alice over the SASL listener.
fn alice_config(cluster: &Cluster, table: &str) -> Value {
    let alice = cluster
        .sasl_users()
        .iter()
        .find(|u| u.username == "alice")
        .expect("alice")
        .clone();
    json!({
        "bootstrap_servers": cluster.sasl_bootstrap().expect("SASL listener"),
        "database": tables::TEST_DATABASE,
        "table": table,
        "poll_interval": "200ms",
        "connect_timeout": "20s",
        "batch_size": 100,
        "sasl_username": alice.username,
        "sasl_password": alice.password,
    })
}

fn acl(path: &TablePath, operation: OperationType) -> AclInfo {
    AclInfo {
        resource_name: format!("{}.{}", path.database(), path.table()),
        resource_type: ResourceType::Table,
        principal_name: "alice".into(),
        principal_type: "User".into(),
        host: "*".into(),
        operation_type: operation,
        permission_type: PermissionType::Allow,
    }
}

async fn grant(admin: &FlussAdmin, path: &TablePath) {
    let results = admin
        .create_acls(vec![acl(path, OperationType::Read)])
        .await
        .expect("create_acls");
    // fluss-rs fills `error` from the response even when its code is 0 (none).
    assert!(
        results
            .iter()
            .all(|r| r.error.as_ref().is_none_or(|e| e.code == 0)),
        "create_acls: {results:?}"
    );
}

async fn revoke(admin: &FlussAdmin, path: &TablePath) {
    let a = acl(path, OperationType::Read);
    admin
        .drop_acls(vec![AclFilter {
            resource_name: Some(a.resource_name),
            resource_type: a.resource_type,
            principal_name: Some(a.principal_name),
            principal_type: Some(a.principal_type),
            host: Some(a.host),
            operation_type: a.operation_type,
            permission_type: a.permission_type,
        }])
        .await
        .expect("drop_acls");
}

/// The ERROR lines whose text contains `needle`, after log index `since`.
#[test]
fn acls_decide_open_and_streaming() {
    let cluster = sasl_cluster();
    let path = unique_table("acl");
    let table = path.table().to_owned();
    let conn = rt().block_on(cluster.connection());
    let admin = conn.get_admin().expect("admin");
    rt().block_on(async {
        tables::create_log_table(&admin, &path, tables::sample_log_schema(), 1).await;
        fluss_testkit::write::append_rows(&conn, &path, (0..500).map(tables::sample_row)).await;
    });
    let cfg = alice_config(&cluster, &table);

    // 1. alice has no ACL on the table: open fails with one ERROR line.
    let (id, lines) = open_refused(&cfg.to_string(), None);
    eprintln!("authorization: open without READ: ERROR lines {lines:#?}");
    // It names the user, the table, the permission the server checked (DESCRIBE, which READ
    // implies) and how to grant it.
    let db = tables::TEST_DATABASE;
    assert_eq!(
        lines,
        vec![format!(
            "fluss[{id} {db}.{table}]: open failed: user alice may not read table {db}.{table}: Fluss get_table_info failed: Principal FlussPrincipal{{name='alice', type='User'}} have no authorization to operate DESCRIBE on resource Resource{{type=TABLE, name='{db}.{table}'}} (error code 48); grant READ on TABLE {db}.{table} to User:alice (a Fluss ACL), or set `sasl_username` to a user that has it"
        )],
        "one ERROR line"
    );
    assert_eq!(
        harness().call_close(id),
        -1,
        "nothing left after the refused open"
    );

    // 2. With READ granted, the stream reads; READ revoked while streaming.
    rt().block_on(grant(&admin, &path));
    let opened = Instant::now();
    let mut s = loop {
        // The grant reaches the servers through ZooKeeper a moment later.
        match Stream::open(&cfg, None) {
            Ok(s) => break s,
            Err(code) if opened.elapsed() < Duration::from_secs(30) => {
                eprintln!("authorization: open after the grant failed ({code}), retrying");
                std::thread::sleep(Duration::from_millis(500));
            }
            Err(code) => panic!("open after granting READ failed ({code})"),
        }
    };
    s.read(500, Answer::AckAll);
    assert_eq!(ids(&s.acked), (0..500).collect::<Vec<_>>());
    let state = s.state.clone().expect("state after 500 rows");

    let since = logs().len();
    rt().block_on(revoke(&admin, &path));
    // The revoke reaches the tablet server through ZooKeeper a moment later: read on until
    // the stream reports it, before writing the rows it must not deliver yet.
    let revoked = Instant::now();
    s.read_until("the ERROR line of the revoked READ", Answer::AckAll, |_| {
        !error_lines("No permission to READ", since).is_empty()
    });
    let noticed = revoked.elapsed();
    let first = error_lines("No permission to READ", since).remove(0);
    rt().block_on(fluss_testkit::write::append_rows(
        &conn,
        &path,
        (500..600).map(tables::sample_row),
    ));
    // 20 s without READ: what the stream does and logs.
    s.read_for(Duration::from_secs(20), Answer::AckAll);
    let tag = format!("{}.{table}", tables::TEST_DATABASE);
    let during: Vec<(Level, String)> = logs()
        .into_iter()
        .skip(since)
        .filter(|l| {
            matches!(l.level, Level::Error | Level::Warn)
                && (l.message.contains(&tag) || l.message.contains("poll"))
        })
        .map(|l| (l.level, l.message))
        .collect();
    let errors = during.iter().filter(|(l, _)| *l == Level::Error).count();
    eprintln!(
        "authorization: READ revoked: noticed after {noticed:.1?}; {} rows delivered in the next 20 s, {errors} ERROR, {} WARN; first: {first}",
        s.acked.len() - 500,
        during.iter().filter(|(l, _)| *l == Level::Warn).count(),
    );
    assert_eq!(s.acked.len(), 500, "nothing delivered without READ");
    assert!(
        first.ends_with(&format!(
            "]: user alice may not read table {db}.{table}: Fluss poll failed: No permission to READ table {table} in database {db} (error code 48); grant READ on TABLE {db}.{table} to User:alice (a Fluss ACL), or set `sasl_username` to a user that has it; nothing is lost, the source keeps trying; retrying"
        )),
        "the source's own ERROR line, with the fix: {first}"
    );
    assert_eq!(
        errors, 1,
        "one ERROR for the refusal within 30 s, not one per retry: {during:#?}"
    );

    // 3. Granted back: the stream resumes from its own position, nothing lost or repeated.
    rt().block_on(grant(&admin, &path));
    let regranted = Instant::now();
    s.read(600, Answer::AckAll);
    eprintln!(
        "authorization: {} rows after granting READ back ({:.1?})",
        s.acked.len(),
        regranted.elapsed()
    );
    let acked = ids(&s.acked);
    let saved = s.close();
    assert_eq!(
        acked,
        (0..acked.len() as i64).collect::<Vec<_>>(),
        "rows in order, none lost or repeated across the revoke"
    );
    assert!(
        acked.len() >= 600,
        "the stream resumes once READ is granted back ({} of 600 rows); saved state {}",
        acked.len(),
        if saved == Some(state) {
            "unchanged"
        } else {
            "changed"
        }
    );
}
