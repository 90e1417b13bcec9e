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

//! Rows of every schema version a snapshot holds, shown in one target version. After an
//! `ALTER TABLE … ADD COLUMN` a bucket's KV store holds rows of the old schema id (written
//! before) next to rows of the new one; Fluss only appends nullable columns, so a row of an
//! older version is the target's leading columns with the rest null, and a row of a newer
//! version (the target pinned by `columns`) has the target's columns first.

use std::collections::BTreeMap;
use std::sync::Arc;

use fluss::error::Result as FlussResult;
use fluss::metadata::{KvFormat, RowType};
use fluss::row::{
    ArrayView, DataGetters, Date, Decimal, InternalRow, MapView, RowDecoder, RowDecoderFactory,
    RowView, Time, TimestampLtz, TimestampNtz,
};

/// A decoder per schema id, each row presented with the target's column count.
#[derive(Clone)]
pub struct Versions {
    decoders: BTreeMap<i16, Arc<dyn RowDecoder>>,
    /// Columns of the target version.
    columns: usize,
}

impl Versions {
    /// Decoders for `row_types` (every version by id, the target's among them) in `kv_format`,
    /// presenting rows with `columns` columns.
    pub fn new(
        kv_format: KvFormat,
        row_types: &BTreeMap<i16, RowType>,
        columns: usize,
    ) -> FlussResult<Self> {
        let decoders = row_types
            .iter()
            .map(|(id, row_type)| {
                Ok((*id, RowDecoderFactory::create(kv_format, row_type.clone())?))
            })
            .collect::<FlussResult<_>>()?;
        Ok(Self { decoders, columns })
    }

    /// The row of schema `id` in `bytes`, shown with the target's columns; `None` for a
    /// schema id the table does not have.
    pub fn decode<'a>(
        &self,
        id: i16,
        bytes: &'a [u8],
    ) -> Option<Resized<impl InternalRow + 'a + use<'a>>> {
        let row = self.decoders.get(&id)?.decode(bytes);
        Some(Resized {
            present: row.get_field_count().min(self.columns),
            columns: self.columns,
            row,
        })
    }
}

/// A row shown with `columns` columns: its first `present` are its own, the others null.
pub struct Resized<R> {
    row: R,
    present: usize,
    columns: usize,
}

macro_rules! delegate {
    ($($name:ident($($arg:ident: $ty:ty),*) -> $out:ty;)*) => {
        $(fn $name(&self, pos: usize $(, $arg: $ty)*) -> FlussResult<$out> {
            self.row.$name(pos $(, $arg)*)
        })*
    };
}

impl<R: InternalRow> DataGetters for Resized<R> {
    fn is_null_at(&self, pos: usize) -> FlussResult<bool> {
        if pos >= self.present {
            return Ok(true);
        }
        self.row.is_null_at(pos)
    }

    delegate! {
        get_boolean() -> bool;
        get_byte() -> i8;
        get_short() -> i16;
        get_int() -> i32;
        get_long() -> i64;
        get_float() -> f32;
        get_double() -> f64;
        get_char(length: usize) -> &str;
        get_string() -> &str;
        get_decimal(precision: usize, scale: usize) -> Decimal;
        get_date() -> Date;
        get_time() -> Time;
        get_timestamp_ntz(precision: u32) -> TimestampNtz;
        get_timestamp_ltz(precision: u32) -> TimestampLtz;
        get_binary(length: usize) -> &[u8];
        get_bytes() -> &[u8];
        get_array() -> ArrayView<'_>;
        get_map() -> MapView<'_>;
        get_row() -> RowView<'_>;
    }
}

impl<R: InternalRow> InternalRow for Resized<R> {
    fn get_field_count(&self) -> usize {
        self.columns
    }
}
