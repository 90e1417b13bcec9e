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

//! The KV snapshot reader (`snapshot_files::rocks`) against RocksDB itself: random histories
//! of puts, deletes, single deletes, flushes, compactions and held snapshots, written with
//! random options (table format versions 2 to 5, block and restart sizes, every compression
//! Fluss offers per level, checksum types, index and data-block index types, bloom filters,
//! memtable and file sizes) by the RocksDB of Fluss 0.9.1's tablet servers, as a Fluss KV
//! snapshot is (writes without a WAL, then a checkpoint). The reader must read the same rows in
//! the same order as RocksDB reads from each checkpoint. `KV_FILES_SEED` replays a run,
//! `KV_FILES_CASES` sets how many checkpoints (default 16).

use std::collections::BTreeMap;

use fluss_testkit::kv_files::{self, Job, Op};
use fluss_testkit::seed::Rng;
use iggy_connector_fluss_source::snapshot::files::rocks::Checkpoint;

/// Keys and their values.
type Rows = BTreeMap<Vec<u8>, Vec<u8>>;

/// A random history and the rows it leaves when every single delete is well defined.
fn history(rng: &mut Rng) -> (Vec<Op>, Option<Rows>) {
    let steps = rng.below(6_000);
    let space = rng.between(1, 3_000);
    let mut ops = Vec::new();
    let mut model = BTreeMap::new();
    // RocksDB leaves a single delete undefined after more than one put of its key, and a key
    // both deleted and single deleted.
    let mut puts: BTreeMap<Vec<u8>, u32> = BTreeMap::new();
    let mut deleted = std::collections::BTreeSet::new();
    let mut single_deleted = std::collections::BTreeSet::new();
    let mut defined = true;
    let key = |rng: &mut Rng| {
        let n = rng.below(space);
        // Keys of different lengths that share prefixes.
        let mut key = b"key".to_vec();
        key.extend_from_slice(&(n as u32).to_be_bytes());
        key.extend(std::iter::repeat_n(
            b'a' + (n % 26) as u8,
            (n % 13) as usize,
        ));
        key
    };
    for _ in 0..steps {
        match rng.below(1_000) {
            0..700 => {
                let k = key(rng);
                let len = if rng.chance(5) {
                    rng.between(5_000, 25_000)
                } else {
                    rng.below(300)
                } as usize;
                let value: Vec<u8> = if rng.chance(50) {
                    (0..len).map(|_| rng.bits() as u8).collect()
                } else {
                    let base = rng.bits() as u8;
                    (0..len).map(|i| base.wrapping_add((i / 7) as u8)).collect()
                };
                *puts.entry(k.clone()).or_default() += 1;
                model.insert(k.clone(), value.clone());
                ops.push(Op::Put(k, value));
            }
            700..850 => {
                let k = key(rng);
                puts.remove(&k);
                model.remove(&k);
                defined &= !single_deleted.contains(&k);
                deleted.insert(k.clone());
                ops.push(Op::Delete(k));
            }
            850..900 => {
                let k = key(rng);
                defined &= puts.get(&k).copied().unwrap_or(0) <= 1 && !deleted.contains(&k);
                single_deleted.insert(k.clone());
                puts.remove(&k);
                model.remove(&k);
                ops.push(Op::SingleDelete(k));
            }
            900..930 => ops.push(Op::Flush),
            930..935 => ops.push(Op::Compact),
            935..945 => ops.push(Op::Hold),
            945..950 => ops.push(Op::Release),
            _ => {}
        }
    }
    (ops, defined.then_some(model))
}

/// Random RocksDB options, as `name=value` for the writer.
fn options(rng: &mut Rng) -> Vec<String> {
    let codecs = ["NO", "SNAPPY", "LZ4", "ZSTD"];
    vec![
        format!("format_version={}", rng.between(2, 5)),
        format!("block_size={}", rng.pick(&[256, 1024, 4096, 16384])),
        format!("restart_interval={}", rng.pick(&[1, 4, 16])),
        format!("index_restart_interval={}", rng.pick(&[1, 4, 16])),
        format!(
            "compression={},{},{}",
            rng.pick(&codecs),
            rng.pick(&codecs),
            rng.pick(&codecs)
        ),
        format!("checksum={}", rng.pick(&["crc32c", "xxhash", "xxhash64"])),
        format!(
            "index={}",
            rng.pick(&["binary", "hash", "two_level", "first_key"])
        ),
        format!("data_index={}", rng.pick(&["binary", "hash"])),
        format!("bloom={}", rng.chance(50)),
        format!("write_buffer={}", 65_536 << rng.below(5)),
        format!("target_file_size={}", 65_536 << rng.below(5)),
        format!("level0_trigger={}", rng.between(2, 4)),
        format!("auto_compactions={}", rng.chance(75)),
    ]
}

fn read(checkpoint: &std::path::Path) -> Vec<(Vec<u8>, Vec<u8>)> {
    let checkpoint = Checkpoint::open(checkpoint).unwrap_or_else(|e| panic!("open: {e}"));
    let mut rows = checkpoint.rows().unwrap_or_else(|e| panic!("rows: {e}"));
    let mut read = Vec::new();
    while rows.advance().unwrap_or_else(|e| panic!("advance: {e}")) {
        read.push((rows.key().to_vec(), rows.value().to_vec()));
    }
    read
}

#[test]
fn the_reader_reads_what_rocksdb_reads_from_random_checkpoints() {
    let mut rng = Rng::from_env("KV_FILES_SEED");
    let cases: usize = std::env::var("KV_FILES_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(16);
    let scratch = std::env::temp_dir().join(format!("kv-files-it-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    let mut jobs = Vec::new();
    let mut models = Vec::new();
    for case in 0..cases {
        let (ops, model) = history(&mut rng);
        jobs.push(Job {
            ops,
            options: options(&mut rng),
            dir: scratch.join(format!("checkpoint-{case}")),
        });
        models.push(model);
    }
    kv_files::write(&jobs, &scratch.join("work"));
    let mut files = 0;
    let mut rows = 0;
    for (case, (job, model)) in jobs.iter().zip(&models).enumerate() {
        let read = read(&job.dir);
        let expected = kv_files::rocksdb_rows(&job.dir);
        assert!(
            read == expected,
            "case {case} ({}): the reader read {} rows, RocksDB {}; first difference at row {}",
            job.options.join(" "),
            read.len(),
            expected.len(),
            read.iter()
                .zip(&expected)
                .position(|(a, b)| a != b)
                .unwrap_or(read.len().min(expected.len()))
        );
        if let Some(model) = model {
            let written: Vec<_> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            assert!(read == written, "case {case}: RocksDB lost or kept a write");
        }
        files += Checkpoint::open(&job.dir).unwrap().files();
        rows += read.len();
    }
    eprintln!("{cases} checkpoints, {files} table files, {rows} rows: read as RocksDB reads them");
    std::fs::remove_dir_all(&scratch).unwrap();
}
