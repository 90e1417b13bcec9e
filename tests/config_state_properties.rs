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

//! Property tests of the two parsers that take untrusted bytes at `open`: the plugin config
//! (`Config::parse`, JSON from the connector file and environment) and the saved state
//! (`SavedState::decode`, MessagePack from the runtime's state file). Neither may panic on
//! any input, every refusal must carry a message, state round-trips, and a damaged state is
//! refused.
//!
//! Each property runs `PROPTEST_CASES` inputs (default 3,000: 21,000 in all, about 10 s in
//! a debug build, which is what CI runs).

use std::collections::BTreeMap;

use iggy_connector_fluss_source::config::Config;
use iggy_connector_fluss_source::position::{BucketKey, Position, Positions, Resume};
use iggy_connector_fluss_source::sdk::ConnectorState;
use iggy_connector_fluss_source::state::{SavedState, Scope};
use proptest::prelude::*;
use proptest::test_runner::Config as ProptestConfig;
use serde_json::{Map, Value};

mod property;

fn config() -> ProptestConfig {
    property::config(3_000)
}

/// Every accepted key, from the parser itself.
fn keys() -> &'static [&'static str] {
    iggy_connector_fluss_source::config::keys()
}

/// Text that is close to what the keys accept, so the validators get past their first check.
fn plausible_text() -> impl Strategy<Value = String> {
    prop_oneof![
        // Durations, including overflowing and odd units.
        "[0-9]{1,25}(ns|us|ms|s|m|h|d|w|y|)",
        "-?[0-9]{1,3}(\\.[0-9]{1,3})?\\s?(ms|s|min)",
        // Offsets and timestamps.
        "(earliest|latest|EARLIEST|-?[0-9]{1,22})",
        "timestamp:(-?[0-9]{0,22}|[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,12})?(Z|[+-][0-9]{2}:[0-9]{2})?)",
        // Enum values, servers, names.
        "(auto|log|primary_key|json|arrow_ipc|none|lz4|zstd|debezium|flat|fail|iso8601|epoch|string|number|PLAIN|plain)",
        "([a-z0-9.\\-]{0,12}:[0-9]{0,7},?){0,3}",
        "[a-zA-Z_][a-zA-Z0-9_.$]{0,20}",
        // Anything at all, including control characters and non-ASCII.
        any::<String>(),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        plausible_text().prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(plausible_text(), inner, 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// An object with a random subset of the real keys (sometimes an unknown one too).
fn config_object() -> impl Strategy<Value = Value> {
    (
        prop::collection::vec((prop::sample::select(keys()), json_value()), 0..12),
        prop::option::weighted(0.1, ("[a-z_]{1,12}", json_value())),
        any::<bool>(),
    )
        .prop_map(|(pairs, unknown, with_required)| {
            let mut map = Map::new();
            if with_required {
                map.insert("bootstrap_servers".into(), "127.0.0.1:9123".into());
                map.insert("database".into(), "fluss".into());
                map.insert("table".into(), "orders".into());
            }
            for (key, value) in pairs {
                map.insert((*key).to_owned(), value);
            }
            if let Some((key, value)) = unknown {
                map.insert(key, value);
            }
            Value::Object(map)
        })
}

fn check_config(text: &str) {
    match Config::parse(text) {
        Ok(config) => {
            // Whatever parses is usable: no zero limits, a non-empty table.
            assert!(config.batch_size > 0 && config.max_batch_bytes > 0);
            assert!(!config.poll_interval.is_zero() && !config.connect_timeout.is_zero());
            assert!(!config.table.is_empty() && !config.database.is_empty());
            // The password never shows in Debug.
            if let Some(sasl) = &config.sasl {
                let password = sasl.password.expose();
                if password.len() > 3 {
                    assert!(!format!("{config:?}").contains(password));
                }
            }
        }
        Err(error) => assert!(!error.to_string().is_empty(), "an error without a message"),
    }
}

fn positions() -> impl Strategy<Value = Positions> {
    prop::collection::btree_map(
        (prop::option::of(any::<i64>()), 0..i32::MAX),
        prop_oneof![
            (0..i64::MAX).prop_map(Position::At),
            Just(Position::SNAPSHOT),
            (0..i64::MAX - 2).prop_map(|floor| Position::Snapshot {
                floor: Some(floor),
                resume: None,
            }),
            (
                0..i64::MAX - 2,
                any::<i64>(),
                any::<u64>(),
                any::<Option<u64>>()
            )
                .prop_map(|(floor, snapshot, rows, kept)| Position::Snapshot {
                    floor: Some(floor),
                    resume: Some(Resume {
                        snapshot,
                        rows,
                        kept
                    }),
                }),
        ],
        0..20,
    )
    .prop_map(|m| {
        m.into_iter()
            .map(|((partition, bucket), offset)| (BucketKey { partition, bucket }, offset))
            .collect::<BTreeMap<_, _>>()
    })
}

fn check_state(bytes: Vec<u8>) {
    match SavedState::decode(&ConnectorState(bytes)) {
        Ok(state) => {
            assert!(state.positions.values().all(|p| match p {
                Position::At(offset) => *offset >= 0,
                Position::Snapshot { floor, .. } => floor.is_none_or(|f| f >= 0),
            }));
            assert!(state.positions.keys().all(|k| k.bucket >= 0));
        }
        Err(error) => assert!(!error.to_string().is_empty(), "an error without a message"),
    }
}

/// A MessagePack value of the persisted record's shape with arbitrary field contents.
fn state_like() -> impl Strategy<Value = Vec<u8>> {
    (
        prop_oneof![Just(1u32), any::<u32>()],
        any::<i64>(),
        plausible_text(),
        prop::collection::vec(
            (prop::option::of(any::<i64>()), any::<i32>(), any::<i64>()),
            0..8,
        ),
    )
        .prop_map(|(version, table_id, table, positions)| {
            rmp_serde::to_vec(&(version, table_id, table, positions)).expect("encode")
        })
}

/// Byte-level damage to a valid state: flips, truncation, insertion. The state as written
/// comes first, then the damaged bytes.
fn damaged_state() -> impl Strategy<Value = (Vec<u8>, Vec<u8>)> {
    (
        any::<i64>(),
        positions(),
        prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0..3u8), 1..6),
    )
        .prop_map(|(table_id, positions, edits)| {
            let written =
                SavedState::encode(table_id, "fluss.orders", &positions, Scope::default())
                    .expect("encode")
                    .0;
            let mut bytes = written.clone();
            for (at, byte, kind) in edits {
                if bytes.is_empty() {
                    bytes.push(byte);
                    continue;
                }
                let i = at.index(bytes.len());
                match kind {
                    0 => bytes[i] = byte,
                    1 => bytes.truncate(i),
                    _ => bytes.insert(i, byte),
                }
            }
            (written, bytes)
        })
}

/// A damaged state is refused, never resumed from: the checksum after the record catches
/// every change. The one exception is damage that leaves a whole record of format 1 (version
/// 1, nothing after it), the format written before the checksum, which still loads.
fn check_damaged_state(written: &[u8], damaged: Vec<u8>) -> Result<(), TestCaseError> {
    if damaged == written {
        return Ok(());
    }
    let decoded = SavedState::decode(&ConnectorState(damaged.clone()));
    match decoded {
        Err(error) => prop_assert!(!error.to_string().is_empty(), "an error without a message"),
        // (The version is the record's first field, right after the array's marker.)
        Ok(state) => prop_assert!(
            damaged.get(1) == Some(&1),
            "damaged bytes {damaged:02x?} (written {written:02x?}) were accepted as {state:?}"
        ),
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn config_parse_never_panics_on_any_text(text in any::<String>()) {
        check_config(&text);
    }

    #[test]
    fn config_parse_never_panics_on_config_like_json(value in config_object()) {
        check_config(&value.to_string());
    }

    #[test]
    fn config_parse_never_panics_on_any_json(value in json_value()) {
        check_config(&value.to_string());
    }

    #[test]
    fn state_decode_never_panics_on_any_bytes(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        check_state(bytes);
    }

    #[test]
    fn state_decode_never_panics_on_state_like_records(bytes in state_like()) {
        check_state(bytes);
    }

    #[test]
    fn damaged_state_is_refused((written, damaged) in damaged_state()) {
        check_state(damaged.clone());
        check_damaged_state(&written, damaged)?;
    }

    #[test]
    fn state_round_trips(table_id in any::<i64>(), table in any::<String>(), positions in positions()) {
        let encoded = SavedState::encode(table_id, &table, &positions, Scope::default()).expect("encode");
        let decoded = SavedState::decode(&encoded).expect("decode");
        prop_assert_eq!(decoded.table_id, table_id);
        prop_assert_eq!(decoded.table, table);
        prop_assert_eq!(decoded.positions, positions);
    }
}
