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

//! How serde reads `[plugin_config]` into a struct ([`read`]): which fault is reported when
//! there are several, what null means, and which key an error names.
//!
//! The checks, in the order their first fault is reported:
//! 1. a key the struct does not declare, with serde's own `unknown field` message (the first
//!    such key in the object's order);
//! 2. the keys without a default (the required keys), in declaration order: one missing
//!    (`` `key` is required ``) or refused ([`required_first`]);
//! 3. the other keys given, in declaration order;
//! 4. the checks between keys, after this module's (`Config::parse`).
//!
//! A null value is an unset key (its default), as serde reads `Option` fields; the runtime
//! never sends one (TOML has no null). serde reads a struct from an array too: an array with an
//! element per key is read as the object of them, each element the key at its position.
//!
//! A value's parser refuses it with [`de::Error::invalid_value`] (the value and what the key
//! accepts) or with a message of its own that names the key; either becomes a [`ConfigError`]
//! of that key here. What serde says about the section as a whole (not an object, an array of
//! the wrong length, an unknown key) keeps serde's words, with a pointer to the docs.

use std::fmt;

use serde::de::{
    self, DeserializeOwned, DeserializeSeed, Deserializer, Expected, IntoDeserializer, MapAccess,
    Unexpected, Visitor,
};
use serde_json::{Map, Value};

use super::ConfigError;

/// `T` read from the section `value`, with the keys it gives a value (null is no value).
pub(super) fn read<T: DeserializeOwned>(
    value: Value,
) -> Result<(T, Vec<&'static str>), ConfigError> {
    let fields = fields::<T>();
    let value = match value {
        Value::Array(items) if items.len() == fields.len() => Value::Object(
            fields
                .iter()
                .map(|key| (*key).to_owned())
                .zip(items)
                .collect(),
        ),
        other => other,
    };
    if let Value::Object(object) = &value {
        if let Some(unknown) = object.keys().find(|key| !fields.contains(&key.as_str())) {
            return Err(<Error as de::Error>::unknown_field(unknown, fields).of_section());
        }
        required_first::<T>(object)?;
    }
    let mut section = Section::new(value);
    let read = T::deserialize(&mut section).map_err(Error::of_section)?;
    Ok((read, section.given))
}

/// Checks the required keys of `object` before the others: `T` is read from them alone,
/// growing by the one serde names as missing (the first without a default) until it reads
/// or one of them is missing from `object` or refused.
fn required_first<T: DeserializeOwned>(object: &Map<String, Value>) -> Result<(), ConfigError> {
    let mut required = Map::new();
    loop {
        match T::deserialize(&mut Section::new(Value::Object(required.clone()))) {
            Ok(_) => return Ok(()),
            Err(Error::Missing(key)) if !required.contains_key(key) => {
                match object.get(key).filter(|v| !v.is_null()) {
                    Some(value) => required.insert(key.to_owned(), value.clone()),
                    None => return Err(Error::Missing(key).of_section()),
                };
            }
            Err(error) => return Err(error.of_section()),
        }
    }
}

/// The keys `T` declares, in declaration order: serde's field list of its derived
/// `Deserialize`, so there is no second list to keep in step.
pub(super) fn fields<T: DeserializeOwned>() -> &'static [&'static str] {
    let mut section = Section::new(Value::Null);
    // Null is refused; the field list is recorded on the way.
    let _ = T::deserialize(&mut section);
    section.fields
}

/// The section while serde reads it.
struct Section {
    value: Value,
    /// The keys the struct declares, once serde has named them.
    fields: &'static [&'static str],
    /// The keys given a value.
    given: Vec<&'static str>,
}

impl Section {
    fn new(value: Value) -> Self {
        Self {
            value,
            fields: &[],
            given: Vec::new(),
        }
    }
}

impl<'de> Deserializer<'de> for &mut Section {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        One(std::mem::take(&mut self.value)).deserialize_any(visitor)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.fields = fields;
        let mut object = match std::mem::take(&mut self.value) {
            Value::Object(object) => object,
            // [`read`] turns an array with an element per key into an object; these are the
            // words serde's derive and serde_json use for one too short or too long.
            Value::Array(items) => {
                let expected = if items.len() < fields.len() {
                    let expecting = &visitor as &dyn Expected;
                    format!("{expecting} with {} elements", fields.len())
                } else {
                    "fewer elements in array".to_owned()
                };
                return Err(de::Error::invalid_length(items.len(), &expected.as_str()));
            }
            other => {
                return other
                    .deserialize_struct(name, fields, visitor)
                    .map_err(Error::serde);
            }
        };
        let given: Vec<(&'static str, Value)> = fields
            .iter()
            .filter_map(|key| Some((*key, object.remove(*key).filter(|v| !v.is_null())?)))
            .collect();
        self.given = given.iter().map(|(key, _)| *key).collect();
        visitor.visit_map(Given {
            keys: given.into_iter(),
            value: None,
        })
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

/// The keys given, in declaration order; an error reading a value is given its key.
struct Given {
    keys: std::vec::IntoIter<(&'static str, Value)>,
    /// The value of the key just handed to serde.
    value: Option<(&'static str, Value)>,
}

impl<'de> MapAccess<'de> for Given {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        let Some((key, value)) = self.keys.next() else {
            return Ok(None);
        };
        self.value = Some((key, value));
        seed.deserialize(key.into_deserializer()).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let (key, value) = self
            .value
            .take()
            .ok_or_else(|| de::Error::custom("a value was asked for before its key"))?;
        seed.deserialize(One(value)).map_err(|e| e.of_key(key))
    }
}

/// One key's value, as its field's parser reads it.
struct One(Value);

impl<'de> Deserializer<'de> for One {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.0.deserialize_any(visitor).map_err(Error::serde)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map struct enum
        identifier ignored_any
    }
}

/// A refusal on its way out of serde.
#[derive(Debug)]
pub(super) enum Error {
    /// A value its key does not accept: the value, as JSON, and what the key accepts.
    Invalid { value: String, accepted: String },
    /// Words that say what is at fault: a parser's, which name its key, or serde's.
    Said(String),
    /// A key without a default that is not given.
    Missing(&'static str),
    /// A refusal of a key's value, with its key.
    Config(ConfigError),
}

impl Error {
    fn serde(error: serde_json::Error) -> Self {
        Self::Said(error.to_string())
    }

    /// This refusal of the value of `key`.
    fn of_key(self, key: &'static str) -> Self {
        let message = match self {
            Self::Invalid { value, accepted } => {
                format!("`{key}` = {value} is not valid; {accepted}")
            }
            Self::Said(message) => message,
            keyed @ (Self::Missing(_) | Self::Config(_)) => return keyed,
        };
        Self::Config(ConfigError { key, message })
    }

    /// The error `Config::parse` returns.
    fn of_section(self) -> ConfigError {
        match self {
            Self::Missing(key) => ConfigError {
                key,
                message: format!("`{key}` is required"),
            },
            Self::Config(error) => error,
            other => ConfigError {
                key: "plugin_config",
                message: format!("{other}; see docs/configuration.md for the accepted keys"),
            },
        }
    }
}

impl de::Error for Error {
    fn custom<T: fmt::Display>(message: T) -> Self {
        Self::Said(message.to_string())
    }

    fn invalid_value(value: Unexpected<'_>, accepted: &dyn Expected) -> Self {
        Self::Invalid {
            value: value.to_string(),
            accepted: accepted.to_string(),
        }
    }

    fn missing_field(key: &'static str) -> Self {
        Self::Missing(key)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Invalid { value, accepted } => {
                write!(f, "invalid value: {value}, expected {accepted}")
            }
            Self::Said(message) => f.write_str(message),
            Self::Missing(key) => write!(f, "`{key}` is required"),
            Self::Config(error) => f.write_str(&error.message),
        }
    }
}

impl std::error::Error for Error {}
