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

//! The part of a filter the server can use: a fluss-rs [`Predicate`] for
//! `TableScan::filter`, with which the server skips whole record batches whose column
//! statistics (`table.statistics.columns`) show no row can match.
//!
//! The server only skips batches, so what it returns is a superset of the matching rows and
//! the source always filters again exactly ([`super::select`]). A pushed predicate may
//! therefore be weaker than the filter, never stronger:
//! - `NOT` is moved down to the comparisons first (the protocol has no negation node): under
//!   three-valued logic `NOT (x < 5)` is exactly `x >= 5`, `NOT (x IN …)` is `x NOT IN …`,
//!   and De Morgan's laws hold;
//! - a condition that cannot be pushed is dropped from an `AND` (the rest still only skips
//!   batches with no match) and makes a whole `OR` unpushable;
//! - FLOAT and DOUBLE conditions are never pushed: the client compares them in arrow's total
//!   order (NaN is a value above +∞), which the server's statistics need not follow;
//! - a literal fluss-rs cannot encode exactly (a DECIMAL beyond 64 bits) is not pushed.

use fluss::metadata::DataType;
use fluss::predicate::{LeafFunction, Literal, Predicate, col};
use fluss::row::{Decimal, TimestampLtz, TimestampNtz};

use super::check::{ColumnRef, Expr};
use super::literal::Value;
use super::parse::CmpOp;

/// The predicate to push down for `expr`, or `None` when no part of it can be pushed.
pub fn predicate(expr: &Expr) -> Option<Predicate> {
    push(expr, false)
}

/// `expr` (negated when `negate`), pushed as far as it can be.
fn push(expr: &Expr, negate: bool) -> Option<Predicate> {
    match (expr, negate) {
        (Expr::Not(inner), _) => push(inner, !negate),
        (Expr::And(a, b), false) | (Expr::Or(a, b), true) => {
            match (push(a, negate), push(b, negate)) {
                (Some(a), Some(b)) => Some(a.and(b)),
                (one, other) => one.or(other),
            }
        }
        (Expr::Or(a, b), false) | (Expr::And(a, b), true) => {
            Some(push(a, negate)?.or(push(b, negate)?))
        }
        (Expr::IsNull { column, negated }, _) => {
            let column = pushable(column)?;
            let name = col(column.name.clone());
            Some(if *negated != negate {
                name.is_not_null()
            } else {
                name.is_null()
            })
        }
        (Expr::Compare { column, op, value }, _) => {
            let column = pushable(column)?;
            let op = if negate { op.negated() } else { *op };
            let name = col(column.name.clone());
            let value = literal(value, &column.data_type)?;
            Some(match op {
                CmpOp::Eq => name.eq(value),
                CmpOp::Ne => name.ne(value),
                CmpOp::Lt => name.lt(value),
                CmpOp::Le => name.le(value),
                CmpOp::Gt => name.gt(value),
                CmpOp::Ge => name.ge(value),
            })
        }
        (
            Expr::In {
                column,
                values,
                negated,
            },
            _,
        ) => {
            let column = pushable(column)?;
            let literals = values
                .iter()
                .map(|v| literal(v, &column.data_type))
                .collect::<Option<Vec<_>>>()?;
            let function = if *negated != negate {
                LeafFunction::NotIn
            } else {
                LeafFunction::In
            };
            Some(Predicate::Leaf {
                field: column.name.clone(),
                function,
                literals,
            })
        }
    }
}

fn pushable(column: &ColumnRef) -> Option<&ColumnRef> {
    (!matches!(column.data_type, DataType::Float(_) | DataType::Double(_))).then_some(column)
}

/// `value` as the fluss-rs literal of the column's type.
fn literal(value: &Value, data_type: &DataType) -> Option<Literal> {
    Some(match (value, data_type) {
        (Value::Bool(v), _) => Literal::Bool(*v),
        (Value::Int(v), DataType::TinyInt(_)) => Literal::Int8(i8::try_from(*v).ok()?),
        (Value::Int(v), DataType::SmallInt(_)) => Literal::Int16(i16::try_from(*v).ok()?),
        (Value::Int(v), DataType::Int(_)) => Literal::Int32(i32::try_from(*v).ok()?),
        (Value::Int(v), _) => Literal::Int64(*v),
        (Value::Decimal(v), DataType::Decimal(d)) => Literal::Decimal(
            Decimal::from_unscaled_long(i64::try_from(*v).ok()?, d.precision(), d.scale()).ok()?,
        ),
        (Value::String(v), _) => Literal::String(v.clone()),
        (Value::Date(v), _) => Literal::Date(*v),
        (Value::Timestamp(v), DataType::Timestamp(t)) => {
            let (millis, nanos) = millis_nanos(*v, t.precision())?;
            Literal::TimestampNtz(TimestampNtz::from_millis_nanos(millis, nanos).ok()?)
        }
        (Value::Timestamp(v), DataType::TimestampLTz(t)) => {
            let (millis, nanos) = millis_nanos(*v, t.precision())?;
            Literal::TimestampLtz(TimestampLtz::from_millis_nanos(millis, nanos).ok()?)
        }
        _ => return None,
    })
}

/// A timestamp in units of `precision` as epoch milliseconds and nanoseconds of that
/// millisecond.
fn millis_nanos(value: i64, precision: u32) -> Option<(i64, i32)> {
    let per_unit: i128 = match precision {
        0 => 1_000_000_000,
        1..=3 => 1_000_000,
        4..=6 => 1_000,
        _ => 1,
    };
    let nanos = i128::from(value) * per_unit;
    let millis = i64::try_from(nanos.div_euclid(1_000_000)).ok()?;
    let rest = i32::try_from(nanos.rem_euclid(1_000_000)).ok()?;
    Some((millis, rest))
}

#[cfg(test)]
mod tests {
    use fluss::metadata::{DataField, DataTypes};

    use super::*;
    use crate::filter::{Filter, FilterText};

    fn pushed(text: &str) -> Option<Predicate> {
        let fields = [
            DataField::new("id", DataTypes::bigint(), None),
            DataField::new("score", DataTypes::double(), None),
            DataField::new("region", DataTypes::string(), None),
            DataField::new("price", DataTypes::decimal(10, 2), None),
            DataField::new("at", DataTypes::timestamp_with_precision(6), None),
        ];
        let filter =
            Filter::new(&FilterText::parse(text).unwrap(), &fields, &fields, false).unwrap();
        predicate(filter.expr())
    }

    #[test]
    fn negation_moves_down_to_the_comparisons() {
        assert_eq!(
            pushed("NOT (id < 5 OR region IN ('eu'))"),
            Some(col("id").ge(5i64).and(Predicate::Leaf {
                field: "region".into(),
                function: LeafFunction::NotIn,
                literals: vec![Literal::String("eu".into())],
            }))
        );
        assert_eq!(pushed("NOT NOT id IS NULL"), Some(col("id").is_null()));
    }

    #[test]
    fn an_unpushable_condition_drops_out_of_and_and_sinks_or() {
        assert_eq!(pushed("score > 1 AND id = 3"), Some(col("id").eq(3i64)));
        assert_eq!(pushed("score > 1 OR id = 3"), None);
        assert_eq!(
            pushed("NOT (score > 1 OR id = 3)"),
            Some(col("id").ne(3i64))
        );
        assert_eq!(pushed("score IS NULL"), None);
    }

    #[test]
    fn literals_take_the_column_type() {
        assert_eq!(
            pushed("price >= 12.5"),
            Some(col("price").ge(Decimal::from_unscaled_long(1250, 10, 2).unwrap()))
        );
        assert_eq!(
            pushed("at < '1970-01-01 00:00:01.000002'"),
            Some(col("at").lt(TimestampNtz::from_millis_nanos(1000, 2000).unwrap()))
        );
        assert_eq!(
            pushed("id = 1 AND region = 'x' AND id != 2"),
            Some(
                col("id")
                    .eq(1i64)
                    .and(col("region").eq("x"))
                    .and(col("id").ne(2i64))
            ),
            "an AND chain stays one n-ary node"
        );
    }
}
