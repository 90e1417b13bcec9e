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

//! Wire types of one batch: what a source hands to the runtime's send callback,
//! postcard-encoded (contract §3.2). Field order is the wire order; never reorder.
//! The header types ([`HeaderKind`], [`HeaderField`] alias [`HeaderKey`]/[`HeaderValue`])
//! live in `message/header/` and are re-exported here.

mod header;

use serde::{Deserialize, Serialize};
use snafu::ResultExt;
use std::collections::BTreeMap;

use crate::error::{BatchEncodeSnafu, Error, StateDecodeSnafu, StateEncodeSnafu};

pub use header::{
    HeaderField, HeaderKey, HeaderKind, HeaderValue, INLINE_CAPACITY, MAX_HEADER_LEN,
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
    fn schema_names_are_snake_case() {
        assert_eq!(Schema::FlatBuffer.as_str(), "flat_buffer");
        assert_eq!(
            serde_json::to_string(&Schema::FlatBuffer).unwrap(),
            "\"flat_buffer\""
        );
    }
}
