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

//! The reader on a checkpoint that RocksDB wrote (`testdata/two_levels`, by the frocksdbjni of
//! fluss-server 0.9.1 through `testkit/java/KvCheckpoint.java`): `key000`..`key149` put as
//! `value-<i>`, flushed and compacted into a level-1 file (Zstandard); then `key100`..`key199`
//! put as `new-<i>` and `key010`..`key019` deleted, flushed into a level-0 file (LZ4).
//! Differential tests against RocksDB on random histories and options are in `tests/it`.

use std::path::{Path, PathBuf};

use super::*;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src/snapshot/files/rocks/testdata/two_levels")
}

/// A copy of the fixture that a test may damage.
fn copy_of_fixture(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rocks-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for entry in std::fs::read_dir(fixture()).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), dir.join(entry.file_name())).unwrap();
    }
    dir
}

fn read_all(dir: &Path) -> Result<Vec<(String, String)>, Error> {
    let checkpoint = Checkpoint::open(dir)?;
    let mut rows = checkpoint.rows()?;
    let mut read = Vec::new();
    while rows.advance()? {
        let text = |b: &[u8]| String::from_utf8(b.to_vec()).unwrap();
        read.push((text(rows.key()), text(rows.value())));
    }
    Ok(read)
}

#[test]
fn every_live_key_comes_once_in_key_order_with_its_newest_value() {
    let checkpoint = Checkpoint::open(&fixture()).unwrap();
    assert_eq!(checkpoint.files(), 2);
    let read = read_all(&fixture()).unwrap();
    let expected: Vec<(String, String)> = (0..200)
        .filter(|i| !(10..20).contains(i))
        .map(|i| {
            let value = if i >= 100 {
                format!("new-{i}")
            } else {
                format!("value-{i}")
            };
            (format!("key{i:03}"), value)
        })
        .collect();
    assert_eq!(read, expected);
}

#[test]
fn a_damaged_block_is_refused_naming_its_file() {
    let dir = copy_of_fixture("damaged");
    let file = dir.join("000010.sst");
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[20] ^= 0x40;
    std::fs::write(&file, bytes).unwrap();
    let error = read_all(&dir).unwrap_err();
    assert_eq!(error.file, "000010.sst");
    assert!(matches!(error.problem, Malformed::Checksum), "{error}");
    assert_eq!(
        error.to_string(),
        "000010.sst: corrupt: a block does not match its checksum"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_missing_or_cut_file_is_refused_naming_it() {
    let dir = copy_of_fixture("missing");
    std::fs::remove_file(dir.join("000009.sst")).unwrap();
    let error = Checkpoint::open(&dir).unwrap_err();
    assert_eq!(error.file, "000009.sst");
    assert!(
        error.to_string().contains("the MANIFEST lists it"),
        "{error}"
    );

    let dir = copy_of_fixture("cut");
    let file = dir.join("000009.sst");
    let bytes = std::fs::read(&file).unwrap();
    std::fs::write(&file, &bytes[..bytes.len() - 20]).unwrap();
    let error = read_all(&dir).unwrap_err();
    assert_eq!(error.file, "000009.sst");
    assert!(
        matches!(error.problem, Malformed::Unsupported(_)),
        "{error}"
    );
    assert!(error.to_string().contains("magic number"), "{error}");

    std::fs::remove_file(dir.join("CURRENT")).unwrap();
    let error = Checkpoint::open(&dir).unwrap_err();
    assert_eq!(error.file, "CURRENT");
    assert!(matches!(error.problem, Malformed::Io(_)), "{error}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_damaged_manifest_is_refused() {
    let dir = copy_of_fixture("manifest");
    let file = dir.join("MANIFEST-000004");
    let mut bytes = std::fs::read(&file).unwrap();
    let last = bytes.len() - 3;
    bytes[last] ^= 1;
    std::fs::write(&file, bytes).unwrap();
    let error = Checkpoint::open(&dir).unwrap_err();
    assert_eq!(error.file, "MANIFEST-000004");
    assert!(matches!(error.problem, Malformed::Checksum), "{error}");
    std::fs::remove_dir_all(dir).unwrap();
}
