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

//! The keys that select what is read and sent: `columns`, `filter`, `headers` and
//! `partitions`.

use serde::de::{self, Deserialize, Deserializer};
use serde_json::Value;

use super::options::{Choice, Header, HeaderSet};
use super::values::{list, quoted_names, refuse};
use crate::filter::FilterText;
use crate::scope::prune::PartitionFilter;

/// `columns`: a list of column names, each once.
pub(super) fn columns<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    const ACCEPTED: &str = "use a list of column names, e.g. [\"id\", \"name\"]";
    let value = Value::deserialize(d)?;
    let names = list(&value, ACCEPTED)?;
    if names.is_empty() || names.iter().any(String::is_empty) {
        return Err(refuse(&value, ACCEPTED));
    }
    let mut seen = std::collections::HashSet::new();
    if let Some(twice) = names.iter().find(|n| !seen.insert(n.as_str())) {
        return Err(de::Error::custom(format!(
            "`columns` lists \"{twice}\" twice; list each column once"
        )));
    }
    Ok(Some(names))
}

/// `filter`: its syntax is checked here, its columns and literals against the table at open.
pub(super) fn filter<'de, D: Deserializer<'de>>(d: D) -> Result<Option<FilterText>, D::Error> {
    let value = Value::deserialize(d)?;
    // Not `text`: the filter is not trimmed, so error columns count from its first
    // character, and a number is not a filter.
    let Value::String(text) = &value else {
        return Err(refuse(
            &value,
            "use a condition as a string, e.g. \"amount > 100 AND region IN ('eu', 'us')\"",
        ));
    };
    FilterText::parse(text).map(Some).map_err(de::Error::custom)
}

/// `headers`: `"all"`, `"none"`, or a list of header names.
pub(super) fn headers<'de, D: Deserializer<'de>>(d: D) -> Result<HeaderSet, D::Error> {
    let value = Value::deserialize(d)?;
    let accepted = format!(
        "use \"all\", \"none\" or a list of header names ({})",
        quoted_names::<Header>()
    );
    match &value {
        Value::String(s) if s.trim().eq_ignore_ascii_case("all") => return Ok(HeaderSet::ALL),
        Value::String(s) if s.trim().eq_ignore_ascii_case("none") => return Ok(HeaderSet::NONE),
        _ => {}
    }
    let headers = list(&value, &accepted)?
        .iter()
        .map(|name| {
            Header::named(name).ok_or_else(|| {
                de::Error::custom(format!(
                    "`headers` names an unknown header \"{name}\"; {accepted}"
                ))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(HeaderSet::of(&headers))
}

/// `partitions`: a list of `key=value[/key=value…]` entries.
pub(super) fn partitions<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<PartitionFilter>, D::Error> {
    const ACCEPTED: &str =
        "use a list of key=value[/key=value…] entries, e.g. [\"region=eu\", \"region=us\"]";
    let entries = list(&Value::deserialize(d)?, ACCEPTED)?;
    PartitionFilter::parse(&entries)
        .map(Some)
        .map_err(de::Error::custom)
}
