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

//! Each key: its default, accepted values and the exact message for a bad one.

use super::*;
use crate::config::options::{DecimalFormat, Header, TemporalFormat};
use serde_json::json;

fn parse(extra: Value) -> Result<Config, ConfigError> {
    let mut base =
        json!({"bootstrap_servers": "127.0.0.1:9123", "database": "fluss", "table": "orders"});
    if let (Value::Object(b), Value::Object(e)) = (&mut base, extra) {
        b.extend(e);
    }
    Config::parse(&base.to_string())
}

fn error_for(extra: Value) -> ConfigError {
    parse(extra).expect_err("config should be refused")
}

#[test]
fn defaults_match_the_product_contract() {
    let c = parse(json!({})).unwrap();
    assert_eq!(c.table_type, TableType::Auto);
    assert_eq!(c.starting_offset, StartingOffset::Full);
    assert!(c.ignored.is_empty());
    assert!(c.ignored_warnings().is_empty());
    assert_eq!(c.columns, None);
    assert_eq!(c.payload_format, PayloadFormat::Json);
    assert_eq!(c.payload_schema, PayloadSchema::Json);
    assert_eq!(c.headers, HeaderSet::ALL);
    assert_eq!(c.arrow_ipc_compression, IpcCompression::None);
    assert_eq!(c.changelog_format, ChangelogFormat::Debezium);
    assert_eq!(c.batch_size, 1000);
    assert_eq!(c.poll_interval, Duration::from_millis(500));
    assert_eq!(c.max_batch_bytes, 8_388_608);
    assert_eq!(c.partition_discovery_interval, Duration::from_secs(60));
    assert_eq!(c.on_offset_out_of_range, OutOfRangePolicy::Earliest);
    assert_eq!(c.json.temporal, TemporalFormat::Iso8601);
    assert_eq!(c.json.decimal, DecimalFormat::String);
    assert!(!c.include_metadata);
    assert_eq!(c.sasl, None);
    assert_eq!(c.connect_timeout, Duration::from_secs(30));
    assert!(!c.verbose_logging);
    assert_eq!(c.qualified_table(), "fluss.orders");
}

#[test]
fn null_config_says_to_add_the_section() {
    let e = Config::parse("null").unwrap_err();
    assert_eq!(e.key, "plugin_config");
    assert!(e.message.contains("no [plugin_config] section"), "{e}");
}

#[test]
fn empty_object_names_the_first_missing_key() {
    let e = Config::parse("{}").unwrap_err();
    assert_eq!(e.key, "bootstrap_servers");
    assert_eq!(
        e.to_string(),
        "invalid plugin_config: `bootstrap_servers` is required"
    );
}

#[test]
fn database_and_table_are_required() {
    let e = Config::parse(r#"{"bootstrap_servers":"h:1","table":"t"}"#).unwrap_err();
    assert_eq!(e.key, "database");
    let e = Config::parse(r#"{"bootstrap_servers":"h:1","database":"d"}"#).unwrap_err();
    assert_eq!(e.key, "table");
    let e = error_for(json!({"table": ""}));
    assert!(e.message.contains("must not be empty"), "{e}");
}

#[test]
fn the_named_table_is_read_like_parse_reads_it_even_from_a_refused_config() {
    let named = |extra: Value| {
        let mut base = json!({"database": "fluss", "table": "orders"});
        if let (Value::Object(b), Value::Object(e)) = (&mut base, extra) {
            b.extend(e);
        }
        named_table(&base.to_string())
    };
    assert_eq!(named(json!({})).as_deref(), Some("fluss.orders"));
    // Refused for another key, the table is still named.
    assert_eq!(
        named(json!({"batch_size": "many"})).as_deref(),
        Some("fluss.orders")
    );
    // Trimmed, and a number from an environment override is a name.
    assert_eq!(
        named(json!({"database": " db ", "table": 7})).as_deref(),
        Some("db.7")
    );
    assert_eq!(named(json!({"table": ""})), None);
    assert_eq!(named(json!({"database": null})), None);
    assert_eq!(named(json!({"table": ["t"]})), None);
    for text in ["null", "{}", "[]", "{not json", r#"{"database":"d"}"#] {
        assert_eq!(named_table(text), None, "{text}");
    }
}

#[test]
fn malformed_json_is_refused() {
    let e = Config::parse("{not json").unwrap_err();
    assert_eq!(e.key, "plugin_config");
    assert!(e.message.contains("not valid JSON"), "{e}");
}

#[test]
fn unknown_keys_are_refused_by_name() {
    let e = error_for(json!({"batchsize": 10}));
    assert_eq!(e.key, "plugin_config");
    assert!(e.message.contains("unknown field `batchsize`"), "{e}");
}

#[test]
fn bootstrap_servers_must_be_host_port_pairs() {
    let c = parse(json!({"bootstrap_servers": "a:1, b:2"})).unwrap();
    assert_eq!(c.bootstrap_servers, "a:1,b:2");
    for bad in [
        json!("localhost"),
        json!("h:port"),
        json!(":9123"),
        json!(5),
    ] {
        let e = error_for(json!({ "bootstrap_servers": bad }));
        assert_eq!(e.key, "bootstrap_servers", "{bad}");
        assert!(e.message.contains("host:port"), "{e}");
    }
}

#[test]
fn enums_accept_their_names_in_any_case_and_list_choices() {
    let c = parse(
        json!({"table_type": "PRIMARY_KEY", "payload_format": "arrow_ipc",
        "arrow_ipc_compression": "zstd", "changelog_format": "flat",
        "on_offset_out_of_range": "fail", "temporal_format": "epoch", "decimal_format": "number"}),
    )
    .unwrap();
    assert_eq!(c.table_type, TableType::PrimaryKey);
    assert_eq!(c.payload_format, PayloadFormat::ArrowIpc);
    assert_eq!(c.arrow_ipc_compression, IpcCompression::Zstd);
    assert_eq!(c.changelog_format, ChangelogFormat::Flat);
    assert_eq!(c.on_offset_out_of_range, OutOfRangePolicy::Fail);
    assert_eq!(c.json.temporal, TemporalFormat::Epoch);
    assert_eq!(c.json.decimal, DecimalFormat::Number);
    let e = error_for(json!({"payload_format": "avro"}));
    assert_eq!(
        e.to_string(),
        "invalid plugin_config: `payload_format` = \"avro\" is not valid; use one of \"json\", \"arrow_ipc\""
    );
    for key in [
        "table_type",
        "arrow_ipc_compression",
        "changelog_format",
        "on_offset_out_of_range",
        "temporal_format",
        "decimal_format",
    ] {
        let e = error_for(json!({ key: "bogus" }));
        assert_eq!(e.key, key);
        assert!(e.message.contains("use one of"), "{e}");
    }
}

#[test]
fn payload_schema_is_json_or_raw() {
    let c = parse(json!({"payload_schema": "RAW"})).unwrap();
    assert_eq!(c.payload_schema, PayloadSchema::Raw);
    let e = error_for(json!({"payload_schema": "avro"}));
    assert_eq!(
        e.to_string(),
        "invalid plugin_config: `payload_schema` = \"avro\" is not valid; use one of \"json\", \"raw\""
    );
}

#[test]
fn headers_are_all_none_or_a_list_of_names() {
    assert_eq!(
        parse(json!({"headers": "all"})).unwrap().headers,
        HeaderSet::ALL
    );
    assert_eq!(
        parse(json!({"headers": "None"})).unwrap().headers,
        HeaderSet::NONE
    );
    assert_eq!(
        parse(json!({"headers": []})).unwrap().headers,
        HeaderSet::NONE
    );
    let two = HeaderSet::of(&[Header::Offset, Header::Bucket]);
    assert_eq!(
        parse(json!({"headers": ["fluss_offset", "fluss_bucket"]}))
            .unwrap()
            .headers,
        two
    );
    assert_eq!(
        parse(json!({"headers": "fluss_offset, FLUSS_BUCKET"}))
            .unwrap()
            .headers,
        two,
        "a comma-separated string, as an environment override gives it"
    );
    assert_eq!(
        parse(json!({"headers": ["fluss_schema_id"]}))
            .unwrap()
            .headers,
        HeaderSet::of(&[Header::SchemaId])
    );
    let e = error_for(json!({"headers": ["fluss_offset", "offset"]}));
    assert_eq!(
        e.to_string(),
        "invalid plugin_config: `headers` names an unknown header \"offset\"; use \"all\", \"none\" or a list of header names (\"fluss_table\", \"fluss_bucket\", \"fluss_offset\", \"fluss_timestamp\", \"fluss_change_type\", \"fluss_partition\", \"fluss_row_count\", \"fluss_schema_id\", \"fluss_primary_key\")"
    );
    let e = error_for(json!({"headers": 5}));
    assert_eq!(e.key, "headers");
}

#[test]
fn integers_accept_numbers_and_numeric_strings() {
    let c = parse(json!({"batch_size": "250", "max_batch_bytes": 1_048_576})).unwrap();
    assert_eq!(c.batch_size, 250);
    assert_eq!(c.max_batch_bytes, 1_048_576);
    let c = parse(json!({"batch_size": "1_000"})).unwrap();
    assert_eq!(c.batch_size, 1000);
    for bad in [
        json!(0),
        json!(-1),
        json!(1.5),
        json!("ten"),
        json!(2_000_000),
    ] {
        let e = error_for(json!({ "batch_size": bad }));
        assert_eq!(e.key, "batch_size");
        assert!(e.message.contains("from 1 to 1000000"), "{e}");
    }
    let e = error_for(json!({"max_batch_bytes": 100}));
    assert!(e.message.contains("≥ 1024"), "{e}");
}

#[test]
fn durations_are_humantime() {
    let c = parse(json!({"poll_interval": "250ms", "connect_timeout": "2m",
        "partition_discovery_interval": "0s"}))
    .unwrap();
    assert_eq!(c.poll_interval, Duration::from_millis(250));
    assert_eq!(c.connect_timeout, Duration::from_secs(120));
    assert_eq!(c.partition_discovery_interval, Duration::ZERO);
    let e = error_for(json!({"poll_interval": "soon"}));
    assert_eq!(
        e.to_string(),
        "invalid plugin_config: `poll_interval` = \"soon\" is not valid; use a positive duration such as \"500ms\", \"30s\" or \"1m\""
    );
    let e = error_for(json!({"connect_timeout": "0s"}));
    assert_eq!(e.key, "connect_timeout");
    let e = error_for(json!({"partition_discovery_interval": [1]}));
    assert_eq!(e.key, "partition_discovery_interval");
}

#[test]
fn booleans_accept_text() {
    let c = parse(json!({"include_metadata": "TRUE", "verbose_logging": true})).unwrap();
    assert!(c.include_metadata);
    assert!(c.verbose_logging);
    let e = error_for(json!({"verbose_logging": "yes"}));
    assert_eq!(e.key, "verbose_logging");
    assert!(e.message.contains("true or false"));
}

#[test]
fn starting_offsets() {
    let cases = [
        (json!("full"), StartingOffset::Full),
        (json!("Full"), StartingOffset::Full),
        (json!("earliest"), StartingOffset::Earliest),
        (json!("LATEST"), StartingOffset::Latest),
        (json!(42), StartingOffset::Offset(42)),
        (json!("42"), StartingOffset::Offset(42)),
        (
            json!("timestamp:1764500000000"),
            StartingOffset::Timestamp(1_764_500_000_000),
        ),
        (
            json!("timestamp:2026-11-30T12:00:00Z"),
            StartingOffset::Timestamp(1_796_040_000_000),
        ),
        (
            json!("timestamp:2026-11-30T12:00:00.250Z"),
            StartingOffset::Timestamp(1_796_040_000_250),
        ),
    ];
    for (input, expected) in cases {
        let c = parse(json!({ "starting_offset": input })).unwrap();
        assert_eq!(c.starting_offset, expected, "{input}");
    }
    for bad in [json!("first"), json!(-5), json!("timestamp:yesterday")] {
        let e = error_for(json!({ "starting_offset": bad }));
        assert_eq!(e.key, "starting_offset", "{bad}");
        assert!(e.message.contains("\"earliest\""), "{e}");
        assert!(e.message.contains("\"full\""), "{e}");
    }
}

#[test]
fn snapshot_max_bucket_rows_is_a_positive_i32_that_only_gets_a_warning() {
    let c = parse(json!({"snapshot_max_bucket_rows": "5_000"})).unwrap();
    assert_eq!(c.ignored, ["snapshot_max_bucket_rows"]);
    assert_eq!(
        c.ignored_warnings(),
        [
            "`snapshot_max_bucket_rows` has no effect (snapshots are read from KV snapshot files a batch at a time, with no cap); remove it from [plugin_config]"
        ]
    );
    // Any accepted value is the same configuration, and so is null (an unset key).
    let mut other = parse(json!({"snapshot_max_bucket_rows": 1})).unwrap();
    assert_eq!(other, c);
    other = parse(json!({"snapshot_max_bucket_rows": null})).unwrap();
    assert!(other.ignored.is_empty());
    for bad in [json!(0), json!(-1), json!("many"), json!(3_000_000_000u64)] {
        let e = error_for(json!({ "snapshot_max_bucket_rows": bad }));
        assert_eq!(e.key, "snapshot_max_bucket_rows", "{bad}");
        assert!(
            e.message
                .contains("use a whole number from 1 to 2147483646"),
            "{e}"
        );
    }
}

#[test]
fn columns_accept_lists_and_comma_strings() {
    let c = parse(json!({"columns": ["id", "name"]})).unwrap();
    assert_eq!(c.columns, Some(vec!["id".into(), "name".into()]));
    let c = parse(json!({"columns": "id, name"})).unwrap();
    assert_eq!(c.columns, Some(vec!["id".into(), "name".into()]));
    for bad in [json!([]), json!([""]), json!({"a": 1})] {
        let e = error_for(json!({ "columns": bad }));
        assert_eq!(e.key, "columns", "{bad}");
    }
    let e = error_for(json!({"columns": ["id", "id"]}));
    assert!(e.message.contains("twice"), "{e}");
}

#[test]
fn sasl_needs_both_credentials_and_plain() {
    let c = parse(json!({"sasl_username": "alice", "sasl_password": "alice-secret"})).unwrap();
    let sasl = c.sasl.clone().unwrap();
    assert_eq!(sasl.mechanism, "PLAIN");
    assert_eq!(sasl.username, "alice");
    assert_eq!(sasl.password.expose(), "alice-secret");
    let e = error_for(json!({"sasl_username": "alice"}));
    assert_eq!(e.key, "sasl_password");
    let e = error_for(json!({"sasl_password": "x"}));
    assert_eq!(e.key, "sasl_username");
    let e = error_for(
        json!({"sasl_mechanism": "SCRAM-SHA-256", "sasl_username": "a", "sasl_password": "b"}),
    );
    assert_eq!(e.key, "sasl_mechanism");
    assert!(e.message.contains("only \"PLAIN\""));
}

#[test]
fn the_password_never_shows_in_debug_or_errors() {
    let c = parse(json!({"sasl_username": "alice", "sasl_password": "hunter2-secret"})).unwrap();
    let debug = format!("{c:?}");
    assert!(!debug.contains("hunter2"), "{debug}");
    assert!(debug.contains("***"));
    let e = error_for(json!({"sasl_password": ["hunter2-secret"], "sasl_username": "a"}));
    assert!(!e.to_string().contains("hunter2"), "{e}");
}

#[test]
fn instance_index_and_count_give_this_instance_its_share() {
    let c = parse(json!({})).unwrap();
    assert_eq!(c.assignment, Assignment::ALL);
    let c = parse(json!({"instance_index": 2, "instance_count": "3"})).unwrap();
    assert_eq!(c.assignment, Assignment::try_new(2, 3).unwrap());
    let e = error_for(json!({"instance_index": 3, "instance_count": 3}));
    assert_eq!(e.key, "instance_index");
    assert_eq!(
        e.to_string(),
        "invalid plugin_config: `instance_index` = 3 is not below `instance_count` = 3; set `instance_count` to the number of instances sharing the table on every one of them, and give each its own `instance_index` from 0 to 2"
    );
    let e = error_for(json!({"instance_index": 1}));
    assert_eq!(e.key, "instance_index", "an index without a count: {e}");
    let e = error_for(json!({"instance_count": 0}));
    assert_eq!(e.key, "instance_count");
    assert_eq!(
        e.to_string(),
        "invalid plugin_config: `instance_count` = 0 is not valid; use the number of connector instances sharing the table (1 or more)"
    );
    let e = error_for(json!({"instance_index": -1, "instance_count": 3}));
    assert_eq!(
        e.to_string(),
        "invalid plugin_config: `instance_index` = -1 is not valid; use a whole number from 0 to 65535"
    );
    let e = error_for(json!({"instance_count": "many"}));
    assert_eq!(
        e.to_string(),
        "invalid plugin_config: `instance_count` = \"many\" is not valid; use a whole number from 0 to 65536"
    );
}

#[test]
fn stopping_offset_is_latest_or_a_timestamp() {
    use crate::scope::stop::StoppingOffset;
    assert_eq!(parse(json!({})).unwrap().stopping_offset, None);
    let c = parse(json!({"stopping_offset": "LATEST"})).unwrap();
    assert_eq!(c.stopping_offset, Some(StoppingOffset::Latest));
    let c = parse(json!({"stopping_offset": "timestamp:1700000000000"})).unwrap();
    assert_eq!(
        c.stopping_offset,
        Some(StoppingOffset::Timestamp(1_700_000_000_000))
    );
    let c = parse(json!({"stopping_offset": "timestamp:2023-11-14T22:13:20Z"})).unwrap();
    assert_eq!(
        c.stopping_offset,
        Some(StoppingOffset::Timestamp(1_700_000_000_000))
    );
    for bad in [
        json!("earliest"),
        json!("timestamp:soon"),
        json!(12),
        json!([]),
    ] {
        let e = error_for(json!({ "stopping_offset": bad }));
        assert_eq!(e.key, "stopping_offset");
        assert_eq!(
            e.to_string(),
            format!(
                "invalid plugin_config: `stopping_offset` = {bad} is not valid; use \"latest\" (the offsets at first open) or \"timestamp:<RFC 3339 UTC time or epoch ms>\", or remove the key to read without end"
            )
        );
    }
}

#[test]
fn partitions_select_by_partition_key_values() {
    assert_eq!(parse(json!({})).unwrap().partitions, None);
    let c = parse(json!({"partitions": ["region=eu", "region=us/year=2024"]})).unwrap();
    assert_eq!(
        c.partitions.unwrap().to_string(),
        "region=eu, region=us/year=2024"
    );
    let c = parse(json!({"partitions": "region=eu, region=us"})).unwrap();
    assert_eq!(c.partitions.unwrap().to_string(), "region=eu, region=us");
    let e = error_for(json!({"partitions": ["eu"]}));
    assert_eq!(e.key, "partitions");
    assert_eq!(
        e.to_string(),
        "invalid plugin_config: `partitions` entry \"eu\" is not valid; give each entry as key=value pairs joined by '/', e.g. [\"region=eu\", \"region=us/year=2024\"]"
    );
    let e = error_for(json!({"partitions": []}));
    assert!(e.message.starts_with("`partitions` is empty"), "{e}");
    let e = error_for(json!({"partitions": 5}));
    assert_eq!(
        e.to_string(),
        "invalid plugin_config: `partitions` = 5 is not valid; use a list of key=value[/key=value…] entries, e.g. [\"region=eu\", \"region=us\"]"
    );
    let e = error_for(json!({"partitions": "region=eu/region=us"}));
    assert!(e.message.contains("names `region` twice"), "{e}");
}

#[test]
fn filter_is_parsed_and_a_syntax_error_points_at_its_column() {
    assert_eq!(parse(json!({})).unwrap().filter, None);
    let c = parse(json!({"filter": "amount > 100 AND region IN ('eu', 'us')"})).unwrap();
    let filter = c.filter.unwrap();
    assert_eq!(filter.text, "amount > 100 AND region IN ('eu', 'us')");
    assert!(matches!(filter.ast, crate::filter::Ast::And(..)));
    let e = error_for(json!({"filter": "region = 'eu' AND amount >="}));
    assert_eq!(e.key, "filter");
    assert_eq!(
        e.to_string(),
        "invalid plugin_config: `filter`: at column 28: expected a value after `>=`, found end of input"
    );
    let e = error_for(json!({"filter": 5}));
    assert_eq!(
        e.to_string(),
        "invalid plugin_config: `filter` = 5 is not valid; use a condition as a string, e.g. \"amount > 100 AND region IN ('eu', 'us')\""
    );
    let e = error_for(json!({"filter": "  "}));
    assert!(e.message.contains("the filter is empty"), "{e}");
}

#[test]
fn metrics_address_is_an_ip_and_port_and_off_by_default() {
    let c = parse(json!({})).unwrap();
    assert_eq!(c.metrics_address, None);
    assert_eq!(c.metrics_label(), "fluss.orders");
    let c = parse(json!({"metrics_address": " 127.0.0.1:9187 ", "metrics_connector": "orders"}))
        .unwrap();
    assert_eq!(c.metrics_address, Some("127.0.0.1:9187".parse().unwrap()));
    assert_eq!(c.metrics_label(), "orders");
    let c = parse(json!({"metrics_address": "[::1]:9187"})).unwrap();
    assert_eq!(c.metrics_address, Some("[::1]:9187".parse().unwrap()));
    for bad in [
        json!("localhost:9187"),
        json!("9187"),
        json!("1.2.3.4"),
        json!([1]),
    ] {
        let e = error_for(json!({ "metrics_address": bad }));
        assert_eq!(e.key, "metrics_address", "{bad}");
        assert!(e.message.contains("127.0.0.1:9187"), "{}", e.message);
    }
    let e = error_for(json!({"metrics_connector": ""}));
    assert_eq!(e.key, "metrics_connector");
}

#[test]
fn an_unknown_key_is_refused_with_every_accepted_key_in_declaration_order() {
    let e = error_for(json!({"batchsize": 10}));
    assert_eq!(
        e.to_string(),
        "invalid plugin_config: unknown field `batchsize`, expected one of `bootstrap_servers`, `database`, `table`, `table_type`, `starting_offset`, `columns`, `filter`, `payload_format`, `payload_schema`, `headers`, `arrow_ipc_compression`, `changelog_format`, `batch_size`, `poll_interval`, `max_batch_bytes`, `partition_discovery_interval`, `on_offset_out_of_range`, `temporal_format`, `decimal_format`, `include_metadata`, `sasl_mechanism`, `sasl_username`, `sasl_password`, `connect_timeout`, `verbose_logging`, `instance_index`, `instance_count`, `stopping_offset`, `partitions`, `snapshot_max_bucket_rows`, `metrics_address`, `metrics_connector`, `snapshot_dir`; see docs/configuration.md for the accepted keys"
    );
    assert_eq!(keys().len(), 33);
    assert_eq!(keys()[0], "bootstrap_servers");
    assert_eq!(keys()[32], "snapshot_dir");
}

#[test]
fn an_unknown_key_is_reported_before_any_value() {
    let e = error_for(json!({"aaa": 1, "batch_size": 0}));
    assert!(e.message.starts_with("unknown field `aaa`"), "{e}");
    let e = error_for(json!({"batch_size": 0, "zzz": 1}));
    assert!(e.message.starts_with("unknown field `zzz`"), "{e}");
}

#[test]
fn a_section_that_is_no_object_is_refused_in_serdes_words() {
    let refused = |json: Value| Config::parse(&json.to_string()).unwrap_err().to_string();
    assert_eq!(
        refused(json!(5)),
        "invalid plugin_config: invalid type: integer `5`, expected a [plugin_config] section; see docs/configuration.md for the accepted keys"
    );
    assert_eq!(
        refused(json!("x")),
        "invalid plugin_config: invalid type: string \"x\", expected a [plugin_config] section; see docs/configuration.md for the accepted keys"
    );
    assert_eq!(
        refused(json!(["h:1", "d", "t"])),
        "invalid plugin_config: invalid length 3, expected a [plugin_config] section with 33 elements; see docs/configuration.md for the accepted keys"
    );
    assert_eq!(
        refused(Value::Array(vec![Value::Null; 34])),
        "invalid plugin_config: invalid length 34, expected fewer elements in array; see docs/configuration.md for the accepted keys"
    );
    // An array of one value per key, in declaration order, is read as the object of them.
    let mut values = vec![Value::Null; keys().len()];
    values[..3].clone_from_slice(&[json!("127.0.0.1:9123"), json!("fluss"), json!("orders")]);
    let position = |key| keys().iter().position(|k| *k == key).unwrap();
    values[position("batch_size")] = json!("250");
    let c = Config::parse(&Value::Array(values.clone()).to_string()).unwrap();
    assert_eq!(c, parse(json!({"batch_size": 250})).unwrap());
    values[position("batch_size")] = json!(0);
    let e = Config::parse(&Value::Array(values).to_string()).unwrap_err();
    assert_eq!(e.key, "batch_size");
}

#[test]
fn null_is_an_unset_key() {
    let mut nulls = json!({});
    for key in keys() {
        nulls[*key] = Value::Null;
    }
    let e = Config::parse(&nulls.to_string()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid plugin_config: `bootstrap_servers` is required"
    );
    nulls["database"] = json!("fluss");
    nulls["table"] = json!("orders");
    nulls["bootstrap_servers"] = json!("127.0.0.1:9123");
    assert_eq!(Config::parse(&nulls.to_string()), parse(json!({})));
}

#[test]
fn of_several_faults_required_keys_come_first_then_declaration_order_then_pairs() {
    // `table_type` is declared before `batch_size` (the object's own order is alphabetical).
    let e = error_for(json!({"batch_size": 0, "table_type": "x"}));
    assert_eq!(e.key, "table_type");
    // Required keys, missing or refused, before any other key.
    let e = Config::parse(r#"{"batch_size":0,"database":"d","table":"t"}"#).unwrap_err();
    assert_eq!(e.key, "bootstrap_servers");
    let e = Config::parse(r#"{"batch_size":0,"bootstrap_servers":"h:1","table":""}"#).unwrap_err();
    assert_eq!(e.key, "database");
    let e = error_for(json!({"batch_size": 0, "table": ""}));
    assert_eq!(e.key, "table");
    // The checks between keys come after every key.
    let e = error_for(json!({"sasl_password": "p", "snapshot_dir": ""}));
    assert_eq!(e.key, "snapshot_dir");
    let e = error_for(json!({"sasl_password": "p", "instance_count": 0}));
    assert_eq!(e.key, "sasl_username");
}
