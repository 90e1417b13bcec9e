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
const HOW_TO: &str = "get them with: export IGGY_BIN_DIR=$(mktemp -d) && tar xJf \
    ../shared/iggy-runtime/iggy-cc269ef-linux-x86_64.tar.xz -C \"$IGGY_BIN_DIR\" \
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
        // overrides, and one from the caller's shell would change the setup under test.
        let set: Vec<_> = command.get_envs().map(|(key, _)| key.to_owned()).collect();
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("IGGY_") && !set.contains(&key) {
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

/// A running `iggy-server` (TCP only, on 127.0.0.1).
pub struct IggyServer {
    binaries: Binaries,
    dir: PathBuf,
    port: u16,
    process: Option<Process>,
}

/// What `iggy topic get` reports about a topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Topic {
    /// Number of partitions (numbered from 0).
    pub partitions: u32,
    /// Messages in all partitions.
    pub messages: u64,
}

impl IggyServer {
    /// Starts a server whose data and log live in `dir` (created if missing), on a free port,
    /// and waits until it answers.
    pub fn start(dir: &Path) -> IggyServer {
        fs::create_dir_all(dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
        let mut server = IggyServer {
            binaries: Binaries::from_env(),
            dir: dir.to_owned(),
            port: free_port(),
            process: None,
        };
        server.spawn();
        server
    }

    fn spawn(&mut self) {
        let mut command = Command::new(&self.binaries.server);
        command
            .arg("--with-default-root-credentials")
            .env("IGGY_SYSTEM_PATH", self.data_dir())
            .env("IGGY_TCP_ADDRESS", self.address())
            .env("IGGY_QUIC_ENABLED", "false")
            .env("IGGY_WEBSOCKET_ENABLED", "false")
            .env("IGGY_HTTP_ENABLED", "false")
            // Shards on every core rather than pinned ones the other tests' processes share.
            .env("IGGY_SYSTEM_SHARDING_CPU_ALLOCATION", "all");
        self.process = Some(Process::spawn("iggy-server", command, &self.log_path()));
        wait_until(
            START_TIMEOUT,
            &format!("iggy-server on {} to answer", self.address()),
            || {
                if let Some(status) = self.process.as_mut().and_then(Process::exited) {
                    panic!(
                        "iggy-server exited with {status} at start; log tail:\n{}",
                        tail(&self.log_path())
                    );
                }
                self.cli(&["stream", "list"])
                    .map_err(|e| format!("{e}; log tail:\n{}", tail(&self.log_path())))
            },
        );
    }

    /// `127.0.0.1:port` of the TCP listener.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The server's data dir (`IGGY_SYSTEM_PATH`).
    pub fn data_dir(&self) -> PathBuf {
        self.dir.join("iggy-data")
    }

    /// The server's stdout and stderr.
    pub fn log_path(&self) -> PathBuf {
        self.dir.join("iggy-server.log")
    }

    /// Stops the server with SIGTERM and waits until it exits.
    pub fn stop(&mut self) -> Option<ExitStatus> {
        self.process
            .take()
            .map(|process| process.stop(Stop::Terminate))
    }

    /// Stops the server if it runs and starts it again on the same data dir and port.
    pub fn restart(&mut self) {
        self.stop();
        self.spawn();
    }

    /// Runs the CLI logged in as root against this server; `Ok(stdout)` on success, `Err`
    /// with both outputs otherwise.
    pub fn cli(&self, args: &[&str]) -> Result<String, String> {
        let output = Command::new(&self.binaries.cli)
            .args(["-u", USERNAME, "-p", PASSWORD, "--tcp-server-address"])
            .arg(self.address())
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("run {}: {e}", self.binaries.cli.display()))?;
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        if output.status.success() {
            Ok(stdout)
        } else {
            Err(format!(
                "iggy {args:?} exited with {}: {stdout}{}",
                output.status,
                String::from_utf8_lossy(&output.stderr)
            ))
        }
    }

    /// The topic's partition and message counts, `None` when the stream or topic does not
    /// exist (the CLI then prints "… was not found" and still exits 0).
    pub fn topic(&self, stream: &str, topic: &str) -> Option<Topic> {
        let out = self
            .cli(&["topic", "get", stream, topic])
            .unwrap_or_else(|e| panic!("{e}"));
        let field = |name: &str| -> Option<u64> {
            out.lines()
                .map(|line| line.split('|').map(str::trim).collect::<Vec<_>>())
                .find(|cells| cells.get(1) == Some(&name))
                .and_then(|cells| cells.get(2)?.parse().ok())
        };
        Some(Topic {
            partitions: u32::try_from(field("Partitions count")?).ok()?,
            messages: field("Topic message count")?,
        })
    }

    /// Every message of one partition, from offset 0, in offset order.
    pub fn partition_messages(&self, stream: &str, topic: &str, partition: u32) -> Vec<Message> {
        let mut messages: Vec<Message> = Vec::new();
        loop {
            let offset = messages.last().map_or(0, |m| m.offset + 1);
            let file = unique_file(&self.dir, "poll", "bin");
            self.cli(&[
                "message",
                "poll",
                "--offset",
                &offset.to_string(),
                "-m",
                &POLL_CHUNK.to_string(),
                "--output-file",
                &file.to_string_lossy(),
                stream,
                topic,
                &partition.to_string(),
            ])
            .unwrap_or_else(|e| panic!("{e}"));
            // The CLI appends to the file, so each poll gets a new one.
            let bytes = fs::read(&file).unwrap_or_default();
            let _ = fs::remove_file(&file);
            let polled = parse_messages(&bytes).unwrap_or_else(|e| {
                panic!("{stream}/{topic} partition {partition} from offset {offset}: {e}")
            });
            if polled.is_empty() {
                return messages;
            }
            messages.extend(polled.into_iter().map(|m| Message { partition, ..m }));
        }
    }

    /// Every message of every partition of the topic (partition by partition, each in
    /// offset order); empty when the topic does not exist.
    pub fn messages(&self, stream: &str, topic: &str) -> Vec<Message> {
        let Some(info) = self.topic(stream, topic) else {
            return Vec::new();
        };
        (0..info.partitions)
            .flat_map(|p| self.partition_messages(stream, topic, p))
            .collect()
    }

    /// Reads the topic until it holds at least `count` messages, or panics after `deadline`.
    pub fn wait_for_messages(
        &self,
        stream: &str,
        topic: &str,
        count: usize,
        deadline: Duration,
    ) -> Vec<Message> {
        self.wait_for_topic(stream, topic, deadline, &format!("{count} messages"), |m| {
            m.len() >= count
        })
    }

    /// Reads the topic until `done` accepts its messages (`what` describes that for the
    /// panic after `deadline`), and returns them.
    pub fn wait_for_topic(
        &self,
        stream: &str,
        topic: &str,
        deadline: Duration,
        what: &str,
        done: impl Fn(&[Message]) -> bool,
    ) -> Vec<Message> {
        wait_until(deadline, &format!("{what} in {stream}/{topic}"), || {
            let messages = self.messages(stream, topic);
            if done(&messages) {
                Ok(messages)
            } else {
                Err(format!("the topic holds {} messages", messages.len()))
            }
        })
    }
}

/// One `[[streams]]` entry and `[plugin_config]` of a source connector file.
#[derive(Debug, Clone)]
pub struct SourceConnector {
    /// The connector's key (its state file is `source_<key>.state`).
    pub key: String,
    /// The plugin library; a `.so` suffix is dropped, since the runtime appends it.
    pub plugin: PathBuf,
    /// Target stream (created by the runtime when missing).
    pub stream: String,
    /// Target topic (created with 1 partition when missing).
    pub topic: String,
    /// The stream encoder: `json`, `raw`, …
    pub schema: String,
    /// Producer batch length (runtime default 1000).
    pub batch_length: Option<u32>,
    /// Producer linger time, e.g. `"5ms"` (runtime default).
    pub linger_time: Option<String>,
    /// The plugin's configuration, written as TOML.
    pub plugin_config: serde_json::Value,
}

#[derive(Serialize)]
struct ConnectorFile<'a> {
    r#type: &'static str,
    key: &'a str,
    enabled: bool,
    version: u64,
    name: &'a str,
    path: String,
    streams: [StreamEntry<'a>; 1],
    plugin_config: &'a serde_json::Value,
}

#[derive(Serialize)]
struct StreamEntry<'a> {
    stream: &'a str,
    topic: &'a str,
    schema: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    batch_length: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    linger_time: Option<&'a str>,
}

impl SourceConnector {
    /// A connector `key` writing to `stream`/`topic` with encoder `schema`.
    pub fn new(
        key: &str,
        plugin: &Path,
        stream: &str,
        topic: &str,
        schema: &str,
        plugin_config: serde_json::Value,
    ) -> SourceConnector {
        SourceConnector {
            key: key.to_owned(),
            plugin: plugin.to_owned(),
            stream: stream.to_owned(),
            topic: topic.to_owned(),
            schema: schema.to_owned(),
            batch_length: None,
            linger_time: None,
            plugin_config,
        }
    }

    /// The connector file's TOML text.
    pub fn to_toml(&self) -> String {
        let plugin = self.plugin.to_string_lossy();
        let file = ConnectorFile {
            r#type: "source",
            key: &self.key,
            enabled: true,
            version: 0,
            name: &self.key,
            path: plugin.strip_suffix(".so").unwrap_or(&plugin).to_owned(),
            streams: [StreamEntry {
                stream: &self.stream,
                topic: &self.topic,
                schema: &self.schema,
                batch_length: self.batch_length,
                linger_time: self.linger_time.as_deref(),
            }],
            plugin_config: &self.plugin_config,
        };
        toml::to_string(&file).unwrap_or_else(|e| panic!("connector {} as TOML: {e}", self.key))
    }
}

/// A running `iggy-connectors` runtime with its config, connector files, state and log in
/// one directory.
pub struct ConnectorsRuntime {
    binaries: Binaries,
    dir: PathBuf,
    process: Option<Process>,
}

impl ConnectorsRuntime {
    /// Writes the runtime config (for `server`, root credentials, HTTP off) and the
    /// connector files into `dir`, and starts the runtime.
    pub fn start(
        server: &IggyServer,
        dir: &Path,
        connectors: &[SourceConnector],
    ) -> ConnectorsRuntime {
        let mut runtime = ConnectorsRuntime {
            binaries: Binaries::from_env(),
            dir: dir.to_owned(),
            process: None,
        };
        let connectors_dir = runtime.dir.join("connectors");
        for made in [&connectors_dir, &runtime.state_dir()] {
            fs::create_dir_all(made).unwrap_or_else(|e| panic!("create {}: {e}", made.display()));
        }
        for connector in connectors {
            write(
                &connectors_dir.join(format!("{}.toml", connector.key)),
                &connector.to_toml(),
            );
        }
        let config = toml::toml! {
            [iggy]
            address = (server.address())
            username = USERNAME
            password = PASSWORD

            [state]
            path = (runtime.state_dir().to_string_lossy().into_owned())

            [connectors]
            config_type = "local"
            config_dir = (connectors_dir.to_string_lossy().into_owned())

            [http]
            enabled = false
        };
        write(&runtime.config_path(), &config.to_string());
        runtime.spawn();
        runtime
    }

    fn spawn(&mut self) {
        let mut command = Command::new(&self.binaries.connectors);
        command
            .env("IGGY_CONNECTORS_CONFIG_PATH", self.config_path())
            // The runtime's default level, pinned: tests count INFO lines, and a RUST_LOG of
            // the caller's shell would add or hide some.
            .env("RUST_LOG", "info");
        self.process = Some(Process::spawn("iggy-connectors", command, &self.log_path()));
    }

    /// Starts the runtime again with the same config and state dir (stopping it first with
    /// SIGINT if it still runs).
    pub fn restart(&mut self) {
        self.stop(Stop::Interrupt);
        self.spawn();
    }

    /// Ends the runtime with `stop` and waits for it; `None` if it was not running.
    pub fn stop(&mut self, stop: Stop) -> Option<ExitStatus> {
        self.process.take().map(|process| process.stop(stop))
    }

    /// The runtime's process id while it runs (for `/proc/<pid>/status` or `perf -p`).
    pub fn pid(&self) -> Option<u32> {
        self.process.as_ref().map(|process| process.child.id())
    }

    /// Whether the runtime process still runs.
    pub fn is_running(&mut self) -> bool {
        self.process
            .as_mut()
            .is_some_and(|process| process.exited().is_none())
    }

    /// The runtime config file (`IGGY_CONNECTORS_CONFIG_PATH`).
    pub fn config_path(&self) -> PathBuf {
        self.dir.join("runtime.toml")
    }

    /// The `[state] path` directory.
    pub fn state_dir(&self) -> PathBuf {
        self.dir.join("state")
    }

    /// Where the runtime keeps the state of connector `key`.
    pub fn state_file(&self, key: &str) -> PathBuf {
        self.state_dir().join(format!("source_{key}.state"))
    }

    /// The runtime's stdout and stderr, across restarts.
    pub fn log_path(&self) -> PathBuf {
        self.dir.join("iggy-connectors.log")
    }

    /// The log so far, without terminal colours; the plugin's own lines are in it too.
    pub fn log(&self) -> String {
        read_log(&self.log_path())
    }

    /// Waits until the log holds `needle` `times` times or more; returns the log.
    pub fn wait_for_log(&self, needle: &str, times: usize, deadline: Duration) -> String {
        wait_until(
            deadline,
            &format!("{times}× {needle:?} in {}", self.log_path().display()),
            || {
                let log = self.log();
                if log.matches(needle).count() >= times {
                    Ok(log)
                } else {
                    Err(format!("log tail:\n{}", tail(&self.log_path())))
                }
            },
        )
    }
}

fn write(path: &Path, text: &str) {
    let mut file = File::create(path).unwrap_or_else(|e| panic!("create {}: {e}", path.display()));
    std::io::Write::write_all(&mut file, text.as_bytes())
        .unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

/// A typed user-header value (Iggy's `HeaderKind`s).
#[derive(Debug, Clone, PartialEq)]
pub enum HeaderValue {
    /// Raw bytes.
    Raw(Vec<u8>),
    /// UTF-8 text.
    String(String),
    /// A boolean.
    Bool(bool),
    /// int8.
    Int8(i8),
    /// int16.
    Int16(i16),
    /// int32.
    Int32(i32),
    /// int64.
    Int64(i64),
    /// int128.
    Int128(i128),
    /// uint8.
    Uint8(u8),
    /// uint16.
    Uint16(u16),
    /// uint32.
    Uint32(u32),
    /// uint64.
    Uint64(u64),
    /// uint128.
    Uint128(u128),
    /// float32.
    Float32(f32),
    /// float64.
    Float64(f64),
}

impl HeaderValue {
    /// The value of an int32 header.
    pub fn as_i32(&self) -> Option<i32> {
        match self {
            HeaderValue::Int32(v) => Some(*v),
            _ => None,
        }
    }

    /// The value of an int64 header.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            HeaderValue::Int64(v) => Some(*v),
            _ => None,
        }
    }

    /// The value of a string header.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            HeaderValue::String(v) => Some(v),
            _ => None,
        }
    }

    /// Decodes a value of kind `code` (Iggy's `HeaderKind::as_code`) from its little-endian
    /// bytes.
    fn decode(code: u8, bytes: &[u8]) -> Result<HeaderValue, String> {
        fn fixed<const N: usize>(bytes: &[u8]) -> Result<[u8; N], String> {
            bytes
                .try_into()
                .map_err(|_| format!("{} bytes where {N} were expected", bytes.len()))
        }
        Ok(match code {
            1 => HeaderValue::Raw(bytes.to_vec()),
            2 => HeaderValue::String(
                String::from_utf8(bytes.to_vec()).map_err(|e| format!("string header: {e}"))?,
            ),
            3 => HeaderValue::Bool(fixed::<1>(bytes)?[0] != 0),
            4 => HeaderValue::Int8(i8::from_le_bytes(fixed(bytes)?)),
            5 => HeaderValue::Int16(i16::from_le_bytes(fixed(bytes)?)),
            6 => HeaderValue::Int32(i32::from_le_bytes(fixed(bytes)?)),
            7 => HeaderValue::Int64(i64::from_le_bytes(fixed(bytes)?)),
            8 => HeaderValue::Int128(i128::from_le_bytes(fixed(bytes)?)),
            9 => HeaderValue::Uint8(u8::from_le_bytes(fixed(bytes)?)),
            10 => HeaderValue::Uint16(u16::from_le_bytes(fixed(bytes)?)),
            11 => HeaderValue::Uint32(u32::from_le_bytes(fixed(bytes)?)),
            12 => HeaderValue::Uint64(u64::from_le_bytes(fixed(bytes)?)),
            13 => HeaderValue::Uint128(u128::from_le_bytes(fixed(bytes)?)),
            14 => HeaderValue::Float32(f32::from_le_bytes(fixed(bytes)?)),
            15 => HeaderValue::Float64(f64::from_le_bytes(fixed(bytes)?)),
            other => return Err(format!("unknown header kind {other}")),
        })
    }
}

/// One message as stored in an Iggy topic.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// The partition it was read from (0 when parsed from bytes alone).
    pub partition: u32,
    /// Offset within the partition.
    pub offset: u64,
    /// The message id (the producer's, or a random one if it sent 0).
    pub id: u128,
    /// Server timestamp, epoch µs.
    pub timestamp: u64,
    /// The producer's timestamp, epoch µs.
    pub origin_timestamp: u64,
    /// Checksum as stored.
    pub checksum: u64,
    /// The payload bytes.
    pub payload: Vec<u8>,
    /// User headers by name (every header this plugin writes has a string key).
    pub headers: BTreeMap<String, HeaderValue>,
}

impl Message {
    /// The header `name`; panics naming the message when it is missing.
    pub fn header(&self, name: &str) -> &HeaderValue {
        self.headers.get(name).unwrap_or_else(|| {
            panic!(
                "message {} (partition {}, offset {}) has no header {name}: {:?}",
                self.id, self.partition, self.offset, self.headers
            )
        })
    }
}

/// Little-endian integer at `at` of `bytes`, `N` bytes wide.
fn le<const N: usize>(bytes: &[u8], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(&bytes[at..at + N]);
    out
}

/// Decodes messages in Iggy's binary format: per message a 64-byte header (checksum u64,
/// id u128, offset u64, timestamp u64, origin timestamp u64, user-headers length u32,
/// payload length u32, 8 reserved bytes; all little-endian), the payload, then the user
/// headers, each as key kind u8, key length u32, key, value kind u8, value length u32, value.
pub fn parse_messages(bytes: &[u8]) -> Result<Vec<Message>, String> {
    let mut messages = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let header = bytes
            .get(at..at + MESSAGE_HEADER_SIZE)
            .ok_or_else(|| format!("truncated message header at byte {at}"))?;
        let headers_len = u32::from_le_bytes(le(header, 48)) as usize;
        let payload_len = u32::from_le_bytes(le(header, 52)) as usize;
        let body = at + MESSAGE_HEADER_SIZE;
        let payload = bytes
            .get(body..body + payload_len)
            .ok_or_else(|| format!("truncated payload at byte {body}"))?;
        let user = bytes
            .get(body + payload_len..body + payload_len + headers_len)
            .ok_or_else(|| format!("truncated user headers at byte {}", body + payload_len))?;
        messages.push(Message {
            partition: 0,
            checksum: u64::from_le_bytes(le(header, 0)),
            id: u128::from_le_bytes(le(header, 8)),
            offset: u64::from_le_bytes(le(header, 24)),
            timestamp: u64::from_le_bytes(le(header, 32)),
            origin_timestamp: u64::from_le_bytes(le(header, 40)),
            payload: payload.to_vec(),
            headers: parse_headers(user)?,
        });
        at = body + payload_len + headers_len;
    }
    Ok(messages)
}

fn parse_headers(mut bytes: &[u8]) -> Result<BTreeMap<String, HeaderValue>, String> {
    fn field<'a>(bytes: &mut &'a [u8]) -> Result<(u8, &'a [u8]), String> {
        if bytes.len() < 5 {
            return Err(format!(
                "truncated header field ({} bytes left)",
                bytes.len()
            ));
        }
        let kind = bytes[0];
        let len = u32::from_le_bytes(le(bytes, 1)) as usize;
        let value = bytes
            .get(5..5 + len)
            .ok_or_else(|| format!("header field of {len} bytes is truncated"))?;
        *bytes = &bytes[5 + len..];
        Ok((kind, value))
    }
    let mut headers = BTreeMap::new();
    while !bytes.is_empty() {
        let (_, key) = field(&mut bytes)?;
        let (kind, value) = field(&mut bytes)?;
        headers.insert(
            String::from_utf8_lossy(key).into_owned(),
            HeaderValue::decode(kind, value)?,
        );
    }
    Ok(headers)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two messages as `iggy message poll --output-file` wrote them from a real server:
    /// `iggy message send --headers k:int32:5 s1 t1 hello world`.
    const POLLED: &str = "a5ed6601995f35756374cc37a672437ba06e4c9f6332d5fc0000000000000000\
        c61589f88e610600ba1389f88e6106000f000000050000000000000000000000\
        68656c6c6f02010000006b06040000000500000060d2a4f4a9e257992e8cdad7\
        338d40079a05268d18434bfa0100000000000000c61589f88e610600bc1389f8\
        8e6106000f000000050000000000000000000000776f726c6402010000006b06\
        0400000005000000";

    fn unhex(hex: &str) -> Vec<u8> {
        (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn parses_what_the_cli_wrote() {
        let messages = parse_messages(&unhex(POLLED)).unwrap();
        assert_eq!(messages.len(), 2);
        assert_eq!(messages[0].payload, b"hello");
        assert_eq!(messages[1].payload, b"world");
        assert_eq!((messages[0].offset, messages[1].offset), (0, 1));
        assert_ne!(messages[0].id, messages[1].id);
        for m in &messages {
            assert_eq!(m.header("k"), &HeaderValue::Int32(5));
            assert_eq!(m.headers.len(), 1);
            assert!(m.origin_timestamp > 1_700_000_000_000_000, "epoch µs");
        }
    }

    #[test]
    fn truncated_input_is_an_error() {
        let bytes = unhex(POLLED);
        for cut in [1, 63, 64, 68, 70, 80] {
            assert!(parse_messages(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        assert!(parse_messages(&[]).unwrap().is_empty());
    }

    #[test]
    fn header_kinds_decode_little_endian() {
        assert_eq!(
            HeaderValue::decode(7, &(-2i64).to_le_bytes()),
            Ok(HeaderValue::Int64(-2))
        );
        assert_eq!(
            HeaderValue::decode(2, b"+I"),
            Ok(HeaderValue::String("+I".into()))
        );
        assert!(HeaderValue::decode(6, &[1, 2]).is_err());
        assert!(HeaderValue::decode(99, &[]).is_err());
    }

    #[test]
    fn connector_file_names_the_plugin_without_its_suffix() {
        let mut connector = SourceConnector::new(
            "fluss_a",
            Path::new("/t/libiggy_connector_fluss_source.so"),
            "s",
            "t",
            "json",
            serde_json::json!({ "table": "orders", "batch_size": 10 }),
        );
        connector.linger_time = Some("1ms".into());
        let parsed: toml::Value = toml::from_str(&connector.to_toml()).unwrap();
        assert_eq!(parsed["type"].as_str(), Some("source"));
        assert_eq!(
            parsed["path"].as_str(),
            Some("/t/libiggy_connector_fluss_source")
        );
        assert_eq!(parsed["streams"][0]["linger_time"].as_str(), Some("1ms"));
        assert!(parsed["streams"][0].get("batch_length").is_none());
        assert_eq!(parsed["plugin_config"]["batch_size"].as_integer(), Some(10));
    }

    #[test]
    fn colours_are_stripped_from_logs() {
        let path = std::env::temp_dir().join(format!("iggy-log-{}.txt", std::process::id()));
        fs::write(
            &path,
            "\u{1b}[2m09:15\u{1b}[0m \u{1b}[32m INFO\u{1b}[0m Rejected batch\n",
        )
        .unwrap();
        assert_eq!(read_log(&path), "09:15  INFO Rejected batch\n");
        let _ = fs::remove_file(path);
    }
}
