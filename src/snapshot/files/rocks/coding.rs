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

//! RocksDB's primitive encodings: little-endian fixed-width integers, LEB128 varints,
//! zigzag ("signed") varints and length-prefixed slices, read from a byte slice that
//! advances as it is read.

use super::Malformed;

/// A byte slice read from the front.
#[derive(Debug, Clone, Copy)]
pub(super) struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(super) fn new(bytes: &'a [u8]) -> Self {
        Self { bytes }
    }

    /// What is left.
    pub(super) fn rest(&self) -> &'a [u8] {
        self.bytes
    }

    pub(super) fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The next `n` bytes.
    pub(super) fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], Malformed> {
        if n > self.bytes.len() {
            return Err(Malformed::Truncated(what));
        }
        let (head, tail) = self.bytes.split_at(n);
        self.bytes = tail;
        Ok(head)
    }

    pub(super) fn u8(&mut self, what: &'static str) -> Result<u8, Malformed> {
        Ok(self.take(1, what)?[0])
    }

    pub(super) fn fixed32(&mut self, what: &'static str) -> Result<u32, Malformed> {
        let bytes = self.take(4, what)?;
        Ok(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
    }

    pub(super) fn fixed64(&mut self, what: &'static str) -> Result<u64, Malformed> {
        let bytes = self.take(8, what)?;
        let mut raw = [0; 8];
        raw.copy_from_slice(bytes);
        Ok(u64::from_le_bytes(raw))
    }

    /// A varint of at most 64 bits.
    pub(super) fn varint64(&mut self, what: &'static str) -> Result<u64, Malformed> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.u8(what)?;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(Malformed::Varint(what))
    }

    /// A varint of at most 32 bits.
    pub(super) fn varint32(&mut self, what: &'static str) -> Result<u32, Malformed> {
        let value = self.varint64(what)?;
        u32::try_from(value).map_err(|_| Malformed::Varint(what))
    }

    /// A varint that counts bytes.
    pub(super) fn length(&mut self, what: &'static str) -> Result<usize, Malformed> {
        Ok(self.varint32(what)? as usize)
    }

    /// A zigzag-encoded signed varint.
    pub(super) fn varsigned64(&mut self, what: &'static str) -> Result<i64, Malformed> {
        let raw = self.varint64(what)?;
        Ok((raw >> 1) as i64 ^ -((raw & 1) as i64))
    }

    /// A varint length, then that many bytes.
    pub(super) fn slice(&mut self, what: &'static str) -> Result<&'a [u8], Malformed> {
        let len = self.length(what)?;
        self.take(len, what)
    }
}

/// RocksDB's masked CRC-32C (Castagnoli) of `parts`, as stored in block trailers and log
/// record headers: a CRC of data that itself holds CRCs is rotated and offset.
pub(super) fn masked_crc32c(parts: &[&[u8]]) -> u32 {
    let crc = parts
        .iter()
        .fold(0, |crc, part| crc32c::crc32c_append(crc, part));
    crc.rotate_right(15).wrapping_add(0xa282_ead8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_fixed_and_slices_read_in_turn() {
        let bytes = [
            0x96, 0x01, // 150
            0x03, b'a', b'b', b'c', // "abc"
            0x78, 0x56, 0x34, 0x12, // 0x12345678
            0x03, // zigzag -2
            0xff, 0xff, 0xff, 0xff, 0x1f, // u32::MAX + 0x100000000 * 1 -> too big for 32
        ];
        let mut reader = Reader::new(&bytes);
        assert_eq!(reader.varint32("a").unwrap(), 150);
        assert_eq!(reader.slice("b").unwrap(), b"abc");
        assert_eq!(reader.fixed32("c").unwrap(), 0x1234_5678);
        assert_eq!(reader.varsigned64("d").unwrap(), -2);
        assert!(matches!(reader.varint32("e"), Err(Malformed::Varint("e"))));
        assert!(reader.is_empty());
        assert!(matches!(
            Reader::new(&[0x80]).varint64("f"),
            Err(Malformed::Truncated("f"))
        ));
        assert!(matches!(
            Reader::new(&[1, 2]).take(3, "g"),
            Err(Malformed::Truncated("g"))
        ));
    }

    #[test]
    fn zigzag_covers_both_signs() {
        let mut reader = Reader::new(&[0, 1, 2, 0x81, 0x01]);
        let values: Vec<i64> = (0..4).map(|_| reader.varsigned64("v").unwrap()).collect();
        assert_eq!(values, [0, -1, 1, -65]);
    }

    #[test]
    fn the_mask_matches_rocksdb() {
        // crc32c("") = 0, masked: rotate 0 -> 0, + delta.
        assert_eq!(masked_crc32c(&[]), 0xa282_ead8);
        // crc32c("123456789") = 0xe3069283 (the standard check value), masked by hand.
        let crc: u32 = 0xe306_9283;
        let masked = crc.rotate_right(15).wrapping_add(0xa282_ead8);
        assert_eq!(masked_crc32c(&[b"1234", b"56789"]), masked);
    }
}
