//! Wire types of one batch: what a source hands to the runtime's send callback,
//! postcard-encoded (contract §3.2). Field order is the wire order; never reorder.
//!
//! Header types are our own instead of `iggy_common`'s `HeaderKey`/`HeaderValue`:
//! they encode byte-identically (`tests/abi_vectors.rs` checks every upstream vector)
//! and cost almost nothing to build. Measured on this machine (2 cores shared with other
//! builds, `nice`, `cargo build --release` from an empty target dir, a scratch cdylib that
//! postcard-encodes one header map with each set of types):
//!
//! | header types | crates | build wall / user CPU | cdylib (stripped) |
//! |---|---|---|---|
//! | own: serde, postcard, bytes, base64 | 18 | 14 s / 11 s | 437,000 B (335,512 B) |
//! | `iggy_common 0.11.1-edge.10` | 203 | 250 s / 211 s | 437,488 B (335,824 B) |
//!
//! The library size is a wash (the linker drops what is unused), but `iggy_common` adds
//! ~185 crates and ~200 s of CPU to a clean build, so the SDK keeps its own types.
//!
//! Storage is cheap on purpose: a plugin builds several headers per message at over a
//! million messages a second. Values up to [`INLINE_CAPACITY`] bytes (every numeric kind,
//! short strings) live inline, longer ones in a shared [`Bytes`], so cloning a constant
//! key never allocates; serialisation base64-encodes into a stack buffer.

use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, STANDARD};
use base64::engine::DecodePaddingMode;
use base64::Engine as _;
use bytes::Bytes;
use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::ser::SerializeStruct;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use snafu::{ensure, ResultExt};
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt;
use std::hash::{Hash, Hasher};

use crate::error::{
    BatchEncodeSnafu, Error, HeaderKindMismatchSnafu, HeaderLengthSnafu, HeaderUtf8Snafu,
    HeaderWidthSnafu, StateDecodeSnafu, StateEncodeSnafu,
};

/// How the runtime decodes every payload of a batch (contract §3.5). Postcard writes the
/// variant index (`Json` = 0 … `Avro` = 5); the snake_case names matter only in TOML.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Schema {
    /// One JSON document per payload.
    Json,
    /// Opaque bytes.
    Raw,
    /// UTF-8 text.
    Text,
    /// Protocol Buffers (`google.protobuf.Any` when it decodes as one).
    Proto,
    /// FlatBuffers bytes.
    FlatBuffer,
    /// Avro bytes.
    Avro,
}

impl Schema {
    /// The snake_case name used in connector files (`flat_buffer` for `FlatBuffer`).
    pub fn as_str(&self) -> &'static str {
        match self {
            Schema::Json => "json",
            Schema::Raw => "raw",
            Schema::Text => "text",
            Schema::Proto => "proto",
            Schema::FlatBuffer => "flat_buffer",
            Schema::Avro => "avro",
        }
    }
}

/// One message of a batch. The runtime uses only `id`, `headers` and `payload`;
/// `checksum` and both timestamps are carried on the wire but ignored (contract §3.5).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProducedMessage {
    /// Iggy message id; `None` lets the client pick a random UUID.
    pub id: Option<u128>,
    /// Ignored by the runtime.
    pub checksum: Option<u64>,
    /// Ignored by the runtime.
    pub timestamp: Option<u64>,
    /// Ignored by the runtime (it stamps "now").
    pub origin_timestamp: Option<u64>,
    /// Iggy user headers.
    pub headers: Option<BTreeMap<HeaderKey, HeaderValue>>,
    /// The payload, decoded by the batch's [`Schema`]; must not be empty.
    #[serde(with = "byte_vec")]
    pub payload: Vec<u8>,
}

/// One batch: what `Source::poll` returns and what crosses the send callback.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProducedMessages {
    /// How every payload of the batch is decoded.
    pub schema: Schema,
    /// The messages, in order.
    pub messages: Vec<ProducedMessage>,
    /// State the runtime persists before acknowledging this batch; `None` = unchanged.
    pub state: Option<ConnectorState>,
}

impl ProducedMessages {
    /// A batch with no messages and no state; the SDK does not send these.
    pub fn empty(schema: Schema) -> Self {
        Self {
            schema,
            messages: Vec::new(),
            state: None,
        }
    }

    /// Postcard encoding, exactly what the runtime decodes.
    pub fn to_postcard(&self) -> Result<Vec<u8>, Error> {
        encode(
            self,
            VecOutput(Vec::with_capacity(self.encoded_size_hint())),
        )
    }

    /// [`to_postcard`](Self::to_postcard) into `buffer` (cleared first, so one buffer can
    /// serve batch after batch), freeing every payload as soon as it is written, so a batch
    /// is never held twice: the peak is the encoding plus one message. Postcard writes a
    /// struct as its fields in order and a sequence as its length then its elements, so
    /// encoding the parts one after another gives the same bytes.
    pub fn into_postcard_in(self, mut buffer: Vec<u8>) -> Result<Vec<u8>, Error> {
        buffer.clear();
        buffer.reserve(self.encoded_size_hint());
        let mut out = VecOutput(buffer);
        out = VecOutput(encode(&self.schema, out)?);
        out = VecOutput(encode(&self.messages.len(), out)?);
        for message in self.messages {
            out = VecOutput(encode(&message, out)?);
        }
        encode(&self.state, out)
    }

    /// Sized up front: growing a multi-megabyte buffer by doubling copies it again and again.
    fn encoded_size_hint(&self) -> usize {
        self.messages.iter().fold(16, |total, m| {
            total + m.payload.len() + 48 + m.headers.as_ref().map_or(0, |h| h.len() * 64)
        }) + self.state.as_ref().map_or(0, |s| s.0.len() + 8)
    }
}

fn encode<T: Serialize + ?Sized>(value: &T, out: VecOutput) -> Result<Vec<u8>, Error> {
    postcard::serialize_with_flavor(value, out).context(BatchEncodeSnafu)
}

/// A postcard output that copies byte strings with `extend_from_slice` (one `memcpy`).
/// Postcard's `to_extend` goes through `Extend<u8>` element by element, which showed up as
/// 5.6% of an Arrow IPC profile; its own `AllocVec` cannot start from a sized `Vec`.
struct VecOutput(Vec<u8>);

impl postcard::ser_flavors::Flavor for VecOutput {
    type Output = Vec<u8>;

    fn try_extend(&mut self, data: &[u8]) -> postcard::Result<()> {
        self.0.extend_from_slice(data);
        Ok(())
    }

    fn try_push(&mut self, data: u8) -> postcard::Result<()> {
        self.0.push(data);
        Ok(())
    }

    fn finalize(self) -> postcard::Result<Vec<u8>> {
        Ok(self.0)
    }
}

/// Opaque state bytes the runtime stores in its state file and hands back to `open`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectorState(#[serde(with = "byte_vec")] pub Vec<u8>);

impl ConnectorState {
    /// Encodes `value` as compact MessagePack (structs as arrays), the upstream convention.
    pub fn serialize<T: Serialize>(value: &T) -> Result<Self, Error> {
        rmp_serde::to_vec(value).map(Self).context(StateEncodeSnafu)
    }

    /// Decodes state written by [`ConnectorState::serialize`].
    pub fn deserialize<T: serde::de::DeserializeOwned>(&self) -> Result<T, Error> {
        rmp_serde::from_slice(&self.0).context(StateDecodeSnafu)
    }
}

/// Type of a header key or value. Postcard writes the declaration index; Iggy's own
/// TLV code is that index + 1 ([`HeaderKind::as_code`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum HeaderKind {
    /// 1..=255 opaque bytes.
    Raw,
    /// 1..=255 bytes of UTF-8.
    String,
    /// One byte, 0 or 1.
    Bool,
    /// Little-endian `i8`.
    Int8,
    /// Little-endian `i16`.
    Int16,
    /// Little-endian `i32`.
    Int32,
    /// Little-endian `i64`.
    Int64,
    /// Little-endian `i128`.
    Int128,
    /// `u8`.
    Uint8,
    /// Little-endian `u16`.
    Uint16,
    /// Little-endian `u32`.
    Uint32,
    /// Little-endian `u64`.
    Uint64,
    /// Little-endian `u128`.
    Uint128,
    /// Little-endian `f32` bits.
    Float32,
    /// Little-endian `f64` bits.
    Float64,
}

impl HeaderKind {
    /// Iggy's TLV code (declaration index + 1); ordering by it equals ordering by kind.
    pub fn as_code(&self) -> u8 {
        *self as u8 + 1
    }

    /// Exact width of a fixed-width kind; `None` for `Raw` and `String`.
    pub fn fixed_width(&self) -> Option<usize> {
        match self {
            HeaderKind::Raw | HeaderKind::String => None,
            HeaderKind::Bool | HeaderKind::Int8 | HeaderKind::Uint8 => Some(1),
            HeaderKind::Int16 | HeaderKind::Uint16 => Some(2),
            HeaderKind::Int32 | HeaderKind::Uint32 | HeaderKind::Float32 => Some(4),
            HeaderKind::Int64 | HeaderKind::Uint64 | HeaderKind::Float64 => Some(8),
            HeaderKind::Int128 | HeaderKind::Uint128 => Some(16),
        }
    }
}

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

    /// The value bytes as a shareable [`Bytes`].
    pub fn to_bytes(&self) -> Bytes {
        match &self.repr {
            Repr::Shared(bytes) => bytes.clone(),
            Repr::Inline { .. } => Bytes::copy_from_slice(self.as_bytes()),
        }
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
            // SAFETY: `encode_short` wrote only bytes of `B64_ALPHABET` and `=`, all ASCII.
            let text = unsafe { std::str::from_utf8_unchecked(&buf[..len]) };
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
/// short header keys and values its per-call work was 6% of all CPU in a JSON end-to-end
/// profile (82 of 1311 samples, ten encodings per message). Longer values still use the
/// crate; a test checks both agree on every length.
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
                if text.len() <= B64_STACK {
                    if let Ok(len) = B64_LENIENT.decode_slice(text, &mut buf) {
                        return Ok(DecodedValue(Repr::copy_from(&buf[..len])));
                    }
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

/// `Vec<u8>` as one byte string: same postcard bytes as a `u8` sequence (length +
/// bytes) but written with one copy instead of one call per byte.
mod byte_vec {
    use serde::de::{self, SeqAccess, Visitor};
    use serde::{Deserializer, Serializer};
    use std::fmt;

    pub fn serialize<S: Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bytes(bytes)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<u8>, D::Error> {
        struct BytesVisitor;
        impl<'de> Visitor<'de> for BytesVisitor {
            type Value = Vec<u8>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a byte string")
            }
            fn visit_bytes<E: de::Error>(self, bytes: &[u8]) -> Result<Vec<u8>, E> {
                Ok(bytes.to_vec())
            }
            fn visit_byte_buf<E: de::Error>(self, bytes: Vec<u8>) -> Result<Vec<u8>, E> {
                Ok(bytes)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u8>, A::Error> {
                let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
                while let Some(byte) = seq.next_element::<u8>()? {
                    out.push(byte);
                }
                Ok(out)
            }
        }
        deserializer.deserialize_byte_buf(BytesVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Cursor {
        offset: u64,
        table: String,
    }

    #[test]
    fn state_round_trips_as_compact_msgpack() {
        let cursor = Cursor {
            offset: 7,
            table: "t".into(),
        };
        let state = ConnectorState::serialize(&cursor).unwrap();
        // fixarray(2), 7, fixstr(1) "t": structs are positional arrays, not maps.
        assert_eq!(state.0, vec![0x92, 0x07, 0xa1, b't']);
        assert_eq!(state.deserialize::<Cursor>().unwrap(), cursor);
    }

    #[test]
    fn state_of_another_type_fails_to_decode() {
        let state = ConnectorState(vec![0xc0]);
        let error = state.deserialize::<Cursor>().unwrap_err();
        assert!(
            error.to_string().contains("delete the state file"),
            "{error}"
        );
    }

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

    #[test]
    fn schema_names_are_snake_case() {
        assert_eq!(Schema::FlatBuffer.as_str(), "flat_buffer");
        assert_eq!(
            serde_json::to_string(&Schema::FlatBuffer).unwrap(),
            "\"flat_buffer\""
        );
    }
}
