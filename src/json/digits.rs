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

//! Fixed-size writes for short text (numbers, dates, field-name prefixes).
//!
//! `Vec::extend_from_slice` with a length known only at run time becomes a call to `memcpy`,
//! which dominated the profile for values of a few bytes. Copying a whole fixed-size stack
//! block compiles to a couple of vector moves; truncating afterwards drops the unused tail.

/// `"00"` to `"99"`, so two digits cost one lookup.
static TWO_DIGITS: [[u8; 2]; 100] = {
    let mut table = [[0u8; 2]; 100];
    let mut i = 0;
    while i < 100 {
        table[i] = [b'0' + (i / 10) as u8, b'0' + (i % 10) as u8];
        i += 1;
    }
    table
};

/// The last two decimal digits of `v`.
#[inline]
pub(super) fn two_digits(v: u64) -> [u8; 2] {
    TWO_DIGITS[(v % 100) as usize]
}

/// Appends `block[..len]` by copying all of `block` and truncating (see the module docs).
#[inline(always)]
pub(super) fn put_block<const N: usize>(out: &mut Vec<u8>, block: &[u8; N], len: usize) {
    let start = out.len();
    out.extend_from_slice(block);
    out.truncate(start + len.min(N));
}

/// How many decimal digits `v` has (1 for zero).
#[inline]
pub(super) fn decimal_len(v: u64) -> usize {
    v.checked_ilog10().map_or(1, |log| log as usize + 1)
}

/// Writes the `decimal_len(v)` digits of `v` so that the last one is at `buf[end - 1]`.
#[inline]
pub(super) fn write_digits(buf: &mut [u8], end: usize, mut v: u64) {
    let mut i = end;
    // Four digits per step halves the chain of dependent divisions (as itoa does).
    while v >= 10_000 {
        let rem = (v % 10_000) as usize;
        v /= 10_000;
        i -= 4;
        buf[i..i + 2].copy_from_slice(&TWO_DIGITS[rem / 100]);
        buf[i + 2..i + 4].copy_from_slice(&TWO_DIGITS[rem % 100]);
    }
    if v >= 100 {
        i -= 2;
        buf[i..i + 2].copy_from_slice(&TWO_DIGITS[(v % 100) as usize]);
        v /= 100;
    }
    if v >= 10 {
        buf[i - 2..i].copy_from_slice(&TWO_DIGITS[v as usize]);
    } else {
        buf[i - 1] = b'0' + v as u8;
    }
}

/// Appends `v` in decimal.
#[inline]
pub(super) fn write_i64(out: &mut Vec<u8>, v: i64) {
    let mut buf = [b'-'; 24];
    let abs = v.unsigned_abs();
    let len = usize::from(v < 0) + decimal_len(abs);
    write_digits(&mut buf, len, abs);
    put_block(out, &buf, len);
}

#[cfg(test)]
mod tests {
    use super::{decimal_len, write_i64};

    #[test]
    fn integers_match_std_formatting_at_every_length() {
        let mut values = vec![0, i64::MIN, i64::MAX, i64::MIN + 1];
        let mut p: i64 = 1;
        for _ in 0..19 {
            values.extend([p - 1, p, p + 1, -p + 1, -p, -p - 1]);
            p = p.saturating_mul(10);
        }
        for v in values {
            let mut out = b"x".to_vec();
            write_i64(&mut out, v);
            assert_eq!(String::from_utf8(out).unwrap(), format!("x{v}"));
        }
        assert_eq!(decimal_len(u64::MAX), 20);
    }
}
