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

//! The JSON row encoder against a slow reference on random batches of every supported type.
//!
//! The encoder is hand-written for speed (8-byte-at-a-time escape scan, stack-block digits,
//! constant-divisor calendar arithmetic, decimal point placement in text). The reference
//! below reads the same Arrow arrays through arrow's plain accessors and follows the
//! docs/messages.md's "Type mapping (JSON)" table with deliberately different means: serde_json for
//! string escaping, i128 division for decimals, a year-by-year walk through the
//! 400-year cycle for dates, the base64 crate for bytes. Float text is ryu's, as in the
//! encoder (serde_json writes `1e+16` where ryu writes `1e16`; both are JSON): the contract
//! is the special values as strings and text that parses back to the same bits, which the
//! reference asserts for every value.
//!
//! Every row, under each `temporal_format` x `decimal_format`, must be JSON, parse to the
//! reference's value (a readable diff), and equal the reference's text byte for byte (key
//! order is the column order, decimals are the exact digits). Handed over as messages, each
//! row is one message with the same object (plus `_fluss` when asked for).
//!
//! Cases per property: `PROPTEST_CASES`, default 1,024 (3-7 s in a debug build on the
//! shared 2-core box).
//!
//! One file because its reference encoder (the calendar, clock, decimal and
//! float texts that `expected` builds) exists only to be compared with the
//! plugin's in the properties at the end.

mod arrow_cases;
mod property;

use arrow_array::Array;
use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_schema::{DataType as ArrowType, TimeUnit};
use base64::Engine as _;
use fluss::metadata::{DataField, DataType, DataTypes};
use fluss::record::ChangeType;
use iggy_connector_fluss_source::config::options::{DecimalFormat, JsonOptions, TemporalFormat};
use iggy_connector_fluss_source::encode::Encoder;
use iggy_connector_fluss_source::encode::batch::Batch;
use iggy_connector_fluss_source::encode::rows::RowMessages;
use iggy_connector_fluss_source::json::RowEncoder;
use iggy_connector_fluss_source::schemas::Schemas;
use proptest::prelude::*;
use serde_json::Value;

use arrow_cases::{Case, case, config};

/// Every combination of the two options.
const OPTIONS: [JsonOptions; 4] = [
    JsonOptions {
        temporal: TemporalFormat::Iso8601,
        decimal: DecimalFormat::String,
    },
    JsonOptions {
        temporal: TemporalFormat::Iso8601,
        decimal: DecimalFormat::Number,
    },
    JsonOptions {
        temporal: TemporalFormat::Epoch,
        decimal: DecimalFormat::String,
    },
    JsonOptions {
        temporal: TemporalFormat::Epoch,
        decimal: DecimalFormat::Number,
    },
];

/// The reference's JSON: objects keep their key order and numbers keep their exact text.
#[derive(Debug)]
enum Json {
    Null,
    Bool(bool),
    Number(String),
    Text(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    fn number(n: impl std::fmt::Display) -> Self {
        Json::Number(n.to_string())
    }

    fn write(&self, out: &mut String) {
        let quoted = |s: &str| serde_json::to_string(s).expect("strings serialise");
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Number(n) => out.push_str(n),
            Json::Text(s) => out.push_str(&quoted(s)),
            Json::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    item.write(out);
                }
                out.push(']');
            }
            Json::Object(fields) => {
                out.push('{');
                for (i, (key, value)) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&quoted(key));
                    out.push(':');
                    value.write(out);
                }
                out.push('}');
            }
        }
    }

    fn text(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    /// As serde_json sees it: keys sorted, a repeated key keeps its last value, numbers as
    /// serde_json parses their text.
    fn to_value(&self) -> Value {
        match self {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(*b),
            Json::Number(n) => serde_json::from_str(n).expect("reference numbers are JSON"),
            Json::Text(s) => Value::String(s.clone()),
            Json::Array(items) => Value::Array(items.iter().map(Json::to_value).collect()),
            Json::Object(fields) => Value::Object(
                fields
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_value()))
                    .collect(),
            ),
        }
    }
}

fn is_leap(year: i64) -> bool {
    year.rem_euclid(4) == 0 && (year.rem_euclid(100) != 0 || year.rem_euclid(400) == 0)
}

/// (year, month, day) of a day count from 1970-01-01, proleptic Gregorian: whole 400-year
/// cycles of 146,097 days, then a walk year by year and month by month.
fn civil(days: i64) -> (i64, i64, i64) {
    // 0000-01-01 is 719,528 days before 1970-01-01.
    let from_year_0 = days + 719_528;
    let mut year = from_year_0.div_euclid(146_097) * 400;
    let mut rest = from_year_0.rem_euclid(146_097);
    loop {
        let len = if is_leap(year) { 366 } else { 365 };
        if rest < len {
            break;
        }
        rest -= len;
        year += 1;
    }
    let mut month = 1;
    loop {
        let len = match month {
            2 if is_leap(year) => 29,
            2 => 28,
            4 | 6 | 9 | 11 => 30,
            _ => 31,
        };
        if rest < len {
            break;
        }
        rest -= len;
        month += 1;
    }
    (year, month, rest + 1)
}

/// `java.time`'s year text: four digits, `+` above 9999, `-` and four digits before year 0.
fn year_text(year: i64) -> String {
    if year > 9_999 {
        format!("+{year}")
    } else if year >= 0 {
        format!("{year:04}")
    } else {
        format!("-{:04}", -year)
    }
}

fn date_text(days: i64) -> String {
    let (y, m, d) = civil(days);
    format!("{}-{m:02}-{d:02}", year_text(y))
}

/// `HH:MM:SS` plus the first `precision` digits of the nanoseconds.
fn clock_text(second_of_day: i64, nanos: i64, precision: u32) -> String {
    let mut text = format!(
        "{:02}:{:02}:{:02}",
        second_of_day / 3_600,
        second_of_day / 60 % 60,
        second_of_day % 60
    );
    if precision > 0 {
        text.push('.');
        text.push_str(&format!("{nanos:09}")[..precision as usize]);
    }
    text
}

/// Exact decimal text of `unscaled` x 10^-scale by integer division.
fn decimal_text(unscaled: i128, scale: u32) -> String {
    let sign = if unscaled < 0 { "-" } else { "" };
    let abs = unscaled.unsigned_abs();
    if scale == 0 {
        return format!("{sign}{abs}");
    }
    let unit = 10u128.pow(scale);
    let width = scale as usize;
    format!("{sign}{}.{:0width$}", abs / unit, abs % unit)
}

/// The stored integer of a TIME or TIMESTAMP array and its units per second.
fn temporal(array: &dyn Array, row: usize) -> (i64, i64) {
    match array.data_type() {
        ArrowType::Time32(TimeUnit::Second) => (
            array.as_primitive::<Time32SecondType>().value(row).into(),
            1,
        ),
        ArrowType::Time32(_) => (
            array
                .as_primitive::<Time32MillisecondType>()
                .value(row)
                .into(),
            1_000,
        ),
        ArrowType::Time64(TimeUnit::Microsecond) => (
            array.as_primitive::<Time64MicrosecondType>().value(row),
            1_000_000,
        ),
        ArrowType::Time64(_) => (
            array.as_primitive::<Time64NanosecondType>().value(row),
            1_000_000_000,
        ),
        ArrowType::Timestamp(TimeUnit::Second, _) => {
            (array.as_primitive::<TimestampSecondType>().value(row), 1)
        }
        ArrowType::Timestamp(TimeUnit::Millisecond, _) => (
            array.as_primitive::<TimestampMillisecondType>().value(row),
            1_000,
        ),
        ArrowType::Timestamp(TimeUnit::Microsecond, _) => (
            array.as_primitive::<TimestampMicrosecondType>().value(row),
            1_000_000,
        ),
        ArrowType::Timestamp(TimeUnit::Nanosecond, _) => (
            array.as_primitive::<TimestampNanosecondType>().value(row),
            1_000_000_000,
        ),
        other => panic!("not a temporal array: {other}"),
    }
}

/// `v` units (of `ups` per second) in units of `per_second`, floored.
fn rescale(v: i64, ups: i64, per_second: i64) -> i128 {
    (i128::from(v) * i128::from(per_second)).div_euclid(i128::from(ups))
}

fn timestamp(array: &dyn Array, row: usize, precision: u32, utc: bool, o: JsonOptions) -> Json {
    let (v, ups) = temporal(array, row);
    if o.temporal == TemporalFormat::Epoch {
        return Json::number(rescale(v, ups, 1_000_000));
    }
    let seconds = v.div_euclid(ups);
    let nanos = v.rem_euclid(ups) * (1_000_000_000 / ups);
    Json::Text(format!(
        "{}T{}{}",
        date_text(seconds.div_euclid(86_400)),
        clock_text(seconds.rem_euclid(86_400), nanos, precision),
        if utc { "Z" } else { "" }
    ))
}

fn float(v: f64, text: String) -> Json {
    if v.is_nan() {
        Json::Text("NaN".into())
    } else if v == f64::INFINITY {
        Json::Text("Infinity".into())
    } else if v == f64::NEG_INFINITY {
        Json::Text("-Infinity".into())
    } else {
        Json::Number(text)
    }
}

/// The mapping (docs/messages.md) of the value at `row` of `array`, of Fluss type `data_type`.
fn expected(data_type: &DataType, array: &dyn Array, row: usize, o: JsonOptions) -> Json {
    if array.is_null(row) {
        return Json::Null;
    }
    let base64 = |bytes: &[u8]| Json::Text(base64::engine::general_purpose::STANDARD.encode(bytes));
    match data_type {
        DataType::Boolean(_) => Json::Bool(array.as_boolean().value(row)),
        DataType::TinyInt(_) => Json::number(array.as_primitive::<Int8Type>().value(row)),
        DataType::SmallInt(_) => Json::number(array.as_primitive::<Int16Type>().value(row)),
        DataType::Int(_) => Json::number(array.as_primitive::<Int32Type>().value(row)),
        DataType::BigInt(_) => Json::number(array.as_primitive::<Int64Type>().value(row)),
        DataType::Float(_) => {
            let v = array.as_primitive::<Float32Type>().value(row);
            let text = ryu::Buffer::new().format(v).to_owned();
            assert!(!v.is_finite() || text.parse::<f32>().map(f32::to_bits) == Ok(v.to_bits()));
            float(v.into(), text)
        }
        DataType::Double(_) => {
            let v = array.as_primitive::<Float64Type>().value(row);
            let text = ryu::Buffer::new().format(v).to_owned();
            assert!(!v.is_finite() || text.parse::<f64>().map(f64::to_bits) == Ok(v.to_bits()));
            float(v, text)
        }
        DataType::Char(_) | DataType::String(_) => {
            Json::Text(array.as_string::<i32>().value(row).to_owned())
        }
        DataType::Decimal(d) => {
            let text = decimal_text(array.as_primitive::<Decimal128Type>().value(row), d.scale());
            match o.decimal {
                DecimalFormat::String => Json::Text(text),
                DecimalFormat::Number => Json::Number(text),
            }
        }
        DataType::Date(_) => {
            let days = array.as_primitive::<Date32Type>().value(row).into();
            match o.temporal {
                TemporalFormat::Epoch => Json::number(days),
                TemporalFormat::Iso8601 => Json::Text(date_text(days)),
            }
        }
        DataType::Time(t) => {
            let (v, ups) = temporal(array, row);
            match o.temporal {
                TemporalFormat::Epoch => Json::number(rescale(v, ups, 1_000)),
                TemporalFormat::Iso8601 => Json::Text(clock_text(
                    v / ups,
                    v % ups * (1_000_000_000 / ups),
                    t.precision(),
                )),
            }
        }
        DataType::Timestamp(t) => timestamp(array, row, t.precision(), false, o),
        DataType::TimestampLTz(t) => timestamp(array, row, t.precision(), true, o),
        DataType::Bytes(_) => base64(array.as_binary::<i32>().value(row)),
        DataType::Binary(_) => base64(array.as_fixed_size_binary().value(row)),
        DataType::Array(a) => {
            let items = array.as_list::<i32>().value(row);
            Json::Array(
                (0..items.len())
                    .map(|i| expected(a.get_element_type(), items.as_ref(), i, o))
                    .collect(),
            )
        }
        DataType::Map(m) => {
            let entries = array.as_map().value(row);
            let (keys, values) = (entries.column(0), entries.column(1));
            let value = |i| expected(m.value_type(), values.as_ref(), i, o);
            match m.key_type() {
                DataType::String(_) | DataType::Char(_) => Json::Object(
                    (0..entries.len())
                        .map(|i| (keys.as_string::<i32>().value(i).to_owned(), value(i)))
                        .collect(),
                ),
                key_type => Json::Array(
                    (0..entries.len())
                        .map(|i| {
                            Json::Object(vec![
                                ("key".into(), expected(key_type, keys.as_ref(), i, o)),
                                ("value".into(), value(i)),
                            ])
                        })
                        .collect(),
                ),
            }
        }
        DataType::Row(r) => object(r.fields(), |k| array.as_struct().column(k).clone(), row, o),
    }
}

/// The object of `fields`, field `k` read from `column(k)`.
fn object(
    fields: &[DataField],
    column: impl Fn(usize) -> arrow_array::ArrayRef,
    row: usize,
    o: JsonOptions,
) -> Json {
    Json::Object(
        fields
            .iter()
            .enumerate()
            .map(|(k, f)| {
                let column = column(k);
                (
                    f.name().to_owned(),
                    expected(f.data_type(), column.as_ref(), row, o),
                )
            })
            .collect(),
    )
}

/// How the rows are handed over as messages: with or without the `_fluss` object, in a
/// partition or not.
#[derive(Clone, Debug)]
struct Delivery {
    include_metadata: bool,
    partition: Option<String>,
}

fn delivery() -> impl Strategy<Value = Delivery> {
    (
        any::<bool>(),
        prop::option::of("[a-z0-9=\"\\\\é\\x01]{1,12}"),
    )
        .prop_map(|(include_metadata, partition)| Delivery {
            include_metadata,
            partition,
        })
}

/// Encodes the case's rows under `options`, alone (`RowEncoder` on the sliced batch) and as
/// messages (`RowMessages` on records of the whole batch), and checks both against the
/// reference.
fn check(case: &Case, options: JsonOptions, delivery: &Delivery) -> Result<(), TestCaseError> {
    let batch = case.batch();
    let mut encoder = RowEncoder::try_new(&case.fields, &batch, options)
        .map_err(|e| TestCaseError::fail(format!("encoder refused the batch: {e}")))?;
    let mut references = Vec::new();
    for row in 0..batch.num_rows() {
        let mut payload = Vec::with_capacity(encoder.size_hint());
        encoder.write_object(row, &mut payload);
        let text = String::from_utf8(payload)
            .map_err(|e| TestCaseError::fail(format!("row {row} is not UTF-8: {e}")))?;
        let parsed: Value = serde_json::from_str(&text).map_err(|e| {
            TestCaseError::fail(format!(
                "row {row} is not JSON ({e}) under {options:?}: {text}"
            ))
        })?;
        let reference = object(&case.fields, |k| batch.column(k).clone(), row, options);
        prop_assert_eq!(
            &parsed,
            &reference.to_value(),
            "row {} under {:?}",
            row,
            options
        );
        prop_assert_eq!(&text, &reference.text(), "row {} under {:?}", row, options);
        references.push(reference);
    }

    let records = arrow_cases::records(
        &case.fields,
        case.full_batch(),
        (case.offset..case.offset + case.len).map(|r| (r, ChangeType::AppendOnly)),
        1_000,
    );
    let mut messages = Batch::new(usize::MAX, usize::MAX);
    let consumed = RowMessages::new(
        Schemas::new(1, case.fields.clone(), false),
        options,
        delivery.include_metadata,
    )
    .encode(
        &arrow_cases::stamp(delivery.partition.as_deref()),
        &records,
        &mut messages,
    )
    .map_err(|e| TestCaseError::fail(format!("RowMessages failed: {e}")))?;
    prop_assert_eq!(consumed, records.len());
    let messages = messages.into_messages().expect("payloads built");
    prop_assert_eq!(messages.len(), records.len(), "one message per row");
    for ((message, record), reference) in messages.iter().zip(&records).zip(references) {
        let Json::Object(mut fields) = reference else {
            unreachable!("a row is an object")
        };
        if delivery.include_metadata {
            let partition = match &delivery.partition {
                Some(name) => Json::Text(name.clone()),
                None => Json::Null,
            };
            fields.push((
                "_fluss".into(),
                Json::Object(vec![
                    ("bucket".into(), Json::number(3)),
                    ("partition".into(), partition),
                    ("offset".into(), Json::number(record.offset())),
                    ("timestamp".into(), Json::number(record.timestamp())),
                ]),
            ));
        }
        let text = String::from_utf8_lossy(&message.payload);
        prop_assert_eq!(
            text,
            Json::Object(fields).text(),
            "message of offset {}",
            record.offset()
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(1_024))]

    #[test]
    fn rows_equal_the_reference_under_every_option(case in case(), delivery in delivery()) {
        for options in OPTIONS {
            check(&case, options, &delivery)?;
        }
    }
}

#[test]
fn the_reference_calendar_agrees_with_known_dates() {
    assert_eq!(civil(0), (1970, 1, 1));
    assert_eq!(civil(-1), (1969, 12, 31));
    assert_eq!(civil(-719_528), (0, 1, 1));
    assert_eq!(civil(-719_529), (-1, 12, 31));
    assert_eq!(civil(2_932_897), (10_000, 1, 1));
    assert_eq!(civil(20_787), (2026, 11, 30));
    assert_eq!(date_text(-719_529), "-0001-12-31");
    assert_eq!(date_text(2_932_897), "+10000-01-01");
    assert_eq!(decimal_text(-5, 3), "-0.005");
    assert_eq!(decimal_text(-12_340, 3), "-12.340");
    assert_eq!(decimal_text(7, 0), "7");
}

/// The type mapping's examples (docs/messages.md), through the same reference, so the reference itself is pinned.
#[test]
fn the_reference_renders_the_readme_examples() {
    let case = Case {
        fields: vec![
            DataTypes::field("d", DataTypes::decimal(7, 4)),
            DataTypes::field("day", DataTypes::date()),
            DataTypes::field("t", DataTypes::time_with_precision(3)),
            DataTypes::field("ts", DataTypes::timestamp_with_precision(6)),
            DataTypes::field("ltz", DataTypes::timestamp_ltz_with_precision(6)),
        ],
        columns: vec![
            vec![Some(arrow_cases::Cell::Decimal(1_234_500))],
            vec![Some(arrow_cases::Cell::Int(20_787))],
            vec![Some(arrow_cases::Cell::Int(49_507_123))],
            vec![Some(arrow_cases::Cell::Int(1_796_046_307_123_456))],
            vec![Some(arrow_cases::Cell::Int(1_796_046_307_123_456))],
        ],
        offset: 0,
        len: 1,
    };
    let batch = case.batch();
    let row = object(&case.fields, |k| batch.column(k).clone(), 0, OPTIONS[0]);
    assert_eq!(
        row.text(),
        r#"{"d":"123.4500","day":"2026-11-30","t":"13:45:07.123","ts":"2026-11-30T13:45:07.123456","ltz":"2026-11-30T13:45:07.123456Z"}"#
    );
    let delivery = Delivery {
        include_metadata: true,
        partition: Some("p=1".into()),
    };
    check(&case, OPTIONS[0], &delivery).unwrap();
}
