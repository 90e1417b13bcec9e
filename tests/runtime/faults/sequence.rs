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

//! One workload through one runtime on a single-tablet cluster whose every server the plugin
//! reaches through a fault proxy (Toxiproxy), and the faults one after another: the Iggy server
//! killed with -9 while the primary-key table is in its snapshot phase; the coordinator, the
//! tablet server and ZooKeeper each paused (SIGSTOP: alive, connections open, answering
//! nothing); the coordinator and ZooKeeper killed with -9 and started again; then the network
//! between the plugin and Fluss: 200 ms of added latency, a bandwidth cap, a stall that keeps
//! connections open and answers nothing for 60 s, connections reset mid-fetch.

use std::sync::Arc;
use std::time::Duration;

use fluss_testkit::toxiproxy::{Direction, Toxic};
use fluss_testkit::{Cluster, ClusterOptions, Server};

use super::Load;

/// Keys of the primary-key table before the runtime starts: its snapshot phase lasts a few
/// seconds, long enough to kill the Iggy server in it.
const PRELOAD: i64 = 100_000;
/// How long each pause lasts (the figures; longer than ZooKeeper's 10 s session
/// timeout, so the cluster notices the paused server gone).
const COORDINATOR_PAUSE: Duration = Duration::from_secs(20);
const TABLET_PAUSE: Duration = Duration::from_secs(20);
const ZOOKEEPER_PAUSE: Duration = Duration::from_secs(30);
/// How long the slow networks last.
const SLOW: Duration = Duration::from_secs(20);
/// The stall of the network: longer than every deadline of the plugin's Fluss requests (30 s).
const STALL: Duration = Duration::from_secs(60);
/// The bandwidth cap: below what the two writers write, so a backlog builds up.
const BANDWIDTH_KIB: u64 = 8;

#[test]
fn fluss_network_and_iggy_faults_lose_nothing() {
    let cluster = Arc::new(Cluster::start(ClusterOptions {
        proxied: true,
        ..ClusterOptions::default()
    }));
    let bootstrap = cluster.proxied_bootstrap();
    let mut load = Load::start("faults", cluster.clone(), &bootstrap, PRELOAD);

    let at_kill = load.wait_for_snapshot_rows();
    load.begin("iggy-server killed -9 in the snapshot phase and restarted");
    load.world.server.kill();
    load.world.server.restart();
    load.end();
    let after = load.snapshot_rows_after_last_fault_began();
    assert!(
        after > 0,
        "the primary-key table's snapshot phase was over before the kill ({at_kill} messages then)"
    );
    eprintln!(
        "faults: killed with {at_kill} primary-key messages in the topic, {after} snapshot rows \
         arrived after the kill"
    );

    for (server, hold) in [
        (Server::Coordinator, COORDINATOR_PAUSE),
        (Server::Tablet(0), TABLET_PAUSE),
        (Server::ZooKeeper, ZOOKEEPER_PAUSE),
    ] {
        load.begin(&format!("{} paused {} s", server.name(), hold.as_secs()));
        cluster.pause(server);
        load.hold(hold);
        cluster.resume(server);
        load.end();
    }

    load.begin("coordinator killed -9 and restarted");
    cluster.kill(Server::Coordinator);
    cluster.start_coordinator();
    load.end();

    load.begin("zookeeper killed -9 and restarted");
    cluster.kill(Server::ZooKeeper);
    cluster.start_zookeeper();
    load.end();

    let network = cluster.network();
    for (name, toxic) in [
        (
            "200 ms latency",
            Toxic::latency(
                Direction::Downstream,
                Duration::from_millis(200),
                Duration::ZERO,
            ),
        ),
        (
            "bandwidth capped",
            Toxic::bandwidth(Direction::Downstream, BANDWIDTH_KIB),
        ),
    ] {
        load.begin(&format!("{name} for {} s", SLOW.as_secs()));
        network.add_everywhere(&toxic);
        load.hold(SLOW);
        network.remove_everywhere(&toxic.name);
        load.end();
    }

    load.begin(&format!(
        "network stalled {} s (connections open, nothing answered)",
        STALL.as_secs()
    ));
    let stall = Toxic::stall(Direction::Downstream);
    network.add_everywhere(&stall);
    load.hold(STALL);
    network.remove_everywhere(&stall.name);
    load.end();

    load.begin("connections reset mid-fetch, 3 times");
    let reset = Toxic::reset_peer(Direction::Downstream, Duration::ZERO);
    for _ in 0..3 {
        network.add_everywhere(&reset);
        load.hold(Duration::from_secs(1));
        network.remove_everywhere(&reset.name);
        load.hold(Duration::from_secs(3));
    }
    load.end();

    load.finish("faults");
}
