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

//! `snapshot_dir` on a file system that fills up: a tmpfs of a few MiB, mounted by the test (it
//! needs root, as CI runs the tests; without it the test fails saying so), sized so that one
//! bucket's KV snapshot files fit and two do not. First a filler leaves less room than any
//! bucket needs: one ERROR line names `snapshot_dir`, the bytes needed and the bytes free, no
//! WARN or further ERROR follows within 20 s, nothing is written there and nothing reaches the
//! topic. Then the filler goes: the buckets are copied one at a time (the next one finds no
//! room while the one before holds its files, and is copied at its turn) and every key arrives
//! once. At the end the connector's directory is gone.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use fluss_testkit::fluss::row::GenericRow;
use fluss_testkit::iggy::Stop;
use fluss_testkit::seed::Rng;
use fluss_testkit::tables::{self, sample_pk_schema};
use fluss_testkit::{Cluster, write};
use iggy_connector_fluss_source::snapshot::kv::local_dir::disk_bytes;
use serde_json::{Value, json};

use crate::fixture::{DELIVERY, STREAM, World, connector, create_table, lines_with, rt};

const TOPIC: &str = "customers_full_disk";
const KEYS: i64 = 6000;
const BUCKETS: i32 = 3;
/// How long the file system stays full: the point of the test, not a wait for a condition.
const FULL_FOR: Duration = Duration::from_secs(20);
const NO_ROOM: &str = "cannot copy the KV snapshot files of";

/// A tmpfs mounted at a directory, unmounted when dropped.
struct Tmpfs {
    dir: PathBuf,
}

impl Tmpfs {
    /// Mounts a tmpfs of `kib` KiB at `dir` (created if missing).
    fn mount(dir: &Path, kib: u64) -> Tmpfs {
        std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
        let size = format!("size={kib}k,mode=0700");
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &size, "tmpfs"])
            .arg(dir)
            .output()
            .unwrap_or_else(|e| panic!("cannot run mount: {e}"));
        assert!(
            mounted.status.success(),
            "cannot mount a tmpfs of {kib} KiB at {}: this test needs root (CI runs the tests as root) to make a small file system for `snapshot_dir`; mount said: {}",
            dir.display(),
            String::from_utf8_lossy(&mounted.stderr).trim()
        );
        Tmpfs {
            dir: dir.to_owned(),
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let unmounted = Command::new("umount").arg(&self.dir).status();
        if !unmounted.is_ok_and(|status| status.success()) {
            // Still busy (a process that has not exited yet): detached now, gone when free.
            eprintln!(
                "full_disk: umount {} failed; detaching it",
                self.dir.display()
            );
            let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
        }
    }
}

/// The name of key `id`: 1,000 characters drawn from 64, so its bytes stay about as many in
/// the compressed KV snapshot files.
fn name(id: i64) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_";
    let mut rng = Rng::new(id as u64);
    (0..1000)
        .map(|_| ALPHABET[rng.below(64) as usize] as char)
        .collect()
}

fn row(id: i64) -> GenericRow<'static> {
    let mut row = GenericRow::new(3);
    row.set_field(0, id);
    row.set_field(1, name(id));
    row.set_field(2, id as f64);
    row
}

/// The bytes of each bucket's latest KV snapshot files, as the cluster stores them.
fn snapshot_bytes(table: &fluss_testkit::fluss::metadata::TablePath, table_id: i64) -> Vec<u64> {
    rt().block_on(async {
        let connection = Cluster::shared().connection().await;
        let admin = connection.get_admin().expect("admin");
        let latest = admin
            .get_latest_kv_snapshots(table, None)
            .await
            .expect("latest KV snapshots");
        let mut sizes = Vec::new();
        for snapshot in &latest.latest_snapshots {
            let id = snapshot
                .snapshot_id
                .expect("every bucket has a KV snapshot");
            let metadata = admin
                .get_kv_snapshot_metadata(table_id, None, snapshot.bucket_id, id)
                .await
                .expect("KV snapshot metadata");
            let bytes: u64 = metadata
                .snapshot_files
                .iter()
                .map(|file| {
                    let path = file.remote_path.trim_start_matches("file://");
                    std::fs::metadata(path)
                        .unwrap_or_else(|e| {
                            panic!("{path} (the shared cluster's remote storage): {e}")
                        })
                        .len()
                })
                .sum();
            sizes.push(bytes);
        }
        sizes
    })
}

/// The number after `label` in `line` (`… they need 123 bytes …`).
fn number_after(line: &str, label: &str) -> u64 {
    line.split(label)
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no number after {label:?} in {line}"))
}

#[test]
fn a_full_snapshot_dir_is_one_error_line_and_reading_resumes_once_there_is_room() {
    let world = World::new("full_disk");
    let (table, table_id) = create_table("rt_full_disk", sample_pk_schema(), BUCKETS);
    rt().block_on(async {
        let connection = Cluster::shared().connection().await;
        write::upsert_rows(&connection, &table, (0..KEYS).map(row)).await;
        let admin = connection.get_admin().expect("admin");
        tables::kv_snapshots_caught_up(&admin, &table, Duration::from_secs(120)).await;
    });
    let sizes = snapshot_bytes(&table, table_id);
    let largest = *sizes.iter().max().expect("bucket sizes");
    // One bucket's files fit, two do not.
    let kib = (largest * 3 / 2).div_ceil(1024);
    eprintln!("full_disk: KV snapshot bytes per bucket {sizes:?}; a tmpfs of {kib} KiB");
    let root = world.dir.join("snapshots");
    let tmpfs = Tmpfs::mount(&root, kib);
    // Less room than any bucket needs.
    let filler = root.join("filler");
    let leave = sizes.iter().min().expect("bucket sizes") / 2;
    std::fs::write(&filler, vec![0u8; (kib * 1024 - leave) as usize]).expect("fill the tmpfs");

    let mut runtime = world.runtime(&[connector(
        "fluss_full_disk",
        &table,
        TOPIC,
        "json",
        json!({ "changelog_format": "debezium", "snapshot_dir": tmpfs.dir }),
    )]);
    runtime.wait_for_log(NO_ROOM, 1, DELIVERY);
    std::thread::sleep(FULL_FOR);
    let log_full = runtime.log();
    let no_room = lines_with(&log_full, NO_ROOM);
    let plugin_warns: Vec<&str> = lines_with(&log_full, "fluss[")
        .into_iter()
        .filter(|l| l.contains("WARN"))
        .collect();
    eprintln!("full_disk: while full: {no_room:#?}");
    assert_eq!(
        no_room.len(),
        1,
        "one ERROR line while the disk stays full, not one per retry: {no_room:#?}"
    );
    let line = no_room[0];
    assert!(
        line.contains("ERROR")
            && line.contains(&format!("into `snapshot_dir` {}:", root.display()))
            && line.contains("free space there or point `snapshot_dir` at a directory with room"),
        "the line names snapshot_dir and the fix: {line}"
    );
    let (needed, free) = (
        number_after(line, "they need "),
        number_after(line, "its file system has "),
    );
    assert!(
        sizes.contains(&needed) && free < needed,
        "the line names the bucket's bytes ({sizes:?}) and the bytes free: {line}"
    );
    assert!(plugin_warns.is_empty(), "no WARN lines: {plugin_warns:#?}");
    assert_eq!(
        disk_bytes(&root),
        kib * 1024 - leave,
        "nothing of a snapshot that does not fit is written"
    );
    assert_eq!(
        world.server.topic(STREAM, TOPIC).map_or(0, |t| t.messages),
        0,
        "nothing reaches the topic while no snapshot fits"
    );

    // Room again: every key arrives, once.
    std::fs::remove_file(&filler).expect("remove the filler");
    let messages = world.wait_for(TOPIC, &format!("{KEYS} keys"), |m| m.len() >= KEYS as usize);
    runtime.stop(Stop::Interrupt);
    let log = runtime.log();
    let mut keys = std::collections::BTreeSet::new();
    for m in &messages {
        let event: Value = serde_json::from_slice(&m.payload).expect("payload is JSON");
        assert_eq!(event["op"], "r", "snapshot rows only: {event}");
        let id = event["after"]["id"].as_i64().expect("key");
        assert_eq!(
            event["after"]["name"].as_str(),
            Some(name(id).as_str()),
            "key {id}'s row whole"
        );
        assert!(keys.insert(id), "key {id} twice");
    }
    assert_eq!(keys.len(), KEYS as usize, "every key once");
    let copied = lines_with(&log, "KV snapshot");
    eprintln!("full_disk: after room returned: {copied:#?}");
    assert!(
        lines_with(&log, "fluss[")
            .iter()
            .all(|l| !l.contains("panic")),
        "no panic"
    );
    assert_eq!(
        disk_bytes(&root),
        0,
        "every snapshot file is removed, and the connector's directory at close"
    );
    assert!(
        std::fs::read_dir(&root)
            .expect("the tmpfs")
            .next()
            .is_none(),
        "nothing is left in snapshot_dir"
    );
}
