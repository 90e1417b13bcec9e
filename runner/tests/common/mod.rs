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

//! Locates `libiggy_test_source.so`, building it when missing or older than its sources.
//!
//! `cargo test` does not build a cdylib that is only a workspace member, so the first
//! test that needs it runs `cargo build -p iggy_test_source` for the same profile and
//! target dir. This does not deadlock: cargo releases its build-directory lock before it
//! runs test binaries (checked with `cargo test -p fluss-source-runner` on a clean
//! library). When another cargo build holds the lock, the call just waits for it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::SystemTime;

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("runner/ has a parent")
        .to_path_buf()
}

fn newest_source(dir: &Path, newest: &mut SystemTime) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            newest_source(&path, newest);
        } else if let Ok(modified) = entry.metadata().and_then(|m| m.modified()) {
            *newest = (*newest).max(modified);
        }
    }
}

fn is_stale(lib: &Path) -> bool {
    let Ok(built) = lib.metadata().and_then(|m| m.modified()) else {
        return true;
    };
    let root = workspace_root();
    let mut newest = SystemTime::UNIX_EPOCH;
    for dir in ["sdk/src", "sdk/test_source/src"] {
        newest_source(&root.join(dir), &mut newest);
    }
    for file in ["sdk/Cargo.toml", "sdk/test_source/Cargo.toml"] {
        if let Ok(modified) = root.join(file).metadata().and_then(|m| m.modified()) {
            newest = newest.max(modified);
        }
    }
    newest > built
}

/// Path of the test source library for this test binary's profile.
pub fn test_source_library() -> PathBuf {
    static LIBRARY: OnceLock<PathBuf> = OnceLock::new();
    LIBRARY
        .get_or_init(|| {
            // target/<profile>/deps/<test binary>
            let exe = std::env::current_exe().expect("test binary path");
            let profile_dir = exe
                .parent()
                .and_then(Path::parent)
                .expect("test binary lives in target/<profile>/deps");
            let lib = profile_dir.join("libiggy_test_source.so");
            if is_stale(&lib) {
                let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
                    Some("debug") | None => "dev".to_owned(),
                    Some(other) => other.to_owned(),
                };
                let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
                let status = Command::new(cargo)
                    .args(["build", "-p", "iggy_test_source", "--profile", &profile])
                    .env(
                        "CARGO_TARGET_DIR",
                        profile_dir.parent().expect("target dir"),
                    )
                    .current_dir(workspace_root())
                    .status()
                    .expect("run cargo build -p iggy_test_source");
                assert!(
                    status.success(),
                    "cargo build -p iggy_test_source failed; build it by hand to see why"
                );
            }
            assert!(lib.exists(), "{} is missing after the build", lib.display());
            lib
        })
        .clone()
}

/// A fresh directory under cargo's per-test tmp dir.
pub fn scratch_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "{name}-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}
