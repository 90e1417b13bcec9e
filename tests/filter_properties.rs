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

//! The row filter's client-side evaluation against an independent reference, on random
//! predicates over random batches with nulls, for every column type the language compares.
//!
//! The filter under test parses text, types literals by their column, and evaluates with
//! arrow's kernels over the Arrow batch. The reference never sees the text or the batch: it
//! walks the generated predicate tree over `serde_json` rows holding the same values, with
//! its own three-valued logic, and compares values its own way: dates and timestamps as
//! fixed-width ISO strings (lexicographic order is chronological), decimals as unscaled
//! integers read back from their text, floats with `f64::total_cmp` (the documented order:
//! NaN above +∞, -0.0 below 0.0). The Arrow values are derived from day and unit counts
//! with a civil-from-days walk, the inverse of the parser's days-from-civil.
//!
//! Cases: `PROPTEST_CASES`, default 512.

mod property;

use std::cmp::Ordering;
use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, BooleanArray, Date32Array, Decimal128Array, Float32Array, Float64Array,
    Int8Array, Int16Array, Int32Array, Int64Array, RecordBatch, StringArray,
    TimestampMicrosecondArray, TimestampMillisecondArray,
};
use arrow_schema::{DataType as ArrowType, Field, Schema};
use fluss::metadata::{DataField, DataType, DataTypes};
use iggy_connector_fluss_source::filter::{Filter, FilterText};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// The column kinds of the test table, one column each.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Bool,
    I8,
    I16,
    I32,
    I64,
    F32,
    F64,
    Decimal,
    Str,
    Date,
    Ts3,
    Ts6,
    Ltz3,
}

const KINDS: [Kind; 13] = [
    Kind::Bool,
    Kind::I8,
    Kind::I16,
    Kind::I32,
    Kind::I64,
    Kind::F32,
    Kind::F64,
    Kind::Decimal,
    Kind::Str,
    Kind::Date,
    Kind::Ts3,
    Kind::Ts6,
    Kind::Ltz3,
];

/// Day 20_787 is 2026-11-30; values stay close so comparisons often tie.
const BASE_DAY: i64 = 20_787;
const FLOATS: [f64; 7] = [-1.5, -0.0, 0.0, 2.25, 3.0, f64::NAN, f64::INFINITY];
const STRINGS: [&str; 5] = ["", "a", "b", "it's", "ä"];

impl Kind {
    fn name(self) -> String {
        format!("c_{self:?}").to_lowercase()
    }

    fn fluss(self) -> DataType {
        match self {
            Kind::Bool => DataTypes::boolean(),
            Kind::I8 => DataTypes::tinyint(),
            Kind::I16 => DataTypes::smallint(),
            Kind::I32 => DataTypes::int(),
            Kind::I64 => DataTypes::bigint(),
            Kind::F32 => DataTypes::float(),
            Kind::F64 => DataTypes::double(),
            Kind::Decimal => DataTypes::decimal(12, 3),
            Kind::Str => DataTypes::string(),
            Kind::Date => DataTypes::date(),
            Kind::Ts3 => DataTypes::timestamp_with_precision(3),
            Kind::Ts6 => DataTypes::timestamp_with_precision(6),
            Kind::Ltz3 => DataTypes::timestamp_ltz_with_precision(3),
        }
    }

    /// A value index: the cell and literal domains are small indexed sets.
    fn domain(self) -> i64 {
        match self {
            Kind::Bool => 2,
            Kind::F32 | Kind::F64 => FLOATS.len() as i64,
            Kind::Str => STRINGS.len() as i64,
            _ => 7,
        }
    }
}

/// One value of `kind` by index: the Arrow-side number and the reference's JSON.
#[derive(Debug, Clone)]
struct Cell {
    kind: Kind,
    index: i64,
}

impl Cell {
    /// Integers -3..=3; decimals -1.500 .. 1.500 in steps of 0.5; dates around 2026-11-30;
    /// timestamps around its midnight in steps of 250 ms (TIMESTAMP(6): 250 µs).
    fn number(&self) -> i64 {
        let k = self.index - 3;
        match self.kind {
            Kind::Decimal => k * 500,
            Kind::Date => BASE_DAY + k,
            Kind::Ts3 | Kind::Ltz3 => BASE_DAY * 86_400_000 + k * 250,
            Kind::Ts6 => BASE_DAY * 86_400_000_000 + k * 250,
            _ => k,
        }
    }

    fn float(&self) -> f64 {
        FLOATS[self.index as usize]
    }

    /// The value as the reference row holds it.
    fn json(&self) -> Value {
        match self.kind {
            Kind::Bool => json!(self.index == 1),
            Kind::F32 | Kind::F64 if self.float().is_nan() => json!("NaN"),
            Kind::F32 | Kind::F64 if self.float().is_infinite() => json!("Infinity"),
            Kind::F32 | Kind::F64 => json!(self.float()),
            Kind::Decimal => {
                let n = self.number();
                let sign = if n < 0 { "-" } else { "" };
                json!(format!("{sign}{}.{:03}", n.abs() / 1000, n.abs() % 1000))
            }
            Kind::Str => json!(STRINGS[self.index as usize]),
            Kind::Date => json!(iso_date(self.number())),
            Kind::Ts3 | Kind::Ltz3 => json!(iso_time(self.number(), 1_000)),
            Kind::Ts6 => json!(iso_time(self.number(), 1_000_000)),
            _ => json!(self.number()),
        }
    }

    /// The value as a filter literal.
    fn literal(&self) -> String {
        match self.kind {
            Kind::Bool if self.index == 1 => "TRUE".into(),
            Kind::Bool => "false".into(),
            Kind::F32 | Kind::F64 => match self.float() {
                3.0 => "3".into(),
                2.25 => "225e-2".into(),
                f => format!("{f}"),
            },
            Kind::Decimal => {
                let text = self.json();
                // Trailing zeros are fine: 1.500 and 1.5 are the same literal.
                text.as_str()
                    .unwrap_or_default()
                    .trim_end_matches('0')
                    .to_owned()
            }
            Kind::Str => format!("'{}'", STRINGS[self.index as usize].replace('\'', "''")),
            Kind::Date => format!("'{}'", iso_date(self.number())),
            Kind::Ts3 => format!("'{}'", iso_time(self.number(), 1_000).replace('T', " ")),
            Kind::Ts6 => format!("'{}'", iso_time(self.number(), 1_000_000)),
            Kind::Ltz3 => format!("'{}Z'", iso_time(self.number(), 1_000)),
            _ => self.number().to_string(),
        }
    }
}

/// A literal domain the cells never reach for floats (NaN and ∞ have no literal).
fn literal_cell(kind: Kind) -> impl Strategy<Value = Cell> {
    let top = match kind {
        Kind::F32 | Kind::F64 => 5,
        _ => kind.domain(),
    };
    (0..top).prop_map(move |index| Cell { kind, index })
}

/// Civil date of a day number, by walking years and months (no closed formula).
fn civil(days: i64) -> (i64, i64, i64) {
    let mut year = 1970;
    let mut days = days;
    let leap = |y: i64| (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    loop {
        let len = if leap(year) { 366 } else { 365 };
        if days < 0 {
            year -= 1;
            days += if leap(year) { 366 } else { 365 };
        } else if days >= len {
            days -= len;
            year += 1;
        } else {
            break;
        }
    }
    let months = [
        31,
        if leap(year) { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    let mut month = 0;
    while days >= months[month] {
        days -= months[month];
        month += 1;
    }
    (year, month as i64 + 1, days + 1)
}

fn iso_date(days: i64) -> String {
    let (y, m, d) = civil(days);
    format!("{y:04}-{m:02}-{d:02}")
}

/// `units` per second since the epoch, as `YYYY-MM-DDTHH:MM:SS.fff…` (fixed width).
fn iso_time(value: i64, units: i64) -> String {
    let seconds = value.div_euclid(units);
    let fraction = value.rem_euclid(units);
    let day_seconds = seconds.rem_euclid(86_400);
    let width = units.to_string().len() - 1;
    format!(
        "{}T{:02}:{:02}:{:02}.{fraction:0width$}",
        iso_date(seconds.div_euclid(86_400)),
        day_seconds / 3600,
        day_seconds / 60 % 60,
        day_seconds % 60,
    )
}

/// A generated predicate.
#[derive(Debug, Clone)]
enum Pred {
    And(Box<Pred>, Box<Pred>),
    Or(Box<Pred>, Box<Pred>),
    Not(Box<Pred>),
    Compare(Kind, &'static str, Cell),
    IsNull(Kind, bool),
    In(Kind, Vec<Cell>, bool),
}

const OPS: [&str; 7] = ["=", "!=", "<>", "<", "<=", ">", ">="];

fn leaf() -> impl Strategy<Value = Pred> {
    (0..KINDS.len()).prop_flat_map(|k| {
        let kind = KINDS[k];
        prop_oneof![
            (0..OPS.len(), literal_cell(kind))
                .prop_map(move |(op, c)| Pred::Compare(kind, OPS[op], c)),
            any::<bool>().prop_map(move |n| Pred::IsNull(kind, n)),
            (
                prop::collection::vec(literal_cell(kind), 1..4),
                any::<bool>()
            )
                .prop_map(move |(v, n)| Pred::In(kind, v, n)),
        ]
    })
}

fn predicate() -> impl Strategy<Value = Pred> {
    leaf().prop_recursive(3, 12, 2, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Pred::And(Box::new(a), Box::new(b))),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Pred::Or(Box::new(a), Box::new(b))),
            inner.prop_map(|a| Pred::Not(Box::new(a))),
        ]
    })
}

/// The filter text, fully parenthesised, with keywords in mixed case.
fn text(p: &Pred) -> String {
    match p {
        Pred::And(a, b) => format!("({}) AND ({})", text(a), text(b)),
        Pred::Or(a, b) => format!("({}) or ({})", text(a), text(b)),
        Pred::Not(a) => format!("NOT ({})", text(a)),
        Pred::Compare(k, op, c) => format!("{} {op} {}", k.name(), c.literal()),
        Pred::IsNull(k, negated) => {
            format!(
                "`{}` IS {}NULL",
                k.name(),
                if *negated { "NOT " } else { "" }
            )
        }
        Pred::In(k, values, negated) => format!(
            "{} {}IN ({})",
            k.name(),
            if *negated { "NOT " } else { "" },
            values
                .iter()
                .map(Cell::literal)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// What the reference compares: read back from the JSON row or from the literal's cell.
#[derive(Debug, PartialEq)]
enum Ref {
    Int(i64),
    Float(f64),
    Text(String),
    Bool(bool),
}

/// A JSON cell read by its column kind (the reference's own reading, not the cell's index).
fn read(kind: Kind, value: &Value) -> Ref {
    match (kind, value) {
        (Kind::Bool, Value::Bool(b)) => Ref::Bool(*b),
        (Kind::F32 | Kind::F64, Value::String(s)) if s == "NaN" => Ref::Float(f64::NAN),
        (Kind::F32 | Kind::F64, Value::String(_)) => Ref::Float(f64::INFINITY),
        (Kind::F32 | Kind::F64, v) => Ref::Float(v.as_f64().unwrap_or_default()),
        (Kind::Decimal, Value::String(s)) => Ref::Int(s.replace('.', "").parse().unwrap_or(0)),
        (Kind::Str | Kind::Date | Kind::Ts3 | Kind::Ts6 | Kind::Ltz3, Value::String(s)) => {
            Ref::Text(s.clone())
        }
        (_, v) => Ref::Int(v.as_i64().unwrap_or_default()),
    }
}

fn order(a: &Ref, b: &Ref) -> Ordering {
    match (a, b) {
        (Ref::Int(a), Ref::Int(b)) => a.cmp(b),
        (Ref::Float(a), Ref::Float(b)) => a.total_cmp(b),
        (Ref::Text(a), Ref::Text(b)) => a.cmp(b),
        (Ref::Bool(a), Ref::Bool(b)) => a.cmp(b),
        _ => panic!("the reference compared {a:?} with {b:?}"),
    }
}

/// Three-valued evaluation: `None` is unknown.
fn reference(p: &Pred, row: &Map<String, Value>) -> Option<bool> {
    let cell = |k: &Kind| {
        row.get(&k.name())
            .filter(|v| !v.is_null())
            .map(|v| read(*k, v))
    };
    match p {
        Pred::And(a, b) => match (reference(a, row), reference(b, row)) {
            (Some(false), _) | (_, Some(false)) => Some(false),
            (Some(true), Some(true)) => Some(true),
            _ => None,
        },
        Pred::Or(a, b) => match (reference(a, row), reference(b, row)) {
            (Some(true), _) | (_, Some(true)) => Some(true),
            (Some(false), Some(false)) => Some(false),
            _ => None,
        },
        Pred::Not(a) => reference(a, row).map(|v| !v),
        Pred::IsNull(k, negated) => Some(cell(k).is_none() != *negated),
        Pred::Compare(k, op, literal) => {
            let o = order(&cell(k)?, &read(*k, &literal.json()));
            Some(match *op {
                "=" => o.is_eq(),
                "!=" | "<>" => o.is_ne(),
                "<" => o.is_lt(),
                "<=" => o.is_le(),
                ">" => o.is_gt(),
                _ => o.is_ge(),
            })
        }
        Pred::In(k, values, negated) => {
            let value = cell(k)?;
            let any = values
                .iter()
                .any(|v| order(&value, &read(*k, &v.json())).is_eq());
            Some(any != *negated)
        }
    }
}

/// The Arrow column of `cells` (null where `None`).
fn column(kind: Kind, cells: &[Option<Cell>]) -> ArrayRef {
    let n = |c: &Option<Cell>| c.as_ref().map(Cell::number);
    let f = |c: &Option<Cell>| c.as_ref().map(Cell::float);
    match kind {
        Kind::Bool => Arc::new(BooleanArray::from_iter(
            cells.iter().map(|c| c.as_ref().map(|c| c.index == 1)),
        )),
        Kind::I8 => Arc::new(Int8Array::from_iter(
            cells.iter().map(|c| n(c).map(|v| v as i8)),
        )),
        Kind::I16 => Arc::new(Int16Array::from_iter(
            cells.iter().map(|c| n(c).map(|v| v as i16)),
        )),
        Kind::I32 => Arc::new(Int32Array::from_iter(
            cells.iter().map(|c| n(c).map(|v| v as i32)),
        )),
        Kind::I64 => Arc::new(Int64Array::from_iter(cells.iter().map(n))),
        Kind::F32 => Arc::new(Float32Array::from_iter(
            cells.iter().map(|c| f(c).map(|v| v as f32)),
        )),
        Kind::F64 => Arc::new(Float64Array::from_iter(cells.iter().map(f))),
        Kind::Decimal => Arc::new(
            Decimal128Array::from_iter(cells.iter().map(|c| n(c).map(i128::from)))
                .with_precision_and_scale(12, 3)
                .unwrap(),
        ),
        Kind::Str => Arc::new(StringArray::from_iter(
            cells
                .iter()
                .map(|c| c.as_ref().map(|c| STRINGS[c.index as usize])),
        )),
        Kind::Date => Arc::new(Date32Array::from_iter(
            cells.iter().map(|c| n(c).map(|v| v as i32)),
        )),
        Kind::Ts3 => Arc::new(TimestampMillisecondArray::from_iter(cells.iter().map(n))),
        Kind::Ts6 => Arc::new(TimestampMicrosecondArray::from_iter(cells.iter().map(n))),
        Kind::Ltz3 => {
            Arc::new(TimestampMillisecondArray::from_iter(cells.iter().map(n)).with_timezone("UTC"))
        }
    }
}

fn arrow_type(kind: Kind) -> ArrowType {
    fluss::record::to_arrow_type(&kind.fluss()).unwrap_or(ArrowType::Null)
}

/// Rows of every column, each cell null one time in four.
fn rows() -> impl Strategy<Value = Vec<Vec<Option<Cell>>>> {
    let row = KINDS
        .iter()
        .map(|kind| {
            let kind = *kind;
            prop::option::weighted(
                0.75,
                (0..kind.domain()).prop_map(move |index| Cell { kind, index }),
            )
        })
        .collect::<Vec<_>>();
    prop::collection::vec(row, 1..40)
}

fn fields() -> Vec<DataField> {
    KINDS
        .iter()
        .map(|k| DataField::new(k.name(), k.fluss(), None))
        .collect()
}

proptest! {
    #![proptest_config(property::config(512))]

    #[test]
    fn the_mask_is_the_reference_evaluation(rows in rows(), p in predicate()) {
        let schema = Arc::new(Schema::new(
            KINDS.iter().map(|k| Field::new(k.name(), arrow_type(*k), true)).collect::<Vec<_>>(),
        ));
        let columns = KINDS
            .iter()
            .enumerate()
            .map(|(i, k)| column(*k, &rows.iter().map(|r| r[i].clone()).collect::<Vec<_>>()))
            .collect();
        let batch = RecordBatch::try_new(schema, columns).unwrap();
        let text = text(&p);
        let parsed = FilterText::parse(&text).map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
        let filter = Filter::new(&parsed, &fields(), &fields(), false)
            .map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
        let mask = filter.matches(&batch).unwrap();
        prop_assert_eq!(mask.null_count(), 0);
        for (i, row) in rows.iter().enumerate() {
            let json: Map<String, Value> = KINDS
                .iter()
                .zip(row)
                .map(|(k, c)| (k.name(), c.as_ref().map_or(Value::Null, Cell::json)))
                .collect();
            let expected = reference(&p, &json) == Some(true);
            prop_assert_eq!(mask.value(i), expected, "row {} {:?} for `{}`", i, json, text);
        }
    }
}

#[test]
fn the_reference_calendar_agrees_with_known_dates() {
    assert_eq!(iso_date(BASE_DAY), "2026-11-30");
    assert_eq!(iso_date(-1), "1969-12-31");
    assert_eq!(iso_date(19_782), "2024-02-29");
    assert_eq!(iso_time(-1, 1_000), "1969-12-31T23:59:59.999");
}
