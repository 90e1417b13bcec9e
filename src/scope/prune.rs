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

//! Partition pruning (`partitions`): which partitions of a partitioned table are read.
//!
//! Each entry selects partitions by the values of some of their partition keys, as
//! `key=value` pairs joined by `/` (`region=eu`, `region=eu/year=2024`); a partition is read
//! when every pair of at least one entry matches it. Keys left out match any value, so
//! `region=eu` on a table partitioned by `region` and `year` reads every year of `eu`. Values
//! compare exactly (case-sensitive), as Fluss stores them. Partitions created later are
//! matched by discovery the same way.

use std::fmt;

/// The `partitions` selection: any entry matching selects a partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionFilter {
    entries: Vec<Vec<(String, String)>>,
}

/// How the configuration spells the syntax, for errors.
const SYNTAX: &str = "give each entry as key=value pairs joined by '/', e.g. [\"region=eu\", \"region=us/year=2024\"]";

impl PartitionFilter {
    /// Parses the entries of `partitions`; `Err` names the bad entry and the syntax.
    pub fn parse(entries: &[String]) -> Result<Self, String> {
        if entries.is_empty() {
            return Err(format!(
                "`partitions` is empty; {SYNTAX}, or remove the key to read every partition"
            ));
        }
        let mut parsed = Vec::with_capacity(entries.len());
        for entry in entries {
            let mut pairs: Vec<(String, String)> = Vec::new();
            for pair in entry.split('/') {
                let (key, value) = pair
                    .split_once('=')
                    .map(|(k, v)| (k.trim(), v.trim()))
                    .filter(|(k, v)| !k.is_empty() && !v.is_empty())
                    .ok_or_else(|| {
                        format!("`partitions` entry \"{entry}\" is not valid; {SYNTAX}")
                    })?;
                if pairs.iter().any(|(k, _)| k == key) {
                    return Err(format!(
                        "`partitions` entry \"{entry}\" names `{key}` twice; give each key once per entry"
                    ));
                }
                pairs.push((key.to_owned(), value.to_owned()));
            }
            parsed.push(pairs);
        }
        Ok(Self { entries: parsed })
    }

    /// Checks the filter against the table: it must be partitioned, and by every key named.
    pub fn check(&self, table: &str, partition_keys: &[String]) -> Result<(), String> {
        if partition_keys.is_empty() {
            return Err(format!(
                "`partitions`: table {table} is not partitioned; remove `partitions`"
            ));
        }
        for (key, _) in self.entries.iter().flatten() {
            if !partition_keys.contains(key) {
                return Err(format!(
                    "`partitions` names the partition key `{key}`, but table {table} is partitioned by {}; use those keys",
                    partition_keys.join(", ")
                ));
            }
        }
        Ok(())
    }

    /// Whether the partition with these key values (`keys[i]` = `values[i]`) is read.
    pub fn matches(&self, keys: &[String], values: &[String]) -> bool {
        self.entries.iter().any(|entry| {
            entry.iter().all(|(key, value)| {
                keys.iter()
                    .position(|k| k == key)
                    .and_then(|i| values.get(i))
                    .is_some_and(|v| v == value)
            })
        })
    }
}

impl fmt::Display for PartitionFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let entries: Vec<String> = self
            .entries
            .iter()
            .map(|entry| {
                let pairs: Vec<String> = entry.iter().map(|(k, v)| format!("{k}={v}")).collect();
                pairs.join("/")
            })
            .collect();
        f.write_str(&entries.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter(entries: &[&str]) -> Result<PartitionFilter, String> {
        PartitionFilter::parse(&entries.iter().map(|e| (*e).to_owned()).collect::<Vec<_>>())
    }

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn entries_match_on_the_keys_they_name() {
        let f = filter(&["region=eu", "region=us/year=2024"]).unwrap();
        let keys = strings(&["region", "year"]);
        assert!(f.matches(&keys, &strings(&["eu", "2023"])));
        assert!(f.matches(&keys, &strings(&["us", "2024"])));
        assert!(!f.matches(&keys, &strings(&["us", "2023"])));
        assert!(!f.matches(&keys, &strings(&["EU", "2023"])), "case matters");
        assert_eq!(f.to_string(), "region=eu, region=us/year=2024");
    }

    #[test]
    fn bad_entries_are_refused_with_the_syntax() {
        for bad in ["eu", "region=", "=eu", "region=eu/", ""] {
            let e = filter(&[bad]).unwrap_err();
            assert_eq!(
                e,
                format!("`partitions` entry \"{bad}\" is not valid; {SYNTAX}"),
                "{bad}"
            );
        }
        let e = filter(&["region=eu/region=us"]).unwrap_err();
        assert!(e.contains("names `region` twice"), "{e}");
        let e = filter(&[]).unwrap_err();
        assert!(e.starts_with("`partitions` is empty"), "{e}");
    }

    #[test]
    fn the_table_must_have_the_keys_named() {
        let f = filter(&["region=eu", "year=2024"]).unwrap();
        assert_eq!(
            f.check("db.t", &strings(&["region"])).unwrap_err(),
            "`partitions` names the partition key `year`, but table db.t is partitioned by region; use those keys"
        );
        assert_eq!(
            f.check("db.t", &[]).unwrap_err(),
            "`partitions`: table db.t is not partitioned; remove `partitions`"
        );
        f.check("db.t", &strings(&["year", "region"])).unwrap();
    }
}
