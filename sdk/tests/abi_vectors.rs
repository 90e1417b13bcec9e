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

//! Every upstream postcard vector (`tests/data/produced_messages.json`, encoded by Apache
//! Iggy's own SDK and `iggy_common` header types) must encode byte for byte from its
//! description and decode back to the same value.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use iggy_connector_sdk::{
    ConnectorState, HeaderField, HeaderKind, ProducedMessage, ProducedMessages, Schema,
};
use serde_json::Value;
use std::collections::BTreeMap;

const VECTORS: &str = include_str!("data/produced_messages.json");

fn b64(value: &Value) -> Vec<u8> {
    STANDARD
        .decode(value.as_str().expect("base64 string"))
        .expect("valid base64")
}

fn opt_num<T: std::str::FromStr>(value: &Value) -> Option<T>
where
    T::Err: std::fmt::Debug,
{
    value
        .as_str()
        .map(|text| text.parse().expect("decimal string"))
}

fn schema(name: &str) -> Schema {
    match name {
        "json" => Schema::Json,
        "raw" => Schema::Raw,
        "text" => Schema::Text,
        "proto" => Schema::Proto,
        "flatbuffer" | "flat_buffer" => Schema::FlatBuffer,
        "avro" => Schema::Avro,
        other => panic!("unknown schema {other} in the vectors file"),
    }
}

fn field(value: &Value) -> HeaderField {
    let kind: HeaderKind = serde_json::from_value(value["kind"].clone()).expect("kind name");
    HeaderField::from_kind_bytes(kind, &b64(&value["bytes_b64"])).expect("valid header")
}

/// Header pairs of one message in wire order (`None` = no header map).
type HeaderOrder = Option<Vec<(HeaderField, HeaderField)>>;

/// The batch, plus each message's header pairs in their listed (wire) order.
fn build(value: &Value) -> (ProducedMessages, Vec<HeaderOrder>) {
    let mut orders = Vec::new();
    let messages = value["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| {
            let pairs = m["headers"].as_array().map(|pairs| {
                pairs
                    .iter()
                    .map(|p| (field(&p["key"]), field(&p["value"])))
                    .collect::<Vec<_>>()
            });
            let headers = pairs
                .clone()
                .map(|pairs| pairs.into_iter().collect::<BTreeMap<_, _>>());
            orders.push(pairs);
            ProducedMessage {
                id: opt_num(&m["id"]),
                checksum: opt_num(&m["checksum"]),
                timestamp: opt_num(&m["timestamp"]),
                origin_timestamp: opt_num(&m["origin_timestamp"]),
                headers,
                payload: b64(&m["payload_b64"]),
            }
        })
        .collect();
    let state = (!value["state_b64"].is_null()).then(|| ConnectorState(b64(&value["state_b64"])));
    let batch = ProducedMessages {
        schema: schema(value["schema"].as_str().expect("schema")),
        messages,
        state,
    };
    (batch, orders)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex"))
        .collect()
}

fn vectors() -> Vec<Value> {
    serde_json::from_str::<Vec<Value>>(VECTORS).expect("vectors file parses")
}

#[test]
fn the_vectors_file_covers_every_schema_and_header_kind() {
    let vectors = vectors();
    assert_eq!(vectors.len(), 8, "update this test when vectors are added");
    let text = VECTORS;
    for kind in [
        "\"Raw\"",
        "\"Bool\"",
        "\"Int128\"",
        "\"Uint128\"",
        "\"Float32\"",
    ] {
        assert!(text.contains(kind), "{kind} missing from the vectors");
    }
}

#[test]
fn every_vector_encodes_byte_for_byte() {
    for vector in vectors() {
        let name = vector["name"].as_str().unwrap_or("?");
        let (batch, _) = build(&vector["value"]);
        let encoded = batch.to_postcard().expect("encodes");
        assert_eq!(
            hex(&encoded),
            vector["postcard_hex"].as_str().expect("hex"),
            "vector {name}: our encoding differs; compare field order and header base64"
        );
        let streamed = batch.clone().into_postcard_in(Vec::new()).expect("encodes");
        assert_eq!(
            streamed, encoded,
            "vector {name}: into_postcard_in differs from to_postcard"
        );
        let reused = batch.into_postcard_in(vec![0xAA; 100]).expect("encodes");
        assert_eq!(
            reused, encoded,
            "vector {name}: a reused buffer must be cleared first"
        );
    }
}

#[test]
fn every_vector_decodes_to_its_value() {
    for vector in vectors() {
        let name = vector["name"].as_str().unwrap_or("?");
        let (expected, orders) = build(&vector["value"]);
        let bytes = unhex(vector["postcard_hex"].as_str().expect("hex"));
        let decoded: ProducedMessages = postcard::from_bytes(&bytes).expect("decodes");
        assert_eq!(decoded, expected, "vector {name}");
        for (message, order) in decoded.messages.iter().zip(orders) {
            let ours = message.headers.as_ref().map(|h| {
                h.iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect::<Vec<_>>()
            });
            assert_eq!(
                ours, order,
                "vector {name}: header order differs from the wire"
            );
        }
    }
}
