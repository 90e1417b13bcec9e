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

//! The kinds of value `[plugin_config]` keys take, each a serde `deserialize_with` function
//! that reads the whole JSON value, and the defaults of numeric keys.
//!
//! The runtime's environment overrides are type-guessed (`…_BATCH_SIZE=500` arrives as a
//! number, `…=true` as a bool), so every kind reads its value through [`text`], which takes a
//! string, a number or a bool alike. A value a key does not accept is refused with [`refuse`]:
//! the value and what is accepted ([`super::section`] puts the key in front).

use std::path::PathBuf;
use std::time::Duration;

use serde::de::{self, Deserialize, Deserializer, Unexpected};
use serde_json::Value;

use super::options::Choice;

/// The refusal of `value`, saying what the key accepts instead.
pub(super) fn refuse<E: de::Error>(value: &Value, accepted: &str) -> E {
    E::invalid_value(Unexpected::Other(&value.to_string()), &accepted)
}

/// A string, trimmed, or the text of a number or a bool given where text was meant.
pub(super) fn text<E: de::Error>(value: &Value, accepted: &str) -> Result<String, E> {
    match value {
        Value::String(s) => Ok(s.trim().to_owned()),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        _ => Err(refuse(value, accepted)),
    }
}

/// A list: an array of [`text`]s, or one comma-separated string (what an environment override
/// gives), each entry trimmed.
pub(super) fn list<E: de::Error>(value: &Value, accepted: &str) -> Result<Vec<String>, E> {
    match value {
        Value::String(s) => Ok(s.split(',').map(|entry| entry.trim().to_owned()).collect()),
        Value::Array(items) => items.iter().map(|item| text(item, accepted)).collect(),
        _ => Err(refuse(value, accepted)),
    }
}

/// A name: [`text`] that is not empty.
pub(super) fn name<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    read_name(&Value::deserialize(d)?)
}

/// [`name`], for a key that may be left out.
pub(super) fn some_name<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    name(d).map(Some)
}

/// A path: a [`name`].
pub(super) fn path<'de, D: Deserializer<'de>>(d: D) -> Result<PathBuf, D::Error> {
    name(d).map(PathBuf::from)
}

/// The [`name`] in `value`.
pub(super) fn read_name<E: de::Error>(value: &Value) -> Result<String, E> {
    let name = text(value, "give the name as a string")?;
    if name.is_empty() {
        return Err(refuse(value, "it must not be empty"));
    }
    Ok(name)
}

/// `true` or `false`: a bool, or its text in any case.
pub(super) fn flag<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    const ACCEPTED: &str = "use true or false";
    let value = Value::deserialize(d)?;
    match text(&value, ACCEPTED)?.to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(refuse(&value, ACCEPTED)),
    }
}

/// One of the names of `T` ([`Choice::CHOICES`]), in any case.
pub(super) fn choice<'de, D: Deserializer<'de>, T: Choice>(d: D) -> Result<T, D::Error> {
    let value = Value::deserialize(d)?;
    let accepted = format!("use one of {}", quoted_names::<T>());
    T::named(&text(&value, &accepted)?).ok_or_else(|| refuse(&value, &accepted))
}

/// The names of `T`, quoted and joined by `, `, as messages list them.
pub(super) fn quoted_names<T: Choice>() -> String {
    let names: Vec<String> = T::CHOICES.iter().map(|(n, _)| format!("\"{n}\"")).collect();
    names.join(", ")
}

/// A whole number from `MIN` to `MAX` (no upper bound when `MAX` is `usize::MAX`): a number,
/// or its text with `_` allowed between digits (`"1_000"`).
pub(super) struct Ranged<const MIN: usize, const MAX: usize>;

impl<const MIN: usize, const MAX: usize> Ranged<MIN, MAX> {
    /// The number.
    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
        let value = Value::deserialize(d)?;
        let accepted = if MAX == usize::MAX {
            format!("use a whole number ≥ {MIN}")
        } else {
            format!("use a whole number from {MIN} to {MAX}")
        };
        text(&value, &accepted)?
            .replace('_', "")
            .parse()
            .ok()
            .filter(|n| (MIN..=MAX).contains(n))
            .ok_or_else(|| refuse(&value, &accepted))
    }

    /// The same check with the number dropped, for a key that is accepted with no effect.
    pub(super) fn check<'de, D: Deserializer<'de>>(d: D) -> Result<(), D::Error> {
        Self::deserialize(d).map(drop)
    }
}

/// A positive duration: `"500ms"`, `"30s"`, `"1m"` (humantime).
pub(super) fn duration<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    read_duration(&Value::deserialize(d)?, false)
}

/// A duration, zero (`"0s"`, `0`) turning off what it times.
pub(super) fn duration_or_off<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    read_duration(&Value::deserialize(d)?, true)
}

fn read_duration<E: de::Error>(value: &Value, zero_allowed: bool) -> Result<Duration, E> {
    let accepted = if zero_allowed {
        "use a duration such as \"500ms\", \"30s\" or \"1m\" (\"0s\" turns it off)"
    } else {
        "use a positive duration such as \"500ms\", \"30s\" or \"1m\""
    };
    let text = text(value, accepted)?;
    let parsed = if text == "0" {
        Some(Duration::ZERO)
    } else {
        humantime::parse_duration(&text).ok()
    };
    parsed
        .filter(|d| zero_allowed || !d.is_zero())
        .ok_or_else(|| refuse(value, accepted))
}

/// The default `N` of a whole-number key.
pub(super) fn number<const N: usize>() -> usize {
    N
}

/// The default of a duration key: `N` milliseconds.
pub(super) fn millis<const N: u64>() -> Duration {
    Duration::from_millis(N)
}

/// The default of a duration key: `N` seconds.
pub(super) fn seconds<const N: u64>() -> Duration {
    Duration::from_secs(N)
}
