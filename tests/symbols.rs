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

//! The built plugin library exports exactly the runtime's five source symbols, loads, reports
//! its version over the C ABI, and refuses a bad configuration with one ERROR line that carries
//! the instance prefix. `cargo test` builds the cdylib these tests load
//! ([`fluss_testkit::plugin_path`]), so they need no step before it.

use fluss_testkit::plugin_path as plugin_library;

#[test]
fn the_plugin_exports_exactly_the_five_source_symbols() {
    let symbols = fluss_source_runner::exported_iggy_symbols(&plugin_library())
        .expect("nm (binutils) is installed");
    assert_eq!(symbols, fluss_source_runner::SOURCE_SYMBOLS);
}

#[test]
fn the_plugin_loads_and_refuses_a_null_config() {
    let harness = fluss_source_runner::Harness::load(plugin_library()).expect("load");
    assert_eq!(harness.version(), env!("CARGO_PKG_VERSION"));
    match harness.open("null", None) {
        Err(fluss_source_runner::Error::OpenFailed { code, .. }) => assert_ne!(code, 0),
        other => panic!("open with a null config must fail, got {other:?}"),
    }
    assert!(
        fluss_source_runner::logs()
            .iter()
            .any(|l| l.level == fluss_source_runner::Level::Error
                && l.message.contains("no [plugin_config] section"))
    );
}

/// Every configuration the config tests refuse fails `open` before any network work with one
/// ERROR line: the instance prefix operators alert on (`fluss[<id> <db.table>]`, or
/// `fluss[<id>]` while no table is named), then the refusal `Config::parse` gives.
#[test]
fn a_refused_config_is_one_error_line_with_the_instance_prefix() {
    use fluss_source_runner::{Harness, Level, logs};
    use iggy_connector_fluss_source::config::Config;

    let harness = Harness::load(plugin_library()).expect("load");
    let table = r#""bootstrap_servers":"127.0.0.1:9123","database":"fluss","table":"orders""#;
    let cases = [
        ("null", "fluss[{id}]".to_owned()),
        ("{}", "fluss[{id}]".to_owned()),
        ("{not json", "fluss[{id}]".to_owned()),
        (
            r#"{"bootstrap_servers":"127.0.0.1:9123","database":"fluss"}"#,
            "fluss[{id}]".to_owned(),
        ),
        (
            r#"{"database":"fluss","table":"orders"}"#,
            "fluss[{id} fluss.orders]".to_owned(),
        ),
        (
            r#"{"database":"fluss","table":"orders","bootstrap_servers":"nohost"}"#,
            "fluss[{id} fluss.orders]".to_owned(),
        ),
    ]
    .map(|(config, prefix)| (config.to_owned(), prefix))
    .into_iter()
    .chain(
        [
            r#""unknown_key":1"#,
            r#""payload_format":"xml""#,
            r#""batch_size":"many""#,
            r#""poll_interval":"soon""#,
            r#""starting_offset":-5"#,
            r#""metrics_address":"not an address""#,
            r#""instance_index":3,"instance_count":2"#,
            r#""filter":"id >""#,
        ]
        .map(|extra| {
            (
                format!("{{{table},{extra}}}"),
                "fluss[{id} fluss.orders]".to_owned(),
            )
        }),
    );
    for (config, prefix) in cases {
        let before = logs().len();
        let Err(fluss_source_runner::Error::OpenFailed { id, code }) = harness.open(&config, None)
        else {
            panic!("{config}: open must fail");
        };
        assert_ne!(code, 0, "{config}");
        let lines: Vec<String> = logs()
            .into_iter()
            .skip(before)
            .filter(|l| l.level == Level::Error && fluss_testkit::names_instance(&l.message, id))
            .map(|l| l.message)
            .collect();
        let refusal = Config::parse(&config).expect_err("the config tests refuse it");
        assert_eq!(
            lines,
            vec![format!(
                "{}: open failed: {refusal}",
                prefix.replace("{id}", &id.to_string())
            )],
            "{config}: one ERROR line, with the instance prefix"
        );
    }
}
