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

//! Which table files hold a checkpoint's data: `CURRENT` names the MANIFEST, a log of
//! version edits (files added to and deleted from the levels of each column family), read
//! here for the default column family.

use std::collections::BTreeMap;
use std::path::Path;

use super::Malformed;
use super::coding::{Reader, masked_crc32c};

/// Bytes of a block of the log format; records never straddle a block's last 6 bytes.
const LOG_BLOCK: usize = 32 * 1024;
/// The only key order this reader knows.
const BYTEWISE: &[u8] = b"leveldb.BytewiseComparator";

/// A live table file of the default column family.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct LiveFile {
    pub(super) number: u64,
    pub(super) level: u32,
    /// Its smallest user key (levels 1 and up hold files of disjoint key ranges).
    pub(super) smallest: Vec<u8>,
    /// Its largest sequence number (level 0 files are newest first by it).
    pub(super) largest_seqno: u64,
}

/// The name of the MANIFEST that `CURRENT` in `dir` names.
pub(super) fn current(dir: &Path) -> Result<String, Malformed> {
    let text = std::fs::read_to_string(dir.join("CURRENT")).map_err(Malformed::Io)?;
    let name = text.trim_end_matches('\n');
    if !name.starts_with("MANIFEST-") || name.contains('/') {
        return Err(Malformed::Unsupported(format!(
            "CURRENT names {name:?}, not a MANIFEST"
        )));
    }
    Ok(name.to_owned())
}

/// The live files of the default column family that the MANIFEST `bytes` describes.
pub(super) fn live_files(bytes: &[u8]) -> Result<Vec<LiveFile>, Malformed> {
    let mut files: BTreeMap<u64, LiveFile> = BTreeMap::new();
    for record in records(bytes)? {
        let edit = Edit::decode(&record)?;
        if edit.column_family != 0 {
            continue;
        }
        if let Some(comparator) = &edit.comparator
            && comparator.as_slice() != BYTEWISE
        {
            return Err(Malformed::Unsupported(format!(
                "the key order {:?}",
                String::from_utf8_lossy(comparator)
            )));
        }
        for (level, number) in edit.deleted {
            if files.get(&number).is_some_and(|file| file.level == level) {
                files.remove(&number);
            }
        }
        for file in edit.added {
            files.insert(file.number, file);
        }
    }
    Ok(files.into_values().collect())
}

/// The records of a file in RocksDB's log format: 32 KiB blocks of checksummed fragments.
fn records(bytes: &[u8]) -> Result<Vec<Vec<u8>>, Malformed> {
    let mut records = Vec::new();
    let mut partial: Option<Vec<u8>> = None;
    for block in bytes.chunks(LOG_BLOCK) {
        let mut reader = Reader::new(block);
        // A header is 7 bytes (11 for the recyclable types); fewer left is padding.
        while reader.rest().len() >= 7 {
            let header = reader.take(7, "a log record")?;
            let stored = u32::from_le_bytes([header[0], header[1], header[2], header[3]]);
            let len = u16::from_le_bytes([header[4], header[5]]) as usize;
            let kind = header[6];
            if kind == 0 && len == 0 {
                // The rest of the block is zeros.
                break;
            }
            let log_number = match kind {
                5..=8 => reader.take(4, "a log record")?,
                _ => &[],
            };
            let data = reader.take(len, "a log record")?;
            if masked_crc32c(&[&[kind], log_number, data]) != stored {
                return Err(Malformed::Checksum);
            }
            match (kind, partial.as_mut()) {
                (1 | 5, None) => records.push(data.to_vec()),
                (2 | 6, None) => partial = Some(data.to_vec()),
                (3 | 7, Some(record)) => record.extend_from_slice(data),
                (4 | 8, Some(record)) => {
                    record.extend_from_slice(data);
                    records.extend(partial.take());
                }
                _ => {
                    return Err(Malformed::Unsupported(format!(
                        "a log record fragment of type {kind} here"
                    )));
                }
            }
        }
    }
    if partial.is_some() {
        return Err(Malformed::Truncated("the MANIFEST's last record"));
    }
    Ok(records)
}

/// What one version edit changes.
#[derive(Default)]
struct Edit {
    column_family: u32,
    comparator: Option<Vec<u8>>,
    deleted: Vec<(u32, u64)>,
    added: Vec<LiveFile>,
}

/// Bit of a top-level tag that a reader which does not know it may skip.
const SAFE_TO_IGNORE: u32 = 1 << 13;
/// Bit of a new file's field tag that a reader must know.
const MUST_KNOW: u32 = 1 << 6;
/// A new file's field tag: the path id (files of a checkpoint are all in its directory).
const PATH_ID: u32 = MUST_KNOW + 1;

impl Edit {
    fn decode(record: &[u8]) -> Result<Self, Malformed> {
        let mut edit = Self::default();
        let mut r = Reader::new(record);
        while !r.is_empty() {
            let tag = r.varint32("a version edit")?;
            match tag {
                1 => edit.comparator = Some(r.slice("a comparator name")?.to_vec()),
                // Log numbers, the next file number, the last sequence number.
                2 | 3 | 4 | 9 | 10 => {
                    r.varint64("a version edit")?;
                }
                // A compaction cursor: a level and a key.
                5 => {
                    r.varint32("a version edit")?;
                    r.slice("a version edit")?;
                }
                6 => edit
                    .deleted
                    .push((r.varint32("a deleted file")?, r.varint64("a deleted file")?)),
                7 | 100 | 102 | 103 => edit.added.push(new_file(tag, &mut r)?),
                200 => edit.column_family = r.varint32("a column family")?,
                201 => {
                    r.slice("a column family name")?;
                }
                202 => {}
                203 | 300 => {
                    r.varint32("a version edit")?;
                }
                400 | 401 => return Err(Malformed::Unsupported("blob files".into())),
                tag if tag & SAFE_TO_IGNORE != 0 => {
                    r.slice("a version edit")?;
                }
                tag => return Err(Malformed::Unsupported(format!("the MANIFEST tag {tag}"))),
            }
        }
        Ok(edit)
    }
}

/// A file added by a version edit (tags 7, 100, 102 and 103 differ in their fields).
fn new_file(tag: u32, r: &mut Reader<'_>) -> Result<LiveFile, Malformed> {
    let what = "a new file";
    let level = r.varint32(what)?;
    let number = r.varint64(what)?;
    if tag == 102 {
        r.varint32(what)?; // path id
    }
    r.varint64(what)?; // file size
    let smallest = r.slice(what)?;
    r.slice(what)?; // largest key
    let largest_seqno = if tag == 7 {
        0
    } else {
        r.varint64(what)?; // smallest sequence number
        r.varint64(what)?
    };
    if tag == 103 {
        loop {
            let field = r.varint32(what)?;
            if field == 1 {
                break;
            }
            r.slice(what)?;
            if field & MUST_KNOW != 0 && field != PATH_ID {
                return Err(Malformed::Unsupported(format!(
                    "the new-file field {field}"
                )));
            }
        }
    }
    let user_key = smallest
        .len()
        .checked_sub(8)
        .map(|len| smallest[..len].to_vec())
        .ok_or(Malformed::Truncated("a file's smallest key"))?;
    Ok(LiveFile {
        number,
        level,
        smallest: user_key,
        largest_seqno,
    })
}
