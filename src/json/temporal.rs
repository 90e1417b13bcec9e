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

//! DATE, TIME, TIMESTAMP and TIMESTAMP_LTZ as ISO 8601 text or epoch integers.
//!
//! Encoders are generic over the Arrow unit (`UPS`, units per second), so every split of a
//! value into days, seconds and fraction divides by a constant and compiles to multiplies.
//! The number of fraction digits comes from the Fluss precision, not the Arrow unit:
//! TIMESTAMP(2) is stored in milliseconds but prints two digits. Digits beyond the precision
//! are truncated (Fluss never stores them).
//!
//! Years 0000..=9999 print as four digits. Outside that range we follow `java.time` (what
//! Fluss and Flink print): a leading `+` above 9999 (`+10000-01-01`) and a `-` with at least
//! four digits before year 0 (`-0001-12-31`), i.e. ISO 8601's expanded years, proleptic
//! Gregorian throughout.
//!
//! The tests of the calendar arithmetic sit next to it, in this file.

use super::ValueEncoder;
use super::digits::{decimal_len, put_block, two_digits, write_digits, write_i64};

const SECONDS_PER_DAY: i64 = 86_400;
const NANOS_PER_SECOND: i64 = 1_000_000_000;

/// Proleptic Gregorian (year, month, day) of a day count from 1970-01-01: Howard Hinnant's
/// `civil_from_days`, exact for every day an i64 of seconds can reach (|days| < 1.1e14).
///
/// Shifting by whole 400-year eras first makes every step unsigned, so the divisions by
/// constants compile to plain multiplies without sign fix-ups.
pub(super) fn civil_from_days(days: i64) -> (i64, u64, u64) {
    const SHIFT_ERAS: i64 = 1_000_000_000;
    // 719,468 days from 0000-03-01 to 1970-01-01; adding 1e9 eras keeps z positive.
    let z = (days + 719_468 + SHIFT_ERAS * 146_097) as u64;
    let era = z / 146_097;
    let doe = z % 146_097; // [0, 146096]
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11], March-based
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = (yoe + era * 400) as i64 - SHIFT_ERAS * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Stack block a date-time is assembled in before one fixed-size copy into the payload.
/// Longest text: quote, sign, 12-digit year (i64 seconds reach year ~2.9e11), `-MM-DDT`,
/// `HH:MM:SS`, `.` and nine digits, `Z"`: 41 bytes.
const BLOCK: usize = 48;

/// Writes `"` and the date (year as `java.time` prints it, see the module docs) at the start
/// of `buf`, which must be filled with `'0'` so short years come out zero-padded. Returns
/// the end.
#[inline]
fn fill_date(buf: &mut [u8; BLOCK], days: i64) -> usize {
    let (year, month, day) = civil_from_days(days);
    buf[0] = b'"';
    let at = if (0..=9_999).contains(&year) {
        let year = year as u64;
        let [a, b] = two_digits(year / 100);
        let [c, d] = two_digits(year);
        buf[1..5].copy_from_slice(&[a, b, c, d]);
        5
    } else {
        buf[1] = if year < 0 { b'-' } else { b'+' };
        let abs = year.unsigned_abs();
        // At least four digits: `-0001`; the zeros are already in `buf`.
        let end = 2 + decimal_len(abs).max(4);
        write_digits(buf, end, abs);
        end
    };
    let [m1, m2] = two_digits(month);
    let [d1, d2] = two_digits(day);
    buf[at..at + 6].copy_from_slice(&[b'-', m1, m2, b'-', d1, d2]);
    at + 6
}

/// Writes `HH:MM:SS` and, if `precision` > 0, `.` and the first `precision` digits of the
/// nine-digit `nanos` (truncation) at `buf[at..]`, which must hold `'0'`s. Returns the end.
#[inline]
fn fill_time_of_day(
    buf: &mut [u8; BLOCK],
    at: usize,
    second_of_day: u64,
    nanos: u64,
    precision: usize,
) -> usize {
    let [h1, h2] = two_digits(second_of_day / 3_600);
    let [m1, m2] = two_digits(second_of_day / 60 % 60);
    let [s1, s2] = two_digits(second_of_day % 60);
    buf[at..at + 8].copy_from_slice(&[h1, h2, b':', m1, m2, b':', s1, s2]);
    if precision == 0 {
        return at + 8;
    }
    buf[at + 8] = b'.';
    write_digits(buf, at + 18, nanos);
    at + 9 + precision.min(9)
}

/// DATE (Arrow Date32, days) as `"2026-11-30"`.
pub(super) struct DateIso<'a>(pub(super) &'a [i32]);

impl ValueEncoder for DateIso<'_> {
    #[inline]
    fn encode(&mut self, idx: usize, out: &mut Vec<u8>) {
        let mut buf = [b'0'; BLOCK];
        let end = fill_date(&mut buf, i64::from(self.0[idx]));
        buf[end] = b'"';
        put_block(out, &buf, end + 1);
    }
}

/// TIME(p) as `"13:45:07.123"`, p fraction digits.
struct TimeIso<'a, const UPS: i64, N> {
    values: &'a [N],
    precision: usize,
}

impl<const UPS: i64, N: Into<i64> + Copy> ValueEncoder for TimeIso<'_, UPS, N> {
    #[inline]
    fn encode(&mut self, idx: usize, out: &mut Vec<u8>) {
        let v: i64 = self.values[idx].into();
        // Fluss keeps TIME within one day; anything else wraps rather than print hour 24+.
        let second_of_day = v.div_euclid(UPS).rem_euclid(SECONDS_PER_DAY) as u64;
        let nanos = (v.rem_euclid(UPS) * (NANOS_PER_SECOND / UPS)) as u64;
        let mut buf = [b'0'; BLOCK];
        buf[0] = b'"';
        let end = fill_time_of_day(&mut buf, 1, second_of_day, nanos, self.precision);
        buf[end] = b'"';
        put_block(out, &buf, end + 1);
    }
}

/// TIME as milliseconds of the day; finer units are floored to the millisecond.
struct TimeEpochMillis<'a, const UPS: i64, N>(&'a [N]);

impl<const UPS: i64, N: Into<i64> + Copy> ValueEncoder for TimeEpochMillis<'_, UPS, N> {
    #[inline]
    fn encode(&mut self, idx: usize, out: &mut Vec<u8>) {
        let v: i64 = self.0[idx].into();
        // A TIME value is below 86,400 s, so scaling up to milliseconds cannot overflow.
        let millis = if UPS <= 1_000 {
            v.saturating_mul(1_000 / UPS)
        } else {
            v.div_euclid(UPS / 1_000)
        };
        write_i64(out, millis);
    }
}

/// The TIME encoder for an Arrow unit of `UPS` units per second.
pub(super) fn time<'a, const UPS: i64, N>(
    values: &'a [N],
    precision: usize,
    epoch: bool,
) -> Box<dyn ValueEncoder + 'a>
where
    N: Into<i64> + Copy + 'a,
{
    if epoch {
        Box::new(TimeEpochMillis::<UPS, N>(values))
    } else {
        Box::new(TimeIso::<UPS, N> { values, precision })
    }
}

/// TIMESTAMP(p) as `"2026-11-30T13:45:07.123456"`, TIMESTAMP_LTZ(p) the same plus `Z`.
struct TimestampIso<'a, const UPS: i64> {
    values: &'a [i64],
    precision: usize,
    /// `Z"` for TIMESTAMP_LTZ (an instant, rendered in UTC), `"` otherwise: the bytes and
    /// how many of them to keep.
    suffix: ([u8; 2], usize),
}

impl<const UPS: i64> ValueEncoder for TimestampIso<'_, UPS> {
    #[inline]
    fn encode(&mut self, idx: usize, out: &mut Vec<u8>) {
        let v = self.values[idx];
        // Euclidean division keeps the time of day positive before 1970: -1 µs is
        // 1969-12-31T23:59:59.999999.
        let units_per_day = UPS * SECONDS_PER_DAY;
        let days = v.div_euclid(units_per_day);
        let in_day = v.rem_euclid(units_per_day) as u64;
        let ups = UPS as u64;
        let nanos = (in_day % ups) * (NANOS_PER_SECOND / UPS) as u64;
        let mut buf = [b'0'; BLOCK];
        let date_end = fill_date(&mut buf, days);
        buf[date_end] = b'T';
        let end = fill_time_of_day(&mut buf, date_end + 1, in_day / ups, nanos, self.precision);
        let (suffix, suffix_len) = self.suffix;
        buf[end..end + 2].copy_from_slice(&suffix);
        put_block(out, &buf, end + suffix_len);
    }
}

/// TIMESTAMP / TIMESTAMP_LTZ as microseconds since the epoch. Nanoseconds are floored, so a
/// value before 1970 maps to the microsecond it lies in; seconds and milliseconds far enough
/// out to overflow i64 microseconds are still written exactly (as a wider integer).
struct TimestampEpochMicros<'a, const UPS: i64>(&'a [i64]);

impl<const UPS: i64> ValueEncoder for TimestampEpochMicros<'_, UPS> {
    #[inline]
    fn encode(&mut self, idx: usize, out: &mut Vec<u8>) {
        let v = self.0[idx];
        if UPS <= 1_000_000 {
            let factor = 1_000_000 / UPS;
            match v.checked_mul(factor) {
                Some(micros) => write_i64(out, micros),
                None => {
                    let wide = i128::from(v) * i128::from(factor);
                    out.extend_from_slice(itoa::Buffer::new().format(wide).as_bytes());
                }
            }
        } else {
            write_i64(out, v.div_euclid(UPS / 1_000_000));
        }
    }
}

/// The TIMESTAMP(_LTZ) encoder for an Arrow unit of `UPS` units per second.
pub(super) fn timestamp<'a, const UPS: i64>(
    values: &'a [i64],
    precision: usize,
    utc: bool,
    epoch: bool,
) -> Box<dyn ValueEncoder + 'a> {
    if epoch {
        return Box::new(TimestampEpochMicros::<UPS>(values));
    }
    Box::new(TimestampIso::<UPS> {
        values,
        precision,
        suffix: if utc { (*b"Z\"", 2) } else { (*b"\"\"", 1) },
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{
        ArrayRef, Date32Array, Time32MillisecondArray, Time32SecondArray, Time64MicrosecondArray,
        Time64NanosecondArray, TimestampMicrosecondArray, TimestampMillisecondArray,
        TimestampNanosecondArray, TimestampSecondArray,
    };
    use fluss::metadata::{DataType, DataTypes};

    use super::super::test_support::{column_values, column_values_with};
    use super::civil_from_days;
    use crate::config::options::{DecimalFormat, JsonOptions, TemporalFormat};

    const EPOCH: JsonOptions = JsonOptions {
        temporal: TemporalFormat::Epoch,
        decimal: DecimalFormat::String,
    };

    /// 13:45:07.123456789 as (second of day, nanos).
    const TIME: (i64, i64) = (49_507, 123_456_789);
    /// 2026-11-30T13:45:07.123456789 as (epoch second, nanos).
    const INSTANT: (i64, i64) = (1_796_046_307, 123_456_789);

    fn units_per_second(precision: u32) -> i64 {
        match precision {
            0 => 1,
            1..=3 => 1_000,
            4..=6 => 1_000_000,
            _ => 1_000_000_000,
        }
    }

    /// (seconds, nanos) in the Arrow unit of `precision`, nanos truncated to that precision
    /// as Fluss stores them.
    fn stored(precision: u32, (seconds, nanos): (i64, i64)) -> i64 {
        let ups = units_per_second(precision);
        let keep = 10i64.pow(9 - precision);
        let nanos = nanos / keep * keep;
        seconds.checked_mul(ups).unwrap() + nanos / (1_000_000_000 / ups)
    }

    fn time_array(precision: u32, values: &[(i64, i64)]) -> ArrayRef {
        let v = values.iter().map(|&t| stored(precision, t));
        match precision {
            0 => Arc::new(Time32SecondArray::from_iter_values(v.map(|x| x as i32))),
            1..=3 => Arc::new(Time32MillisecondArray::from_iter_values(
                v.map(|x| x as i32),
            )),
            4..=6 => Arc::new(Time64MicrosecondArray::from_iter_values(v)),
            _ => Arc::new(Time64NanosecondArray::from_iter_values(v)),
        }
    }

    fn timestamp_array(precision: u32, utc: bool, values: &[(i64, i64)]) -> ArrayRef {
        let v = values.iter().map(|&t| stored(precision, t));
        let tz = utc.then_some("UTC");
        match precision {
            0 => Arc::new(TimestampSecondArray::from_iter_values(v).with_timezone_opt(tz)),
            1..=3 => Arc::new(TimestampMillisecondArray::from_iter_values(v).with_timezone_opt(tz)),
            4..=6 => Arc::new(TimestampMicrosecondArray::from_iter_values(v).with_timezone_opt(tz)),
            _ => Arc::new(TimestampNanosecondArray::from_iter_values(v).with_timezone_opt(tz)),
        }
    }

    fn fraction(precision: u32) -> String {
        if precision == 0 {
            String::new()
        } else {
            format!(".{}", &"123456789"[..precision as usize])
        }
    }

    #[test]
    fn civil_from_days_walks_day_by_day_across_eras() {
        let days_in = |y: i64, m: u64| match m {
            2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
            2 => 28,
            4 | 6 | 9 | 11 => 30,
            _ => 31,
        };
        // From 2000-03-01 back before year 0 and forward past 10000, one day at a time.
        let start = 11_017;
        assert_eq!(civil_from_days(start), (2000, 3, 1));
        for (range, step) in [
            (start..start + 3_100_000, 1),
            (start - 3_100_000..start, -1),
        ] {
            let mut expected = (2000, 3, 1);
            let days: Box<dyn Iterator<Item = i64>> = if step == 1 {
                Box::new(range)
            } else {
                Box::new(range.rev().map(|d| d + 1))
            };
            for day in days {
                assert_eq!(civil_from_days(day), expected, "day {day}");
                let (y, m, d) = expected;
                expected = if step == 1 {
                    if d < days_in(y, m) {
                        (y, m, d + 1)
                    } else if m < 12 {
                        (y, m + 1, 1)
                    } else {
                        (y + 1, 1, 1)
                    }
                } else if d > 1 {
                    (y, m, d - 1)
                } else if m > 1 {
                    (y, m - 1, days_in(y, m - 1))
                } else {
                    (y - 1, 12, 31)
                };
            }
        }
    }

    #[test]
    fn date_iso_handles_pre_1970_and_far_years() {
        let array: ArrayRef = Arc::new(Date32Array::from(vec![
            Some(20_787),
            Some(0),
            Some(-1),
            Some(-719_162),
            Some(2_932_896),
            Some(2_932_897),
            Some(-719_528),
            Some(-719_529),
            Some(i32::MAX),
            Some(i32::MIN),
            None,
        ]));
        assert_eq!(
            column_values(DataTypes::date(), array.clone()),
            [
                "\"2026-11-30\"",
                "\"1970-01-01\"",
                "\"1969-12-31\"",
                "\"0001-01-01\"",
                "\"9999-12-31\"",
                "\"+10000-01-01\"",
                "\"0000-01-01\"",
                "\"-0001-12-31\"",
                "\"+5881580-07-11\"",
                "\"-5877641-06-23\"",
                "null",
            ]
        );
        assert_eq!(
            column_values_with(DataTypes::date(), array, EPOCH),
            [
                "20787",
                "0",
                "-1",
                "-719162",
                "2932896",
                "2932897",
                "-719528",
                "-719529",
                "2147483647",
                "-2147483648",
                "null"
            ]
        );
    }

    #[test]
    fn time_prints_exactly_its_precision_in_both_formats() {
        for p in 0..=9 {
            let array = time_array(p, &[TIME, (0, 0), (86_399, 999_999_999)]);
            let data_type = DataTypes::time_with_precision(p);
            assert_eq!(
                column_values(data_type.clone(), array.clone()),
                [
                    format!("\"13:45:07{}\"", fraction(p)),
                    format!(
                        "\"00:00:00{}\"",
                        fraction(p).replace(|c: char| c.is_ascii_digit(), "0")
                    ),
                    format!(
                        "\"23:59:59{}\"",
                        fraction(p).replace(|c: char| c.is_ascii_digit(), "9")
                    ),
                ],
                "TIME({p})"
            );
            let millis = |nanos: i64| {
                let keep = 10i64.pow(9 - p);
                (nanos / keep * keep) / 1_000_000
            };
            assert_eq!(
                column_values_with(data_type, array, EPOCH),
                [
                    (49_507_000 + millis(TIME.1)).to_string(),
                    "0".to_owned(),
                    (86_399_000 + millis(999_999_999)).to_string(),
                ],
                "TIME({p}) epoch"
            );
        }
    }

    fn timestamp_type(precision: u32, utc: bool) -> DataType {
        if utc {
            DataTypes::timestamp_ltz_with_precision(precision)
        } else {
            DataTypes::timestamp_with_precision(precision)
        }
    }

    #[test]
    fn timestamp_and_ltz_print_exactly_their_precision_in_both_formats() {
        for utc in [false, true] {
            let zone = if utc { "Z" } else { "" };
            for p in 0..=9 {
                let data_type = timestamp_type(p, utc);
                let array = timestamp_array(p, utc, &[INSTANT, (0, 0), (-1, 999_999_999)]);
                assert_eq!(
                    column_values(data_type.clone(), array.clone()),
                    [
                        format!("\"2026-11-30T13:45:07{}{zone}\"", fraction(p)),
                        format!(
                            "\"1970-01-01T00:00:00{}{zone}\"",
                            fraction(p).replace(|c: char| c.is_ascii_digit(), "0")
                        ),
                        format!(
                            "\"1969-12-31T23:59:59{}{zone}\"",
                            fraction(p).replace(|c: char| c.is_ascii_digit(), "9")
                        ),
                    ],
                    "{data_type}"
                );
                let keep = 10i64.pow(9 - p);
                let micros = |(s, n): (i64, i64)| s * 1_000_000 + (n / keep * keep) / 1_000;
                assert_eq!(
                    column_values_with(data_type.clone(), array, EPOCH),
                    [
                        micros(INSTANT).to_string(),
                        "0".to_owned(),
                        micros((-1, 999_999_999)).to_string(),
                    ],
                    "{data_type} epoch"
                );
            }
        }
    }

    #[test]
    fn timestamp_far_past_and_far_future() {
        let micros: ArrayRef = Arc::new(TimestampMicrosecondArray::from(vec![
            -1,
            -62_135_596_800_000_000,
            253_402_300_799_999_999,
            253_402_300_800_000_000,
        ]));
        assert_eq!(
            column_values(DataTypes::timestamp_with_precision(6), micros.clone()),
            [
                "\"1969-12-31T23:59:59.999999\"",
                "\"0001-01-01T00:00:00.000000\"",
                "\"9999-12-31T23:59:59.999999\"",
                "\"+10000-01-01T00:00:00.000000\"",
            ]
        );
        assert_eq!(
            column_values_with(DataTypes::timestamp_with_precision(6), micros, EPOCH),
            [
                "-1",
                "-62135596800000000",
                "253402300799999999",
                "253402300800000000"
            ]
        );

        // Nanoseconds reach only 1677..2262; the extremes, and flooring before 1970.
        let nanos: ArrayRef =
            Arc::new(TimestampNanosecondArray::from(vec![i64::MAX, i64::MIN, -1]));
        assert_eq!(
            column_values(DataTypes::timestamp_with_precision(9), nanos.clone()),
            [
                "\"2262-04-11T23:47:16.854775807\"",
                "\"1677-09-21T00:12:43.145224192\"",
                "\"1969-12-31T23:59:59.999999999\"",
            ]
        );
        assert_eq!(
            column_values_with(DataTypes::timestamp_with_precision(9), nanos, EPOCH),
            ["9223372036854775", "-9223372036854776", "-1"]
        );

        // Whole seconds reach far beyond year 9999; epoch micros then exceed i64 but stay exact.
        let seconds: ArrayRef = Arc::new(
            TimestampSecondArray::from(vec![253_402_300_799, i64::MAX / 1_000, i64::MAX])
                .with_timezone("UTC"),
        );
        assert_eq!(
            column_values(DataTypes::timestamp_ltz_with_precision(0), seconds.clone()),
            [
                "\"9999-12-31T23:59:59Z\"",
                "\"+292278994-08-17T07:12:55Z\"",
                "\"+292277026596-12-04T15:30:07Z\"",
            ]
        );
        assert_eq!(
            column_values_with(DataTypes::timestamp_ltz_with_precision(0), seconds, EPOCH),
            [
                "253402300799000000",
                "9223372036854775000000",
                "9223372036854775807000000"
            ]
        );
    }
}
