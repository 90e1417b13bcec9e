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

//! Counting the Fluss requests a process sends, by API: `strace` of its socket writes, whose
//! frames fluss-rs writes as a 4-byte length and a header that begins with the 2-byte API key
//! (fluss-rs `src/rpc/frame.rs`, `src/rpc/message/header.rs`). Exact where TCP counters are
//! not (Nagle merges small requests into one segment), and cheap enough for an idle process;
//! a busy one runs slower under it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// Requests per (peer port, Fluss API key).
pub type Census = BTreeMap<(u16, u16), u64>;

/// Fluss API keys (fluss-rs `src/rpc/api_key.rs`) a source sends.
const API_NAMES: &[(u16, &str)] = &[
    (1000, "ApiVersions"),
    (1003, "ListDatabases"),
    (1007, "GetTable"),
    (1009, "ListPartitionInfos"),
    (1011, "GetTableSchema"),
    (1012, "MetaData"),
    (1015, "FetchLog"),
    (1021, "ListOffsets"),
    (1023, "GetLatestKvSnapshots"),
    (1024, "GetKvSnapshotMetadata"),
    (1025, "GetFileSystemSecurityToken"),
    (1038, "Authenticate"),
    (1056, "AcquireKvSnapshotLease"),
    (1057, "ReleaseKvSnapshotLease"),
];

/// The name of a Fluss API key (`api N` for one not listed).
pub fn api_name(key: u16) -> String {
    API_NAMES
        .iter()
        .find(|(k, _)| *k == key)
        .map_or(format!("api {key}"), |(_, n)| (*n).to_owned())
}

/// `strace` attached to every thread of a process, writing into a file until
/// [`RequestCensus::finish`].
pub struct RequestCensus {
    strace: Child,
    out: PathBuf,
}

impl RequestCensus {
    /// Attaches to `pid` (`strace -f -yy -xx -s 8` of `sendto` and `write`), its output in
    /// `dir`; `None` when strace is missing.
    pub fn start(pid: u32, dir: &Path) -> Option<RequestCensus> {
        let out = dir.join(format!("census-{pid}.strace"));
        let strace = Command::new("strace")
            .args([
                "-qq",
                "-f",
                "-yy",
                "-xx",
                "-s",
                "8",
                "-e",
                "trace=sendto,write",
                "-p",
            ])
            .arg(pid.to_string())
            .arg("-o")
            .arg(&out)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        Some(RequestCensus { strace, out })
    }

    /// Detaches and counts the requests per (peer port, API key); `None` when strace wrote
    /// nothing (it could not attach).
    pub fn finish(mut self) -> Option<Census> {
        // strace detaches on SIGINT; our own child, not reaped yet, so its pid is ours.
        let _ = Command::new("kill")
            .args(["-INT", &self.strace.id().to_string()])
            .status();
        let _ = self.strace.wait();
        let text = std::fs::read_to_string(&self.out).ok()?;
        let _ = std::fs::remove_file(&self.out);
        Some(count(&text))
    }
}

/// The requests in strace's lines: per socket, each frame's first write carries its length
/// and (unless the length was written alone) its API key.
fn count(text: &str) -> Census {
    // Per socket (its description): bytes left of the frame being written, and whether its
    // API key is still to come (a large frame's length is written on its own).
    let mut frames: BTreeMap<String, (u64, bool)> = BTreeMap::new();
    let mut counts = Census::new();
    for line in text.lines() {
        let Some(socket) = line
            .split_once("<TCP:[")
            .and_then(|(_, rest)| rest.split_once("]>"))
            .map(|(s, _)| s)
        else {
            continue;
        };
        let Some(port) = socket
            .split_once("->")
            .and_then(|(_, peer)| peer.rsplit_once(':'))
            .and_then(|(_, p)| p.parse::<u16>().ok())
        else {
            continue;
        };
        let Some((data, rest)) = line
            .split_once('"')
            .and_then(|(_, rest)| rest.split_once('"'))
        else {
            continue;
        };
        let bytes: Vec<u8> = data
            .split("\\x")
            .filter_map(|h| u8::from_str_radix(h.get(..2)?, 16).ok())
            .collect();
        // The length argument, and the result where the call finished on this line.
        let asked: u64 = rest
            .split(',')
            .nth(1)
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0);
        let written = match line.rsplit_once(" = ") {
            Some((_, result)) if !line.contains("<unfinished") => {
                match result
                    .split_whitespace()
                    .next()
                    .and_then(|n| n.parse::<i64>().ok())
                {
                    Some(n) if n < 0 => continue,
                    Some(n) => n as u64,
                    None => asked,
                }
            }
            _ => asked,
        };
        let (left, key_pending) = frames.entry(socket.to_owned()).or_insert((0, false));
        let api = |b: &[u8], at: usize| Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]));
        if *left == 0 {
            if bytes.len() < 4 {
                continue;
            }
            let length = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as u64;
            match api(&bytes, 4) {
                Some(key) => *counts.entry((port, key)).or_default() += 1,
                None => *key_pending = true,
            }
            *left = (4 + length).saturating_sub(written);
        } else {
            if *key_pending && let Some(key) = api(&bytes, 0) {
                *counts.entry((port, key)).or_default() += 1;
                *key_pending = false;
            }
            *left = left.saturating_sub(written);
        }
    }
    counts
}
