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

//! Header values serialise their bytes as standard padded base64 (the runtime's JSON view of
//! a header). Values of up to `INLINE_CAPACITY` bytes go through a hand-written encoder in
//! `message.rs`, longer ones through the base64 crate; both must equal the base64 crate on
//! random bytes of every length, and decode back to the same bytes.
//!
//! Cases per property: `PROPTEST_CASES`, default 4,096 in an optimised build (the workspace's
//! proptest configuration, tests/property/mod.rs).

#[path = "../../tests/property/mod.rs"]
mod property;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use iggy_connector_sdk::message::{INLINE_CAPACITY, MAX_HEADER_LEN};
use iggy_connector_sdk::{HeaderField, HeaderKind};
use proptest::prelude::*;
use serde_json::{Value, json};

/// Bytes of every length of the short path (`min..=22`, each tail of 0, 1 or 2 bytes) more
/// often than the longer lengths (`23..=max`) the crate handles.
fn bytes(min: usize, max: usize) -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        3 => prop::collection::vec(any::<u8>(), min..=INLINE_CAPACITY),
        1 => prop::collection::vec(any::<u8>(), INLINE_CAPACITY + 1..=max),
    ]
}

/// The `value` text of a header as serde serialises it.
fn serialized_value(field: &HeaderField) -> String {
    match serde_json::to_value(field).expect("a header serialises") {
        Value::Object(mut fields) => match fields.remove("value") {
            Some(Value::String(text)) => text,
            other => panic!("`value` is not a string: {other:?}"),
        },
        other => panic!("a header serialises as an object, got {other}"),
    }
}

proptest! {
    #![proptest_config(property::config(4_096))]

    /// Raw headers (1..=255 bytes, the lengths the constructors accept).
    #[test]
    fn raw_header_values_are_the_base64_crate_text(bytes in bytes(1, MAX_HEADER_LEN)) {
        let field = HeaderField::from_raw(&bytes).expect("1..=255 bytes");
        prop_assert_eq!(serialized_value(&field), STANDARD.encode(&bytes));
    }

    /// Any length, including 0 and past the 255-byte limit, as a decoded field (no size
    /// rules) carries it.
    #[test]
    fn decoded_header_values_serialise_back_to_the_same_text(bytes in bytes(0, 400)) {
        let text = STANDARD.encode(&bytes);
        let field: HeaderField =
            serde_json::from_value(json!({"kind": "Raw", "value": text})).expect("decodes");
        prop_assert_eq!(field.kind(), HeaderKind::Raw);
        prop_assert_eq!(field.as_bytes(), &bytes[..]);
        prop_assert_eq!(serialized_value(&field), text);
    }
}
