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

//! Every Fluss data type, written with fluss-rs and read back as JSON through the plugin:
//! each value must be exactly what PRODUCT.md's mapping says for what was written.
//! The expected JSON is spelled out here by hand from the values `fluss_testkit::all_types`
//! writes (row kind = id mod 4: extremes, other extremes, ordinary values, nulls).

use fluss_testkit::all_types::{
    TIMESTAMP_PRECISIONS, all_types_columns, all_types_row, create_all_types_table,
};
use fluss_testkit::{unique_table, write};
use serde_json::{Value, json};

use crate::fixture::{Answer, Stream, cluster, config, rt};

const MAX_38: &str = "99999999999999999999999999999999999999";

fn pick<T>(kind: i64, a: T, b: T, c: T) -> T {
    match kind {
        0 => a,
        1 => b,
        _ => c,
    }
}

/// The instant of a row kind with `precision` fractional digits (truncated).
fn instant(kind: i64, precision: usize) -> String {
    let (base, fraction) = pick(
        kind,
        ("1969-12-31T23:59:59", "123456789"),
        ("2262-04-11T23:47:16", "854775807"),
        ("2024-02-29T12:34:56", "789012345"),
    );
    if precision == 0 {
        base.to_owned()
    } else {
        format!("{base}.{}", &fraction[..precision])
    }
}

fn expected(name: &str, kind: i64, id: i64) -> Value {
    if name == "id" {
        return json!(id);
    }
    if kind == 3 {
        return Value::Null;
    }
    if let Some(p) = name.strip_prefix("c_ts_ltz_") {
        return json!(format!("{}Z", instant(kind, p.parse().unwrap())));
    }
    if let Some(p) = name.strip_prefix("c_ts_") {
        return json!(instant(kind, p.parse().unwrap()));
    }
    let max38_10 = format!("{}.{}", &MAX_38[..28], &MAX_38[28..]);
    match name {
        "c_boolean" => json!(kind == 1),
        "c_tinyint" => json!(pick(kind, i8::MIN as i64, i8::MAX as i64, 7)),
        "c_smallint" => json!(pick(kind, i16::MIN as i64, i16::MAX as i64, -300)),
        "c_int" => json!(pick(kind, i32::MIN as i64, i32::MAX as i64, id)),
        "c_bigint" => json!(pick(kind, i64::MIN, i64::MAX, id * 1_000_003)),
        "c_float" => pick(kind, json!("NaN"), json!("Infinity"), json!(1.25)),
        "c_double" => pick(kind, json!("-Infinity"), json!(f64::MAX), json!(-0.1)),
        "c_char" => json!(pick(kind, "ab cd", "é€ü😀x", "zzzzz")),
        "c_string" => json!(pick(
            kind,
            "",
            "quote \" backslash \\ tab \t newline \n nul \u{0} emoji 😀",
            "plain"
        )),
        "c_decimal_5_2" => json!(pick(kind, "-999.99", "999.99", "12.34")),
        "c_decimal_18_4" => json!(pick(kind, "-99999999999999.9999", "0.0001", "12345.6789")),
        "c_decimal_38_0" => json!(pick(
            kind,
            format!("-{MAX_38}"),
            MAX_38.to_owned(),
            "42".into()
        )),
        "c_decimal_38_10" => json!(pick(
            kind,
            max38_10.clone(),
            format!("-{max38_10}"),
            "-0.0000000005".into()
        )),
        "c_date" => json!(pick(kind, "1900-01-01", "9999-12-31", "2024-02-29")),
        "c_time_0" => json!(pick(kind, "00:00:00", "23:59:59", "12:34:56")),
        "c_time_3" => json!(pick(kind, "00:00:00.001", "23:59:59.999", "12:34:56.789")),
        "c_bytes" => json!(pick(kind, "", "AP8B/g==", "Ynl0ZXM=")),
        "c_binary" => json!(pick(kind, "AAAAAA==", "/////w==", "3q2+7w==")),
        "c_array_int" => pick(kind, json!([]), json!([1, null, i32::MAX]), json!([id])),
        "c_array_string" => pick(kind, json!([""]), json!([null, "ü"]), json!(["a", "b"])),
        "c_array_array_int" => pick(
            kind,
            json!([[1, 2], []]),
            json!([[1, 2], null]),
            json!([[1, 2], []]),
        ),
        "c_array_row" => {
            let second = if kind == 1 {
                Value::Null
            } else {
                json!({"seq": 2, "label": "close"})
            };
            json!([{"seq": 1, "label": "open"}, second])
        }
        "c_array_decimal" => json!([pick(kind, "-99999999.99", "0.01", "123.45"), null]),
        "c_array_ts_9" => json!([instant(kind, 9)]),
        "c_map_string_int" => pick(
            kind,
            json!({}),
            json!({"a": 1, "b": null}),
            json!({"k": id}),
        ),
        "c_map_int_string" => pick(
            kind,
            json!([{"key": i32::MIN, "value": "min"}]),
            json!([{"key": 1, "value": "one"}, {"key": 2, "value": null}]),
            json!([{"key": id, "value": "id"}]),
        ),
        "c_map_string_row" => json!({"r": {"seq": kind, "label": "v"}}),
        "c_map_string_array" => json!({"xs": [1, null]}),
        "c_row" => json!({"seq": id, "label": "row"}),
        "c_row_nested" => json!({
            "inner": {"x": pick(kind, i64::MIN, i64::MAX, id)},
            "tags": ["t1", null],
            "amount": pick(kind, format!("-{max38_10}"), max38_10.clone(), "0.0000000001".into()),
        }),
        other => panic!("no expectation for column {other}"),
    }
}

#[test]
fn every_type_round_trips_to_the_documented_json() {
    let path = unique_table("all_types");
    rt().block_on(async {
        let conn = cluster().connection().await;
        let admin = conn.get_admin().unwrap();
        create_all_types_table(&admin, &path, 1).await;
        write::append_rows(&conn, &path, (0..8).map(all_types_row)).await;
    });
    let mut s = Stream::open(&config(path.table(), json!({})), None).expect("open");
    s.read(8, Answer::AckAll);
    assert_eq!(s.acked.len(), 8);
    let columns = all_types_columns();
    assert!(columns.len() > 40, "the table has every type");
    assert_eq!(TIMESTAMP_PRECISIONS.len(), 7);
    for m in &s.acked {
        let id = m.payload["id"].as_i64().unwrap();
        let object = m.payload.as_object().unwrap();
        assert_eq!(object.len(), columns.len(), "row {id} has every column");
        // Key order is the table's column order.
        let text = String::from_utf8(m.raw.clone()).unwrap();
        let mut at = 0;
        for (name, _) in &columns {
            let key = format!("\"{name}\":");
            let found = text[at..]
                .find(&key)
                .unwrap_or_else(|| panic!("row {id}: {name} missing or out of order in {text}"));
            at += found + key.len();
        }
        for (name, _) in &columns {
            let want = expected(name, id.rem_euclid(4), id);
            assert_eq!(object[name], want, "row {id} column {name}");
        }
    }
}
