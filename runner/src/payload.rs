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

//! What the Iggy connectors runtime writes to the topic for one batch (apache/iggy cc269ef,
//! `runtime/src/source.rs`: `source_forwarding_loop` decodes, `process_messages` encodes).
//!
//! Each payload is decoded with the schema the *batch* declares (`json`: simd-json's owned
//! value tree, so a payload that does not parse is an error; `raw`: the bytes; `text`: a
//! UTF-8 string), then encoded by the *stream's* encoder (`[[streams]] schema`, the last
//! entry): `json` writes `simd_json::to_vec` of the value (a text payload becomes a JSON
//! string), `raw` takes only raw payloads, `text` takes text (its bytes) and JSON (`to_vec`).
//! One failed message fails the batch: the runtime counts every error, logs
//! "Rejected source batch …" and Nacks it; [`Rejection`] carries that count.
//!
//! Going through the value tree is not lossless, and the runner shows it because it uses the
//! runtime's simd-json (same version and features):
//! * objects of more than [`ORDERED_KEYS_LIMIT`] keys live in a hash map (halfbrown switches
//!   from its vector at that size), so their keys come out in hash order, not as written;
//! * numbers are parsed and printed again: floats keep their value, not their digits
//!   (`1.10` becomes `1.1`), and integers beyond `i64`/`u64` fail the parse.
//!
//! Not emulated: transforms (the runner ignores `[transforms.*]`), the protobuf decoding of
//! `proto` batches (reported per message, so such a batch is rejected here), and the avro,
//! proto and flat_buffer stream encoders ([`StreamSchema`] refuses them up front).

use iggy_connector_sdk::{ProducedMessage, Schema};
use simd_json::OwnedValue;
use snafu::{ResultExt, Snafu};

use crate::harness::Batch;

/// The largest JSON object whose keys keep their order through the runtime: halfbrown 0.4
/// (simd-json 0.17.3's object map) stores up to 32 entries in a vector and switches to a
/// hash map beyond (`VEC_LIMIT_UPPER = 32`); pinned by
/// `key_order_is_kept_up_to_the_limit_and_lost_above_it`.
pub const ORDERED_KEYS_LIMIT: usize = 32;

/// A stream encoder the runner emulates: the `schema` of the connector file's last
/// `[[streams]]` entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StreamSchema {
    /// JSON encoder: writes the decoded value (or a text payload as a JSON string).
    Json,
    /// Raw encoder: passes raw payloads through, refuses every other kind.
    Raw,
    /// Text encoder: writes text as is and JSON values serialised, refuses raw payloads.
    Text,
}

/// A stream schema whose encoder the runner does not emulate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Snafu)]
#[snafu(display(
    "stream schema = \"{}\": the runner emulates only json, raw and text streams. use one of them to try the connector here",
    schema.as_str()
))]
pub struct UnsupportedStream {
    /// The schema asked for.
    pub schema: Schema,
}

impl StreamSchema {
    /// The SDK schema of this encoder.
    pub fn schema(self) -> Schema {
        match self {
            StreamSchema::Json => Schema::Json,
            StreamSchema::Raw => Schema::Raw,
            StreamSchema::Text => Schema::Text,
        }
    }

    /// The snake_case name used in connector files.
    pub fn as_str(self) -> &'static str {
        self.schema().as_str()
    }
}

impl TryFrom<Schema> for StreamSchema {
    type Error = UnsupportedStream;

    fn try_from(schema: Schema) -> Result<Self, UnsupportedStream> {
        match schema {
            Schema::Json => Ok(StreamSchema::Json),
            Schema::Raw => Ok(StreamSchema::Raw),
            Schema::Text => Ok(StreamSchema::Text),
            Schema::Proto | Schema::FlatBuffer | Schema::Avro => {
                UnsupportedStreamSnafu { schema }.fail()
            }
        }
    }
}

/// Why the runtime would drop one message of a batch (and so reject the batch).
#[derive(Debug, Snafu)]
#[non_exhaustive]
pub enum MessageError {
    /// The payload is not valid JSON for simd-json, in a `json` batch.
    #[snafu(display(
        "message {index}: the payload is not JSON simd-json parses ({source}); the runtime logs \"Failed to decode message payload with schema: json\""
    ))]
    DecodeJson {
        /// Position in the batch.
        index: usize,
        /// simd-json's error.
        source: simd_json::Error,
    },

    /// The payload is not UTF-8, in a `text` batch.
    #[snafu(display(
        "message {index}: the payload is not UTF-8 ({source}); the runtime logs \"Failed to decode message payload with schema: text\""
    ))]
    DecodeText {
        /// Position in the batch.
        index: usize,
        /// The UTF-8 error.
        source: std::str::Utf8Error,
    },

    /// The stream's encoder refuses this kind of payload.
    #[snafu(display("message {index}: a {payload} payload cannot go to a {} stream; the runtime logs \"Failed to encode message payload\". declare a matching batch schema or set the stream's schema", stream.as_str()))]
    Encode {
        /// Position in the batch.
        index: usize,
        /// The decoded payload's kind (the batch schema).
        payload: &'static str,
        /// The stream encoder.
        stream: StreamSchema,
    },

    /// simd-json could not serialise the value.
    #[snafu(display(
        "message {index}: simd-json cannot serialise the value ({source}); the runtime logs \"Failed to encode message payload\""
    ))]
    Serialize {
        /// Position in the batch.
        index: usize,
        /// simd-json's error.
        source: simd_json::Error,
    },

    /// The batch declares `proto`, whose decoding (protobuf `Any`) the runner lacks.
    #[snafu(display("message {index}: the runner does not emulate decoding proto payloads"))]
    Unemulated {
        /// Position in the batch.
        index: usize,
    },
}

/// A batch the runtime would Nack without sending anything.
#[derive(Debug)]
pub struct Rejection {
    /// Decode and encode errors, one per failed message (the runtime's count).
    pub errors: u64,
    /// The first failed message.
    pub first: MessageError,
}

impl Rejection {
    /// The runtime's ERROR line for this rejection, followed by the first cause.
    pub fn log_line(&self, batch_id: u64, plugin_id: u32) -> String {
        format!(
            "Rejected source batch {batch_id} after {} decode or processing errors for source connector with ID: {plugin_id}; first: {}",
            self.errors, self.first
        )
    }
}

/// A decoded payload, as the runtime's `Payload` holds it.
enum Decoded<'a> {
    Json(OwnedValue),
    Raw(&'a [u8]),
    Text(&'a str),
    /// `flat_buffer` or `avro`: kept opaque; none of the emulated encoders accepts them.
    Opaque(&'static str),
}

/// Turns the payloads of one batch into the bytes the runtime would write to the topic.
///
/// `batch` is the schema the batch declares, `stream` the stream's encoder. Every message is
/// processed (so the error count is the runtime's); any failure makes the whole batch a
/// [`Rejection`].
pub fn encode_messages(
    batch: Schema,
    stream: StreamSchema,
    messages: &[ProducedMessage],
) -> Result<Vec<Vec<u8>>, Rejection> {
    let mut encoded = Vec::with_capacity(messages.len());
    visit_payloads(batch, stream, messages, |_, bytes| {
        encoded.push(bytes.to_vec());
    })?;
    Ok(encoded)
}

/// [`encode_messages`] for a batch the [`Harness`](crate::Harness) received.
pub fn runtime_payloads(batch: &Batch, stream: StreamSchema) -> Result<Vec<Vec<u8>>, Rejection> {
    encode_messages(batch.messages.schema, stream, &batch.messages.messages)
}

/// [`encode_messages`] without collecting: hands each message's topic bytes to `visit`
/// (with the message's index) while no message has failed, so a caller can render a batch
/// without holding a second copy of it. After the first failure `visit` is not called again,
/// but the remaining messages are still counted.
pub fn visit_payloads(
    batch: Schema,
    stream: StreamSchema,
    messages: &[ProducedMessage],
    mut visit: impl FnMut(usize, &[u8]),
) -> Result<(), Rejection> {
    let mut errors = 0u64;
    let mut first = None;
    // simd-json parses in place and writes into a buffer: both are reused across messages.
    let mut scratch = Vec::new();
    let mut written = Vec::new();
    for (index, message) in messages.iter().enumerate() {
        let outcome = decode(batch, index, &message.payload, &mut scratch)
            .and_then(|decoded| encode(decoded, stream, index, &mut written));
        match outcome {
            Ok(bytes) if first.is_none() => visit(index, bytes),
            Ok(_) => {}
            Err(error) => {
                errors += 1;
                first.get_or_insert(error);
            }
        }
    }
    match first {
        None => Ok(()),
        Some(first) => Err(Rejection { errors, first }),
    }
}

fn decode<'a>(
    schema: Schema,
    index: usize,
    payload: &'a [u8],
    scratch: &mut Vec<u8>,
) -> Result<Decoded<'a>, MessageError> {
    match schema {
        Schema::Json => {
            scratch.clear();
            scratch.extend_from_slice(payload);
            let value = simd_json::to_owned_value(scratch.as_mut_slice())
                .context(DecodeJsonSnafu { index })?;
            Ok(Decoded::Json(value))
        }
        Schema::Raw => Ok(Decoded::Raw(payload)),
        Schema::Text => std::str::from_utf8(payload)
            .map(Decoded::Text)
            .context(DecodeTextSnafu { index }),
        Schema::FlatBuffer | Schema::Avro => Ok(Decoded::Opaque(schema.as_str())),
        Schema::Proto => UnemulatedSnafu { index }.fail(),
    }
}

/// The topic bytes of one decoded payload: borrowed when the encoder passes them through,
/// else serialised into `written` (`simd_json::to_writer`, which the runtime's `to_vec` wraps).
fn encode<'a>(
    decoded: Decoded<'a>,
    stream: StreamSchema,
    index: usize,
    written: &'a mut Vec<u8>,
) -> Result<&'a [u8], MessageError> {
    written.clear();
    let serialized = |result: simd_json::Result<()>, written: &'a mut Vec<u8>| {
        result
            .map(|()| written.as_slice())
            .context(SerializeSnafu { index })
    };
    match (decoded, stream) {
        (Decoded::Json(value), StreamSchema::Json | StreamSchema::Text) => {
            serialized(simd_json::to_writer(&mut *written, &value), written)
        }
        (Decoded::Text(text), StreamSchema::Json) => {
            serialized(simd_json::to_writer(&mut *written, text), written)
        }
        (Decoded::Text(text), StreamSchema::Text) => Ok(text.as_bytes()),
        (Decoded::Raw(bytes), StreamSchema::Raw) => Ok(bytes),
        (refused, stream) => EncodeSnafu {
            index,
            payload: refused.kind(),
            stream,
        }
        .fail(),
    }
}

impl Decoded<'_> {
    fn kind(&self) -> &'static str {
        match self {
            Decoded::Json(_) => "json",
            Decoded::Raw(_) => "raw",
            Decoded::Text(_) => "text",
            Decoded::Opaque(kind) => kind,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(payloads: &[&[u8]]) -> Vec<ProducedMessage> {
        payloads
            .iter()
            .map(|payload| ProducedMessage {
                payload: payload.to_vec(),
                ..ProducedMessage::default()
            })
            .collect()
    }

    fn one(batch: Schema, stream: StreamSchema, payload: &[u8]) -> Result<Vec<u8>, Rejection> {
        encode_messages(batch, stream, &messages(&[payload])).map(|mut out| out.remove(0))
    }

    fn text(bytes: &[u8]) -> &str {
        std::str::from_utf8(bytes).unwrap()
    }

    /// `{"k00":0,"k01":1,…}` with `keys` keys, and the key names in that order.
    fn wide_object(keys: usize) -> (String, Vec<String>) {
        let names: Vec<String> = (0..keys).map(|k| format!("k{k:02}")).collect();
        let fields: Vec<String> = names
            .iter()
            .enumerate()
            .map(|(k, name)| format!("\"{name}\":{k}"))
            .collect();
        (format!("{{{}}}", fields.join(",")), names)
    }

    fn key_order(json: &[u8]) -> Vec<String> {
        // Keys are k00..k99 and values are integers, so every `"…":` is a key.
        text(json)
            .split('"')
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn json_batch_to_json_stream_is_the_value_re_serialised() {
        let out = one(
            Schema::Json,
            StreamSchema::Json,
            b" { \"z\" : 1, \"a\" : [true, null, \"s\\u00e9\"] } ",
        )
        .unwrap();
        assert_eq!(text(&out), r#"{"z":1,"a":[true,null,"sé"]}"#);
    }

    #[test]
    fn json_batch_to_text_stream_is_serialised_too() {
        let out = one(Schema::Json, StreamSchema::Text, b"{\"a\": 1}").unwrap();
        assert_eq!(text(&out), r#"{"a":1}"#);
    }

    #[test]
    fn json_batch_to_raw_stream_is_refused() {
        let rejection = one(Schema::Json, StreamSchema::Raw, b"{\"a\":1}").unwrap_err();
        assert_eq!(rejection.errors, 1);
        assert!(
            matches!(
                rejection.first,
                MessageError::Encode {
                    index: 0,
                    payload: "json",
                    stream: StreamSchema::Raw
                }
            ),
            "{:?}",
            rejection.first
        );
    }

    #[test]
    fn raw_batch_to_raw_stream_keeps_the_exact_bytes() {
        let bytes = b"{ \"z\" : 1.10, \"big\": 123456789012345678901234567890123456789 }\xff";
        assert_eq!(one(Schema::Raw, StreamSchema::Raw, bytes).unwrap(), bytes);
    }

    #[test]
    fn raw_batch_to_json_or_text_stream_is_refused() {
        for stream in [StreamSchema::Json, StreamSchema::Text] {
            let rejection = one(Schema::Raw, stream, b"{\"a\":1}").unwrap_err();
            assert!(
                matches!(rejection.first, MessageError::Encode { payload: "raw", stream: s, .. } if s == stream),
                "{stream:?}: {:?}",
                rejection.first
            );
        }
    }

    #[test]
    fn text_batch_to_text_stream_keeps_the_bytes_and_to_json_becomes_a_string() {
        let line = "plain \"text\" é\n";
        assert_eq!(
            one(Schema::Text, StreamSchema::Text, line.as_bytes()).unwrap(),
            line.as_bytes()
        );
        let json = one(Schema::Text, StreamSchema::Json, line.as_bytes()).unwrap();
        assert_eq!(text(&json), r#""plain \"text\" é\n""#);
    }

    #[test]
    fn text_batch_to_raw_stream_is_refused() {
        let rejection = one(Schema::Text, StreamSchema::Raw, b"hello").unwrap_err();
        assert!(matches!(
            rejection.first,
            MessageError::Encode {
                payload: "text",
                ..
            }
        ));
    }

    #[test]
    fn text_batch_that_is_not_utf8_fails_to_decode() {
        let rejection = one(Schema::Text, StreamSchema::Text, b"\xff").unwrap_err();
        assert!(matches!(
            rejection.first,
            MessageError::DecodeText { index: 0, .. }
        ));
    }

    #[test]
    fn opaque_and_proto_batches_are_rejected() {
        for batch in [Schema::FlatBuffer, Schema::Avro, Schema::Proto] {
            for stream in [StreamSchema::Json, StreamSchema::Raw, StreamSchema::Text] {
                assert!(
                    one(batch, stream, b"x").is_err(),
                    "{batch:?} batch to {stream:?}"
                );
            }
        }
    }

    #[test]
    fn key_order_is_kept_up_to_the_limit_and_lost_above_it() {
        let (kept, names) = wide_object(ORDERED_KEYS_LIMIT);
        let out = one(Schema::Json, StreamSchema::Json, kept.as_bytes()).unwrap();
        assert_eq!(
            text(&out),
            kept,
            "{ORDERED_KEYS_LIMIT} keys come out as written"
        );
        assert_eq!(key_order(&out), names);

        // Every width from 1 to 64: exactly those up to the limit keep their order.
        for keys in 1..=64 {
            let (object, names) = wide_object(keys);
            let out = one(Schema::Json, StreamSchema::Json, object.as_bytes()).unwrap();
            assert_eq!(
                key_order(&out) == names,
                keys <= ORDERED_KEYS_LIMIT,
                "{keys} keys: order kept only up to {ORDERED_KEYS_LIMIT}"
            );
        }

        for keys in [ORDERED_KEYS_LIMIT + 1, 40] {
            let (wide, names) = wide_object(keys);
            let out = one(Schema::Json, StreamSchema::Json, wide.as_bytes()).unwrap();
            let order = key_order(&out);
            assert_ne!(order, names, "{keys} keys: hash order, not as written");
            let mut sorted = order.clone();
            sorted.sort();
            assert_eq!(sorted, names, "{keys} keys: every key is still there once");
            let values: serde_json::Value = serde_json::from_slice(&out).unwrap();
            let written: serde_json::Value = serde_json::from_str(&wide).unwrap();
            assert_eq!(values, written, "{keys} keys: the values are unchanged");
        }
    }

    #[test]
    fn nested_objects_follow_the_same_limit() {
        let (wide, names) = wide_object(40);
        let payload = format!("{{\"row\":{wide}}}");
        let out = one(Schema::Json, StreamSchema::Json, payload.as_bytes()).unwrap();
        assert_ne!(key_order(&out)[1..], names[..]);
    }

    #[test]
    fn a_39_digit_integer_fails_the_parse_and_rejects_the_batch() {
        let big = b"{\"amount\":123456789012345678901234567890123456789}";
        let batch = messages(&[b"{\"amount\":1}", big, b"{\"amount\":2}", big]);
        let rejection = encode_messages(Schema::Json, StreamSchema::Json, &batch).unwrap_err();
        assert_eq!(rejection.errors, 2, "every failed message counts");
        assert!(
            matches!(rejection.first, MessageError::DecodeJson { index: 1, .. }),
            "{:?}",
            rejection.first
        );
        let line = rejection.log_line(7, 3);
        assert!(
            line.starts_with("Rejected source batch 7 after 2 decode or processing errors for source connector with ID: 3; first: message 1: "),
            "{line}"
        );
    }

    #[test]
    fn integers_within_64_bits_are_kept() {
        let payload = format!("[{},{},{}]", i64::MIN, i64::MAX, u64::MAX);
        let out = one(Schema::Json, StreamSchema::Json, payload.as_bytes()).unwrap();
        assert_eq!(text(&out), payload);
        let beyond = format!("[{}0]", u64::MAX);
        assert!(one(Schema::Json, StreamSchema::Json, beyond.as_bytes()).is_err());
    }

    #[test]
    fn floats_keep_their_value_not_their_digits() {
        let out = one(
            Schema::Json,
            StreamSchema::Json,
            b"[1.10,1e2,0.1000000000000000055511151231257827,9999999999999999999999999999.9999999999]",
        )
        .unwrap();
        assert_eq!(text(&out), "[1.1,100.0,0.1,1e28]");
    }

    #[test]
    fn stream_schemas_beyond_json_raw_and_text_are_refused() {
        for schema in [Schema::Avro, Schema::Proto, Schema::FlatBuffer] {
            let error = StreamSchema::try_from(schema).unwrap_err();
            assert!(
                error
                    .to_string()
                    .contains("the runner emulates only json, raw and text streams"),
                "{error}"
            );
        }
        assert_eq!(
            StreamSchema::try_from(Schema::Text).unwrap(),
            StreamSchema::Text
        );
    }
}
