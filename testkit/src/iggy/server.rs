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

//! `iggy-server`: started TCP-only on 127.0.0.1, stopped and restarted by pid, topics read back.

use super::*;

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

    /// Kills the server with SIGKILL (no shutdown: what it had not saved is gone) and waits
    /// until it exited; [`Self::restart`] starts it again.
    pub fn kill(&mut self) -> Option<ExitStatus> {
        self.process.take().map(|process| process.stop(Stop::Kill))
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

    /// Creates `stream` (unless it exists) and in it `topic` with one partition, whose server
    /// writes every batch to its segment files before it acknowledges it
    /// (`messages_required_to_save = 1`), so a server killed with -9 loses nothing it
    /// acknowledged. The runtime creates a missing topic with the server's defaults, which
    /// keep up to 1024 messages or 1 MiB per partition in memory only ("committed messages in
    /// the journal, which a crash does not preserve"): a kill -9 loses them although the
    /// runtime had them acknowledged.
    pub fn create_durable_topic(&self, stream: &str, topic: &str) {
        if self.stream_messages(stream).is_none() {
            self.cli(&["stream", "create", stream])
                .unwrap_or_else(|e| panic!("{e}"));
        }
        self.cli(&[
            "topic",
            "create",
            stream,
            topic,
            "1",
            "none",
            "--set",
            "messages_required_to_save=1",
        ])
        .unwrap_or_else(|e| panic!("{e}"));
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

    /// Messages in all topics of the stream, `None` when it does not exist (yet): one CLI call
    /// however many topics it has.
    pub fn stream_messages(&self, stream: &str) -> Option<u64> {
        let out = self
            .cli(&["stream", "get", stream])
            .unwrap_or_else(|e| panic!("{e}"));
        out.lines()
            .map(|line| line.split('|').map(str::trim).collect::<Vec<_>>())
            .find(|cells| cells.get(1) == Some(&"Stream message count"))
            .and_then(|cells| cells.get(2)?.parse().ok())
    }

    /// Every message of one partition, from offset 0, in offset order.
    pub fn partition_messages(&self, stream: &str, topic: &str, partition: u32) -> Vec<Message> {
        let mut messages: Vec<Message> = Vec::new();
        loop {
            let offset = messages.last().map_or(0, |m| m.offset + 1);
            let polled = self
                .poll(stream, topic, partition, offset)
                .unwrap_or_else(|e| panic!("{e}"));
            if polled.is_empty() {
                return messages;
            }
            messages.extend(polled);
        }
    }

    /// Up to 1000 messages of one partition from Iggy offset `offset`, in offset order (none
    /// past the end); `Err` with the CLI's words when the server does not answer.
    pub fn poll(
        &self,
        stream: &str,
        topic: &str,
        partition: u32,
        offset: u64,
    ) -> Result<Vec<Message>, String> {
        let file = unique_file(&self.dir, "poll", "bin");
        let polled = self.cli(&[
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
        ]);
        // The CLI appends to the file, so each poll gets a new one.
        let bytes = fs::read(&file).unwrap_or_default();
        let _ = fs::remove_file(&file);
        polled?;
        let messages = parse_messages(&bytes).map_err(|e| {
            format!("{stream}/{topic} partition {partition} from offset {offset}: {e}")
        })?;
        Ok(messages
            .into_iter()
            .map(|m| Message { partition, ..m })
            .collect())
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
