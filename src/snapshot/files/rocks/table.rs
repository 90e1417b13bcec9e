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

//! One table file (`NNNNNN.sst`, RocksDB's block-based format, versions 0 to 5): its footer,
//! its properties, its index (one block, or a top level over partitions) and its data
//! blocks read in order, a window of the file at a time.

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use super::Malformed;
use super::block::{Checksum, Decoder, Entries, Handle, Values};
use super::coding::Reader;

/// The footer's magic number of block-based tables of format version 1 and up.
const MAGIC: u64 = 0x88e2_41b7_85f4_cff7;
/// The footer's magic number of block-based tables of format version 0.
const LEGACY_MAGIC: u64 = 0xdb47_7524_8b80_fb57;
/// Bytes of a footer of format version 1 and up: checksum type, two handles padded to 40
/// bytes, format version, magic.
const FOOTER: usize = 1 + 40 + 4 + 8;
/// Bytes of a footer of format version 0: two handles padded to 40 bytes, magic.
const LEGACY_FOOTER: usize = 40 + 8;
/// Bytes read from the file at once: data blocks are read in file order, so one read covers
/// the blocks that follow.
const READ_AHEAD: u64 = 1 << 20;

/// How the index points at data blocks (`rocksdb.block.based.table.index.type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IndexType {
    /// One index block (binary search; also the hash search type, whose extra blocks are
    /// only for lookups).
    Flat,
    /// A top-level block over index partitions.
    Partitioned,
    /// One index block whose values also hold each block's first key.
    FlatWithFirstKey,
}

/// The data blocks of a table, read in order.
pub(super) struct Table {
    file: File,
    len: u64,
    decoder: Decoder,
    /// Every data block, in key order.
    blocks: Vec<Handle>,
    next_block: usize,
    entries: Option<Entries>,
    /// A buffer for the next block's contents.
    spare: Vec<u8>,
    window: Window,
}

/// The part of the file read last.
#[derive(Default)]
struct Window {
    start: u64,
    bytes: Vec<u8>,
}

impl Table {
    /// Opens the table at `path`: reads its footer, properties and index.
    pub(super) fn open(path: &Path) -> Result<Self, Malformed> {
        let mut file = File::open(path).map_err(Malformed::Io)?;
        let len = file.metadata().map_err(Malformed::Io)?.len();
        let mut window = Window::default();
        let tail = (FOOTER as u64).min(len);
        let footer = window
            .read(&mut file, len, len - tail, tail as usize)?
            .to_vec();
        let (checksum, format_version, metaindex, index) = parse_footer(&footer)?;
        let mut table = Self {
            file,
            len,
            decoder: Decoder::new(checksum, format_version),
            blocks: Vec::new(),
            next_block: 0,
            entries: None,
            spare: Vec::new(),
            window,
        };
        let meta = table.named_handles(metaindex)?;
        if meta.contains_key("rocksdb.range_del") {
            return Err(Malformed::Unsupported("range deletions".into()));
        }
        let properties = match meta.get("rocksdb.properties") {
            Some(handle) => table.properties(*handle)?,
            None => HashMap::new(),
        };
        if properties.contains_key("rocksdb.external_sst_file.version") {
            return Err(Malformed::Unsupported("ingested table files".into()));
        }
        let index_type = match properties.get("rocksdb.block.based.table.index.type") {
            None => IndexType::Flat,
            Some(raw) => match Reader::new(raw).fixed32("the index type")? {
                0 | 1 => IndexType::Flat,
                2 => IndexType::Partitioned,
                3 => IndexType::FlatWithFirstKey,
                other => return Err(Malformed::Unsupported(format!("index type {other}"))),
            },
        };
        let delta = match properties.get("rocksdb.index.value.is.delta.encoded") {
            Some(raw) => Reader::new(raw).varint64("an index property")? != 0,
            None => false,
        };
        let values = |first_key| match delta {
            true => Values::DeltaHandles { first_key },
            false => Values::Sized,
        };
        table.blocks = match index_type {
            IndexType::Flat => table.handles(index, values(false))?,
            IndexType::FlatWithFirstKey => table.handles(index, values(true))?,
            IndexType::Partitioned => {
                let mut blocks = Vec::new();
                for partition in table.handles(index, values(false))? {
                    blocks.extend(table.handles(partition, values(false))?);
                }
                blocks
            }
        };
        Ok(table)
    }

    /// Moves to the next entry of the data blocks; `false` after the last.
    pub(super) fn advance(&mut self) -> Result<bool, Malformed> {
        loop {
            if let Some(entries) = &mut self.entries
                && entries.advance()?
            {
                return Ok(true);
            }
            if let Some(done) = self.entries.take() {
                self.spare = done.into_buffer();
            }
            let Some(&handle) = self.blocks.get(self.next_block) else {
                return Ok(false);
            };
            self.next_block += 1;
            let block = self.block(handle)?;
            self.entries = Some(Entries::new(block, Values::Sized)?);
        }
    }

    /// The current entry's internal key (the user key, then 8 bytes of sequence number and
    /// type).
    pub(super) fn key(&self) -> &[u8] {
        self.entries.as_ref().map_or(&[], Entries::key)
    }

    /// The current entry's value.
    pub(super) fn value(&self) -> &[u8] {
        self.entries.as_ref().map_or(&[], Entries::value)
    }

    /// The contents of the block at `handle`, checked and decompressed.
    fn block(&mut self, handle: Handle) -> Result<Vec<u8>, Malformed> {
        let span = usize::try_from(handle.span()).map_err(|_| Malformed::Truncated("a block"))?;
        let raw = self
            .window
            .read(&mut self.file, self.len, handle.offset, span)?;
        let mut out = std::mem::take(&mut self.spare);
        self.decoder.decode(raw, &mut out)?;
        Ok(out)
    }

    /// The block handles an index block (or a partition of one) holds, in order.
    fn handles(&mut self, at: Handle, values: Values) -> Result<Vec<Handle>, Malformed> {
        let mut entries = Entries::new(self.block(at)?, values)?;
        let mut handles = Vec::new();
        let mut previous = None;
        while entries.advance()? {
            let handle = entries.handle(previous)?;
            handles.push(handle);
            previous = Some(handle);
        }
        Ok(handles)
    }

    /// The entries of the metaindex block: a block name and its handle each.
    fn named_handles(&mut self, at: Handle) -> Result<HashMap<String, Handle>, Malformed> {
        let mut entries = Entries::new(self.block(at)?, Values::Sized)?;
        let mut named = HashMap::new();
        while entries.advance()? {
            let name = String::from_utf8_lossy(entries.key()).into_owned();
            named.insert(name, Handle::decode(&mut Reader::new(entries.value()))?);
        }
        Ok(named)
    }

    /// The table's properties, their values as stored.
    fn properties(&mut self, at: Handle) -> Result<HashMap<String, Vec<u8>>, Malformed> {
        let mut entries = Entries::new(self.block(at)?, Values::Sized)?;
        let mut properties = HashMap::new();
        while entries.advance()? {
            let name = String::from_utf8_lossy(entries.key()).into_owned();
            properties.insert(name, entries.value().to_vec());
        }
        Ok(properties)
    }
}

impl Window {
    /// `len` bytes of `file` (of `file_len` bytes) from `offset`, read ahead when they are not
    /// in the window.
    fn read(
        &mut self,
        file: &mut File,
        file_len: u64,
        offset: u64,
        len: usize,
    ) -> Result<&[u8], Malformed> {
        let end = offset
            .checked_add(len as u64)
            .filter(|end| *end <= file_len)
            .ok_or(Malformed::Truncated("a block past the end of its file"))?;
        let held = self.start + self.bytes.len() as u64;
        if offset < self.start || end > held {
            let wanted = (len as u64).max(READ_AHEAD).min(file_len - offset);
            self.bytes.resize(wanted as usize, 0);
            file.seek(SeekFrom::Start(offset)).map_err(Malformed::Io)?;
            file.read_exact(&mut self.bytes).map_err(Malformed::Io)?;
            self.start = offset;
        }
        let from = (offset - self.start) as usize;
        Ok(&self.bytes[from..from + len])
    }
}

/// The checksum type, format version and the metaindex and index handles of a footer
/// (the last bytes of the file, at most [`FOOTER`]).
fn parse_footer(tail: &[u8]) -> Result<(Checksum, u32, Handle, Handle), Malformed> {
    if tail.len() < 8 {
        return Err(Malformed::Truncated("the footer"));
    }
    let magic = Reader::new(&tail[tail.len() - 8..]).fixed64("the footer")?;
    match magic {
        MAGIC if tail.len() >= FOOTER => {
            let footer = &tail[tail.len() - FOOTER..];
            let checksum = Checksum::from_code(footer[0])?;
            let mut handles = Reader::new(&footer[1..41]);
            let metaindex = Handle::decode(&mut handles)?;
            let index = Handle::decode(&mut handles)?;
            let version = Reader::new(&footer[41..45]).fixed32("the format version")?;
            if version > 5 {
                return Err(Malformed::Unsupported(format!(
                    "table format version {version} (versions 0 to 5 are read)"
                )));
            }
            Ok((checksum, version, metaindex, index))
        }
        LEGACY_MAGIC if tail.len() >= LEGACY_FOOTER => {
            let footer = &tail[tail.len() - LEGACY_FOOTER..];
            let mut handles = Reader::new(&footer[..40]);
            let metaindex = Handle::decode(&mut handles)?;
            let index = Handle::decode(&mut handles)?;
            Ok((Checksum::Crc32c, 0, metaindex, index))
        }
        MAGIC | LEGACY_MAGIC => Err(Malformed::Truncated("the footer")),
        other => Err(Malformed::Unsupported(format!(
            "a table with magic number {other:#018x} (not RocksDB's block-based format)"
        ))),
    }
}
