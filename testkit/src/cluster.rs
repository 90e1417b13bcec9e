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

//! The cluster handle: start through `scripts/fluss-cluster.sh`, wait until
//! Fluss really serves, control single servers, stop by process id.
//!
//! Starting, the readiness checks, the control of single servers and stopping work on one handle
//! and its process ids, so they stay in one file; the replicated cluster's extras are in
//! [`replicas`].

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use fluss::ServerType;
use fluss::client::{FlussAdmin, FlussConnection};
use fluss::config::{Config, NoKeyAssigner};
use fluss::metadata::{Schema, TableDescriptor, TablePath};
use fluss::rpc::message::OffsetSpec;

use crate::runtime::on_own_runtime;
use crate::tables::{TEST_DATABASE, unique_table};

mod faults;
mod replicas;

pub use faults::Server;

/// How long a fresh cluster may take until it serves. A cold start measures
/// about 8-10 s on 2 cores; the rest is headroom for a busy CI machine that
/// is compiling at the same time.
const READY_TIMEOUT: Duration = Duration::from_secs(120);
/// Upper bound for one fluss-rs call while waiting: the client has no
/// request timeout of its own, so a half-started server could block forever.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);
const RETRY_INTERVAL: Duration = Duration::from_millis(250);

/// Numbers the cluster directories of one process.
static CLUSTER_SEQ: AtomicUsize = AtomicUsize::new(0);

/// What [`Cluster::start`] starts.
#[derive(Debug, Clone)]
pub struct ClusterOptions {
    /// Number of tablet servers, ids `0..tablets`.
    pub tablets: usize,
    /// Also open a SASL/PLAIN listener (see [`Cluster::sasl_bootstrap`]).
    pub sasl: bool,
    /// Extra `server.yaml` lines for every server, e.g.
    /// `("log.segment.file-size", "1kb")`; they replace the script's defaults.
    pub conf: Vec<(String, String)>,
    /// Also open a listener on every server that clients reach through a fault proxy (see
    /// [`Cluster::proxied_bootstrap`] and [`Cluster::network`]).
    pub proxied: bool,
}

impl ClusterOptions {
    /// Three tablet servers and `default.replication.factor: 3`: every bucket has a replica
    /// on each server, so any one of them can fail (or be restarted) without losing an
    /// acknowledged write (the writer's `acks = all` waits for every in-sync replica).
    pub fn replicated() -> Self {
        Self {
            tablets: 3,
            conf: vec![("default.replication.factor".into(), "3".into())],
            ..Self::default()
        }
    }
}

impl Default for ClusterOptions {
    fn default() -> Self {
        Self {
            tablets: 1,
            sasl: false,
            conf: Vec::new(),
            proxied: false,
        }
    }
}

/// A user the SASL listener accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaslUser {
    /// Login name, e.g. `admin`.
    pub username: String,
    /// Its password, e.g. `admin-secret`.
    pub password: String,
}

/// A running Fluss cluster: one this process started (and stops on drop),
/// or an external one named by `FLUSS_BOOTSTRAP`.
#[derive(Debug)]
pub struct Cluster {
    bootstrap: String,
    sasl_bootstrap: Option<String>,
    sasl_users: Vec<SaslUser>,
    /// `None` for an external cluster: nothing to control or stop then.
    local: Option<Local>,
}

/// The parts of a cluster started by this process.
#[derive(Debug)]
struct Local {
    script: PathBuf,
    dir: PathBuf,
    tablets: usize,
    /// From the script's start until the cluster served.
    started_in: Duration,
    /// The fault proxy in front of the proxied listeners (`ClusterOptions::proxied`).
    proxy: Option<crate::toxiproxy::Toxiproxy>,
}

impl Cluster {
    /// Starts ZooKeeper, a coordinator and `options.tablets` tablet servers in
    /// a fresh temporary directory and returns once a table can be created
    /// and its buckets answer `list_offsets`.
    ///
    /// The cluster stops when the handle is dropped, and also when this
    /// process exits in any way (the script's `--owner-pid` watchdog).
    /// Blocks the calling thread (about 10 s); it may be called inside a
    /// Tokio runtime. Panics with the script output and the server logs if
    /// the cluster does not come up: tests must never skip silently.
    pub fn start(options: ClusterOptions) -> Cluster {
        // One retry: on a loaded 2-core CI machine a JVM occasionally dies
        // during start (e.g. a ZooKeeper timeout) although nothing is wrong
        // with the setup. The first failure is printed, never swallowed.
        match Self::try_start(&options) {
            Ok(cluster) => cluster,
            Err(first) => {
                eprintln!("fluss-testkit: starting a cluster failed, retrying once:\n{first}");
                Self::try_start(&options).unwrap_or_else(|second| {
                    panic!("{}could not start a Fluss cluster (2 attempts).\nfirst attempt:\n{first}\nsecond attempt:\n{second}", crate::ENVIRONMENT_FAULT)
                })
            }
        }
    }

    fn try_start(options: &ClusterOptions) -> Result<Cluster, String> {
        let started = Instant::now();
        let script = script_path();
        let dir = std::env::temp_dir().join(format!(
            "fluss-testkit-{}-{}",
            std::process::id(),
            CLUSTER_SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let mut args = vec![
            "start".to_string(),
            dir.display().to_string(),
            "--tablets".to_string(),
            options.tablets.to_string(),
            "--owner-pid".to_string(),
            std::process::id().to_string(),
        ];
        if options.sasl {
            args.push("--sasl".to_string());
        }
        if options.proxied {
            args.push("--proxied".to_string());
        }
        for (key, value) in &options.conf {
            args.push("--conf".to_string());
            args.push(format!("{key}={value}"));
        }
        let output = run_script(&script, &args);
        if !output.status.success() {
            // The script already stopped what it started and printed the
            // server logs to stderr; drop whatever is left of the directory.
            let _ = run_script(&script, &["stop".to_string(), dir.display().to_string()]);
            return Err(format!(
                "fluss-cluster.sh start failed ({}); run `{} fetch` by hand to check Java/Maven\n{}",
                output.status,
                script.display(),
                describe_output(&output)
            ));
        }
        let stdout = String::from_utf8_lossy(&output.stdout);
        let bootstrap = stdout.lines().last().unwrap_or_default().trim().to_string();
        let sasl_bootstrap = read_trimmed(&dir.join("sasl-bootstrap"));
        let sasl_users = read_trimmed(&dir.join("sasl-users"))
            .map(|text| parse_users(&text))
            .unwrap_or_default();
        let mut cluster = Cluster {
            bootstrap,
            sasl_bootstrap,
            sasl_users,
            local: Some(Local {
                script,
                dir,
                tablets: options.tablets,
                started_in: Duration::ZERO,
                proxy: None,
            }),
        };
        let serving = cluster.wait_serving(options.tablets).and_then(|()| {
            if options.proxied {
                cluster.start_proxy(options.tablets)
            } else {
                Ok(())
            }
        });
        match serving {
            Ok(()) => {
                if let Some(local) = &mut cluster.local {
                    local.started_in = started.elapsed();
                }
                // In the test output, so slow CI starts are visible.
                eprintln!(
                    "fluss-testkit: cluster at {} ({} tablet server(s){}) serves after {:.1?}",
                    cluster.bootstrap,
                    options.tablets,
                    if options.sasl { ", SASL" } else { "" },
                    started.elapsed()
                );
                Ok(cluster)
            }
            Err(reason) => {
                let logs = cluster.logs();
                drop(cluster);
                Err(format!(
                    "Fluss cluster started but does not serve: {reason}\n{logs}"
                ))
            }
        }
    }

    /// The cluster of this test binary, started on first use and stopped
    /// when the process exits (by the watchdog; statics are never dropped).
    ///
    /// With `FLUSS_BOOTSTRAP=host:port` set, that external cluster is used
    /// instead and nothing is started; control methods then panic.
    /// `FLUSS_SASL_BOOTSTRAP` may name its SASL listener (users admin and
    /// alice with the passwords the local cluster uses).
    pub fn shared() -> &'static Cluster {
        static SHARED: OnceLock<Cluster> = OnceLock::new();
        SHARED.get_or_init(|| match std::env::var("FLUSS_BOOTSTRAP") {
            Ok(bootstrap) if !bootstrap.trim().is_empty() => {
                let sasl_bootstrap = std::env::var("FLUSS_SASL_BOOTSTRAP")
                    .ok()
                    .filter(|s| !s.trim().is_empty());
                let sasl_users = if sasl_bootstrap.is_some() {
                    default_users()
                } else {
                    Vec::new()
                };
                Cluster {
                    bootstrap: bootstrap.trim().to_string(),
                    sasl_bootstrap,
                    sasl_users,
                    local: None,
                }
            }
            _ => {
                let cluster = Cluster::start(ClusterOptions::default());
                // Every test shares it: a coordinator that stops electing leaders is restarted
                // (see `tables::on_leaderless`) rather than failing the tests after it.
                crate::tables::on_leaderless(&cluster.bootstrap, || {
                    Cluster::shared().restart_coordinator()
                });
                cluster
            }
        })
    }

    /// `host:port` of the coordinator's plaintext listener.
    pub fn bootstrap(&self) -> &str {
        &self.bootstrap
    }

    /// `host:port` of the coordinator's SASL/PLAIN listener, if started with
    /// `sasl: true`.
    pub fn sasl_bootstrap(&self) -> Option<&str> {
        self.sasl_bootstrap.as_deref()
    }

    /// The users the SASL listener accepts (admin/admin-secret,
    /// alice/alice-secret); empty without SASL.
    pub fn sasl_users(&self) -> &[SaslUser] {
        &self.sasl_users
    }

    /// The cluster directory (pids, ports, logs, data), `None` if external.
    pub fn dir(&self) -> Option<&Path> {
        self.local.as_ref().map(|l| l.dir.as_path())
    }

    /// A fluss-rs config for the plaintext listener. Writers spread rows
    /// of log tables round-robin over the buckets: the default sticky
    /// assigner puts a whole batch (thousands of small rows) into one bucket,
    /// which leaves the other buckets of a test table empty.
    pub fn config(&self) -> Config {
        Config {
            bootstrap_servers: self.bootstrap.clone(),
            writer_bucket_no_key_assigner: NoKeyAssigner::RoundRobin,
            ..Config::default()
        }
    }

    /// A fluss-rs config for the SASL listener with the given credentials.
    /// Panics if the cluster has no SASL listener.
    pub fn sasl_config(&self, username: &str, password: &str) -> Config {
        let bootstrap = self.sasl_bootstrap.clone().expect(
            "this cluster has no SASL listener; start it with ClusterOptions { sasl: true, .. }",
        );
        Config {
            bootstrap_servers: bootstrap,
            writer_bucket_no_key_assigner: NoKeyAssigner::RoundRobin,
            security_protocol: "sasl".to_string(),
            security_sasl_username: username.to_string(),
            security_sasl_password: password.to_string(),
            ..Config::default()
        }
    }

    /// A new connection to the plaintext listener, retried for 30 s.
    ///
    /// A new one per call: fluss-rs spawns tasks on the runtime that creates
    /// the connection, and every `#[tokio::test]` has its own runtime.
    pub async fn connection(&self) -> FlussConnection {
        let config = self.config();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match tokio::time::timeout(CALL_TIMEOUT, FlussConnection::new(config.clone())).await {
                Ok(Ok(connection)) => return connection,
                Ok(Err(error)) if Instant::now() < deadline => drop(error),
                Ok(Err(error)) => panic!(
                    "cannot connect to Fluss at {}: {error}\n{}",
                    self.bootstrap,
                    self.logs()
                ),
                Err(_) if Instant::now() < deadline => {}
                Err(_) => panic!(
                    "connecting to Fluss at {} hangs\n{}",
                    self.bootstrap,
                    self.logs()
                ),
            }
            tokio::time::sleep(RETRY_INTERVAL).await;
        }
    }

    /// A connection and its admin client. Keep the connection alive as long
    /// as the admin is used.
    pub async fn admin(&self) -> (FlussConnection, Arc<FlussAdmin>) {
        let connection = self.connection().await;
        let admin = connection
            .get_admin()
            .expect("FlussConnection::get_admin failed");
        (connection, admin)
    }

    /// Stops tablet server `i` gracefully (SIGTERM, then SIGKILL after 20 s).
    pub fn stop_tablet(&self, i: usize) {
        self.control(&["stop-tablet", &i.to_string()]);
    }

    /// Kills tablet server `i` with SIGKILL: no shutdown, no deregistration
    /// (it stays registered until its 10 s ZooKeeper session expires).
    ///
    /// Trap: with one replica, the restarted server truncates each bucket to
    /// its last high-watermark checkpoint (every 5 s by default), so rows
    /// acknowledged less than ~5 s before the kill are gone afterwards. Set
    /// `log.replica.high-watermark.checkpoint-interval` low in
    /// [`ClusterOptions::conf`] if a test must not lose them.
    pub fn kill_tablet(&self, i: usize) {
        self.control(&["kill-tablet", &i.to_string()]);
    }

    /// Starts tablet server `i` again with its id, port and data directory,
    /// and waits until it is registered with the coordinator.
    pub fn start_tablet(&self, i: usize) {
        self.control(&["start-tablet", &i.to_string()]);
        if let Err(reason) = self.wait_registered(Some(i)) {
            panic!(
                "tablet server {i} restarted but did not register: {reason}\n{}",
                self.logs()
            );
        }
    }

    /// Stops and starts the coordinator on the same port, and waits until
    /// it serves again and knows every running tablet server.
    pub fn restart_coordinator(&self) {
        self.control(&["restart-coordinator"]);
        if let Err(reason) = self.wait_registered(None) {
            panic!(
                "coordinator restarted but the cluster does not serve: {reason}\n{}",
                self.logs()
            );
        }
    }

    /// Stops the coordinator gracefully (SIGTERM, then SIGKILL after 20 s) and
    /// leaves it down until [`Self::start_coordinator`]; ZooKeeper and the
    /// tablet servers keep running.
    ///
    /// The script has no command for this (its `restart-coordinator` stops
    /// and starts in one go), so the signal is sent from here, to the pid the
    /// script recorded, and only while the script's `status` (which checks
    /// that pid still runs a JVM of this cluster) reports it up.
    pub fn stop_coordinator(&self) {
        let dir = self.local_dir("stop_coordinator");
        if !self.coordinator_up() {
            return;
        }
        let pid_file = dir.join("pids").join("coordinator");
        let pid = read_trimmed(&pid_file).unwrap_or_else(|| {
            panic!(
                "no coordinator pid in {}\n{}",
                pid_file.display(),
                self.status()
            )
        });
        let deadline = Instant::now() + Duration::from_secs(20);
        for signal in ["-TERM", "-KILL"] {
            // `kill` fails only if the process is already gone, which is the goal.
            let _ = Command::new("kill")
                .args([signal, &pid])
                .stdin(Stdio::null())
                .output();
            let give_up = if signal == "-TERM" {
                deadline
            } else {
                Instant::now() + Duration::from_secs(5)
            };
            while Instant::now() < give_up {
                if !self.coordinator_up() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        panic!(
            "the coordinator (pid {pid}) survived SIGTERM and SIGKILL\n{}",
            self.status()
        );
    }

    /// Starts a coordinator stopped by [`Self::stop_coordinator`] on its old
    /// port and waits until it serves and knows every running tablet server.
    /// Panics if the coordinator is still up: that would be a restart, which
    /// [`Self::restart_coordinator`] does.
    pub fn start_coordinator(&self) {
        self.local_dir("start_coordinator");
        if self.coordinator_up() {
            panic!(
                "start_coordinator: the coordinator is still running; stop it first or use \
                 restart_coordinator\n{}",
                self.status()
            );
        }
        // `restart-coordinator` on a stopped coordinator only starts it (its stop step is
        // a no-op for a process that is gone) after waiting for the port to be free.
        self.control(&["restart-coordinator"]);
        if let Err(reason) = self.wait_registered(None) {
            panic!(
                "coordinator started but the cluster does not serve: {reason}\n{}",
                self.logs()
            );
        }
    }

    /// Whether the script's `status` reports the coordinator process as up.
    fn coordinator_up(&self) -> bool {
        self.status()
            .lines()
            .any(|l| l.starts_with("coordinator ") && l.ends_with(" up"))
    }

    /// The cluster directory, or a panic naming `what` for an external cluster.
    fn local_dir(&self, what: &str) -> &Path {
        self.dir().unwrap_or_else(|| {
            panic!(
                "`{what}` needs a cluster started by the testkit, but FLUSS_BOOTSTRAP={} is \
                 external",
                self.bootstrap
            )
        })
    }

    /// One line per server process: name, pid, port, up or down.
    pub fn status(&self) -> String {
        match &self.local {
            Some(local) => {
                let output = run_script(
                    &local.script,
                    &["status".to_string(), local.dir.display().to_string()],
                );
                String::from_utf8_lossy(&output.stdout).into_owned()
            }
            None => format!("external cluster at {}", self.bootstrap),
        }
    }

    /// The tail of every server log, for failure messages.
    pub fn logs(&self) -> String {
        match &self.local {
            Some(local) => {
                let output = run_script(
                    &local.script,
                    &[
                        "logs".to_string(),
                        local.dir.display().to_string(),
                        "40".to_string(),
                    ],
                );
                format!(
                    "--- Fluss server logs ({}) ---\n{}",
                    local.dir.display(),
                    String::from_utf8_lossy(&output.stdout)
                )
            }
            None => format!(
                "(external cluster at {}: no logs available)",
                self.bootstrap
            ),
        }
    }

    fn control(&self, args: &[&str]) {
        let local = self.local.as_ref().unwrap_or_else(|| {
            panic!(
                "`{}` needs a cluster started by the testkit, but FLUSS_BOOTSTRAP={} is external",
                args[0], self.bootstrap
            )
        });
        let mut full = vec![args[0].to_string(), local.dir.display().to_string()];
        full.extend(args[1..].iter().map(|a| a.to_string()));
        let output = run_script(&local.script, &full);
        if !output.status.success() {
            panic!(
                "fluss-cluster.sh {} failed ({})\n{}\n{}",
                args.join(" "),
                output.status,
                describe_output(&output),
                self.logs()
            );
        }
    }

    /// Waits until the cluster can create a table whose buckets have leaders.
    fn wait_serving(&self, tablets: usize) -> Result<(), String> {
        let config = self.config();
        let sasl = match (&self.sasl_bootstrap, self.sasl_users.first()) {
            (Some(_), Some(user)) => Some(self.sasl_config(&user.username, &user.password)),
            _ => None,
        };
        on_own_runtime(async move {
            let deadline = Instant::now() + READY_TIMEOUT;
            let admin = connect_admin(&config, deadline).await?;
            wait_tablets(&admin, tablets, None, deadline).await?;
            probe_table(&admin, tablets as i32, deadline).await?;
            if let Some(sasl) = sasl {
                let admin = connect_admin(&sasl, deadline).await?;
                wait_tablets(&admin, tablets, None, deadline).await?;
            }
            Ok(())
        })
    }

    /// Waits until the coordinator answers and lists every tablet server
    /// that runs (or tablet `only`).
    fn wait_registered(&self, only: Option<usize>) -> Result<(), String> {
        let config = self.config();
        let tablets = self.local.as_ref().map_or(1, |l| l.tablets);
        let status = self.status();
        // Tablet servers a test stopped on purpose are not waited for.
        let running = (0..tablets)
            .filter(|i| {
                status
                    .lines()
                    .any(|l| l.starts_with(&format!("tablet-{i} ")) && l.ends_with(" up"))
            })
            .count();
        on_own_runtime(async move {
            let deadline = Instant::now() + READY_TIMEOUT;
            let admin = connect_admin(&config, deadline).await?;
            wait_tablets(&admin, running, only, deadline).await
        })
    }
}

impl Drop for Cluster {
    /// Stops every server of a cluster this process started, by pid, and
    /// removes its directory (kept when `FLUSS_TESTKIT_KEEP=1`).
    fn drop(&mut self) {
        if let Some(local) = &self.local {
            let mut args = vec!["stop".to_string(), local.dir.display().to_string()];
            if std::env::var("FLUSS_TESTKIT_KEEP").is_ok_and(|v| v == "1") {
                args.push("--keep".to_string());
            }
            let output = run_script(&local.script, &args);
            if !output.status.success() {
                eprintln!(
                    "fluss-testkit: stopping the cluster in {} failed:\n{}",
                    local.dir.display(),
                    describe_output(&output)
                );
            }
        }
    }
}

/// `scripts/fluss-cluster.sh` of this repository.
fn script_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("scripts")
        .join("fluss-cluster.sh")
}

fn run_script(script: &Path, args: &[String]) -> Output {
    Command::new("bash")
        .arg(script)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()))
}

fn describe_output(output: &Output) -> String {
    format!(
        "--- script stdout ---\n{}\n--- script stderr ---\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn read_trimmed(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// `sasl-users` holds one `name password` pair per line.
fn parse_users(text: &str) -> Vec<SaslUser> {
    text.lines()
        .filter_map(|line| {
            let (username, password) = line.trim().split_once(' ')?;
            Some(SaslUser {
                username: username.to_string(),
                password: password.to_string(),
            })
        })
        .collect()
}

fn default_users() -> Vec<SaslUser> {
    parse_users("admin admin-secret\nalice alice-secret")
}

/// Retries `call` until it succeeds or `deadline` passes; the error names
/// `what` and the last failure.
async fn retry<T, F, Fut>(what: &str, deadline: Instant, mut call: F) -> Result<T, String>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, String>>,
{
    loop {
        let last = match tokio::time::timeout(CALL_TIMEOUT, call()).await {
            Ok(Ok(value)) => return Ok(value),
            Ok(Err(error)) => error,
            Err(_) => format!("no answer within {CALL_TIMEOUT:?}"),
        };
        if Instant::now() >= deadline {
            return Err(format!("{what}: {last}"));
        }
        tokio::time::sleep(RETRY_INTERVAL).await;
    }
}

async fn connect(config: &Config, deadline: Instant) -> Result<FlussConnection, String> {
    let what = format!("connect to {}", config.bootstrap_servers);
    retry(&what, deadline, || async {
        FlussConnection::new(config.clone())
            .await
            .map_err(|e| e.to_string())
    })
    .await
}

/// The admin client of a new connection to the cluster `config` names (it shares the
/// connection's RPC client, so the connection itself may go).
async fn connect_admin(config: &Config, deadline: Instant) -> Result<Arc<FlussAdmin>, String> {
    connect(config, deadline)
        .await?
        .get_admin()
        .map_err(|e| format!("get_admin ({}): {e}", config.bootstrap_servers))
}

/// Waits until `get_server_nodes` lists at least `count` tablet servers
/// (and tablet `only`, if given).
async fn wait_tablets(
    admin: &FlussAdmin,
    count: usize,
    only: Option<usize>,
    deadline: Instant,
) -> Result<(), String> {
    let what = format!("{count} tablet server(s) registered");
    retry(&what, deadline, || async {
        let nodes = admin.get_server_nodes().await.map_err(|e| e.to_string())?;
        let ids: Vec<i32> = nodes
            .iter()
            .filter(|n| *n.server_type() == ServerType::TabletServer)
            .map(|n| n.id())
            .collect();
        let wanted = only.is_none_or(|i| ids.contains(&(i as i32)));
        if ids.len() >= count && wanted {
            Ok(())
        } else {
            Err(format!("registered tablet servers: {ids:?}"))
        }
    })
    .await
}

/// Creates a table with one bucket per tablet server, waits until every
/// bucket has a leader, and drops it: proof that metadata, leader election
/// and replica creation work, not just that ports are open.
async fn probe_table(admin: &FlussAdmin, buckets: i32, deadline: Instant) -> Result<(), String> {
    let path: TablePath = unique_table("probe");
    retry("create database", deadline, || async {
        admin
            .create_database(TEST_DATABASE, None, true)
            .await
            .map_err(|e| e.to_string())
    })
    .await?;
    let schema = Schema::builder()
        .column("id", fluss::metadata::DataTypes::int())
        .build()
        .map_err(|e| e.to_string())?;
    let descriptor = TableDescriptor::builder()
        .schema(schema)
        .distributed_by(Some(buckets), Vec::new())
        .build()
        .map_err(|e| e.to_string())?;
    retry("create probe table", deadline, || async {
        admin
            .create_table(&path, &descriptor, true)
            .await
            .map_err(|e| e.to_string())
    })
    .await?;
    let ids: Vec<i32> = (0..buckets).collect();
    retry("probe table buckets get leaders", deadline, || async {
        admin
            .list_offsets(&path, &ids, OffsetSpec::Latest)
            .await
            .map(drop)
            .map_err(|e| e.to_string())
    })
    .await?;
    retry("drop probe table", deadline, || async {
        admin
            .drop_table(&path, true)
            .await
            .map_err(|e| e.to_string())
    })
    .await
}
