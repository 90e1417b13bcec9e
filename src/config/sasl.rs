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

//! SASL/PLAIN credentials: `sasl_mechanism`, `sasl_username` and `sasl_password`.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer};
use serde_json::Value;

use super::ConfigError;
use super::values::{refuse, text};

/// A secret that never appears in `Debug` output or logs.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// The secret text, for handing to the Fluss client only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// SASL/PLAIN credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sasl {
    /// The SASL mechanism; Fluss clients support only `PLAIN`.
    pub mechanism: String,
    /// The user name.
    pub username: String,
    /// The password (redacted in `Debug`).
    pub password: Secret,
}

/// `sasl_mechanism`: `PLAIN`, in any case.
pub(super) fn mechanism<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let value = Value::deserialize(d)?;
    if text(&value, "use \"PLAIN\"")?.eq_ignore_ascii_case("plain") {
        Ok(Some("PLAIN".to_owned()))
    } else {
        Err(refuse(&value, "the Fluss client supports only \"PLAIN\""))
    }
}

/// `sasl_password`: a string (or a number); the value is never echoed, even when refused.
pub(super) fn password<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Secret>, D::Error> {
    match Value::deserialize(d)? {
        Value::String(s) => Ok(Some(Secret(s))),
        Value::Number(n) => Ok(Some(Secret(n.to_string()))),
        _ => Err(de::Error::custom("`sasl_password` must be a string")),
    }
}

/// The credentials the three keys give: none, or a user name with a password (`PLAIN` unless
/// `sasl_mechanism` says otherwise); one of the pair without the other is refused.
pub(super) fn credentials(
    mechanism: Option<String>,
    username: Option<String>,
    password: Option<Secret>,
) -> Result<Option<Sasl>, ConfigError> {
    match (username, password) {
        (None, None) if mechanism.is_none() => Ok(None),
        (Some(username), Some(password)) => Ok(Some(Sasl {
            mechanism: mechanism.unwrap_or_else(|| "PLAIN".to_owned()),
            username,
            password,
        })),
        (None, _) => Err(ConfigError {
            key: "sasl_username",
            message: "SASL needs `sasl_username` as well as `sasl_password`".into(),
        }),
        (Some(_), None) => Err(ConfigError {
            key: "sasl_password",
            message: "SASL needs `sasl_password` as well as `sasl_username`".into(),
        }),
    }
}
