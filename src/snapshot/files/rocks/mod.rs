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

//! A RocksDB checkpoint (what a Fluss KV snapshot is) read without RocksDB: its MANIFEST for
//! the live table files of the default column family, and those files in RocksDB's
//! block-based table format (versions 0 to 5, the ones RocksDB 6 writes), merged into the
//! newest version of each key in key order.
//!
//! Every block's checksum is checked. What Fluss's KV store never writes is refused with a
//! [`Malformed::Unsupported`] error rather than read approximately: merge operands, range
//! deletions, blob files, ingested files, another key order, compression other than none,
//! Snappy, LZ4 and Zstandard.
//!
//! - [`coding`]: varints, fixed-width integers, length-prefixed slices, the masked CRC;
//! - [`block`]: a block's trailer, decompression and entries;
//! - [`table`]: a table file's footer, properties, index and data blocks;
//! - [`manifest`]: `CURRENT`, the MANIFEST's log records and version edits;
//! - [`merge`]: the rows across the files.

mod block;
mod coding;
mod manifest;
mod merge;
mod table;

use std::fmt;
use std::path::{Path, PathBuf};

pub use merge::Rows;

use manifest::LiveFile;
use merge::Run;

/// What is wrong with a file of a checkpoint.
#[derive(Debug)]
pub enum Malformed {
    /// Reading it failed.
    Io(std::io::Error),
    /// It ends inside the named structure.
    Truncated(&'static str),
    /// A varint longer than its type allows.
    Varint(&'static str),
    /// A block or log record does not match its checksum.
    Checksum,
    /// A compressed block does not decompress.
    Decompress(String),
    /// A feature this reader does not read (see the module's docs).
    Unsupported(String),
}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io(error) => write!(f, "{error}"),
            Self::Truncated(what) => write!(f, "corrupt: it ends inside {what}"),
            Self::Varint(what) => write!(f, "corrupt: an overlong varint in {what}"),
            Self::Checksum => write!(f, "corrupt: a block does not match its checksum"),
            Self::Decompress(cause) => write!(f, "corrupt: a block does not decompress ({cause})"),
            Self::Unsupported(what) => write!(f, "holds {what}, which this reader does not read"),
        }
    }
}

/// A problem with one file of a checkpoint.
#[derive(Debug)]
pub struct Error {
    /// The file's name within the checkpoint's directory.
    pub file: String,
    /// What is wrong with it.
    pub problem: Malformed,
}

impl Error {
    fn at(path: &Path, problem: Malformed) -> Self {
        let file = path
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        Self { file, problem }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.file, self.problem)
    }
}

impl std::error::Error for Error {}

/// A checkpoint's live table files, as its MANIFEST lists them.
#[derive(Debug)]
pub struct Checkpoint {
    /// The files in merge order: each level-0 file (newest first), then each deeper level's
    /// files in key order.
    runs: Vec<Vec<PathBuf>>,
}

impl Checkpoint {
    /// Reads the checkpoint in `dir`: which files hold its data (each must be there).
    pub fn open(dir: &Path) -> Result<Self, Error> {
        let name = manifest::current(dir).map_err(|p| Error::at(&dir.join("CURRENT"), p))?;
        let path = dir.join(&name);
        let bytes = std::fs::read(&path).map_err(|e| Error::at(&path, Malformed::Io(e)))?;
        let files = manifest::live_files(&bytes).map_err(|p| Error::at(&path, p))?;
        let runs = runs(dir, files);
        for path in runs.iter().flatten() {
            if !path.is_file() {
                let missing = std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!("the MANIFEST lists it but it is not in {}", dir.display()),
                );
                return Err(Error::at(path, Malformed::Io(missing)));
            }
        }
        Ok(Self { runs })
    }

    /// Its rows, from the first key.
    pub fn rows(&self) -> Result<Rows, Error> {
        Rows::new(self.runs.iter().cloned().map(Run::new).collect())
    }

    /// How many table files hold its data.
    pub fn files(&self) -> usize {
        self.runs.iter().map(Vec::len).sum()
    }
}

/// The live files of `dir` grouped into runs (see [`Checkpoint::runs`]).
fn runs(dir: &Path, mut files: Vec<LiveFile>) -> Vec<Vec<PathBuf>> {
    files.sort_by(|a, b| {
        a.level.cmp(&b.level).then_with(|| match a.level {
            0 => b
                .largest_seqno
                .cmp(&a.largest_seqno)
                .then(b.number.cmp(&a.number)),
            _ => a.smallest.cmp(&b.smallest),
        })
    });
    let path = |file: &LiveFile| dir.join(format!("{:06}.sst", file.number));
    let mut runs: Vec<Vec<PathBuf>> = Vec::new();
    let mut level = None;
    for file in &files {
        if file.level == 0 || level != Some(file.level) {
            runs.push(Vec::new());
        }
        level = Some(file.level);
        if let Some(run) = runs.last_mut() {
            run.push(path(file));
        }
    }
    runs
}

#[cfg(test)]
mod tests;
