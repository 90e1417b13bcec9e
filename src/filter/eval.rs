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

//! A checked filter evaluated over one Arrow batch into a boolean mask.
//!
//! Vectorised with arrow's own kernels, once per batch, not interpreted row by row:
//! comparisons are `arrow_ord::cmp` against a one-value [`Scalar`], `AND`/`OR` are
//! `arrow_arith::boolean::{and_kleene, or_kleene}` (SQL's three-valued logic: NULL AND FALSE
//! is FALSE, NULL OR TRUE is TRUE), `NOT` keeps NULL, and only the final mask turns NULL into
//! "no match". Literals become scalars of the batch column's own Arrow type each call, so a
//! batch whose column type differs from the table's (schema evolution) still compares.
//!
//! Floating-point columns follow arrow's total order: NaN equals NaN and sorts above +∞, and
//! -0.0 sorts below 0.0.

use std::sync::Arc;

use arrow_arith::boolean::{and_kleene, is_not_null, is_null, not, or_kleene};
use arrow_array::types::{
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType,
};
use arrow_array::{
    Array, ArrayRef, BooleanArray, Date32Array, Decimal128Array, Float32Array, Float64Array,
    Int8Array, Int16Array, Int32Array, Int64Array, LargeStringArray, PrimitiveArray, RecordBatch,
    Scalar, StringArray, StringViewArray,
};
use arrow_ord::cmp;
use arrow_schema::{ArrowError, DataType, TimeUnit};
use arrow_select::filter::prep_null_mask_filter;

use super::check::{ColumnRef, Expr};
use super::literal::Value;
use super::parse::CmpOp;

/// Which rows of `batch` match `expr`: true where it is true; false where it is false or
/// unknown. The result has no nulls.
pub fn matches(expr: &Expr, batch: &RecordBatch) -> Result<BooleanArray, ArrowError> {
    let mask = evaluate(expr, batch)?;
    Ok(if mask.null_count() > 0 {
        prep_null_mask_filter(&mask)
    } else {
        mask
    })
}

/// `expr` over `batch` in three-valued logic: NULL where the result is unknown.
pub fn evaluate(expr: &Expr, batch: &RecordBatch) -> Result<BooleanArray, ArrowError> {
    match expr {
        Expr::And(a, b) => and_kleene(&evaluate(a, batch)?, &evaluate(b, batch)?),
        Expr::Or(a, b) => or_kleene(&evaluate(a, batch)?, &evaluate(b, batch)?),
        Expr::Not(a) => not(&evaluate(a, batch)?),
        Expr::IsNull { column, negated } => {
            let array = column_of(batch, column)?;
            if *negated {
                is_not_null(array.as_ref())
            } else {
                is_null(array.as_ref())
            }
        }
        Expr::Compare { column, op, value } => {
            let array = column_of(batch, column)?;
            compare(*op, array, value)
        }
        Expr::In {
            column,
            values,
            negated,
        } => {
            let array = column_of(batch, column)?;
            let mut any: Option<BooleanArray> = None;
            for value in values {
                let equal = compare(CmpOp::Eq, array, value)?;
                any = Some(match any {
                    None => equal,
                    Some(so_far) => or_kleene(&so_far, &equal)?,
                });
            }
            let any = any.unwrap_or_else(|| BooleanArray::from(vec![false; batch.num_rows()]));
            if *negated { not(&any) } else { Ok(any) }
        }
    }
}

fn column_of<'b>(batch: &'b RecordBatch, column: &ColumnRef) -> Result<&'b ArrayRef, ArrowError> {
    let schema = batch.schema_ref();
    match schema.fields().get(column.index) {
        Some(field) if field.name() == &column.name => Ok(batch.column(column.index)),
        _ => schema
            .index_of(&column.name)
            .map(|index| batch.column(index)),
    }
}

fn compare(op: CmpOp, array: &ArrayRef, value: &Value) -> Result<BooleanArray, ArrowError> {
    let scalar = scalar(value, array.data_type())?;
    match op {
        CmpOp::Eq => cmp::eq(array, &scalar),
        CmpOp::Ne => cmp::neq(array, &scalar),
        CmpOp::Lt => cmp::lt(array, &scalar),
        CmpOp::Le => cmp::lt_eq(array, &scalar),
        CmpOp::Gt => cmp::gt(array, &scalar),
        CmpOp::Ge => cmp::gt_eq(array, &scalar),
    }
}

/// `value` as a one-element array of exactly `data_type`, which the comparison kernels need.
fn scalar(value: &Value, data_type: &DataType) -> Result<Scalar<ArrayRef>, ArrowError> {
    let mismatch = || {
        ArrowError::InvalidArgumentError(format!(
            "the filter literal {value:?} cannot be compared with a column of Arrow type {data_type}"
        ))
    };
    let array: ArrayRef = match (value, data_type) {
        (Value::Bool(v), DataType::Boolean) => Arc::new(BooleanArray::from(vec![*v])),
        (Value::Int(v), DataType::Int8) => Arc::new(Int8Array::from(vec![
            i8::try_from(*v).map_err(|_| mismatch())?,
        ])),
        (Value::Int(v), DataType::Int16) => Arc::new(Int16Array::from(vec![
            i16::try_from(*v).map_err(|_| mismatch())?,
        ])),
        (Value::Int(v), DataType::Int32) => Arc::new(Int32Array::from(vec![
            i32::try_from(*v).map_err(|_| mismatch())?,
        ])),
        (Value::Int(v), DataType::Int64) => Arc::new(Int64Array::from(vec![*v])),
        // The literal was parsed as f64; as f32 it is the FLOAT value the same text gives.
        (Value::Float(v), DataType::Float32) => Arc::new(Float32Array::from(vec![*v as f32])),
        (Value::Float(v), DataType::Float64) => Arc::new(Float64Array::from(vec![*v])),
        (Value::Decimal(v), DataType::Decimal128(precision, scale)) => {
            Arc::new(Decimal128Array::from(vec![*v]).with_precision_and_scale(*precision, *scale)?)
        }
        (Value::String(v), DataType::Utf8) => Arc::new(StringArray::from(vec![v.as_str()])),
        (Value::String(v), DataType::LargeUtf8) => {
            Arc::new(LargeStringArray::from(vec![v.as_str()]))
        }
        (Value::String(v), DataType::Utf8View) => Arc::new(StringViewArray::from(vec![v.as_str()])),
        (Value::Date(v), DataType::Date32) => Arc::new(Date32Array::from(vec![*v])),
        (Value::Timestamp(v), DataType::Timestamp(unit, zone)) => match unit {
            TimeUnit::Second => timestamp::<TimestampSecondType>(*v, zone),
            TimeUnit::Millisecond => timestamp::<TimestampMillisecondType>(*v, zone),
            TimeUnit::Microsecond => timestamp::<TimestampMicrosecondType>(*v, zone),
            TimeUnit::Nanosecond => timestamp::<TimestampNanosecondType>(*v, zone),
        },
        _ => return Err(mismatch()),
    };
    Ok(Scalar::new(array))
}

fn timestamp<T>(value: i64, zone: &Option<Arc<str>>) -> ArrayRef
where
    T: arrow_array::types::ArrowTimestampType,
{
    Arc::new(PrimitiveArray::<T>::from_iter_values([value]).with_timezone_opt(zone.clone()))
}

#[cfg(test)]
mod tests {
    use arrow_schema::{Field, Schema};
    use fluss::metadata::{DataField, DataTypes};

    use super::*;
    use crate::filter::{Filter, FilterText};

    fn batch() -> RecordBatch {
        let schema = Schema::new(vec![
            Field::new("id", DataType::Int64, true),
            Field::new("region", DataType::Utf8, true),
        ]);
        RecordBatch::try_new(
            Arc::new(schema),
            vec![
                Arc::new(Int64Array::from(vec![Some(1), None, Some(3), Some(4)])),
                Arc::new(StringArray::from(vec![
                    Some("eu"),
                    Some("us"),
                    None,
                    Some("eu"),
                ])),
            ],
        )
        .unwrap()
    }

    fn rows(text: &str) -> Vec<bool> {
        let fields = [
            DataField::new("id", DataTypes::bigint(), None),
            DataField::new("region", DataTypes::string(), None),
        ];
        let filter =
            Filter::new(&FilterText::parse(text).unwrap(), &fields, &fields, false).unwrap();
        let mask = filter.matches(&batch()).unwrap();
        assert_eq!(mask.null_count(), 0);
        mask.iter().map(|m| m.unwrap()).collect()
    }

    #[test]
    fn null_comparisons_do_not_match_even_under_not() {
        assert_eq!(rows("id > 1"), [false, false, true, true]);
        assert_eq!(rows("NOT id > 1"), [true, false, false, false]);
        assert_eq!(rows("id NOT IN (1, 4)"), [false, false, true, false]);
        assert_eq!(rows("region != 'eu'"), [false, true, false, false]);
    }

    #[test]
    fn kleene_logic_for_and_and_or() {
        // Row 2: id NULL; row 3: region NULL.
        assert_eq!(rows("id > 0 OR region = 'us'"), [true, true, true, true]);
        assert_eq!(rows("id > 0 AND region = 'eu'"), [true, false, false, true]);
        assert_eq!(
            rows("NOT (id > 0 AND region = 'us')"),
            [true, false, false, true],
            "NOT (TRUE AND NULL) is NULL"
        );
        assert_eq!(
            rows("id IS NULL OR region IS NULL"),
            [false, true, true, false]
        );
    }

    #[test]
    fn a_literal_of_another_type_than_the_batch_column_is_an_error() {
        let error = scalar(&Value::String("x".into()), &DataType::Int32).unwrap_err();
        assert_eq!(
            error.to_string(),
            "Invalid argument error: the filter literal String(\"x\") cannot be compared with a column of Arrow type Int32"
        );
    }
}
