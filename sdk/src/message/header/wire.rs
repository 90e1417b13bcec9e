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

//! How a header field goes on the wire: serde as a `{kind, value}` struct whose value is
//! standard base64 text (postcard: the kind's index, then the text's length and bytes).
//! Short values are encoded by hand into a stack buffer; decoding accepts padding or none.

use base64::Engine as _;
use base64::engine::DecodePaddingMode;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, STANDARD};
use bytes::Bytes;
use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::ser::SerializeStruct;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

use super::{HeaderField, HeaderKind, INLINE_CAPACITY, Repr};

/// Base64 of a 255-byte value is 340 characters; anything longer goes to the heap.
const B64_STACK: usize = 344;

/// Decoding accepts padded and unpadded text, like the upstream adapter.
const B64_LENIENT: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

struct Base64Value<'a>(&'a [u8]);

impl Serialize for Base64Value<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // Most values are short (numbers, names): a small buffer avoids zeroing the large one
        // for every header of every message.
        if self.0.len() <= INLINE_CAPACITY {
            let mut buf = [0_u8; B64_SMALL];
            let len = encode_short(self.0, &mut buf);
            // `encode_short` writes only bytes of `B64_ALPHABET` and `=`, all ASCII.
            let text = std::str::from_utf8(&buf[..len]).map_err(serde::ser::Error::custom)?;
            return serializer.serialize_str(text);
        }
        let mut buf = [0_u8; B64_STACK];
        encode_into(self.0, &mut buf, serializer)
    }
}

/// Base64 of an inline value: 4 characters per 3 bytes, padded.
const B64_SMALL: usize = INLINE_CAPACITY.div_ceil(3) * 4;

const B64_ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard padded base64 of a value of at most `INLINE_CAPACITY` bytes; returns the length.
/// Hand-written on purpose: the base64 crate's engine is built for long inputs, and on these
/// short header keys and values (ten encodings per message) its per-call setup costs more than
/// the encoding. Longer values still use the crate; a test checks both agree on every length.
fn encode_short(bytes: &[u8], out: &mut [u8; B64_SMALL]) -> usize {
    let char_at = |n: u32, shift: u32| B64_ALPHABET[((n >> shift) & 63) as usize];
    let mut len = 0;
    let mut groups = bytes.chunks_exact(3);
    for group in &mut groups {
        let n = u32::from(group[0]) << 16 | u32::from(group[1]) << 8 | u32::from(group[2]);
        out[len..len + 4].copy_from_slice(&[
            char_at(n, 18),
            char_at(n, 12),
            char_at(n, 6),
            char_at(n, 0),
        ]);
        len += 4;
    }
    let tail = match *groups.remainder() {
        [a] => {
            let n = u32::from(a) << 16;
            [char_at(n, 18), char_at(n, 12), b'=', b'=']
        }
        [a, b] => {
            let n = u32::from(a) << 16 | u32::from(b) << 8;
            [char_at(n, 18), char_at(n, 12), char_at(n, 6), b'=']
        }
        _ => return len,
    };
    out[len..len + 4].copy_from_slice(&tail);
    len + 4
}

fn encode_into<S: Serializer>(
    bytes: &[u8],
    buf: &mut [u8],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match STANDARD.encode_slice(bytes, buf) {
        Ok(len) => {
            let text = std::str::from_utf8(&buf[..len]).map_err(serde::ser::Error::custom)?;
            serializer.serialize_str(text)
        }
        Err(_) => serializer.serialize_str(&STANDARD.encode(bytes)),
    }
}

impl Serialize for HeaderField {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut fields = serializer.serialize_struct("HeaderField", 2)?;
        fields.serialize_field("kind", &self.kind)?;
        fields.serialize_field("value", &Base64Value(self.as_bytes()))?;
        fields.end()
    }
}

struct DecodedValue(Repr);

impl<'de> Deserialize<'de> for DecodedValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;
        impl Visitor<'_> for TextVisitor {
            type Value = DecodedValue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a base64 string")
            }
            fn visit_str<E: de::Error>(self, text: &str) -> Result<DecodedValue, E> {
                if text.len() <= B64_SMALL {
                    // Decoding may write up to a whole 3-byte group past the value.
                    let mut buf = [0_u8; B64_SMALL];
                    if let Ok(len) = B64_LENIENT.decode_slice(text, &mut buf) {
                        return Ok(DecodedValue(Repr::copy_from(&buf[..len])));
                    }
                }
                let mut buf = [0_u8; B64_STACK];
                if text.len() <= B64_STACK
                    && let Ok(len) = B64_LENIENT.decode_slice(text, &mut buf)
                {
                    return Ok(DecodedValue(Repr::copy_from(&buf[..len])));
                }
                let bytes = B64_LENIENT.decode(text).map_err(E::custom)?;
                Ok(DecodedValue(Repr::Shared(Bytes::from(bytes))))
            }
        }
        deserializer.deserialize_str(TextVisitor)
    }
}

impl<'de> Deserialize<'de> for HeaderField {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct FieldVisitor;
        impl<'de> Visitor<'de> for FieldVisitor {
            type Value = HeaderField;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a header field {kind, value}")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<HeaderField, A::Error> {
                let kind = seq
                    .next_element::<HeaderKind>()?
                    .ok_or_else(|| de::Error::invalid_length(0, &self))?;
                let value = seq
                    .next_element::<DecodedValue>()?
                    .ok_or_else(|| de::Error::invalid_length(1, &self))?;
                Ok(HeaderField {
                    kind,
                    repr: value.0,
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<HeaderField, A::Error> {
                let mut kind = None;
                let mut value = None;
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "kind" => kind = Some(map.next_value::<HeaderKind>()?),
                        "value" => value = Some(map.next_value::<DecodedValue>()?),
                        _ => {
                            map.next_value::<de::IgnoredAny>()?;
                        }
                    }
                }
                let kind = kind.ok_or_else(|| de::Error::missing_field("kind"))?;
                let value = value.ok_or_else(|| de::Error::missing_field("value"))?;
                Ok(HeaderField {
                    kind,
                    repr: value.0,
                })
            }
        }
        deserializer.deserialize_struct("HeaderField", &["kind", "value"], FieldVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{HeaderKey, HeaderValue};
    use std::collections::BTreeMap;

    #[test]
    fn short_base64_matches_the_base64_crate_on_every_length() {
        for len in 0..=INLINE_CAPACITY {
            for seed in 0..=255_u8 {
                let bytes: Vec<u8> = (0..len)
                    .map(|i| seed.wrapping_mul(31).wrapping_add((i * 97) as u8))
                    .collect();
                let mut buf = [0_u8; B64_SMALL];
                let n = encode_short(&bytes, &mut buf);
                assert_eq!(&buf[..n], STANDARD.encode(&bytes).as_bytes(), "{bytes:?}");
            }
        }
    }

    #[test]
    fn header_postcard_matches_the_contract_example() {
        let mut headers = BTreeMap::new();
        headers.insert(HeaderKey::new("k").unwrap(), HeaderValue::from_u64(300));
        let bytes = postcard::to_allocvec(&headers).unwrap();
        let mut expected = vec![0x01, 0x01, 0x04];
        expected.extend_from_slice(b"aw==");
        expected.extend_from_slice(&[0x0b, 0x0c]);
        expected.extend_from_slice(b"LAEAAAAAAAA=");
        assert_eq!(bytes, expected);
        let back: BTreeMap<HeaderKey, HeaderValue> = postcard::from_bytes(&bytes).unwrap();
        assert_eq!(back, headers);
    }

    #[test]
    fn unpadded_base64_decodes_too() {
        let bytes = [0x01, 0x03, b'a', b'w', b'='];
        let field: HeaderField = postcard::from_bytes(&bytes).unwrap();
        assert_eq!(field.as_str().unwrap(), "k");
    }
}
