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

//! One JSON line per message:
//! `{"batch":1,"id":"7","headers":{"n":7,"source":"test"},"schema":"json","payload":{"n":7}}`.
//! `id` is the u128 as a decimal string (or null); header values are rendered by kind
//! (strings as strings, numbers as numbers, bools as bools, raw bytes as base64);
//! `schema` is the one the batch declares. `payload` shows the bytes the runtime would write
//! to the topic ([`crate::payload`]): inlined when they are JSON (as they are when on one
//! line, else compacted), otherwise a base64 string.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use iggy_connector_sdk::{HeaderKind, HeaderValue, ProducedMessage, Schema};
use std::fmt::Write as _;

use crate::harness::Batch;
use crate::payload::{Rejection, StreamSchema, visit_payloads};

/// Appends one line (with `\n`) per message of `batch` to `out`, each showing what the
/// runtime writes to a topic whose encoder is `stream` (`None`: the batch's own schema, and
/// payloads as sent for schemas the runner does not emulate). A batch the runtime would
/// reject appends nothing and returns the [`Rejection`].
pub fn render_batch(
    batch: &Batch,
    stream: Option<StreamSchema>,
    out: &mut String,
) -> Result<(), Rejection> {
    let (batch_id, schema) = (batch.batch_id, batch.messages.schema);
    let messages = &batch.messages.messages;
    let Some(stream) = stream.or_else(|| StreamSchema::try_from(schema).ok()) else {
        for message in messages {
            render_message(batch_id, schema, message, &message.payload, out);
        }
        return Ok(());
    };
    let start = out.len();
    visit_payloads(schema, stream, messages, |index, payload| {
        if let Some(message) = messages.get(index) {
            render_message(batch_id, schema, message, payload, out);
        }
    })
    .inspect_err(|_| out.truncate(start))
}

/// Appends the line of one message whose topic payload is `payload`.
pub fn render_message(
    batch_id: u64,
    schema: Schema,
    message: &ProducedMessage,
    payload: &[u8],
    out: &mut String,
) {
    let _ = write!(out, "{{\"batch\":{batch_id},\"id\":");
    match message.id {
        Some(id) => {
            let _ = write!(out, "\"{id}\"");
        }
        None => out.push_str("null"),
    }
    out.push_str(",\"headers\":{");
    if let Some(headers) = &message.headers {
        for (index, (key, value)) in headers.iter().enumerate() {
            if index > 0 {
                out.push(',');
            }
            push_json_string(out, &key.to_string());
            out.push(':');
            render_header_value(value, out);
        }
    }
    out.push_str("},\"schema\":");
    push_json_string(out, schema.as_str());
    out.push_str(",\"payload\":");
    // Whatever the schemas, JSON bytes are shown as JSON: a raw stream fed by
    // `payload_schema = "raw"` carries the plugin's JSON untouched.
    let inline = serde_json::from_slice::<serde_json::Value>(payload).ok();
    match (inline, std::str::from_utf8(payload)) {
        // Compact valid JSON is copied as it is, so its key order (part of the plugin's
        // contract) shows; anything with line breaks is re-serialised onto one line.
        (Some(_), Ok(text)) if !text.contains(['\n', '\r']) => out.push_str(text.trim()),
        (Some(value), _) => out.push_str(&value.to_string()),
        (None, _) => push_json_string(out, &STANDARD.encode(payload)),
    }
    out.push_str("}\n");
}

fn render_header_value(value: &HeaderValue, out: &mut String) {
    let kind = value.kind();
    let well_formed = HeaderValue::from_kind_bytes(kind, value.as_bytes()).is_ok();
    match kind {
        HeaderKind::Raw | HeaderKind::String => push_json_string(out, &value.to_string()),
        _ if !well_formed => push_json_string(out, &STANDARD.encode(value.as_bytes())),
        HeaderKind::Float32 | HeaderKind::Float64 => {
            let finite = value
                .as_f64()
                .map(f64::is_finite)
                .or_else(|_| value.as_f32().map(f32::is_finite));
            if finite.unwrap_or(false) {
                out.push_str(&value.to_string());
            } else {
                out.push_str("null");
            }
        }
        _ => out.push_str(&value.to_string()),
    }
}

fn push_json_string(out: &mut String, text: &str) {
    out.push_str(&serde_json::Value::from(text).to_string());
}

#[cfg(test)]
mod tests {
    use super::*;
    use iggy_connector_sdk::{HeaderKey, ProducedMessages};
    use std::collections::BTreeMap;

    #[test]
    fn renders_ids_headers_and_payload() {
        let mut headers = BTreeMap::new();
        headers.insert(HeaderKey::new("n").unwrap(), HeaderValue::from_u64(7));
        headers.insert(
            HeaderKey::new("s").unwrap(),
            HeaderValue::from_str("a\"b").unwrap(),
        );
        headers.insert(
            HeaderKey::new("r").unwrap(),
            HeaderValue::from_raw(&[0, 255]).unwrap(),
        );
        headers.insert(HeaderKey::new("b").unwrap(), HeaderValue::from_bool(true));
        headers.insert(
            HeaderKey::new("f").unwrap(),
            HeaderValue::from_f64(f64::NAN),
        );
        let batch = Batch {
            batch_id: 3,
            messages: ProducedMessages {
                schema: Schema::Json,
                messages: vec![
                    ProducedMessage {
                        id: Some(u128::MAX),
                        headers: Some(headers),
                        payload: b"{ \"n\" : 7 }".to_vec(),
                        ..ProducedMessage::default()
                    },
                    ProducedMessage {
                        payload: b"not json".to_vec(),
                        ..ProducedMessage::default()
                    },
                    ProducedMessage {
                        payload: b"{\"z\":1,\"a\":2}".to_vec(),
                        ..ProducedMessage::default()
                    },
                ],
                state: None,
            },
            encoded_len: 0,
        };
        let mut out = String::new();
        for message in &batch.messages.messages {
            render_message(3, Schema::Json, message, &message.payload, &mut out);
        }
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines[0],
            r#"{"batch":3,"id":"340282366920938463463374607431768211455","headers":{"b":true,"f":null,"n":7,"r":"AP8=","s":"a\"b"},"schema":"json","payload":{ "n" : 7 }}"#
        );
        assert_eq!(
            lines[1],
            r#"{"batch":3,"id":null,"headers":{},"schema":"json","payload":"bm90IGpzb24="}"#
        );
        assert_eq!(
            lines[2],
            r#"{"batch":3,"id":null,"headers":{},"schema":"json","payload":{"z":1,"a":2}}"#,
            "key order as sent"
        );
    }

    fn batch(schema: Schema, payloads: &[&[u8]]) -> Batch {
        Batch {
            batch_id: 1,
            messages: ProducedMessages {
                schema,
                messages: payloads
                    .iter()
                    .map(|payload| ProducedMessage {
                        payload: payload.to_vec(),
                        ..ProducedMessage::default()
                    })
                    .collect(),
                state: None,
            },
            encoded_len: 0,
        }
    }

    #[test]
    fn a_batch_is_rendered_as_its_stream_encodes_it() {
        let json = batch(Schema::Json, &[b"{ \"n\" : 7 }"]);
        let mut out = String::from("kept\n");
        render_batch(&json, Some(StreamSchema::Json), &mut out).unwrap();
        render_batch(&json, None, &mut out).unwrap();
        let line = r#"{"batch":1,"id":null,"headers":{},"schema":"json","payload":{"n":7}}"#;
        assert_eq!(
            out,
            format!("kept\n{line}\n{line}\n"),
            "re-encoded by simd-json, with or without a stream given"
        );

        let mut out = String::from("kept\n");
        let rejected = render_batch(&json, Some(StreamSchema::Raw), &mut out).unwrap_err();
        assert_eq!(rejected.errors, 1);
        assert_eq!(out, "kept\n", "a rejected batch adds no line");

        let avro = batch(Schema::Avro, &[b"\x01\x02"]);
        let mut out = String::new();
        render_batch(&avro, None, &mut out).unwrap();
        assert!(
            out.ends_with("\"schema\":\"avro\",\"payload\":\"AQI=\"}\n"),
            "{out}"
        );
    }

    #[test]
    fn topic_bytes_are_shown_whatever_the_batch_schema() {
        let message = ProducedMessage {
            payload: b"{\"z\":1.10}".to_vec(),
            ..ProducedMessage::default()
        };
        let mut out = String::new();
        render_message(1, Schema::Raw, &message, b"{\"z\":1.10}", &mut out);
        render_message(1, Schema::Raw, &message, &[0xff, 0], &mut out);
        render_message(1, Schema::Json, &message, b"{\"z\":1.1}", &mut out);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines,
            [
                r#"{"batch":1,"id":null,"headers":{},"schema":"raw","payload":{"z":1.10}}"#,
                r#"{"batch":1,"id":null,"headers":{},"schema":"raw","payload":"/wA="}"#,
                r#"{"batch":1,"id":null,"headers":{},"schema":"json","payload":{"z":1.1}}"#,
            ],
            "JSON bytes inline exactly, others base64, the batch schema as declared"
        );
    }
}
