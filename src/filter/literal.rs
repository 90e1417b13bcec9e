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

//! A literal's text turned into a value of its column's type, exactly or not at all: a
//! decimal with more fractional digits than the column's scale, or a timestamp finer than its
//! precision, is refused rather than rounded (rounding would change which rows match).

use fluss::metadata::DataType;

use super::FilterError;
use super::parse::{Literal, LiteralKind};

/// A literal typed by its column.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// BOOLEAN.
    Bool(bool),
    /// TINYINT, SMALLINT, INT, BIGINT (in range of the column's type).
    Int(i64),
    /// FLOAT, DOUBLE.
    Float(f64),
    /// DECIMAL: the unscaled value at the column's scale.
    Decimal(i128),
    /// CHAR, STRING.
    String(String),
    /// DATE: days since 1970-01-01.
    Date(i32),
    /// TIMESTAMP, TIMESTAMP_LTZ: units of the column's precision (s, ms, µs or ns) since
    /// 1970-01-01T00:00 (UTC for TIMESTAMP_LTZ).
    Timestamp(i64),
}

/// Whether filters can compare a column of type `data_type` with a literal; the other types
/// can only be tested with `IS [NOT] NULL`.
pub fn comparable(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Boolean(_)
            | DataType::TinyInt(_)
            | DataType::SmallInt(_)
            | DataType::Int(_)
            | DataType::BigInt(_)
            | DataType::Float(_)
            | DataType::Double(_)
            | DataType::Decimal(_)
            | DataType::Char(_)
            | DataType::String(_)
            | DataType::Date(_)
            | DataType::Timestamp(_)
            | DataType::TimestampLTz(_)
    )
}

/// Types `literal` for the column `name` of type `data_type` (one of [`comparable`]).
pub fn typed(literal: &Literal, name: &str, data_type: &DataType) -> Result<Value, FilterError> {
    let fail = |expected: String| {
        FilterError::new(
            literal.at,
            format!(
                "column `{name}` is {}; expected {expected}, found {}",
                type_name(data_type),
                shown(literal)
            ),
        )
    };
    let number = literal.kind == LiteralKind::Number;
    let string = literal.kind == LiteralKind::String;
    match data_type {
        DataType::Boolean(_) if literal.kind == LiteralKind::Boolean => {
            Ok(Value::Bool(literal.text == "true"))
        }
        DataType::Boolean(_) => Err(fail("TRUE or FALSE".into())),
        DataType::TinyInt(_) => integer(literal, i8::MIN.into(), i8::MAX.into(), fail),
        DataType::SmallInt(_) => integer(literal, i16::MIN.into(), i16::MAX.into(), fail),
        DataType::Int(_) => integer(literal, i32::MIN.into(), i32::MAX.into(), fail),
        DataType::BigInt(_) => integer(literal, i64::MIN, i64::MAX, fail),
        DataType::Float(_) | DataType::Double(_) => match literal.text.parse::<f64>() {
            Ok(v) if number && v.is_finite() => Ok(Value::Float(v)),
            _ => Err(fail("a number such as 2.5 or 1e-3".into())),
        },
        DataType::Decimal(d) => {
            let scale = d.scale();
            if !number {
                return Err(fail(format!(
                    "a number with at most {scale} decimal places"
                )));
            }
            decimal(&literal.text, scale).map(Value::Decimal).ok_or_else(|| {
                fail(format!(
                    "a number with at most {scale} decimal places (filters compare decimals exactly, so a literal the column cannot hold is refused rather than rounded)"
                ))
            })
        }
        DataType::Char(_) | DataType::String(_) if string => {
            Ok(Value::String(literal.text.clone()))
        }
        DataType::Char(_) | DataType::String(_) => Err(fail("a 'quoted string'".into())),
        DataType::Date(_) => match date(&literal.text) {
            Some(days) if string => Ok(Value::Date(days)),
            _ => Err(fail("a date such as '2026-11-30'".into())),
        },
        DataType::Timestamp(t) => timestamp(literal, t.precision(), false, fail),
        DataType::TimestampLTz(t) => timestamp(literal, t.precision(), true, fail),
        _ => Err(fail(
            "nothing: it can only be tested with IS [NOT] NULL".into(),
        )),
    }
}

/// The type as the error messages name it: Fluss' own spelling, without `NOT NULL`.
pub fn type_name(data_type: &DataType) -> String {
    let text = data_type.to_string();
    text.strip_suffix(" NOT NULL").unwrap_or(&text).to_owned()
}

fn shown(literal: &Literal) -> String {
    match literal.kind {
        LiteralKind::String => format!("'{}'", literal.text.replace('\'', "''")),
        LiteralKind::Number => format!("`{}`", literal.text),
        LiteralKind::Boolean => format!("`{}`", literal.text.to_ascii_uppercase()),
    }
}

fn integer(
    literal: &Literal,
    min: i64,
    max: i64,
    fail: impl Fn(String) -> FilterError,
) -> Result<Value, FilterError> {
    match literal.text.parse::<i64>() {
        Ok(v) if literal.kind == LiteralKind::Number && (min..=max).contains(&v) => {
            Ok(Value::Int(v))
        }
        _ => Err(fail(format!("an integer from {min} to {max}"))),
    }
}

/// `text` (`-12.50`) as an unscaled value at `scale`; `None` if it is not a plain decimal
/// number, has more significant fractional digits than `scale`, or overflows 128 bits.
fn decimal(text: &str, scale: u32) -> Option<i128> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if (whole.is_empty() && fraction.is_empty()) || !all_digits(whole) || !all_digits(fraction) {
        return None;
    }
    let fraction = fraction.trim_end_matches('0');
    if fraction.len() > scale as usize {
        return None;
    }
    let mut value: i128 = 0;
    for c in whole.chars().chain(fraction.chars()) {
        value = value
            .checked_mul(10)?
            .checked_add(i128::from(c as u8 - b'0'))?;
    }
    for _ in fraction.len()..scale as usize {
        value = value.checked_mul(10)?;
    }
    Some(if negative { -value } else { value })
}

/// `YYYY-MM-DD` as days since 1970-01-01.
pub fn date(text: &str) -> Option<i32> {
    let b = text.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let year = digits(&text[0..4])?;
    let month = digits(&text[5..7])?;
    let day = digits(&text[8..10])?;
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    i32::try_from(days_from_civil(year, month, day)).ok()
}

fn digits(text: &str) -> Option<i64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `YYYY-MM-DD[( |T)HH:MM[:SS[.fraction]]]`, and for TIMESTAMP_LTZ an optional `Z` or
/// `±HH:MM`, in units of `precision`.
fn timestamp(
    literal: &Literal,
    precision: u32,
    zoned: bool,
    fail: impl Fn(String) -> FilterError,
) -> Result<Value, FilterError> {
    let example = if zoned {
        "a timestamp such as '2026-11-30 13:45:07.123Z' (no zone means UTC)"
    } else {
        "a timestamp such as '2026-11-30 13:45:07.123' (TIMESTAMP has no time zone)"
    };
    let nanos = (literal.kind == LiteralKind::String)
        .then(|| timestamp_nanos(&literal.text, zoned))
        .flatten()
        .ok_or_else(|| fail(example.into()))?;
    let per_unit: i128 = match precision {
        0 => 1_000_000_000,
        1..=3 => 1_000_000,
        4..=6 => 1_000,
        _ => 1,
    };
    if nanos % per_unit != 0 {
        return Err(fail(format!(
            "a timestamp with at most {} fractional second digits (the column keeps no finer values)",
            match precision {
                0 => 0,
                1..=3 => 3,
                4..=6 => 6,
                _ => 9,
            }
        )));
    }
    i64::try_from(nanos / per_unit)
        .map(Value::Timestamp)
        .map_err(|_| fail(example.into()))
}

/// Nanoseconds since 1970-01-01T00:00 (UTC when `zoned`).
fn timestamp_nanos(text: &str, zoned: bool) -> Option<i128> {
    let days = i128::from(date(text.get(0..10)?)?);
    let mut rest = &text[10..];
    let mut nanos = days * 86_400 * 1_000_000_000;
    if rest.is_empty() {
        return Some(nanos);
    }
    rest = rest.strip_prefix(' ').or_else(|| rest.strip_prefix('T'))?;
    let (clock, offset) = if zoned { split_zone(rest)? } else { (rest, 0) };
    let (hms, fraction) = clock.split_once('.').unwrap_or((clock, ""));
    let parts: Vec<&str> = hms.split(':').collect();
    if !(2..=3).contains(&parts.len()) || parts.iter().any(|p| p.len() != 2) {
        return None;
    }
    let hour = digits(parts[0])?;
    let minute = digits(parts[1])?;
    let second = parts.get(2).map_or(Some(0), |s| digits(s))?;
    if hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    if (!fraction.is_empty() && parts.len() != 3)
        || fraction.len() > 9
        || (clock.contains('.') && fraction.is_empty())
    {
        return None;
    }
    let fraction_nanos = if fraction.is_empty() {
        0
    } else {
        digits(fraction)? * 10_i64.pow(9 - fraction.len() as u32)
    };
    nanos += i128::from(((hour * 60 + minute) * 60 + second) * 1_000_000_000 + fraction_nanos);
    Some(nanos - i128::from(offset) * 60 * 1_000_000_000)
}

/// Splits a trailing `Z` or `±HH:MM` off `clock`; the offset in minutes east of UTC.
fn split_zone(clock: &str) -> Option<(&str, i64)> {
    if let Some(clock) = clock.strip_suffix('Z') {
        return Some((clock, 0));
    }
    let at = clock.rfind(['+', '-']);
    match at {
        Some(at) if clock.len() - at == 6 && clock.as_bytes()[at + 3] == b':' => {
            let hours = digits(&clock[at + 1..at + 3])?;
            let minutes = digits(&clock[at + 4..])?;
            if hours > 18 || minutes > 59 {
                return None;
            }
            let sign = if clock.as_bytes()[at] == b'-' { -1 } else { 1 };
            Some((&clock[..at], sign * (hours * 60 + minutes)))
        }
        _ => Some((clock, 0)),
    }
}

#[cfg(test)]
mod tests {
    use fluss::metadata::DataTypes;

    use super::*;

    fn lit(kind: LiteralKind, text: &str) -> Literal {
        Literal {
            kind,
            text: text.into(),
            at: 7,
        }
    }

    fn value(data_type: DataType, kind: LiteralKind, text: &str) -> Result<Value, String> {
        typed(&lit(kind, text), "c", &data_type).map_err(|e| e.to_string())
    }

    use LiteralKind::{Boolean as B, Number as N, String as S};

    #[test]
    fn integers_are_range_checked_per_type() {
        assert_eq!(value(DataTypes::tinyint(), N, "-128"), Ok(Value::Int(-128)));
        assert_eq!(
            value(DataTypes::tinyint(), N, "128"),
            Err("`filter`: at column 7: column `c` is TINYINT; expected an integer from -128 to 127, found `128`".into())
        );
        assert_eq!(
            value(DataTypes::bigint(), N, "1.5"),
            Err("`filter`: at column 7: column `c` is BIGINT; expected an integer from -9223372036854775808 to 9223372036854775807, found `1.5`".into())
        );
        assert_eq!(
            value(DataTypes::int(), S, "1"),
            Err("`filter`: at column 7: column `c` is INT; expected an integer from -2147483648 to 2147483647, found '1'".into())
        );
    }

    #[test]
    fn decimals_are_exact_at_the_column_scale() {
        let d = || DataTypes::decimal(10, 2);
        assert_eq!(value(d(), N, "12.5"), Ok(Value::Decimal(1250)));
        assert_eq!(value(d(), N, "-0.07"), Ok(Value::Decimal(-7)));
        assert_eq!(value(d(), N, "3.1400"), Ok(Value::Decimal(314)));
        assert_eq!(value(d(), N, "7"), Ok(Value::Decimal(700)));
        assert_eq!(value(d(), N, ".5"), Ok(Value::Decimal(50)));
        assert_eq!(
            value(d(), N, "1.005"),
            Err("`filter`: at column 7: column `c` is DECIMAL(10, 2); expected a number with at most 2 decimal places (filters compare decimals exactly, so a literal the column cannot hold is refused rather than rounded), found `1.005`".into())
        );
        assert!(value(d(), N, "1e3").is_err(), "no exponents for decimals");
        assert!(value(d(), N, "1.2.3").is_err());
    }

    #[test]
    fn floats_booleans_and_strings() {
        assert_eq!(
            value(DataTypes::double(), N, "-2e3"),
            Ok(Value::Float(-2000.0))
        );
        assert_eq!(value(DataTypes::float(), N, ".25"), Ok(Value::Float(0.25)));
        assert_eq!(
            value(DataTypes::boolean(), B, "true"),
            Ok(Value::Bool(true))
        );
        assert_eq!(
            value(DataTypes::boolean(), N, "1"),
            Err(
                "`filter`: at column 7: column `c` is BOOLEAN; expected TRUE or FALSE, found `1`"
                    .into()
            )
        );
        assert_eq!(
            value(DataTypes::string(), S, "it's"),
            Ok(Value::String("it's".into()))
        );
        assert_eq!(
            value(DataTypes::string(), N, "5"),
            Err("`filter`: at column 7: column `c` is STRING; expected a 'quoted string', found `5`".into())
        );
    }

    #[test]
    fn dates_and_timestamps() {
        assert_eq!(
            value(DataTypes::date(), S, "1970-01-02"),
            Ok(Value::Date(1))
        );
        assert_eq!(
            value(DataTypes::date(), S, "1969-12-31"),
            Ok(Value::Date(-1))
        );
        assert_eq!(
            value(DataTypes::date(), S, "2024-02-29"),
            Ok(Value::Date(19_782))
        );
        assert_eq!(
            value(DataTypes::date(), S, "2023-02-29"),
            Err("`filter`: at column 7: column `c` is DATE; expected a date such as '2026-11-30', found '2023-02-29'".into())
        );
        let ts3 = || DataTypes::timestamp_with_precision(3);
        assert_eq!(
            value(ts3(), S, "1970-01-01 00:00:01.5"),
            Ok(Value::Timestamp(1500))
        );
        assert_eq!(
            value(ts3(), S, "1970-01-02"),
            Ok(Value::Timestamp(86_400_000))
        );
        assert_eq!(
            value(ts3(), S, "1970-01-01T00:00:00.0001"),
            Err("`filter`: at column 7: column `c` is TIMESTAMP(3); expected a timestamp with at most 3 fractional second digits (the column keeps no finer values), found '1970-01-01T00:00:00.0001'".into())
        );
        assert!(
            value(ts3(), S, "1970-01-01 00:00:00Z").is_err(),
            "TIMESTAMP has no zone"
        );
        let ltz6 = || DataTypes::timestamp_ltz_with_precision(6);
        assert_eq!(
            value(ltz6(), S, "1970-01-01 01:00:00+01:00"),
            Ok(Value::Timestamp(0))
        );
        assert_eq!(
            value(ltz6(), S, "1970-01-01T00:00:00.000001Z"),
            Ok(Value::Timestamp(1))
        );
    }

    #[test]
    fn other_types_only_take_is_null() {
        assert!(!comparable(&DataTypes::bytes()));
        assert!(comparable(&DataTypes::decimal(5, 0)));
    }
}
