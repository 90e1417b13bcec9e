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

//! A table with every Fluss data type, including the precisions and nestings
//! encoders get wrong most easily, and deterministic rows for it.
//!
//! Row `i` depends only on `i`: `i % 4 == 0` holds extremes (type minimums,
//! NaN, 38-digit decimals, pre-1970 instants with nanoseconds), `1` the other
//! extremes (maximums, infinities), `2` ordinary values, and `3` NULL in
//! every column except `id` (nested types then also appear with null
//! elements in rows 0-2). Compare what a reader produced with
//! [`all_types_row`]`(id)`.

use fluss::metadata::{DataType, DataTypes, Schema, TableInfo, TablePath};
use fluss::row::{
    Date, Datum, Decimal, FlussArray, FlussArrayWriter, FlussMap, FlussMapWriter, GenericRow, Time,
    TimestampLtz, TimestampNtz,
};

use fluss::client::FlussAdmin;

/// Timestamp precisions covered for TIMESTAMP and TIMESTAMP_LTZ: seconds,
/// each Arrow unit boundary (3, 6, 9) and a value inside each unit (1, 4, 7).
pub const TIMESTAMP_PRECISIONS: [u32; 7] = [0, 1, 3, 4, 6, 7, 9];

/// `ROW<seq INT, label STRING>`, used inside arrays and maps.
pub fn seq_label_type() -> DataType {
    DataTypes::row(vec![
        DataTypes::field("seq", DataTypes::int()),
        DataTypes::field("label", DataTypes::string()),
    ])
}

/// Every column of the table, in order: `id BIGINT` first.
pub fn all_types_columns() -> Vec<(String, DataType)> {
    let mut columns: Vec<(String, DataType)> = vec![
        ("id".into(), DataTypes::bigint()),
        ("c_boolean".into(), DataTypes::boolean()),
        ("c_tinyint".into(), DataTypes::tinyint()),
        ("c_smallint".into(), DataTypes::smallint()),
        ("c_int".into(), DataTypes::int()),
        ("c_bigint".into(), DataTypes::bigint()),
        ("c_float".into(), DataTypes::float()),
        ("c_double".into(), DataTypes::double()),
        ("c_char".into(), DataTypes::char(5)),
        ("c_string".into(), DataTypes::string()),
        ("c_decimal_5_2".into(), DataTypes::decimal(5, 2)),
        ("c_decimal_18_4".into(), DataTypes::decimal(18, 4)),
        ("c_decimal_38_0".into(), DataTypes::decimal(38, 0)),
        ("c_decimal_38_10".into(), DataTypes::decimal(38, 10)),
        ("c_date".into(), DataTypes::date()),
        ("c_time_0".into(), DataTypes::time_with_precision(0)),
        ("c_time_3".into(), DataTypes::time_with_precision(3)),
    ];
    for p in TIMESTAMP_PRECISIONS {
        columns.push((format!("c_ts_{p}"), DataTypes::timestamp_with_precision(p)));
    }
    for p in TIMESTAMP_PRECISIONS {
        columns.push((
            format!("c_ts_ltz_{p}"),
            DataTypes::timestamp_ltz_with_precision(p),
        ));
    }
    columns.extend([
        ("c_bytes".into(), DataTypes::bytes()),
        ("c_binary".into(), DataTypes::binary(4)),
        ("c_array_int".into(), DataTypes::array(DataTypes::int())),
        (
            "c_array_string".into(),
            DataTypes::array(DataTypes::string()),
        ),
        (
            "c_array_array_int".into(),
            DataTypes::array(DataTypes::array(DataTypes::int())),
        ),
        ("c_array_row".into(), DataTypes::array(seq_label_type())),
        (
            "c_array_decimal".into(),
            DataTypes::array(DataTypes::decimal(10, 2)),
        ),
        (
            "c_array_ts_9".into(),
            DataTypes::array(DataTypes::timestamp_with_precision(9)),
        ),
        (
            "c_map_string_int".into(),
            DataTypes::map(DataTypes::string(), DataTypes::int()),
        ),
        (
            "c_map_int_string".into(),
            DataTypes::map(DataTypes::int(), DataTypes::string()),
        ),
        (
            "c_map_string_row".into(),
            DataTypes::map(DataTypes::string(), seq_label_type()),
        ),
        (
            "c_map_string_array".into(),
            DataTypes::map(DataTypes::string(), DataTypes::array(DataTypes::int())),
        ),
        ("c_row".into(), seq_label_type()),
        (
            "c_row_nested".into(),
            DataTypes::row(vec![
                DataTypes::field(
                    "inner",
                    DataTypes::row(vec![DataTypes::field("x", DataTypes::bigint())]),
                ),
                DataTypes::field("tags", DataTypes::array(DataTypes::string())),
                DataTypes::field("amount", DataTypes::decimal(38, 10)),
            ]),
        ),
    ]);
    columns
}

/// The schema of [`all_types_columns`] (no primary key).
pub fn all_types_schema() -> Schema {
    all_types_columns()
        .into_iter()
        .fold(Schema::builder(), |b, (name, data_type)| {
            b.column(name, data_type)
        })
        .build()
        .expect("all types schema")
}

/// Creates a log table with [`all_types_schema`] and `buckets` buckets.
pub async fn create_all_types_table(
    admin: &FlussAdmin,
    path: &TablePath,
    buckets: i32,
) -> TableInfo {
    crate::tables::create_log_table(admin, path, all_types_schema(), buckets).await
}

/// Row `id` of the every-type table (see the module docs for the pattern).
pub fn all_types_row(id: i64) -> GenericRow<'static> {
    let columns = all_types_columns();
    let mut row = GenericRow::new(columns.len());
    for (pos, (name, _)) in columns.iter().enumerate() {
        let value = if pos == 0 {
            Datum::Int64(id)
        } else if id.rem_euclid(4) == 3 {
            Datum::Null
        } else {
            value(name, id.rem_euclid(4), id)
        };
        row.set_field(pos, value);
    }
    row
}

/// The value of column `name` in a row of kind `kind` (0, 1 or 2).
fn value(name: &str, kind: i64, id: i64) -> Datum<'static> {
    if let Some(p) = name.strip_prefix("c_ts_ltz_") {
        let (ms, nanos) = instant(kind, p.parse().expect("precision"));
        return Datum::TimestampLtz(TimestampLtz::from_millis_nanos(ms, nanos).expect("ltz"));
    }
    if let Some(p) = name.strip_prefix("c_ts_") {
        let (ms, nanos) = instant(kind, p.parse().expect("precision"));
        return Datum::TimestampNtz(TimestampNtz::from_millis_nanos(ms, nanos).expect("ntz"));
    }
    match name {
        "c_boolean" => Datum::Bool(kind == 1),
        "c_tinyint" => Datum::from(pick(kind, i8::MIN, i8::MAX, 7)),
        "c_smallint" => Datum::from(pick(kind, i16::MIN, i16::MAX, -300)),
        "c_int" => Datum::from(pick(kind, i32::MIN, i32::MAX, id as i32)),
        "c_bigint" => Datum::from(pick(kind, i64::MIN, i64::MAX, id * 1_000_003)),
        "c_float" => Datum::from(pick(kind, f32::NAN, f32::INFINITY, 1.25)),
        "c_double" => Datum::from(pick(kind, f64::NEG_INFINITY, f64::MAX, -0.1)),
        "c_char" => Datum::from(pick(kind, "ab cd", "é€ü😀x", "zzzzz").to_string()),
        // Quote, backslash, control and non-BMP characters for JSON escaping.
        "c_string" => Datum::from(
            pick(
                kind,
                "",
                "quote \" backslash \\ tab \t newline \n nul \u{0} emoji 😀",
                "plain",
            )
            .to_string(),
        ),
        "c_decimal_5_2" => decimal(pick(kind, -99_999, 99_999, 1_234), 5, 2),
        "c_decimal_18_4" => decimal(pick(kind, -999_999_999_999_999_999, 1, 123_456_789), 18, 4),
        "c_decimal_38_0" => decimal(pick(kind, -MAX_38, MAX_38, 42), 38, 0),
        "c_decimal_38_10" => decimal(pick(kind, MAX_38, -MAX_38, -5), 38, 10),
        // 1900-01-01, 9999-12-31, 2024-02-29.
        "c_date" => Datum::Date(Date::new(pick(kind, -25_567, 2_932_896, 19_782))),
        "c_time_0" => Datum::Time(Time::new(pick(kind, 0, 86_399_000, 45_296_000))),
        "c_time_3" => Datum::Time(Time::new(pick(kind, 1, 86_399_999, 45_296_789))),
        "c_bytes" => Datum::from(pick(
            kind,
            vec![],
            vec![0u8, 255, 1, 254],
            b"bytes".to_vec(),
        )),
        "c_binary" => Datum::from(pick(
            kind,
            vec![0u8; 4],
            vec![255u8; 4],
            vec![0xde, 0xad, 0xbe, 0xef],
        )),
        "c_array_int" => Datum::Array(int_array(&pick(
            kind,
            vec![],
            vec![Some(1), None, Some(i32::MAX)],
            vec![Some(id as i32)],
        ))),
        "c_array_string" => Datum::Array(string_array(&pick(
            kind,
            vec![Some("")],
            vec![None, Some("ü")],
            vec![Some("a"), Some("b")],
        ))),
        "c_array_array_int" => {
            let mut w = FlussArrayWriter::new(2, &DataTypes::array(DataTypes::int()));
            w.write_array(0, &int_array(&[Some(1), Some(2)]));
            if kind == 1 {
                w.set_null_at(1);
            } else {
                w.write_array(1, &int_array(&[]));
            }
            Datum::Array(w.complete().expect("array of arrays"))
        }
        "c_array_row" => {
            let mut w = FlussArrayWriter::new(2, &seq_label_type());
            w.write_row(0, &seq_label(1, "open")).expect("row element");
            if kind == 1 {
                w.set_null_at(1);
            } else {
                w.write_row(1, &seq_label(2, "close")).expect("row element");
            }
            Datum::Array(w.complete().expect("array of rows"))
        }
        "c_array_decimal" => {
            let mut w = FlussArrayWriter::new(2, &DataTypes::decimal(10, 2));
            let d = Decimal::from_unscaled_long(pick(kind, -9_999_999_999, 1, 12_345), 10, 2)
                .expect("decimal");
            w.write_decimal(0, &d, 10);
            w.set_null_at(1);
            Datum::Array(w.complete().expect("array of decimals"))
        }
        "c_array_ts_9" => {
            let mut w = FlussArrayWriter::new(1, &DataTypes::timestamp_with_precision(9));
            let (ms, nanos) = instant(kind, 9);
            w.write_timestamp_ntz(
                0,
                &TimestampNtz::from_millis_nanos(ms, nanos).expect("ts"),
                9,
            );
            Datum::Array(w.complete().expect("array of timestamps"))
        }
        "c_map_string_int" => Datum::Map(map(
            &DataTypes::string(),
            &DataTypes::int(),
            pick(
                kind,
                vec![],
                vec![
                    (Datum::from("a"), Datum::from(1i32)),
                    (Datum::from("b"), Datum::Null),
                ],
                vec![(Datum::from("k"), Datum::from(id as i32))],
            ),
        )),
        "c_map_int_string" => Datum::Map(map(
            &DataTypes::int(),
            &DataTypes::string(),
            pick(
                kind,
                vec![(Datum::from(i32::MIN), Datum::from("min"))],
                vec![
                    (Datum::from(1i32), Datum::from("one")),
                    (Datum::from(2i32), Datum::Null),
                ],
                vec![(Datum::from(id as i32), Datum::from("id"))],
            ),
        )),
        "c_map_string_row" => Datum::Map(map(
            &DataTypes::string(),
            &seq_label_type(),
            vec![(
                Datum::from("r"),
                Datum::Row(Box::new(seq_label(kind as i32, "v"))),
            )],
        )),
        "c_map_string_array" => Datum::Map(map(
            &DataTypes::string(),
            &DataTypes::array(DataTypes::int()),
            vec![(Datum::from("xs"), Datum::Array(int_array(&[Some(1), None])))],
        )),
        "c_row" => Datum::Row(Box::new(seq_label(id as i32, "row"))),
        "c_row_nested" => {
            let mut inner = GenericRow::new(1);
            inner.set_field(0, pick(kind, i64::MIN, i64::MAX, id));
            let mut outer = GenericRow::new(3);
            outer.set_field(0, Datum::Row(Box::new(inner)));
            outer.set_field(1, string_array(&[Some("t1"), None]));
            outer.set_field(2, decimal(pick(kind, -MAX_38, MAX_38, 1), 38, 10));
            Datum::Row(Box::new(outer))
        }
        other => panic!("all_types_row: no value for column {other}"),
    }
}

/// `a`, `b` or `c` for row kind 0, 1 or 2.
fn pick<T>(kind: i64, a: T, b: T, c: T) -> T {
    match kind {
        0 => a,
        1 => b,
        _ => c,
    }
}

/// The largest 38-digit unscaled decimal, 10^38 - 1.
const MAX_38: i128 = 99_999_999_999_999_999_999_999_999_999_999_999_999;

fn decimal(unscaled: i128, precision: u32, scale: u32) -> Datum<'static> {
    Datum::Decimal(
        Decimal::from_unscaled_bytes(&unscaled.to_be_bytes(), precision, scale)
            .unwrap_or_else(|e| panic!("decimal({precision},{scale}) {unscaled}: {e}")),
    )
}

/// An instant per row kind, truncated to `precision` fractional digits so
/// that what is written is exactly what a reader can get back:
/// kind 0 is 1969-12-31T23:59:59.123456789 (negative epoch millis with
/// nanos), kind 1 2262-04-11T23:47:16.854775807 (the nanosecond i64 limit),
/// kind 2 2024-02-29T12:34:56.789012345.
fn instant(kind: i64, precision: u32) -> (i64, i32) {
    let nanos: i128 = match kind {
        0 => -876_543_211,
        1 => i64::MAX as i128,
        _ => 1_709_210_096_789_012_345,
    };
    let unit = 10i128.pow(9 - precision);
    let truncated = nanos.div_euclid(unit) * unit;
    let ms = truncated.div_euclid(1_000_000) as i64;
    let nano_of_ms = truncated.rem_euclid(1_000_000) as i32;
    (ms, nano_of_ms)
}

fn seq_label(seq: i32, label: &str) -> GenericRow<'static> {
    let mut row = GenericRow::new(2);
    row.set_field(0, seq);
    row.set_field(1, label.to_string());
    row
}

fn int_array(values: &[Option<i32>]) -> FlussArray {
    let mut w = FlussArrayWriter::new(values.len(), &DataTypes::int());
    for (i, v) in values.iter().enumerate() {
        match v {
            Some(v) => w.write_int(i, *v),
            None => w.set_null_at(i),
        }
    }
    w.complete().expect("int array")
}

fn string_array(values: &[Option<&str>]) -> FlussArray {
    let mut w = FlussArrayWriter::new(values.len(), &DataTypes::string());
    for (i, v) in values.iter().enumerate() {
        match v {
            Some(v) => w.write_string(i, v),
            None => w.set_null_at(i),
        }
    }
    w.complete().expect("string array")
}

fn map(key: &DataType, value: &DataType, entries: Vec<(Datum<'_>, Datum<'_>)>) -> FlussMap {
    let mut w = FlussMapWriter::new(entries.len(), key, value);
    for (k, v) in entries {
        w.write_entry(k, v).expect("map entry");
    }
    w.complete().expect("map")
}

#[cfg(test)]
mod tests {
    use super::*;
    use fluss::row::InternalRow;

    #[test]
    fn every_column_has_a_value_for_every_kind() {
        let width = all_types_columns().len();
        for id in 0..8 {
            assert_eq!(all_types_row(id).get_field_count(), width);
        }
    }

    #[test]
    fn instants_are_truncated_to_their_precision() {
        assert_eq!(instant(0, 9), (-877, 456_789));
        assert_eq!(instant(0, 3), (-877, 0));
        assert_eq!(instant(0, 0), (-1_000, 0));
        assert_eq!(instant(2, 6), (1_709_210_096_789, 12_000));
    }

    #[test]
    fn every_fluss_type_appears() {
        let columns = all_types_columns();
        let has = |f: &dyn Fn(&DataType) -> bool| columns.iter().any(|(_, t)| f(t));
        assert!(has(&|t| matches!(t, DataType::Boolean(_))));
        assert!(has(&|t| matches!(t, DataType::TinyInt(_))));
        assert!(has(&|t| matches!(t, DataType::SmallInt(_))));
        assert!(has(&|t| matches!(t, DataType::Int(_))));
        assert!(has(&|t| matches!(t, DataType::BigInt(_))));
        assert!(has(&|t| matches!(t, DataType::Float(_))));
        assert!(has(&|t| matches!(t, DataType::Double(_))));
        assert!(has(&|t| matches!(t, DataType::Char(_))));
        assert!(has(&|t| matches!(t, DataType::String(_))));
        assert!(has(&|t| matches!(t, DataType::Decimal(_))));
        assert!(has(&|t| matches!(t, DataType::Date(_))));
        assert!(has(&|t| matches!(t, DataType::Time(_))));
        assert!(has(&|t| matches!(t, DataType::Timestamp(_))));
        assert!(has(&|t| matches!(t, DataType::TimestampLTz(_))));
        assert!(has(&|t| matches!(t, DataType::Bytes(_))));
        assert!(has(&|t| matches!(t, DataType::Binary(_))));
        assert!(has(&|t| matches!(t, DataType::Array(_))));
        assert!(has(&|t| matches!(t, DataType::Map(_))));
        assert!(has(&|t| matches!(t, DataType::Row(_))));
    }
}
