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

//! Faults of single servers beyond a stop or a restart: a server paused (SIGSTOP: a GC pause
//! or a hung JVM keeps its connections and answers nothing) and resumed, ZooKeeper or the
//! coordinator killed with -9 and started again; and the fault proxy of a proxied cluster
//! (`ClusterOptions::proxied`), which sits between its clients and every server.
//!
//! A proxied cluster's servers advertise a listener of their own at the port of a Toxiproxy
//! proxy in front of it (`scripts/fluss-cluster.sh start --proxied`); Fluss answers a client's
//! metadata request with the addresses of the listener the client came in on, so a client that
//! bootstraps at [`Cluster::proxied_bootstrap`] reaches the coordinator and every tablet server
//! through the proxy, while the servers, and clients of [`Cluster::bootstrap`], talk directly.

use std::time::Instant;

use fluss::ServerType;

use super::{Cluster, READY_TIMEOUT, connect_admin, read_trimmed};
use crate::runtime::on_own_runtime;
use crate::toxiproxy::Toxiproxy;

/// One server process of a cluster started by the testkit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Server {
    /// The ZooKeeper server.
    ZooKeeper,
    /// The coordinator.
    Coordinator,
    /// Tablet server `i` (its `tablet-server.id`).
    Tablet(usize),
}

impl Server {
    /// The script's name of the server: `zookeeper`, `coordinator`, `tablet-I`.
    pub fn name(self) -> String {
        match self {
            Server::ZooKeeper => "zookeeper".to_owned(),
            Server::Coordinator => "coordinator".to_owned(),
            Server::Tablet(i) => format!("tablet-{i}"),
        }
    }
}

impl Cluster {
    /// Pauses `server` with SIGSTOP: its process stays, with its sockets open, and answers
    /// nothing until [`Self::resume`]. A cluster stopped meanwhile resumes it first.
    pub fn pause(&self, server: Server) {
        self.control(&["pause", &server.name()]);
    }

    /// Resumes a server paused by [`Self::pause`] (SIGCONT).
    pub fn resume(&self, server: Server) {
        self.control(&["resume", &server.name()]);
    }

    /// Kills `server` with SIGKILL and leaves it down: start it again with
    /// [`Self::start_zookeeper`], [`Self::start_coordinator`] or [`Self::start_tablet`].
    pub fn kill(&self, server: Server) {
        self.control(&["kill", &server.name()]);
    }

    /// Starts ZooKeeper again after [`Self::kill`], on its port and data directory, and waits
    /// until its port accepts connections (the servers reconnect by themselves).
    pub fn start_zookeeper(&self) {
        self.control(&["start-zookeeper"]);
    }

    /// `host:port` of the coordinator's listener behind the fault proxy; panics unless the
    /// cluster was started with `ClusterOptions::proxied`.
    pub fn proxied_bootstrap(&self) -> String {
        let dir = self.local_dir("proxied_bootstrap");
        read_trimmed(&dir.join("proxied-bootstrap")).unwrap_or_else(|| {
            panic!("this cluster has no proxied listener; start it with ClusterOptions {{ proxied: true, .. }}")
        })
    }

    /// The fault proxy between clients of [`Self::proxied_bootstrap`] and every server (one
    /// Toxiproxy proxy per server, named by [`Server::name`]).
    pub fn network(&self) -> &Toxiproxy {
        self.local
            .as_ref()
            .and_then(|local| local.proxy.as_ref())
            .unwrap_or_else(|| {
                panic!("this cluster has no fault proxy; start it with ClusterOptions {{ proxied: true, .. }}")
            })
    }

    /// Starts the fault proxy with one proxy per line of the script's `proxies` file, then
    /// checks the path through it: a client bootstrapping there lists `tablets` tablet servers,
    /// each at a proxy's address.
    pub(super) fn start_proxy(&mut self, tablets: usize) -> Result<(), String> {
        let dir = self.local_dir("start_proxy").to_owned();
        let lines = read_trimmed(&dir.join("proxies"))
            .ok_or_else(|| format!("no proxies file in {}", dir.display()))?;
        let mut proxy = Toxiproxy::start(&dir.join("log"));
        let mut listens = Vec::new();
        for line in lines.lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let [name, listen, upstream] = fields[..] else {
                return Err(format!(
                    "malformed line in {}/proxies: {line:?}",
                    dir.display()
                ));
            };
            proxy.add_proxy(name, listen, upstream);
            listens.push(listen.to_owned());
        }
        if let Some(local) = &mut self.local {
            local.proxy = Some(proxy);
        }
        let mut config = self.config();
        config.bootstrap_servers = self.proxied_bootstrap();
        on_own_runtime(async move {
            let deadline = Instant::now() + READY_TIMEOUT;
            let admin = connect_admin(&config, deadline).await?;
            super::retry("tablet servers behind the proxy", deadline, || async {
                let nodes = admin.get_server_nodes().await.map_err(|e| e.to_string())?;
                let addresses: Vec<String> = nodes
                    .iter()
                    .filter(|n| *n.server_type() == ServerType::TabletServer)
                    .map(|n| format!("{}:{}", n.host(), n.port()))
                    .collect();
                if addresses.len() >= tablets && addresses.iter().all(|a| listens.contains(a)) {
                    Ok(())
                } else {
                    Err(format!(
                        "tablet servers at {addresses:?}, proxies listen on {listens:?}"
                    ))
                }
            })
            .await
        })
    }
}
