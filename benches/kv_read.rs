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

//! The KV snapshot reader alone: a bucket's checkpoint files read in key order and decoded into
//! Arrow batches ([`KvRows`], as the snapshot's reading thread does), without a cluster. The
//! checkpoint is written once by the RocksDB of Fluss 0.9.1's tablet servers with the options
//! they give their KV store (4 KiB blocks, LZ4; `fluss_testkit::kv_files`, needs Java 17) and
//! rows of the e2e bench's primary-key table (`id BIGINT, name STRING, amount DOUBLE`, each
//! value a schema id and a COMPACTED row), then copied and read once per round.
//!
//! Run: `cargo bench --bench kv_read`. `KV_READ_KEYS` (default 1,000,000), `KV_READ_ROUNDS`
//! (default 5), `KV_READ_BATCH` (rows per batch, default 5,000: the e2e bench's Debezium
//! `batch_size`). Counted instead of timed: `KV_READ_ROUNDS=1 valgrind --tool=callgrind
//! target/release/deps/kv_read-<hash>` (the database is written by an earlier run).

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use fluss::metadata::{KvFormat, RowType};
use fluss::row::Datum;
use fluss::row::encode::{RowEncoder, RowEncoderFactory};
use fluss_testkit::kv_files::{self, Job, Op};
use fluss_testkit::tables;
use iggy_connector_fluss_source::position::BucketKey;
use iggy_connector_fluss_source::snapshot::files::RowBatches;
use iggy_connector_fluss_source::snapshot::files::rows::{KvRows, Layout};
use iggy_connector_fluss_source::snapshot::kv::files::LocalCopy;

/// The e2e bench's primary-key table.
fn row_type() -> RowType {
    tables::sample_pk_schema().row_type().clone()
}

/// Writes `keys` rows as Fluss's KV store holds them (big-endian ids keep RocksDB's order the
/// ids' order) with the RocksDB and options of Fluss 0.9.1's tablet servers, unless `dir`
/// already holds them.
fn write_database(dir: &Path, keys: usize) {
    if dir.join("CURRENT").exists() {
        return;
    }
    let mut encoder = RowEncoderFactory::create(KvFormat::COMPACTED, row_type()).expect("encoder");
    let mut ops = Vec::with_capacity(keys + 1);
    for id in 0..keys as i64 {
        encoder.start_new_row().expect("row");
        encoder.encode_field(0, Datum::from(id)).expect("id");
        let name = tables::sample_name(id);
        encoder
            .encode_field(1, Datum::from(name.as_str()))
            .expect("name");
        encoder
            .encode_field(2, Datum::from(tables::sample_amount(id)))
            .expect("amount");
        let row = encoder.finish_row().expect("finish");
        let mut value = 1i16.to_le_bytes().to_vec();
        value.extend_from_slice(&row);
        ops.push(Op::Put(id.to_be_bytes().to_vec(), value));
    }
    ops.push(Op::Flush);
    let job = Job {
        ops,
        options: vec!["compression=LZ4".into(), "block_size=4096".into()],
        dir: dir.to_path_buf(),
    };
    kv_files::write(&[job], &dir.with_extension("scratch"));
}

/// A copy of `from`'s files in `to` (a [`LocalCopy`] removes its directory when dropped).
fn copy_files(from: &Path, to: &Path) {
    let _ = std::fs::remove_dir_all(to);
    std::fs::create_dir_all(to).expect("copy directory");
    for entry in std::fs::read_dir(from).expect("database directory") {
        let entry = entry.expect("entry");
        std::fs::copy(entry.path(), to.join(entry.file_name())).expect("copy a file");
    }
}

fn main() {
    let keys = common::env_usize("KV_READ_KEYS", 1_000_000);
    let rounds = common::env_usize("KV_READ_ROUNDS", 5).max(1);
    let batch_rows = common::env_usize("KV_READ_BATCH", 5_000);
    let dir = std::env::temp_dir().join(format!("kv-read-bench-{keys}"));
    let started = Instant::now();
    write_database(&dir, keys);
    eprintln!(
        "kv_read: {keys} keys in {} ({:.1?})",
        dir.display(),
        started.elapsed()
    );
    let layout = Layout {
        row_type: row_type(),
        kv_format: KvFormat::COMPACTED,
        schema_id: 1,
        versions: BTreeMap::from([(1, row_type())]),
        projection: None,
    };
    let mut seconds = Vec::new();
    for round in 0..rounds {
        let copy: PathBuf = std::env::temp_dir().join(format!("kv-read-bench-copy-{keys}"));
        copy_files(&dir, &copy);
        let rows = KvRows::open(
            &layout,
            BucketKey::bucket(0),
            LocalCopy::existing(copy, 0),
            batch_rows,
        )
        .expect("open the copy");
        let started = Instant::now();
        let mut read = 0;
        Box::new(rows).read_each(&mut |batch| match batch.expect("a batch") {
            Some(batch) => {
                read += batch.num_rows();
                true
            }
            None => false,
        });
        let elapsed = started.elapsed().as_secs_f64();
        assert_eq!(read, keys, "every key read");
        eprintln!(
            "round {round}: {read} rows in {elapsed:.3} s, {:.0} ns per row",
            elapsed * 1e9 / read as f64
        );
        seconds.push(elapsed);
    }
    seconds.sort_by(f64::total_cmp);
    let median = seconds[seconds.len() / 2];
    println!(
        "kv_read: {keys} keys, batches of {batch_rows}: median {:.0} ns per row ({:.2} M rows/s) over {rounds} rounds",
        median * 1e9 / keys as f64,
        keys as f64 / median / 1e6
    );
}
