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

//! Row filters: the `filter` key's small predicate language, checked against the table at
//! open, evaluated exactly on every fetched Arrow batch, and pushed down to the server where
//! fluss-rs can take it.
//!
//! - [`parse`]: the text to a syntax tree (at config parse time, so a typo fails at once);
//! - [`literal`]: a literal's text typed by its column, exactly or not at all;
//! - [`check`]: the tree resolved against the table's columns ([`Filter::new`], at open);
//! - [`eval`]: a checked filter evaluated over an Arrow batch into a mask, with arrow's kernels;
//! - [`select`]: the records of one poll reduced to the matching ones (changelog rules there);
//! - [`pushdown`]: the part of a filter the server can use to skip whole batches.
//!
//! A leaf: it knows the table only as Fluss fields and fetched records, and reports its own
//! errors ([`FilterError`] at open, [`ApplyError`] on fetched records); the source wires it
//! in at open and maps its errors.
//!
//! Semantics are SQL's three-valued logic: a comparison with a NULL column value is unknown,
//! `NOT` of unknown is unknown, and only rows where the whole filter is true are delivered.

pub mod check;
pub mod eval;
pub mod literal;
pub mod parse;
pub mod pushdown;
pub mod select;

use std::sync::Arc;

use arrow_array::{BooleanArray, RecordBatch};
use arrow_schema::ArrowError;
use fluss::metadata::{DataField, RowType};
use snafu::Snafu;

pub use check::Expr;
pub use parse::Ast;

use crate::records::RecordWithoutBatch;

/// A filter that does not parse or does not fit the table: where, and what was expected.
#[derive(Debug, Clone, PartialEq, Eq, Snafu)]
#[snafu(display("`filter`: at column {column}: {message}"))]
pub struct FilterError {
    /// 1-based character column in the filter text.
    pub column: usize,
    /// What is wrong there and what would be accepted.
    pub message: String,
}

impl FilterError {
    fn new(column: usize, message: impl Into<String>) -> Self {
        Self {
            column,
            message: message.into(),
        }
    }
}

/// A checked filter could not be applied to fetched records.
#[derive(Debug, Snafu)]
pub enum ApplyError {
    /// An Arrow kernel refused a fetched batch (its columns are not what the table said at
    /// open).
    #[snafu(display("{cause}"))]
    Arrow {
        /// The kernel's error.
        cause: ArrowError,
    },
    /// fluss-rs handed over a record without its Arrow batch.
    #[snafu(display("{cause}"))]
    WithoutBatch {
        /// Which record.
        cause: RecordWithoutBatch,
    },
    /// fluss-rs refused the compacted rows.
    #[snafu(display("{cause}"))]
    Rows {
        /// The client's error.
        cause: fluss::error::Error,
    },
}

/// The `filter` key as configured: its text and syntax tree, not yet checked against a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterText {
    /// The text, as written.
    pub text: String,
    /// Its syntax tree.
    pub ast: Ast,
}

impl FilterText {
    /// Parses the filter text; a syntax error points at its position.
    pub fn parse(text: &str) -> Result<Self, FilterError> {
        Ok(Self {
            text: text.to_owned(),
            ast: parse::parse(text)?,
        })
    }
}

/// A filter checked against the columns the source reads.
#[derive(Debug, Clone)]
pub struct Filter {
    expr: Expr,
    /// The scanned columns, for the records that point into compacted batches.
    row_type: Arc<RowType>,
    /// Primary-key changelog: update pairs are filtered as one (see [`select`]).
    changelog: bool,
}

impl Filter {
    /// Checks `text` against `scanned` (the columns of the fetched batches, in order) and
    /// `table` (all the table's columns, named in the error for an unknown one).
    pub fn new(
        text: &FilterText,
        scanned: &[DataField],
        table: &[DataField],
        changelog: bool,
    ) -> Result<Self, FilterError> {
        Ok(Self {
            expr: check::check(&text.ast, scanned, table)?,
            row_type: Arc::new(RowType::new(scanned.to_vec())),
            changelog,
        })
    }

    /// The checked expression.
    pub fn expr(&self) -> &Expr {
        &self.expr
    }

    /// Which rows of `batch` match: true where the filter is true, false where it is false
    /// or unknown (no nulls in the result).
    pub fn matches(&self, batch: &RecordBatch) -> Result<BooleanArray, ArrowError> {
        eval::matches(&self.expr, batch)
    }

    /// The rows of `batch` that match (a snapshot's rows, which have no change pairs).
    pub fn retain(&self, batch: &RecordBatch) -> Result<RecordBatch, ArrowError> {
        let mask = self.matches(batch)?;
        arrow_select::filter::filter_record_batch(batch, &mask)
    }
}
