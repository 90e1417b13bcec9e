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

//! Toxiproxy, a real TCP fault proxy (Shopify's, built from source by `scripts/toxiproxy.sh`),
//! for network faults between the plugin and Fluss: added latency, a bandwidth cap, a stall
//! that keeps connections open and answers nothing, connections reset mid-transfer.
//!
//! The server and every proxy listen on 127.0.0.1; the server is stopped by its process id when
//! the handle is dropped (and by a watchdog when the test process dies). Its HTTP API is spoken
//! over a plain TCP stream, one request per connection.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::iggy::Program;

/// A fresh server answers within a second; the rest covers a loaded 2-core machine.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest wait for one API answer.
const API_TIMEOUT: Duration = Duration::from_secs(10);

/// Which direction of a proxied connection a toxic acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// From the server to the client (answers: fetched records, metadata).
    Downstream,
    /// From the client to the server (requests).
    Upstream,
}

impl Direction {
    fn as_str(self) -> &'static str {
        match self {
            Direction::Downstream => "downstream",
            Direction::Upstream => "upstream",
        }
    }
}

/// One toxic: a named fault of one kind, on one direction of every connection of a proxy.
#[derive(Debug, Clone)]
pub struct Toxic {
    /// Its name, unique per proxy (a direction suffix is added: `<name>_down`, `<name>_up`).
    pub name: String,
    /// Toxiproxy's type: `latency`, `bandwidth`, `timeout`, `reset_peer`, …
    pub kind: &'static str,
    /// The direction it acts on.
    pub direction: Direction,
    /// Its attributes, as Toxiproxy's API names them.
    pub attributes: Value,
}

impl Toxic {
    fn new(name: &str, kind: &'static str, direction: Direction, attributes: Value) -> Self {
        let suffix = match direction {
            Direction::Downstream => "down",
            Direction::Upstream => "up",
        };
        Self {
            name: format!("{name}_{suffix}"),
            kind,
            direction,
            attributes,
        }
    }

    /// Delays every chunk of data by `latency` (± `jitter`).
    pub fn latency(direction: Direction, latency: Duration, jitter: Duration) -> Self {
        Self::new(
            "latency",
            "latency",
            direction,
            json!({ "latency": latency.as_millis() as u64, "jitter": jitter.as_millis() as u64 }),
        )
    }

    /// Caps the rate at `kib_per_second` KiB/s.
    pub fn bandwidth(direction: Direction, kib_per_second: u64) -> Self {
        Self::new(
            "bandwidth",
            "bandwidth",
            direction,
            json!({ "rate": kib_per_second }),
        )
    }

    /// Lets no data through and never closes the connection (Toxiproxy's `timeout` toxic with
    /// a timeout of 0): new connections are accepted and then hear nothing, as from a host
    /// whose network stopped answering, until the toxic is removed.
    pub fn stall(direction: Direction) -> Self {
        Self::new("stall", "timeout", direction, json!({ "timeout": 0 }))
    }

    /// Resets every connection (TCP RST) `after` it carried data again, or at once with
    /// `Duration::ZERO`; connections made while the toxic is in place are reset too.
    pub fn reset_peer(direction: Direction, after: Duration) -> Self {
        Self::new(
            "reset_peer",
            "reset_peer",
            direction,
            json!({ "timeout": after.as_millis() as u64 }),
        )
    }
}

/// A running Toxiproxy server and the proxies it was asked to create.
pub struct Toxiproxy {
    api: String,
    proxies: Vec<String>,
    log: PathBuf,
    /// Killed by pid when dropped.
    _server: Program,
}

impl Toxiproxy {
    /// Starts a server with its API on a free port of 127.0.0.1 and its output in
    /// `dir/toxiproxy.log`, and waits until the API answers. The binary comes from
    /// `scripts/toxiproxy.sh`, which builds it once (Go); a failure there fails the test with
    /// the script's words.
    pub fn start(dir: &Path) -> Toxiproxy {
        std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
        let binary = binary();
        let port = crate::metrics::free_port();
        let log = dir.join("toxiproxy.log");
        // The seed of the toxics' random choices (jitter, toxicity): from TOXIPROXY_SEED when
        // set, else from the clock, and printed, so a run can be replayed.
        let seed = crate::seed::Rng::from_env("TOXIPROXY_SEED").bits();
        let mut command = Command::new(&binary);
        command
            .args(["-host", "127.0.0.1", "-port", &port.to_string()])
            .args(["-seed", &seed.to_string()]);
        let server = Program::start("toxiproxy-server", command, &log);
        let proxy = Toxiproxy {
            api: format!("127.0.0.1:{port}"),
            proxies: Vec::new(),
            log,
            _server: server,
        };
        let started = Instant::now();
        loop {
            match proxy.request("GET", "/version", None) {
                Ok((200, _)) => break,
                result if started.elapsed() > START_TIMEOUT => panic!(
                    "toxiproxy-server ({}) does not answer on {} after {START_TIMEOUT:?}: {result:?}\n{}",
                    binary.display(),
                    proxy.api,
                    proxy.log_text()
                ),
                _ => std::thread::sleep(Duration::from_millis(100)),
            }
        }
        proxy
    }

    /// Creates proxy `name`, listening on `listen` (`127.0.0.1:port`) and forwarding to
    /// `upstream`.
    pub fn add_proxy(&mut self, name: &str, listen: &str, upstream: &str) {
        self.expect(
            "POST",
            "/proxies",
            Some(json!({ "name": name, "listen": listen, "upstream": upstream, "enabled": true })),
            201,
        );
        self.proxies.push(name.to_owned());
    }

    /// The names of the proxies, in creation order.
    pub fn proxies(&self) -> &[String] {
        &self.proxies
    }

    /// Adds `toxic` to every proxy (every connection, open or new, of each).
    pub fn add_everywhere(&self, toxic: &Toxic) {
        for proxy in &self.proxies {
            self.add(proxy, toxic);
        }
    }

    /// Adds `toxic` to proxy `proxy`.
    pub fn add(&self, proxy: &str, toxic: &Toxic) {
        self.expect(
            "POST",
            &format!("/proxies/{proxy}/toxics"),
            Some(json!({
                "name": toxic.name,
                "type": toxic.kind,
                "stream": toxic.direction.as_str(),
                "toxicity": 1.0,
                "attributes": toxic.attributes,
            })),
            200,
        );
    }

    /// Removes the toxic named `name` (as [`Toxic::name`] has it) from every proxy.
    pub fn remove_everywhere(&self, name: &str) {
        for proxy in &self.proxies {
            self.expect(
                "DELETE",
                &format!("/proxies/{proxy}/toxics/{name}"),
                None,
                204,
            );
        }
    }

    /// The server's output so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Sends a request and panics unless the answer has status `status`.
    fn expect(&self, method: &str, path: &str, body: Option<Value>, status: u16) -> String {
        match self.request(method, path, body.as_ref()) {
            Ok((got, text)) if got == status => text,
            result => panic!(
                "toxiproxy {method} {path} {body:?}: expected status {status}, got {result:?}\n{}",
                self.log_text()
            ),
        }
    }

    /// One HTTP/1.1 request on a connection of its own; the status and the body.
    fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> Result<(u16, String), String> {
        let body = body.map(Value::to_string).unwrap_or_default();
        let mut stream =
            TcpStream::connect(&self.api).map_err(|e| format!("connect {}: {e}", self.api))?;
        stream
            .set_read_timeout(Some(API_TIMEOUT))
            .and_then(|()| stream.set_write_timeout(Some(API_TIMEOUT)))
            .map_err(|e| e.to_string())?;
        write!(
            stream,
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.api,
            body.len()
        )
        .map_err(|e| format!("send {method} {path}: {e}"))?;
        let mut answer = String::new();
        stream
            .read_to_string(&mut answer)
            .map_err(|e| format!("read the answer to {method} {path}: {e}"))?;
        let (head, text) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
        let status = head
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("no HTTP status in {head:?}"))?;
        Ok((status, text.to_owned()))
    }
}

impl std::fmt::Debug for Toxiproxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Toxiproxy")
            .field("api", &self.api)
            .field("proxies", &self.proxies)
            .finish_non_exhaustive()
    }
}

/// The server binary, built on first use by `scripts/toxiproxy.sh`.
fn binary() -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("scripts")
        .join("toxiproxy.sh");
    let output = Command::new("bash")
        .arg(&script)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    assert!(
        output.status.success(),
        "{} failed ({}): {}",
        script.display(),
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    PathBuf::from(String::from_utf8_lossy(&output.stdout).trim())
}
