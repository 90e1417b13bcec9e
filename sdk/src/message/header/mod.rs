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

//! Header keys and values of a message (contract §3.2): [`HeaderKind`], [`HeaderField`]
//! (alias [`HeaderKey`] / [`HeaderValue`]), their postcard layout (kind index, then the
//! bytes as base64 text, in `wire.rs`).
//!
//! Header types are our own instead of `iggy_common`'s `HeaderKey`/`HeaderValue`:
//! they encode byte-identically (`tests/abi_vectors.rs` checks every upstream vector)
//! and cost almost nothing to build: `iggy_common` would bring about 185 crates into a clean
//! build (its transports and their dependencies) and nothing to the library, whose linker
//! drops what is unused, so the SDK keeps its own types.
//!
//! Storage is cheap on purpose: a plugin builds several headers per message at over a
//! million messages a second. Values up to [`INLINE_CAPACITY`] bytes (every numeric kind,
//! short strings) live inline, longer ones in a shared [`Bytes`], so cloning a constant
//! key never allocates; serialisation base64-encodes into a stack buffer.

mod wire;

pub use crate::header_kind::HeaderKind;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use snafu::{ResultExt, ensure};
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};

use crate::error::{
    Error, HeaderKindMismatchSnafu, HeaderLengthSnafu, HeaderUtf8Snafu, HeaderWidthSnafu,
};

/// Longest value stored without a heap allocation: every numeric kind fits.
pub const INLINE_CAPACITY: usize = 22;

/// Longest key or value Iggy accepts for `Raw` and `String` headers.
pub const MAX_HEADER_LEN: usize = 255;

#[derive(Clone)]
enum Repr {
    Inline { len: u8, buf: [u8; INLINE_CAPACITY] },
    Shared(Bytes),
}

impl Repr {
    fn copy_from(value: &[u8]) -> Self {
        if value.len() <= INLINE_CAPACITY {
            let mut buf = [0; INLINE_CAPACITY];
            buf[..value.len()].copy_from_slice(value);
            Repr::Inline {
                len: value.len() as u8,
                buf,
            }
        } else {
            Repr::Shared(Bytes::copy_from_slice(value))
        }
    }

    fn as_slice(&self) -> &[u8] {
        match self {
            Repr::Inline { len, buf } => &buf[..usize::from(*len)],
            Repr::Shared(bytes) => bytes,
        }
    }
}

/// A header key or value: a kind plus its bytes (contract §3.2). Equality, hashing and
/// ordering use `(kind, bytes)`, the order the runtime's `BTreeMap` keeps.
#[derive(Clone)]
pub struct HeaderField {
    kind: HeaderKind,
    repr: Repr,
}

/// A header key (by convention a `String` kind).
pub type HeaderKey = HeaderField;
/// A header value.
pub type HeaderValue = HeaderField;

macro_rules! fixed_width_headers {
    ($($from:ident, $as:ident, $ty:ty, $kind:ident;)*) => {
        impl HeaderField {
            $(
                #[doc = concat!("A `", stringify!($kind), "` header holding `value`.")]
                pub fn $from(value: $ty) -> Self {
                    Self { kind: HeaderKind::$kind, repr: Repr::copy_from(&value.to_le_bytes()) }
                }

                #[doc = concat!("Reads a `", stringify!($kind), "` header.")]
                pub fn $as(&self) -> Result<$ty, Error> {
                    let bytes = self.fixed(HeaderKind::$kind)?;
                    let mut raw = [0; std::mem::size_of::<$ty>()];
                    raw.copy_from_slice(bytes);
                    Ok(<$ty>::from_le_bytes(raw))
                }
            )*
        }

        $(
            impl From<$ty> for HeaderField {
                fn from(value: $ty) -> Self {
                    Self::$from(value)
                }
            }

            impl TryFrom<&HeaderField> for $ty {
                type Error = Error;

                fn try_from(field: &HeaderField) -> Result<Self, Error> {
                    field.$as()
                }
            }
        )*
    };
}

fixed_width_headers! {
    from_i8, as_i8, i8, Int8;
    from_i16, as_i16, i16, Int16;
    from_i32, as_i32, i32, Int32;
    from_i64, as_i64, i64, Int64;
    from_i128, as_i128, i128, Int128;
    from_u8, as_u8, u8, Uint8;
    from_u16, as_u16, u16, Uint16;
    from_u32, as_u32, u32, Uint32;
    from_u64, as_u64, u64, Uint64;
    from_u128, as_u128, u128, Uint128;
    from_f32, as_f32, f32, Float32;
    from_f64, as_f64, f64, Float64;
}

impl HeaderField {
    /// A `String` header key; 1..=255 bytes.
    pub fn new(key: &str) -> Result<Self, Error> {
        Self::from_str(key)
    }

    /// A `String` header from a `'static` str without copying it (for constant keys).
    pub fn from_static_str(value: &'static str) -> Result<Self, Error> {
        check_len(HeaderKind::String, value.len())?;
        let repr = if value.len() <= INLINE_CAPACITY {
            Repr::copy_from(value.as_bytes())
        } else {
            Repr::Shared(Bytes::from_static(value.as_bytes()))
        };
        Ok(Self {
            kind: HeaderKind::String,
            repr,
        })
    }

    /// A `String` header; 1..=255 bytes.
    #[allow(clippy::should_implement_trait)] // fallible by length, and named like upstream
    pub fn from_str(value: &str) -> Result<Self, Error> {
        check_len(HeaderKind::String, value.len())?;
        Ok(Self {
            kind: HeaderKind::String,
            repr: Repr::copy_from(value.as_bytes()),
        })
    }

    /// A `Raw` header; 1..=255 bytes.
    pub fn from_raw(value: &[u8]) -> Result<Self, Error> {
        check_len(HeaderKind::Raw, value.len())?;
        Ok(Self {
            kind: HeaderKind::Raw,
            repr: Repr::copy_from(value),
        })
    }

    /// A `Bool` header (one byte, 0 or 1).
    pub fn from_bool(value: bool) -> Self {
        Self {
            kind: HeaderKind::Bool,
            repr: Repr::copy_from(&[u8::from(value)]),
        }
    }

    /// Any kind from its value bytes, checked like the typed constructors.
    pub fn from_kind_bytes(kind: HeaderKind, value: &[u8]) -> Result<Self, Error> {
        match kind.fixed_width() {
            Some(expected) => ensure!(
                value.len() == expected,
                HeaderWidthSnafu {
                    kind,
                    len: value.len(),
                    expected
                }
            ),
            None => check_len(kind, value.len())?,
        }
        if kind == HeaderKind::String {
            std::str::from_utf8(value).context(HeaderUtf8Snafu)?;
        }
        Ok(Self::unchecked(kind, value))
    }

    /// Builds a field exactly as received, e.g. when decoding; no size rules applied.
    fn unchecked(kind: HeaderKind, value: &[u8]) -> Self {
        Self {
            kind,
            repr: Repr::copy_from(value),
        }
    }

    /// The kind.
    pub fn kind(&self) -> HeaderKind {
        self.kind
    }

    /// The value bytes as they go on the wire.
    pub fn as_bytes(&self) -> &[u8] {
        self.repr.as_slice()
    }

    /// Reads a `String` header.
    pub fn as_str(&self) -> Result<&str, Error> {
        self.expect_kind(HeaderKind::String)?;
        std::str::from_utf8(self.as_bytes()).context(HeaderUtf8Snafu)
    }

    /// Reads a `Raw` header.
    pub fn as_raw(&self) -> Result<&[u8], Error> {
        self.expect_kind(HeaderKind::Raw)?;
        Ok(self.as_bytes())
    }

    /// Reads a `Bool` header (any non-zero byte is `true`).
    pub fn as_bool(&self) -> Result<bool, Error> {
        Ok(self.fixed(HeaderKind::Bool)?[0] != 0)
    }

    fn expect_kind(&self, expected: HeaderKind) -> Result<(), Error> {
        ensure!(
            self.kind == expected,
            HeaderKindMismatchSnafu {
                expected,
                actual: self.kind
            }
        );
        Ok(())
    }

    fn fixed(&self, expected: HeaderKind) -> Result<&[u8], Error> {
        self.expect_kind(expected)?;
        let bytes = self.as_bytes();
        let width = expected.fixed_width().unwrap_or(bytes.len());
        ensure!(
            bytes.len() == width,
            HeaderWidthSnafu {
                kind: expected,
                len: bytes.len(),
                expected: width
            }
        );
        Ok(bytes)
    }
}

/// A `String` header, as upstream's header types convert text.
impl TryFrom<&str> for HeaderField {
    type Error = Error;

    fn try_from(value: &str) -> Result<Self, Error> {
        Self::from_str(value)
    }
}

fn check_len(kind: HeaderKind, len: usize) -> Result<(), Error> {
    ensure!(
        (1..=MAX_HEADER_LEN).contains(&len),
        HeaderLengthSnafu { kind, len }
    );
    Ok(())
}

impl PartialEq for HeaderField {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind && self.as_bytes() == other.as_bytes()
    }
}

impl Eq for HeaderField {}

impl Ord for HeaderField {
    fn cmp(&self, other: &Self) -> Ordering {
        self.kind
            .cmp(&other.kind)
            .then_with(|| self.as_bytes().cmp(other.as_bytes()))
    }
}

impl PartialOrd for HeaderField {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Hash for HeaderField {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.kind.hash(state);
        self.as_bytes().hash(state);
    }
}

impl fmt::Debug for HeaderField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}({self})", self.kind)
    }
}

/// Renders the value by kind: text as is, numbers as numbers, raw bytes (and malformed
/// fixed-width values) as standard base64.
impl fmt::Display for HeaderField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rendered = match self.kind {
            HeaderKind::String => match std::str::from_utf8(self.as_bytes()) {
                Ok(text) => return f.write_str(text),
                Err(_) => None,
            },
            HeaderKind::Raw => None,
            HeaderKind::Bool => self.as_bool().ok().map(|v| v.to_string()),
            HeaderKind::Int8 => self.as_i8().ok().map(|v| v.to_string()),
            HeaderKind::Int16 => self.as_i16().ok().map(|v| v.to_string()),
            HeaderKind::Int32 => self.as_i32().ok().map(|v| v.to_string()),
            HeaderKind::Int64 => self.as_i64().ok().map(|v| v.to_string()),
            HeaderKind::Int128 => self.as_i128().ok().map(|v| v.to_string()),
            HeaderKind::Uint8 => self.as_u8().ok().map(|v| v.to_string()),
            HeaderKind::Uint16 => self.as_u16().ok().map(|v| v.to_string()),
            HeaderKind::Uint32 => self.as_u32().ok().map(|v| v.to_string()),
            HeaderKind::Uint64 => self.as_u64().ok().map(|v| v.to_string()),
            HeaderKind::Uint128 => self.as_u128().ok().map(|v| v.to_string()),
            HeaderKind::Float32 => self.as_f32().ok().map(|v| v.to_string()),
            HeaderKind::Float64 => self.as_f64().ok().map(|v| v.to_string()),
        };
        match rendered {
            Some(text) => f.write_str(&text),
            None => f.write_str(&STANDARD.encode(self.as_bytes())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_constructors_store_little_endian_bytes() {
        assert_eq!(HeaderValue::from_i32(7).as_bytes(), &[7, 0, 0, 0]);
        assert_eq!(
            HeaderValue::from_u64(300).as_bytes(),
            &300_u64.to_le_bytes()
        );
        assert_eq!(HeaderValue::from_bool(true).as_bytes(), &[1]);
        assert_eq!(HeaderValue::from_f64(-2.25).as_f64().unwrap(), -2.25);
        assert_eq!(
            HeaderValue::from_i128(i128::MIN).as_i128().unwrap(),
            i128::MIN
        );
        assert_eq!(
            HeaderValue::from_u128(u128::MAX).kind(),
            HeaderKind::Uint128
        );
        assert_eq!(
            HeaderKey::new("fluss_table").unwrap().as_str().unwrap(),
            "fluss_table"
        );
        assert_eq!(
            HeaderValue::from_raw(&[0, 255]).unwrap().as_raw().unwrap(),
            &[0, 255]
        );
        assert_eq!(HeaderValue::from(5_i64).as_i64().unwrap(), 5);
        assert_eq!(i64::try_from(&HeaderValue::from(6_i64)).unwrap(), 6);
        assert!(i32::try_from(&HeaderValue::from(6_i64)).is_err());
        assert_eq!(
            HeaderKey::try_from("fluss_table").unwrap(),
            HeaderKey::new("fluss_table").unwrap()
        );
    }

    #[test]
    fn variable_width_headers_must_be_1_to_255_bytes() {
        assert!(HeaderKey::new("").is_err());
        assert!(HeaderValue::from_raw(&[0; 256]).is_err());
        assert!(HeaderValue::from_str(&"x".repeat(255)).is_ok());
        let long = "y".repeat(200);
        assert_eq!(
            HeaderValue::from_str(&long).unwrap().as_str().unwrap(),
            long
        );
        assert!(HeaderField::from_kind_bytes(HeaderKind::Int32, &[1, 2]).is_err());
        assert!(HeaderField::from_kind_bytes(HeaderKind::String, &[0xff]).is_err());
    }

    #[test]
    fn accessor_of_another_kind_fails() {
        let error = HeaderValue::from_i32(1).as_i64().unwrap_err();
        assert!(matches!(error, Error::HeaderKindMismatch { .. }), "{error}");
        assert!(HeaderValue::from_u8(1).as_str().is_err());
    }

    #[test]
    fn ordering_is_by_kind_then_bytes() {
        let mut keys = [
            HeaderKey::from_u32(42),
            HeaderKey::new("b").unwrap(),
            HeaderKey::from_raw(b"z").unwrap(),
            HeaderKey::new("a").unwrap(),
            HeaderKey::new("ab").unwrap(),
        ];
        keys.sort();
        let rendered: Vec<String> = keys.iter().map(|k| format!("{k:?}")).collect();
        assert_eq!(
            rendered,
            [
                "Raw(eg==)",
                "String(a)",
                "String(ab)",
                "String(b)",
                "Uint32(42)"
            ]
        );
    }

    #[test]
    fn cloning_a_long_static_key_shares_its_bytes() {
        let key = HeaderKey::from_static_str("a_key_longer_than_the_inline_buffer").unwrap();
        let copy = key.clone();
        assert_eq!(key.as_bytes().as_ptr(), copy.as_bytes().as_ptr());
        assert_eq!(key, copy);
    }

    #[test]
    fn display_renders_by_kind() {
        assert_eq!(HeaderValue::from_i64(-3).to_string(), "-3");
        assert_eq!(
            HeaderValue::from_raw(&[0, 255, 16]).unwrap().to_string(),
            "AP8Q"
        );
        assert_eq!(HeaderValue::from_str("hi").unwrap().to_string(), "hi");
        assert_eq!(HeaderValue::from_bool(false).to_string(), "false");
    }
}
