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

//! The real Apache Iggy runtime for tests: `iggy-server`, the `iggy-connectors` runtime that
//! loads the plugin, and the `iggy` CLI that reads a topic back.
//!
//! The binaries are prebuilt (apache/iggy cc269ef) and found in `IGGY_BIN_DIR`; nothing of
//! Iggy is built or vendored here. Every server listens on 127.0.0.1 only, on a free port,
//! with a data dir of its own, and is stopped by its process id (also by a watchdog when the
//! test process dies without unwinding).
//!
//! - [`IggyServer`] starts a TCP-only server, waits until it answers, stops and restarts it on
//!   the same data dir, and reads every partition of a topic back as [`Message`]s.
//! - [`ConnectorsRuntime`] writes a runtime config and one file per [`SourceConnector`], runs
//!   `iggy-connectors` with its output in a log file, and stops it gracefully or kills it, so a
//!   test can restart it on the same state dir.
//! - [`StateSaves`] counts the runtime's writes of each connector's state file, and their sizes.
//! - [`Program`] runs another program of a test (a consumer example) the same way.
//! - [`parse_messages`] decodes Iggy's binary message format as `iggy message poll
//!   --output-file` writes it.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;

/// How to get the binaries, for every message about missing ones.
const HOW_TO: &str = "build them from apache/iggy at commit cc269ef as docs/install.md says \
    (\"The Iggy runtime\") and set IGGY_BIN_DIR to their directory, or unpack an archive of \
    them (CONTRIBUTING.md, \"The Iggy binaries\"): export IGGY_BIN_DIR=$(mktemp -d) && tar xJf ARCHIVE -C \"$IGGY_BIN_DIR\" \
    (iggy-server also needs libhwloc.so.15 and libudev.so.1: apt-get install -y libhwloc15 libudev1)";

/// The root user a fresh server creates with `--with-default-root-credentials`.
pub const USERNAME: &str = "iggy";
/// The root user's password.
pub const PASSWORD: &str = "iggy";

/// A fresh server answers within a second; the rest covers a loaded 2-core machine.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// The runtime closes every connector (each waits for its batch in flight) before it exits.
const STOP_TIMEOUT: Duration = Duration::from_secs(60);
const WAIT_INTERVAL: Duration = Duration::from_millis(200);
/// Messages asked for per `message poll`; the server answers fewer when it has fewer.
const POLL_CHUNK: u32 = 1000;
/// Size of one message's fixed header in Iggy's binary format.
pub const MESSAGE_HEADER_SIZE: usize = 64;

static FILE_SEQ: AtomicUsize = AtomicUsize::new(0);

/// The three prebuilt binaries in `IGGY_BIN_DIR`.
#[derive(Debug, Clone)]
pub struct Binaries {
    /// `iggy-server`.
    pub server: PathBuf,
    /// `iggy-connectors`.
    pub connectors: PathBuf,
    /// `iggy`, the command-line client.
    pub cli: PathBuf,
}

impl Binaries {
    /// The binaries named by `IGGY_BIN_DIR`; panics with how to get them when the variable is
    /// unset or the directory does not hold them.
    pub fn from_env() -> Binaries {
        let dir = std::env::var_os("IGGY_BIN_DIR")
            .filter(|dir| !dir.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| panic!("IGGY_BIN_DIR is not set; {HOW_TO}"));
        let binary = |name: &str| {
            let path = dir.join(name);
            assert!(
                path.is_file(),
                "{} is missing (IGGY_BIN_DIR={}); {HOW_TO}",
                path.display(),
                dir.display()
            );
            path
        };
        Binaries {
            server: binary("iggy-server"),
            connectors: binary("iggy-connectors"),
            cli: binary("iggy"),
        }
    }
}

/// How [`ConnectorsRuntime::stop`] ends the runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// SIGINT, as Ctrl-C: connectors close and the state of acknowledged batches is kept.
    Interrupt,
    /// SIGTERM, as a service manager stops it; the same graceful path as SIGINT.
    Terminate,
    /// SIGKILL: no close, no goodbye; whatever was saved before stays.
    Kill,
}

impl Stop {
    fn signal(self) -> libc::c_int {
        match self {
            Stop::Interrupt => libc::SIGINT,
            Stop::Terminate => libc::SIGTERM,
            Stop::Kill => libc::SIGKILL,
        }
    }
}

/// A child process with its output in a log file, killed by pid when dropped. A watchdog
/// kills it too if the test process dies without unwinding (statics are never dropped).
struct Process {
    name: &'static str,
    child: Child,
    watchdog: Option<Child>,
    log: PathBuf,
}

impl Process {
    fn spawn(name: &'static str, mut command: Command, log: &Path) -> Process {
        let out = OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .unwrap_or_else(|e| panic!("open {}: {e}", log.display()));
        let err = out
            .try_clone()
            .unwrap_or_else(|e| panic!("clone {}: {e}", log.display()));
        // Only the IGGY_* variables set on `command` reach Iggy: both programs read such
        // overrides, and one from the caller's shell would change the setup under test. The
        // exception is the plugin's own SDK knob `IGGY_SOURCE_POLL_AHEAD` (read inside the
        // plugin, not by Iggy), which the benchmarks set to compare against apache/iggy's SDK.
        let set: Vec<_> = command.get_envs().map(|(key, _)| key.to_owned()).collect();
        for (key, _) in std::env::vars_os() {
            let name = key.to_string_lossy();
            if name.starts_with("IGGY_") && name != "IGGY_SOURCE_POLL_AHEAD" && !set.contains(&key)
            {
                command.env_remove(&key);
            }
        }
        let child = command
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("start {name}: {e}; {HOW_TO}"));
        let watchdog = Command::new("bash")
            .arg("-c")
            .arg(format!(
                "while kill -0 {child} 2>/dev/null; do \
                   kill -0 {owner} 2>/dev/null || {{ kill -9 {child}; exit; }}; sleep 1; done",
                child = child.id(),
                owner = std::process::id()
            ))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok();
        Process {
            name,
            child,
            watchdog,
            log: log.to_owned(),
        }
    }

    fn exited(&mut self) -> Option<ExitStatus> {
        self.child
            .try_wait()
            .unwrap_or_else(|e| panic!("wait for {}: {e}", self.name))
    }

    /// Sends `stop`'s signal and waits for the exit; a process still running after
    /// [`STOP_TIMEOUT`] is killed and the test fails with its log tail.
    fn stop(mut self, stop: Stop) -> ExitStatus {
        if let Some(status) = self.exited() {
            return status;
        }
        // SAFETY: kill(2) on the pid of a child we have not reaped yet, so not reused.
        unsafe { libc::kill(self.child.id() as libc::pid_t, stop.signal()) };
        let started = Instant::now();
        loop {
            if let Some(status) = self.exited() {
                return status;
            }
            if started.elapsed() > STOP_TIMEOUT {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!(
                    "{} did not exit within {STOP_TIMEOUT:?} after {stop:?}; log tail:\n{}",
                    self.name,
                    tail(&self.log)
                );
            }
            std::thread::sleep(WAIT_INTERVAL / 4);
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        if self.exited().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        if let Some(mut watchdog) = self.watchdog.take() {
            let _ = watchdog.kill();
            let _ = watchdog.wait();
        }
    }
}

/// Another program a test runs next to Iggy (a consumer example), with its output in a log
/// file; killed when dropped, or by the watchdog when the test process dies.
pub struct Program(Process);

impl Program {
    /// Starts `command` (named `name` in messages) with stdout and stderr appended to `log`.
    pub fn start(name: &'static str, command: Command, log: &Path) -> Program {
        Program(Process::spawn(name, command, log))
    }

    /// Waits up to `deadline` for the program to exit; one still running then is killed and
    /// the test fails with its log tail.
    pub fn wait(mut self, deadline: Duration) -> ExitStatus {
        wait_until(deadline, &format!("{} to exit", self.0.name), || {
            self.0
                .exited()
                .ok_or_else(|| format!("log tail:\n{}", tail(&self.0.log)))
        })
    }

    /// Its output so far, without terminal colours.
    pub fn log(&self) -> String {
        read_log(&self.0.log)
    }
}

/// The last lines of a log, without terminal colours.
fn tail(log: &Path) -> String {
    let text = read_log(log);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}

/// A log file's text with ANSI escape sequences removed (both programs colour their output
/// even into a file, which would split the words tests look for).
fn read_log(log: &Path) -> String {
    let bytes = fs::read(log).unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes);
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // CSI: ESC [ parameters… final byte in @..~
            if chars.next() == Some('[') {
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Calls `probe` until it returns `Ok`, or panics after `deadline` with `what` and the last
/// error (which says what was seen instead).
fn wait_until<T>(
    deadline: Duration,
    what: &str,
    mut probe: impl FnMut() -> Result<T, String>,
) -> T {
    let started = Instant::now();
    loop {
        match probe() {
            Ok(value) => return value,
            Err(last) if started.elapsed() > deadline => {
                panic!("timed out after {deadline:?} waiting for {what}; {last}")
            }
            Err(_) => std::thread::sleep(WAIT_INTERVAL),
        }
    }
}

/// A free port on 127.0.0.1 (the listener is closed again right away).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .unwrap_or_else(|e| panic!("find a free port on 127.0.0.1: {e}"))
}

/// A file name in `dir` no other call of this process uses.
fn unique_file(dir: &Path, stem: &str, ext: &str) -> PathBuf {
    let n = FILE_SEQ.fetch_add(1, Ordering::Relaxed);
    dir.join(format!("{stem}-{n}.{ext}"))
}

fn write(path: &Path, text: &str) {
    let mut file = File::create(path).unwrap_or_else(|e| panic!("create {}: {e}", path.display()));
    std::io::Write::write_all(&mut file, text.as_bytes())
        .unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

mod message;
mod runtime;
mod saves;
mod server;

pub use message::{HeaderValue, Message, parse_messages};
pub use runtime::{ConnectorsRuntime, SourceConnector};
pub use saves::{Saves, StateSaves};
pub use server::{IggyServer, Topic};
