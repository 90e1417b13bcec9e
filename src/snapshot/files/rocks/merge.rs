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

//! A checkpoint's rows: the newest version of each key across its table files, in key order,
//! without the keys whose newest version is a deletion.
//!
//! A key's versions are ordered by sequence number, newest first, within a file and across
//! files. The files are read as runs, each in key order: every level-0 file is a run of its
//! own (their key ranges overlap), and each deeper level is one run of its files in key order
//! (theirs do not). The run with the smallest key (its newest version first) goes next; on the
//! same key and sequence number the earlier run wins (level 0 newest first, then the levels
//! down), as in RocksDB.

use std::cmp::Ordering;
use std::collections::VecDeque;
use std::path::PathBuf;

use super::table::Table;
use super::{Error, Malformed};

/// Bytes of an internal key after its user key: sequence number and type.
const TRAILER: usize = 8;

/// Table files read one after another.
pub(super) struct Run {
    files: VecDeque<PathBuf>,
    table: Option<(PathBuf, Table)>,
}

impl Run {
    pub(super) fn new(files: Vec<PathBuf>) -> Self {
        Self {
            files: files.into(),
            table: None,
        }
    }

    /// Moves to the next entry; `false` after the run's last.
    fn advance(&mut self) -> Result<bool, Error> {
        loop {
            if let Some((path, table)) = &mut self.table
                && table
                    .advance()
                    .map_err(|problem| Error::at(path, problem))?
            {
                return Ok(true);
            }
            let Some(path) = self.files.pop_front() else {
                self.table = None;
                return Ok(false);
            };
            let table = Table::open(&path).map_err(|problem| Error::at(&path, problem))?;
            self.table = Some((path, table));
        }
    }

    fn table(&self) -> Option<&Table> {
        self.table.as_ref().map(|(_, table)| table)
    }

    fn key(&self) -> &[u8] {
        self.table().map_or(&[], Table::key)
    }

    fn value(&self) -> &[u8] {
        self.table().map_or(&[], Table::value)
    }

    fn malformed(&self, problem: Malformed) -> Error {
        match &self.table {
            Some((path, _)) => Error::at(path, problem),
            None => Error::at(&PathBuf::new(), problem),
        }
    }
}

/// The live rows of a checkpoint, in key order: after each [`Rows::advance`] that returned
/// `true`, [`Rows::key`] and [`Rows::value`] are the next row's.
pub struct Rows {
    runs: Vec<Run>,
    /// Which runs stand at an entry.
    live: Vec<bool>,
    /// The run whose entry is the current row (it moves on at the next advance).
    current: Option<usize>,
    /// The user key decided last: its older versions are passed over.
    last: Option<Vec<u8>>,
}

impl Rows {
    /// The rows of `runs`, earliest run first on equal versions.
    pub(super) fn new(mut runs: Vec<Run>) -> Result<Self, Error> {
        let live = runs
            .iter_mut()
            .map(Run::advance)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            runs,
            live,
            current: None,
            last: None,
        })
    }

    /// Moves to the next row; `false` after the last.
    pub fn advance(&mut self) -> Result<bool, Error> {
        if let Some(run) = self.current.take() {
            self.live[run] = self.runs[run].advance()?;
        }
        loop {
            let Some(run) = self.smallest()? else {
                return Ok(false);
            };
            let key = self.runs[run].key();
            let (user, trailer) = split(key).map_err(|p| self.runs[run].malformed(p))?;
            if self.last.as_deref() == Some(user) {
                // An older version of a key already decided.
                self.live[run] = self.runs[run].advance()?;
                continue;
            }
            let last = self.last.get_or_insert_with(Vec::new);
            last.clear();
            last.extend_from_slice(user);
            match (trailer & 0xff) as u8 {
                // A value.
                1 => {
                    self.current = Some(run);
                    return Ok(true);
                }
                // A deletion or a single deletion: the key has no row.
                0 | 7 => self.live[run] = self.runs[run].advance()?,
                kind => {
                    let what = match kind {
                        2 => "merge operands".to_owned(),
                        0x11 => "values in blob files".to_owned(),
                        0x14 => "keys with timestamps".to_owned(),
                        other => format!("entries of type {other}"),
                    };
                    return Err(self.runs[run].malformed(Malformed::Unsupported(what)));
                }
            }
        }
    }

    /// The current row's key.
    pub fn key(&self) -> &[u8] {
        match self.current {
            Some(run) => {
                let key = self.runs[run].key();
                &key[..key.len() - TRAILER]
            }
            None => &[],
        }
    }

    /// The current row's value.
    pub fn value(&self) -> &[u8] {
        self.current.map_or(&[], |run| self.runs[run].value())
    }

    /// The run whose entry comes first, if any run has one left.
    fn smallest(&self) -> Result<Option<usize>, Error> {
        let mut best: Option<usize> = None;
        for (run, live) in self.live.iter().enumerate() {
            if !live {
                continue;
            }
            best = match best {
                None => Some(run),
                Some(other) => {
                    let order = compare(self.runs[run].key(), self.runs[other].key())
                        .map_err(|p| self.runs[run].malformed(p))?;
                    // Equal versions: the earlier run (already `other`) wins.
                    Some(if order == Ordering::Less { run } else { other })
                }
            };
        }
        Ok(best)
    }
}

/// An internal key's user key and trailer (sequence number << 8 | type).
fn split(key: &[u8]) -> Result<(&[u8], u64), Malformed> {
    let at = key
        .len()
        .checked_sub(TRAILER)
        .ok_or(Malformed::Truncated("an internal key"))?;
    let mut trailer = [0; TRAILER];
    trailer.copy_from_slice(&key[at..]);
    Ok((&key[..at], u64::from_le_bytes(trailer)))
}

/// RocksDB's order of internal keys: user keys bytewise, then newest (largest trailer) first.
fn compare(a: &[u8], b: &[u8]) -> Result<Ordering, Malformed> {
    let (a_user, a_trailer) = split(a)?;
    let (b_user, b_trailer) = split(b)?;
    Ok(a_user.cmp(b_user).then(b_trailer.cmp(&a_trailer)))
}
