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

//! The one place that matches Fluss types against Arrow arrays: each column gets its encoder
//! here, once per record batch; an unsupported pairing fails here, never in the row loop.

use arrow_array::Array;
use fluss::metadata::DataType;

use super::{
    EncodeError, FieldsEncoder, JsonOptions, NullableEncoder, ValueEncoder, nested, temporal,
    values,
};
use crate::config::options::{DecimalFormat, TemporalFormat};

/// The one place that matches Fluss types against Arrow arrays and picks an encoder.
pub(super) fn make_encoder<'a>(
    path: &str,
    data_type: &DataType,
    array: &'a dyn Array,
    options: JsonOptions,
) -> Result<NullableEncoder<'a>, EncodeError> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::*;
    use arrow_schema::{DataType as A, TimeUnit};

    let mismatch = || EncodeError::mismatch(path, data_type, array.data_type());
    let epoch = options.temporal == TemporalFormat::Epoch;

    let encoder: Box<dyn ValueEncoder + 'a> = match (data_type, array.data_type()) {
        (DataType::Boolean(_), A::Boolean) => Box::new(values::BooleanEncoder(
            array.as_boolean_opt().ok_or_else(mismatch)?,
        )),
        (DataType::TinyInt(_), A::Int8) => {
            values::integer::<Int8Type>(array).ok_or_else(mismatch)?
        }
        (DataType::SmallInt(_), A::Int16) => {
            values::integer::<Int16Type>(array).ok_or_else(mismatch)?
        }
        (DataType::Int(_), A::Int32) => values::integer::<Int32Type>(array).ok_or_else(mismatch)?,
        (DataType::BigInt(_), A::Int64) => {
            values::integer::<Int64Type>(array).ok_or_else(mismatch)?
        }
        (DataType::Float(_), A::Float32) => {
            values::float::<Float32Type>(array).ok_or_else(mismatch)?
        }
        (DataType::Double(_), A::Float64) => {
            values::float::<Float64Type>(array).ok_or_else(mismatch)?
        }
        (DataType::Char(_) | DataType::String(_), A::Utf8) => Box::new(values::StringEncoder::new(
            array.as_string_opt::<i32>().ok_or_else(mismatch)?,
        )),
        (DataType::Decimal(d), A::Decimal128(p, s))
            if u32::from(*p) == d.precision() && i64::from(*s) == i64::from(d.scale()) =>
        {
            let values = array
                .as_primitive_opt::<Decimal128Type>()
                .ok_or_else(mismatch)?
                .values();
            let scale = usize::from(s.unsigned_abs());
            match options.decimal {
                DecimalFormat::String => {
                    Box::new(values::DecimalEncoder::<true>::new(values, scale))
                }
                DecimalFormat::Number => {
                    Box::new(values::DecimalEncoder::<false>::new(values, scale))
                }
            }
        }
        (DataType::Date(_), A::Date32) => {
            let values = array
                .as_primitive_opt::<Date32Type>()
                .ok_or_else(mismatch)?;
            if epoch {
                Box::new(values::IntegerEncoder(values.values()))
            } else {
                Box::new(temporal::DateIso(values.values()))
            }
        }
        (DataType::Time(t), A::Time32(unit) | A::Time64(unit))
            if *unit == time_unit(t.precision()) && valid_time_storage(array.data_type()) =>
        {
            let precision = digits(t.precision());
            match unit {
                TimeUnit::Second => temporal::time::<1, _>(
                    array
                        .as_primitive_opt::<Time32SecondType>()
                        .ok_or_else(mismatch)?
                        .values(),
                    precision,
                    epoch,
                ),
                TimeUnit::Millisecond => temporal::time::<1_000, _>(
                    array
                        .as_primitive_opt::<Time32MillisecondType>()
                        .ok_or_else(mismatch)?
                        .values(),
                    precision,
                    epoch,
                ),
                TimeUnit::Microsecond => temporal::time::<1_000_000, _>(
                    array
                        .as_primitive_opt::<Time64MicrosecondType>()
                        .ok_or_else(mismatch)?
                        .values(),
                    precision,
                    epoch,
                ),
                TimeUnit::Nanosecond => temporal::time::<1_000_000_000, _>(
                    array
                        .as_primitive_opt::<Time64NanosecondType>()
                        .ok_or_else(mismatch)?
                        .values(),
                    precision,
                    epoch,
                ),
            }
        }
        // The zone annotation is not compared: the stored i64 is the same either way, and the
        // Fluss type (LTZ or not) decides whether the text ends in `Z`.
        (DataType::Timestamp(t), A::Timestamp(unit, _)) if *unit == time_unit(t.precision()) => {
            timestamp(array, *unit, digits(t.precision()), false, epoch).ok_or_else(mismatch)?
        }
        (DataType::TimestampLTz(t), A::Timestamp(unit, _)) if *unit == time_unit(t.precision()) => {
            timestamp(array, *unit, digits(t.precision()), true, epoch).ok_or_else(mismatch)?
        }
        (DataType::Bytes(_), A::Binary) => Box::new(values::BinaryEncoder::new(
            array.as_binary_opt::<i32>().ok_or_else(mismatch)?,
        )),
        (DataType::Binary(b), A::FixedSizeBinary(n)) if usize::try_from(*n) == Ok(b.length()) => {
            Box::new(values::FixedBinaryEncoder(
                array.as_fixed_size_binary_opt().ok_or_else(mismatch)?,
            ))
        }
        (DataType::Array(a), A::List(_)) => {
            let list = array.as_list_opt::<i32>().ok_or_else(mismatch)?;
            let element = make_encoder(
                &format!("{path}[]"),
                a.get_element_type(),
                list.values().as_ref(),
                options,
            )?;
            Box::new(nested::ListEncoder::new(list.value_offsets(), element))
        }
        (DataType::Map(m), A::Map(_, _)) => {
            let map = array.as_map_opt().ok_or_else(mismatch)?;
            let value = make_encoder(
                &format!("{path}{{value}}"),
                m.value_type(),
                map.values().as_ref(),
                options,
            )?;
            let key_path = format!("{path}{{key}}");
            match m.key_type() {
                DataType::String(_) | DataType::Char(_) => {
                    let keys = map.keys().as_string_opt::<i32>().ok_or_else(|| {
                        EncodeError::mismatch(&key_path, m.key_type(), map.keys().data_type())
                    })?;
                    Box::new(nested::MapObjectEncoder::new(
                        map.value_offsets(),
                        keys,
                        value,
                    ))
                }
                key_type => {
                    let key = make_encoder(&key_path, key_type, map.keys().as_ref(), options)?;
                    Box::new(nested::MapEntriesEncoder::new(
                        map.value_offsets(),
                        key,
                        value,
                    ))
                }
            }
        }
        (DataType::Row(r), A::Struct(arrow_fields)) if arrow_fields.len() == r.fields().len() => {
            let row = array.as_struct_opt().ok_or_else(mismatch)?;
            let columns: Vec<&'a dyn Array> = row.columns().iter().map(|c| c.as_ref()).collect();
            Box::new(nested::RowObjectEncoder(FieldsEncoder::try_new(
                Some(path),
                r.fields(),
                &columns,
                options,
            )?))
        }
        _ => return Err(mismatch()),
    };
    Ok(NullableEncoder {
        encoder,
        nulls: array.nulls().filter(|n| n.null_count() > 0),
    })
}

/// The Arrow unit `to_arrow_type` stores a TIME/TIMESTAMP of this precision in.
fn time_unit(precision: u32) -> arrow_schema::TimeUnit {
    use arrow_schema::TimeUnit;
    match precision {
        0 => TimeUnit::Second,
        1..=3 => TimeUnit::Millisecond,
        4..=6 => TimeUnit::Microsecond,
        _ => TimeUnit::Nanosecond,
    }
}

/// Arrow only defines Time32 for s/ms and Time64 for µs/ns.
fn valid_time_storage(data_type: &arrow_schema::DataType) -> bool {
    use arrow_schema::{DataType as A, TimeUnit};
    matches!(
        data_type,
        A::Time32(TimeUnit::Second | TimeUnit::Millisecond)
            | A::Time64(TimeUnit::Microsecond | TimeUnit::Nanosecond)
    )
}

/// Fraction digits to print; Fluss caps precision at 9, and so does the nanosecond unit.
fn digits(precision: u32) -> usize {
    precision.min(9) as usize
}

fn timestamp<'a>(
    array: &'a dyn Array,
    unit: arrow_schema::TimeUnit,
    precision: usize,
    utc: bool,
    epoch: bool,
) -> Option<Box<dyn ValueEncoder + 'a>> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::*;
    use arrow_schema::TimeUnit;
    Some(match unit {
        TimeUnit::Second => temporal::timestamp::<1>(
            array.as_primitive_opt::<TimestampSecondType>()?.values(),
            precision,
            utc,
            epoch,
        ),
        TimeUnit::Millisecond => temporal::timestamp::<1_000>(
            array
                .as_primitive_opt::<TimestampMillisecondType>()?
                .values(),
            precision,
            utc,
            epoch,
        ),
        TimeUnit::Microsecond => temporal::timestamp::<1_000_000>(
            array
                .as_primitive_opt::<TimestampMicrosecondType>()?
                .values(),
            precision,
            utc,
            epoch,
        ),
        TimeUnit::Nanosecond => temporal::timestamp::<1_000_000_000>(
            array
                .as_primitive_opt::<TimestampNanosecondType>()?
                .values(),
            precision,
            utc,
            epoch,
        ),
    })
}
