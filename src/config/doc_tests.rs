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

//! The option tables of docs/configuration.md (required, common, advanced) list exactly the keys
//! this parser accepts, each once, with defaults that mean what omitting the key means and
//! examples the parser accepts.

use super::*;
use serde_json::json;

/// One row of an option table: its group, key, default and example.
struct Row {
    group: &'static str,
    key: String,
    default: String,
    example: String,
}

const GROUPS: [&str; 3] = ["Required", "Common", "Advanced"];

/// The rows of the three option tables, in order.
fn documented_rows() -> Vec<Row> {
    let doc = include_str!("../../docs/configuration.md");
    let options = doc
        .split("\n## Options\n")
        .nth(1)
        .expect("docs/configuration.md has an Options section");
    let options = &options[..options.find("\n## ").unwrap_or(options.len())];
    let mut rows = Vec::new();
    for group in GROUPS {
        let table = options
            .split(&format!("\n### {group}\n"))
            .nth(1)
            .unwrap_or_else(|| panic!("Options has a `### {group}` table"));
        let header = table.lines().next().unwrap_or_default();
        assert_eq!(
            header, "| Option | Type | Default | Example | Description |",
            "the {group} table's columns"
        );
        for line in table.lines().skip(2).take_while(|l| l.starts_with('|')) {
            let cells: Vec<String> = line
                .split(" | ")
                .map(|c| {
                    c.trim_matches(|c| c == '|' || c == ' ' || c == '`')
                        .to_owned()
                })
                .collect();
            rows.push(Row {
                group,
                key: cells[0].clone(),
                default: cells[2].clone(),
                example: cells[3].clone(),
            });
        }
    }
    rows
}

/// The keys serde accepts, read from its "expected one of" message.
fn accepted_keys() -> Vec<String> {
    let e = Config::parse(r#"{"__probe__": 1}"#).unwrap_err();
    let list = e
        .message
        .split("expected one of ")
        .nth(1)
        .expect("serde lists the fields");
    let mut keys: Vec<String> = list
        .split(',')
        .map(|k| k.trim().split('`').nth(1).unwrap_or_default().to_owned())
        .filter(|k| !k.is_empty())
        .collect();
    keys.sort();
    keys
}

fn base() -> serde_json::Value {
    json!({"bootstrap_servers": "h:1", "database": "d", "table": "t"})
}

/// A value as a connector file writes it (TOML), as the JSON the runtime hands over.
fn toml_value(text: &str) -> serde_json::Value {
    let table: toml::Table =
        toml::from_str(&format!("v = {text}")).unwrap_or_else(|e| panic!("{text}: {e}"));
    serde_json::to_value(&table["v"]).expect("JSON")
}

#[test]
fn keys_are_exactly_what_the_parser_accepts() {
    let mut keys: Vec<String> = keys().iter().map(|k| (*k).to_owned()).collect();
    keys.sort();
    assert_eq!(keys, accepted_keys());
    assert!(keys.len() >= 24, "{keys:?}");
}

#[test]
fn the_option_tables_list_every_key_exactly_once() {
    let mut documented: Vec<String> = documented_rows().into_iter().map(|r| r.key).collect();
    documented.sort();
    let mut unique = documented.clone();
    unique.dedup();
    assert_eq!(
        unique, documented,
        "a key is listed twice in docs/configuration.md"
    );
    assert_eq!(
        documented,
        accepted_keys(),
        "docs/configuration.md option tables vs Config"
    );
}

#[test]
fn the_required_table_holds_exactly_the_keys_without_a_default() {
    for row in documented_rows() {
        let required = row.default == "required";
        assert_eq!(
            required,
            row.group == "Required",
            "`{}` is in the {} table with default {}",
            row.key,
            row.group,
            row.default
        );
        if required {
            let mut config = base();
            config.as_object_mut().unwrap().remove(&row.key);
            let e = Config::parse(&config.to_string()).unwrap_err();
            assert_eq!(e.key, row.key, "omitting `{}` names it", row.key);
        }
    }
}

#[test]
fn documented_defaults_mean_what_omitting_the_key_means() {
    let omitted = Config::parse(&base().to_string()).unwrap();
    let mut checked = 0;
    for row in documented_rows() {
        if ["required", "all", "none", "OS temp dir"].contains(&row.default.as_str()) {
            continue;
        }
        let mut explicit = base();
        explicit[&row.key] = toml_value(&row.default);
        let parsed = Config::parse(&explicit.to_string())
            .unwrap_or_else(|e| panic!("the documented default of `{}` is refused: {e}", row.key));
        assert_eq!(
            parsed, omitted,
            "the documented default of `{}` differs from the code's",
            row.key
        );
        checked += 1;
    }
    assert!(checked >= 15, "only {checked} defaults checked");
}

/// Keys an example needs beside it: SASL takes both credentials, an instance index a count
/// above it.
fn companions(key: &str) -> serde_json::Value {
    match key {
        "sasl_mechanism" | "sasl_username" | "sasl_password" => {
            json!({"sasl_username": "reader", "sasl_password": "secret"})
        }
        "instance_index" => json!({"instance_count": 3}),
        _ => json!({}),
    }
}

#[test]
fn every_documented_example_is_accepted() {
    for row in documented_rows() {
        let mut config = base();
        for (key, value) in companions(&row.key).as_object().unwrap() {
            config[key] = value.clone();
        }
        config[&row.key] = toml_value(&row.example);
        Config::parse(&config.to_string()).unwrap_or_else(|e| {
            panic!(
                "the example of `{}` ({}) is refused: {e}",
                row.key, row.example
            )
        });
    }
}
