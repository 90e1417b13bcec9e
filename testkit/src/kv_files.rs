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

//! RocksDB checkpoints written by the RocksDB that Fluss's tablet servers run (frocksdbjni,
//! inside fluss-server's jar), the way a Fluss KV snapshot is written: writes without a WAL,
//! then a checkpoint. `testkit/java/KvCheckpoint.java` does the writing, every checkpoint of
//! a call in one JVM; this module encodes the operations and runs it.

use std::path::{Path, PathBuf};
use std::process::Command;

/// One step of a checkpoint's history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Writes a value.
    Put(Vec<u8>, Vec<u8>),
    /// Deletes a key.
    Delete(Vec<u8>),
    /// Deletes a key with RocksDB's single delete.
    SingleDelete(Vec<u8>),
    /// Flushes the memtable into a level-0 file.
    Flush,
    /// Compacts every level.
    Compact,
    /// Takes a snapshot, so that later compactions keep the versions it sees.
    Hold,
    /// Releases the snapshots taken.
    Release,
}

/// A checkpoint to write: its history, RocksDB options as `name=value` (see the Java file's
/// header), and the directory it goes to (which must not exist yet).
#[derive(Debug, Clone)]
pub struct Job {
    pub ops: Vec<Op>,
    pub options: Vec<String>,
    pub dir: PathBuf,
}

/// Writes the checkpoint of every job, with one JVM; panics with the writer's output on
/// failure. `scratch` holds the operation files and the databases they are written to.
pub fn write(jobs: &[Job], scratch: &Path) {
    std::fs::create_dir_all(scratch).expect("create the scratch directory");
    let mut lines = String::new();
    for (n, job) in jobs.iter().enumerate() {
        let ops = scratch.join(format!("ops-{n}"));
        std::fs::write(&ops, encode(&job.ops)).expect("write the operations");
        let work = scratch.join(format!("db-{n}"));
        let _ = std::fs::remove_dir_all(&work);
        let mut fields = vec![
            ops.display().to_string(),
            work.display().to_string(),
            job.dir.display().to_string(),
        ];
        fields.extend(job.options.iter().cloned());
        lines.push_str(&fields.join("\t"));
        lines.push('\n');
    }
    let list = scratch.join("jobs");
    std::fs::write(&list, lines).expect("write the job list");
    let java = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("java")
        .join("KvCheckpoint.java");
    let output = Command::new("java")
        .arg("-cp")
        .arg(server_jar())
        .arg(&java)
        .arg(&list)
        .output()
        .unwrap_or_else(|e| panic!("cannot run java (Java 17 or newer is needed): {e}"));
    assert!(
        output.status.success(),
        "{} failed ({})\n{}{}",
        java.display(),
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    for (n, job) in jobs.iter().enumerate() {
        let _ = std::fs::remove_dir_all(scratch.join(format!("db-{n}")));
        let _ = std::fs::remove_file(scratch.join(format!("ops-{n}")));
        assert!(
            job.dir.join("CURRENT").is_file(),
            "no checkpoint in {}",
            job.dir.display()
        );
    }
}

/// The operations as the Java writer reads them: a byte per operation, big-endian lengths.
fn encode(ops: &[Op]) -> Vec<u8> {
    let mut out = Vec::new();
    let bytes = |out: &mut Vec<u8>, b: &[u8]| {
        let len = i32::try_from(b.len()).expect("a key or value under 2 GiB");
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(b);
    };
    for op in ops {
        match op {
            Op::Put(key, value) => {
                out.push(b'P');
                bytes(&mut out, key);
                bytes(&mut out, value);
            }
            Op::Delete(key) => {
                out.push(b'D');
                bytes(&mut out, key);
            }
            Op::SingleDelete(key) => {
                out.push(b'S');
                bytes(&mut out, key);
            }
            Op::Flush => out.push(b'F'),
            Op::Compact => out.push(b'C'),
            Op::Hold => out.push(b'N'),
            Op::Release => out.push(b'R'),
        }
    }
    out
}

/// fluss-server's jar, fetched from Maven Central on first use (`scripts/fluss-cluster.sh`).
fn server_jar() -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("scripts")
        .join("fluss-cluster.sh");
    let output = Command::new("bash")
        .arg(&script)
        .arg("server-jar")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    assert!(
        output.status.success(),
        "{} server-jar failed: {}",
        script.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    let jar = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    assert!(jar.is_file(), "no jar at {}", jar.display());
    jar
}

/// What RocksDB itself read from the checkpoint in `dir` after writing it: each key and value,
/// in its order.
pub fn rocksdb_rows(dir: &Path) -> Vec<(Vec<u8>, Vec<u8>)> {
    let path = PathBuf::from(format!("{}.rows", dir.display()));
    let bytes =
        std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let mut rows = Vec::new();
    let mut rest = &bytes[..];
    let field = |rest: &mut &[u8]| {
        let (len, tail) = rest.split_at(4);
        let len = i32::from_be_bytes([len[0], len[1], len[2], len[3]]) as usize;
        let (value, tail) = tail.split_at(len);
        *rest = tail;
        value.to_vec()
    };
    while !rest.is_empty() {
        let key = field(&mut rest);
        let value = field(&mut rest);
        rows.push((key, value));
    }
    rows
}
