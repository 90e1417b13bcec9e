//! One JSON line per message:
//! `{"batch":1,"id":"7","headers":{"n":7,"source":"test"},"schema":"json","payload":{"n":7}}`.
//! `id` is the u128 as a decimal string (or null); header values are rendered by kind
//! (strings as strings, numbers as numbers, bools as bools, raw bytes as base64);
//! a JSON payload is inlined (as sent when it is on one line, else compacted), any other
//! payload is a base64 string.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use iggy_connector_sdk::{HeaderKind, HeaderValue, ProducedMessage, Schema};
use std::fmt::Write as _;

use crate::harness::Batch;

/// Appends one line (with `\n`) per message of `batch` to `out`.
pub fn render_batch(batch: &Batch, out: &mut String) {
    for message in &batch.messages.messages {
        render_message(batch.batch_id, batch.messages.schema, message, out);
    }
}

/// Appends the line of one message.
pub fn render_message(batch_id: u64, schema: Schema, message: &ProducedMessage, out: &mut String) {
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
    let inline = (schema == Schema::Json)
        .then(|| serde_json::from_slice::<serde_json::Value>(&message.payload).ok())
        .flatten();
    match (inline, std::str::from_utf8(&message.payload)) {
        // Compact valid JSON is copied as it is, so its key order (part of the plugin's
        // contract) shows; anything with line breaks is re-serialised onto one line.
        (Some(_), Ok(text)) if !text.contains(['\n', '\r']) => out.push_str(text.trim()),
        (Some(value), _) => out.push_str(&value.to_string()),
        (None, _) => push_json_string(out, &STANDARD.encode(&message.payload)),
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
        render_batch(&batch, &mut out);
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
}
