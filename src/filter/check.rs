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

//! The syntax tree checked against the table: every column resolved to its place in the
//! scanned batches and every literal typed by its column ([`super::literal`]).

use fluss::metadata::{DataField, DataType};

use super::FilterError;
use super::literal::{self, Value};
use super::parse::{self, Ast, CmpOp};

/// A column a condition reads.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnRef {
    /// Index of the column in the scanned batches.
    pub index: usize,
    /// Its name.
    pub name: String,
    /// Its Fluss type.
    pub data_type: DataType,
}

/// A checked filter: the tree the evaluator and the pushdown read.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// Both hold.
    And(Box<Expr>, Box<Expr>),
    /// Either holds.
    Or(Box<Expr>, Box<Expr>),
    /// The inner one does not hold (NULL stays NULL).
    Not(Box<Expr>),
    /// `column op value`.
    Compare {
        /// The column.
        column: ColumnRef,
        /// The operator.
        op: CmpOp,
        /// The value, of the column's type.
        value: Value,
    },
    /// `column IS [NOT] NULL`.
    IsNull {
        /// The column.
        column: ColumnRef,
        /// `IS NOT NULL`.
        negated: bool,
    },
    /// `column [NOT] IN (values)`.
    In {
        /// The column.
        column: ColumnRef,
        /// The values, of the column's type.
        values: Vec<Value>,
        /// `NOT IN`.
        negated: bool,
    },
}

/// Checks `ast` against `scanned` (the columns of the fetched batches, in order) and
/// `table` (every column of the table, for a better error when `columns` leaves one out).
pub fn check(ast: &Ast, scanned: &[DataField], table: &[DataField]) -> Result<Expr, FilterError> {
    let recurse = |inner: &Ast| check(inner, scanned, table).map(Box::new);
    Ok(match ast {
        Ast::And(a, b) => Expr::And(recurse(a)?, recurse(b)?),
        Ast::Or(a, b) => Expr::Or(recurse(a)?, recurse(b)?),
        Ast::Not(a) => Expr::Not(recurse(a)?),
        Ast::IsNull { column, negated } => Expr::IsNull {
            column: resolve(column, scanned, table)?,
            negated: *negated,
        },
        Ast::Compare { column, op, value } => {
            let column = comparable(resolve(column, scanned, table)?, column.at)?;
            let value = literal::typed(value, &column.name, &column.data_type)?;
            Expr::Compare {
                column,
                op: *op,
                value,
            }
        }
        Ast::In {
            column,
            values,
            negated,
        } => {
            let column = comparable(resolve(column, scanned, table)?, column.at)?;
            let values = values
                .iter()
                .map(|v| literal::typed(v, &column.name, &column.data_type))
                .collect::<Result<_, _>>()?;
            Expr::In {
                column,
                values,
                negated: *negated,
            }
        }
    })
}

fn resolve(
    column: &parse::Column,
    scanned: &[DataField],
    table: &[DataField],
) -> Result<ColumnRef, FilterError> {
    let Some(index) = scanned.iter().position(|f| f.name() == column.name) else {
        let message = if table.iter().any(|f| f.name() == column.name) {
            format!(
                "column `{}` is not read: `columns` leaves it out; add it to `columns`",
                column.name
            )
        } else {
            let names: Vec<&str> = table.iter().map(DataField::name).collect();
            format!(
                "unknown column `{}`; the table's columns are {}",
                column.name,
                names.join(", ")
            )
        };
        return Err(FilterError::new(column.at, message));
    };
    Ok(ColumnRef {
        index,
        name: column.name.clone(),
        data_type: scanned[index].data_type().clone(),
    })
}

/// `column`, refused unless filters can compare its type (`IS [NOT] NULL` works on every type).
fn comparable(column: ColumnRef, at: usize) -> Result<ColumnRef, FilterError> {
    if literal::comparable(&column.data_type) {
        return Ok(column);
    }
    Err(FilterError::new(
        at,
        format!(
            "column `{}` is {}, which filters cannot compare; compare BOOLEAN, integer, FLOAT, DOUBLE, DECIMAL, CHAR, STRING, DATE or TIMESTAMP columns, or test this one with IS [NOT] NULL",
            column.name,
            literal::type_name(&column.data_type)
        ),
    ))
}

#[cfg(test)]
mod tests {
    use fluss::metadata::DataTypes;

    use super::*;

    fn fields() -> Vec<DataField> {
        vec![
            DataField::new("id", DataTypes::bigint(), None),
            DataField::new("region", DataTypes::string(), None),
            DataField::new("payload", DataTypes::bytes(), None),
        ]
    }

    fn error(text: &str, scanned: &[DataField]) -> String {
        let ast = parse::parse(text).unwrap();
        check(&ast, scanned, &fields()).unwrap_err().to_string()
    }

    #[test]
    fn columns_resolve_to_their_batch_index() {
        let scanned = &fields()[1..];
        let ast = parse::parse("region IN ('eu', 'us') AND payload IS NULL").unwrap();
        let Expr::And(a, b) = check(&ast, scanned, &fields()).unwrap() else {
            panic!("expected AND")
        };
        assert!(matches!(*a, Expr::In { ref column, .. } if column.index == 0));
        assert!(matches!(*b, Expr::IsNull { ref column, .. } if column.index == 1));
    }

    #[test]
    fn errors_name_the_columns_there_are_and_the_column_type() {
        assert_eq!(
            error("id > 1 and regoin = 'eu'", &fields()),
            "`filter`: at column 12: unknown column `regoin`; the table's columns are id, region, payload"
        );
        assert_eq!(
            error("id > 1", &fields()[1..]),
            "`filter`: at column 1: column `id` is not read: `columns` leaves it out; add it to `columns`"
        );
        assert_eq!(
            error("id = 'x'", &fields()),
            "`filter`: at column 6: column `id` is BIGINT; expected an integer from -9223372036854775808 to 9223372036854775807, found 'x'"
        );
        assert_eq!(
            error("region IN ('eu', 3)", &fields()),
            "`filter`: at column 18: column `region` is STRING; expected a 'quoted string', found `3`"
        );
        assert_eq!(
            error("payload = 'x'", &fields()),
            "`filter`: at column 1: column `payload` is BYTES, which filters cannot compare; compare BOOLEAN, integer, FLOAT, DOUBLE, DECIMAL, CHAR, STRING, DATE or TIMESTAMP columns, or test this one with IS [NOT] NULL"
        );
    }
}
