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

//! Where reading starts and stops: `starting_offset` and `stopping_offset`.

use serde::de::{Deserialize, Deserializer};
use serde_json::Value;

use super::options::StartingOffset;
use super::values::{refuse, text};
use crate::scope::stop::StoppingOffset;

/// `starting_offset`: `"full"`, `"earliest"`, `"latest"`, `"timestamp:<time>"` or an offset.
pub(super) fn starting<'de, D: Deserializer<'de>>(d: D) -> Result<StartingOffset, D::Error> {
    const ACCEPTED: &str = "use \"full\", \"earliest\", \"latest\", \"timestamp:<RFC 3339 UTC time or epoch ms>\" or a non-negative offset";
    let value = Value::deserialize(d)?;
    let text = text(&value, ACCEPTED)?;
    let parsed = match text.to_ascii_lowercase().as_str() {
        "full" => Some(StartingOffset::Full),
        "earliest" => Some(StartingOffset::Earliest),
        "latest" => Some(StartingOffset::Latest),
        lower => match lower.strip_prefix("timestamp:") {
            Some(time) => timestamp_millis(time.trim()).map(StartingOffset::Timestamp),
            None => text
                .parse::<i64>()
                .ok()
                .filter(|offset| *offset >= 0)
                .map(StartingOffset::Offset),
        },
    };
    parsed.ok_or_else(|| refuse(&value, ACCEPTED))
}

/// `stopping_offset`: `"latest"` or `"timestamp:<time>"`.
pub(super) fn stopping<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<StoppingOffset>, D::Error> {
    const ACCEPTED: &str = "use \"latest\" (the offsets at first open) or \"timestamp:<RFC 3339 UTC time or epoch ms>\", or remove the key to read without end";
    let value = Value::deserialize(d)?;
    let text = text(&value, ACCEPTED)?.to_ascii_lowercase();
    let parsed = if text == "latest" {
        Some(StoppingOffset::Latest)
    } else {
        text.strip_prefix("timestamp:")
            .and_then(|time| timestamp_millis(time.trim()))
            .map(StoppingOffset::Timestamp)
    };
    parsed.map(Some).ok_or_else(|| refuse(&value, ACCEPTED))
}

/// Epoch milliseconds from either digits or an RFC 3339 UTC time (`2026-11-30T12:00:00Z`).
fn timestamp_millis(s: &str) -> Option<i64> {
    if let Ok(ms) = s.parse::<i64>() {
        return Some(ms);
    }
    let time = humantime::parse_rfc3339_weak(&s.to_ascii_uppercase().replace('Z', "")).ok()?;
    let millis = time.duration_since(std::time::UNIX_EPOCH).ok()?.as_millis();
    i64::try_from(millis).ok()
}
