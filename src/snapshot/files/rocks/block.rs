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

//! One block of a table: where it lies ([`Handle`]), its trailer (compression type and
//! checksum, checked on every read), its decompression, and its entries: keys stored as
//! the bytes they share with the previous key plus the rest, followed by the restart array.

use super::Malformed;
use super::coding::{Reader, masked_crc32c};

/// Bytes after every block: the compression type and a 32-bit checksum.
pub(super) const TRAILER: usize = 5;

/// Where a block lies in its file (its trailer follows it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Handle {
    pub(super) offset: u64,
    pub(super) size: u64,
}

impl Handle {
    pub(super) fn decode(reader: &mut Reader<'_>) -> Result<Self, Malformed> {
        Ok(Self {
            offset: reader.varint64("a block handle")?,
            size: reader.varint64("a block handle")?,
        })
    }

    /// The block and its trailer: what is read from the file.
    pub(super) fn span(&self) -> u64 {
        self.size + TRAILER as u64
    }
}

/// How a table's block trailers are checked (its footer says).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Checksum {
    None,
    Crc32c,
    XxHash32,
    XxHash64,
}

impl Checksum {
    pub(super) fn from_code(code: u8) -> Result<Self, Malformed> {
        match code {
            0 => Ok(Self::None),
            1 => Ok(Self::Crc32c),
            2 => Ok(Self::XxHash32),
            3 => Ok(Self::XxHash64),
            other => Err(Malformed::Unsupported(format!("checksum type {other}"))),
        }
    }

    fn of(self, content: &[u8], kind: u8) -> Option<u32> {
        use std::hash::Hasher;
        match self {
            Self::None => None,
            Self::Crc32c => Some(masked_crc32c(&[content, &[kind]])),
            Self::XxHash32 => {
                let mut hasher = twox_hash::XxHash32::with_seed(0);
                hasher.write(content);
                hasher.write(&[kind]);
                Some(hasher.finish_32())
            }
            Self::XxHash64 => {
                let mut hasher = twox_hash::XxHash64::with_seed(0);
                hasher.write(content);
                hasher.write(&[kind]);
                Some(hasher.finish() as u32)
            }
        }
    }
}

/// Decompresses blocks of one table into a buffer that is reused.
pub(super) struct Decoder {
    checksum: Checksum,
    /// Compressed blocks carry their decompressed size in front (format version 2 and up).
    sized: bool,
    zstd: Option<zstd::bulk::Decompressor<'static>>,
}

impl Decoder {
    pub(super) fn new(checksum: Checksum, format_version: u32) -> Self {
        Self {
            checksum,
            sized: format_version >= 2,
            zstd: None,
        }
    }

    /// The contents of the block read as `raw` (the block and its trailer), checked and
    /// decompressed into `out`.
    pub(super) fn decode(&mut self, raw: &[u8], out: &mut Vec<u8>) -> Result<(), Malformed> {
        if raw.len() < TRAILER {
            return Err(Malformed::Truncated("a block"));
        }
        let (content, trailer) = raw.split_at(raw.len() - TRAILER);
        let kind = trailer[0];
        let stored = u32::from_le_bytes([trailer[1], trailer[2], trailer[3], trailer[4]]);
        if let Some(computed) = self.checksum.of(content, kind)
            && computed != stored
        {
            return Err(Malformed::Checksum);
        }
        out.clear();
        match kind {
            0 => out.extend_from_slice(content),
            1 => {
                let size = snap::raw::decompress_len(content)
                    .map_err(|e| Malformed::Decompress(format!("snappy: {e}")))?;
                out.resize(size, 0);
                snap::raw::Decoder::new()
                    .decompress(content, out)
                    .map_err(|e| Malformed::Decompress(format!("snappy: {e}")))?;
            }
            4 | 5 => {
                let (size, compressed) = self.sized_input(content, "LZ4")?;
                out.resize(size, 0);
                let written = lz4_flex::block::decompress_into(compressed, out)
                    .map_err(|e| Malformed::Decompress(format!("LZ4: {e}")))?;
                if written != size {
                    return Err(Malformed::Decompress(format!(
                        "LZ4: {written} bytes instead of {size}"
                    )));
                }
            }
            7 | 0x40 => {
                let (size, compressed) = self.sized_input(content, "ZSTD")?;
                out.reserve(size);
                let zstd = match &mut self.zstd {
                    Some(zstd) => zstd,
                    empty => empty.insert(
                        zstd::bulk::Decompressor::new()
                            .map_err(|e| Malformed::Decompress(format!("ZSTD: {e}")))?,
                    ),
                };
                let written = zstd
                    .decompress_to_buffer(compressed, out)
                    .map_err(|e| Malformed::Decompress(format!("ZSTD: {e}")))?;
                if written != size {
                    return Err(Malformed::Decompress(format!(
                        "ZSTD: {written} bytes instead of {size}"
                    )));
                }
            }
            other => {
                let name = match other {
                    2 => "zlib",
                    3 => "bzip2",
                    6 => "xpress",
                    _ => "unknown",
                };
                return Err(Malformed::Unsupported(format!(
                    "compression type {other} ({name}); Fluss writes NO, LZ4, SNAPPY or ZSTD"
                )));
            }
        }
        Ok(())
    }

    /// The decompressed size in front of a compressed block, and the compressed bytes.
    fn sized_input<'a>(
        &self,
        content: &'a [u8],
        codec: &'static str,
    ) -> Result<(usize, &'a [u8]), Malformed> {
        if !self.sized {
            return Err(Malformed::Unsupported(format!(
                "{codec} blocks of a table format version below 2"
            )));
        }
        let mut reader = Reader::new(content);
        let size = reader.length("a compressed block's size")?;
        Ok((size, reader.rest()))
    }
}

/// The entries of a block, in order: `key()` and `value()` after each `advance()` that
/// returned `true`.
pub(super) struct Entries {
    block: Vec<u8>,
    /// Where the entries end (the restart array begins).
    end: usize,
    /// Where the next entry starts.
    next: usize,
    key: Vec<u8>,
    /// Bytes the current key shares with the one before.
    shared: usize,
    value: (usize, usize),
    values: Values,
}

/// How the values of a block are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Values {
    /// With their length (data blocks, and every block but index blocks of some tables).
    Sized,
    /// Block handles without a length (index blocks of format version 4 and up): a value
    /// whose key shares bytes with the one before is only the change of the previous
    /// handle's size (the block follows the previous one). With `first_key`, each handle is
    /// followed by the first key of its block.
    DeltaHandles { first_key: bool },
}

impl Entries {
    /// The entries of a decompressed `block`.
    pub(super) fn new(block: Vec<u8>, values: Values) -> Result<Self, Malformed> {
        let end = entries_end(&block)?;
        Ok(Self {
            block,
            end,
            next: 0,
            key: Vec::new(),
            shared: 0,
            value: (0, 0),
            values,
        })
    }

    /// Moves to the next entry; `false` at the end.
    pub(super) fn advance(&mut self) -> Result<bool, Malformed> {
        if self.next >= self.end {
            return Ok(false);
        }
        let mut reader = Reader::new(&self.block[self.next..self.end]);
        let shared = reader.length("an entry")?;
        let unshared = reader.length("an entry")?;
        let value_len = match self.values {
            Values::Sized => Some(reader.length("an entry")?),
            Values::DeltaHandles { .. } => None,
        };
        if shared > self.key.len() {
            return Err(Malformed::Truncated("a key's shared prefix"));
        }
        let rest = reader.take(unshared, "a key")?;
        self.key.truncate(shared);
        self.key.extend_from_slice(rest);
        self.shared = shared;
        let start = self.end - reader.rest().len();
        let before = reader.rest().len();
        match value_len {
            Some(len) => {
                reader.take(len, "a value")?;
            }
            None => {
                if shared == 0 {
                    Handle::decode(&mut reader)?;
                } else {
                    reader.varsigned64("a block handle's size change")?;
                }
                if matches!(self.values, Values::DeltaHandles { first_key: true }) {
                    reader.slice("a block's first key")?;
                }
            }
        }
        let len = before - reader.rest().len();
        self.value = (start, start + len);
        self.next = start + len;
        Ok(true)
    }

    pub(super) fn key(&self) -> &[u8] {
        &self.key
    }

    pub(super) fn value(&self) -> &[u8] {
        &self.block[self.value.0..self.value.1]
    }

    /// The current value as a block handle; `previous` is the handle of the entry before in
    /// this block (what a size change applies to).
    pub(super) fn handle(&self, previous: Option<Handle>) -> Result<Handle, Malformed> {
        let mut reader = Reader::new(self.value());
        match (self.values, previous) {
            (Values::DeltaHandles { .. }, Some(previous)) if self.shared != 0 => {
                let change = reader.varsigned64("a block handle's size change")?;
                let size = previous
                    .size
                    .checked_add_signed(change)
                    .ok_or(Malformed::Truncated("a block handle"))?;
                Ok(Handle {
                    offset: previous.offset + previous.span(),
                    size,
                })
            }
            (Values::DeltaHandles { .. }, None) if self.shared != 0 => Err(Malformed::Truncated(
                "a block handle without the one before",
            )),
            _ => Handle::decode(&mut reader),
        }
    }

    /// Gives the block's buffer back for reuse.
    pub(super) fn into_buffer(self) -> Vec<u8> {
        self.block
    }
}

/// Where the entries of `block` end: before the restart array (and, in data blocks that
/// have one, the hash index of their keys).
fn entries_end(block: &[u8]) -> Result<usize, Malformed> {
    let len = block.len();
    if len < 4 {
        return Err(Malformed::Truncated("a block's restart count"));
    }
    let packed = u32::from_le_bytes([
        block[len - 4],
        block[len - 3],
        block[len - 2],
        block[len - 1],
    ]);
    // The top bit: a hash index of the keys sits between the restart array and the count,
    // its bucket count in the two bytes before the count.
    let (restarts, hash_bytes) = if packed & (1 << 31) != 0 {
        if len < 6 {
            return Err(Malformed::Truncated("a block's hash index"));
        }
        let buckets = u16::from_le_bytes([block[len - 6], block[len - 5]]) as usize;
        ((packed & !(1 << 31)) as usize, 2 + buckets)
    } else {
        (packed as usize, 0)
    };
    restarts
        .checked_mul(4)
        .and_then(|array| len.checked_sub(4 + hash_bytes + array))
        .ok_or(Malformed::Truncated("a block's restart array"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A block of `entries` (each already encoded) with one restart point at the start.
    fn block_of(entries: &[&[u8]]) -> Vec<u8> {
        let mut block: Vec<u8> = entries.concat();
        block.extend_from_slice(&0u32.to_le_bytes());
        block.extend_from_slice(&1u32.to_le_bytes());
        block
    }

    #[test]
    fn keys_share_prefixes_and_values_carry_their_length() {
        let block = block_of(&[b"\x00\x03\x02abcv1", b"\x02\x01\x01dw"]);
        let mut entries = Entries::new(block, Values::Sized).unwrap();
        assert!(entries.advance().unwrap());
        assert_eq!((entries.key(), entries.value()), (&b"abc"[..], &b"v1"[..]));
        assert!(entries.advance().unwrap());
        assert_eq!((entries.key(), entries.value()), (&b"abd"[..], &b"w"[..]));
        assert!(!entries.advance().unwrap());
    }

    #[test]
    fn delta_encoded_handles_follow_the_one_before() {
        // "a" -> (offset 0, size 100) in full; "ab" shares "a": size +5, after the first.
        let block = block_of(&[b"\x00\x01a\x00\x64", b"\x01\x01b\x0a"]);
        let mut entries = Entries::new(block, Values::DeltaHandles { first_key: false }).unwrap();
        assert!(entries.advance().unwrap());
        let first = entries.handle(None).unwrap();
        assert_eq!(
            first,
            Handle {
                offset: 0,
                size: 100
            }
        );
        assert!(entries.advance().unwrap());
        let second = entries.handle(Some(first)).unwrap();
        assert_eq!(
            second,
            Handle {
                offset: 105,
                size: 105
            }
        );
        assert!(!entries.advance().unwrap());
    }

    #[test]
    fn a_hash_index_after_the_restarts_is_skipped() {
        let mut block = b"\x00\x01\x01ax".to_vec();
        block.extend_from_slice(&0u32.to_le_bytes());
        block.extend_from_slice(&[7, 7, 7]); // three hash buckets
        block.extend_from_slice(&3u16.to_le_bytes());
        block.extend_from_slice(&(1u32 | 1 << 31).to_le_bytes());
        let mut entries = Entries::new(block, Values::Sized).unwrap();
        assert!(entries.advance().unwrap());
        assert_eq!((entries.key(), entries.value()), (&b"a"[..], &b"x"[..]));
        assert!(!entries.advance().unwrap());
    }

    #[test]
    fn trailers_are_checked_and_blocks_decompressed() {
        let mut decoder = Decoder::new(Checksum::Crc32c, 5);
        let content = b"plain";
        let mut raw = content.to_vec();
        raw.push(0);
        raw.extend_from_slice(&masked_crc32c(&[content, &[0]]).to_le_bytes());
        let mut out = Vec::new();
        decoder.decode(&raw, &mut out).unwrap();
        assert_eq!(out, content);
        raw[0] ^= 1;
        assert!(matches!(
            decoder.decode(&raw, &mut out),
            Err(Malformed::Checksum)
        ));

        let text = b"lz4 lz4 lz4 lz4 lz4 lz4 lz4 lz4".to_vec();
        let mut compressed = vec![text.len() as u8];
        compressed.extend(lz4_flex::block::compress(&text));
        compressed.push(4);
        let crc = masked_crc32c(&[&compressed[..compressed.len() - 1], &[4]]);
        compressed.extend_from_slice(&crc.to_le_bytes());
        decoder.decode(&compressed, &mut out).unwrap();
        assert_eq!(out, text);

        let mut bzip = b"x".to_vec();
        bzip.extend_from_slice(&[3, 0, 0, 0, 0]);
        let mut unchecked = Decoder::new(Checksum::None, 5);
        let error = unchecked.decode(&bzip, &mut out).unwrap_err();
        assert!(error.to_string().contains("bzip2"), "{error}");
    }
}
