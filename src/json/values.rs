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

//! Scalar encoders: booleans, numbers, strings, decimals and bytes.
//!
//! Each holds borrowed slices of its array's buffers, so encoding a value is an index, a
//! format into a stack buffer and one copy into the payload.
//!
//! The tests of every encoder sit next to it, in this file.

use arrow_array::types::ArrowPrimitiveType;
use arrow_array::{
    Array, BinaryArray, BooleanArray, FixedSizeBinaryArray, PrimitiveArray, StringArray,
};
use base64::Engine as _;

use super::ValueEncoder;
use super::digits::{decimal_len, put_block, write_digits, write_i64};

pub(super) struct BooleanEncoder<'a>(pub(super) &'a BooleanArray);

impl ValueEncoder for BooleanEncoder<'_> {
    fn encode(&mut self, idx: usize, out: &mut Vec<u8>) {
        // Two constant-length copies instead of one of unknown length (a `memcpy` call).
        if self.0.value(idx) {
            out.extend_from_slice(b"true");
        } else {
            out.extend_from_slice(b"false");
        }
    }
}

/// Integers of any width (also DATE and epoch values stored as integers).
pub(super) struct IntegerEncoder<'a, N>(pub(super) &'a [N]);

impl<N: Into<i64> + Copy> ValueEncoder for IntegerEncoder<'_, N> {
    #[inline]
    fn encode(&mut self, idx: usize, out: &mut Vec<u8>) {
        write_i64(out, self.0[idx].into());
    }
}

pub(super) fn integer<'a, T>(array: &'a dyn Array) -> Option<Box<dyn ValueEncoder + 'a>>
where
    T: ArrowPrimitiveType,
    T::Native: Into<i64>,
{
    let array = array.as_any().downcast_ref::<PrimitiveArray<T>>()?;
    Some(Box::new(IntegerEncoder(array.values().as_ref())))
}

/// The float operations the encoder needs from both `f32` and `f64`.
pub(super) trait Float: ryu::Float + Copy {
    fn is_finite(self) -> bool;
    fn is_nan(self) -> bool;
    fn is_sign_negative(self) -> bool;
}

impl Float for f32 {
    fn is_finite(self) -> bool {
        f32::is_finite(self)
    }
    fn is_nan(self) -> bool {
        f32::is_nan(self)
    }
    fn is_sign_negative(self) -> bool {
        f32::is_sign_negative(self)
    }
}

impl Float for f64 {
    fn is_finite(self) -> bool {
        f64::is_finite(self)
    }
    fn is_nan(self) -> bool {
        f64::is_nan(self)
    }
    fn is_sign_negative(self) -> bool {
        f64::is_sign_negative(self)
    }
}

/// FLOAT and DOUBLE: shortest round-trip text (ryu); JSON has no NaN or infinities, so the
/// contract writes them as the strings `"NaN"`, `"Infinity"` and `"-Infinity"`.
pub(super) struct FloatEncoder<'a, N>(&'a [N]);

impl<N: Float> ValueEncoder for FloatEncoder<'_, N> {
    #[inline]
    fn encode(&mut self, idx: usize, out: &mut Vec<u8>) {
        let v = self.0[idx];
        if v.is_finite() {
            out.extend_from_slice(ryu::Buffer::new().format_finite(v).as_bytes());
        } else if v.is_nan() {
            out.extend_from_slice(b"\"NaN\"");
        } else if v.is_sign_negative() {
            out.extend_from_slice(b"\"-Infinity\"");
        } else {
            out.extend_from_slice(b"\"Infinity\"");
        }
    }
}

pub(super) fn float<'a, T>(array: &'a dyn Array) -> Option<Box<dyn ValueEncoder + 'a>>
where
    T: ArrowPrimitiveType,
    T::Native: Float,
{
    let array = array.as_any().downcast_ref::<PrimitiveArray<T>>()?;
    Some(Box::new(FloatEncoder(array.values().as_ref())))
}

/// CHAR and STRING, read straight from the offsets and data buffers.
pub(super) struct StringEncoder<'a> {
    offsets: &'a [i32],
    data: &'a [u8],
}

impl<'a> StringEncoder<'a> {
    pub(super) fn new(array: &'a StringArray) -> Self {
        Self {
            offsets: array.value_offsets(),
            data: array.value_data(),
        }
    }
}

impl ValueEncoder for StringEncoder<'_> {
    #[inline]
    fn encode(&mut self, idx: usize, out: &mut Vec<u8>) {
        write_json_bytes(out, slot(self.offsets, self.data, idx));
    }
}

/// The bytes of slot `idx` of a variable-length array. Offsets of a valid array are
/// non-negative and ascending, so the casts cannot wrap.
#[inline]
pub(super) fn slot<'a>(offsets: &[i32], data: &'a [u8], idx: usize) -> &'a [u8] {
    let start = offsets[idx] as usize;
    let end = offsets[idx + 1] as usize;
    &data[start..end]
}

/// What to write for each byte inside a JSON string: 0 copies it, `u` means `\u00XX`, any
/// other value is the letter after the backslash.
static ESCAPE: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = b'u';
        b += 1;
    }
    table[0x08] = b'b';
    table[0x09] = b't';
    table[0x0a] = b'n';
    table[0x0c] = b'f';
    table[0x0d] = b'r';
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table
};

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Whether any of the eight bytes in `w` is below 0x20, `"` or `\\` (SWAR "has less than" and
/// "has zero byte" tricks: exact about presence, which is all the caller asks).
#[inline]
fn may_need_escape(w: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let control = w.wrapping_sub(ONES * 0x20) & !w;
    let quote = w ^ (ONES * u64::from(b'"'));
    let quote = quote.wrapping_sub(ONES) & !quote;
    let backslash = w ^ (ONES * u64::from(b'\\'));
    let backslash = backslash.wrapping_sub(ONES) & !backslash;
    (control | quote | backslash) & HIGHS != 0
}

/// Appends `bytes` (valid UTF-8) as a JSON string literal. Runs without escapes are copied in
/// one piece; multi-byte UTF-8 never contains bytes below 0x80, so it passes through.
#[inline]
pub(super) fn write_json_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    // Most text needs no escaping: skip it eight bytes at a time, then go byte by byte.
    let mut clean = 0;
    for chunk in bytes.chunks_exact(8) {
        let w = u64::from_le_bytes([
            chunk[0], chunk[1], chunk[2], chunk[3], chunk[4], chunk[5], chunk[6], chunk[7],
        ]);
        if may_need_escape(w) {
            break;
        }
        clean += 8;
    }
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate().skip(clean) {
        let escape = ESCAPE[usize::from(b)];
        if escape == 0 {
            continue;
        }
        out.extend_from_slice(&bytes[start..i]);
        if escape == b'u' {
            out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(b >> 4)],
                HEX[usize::from(b & 0xf)],
            ]);
        } else {
            out.extend_from_slice(&[b'\\', escape]);
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// DECIMAL(p, s) from Decimal128: the exact digits with exactly `s` after the point, quoted
/// (`QUOTED`, `decimal_format = "string"`) or bare (`"number"`).
pub(super) struct DecimalEncoder<'a, const QUOTED: bool> {
    values: &'a [i128],
    scale: usize,
    /// 10^scale when it fits in a u64 (scale ≤ 19), for the fast path.
    divisor: Option<u64>,
}

impl<'a, const QUOTED: bool> DecimalEncoder<'a, QUOTED> {
    pub(super) fn new(values: &'a [i128], scale: usize) -> Self {
        let divisor = u32::try_from(scale).ok().and_then(|s| 10u64.checked_pow(s));
        Self {
            values,
            scale,
            divisor,
        }
    }

    /// Unscaled values that fit in a u64 (up to 19 digits, all of DECIMAL(18, s)): a u64
    /// divide splits integer and fraction, and the text is built in one stack block.
    #[inline]
    fn encode_u64(&self, negative: bool, abs: u64, divisor: u64, out: &mut Vec<u8>) {
        // Quote, sign, 20 digits, point, 19 fraction digits, quote: 43 bytes at most.
        let mut buf = [b'0'; 48];
        buf[0] = b'"';
        let mut at = usize::from(QUOTED);
        buf[at] = b'-';
        at += usize::from(negative);
        let int = abs / divisor;
        at += decimal_len(int);
        write_digits(&mut buf, at, int);
        if self.scale > 0 {
            buf[at] = b'.';
            // The fraction's leading zeros are already in `buf`.
            at += 1 + self.scale;
            write_digits(&mut buf, at, abs % divisor);
        }
        buf[at] = b'"';
        at += usize::from(QUOTED);
        put_block(out, &buf, at);
    }
}

/// Enough zeros to pad any Decimal128 fraction (scale ≤ 38).
const ZEROS: &[u8; 40] = &[b'0'; 40];

impl<const QUOTED: bool> ValueEncoder for DecimalEncoder<'_, QUOTED> {
    #[inline]
    fn encode(&mut self, idx: usize, out: &mut Vec<u8>) {
        let v = self.values[idx];
        if let (Ok(abs), Some(divisor)) = (u64::try_from(v.unsigned_abs()), self.divisor) {
            return self.encode_u64(v < 0, abs, divisor, out);
        }
        let mut buf = itoa::Buffer::new();
        // Formatting the unscaled integer and placing the point avoids i128 division by 10^s,
        // which is slow, and is exact for all 38 digits.
        let digits = buf.format(v.unsigned_abs()).as_bytes();
        if QUOTED {
            out.push(b'"');
        }
        if v < 0 {
            out.push(b'-');
        }
        let scale = self.scale;
        if scale == 0 {
            out.extend_from_slice(digits);
        } else if digits.len() > scale {
            let (int, frac) = digits.split_at(digits.len() - scale);
            out.extend_from_slice(int);
            out.push(b'.');
            out.extend_from_slice(frac);
        } else {
            out.extend_from_slice(b"0.");
            let pad = scale - digits.len();
            out.extend_from_slice(&ZEROS[..pad.min(ZEROS.len())]);
            out.extend_from_slice(digits);
        }
        if QUOTED {
            out.push(b'"');
        }
    }
}

/// BYTES as standard padded base64.
pub(super) struct BinaryEncoder<'a> {
    offsets: &'a [i32],
    data: &'a [u8],
}

impl<'a> BinaryEncoder<'a> {
    pub(super) fn new(array: &'a BinaryArray) -> Self {
        Self {
            offsets: array.value_offsets(),
            data: array.value_data(),
        }
    }
}

impl ValueEncoder for BinaryEncoder<'_> {
    fn encode(&mut self, idx: usize, out: &mut Vec<u8>) {
        write_base64(out, slot(self.offsets, self.data, idx));
    }
}

/// BINARY(n) as standard padded base64.
pub(super) struct FixedBinaryEncoder<'a>(pub(super) &'a FixedSizeBinaryArray);

impl ValueEncoder for FixedBinaryEncoder<'_> {
    fn encode(&mut self, idx: usize, out: &mut Vec<u8>) {
        write_base64(out, self.0.value(idx));
    }
}

/// Encodes straight into the payload's spare room instead of through a temporary `String`.
fn write_base64(out: &mut Vec<u8>, bytes: &[u8]) {
    let engine = &base64::engine::general_purpose::STANDARD;
    out.push(b'"');
    if let Some(len) = base64::encoded_len(bytes.len(), true) {
        let start = out.len();
        out.resize(start + len, 0);
        // The slice is exactly the encoded length, so this cannot fail; if it somehow did,
        // drop the partial text rather than leave zero bytes in the JSON.
        match engine.encode_slice(bytes, &mut out[start..]) {
            Ok(written) => out.truncate(start + written),
            Err(_) => out.truncate(start),
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::builder::{
        BinaryBuilder, BooleanBuilder, Decimal128Builder, FixedSizeBinaryBuilder,
    };
    use arrow_array::{
        ArrayRef, Float32Array, Float64Array, Int8Array, Int16Array, Int32Array, Int64Array,
        StringArray,
    };
    use fluss::metadata::DataTypes;

    use super::super::test_support::{column_values, column_values_with};
    use super::super::write_json_string;
    use crate::config::options::{DecimalFormat, JsonOptions, TemporalFormat};

    #[test]
    fn boolean_is_a_json_literal() {
        let mut b = BooleanBuilder::new();
        b.append_value(true);
        b.append_value(false);
        b.append_null();
        let array: ArrayRef = Arc::new(b.finish());
        assert_eq!(
            column_values(DataTypes::boolean(), array),
            ["true", "false", "null"]
        );
    }

    #[test]
    fn integers_cover_min_and_max_of_every_width() {
        let cases: Vec<(fluss::metadata::DataType, ArrayRef, [&str; 4])> = vec![
            (
                DataTypes::tinyint(),
                Arc::new(Int8Array::from(vec![
                    Some(i8::MIN),
                    Some(i8::MAX),
                    Some(0),
                    None,
                ])),
                ["-128", "127", "0", "null"],
            ),
            (
                DataTypes::smallint(),
                Arc::new(Int16Array::from(vec![
                    Some(i16::MIN),
                    Some(i16::MAX),
                    Some(-1),
                    None,
                ])),
                ["-32768", "32767", "-1", "null"],
            ),
            (
                DataTypes::int(),
                Arc::new(Int32Array::from(vec![
                    Some(i32::MIN),
                    Some(i32::MAX),
                    Some(7),
                    None,
                ])),
                ["-2147483648", "2147483647", "7", "null"],
            ),
            (
                DataTypes::bigint(),
                Arc::new(Int64Array::from(vec![
                    Some(i64::MIN),
                    Some(i64::MAX),
                    Some(42),
                    None,
                ])),
                ["-9223372036854775808", "9223372036854775807", "42", "null"],
            ),
        ];
        for (data_type, array, expected) in cases {
            assert_eq!(column_values(data_type, array), expected);
        }
    }

    #[test]
    fn double_specials_are_strings_and_finite_values_round_trip() {
        let values = [
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            -0.0,
            0.0,
            1.5,
            f64::MIN_POSITIVE / 4.0,
            5e-324,
            f64::MAX,
            f64::MIN,
            1e21,
            0.1,
        ];
        let array: ArrayRef = Arc::new(Float64Array::from(values.to_vec()));
        let got = column_values(DataTypes::double(), array);
        assert_eq!(
            got,
            [
                "\"NaN\"",
                "\"Infinity\"",
                "\"-Infinity\"",
                "-0.0",
                "0.0",
                "1.5",
                "5.562684646268003e-309",
                "5e-324",
                "1.7976931348623157e308",
                "-1.7976931348623157e308",
                "1e21",
                "0.1",
            ]
        );
        for (text, value) in got.iter().zip(values).skip(3) {
            let parsed: f64 = serde_json::from_str(text).unwrap();
            assert_eq!(parsed.to_bits(), value.to_bits(), "{text}");
        }
    }

    #[test]
    fn float_specials_are_strings_and_finite_values_are_shortest() {
        let array: ArrayRef = Arc::new(Float32Array::from(vec![
            Some(f32::NAN),
            Some(f32::INFINITY),
            Some(f32::NEG_INFINITY),
            Some(-0.0),
            Some(0.1),
            Some(f32::MAX),
            Some(1e-45),
            None,
        ]));
        assert_eq!(
            column_values(DataTypes::float(), array),
            [
                "\"NaN\"",
                "\"Infinity\"",
                "\"-Infinity\"",
                "-0.0",
                "0.1",
                "3.4028235e38",
                "1e-45",
                "null"
            ]
        );
    }

    #[test]
    fn strings_are_escaped_and_utf8_passes_through() {
        let array: ArrayRef = Arc::new(StringArray::from(vec![
            Some(""),
            Some("plain"),
            Some("quote \" backslash \\ slash /"),
            Some("line\nfeed\r\ttab\u{8}\u{c}"),
            Some("\u{1}\u{1f}\u{7f}"),
            Some("emoji 😀 and ü"),
            None,
        ]));
        let expected = [
            r#""""#,
            r#""plain""#,
            r#""quote \" backslash \\ slash /""#,
            r#""line\nfeed\r\ttab\b\f""#,
            "\"\\u0001\\u001f\u{7f}\"",
            "\"emoji 😀 and ü\"",
            "null",
        ];
        assert_eq!(column_values(DataTypes::string(), array.clone()), expected);
        assert_eq!(column_values(DataTypes::char(5), array), expected);
    }

    #[test]
    fn write_json_string_round_trips_every_ascii_byte() {
        let s: String = (0u8..128).map(char::from).collect();
        let mut out = Vec::new();
        write_json_string(&mut out, &s);
        let back: String = serde_json::from_slice(&out).unwrap();
        assert_eq!(back, s);
    }

    #[test]
    fn escapes_are_found_at_every_position_of_long_strings() {
        // The fast path skips eight bytes at a time; put each special byte at each offset.
        for special in ['"', '\\', '\n', '\u{0}', '\u{1f}', 'é', '😀', '\u{7f}'] {
            for len in 0..24 {
                for at in 0..len {
                    let s: String = (0..len)
                        .map(|i| if i == at { special } else { 'a' })
                        .collect();
                    let mut out = Vec::new();
                    write_json_string(&mut out, &s);
                    assert_eq!(
                        String::from_utf8(out).unwrap(),
                        serde_json::to_string(&s).unwrap(),
                        "{s:?}"
                    );
                }
            }
        }
    }

    fn decimals(precision: u8, scale: i8, values: &[Option<i128>]) -> ArrayRef {
        let mut b = Decimal128Builder::new()
            .with_precision_and_scale(precision, scale)
            .unwrap();
        b.extend(values.iter().copied());
        Arc::new(b.finish())
    }

    #[test]
    fn decimal_string_has_exactly_scale_fraction_digits() {
        let array = decimals(
            5,
            3,
            &[Some(-12340), Some(12340), Some(5), Some(-5), Some(0), None],
        );
        assert_eq!(
            column_values(DataTypes::decimal(5, 3), array),
            [
                "\"-12.340\"",
                "\"12.340\"",
                "\"0.005\"",
                "\"-0.005\"",
                "\"0.000\"",
                "null"
            ]
        );
    }

    #[test]
    fn decimal_38_digits_are_exact_in_both_formats() {
        let max = 10i128.pow(38) - 1;
        let array = decimals(38, 10, &[Some(max), Some(-max), Some(1)]);
        let expected = [
            "9999999999999999999999999999.9999999999",
            "-9999999999999999999999999999.9999999999",
            "0.0000000001",
        ];
        let number = JsonOptions {
            decimal: DecimalFormat::Number,
            ..JsonOptions::default()
        };
        assert_eq!(
            column_values_with(DataTypes::decimal(38, 10), array.clone(), number),
            expected
        );
        let quoted: Vec<String> = expected.iter().map(|e| format!("\"{e}\"")).collect();
        assert_eq!(column_values(DataTypes::decimal(38, 10), array), quoted);
    }

    #[test]
    fn decimal_scale_zero_and_scale_equal_to_precision() {
        let array = decimals(38, 0, &[Some(-(10i128.pow(38) - 1)), Some(0), Some(7)]);
        assert_eq!(
            column_values(DataTypes::decimal(38, 0), array),
            [
                "\"-99999999999999999999999999999999999999\"",
                "\"0\"",
                "\"7\""
            ]
        );
        let array = decimals(4, 4, &[Some(1234), Some(-1), Some(0), Some(-9999)]);
        let number = JsonOptions {
            decimal: DecimalFormat::Number,
            temporal: TemporalFormat::Iso8601,
        };
        assert_eq!(
            column_values_with(DataTypes::decimal(4, 4), array.clone(), number),
            ["0.1234", "-0.0001", "0.0000", "-0.9999"]
        );
        let array = decimals(38, 38, &[Some(-(10i128.pow(38) - 1)), Some(1)]);
        assert_eq!(
            column_values(DataTypes::decimal(38, 38), array),
            [
                "\"-0.99999999999999999999999999999999999999\"",
                "\"0.00000000000000000000000000000000000001\""
            ]
        );
    }

    #[test]
    fn bytes_and_binary_are_padded_standard_base64() {
        let mut b = BinaryBuilder::new();
        b.append_value(b"");
        b.append_value(b"f");
        b.append_value(b"fo");
        b.append_value(b"foo");
        b.append_value([0xfb, 0xff, 0xfe]);
        b.append_null();
        let array: ArrayRef = Arc::new(b.finish());
        assert_eq!(
            column_values(DataTypes::bytes(), array),
            [
                "\"\"", "\"Zg==\"", "\"Zm8=\"", "\"Zm9v\"", "\"+//+\"", "null"
            ]
        );

        let mut b = FixedSizeBinaryBuilder::new(2);
        b.append_value([0, 1]).unwrap();
        b.append_null();
        b.append_value([0xff, 0xff]).unwrap();
        let array: ArrayRef = Arc::new(b.finish());
        assert_eq!(
            column_values(DataTypes::binary(2), array),
            ["\"AAE=\"", "null", "\"//8=\""]
        );
    }
}
