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

//! One test's Iggy world (a server, a runtime dir, a temp dir kept when the test fails), the
//! plugin library, the shared Fluss cluster, and readers of the plugin's headers.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use fluss_testkit::fluss::metadata::{Schema, TablePath};
use fluss_testkit::fluss::row::GenericRow;
use fluss_testkit::iggy::{Binaries, ConnectorsRuntime, IggyServer, Message, SourceConnector};
use fluss_testkit::{Cluster, tables, unique_table, write};
use serde_json::{Value, json};

/// Longest wait for data to go through Fluss, the plugin, the runtime and the server (a
/// debug build on 2 shared cores moves a few thousand rows in seconds).
pub const DELIVERY: Duration = Duration::from_secs(120);

/// The stream every test writes to (each test has a server of its own).
pub const STREAM: &str = "fluss";

static DIR_SEQ: AtomicUsize = AtomicUsize::new(0);

pub use fluss_testkit::{plugin_path, rt};

/// A test's own `iggy-server` and directory. The directory is removed when the test passes
/// and kept (its path printed) when it fails or `RUNTIME_TESTS_KEEP` is set, with the
/// server's and the runtime's logs in it.
pub struct World {
    pub dir: PathBuf,
    pub server: IggyServer,
}

impl World {
    /// Checks the binaries first (so a missing `IGGY_BIN_DIR` fails before the Fluss cluster
    /// starts), then starts a fresh server.
    pub fn new(test: &str) -> World {
        Binaries::from_env();
        let dir = std::env::temp_dir().join(format!(
            "fluss-iggy-{test}-{}-{}",
            std::process::id(),
            DIR_SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        let server = IggyServer::start(&dir);
        World { dir, server }
    }

    /// Starts `iggy-connectors` against this world's server with `connectors`.
    pub fn runtime(&self, connectors: &[SourceConnector]) -> ConnectorsRuntime {
        ConnectorsRuntime::start(&self.server, &self.dir.join("runtime"), connectors)
    }

    /// Every message of `topic` in [`STREAM`].
    pub fn messages(&self, topic: &str) -> Vec<Message> {
        self.server.messages(STREAM, topic)
    }

    /// Waits until `done` accepts the messages of `topic`, and returns them.
    pub fn wait_for(
        &self,
        topic: &str,
        what: &str,
        done: impl Fn(&[Message]) -> bool,
    ) -> Vec<Message> {
        self.server
            .wait_for_topic(STREAM, topic, DELIVERY, what, done)
    }
}

impl Drop for World {
    fn drop(&mut self) {
        self.server.stop();
        if std::thread::panicking() || std::env::var_os("RUNTIME_TESTS_KEEP").is_some() {
            eprintln!("kept {} (server and runtime logs)", self.dir.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// A connector `key` for `table` (plugin defaults plus `extra`) writing to `topic`.
pub fn connector(
    key: &str,
    table: &TablePath,
    topic: &str,
    schema: &str,
    extra: Value,
) -> SourceConnector {
    let mut config = json!({
        "bootstrap_servers": Cluster::shared().bootstrap(),
        "database": table.database(),
        "table": table.table(),
    });
    if let (Value::Object(base), Value::Object(extra)) = (&mut config, extra) {
        base.extend(extra);
    }
    SourceConnector::new(key, &plugin_path(), STREAM, topic, schema, config)
}

/// Creates a log table (`buckets` buckets) or, when `schema` has a key, a primary-key table;
/// returns its path and table id.
pub fn create_table(prefix: &str, schema: Schema, buckets: i32) -> (TablePath, i64) {
    let path = unique_table(prefix);
    let info = rt().block_on(async {
        let connection = Cluster::shared().connection().await;
        let admin = connection.get_admin().expect("admin");
        tables::create_log_table(&admin, &path, schema, buckets).await
    });
    (path, info.get_table_id())
}

/// Appends `rows` to the log table `path`.
pub fn append(path: &TablePath, rows: impl IntoIterator<Item = GenericRow<'static>>) {
    rt().block_on(async {
        let connection = Cluster::shared().connection().await;
        write::append_rows(&connection, path, rows).await;
    });
}

/// `fluss_bucket` (int32).
pub fn bucket(m: &Message) -> i32 {
    m.header("fluss_bucket")
        .as_i32()
        .expect("fluss_bucket is an int32 header")
}

/// `fluss_offset` (int64).
pub fn offset(m: &Message) -> i64 {
    m.header("fluss_offset")
        .as_i64()
        .expect("fluss_offset is an int64 header")
}

/// Checks each message id against the layout of src/encode/stamp.rs, recomputed from its headers.
pub fn assert_ids(messages: &[Message], table_id: i64) {
    for m in messages {
        assert_eq!(
            m.id,
            iggy_connector_fluss_source::encode::stamp::message_id(
                table_id,
                None,
                bucket(m),
                offset(m)
            ),
            "message id of bucket {} offset {} (Iggy offset {}) does not follow src/encode/stamp.rs",
            bucket(m),
            offset(m),
            m.offset
        );
    }
}

/// Every topic the runtime creates has one partition (the SDK producer's default,
/// `IggyProducerBuilder::topic_partitions_count = 1`), numbered 0.
pub fn assert_one_partition(world: &World, topic: &str, messages: &[Message]) {
    let info = world
        .server
        .topic(STREAM, topic)
        .expect("the runtime created the topic");
    assert_eq!(
        info.partitions, 1,
        "the runtime creates topics with one partition"
    );
    assert_eq!(
        info.messages,
        messages.len() as u64,
        "topic get counts what poll read"
    );
    assert!(
        messages.iter().all(|m| m.partition == 0),
        "messages land in partition 0"
    );
}

/// The lines of `log` that contain `needle`.
pub fn lines_with<'a>(log: &'a str, needle: &str) -> Vec<&'a str> {
    log.lines().filter(|line| line.contains(needle)).collect()
}
