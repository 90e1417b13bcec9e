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

//! A replicated cluster's bucket leader paused rather than killed: on three tablet servers
//! with replication factor 3, the leader of bucket 0 of the log table is paused (SIGSTOP) for
//! 60 s, past its ZooKeeper session (10 s), the followers' lag limit (`log.replica.max-lag-time`)
//! and every deadline of the plugin's Fluss requests (30 s), so the cluster elects another leader
//! while the paused one keeps its connections; then it resumes, a leader that is no longer one.

use std::sync::Arc;
use std::time::Duration;

use fluss_testkit::{Cluster, ClusterOptions, Server};

use super::Load;

const PRELOAD: i64 = 10_000;
const PAUSE: Duration = Duration::from_secs(60);

#[test]
fn a_paused_leader_loses_nothing() {
    let cluster = Arc::new(Cluster::start(ClusterOptions::replicated()));
    let bootstrap = cluster.bootstrap().to_owned();
    let mut load = Load::start("leader_pause", cluster.clone(), &bootstrap, PRELOAD);
    load.wait_for_snapshot_rows();
    load.catch_up("the first writes");

    let leader = cluster
        .bucket_leader(&load.log.path, None, 0)
        .expect("bucket 0 has a leader");
    load.begin(&format!(
        "tablet server {leader} (leader of bucket 0) paused {} s",
        PAUSE.as_secs()
    ));
    cluster.pause(Server::Tablet(leader));
    load.hold(PAUSE);
    cluster.resume(Server::Tablet(leader));
    load.end();
    cluster.wait_in_sync(&[&load.log.path, &load.pk.path], Duration::from_secs(120));
    load.catch_up("writes after the paused leader caught up");

    load.finish("leader_pause");
}
