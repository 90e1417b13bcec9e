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

//! COMPACTED values decoded straight into one Arrow builder per column: the decoder of each
//! column is chosen once per schema version, then every value is read in one pass with no
//! allocation per row (as arrow-json's writer picks an encoder per column).
//!
//! fluss-rs's decoder ([`super::versions`]) builds a `GenericRow` (a `Vec` of `Datum`s) per
//! value and appends it to Arrow through `dyn InternalRow`, several times the instructions per
//! row of this decoder (`benches/kv_read.rs` counts the reader's; BENCHMARKS.md, "The KV
//! snapshot reader"). It stays the decoder of the types not listed in [`Kind`] (decimals,
//! times, timestamps, fixed-length binaries, arrays, maps, rows) and of other KV formats.
//!
//! The layout, as Fluss's `CompactedRowWriter` writes it: a null bit per field (bit set =
//! null, only for nullable fields), then each non-null field in order: BOOLEAN and TINYINT one
//! byte, SMALLINT two bytes little endian, INT and DATE an unsigned varint of the value's 32
//! bits, BIGINT one of its 64 bits, FLOAT and DOUBLE 4 and 8 bytes little endian, STRING,
//! CHAR and BYTES a varint length and the bytes.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::builder::{
    ArrayBuilder, BinaryBuilder, BooleanBuilder, Date32Builder, Float32Builder, Float64Builder,
    Int8Builder, Int16Builder, Int32Builder, Int64Builder,
};
use arrow_array::{ArrayRef, RecordBatch, StringArray};
use arrow_schema::{ArrowError, DataType as ArrowType, SchemaRef};
use fluss::metadata::{DataType, RowType};

/// The column types decoded here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Boolean,
    TinyInt,
    SmallInt,
    Int,
    BigInt,
    Float,
    Double,
    String,
    Bytes,
    Date,
}

impl Kind {
    /// The kind of a Fluss type, if decoded here, with the Arrow type fluss-rs gives it (the
    /// changelog's batches have the same).
    fn of(data_type: &DataType) -> Option<(Self, ArrowType)> {
        Some(match data_type {
            DataType::Boolean(_) => (Self::Boolean, ArrowType::Boolean),
            DataType::TinyInt(_) => (Self::TinyInt, ArrowType::Int8),
            DataType::SmallInt(_) => (Self::SmallInt, ArrowType::Int16),
            DataType::Int(_) => (Self::Int, ArrowType::Int32),
            DataType::BigInt(_) => (Self::BigInt, ArrowType::Int64),
            DataType::Float(_) => (Self::Float, ArrowType::Float32),
            DataType::Double(_) => (Self::Double, ArrowType::Float64),
            DataType::Char(_) | DataType::String(_) => (Self::String, ArrowType::Utf8),
            DataType::Bytes(_) => (Self::Bytes, ArrowType::Binary),
            DataType::Date(_) => (Self::Date, ArrowType::Date32),
            _ => return None,
        })
    }
}

/// One column's builder.
enum Column {
    Boolean(BooleanBuilder),
    TinyInt(Int8Builder),
    SmallInt(Int16Builder),
    Int(Int32Builder),
    BigInt(Int64Builder),
    Float(Float32Builder),
    Double(Float64Builder),
    /// Strings as bytes: their UTF-8 is checked once per batch, in [`Column::finish`].
    String(BinaryBuilder),
    Bytes(BinaryBuilder),
    Date(Date32Builder),
}

impl Column {
    fn new(kind: Kind) -> Self {
        match kind {
            Kind::Boolean => Self::Boolean(BooleanBuilder::new()),
            Kind::TinyInt => Self::TinyInt(Int8Builder::new()),
            Kind::SmallInt => Self::SmallInt(Int16Builder::new()),
            Kind::Int => Self::Int(Int32Builder::new()),
            Kind::BigInt => Self::BigInt(Int64Builder::new()),
            Kind::Float => Self::Float(Float32Builder::new()),
            Kind::Double => Self::Double(Float64Builder::new()),
            Kind::String => Self::String(BinaryBuilder::new()),
            Kind::Bytes => Self::Bytes(BinaryBuilder::new()),
            Kind::Date => Self::Date(Date32Builder::new()),
        }
    }

    /// The values appended since the last call; the builder starts over.
    fn finish(&mut self) -> Result<ArrayRef, ArrowError> {
        let builder: &mut dyn ArrayBuilder = match self {
            // One check of the whole batch's bytes (and that each value starts on a character
            // boundary): checking each value on its own was about 6% of the reading's time.
            Self::String(b) => return Ok(Arc::new(StringArray::try_from_binary(b.finish())?)),
            Self::Boolean(b) => b,
            Self::TinyInt(b) => b,
            Self::SmallInt(b) => b,
            Self::Int(b) => b,
            Self::BigInt(b) => b,
            Self::Float(b) => b,
            Self::Double(b) => b,
            Self::Bytes(b) => b,
            Self::Date(b) => b,
        };
        Ok(builder.finish())
    }

    fn append_null(&mut self) {
        match self {
            Self::Boolean(b) => b.append_null(),
            Self::TinyInt(b) => b.append_null(),
            Self::SmallInt(b) => b.append_null(),
            Self::Int(b) => b.append_null(),
            Self::BigInt(b) => b.append_null(),
            Self::Float(b) => b.append_null(),
            Self::Double(b) => b.append_null(),
            Self::String(b) => b.append_null(),
            Self::Bytes(b) => b.append_null(),
            Self::Date(b) => b.append_null(),
        }
    }

    /// Reads the value at `value.at` and appends it.
    fn append(&mut self, value: &mut Cursor<'_>) -> Result<(), String> {
        match self {
            Self::Boolean(b) => b.append_value(value.take::<1>()?[0] != 0),
            Self::TinyInt(b) => b.append_value(value.take::<1>()?[0] as i8),
            Self::SmallInt(b) => b.append_value(i16::from_le_bytes(value.take()?)),
            Self::Int(b) => b.append_value(value.varint(5)? as u32 as i32),
            Self::BigInt(b) => b.append_value(value.varint(10)? as i64),
            Self::Float(b) => b.append_value(f32::from_le_bytes(value.take()?)),
            Self::Double(b) => b.append_value(f64::from_le_bytes(value.take()?)),
            Self::String(b) | Self::Bytes(b) => b.append_value(value.bytes()?),
            Self::Date(b) => b.append_value(value.varint(5)? as u32 as i32),
        }
        Ok(())
    }
}

/// A value being read.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let end = self.at + N;
        let taken = self
            .bytes
            .get(self.at..end)
            .and_then(|s| <[u8; N]>::try_from(s).ok())
            .ok_or_else(|| self.short(N))?;
        self.at = end;
        Ok(taken)
    }

    /// An unsigned varint of at most `max` bytes (5 for 32 bits, 10 for 64).
    fn varint(&mut self, max: usize) -> Result<u64, String> {
        let mut value = 0u64;
        for i in 0..max {
            let byte = *self.bytes.get(self.at).ok_or_else(|| self.short(1))?;
            self.at += 1;
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(format!(
            "a varint longer than {max} bytes at byte {}",
            self.at
        ))
    }

    /// A varint length and that many bytes.
    fn bytes(&mut self) -> Result<&'a [u8], String> {
        let len = self.varint(5)? as u32 as i32;
        let len = usize::try_from(len).map_err(|_| format!("a negative length ({len})"))?;
        let end = self.at + len;
        let bytes = self
            .bytes
            .get(self.at..end)
            .ok_or_else(|| self.short(len))?;
        self.at = end;
        Ok(bytes)
    }

    fn short(&self, wanted: usize) -> String {
        format!(
            "a value of {} bytes ends before the {wanted} bytes at byte {}",
            self.bytes.len(),
            self.at
        )
    }
}

/// How a schema version's values are read.
struct Version {
    /// Bytes of its null bits.
    header: usize,
    /// Whether each of its first fields (those shown) is nullable.
    nullable: Vec<bool>,
}

/// Why a value could not be appended.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// Its schema id is none of the table's.
    Schema(i16),
    /// It is not a COMPACTED row of its schema.
    Corrupt(String),
}

/// Values of every schema version of a table, decoded into the columns of its target version.
pub struct Direct {
    schema: SchemaRef,
    columns: Vec<Column>,
    versions: BTreeMap<i16, Version>,
}

impl Direct {
    /// A decoder into `target`'s columns (with `schema`, fluss-rs's Arrow schema of it) for
    /// values of `versions`; `None` if a column has a type not decoded here, or a version's
    /// columns do not start as the target's do (then fluss-rs's decoder takes the table).
    pub fn new(
        target: &RowType,
        schema: SchemaRef,
        versions: &BTreeMap<i16, RowType>,
    ) -> Option<Self> {
        let mut kinds = Vec::new();
        for (field, arrow) in target.fields().iter().zip(schema.fields()) {
            let (kind, arrow_type) = Kind::of(field.data_type())?;
            if &arrow_type != arrow.data_type() {
                return None;
            }
            kinds.push(kind);
        }
        let versions = versions
            .iter()
            .map(|(id, row_type)| {
                let fields = row_type.fields();
                let shown = fields.len().min(kinds.len());
                for (field, kind) in fields[..shown].iter().zip(&kinds) {
                    if Kind::of(field.data_type()).map(|(k, _)| k) != Some(*kind) {
                        return None;
                    }
                }
                let nullable = fields[..shown]
                    .iter()
                    .map(|f| f.data_type().is_nullable())
                    .collect();
                Some((
                    *id,
                    Version {
                        header: fields.len().div_ceil(8),
                        nullable,
                    },
                ))
            })
            .collect::<Option<_>>()?;
        Some(Self {
            schema,
            columns: kinds.into_iter().map(Column::new).collect(),
            versions,
        })
    }

    /// Appends the value `bytes` of schema `id` as a row. After an error the rows appended
    /// since the last [`Direct::finish`] are not a batch any more: the decoder is dropped.
    pub fn append(&mut self, id: i16, bytes: &[u8]) -> Result<(), Refused> {
        let version = self.versions.get(&id).ok_or(Refused::Schema(id))?;
        let nulls = bytes.get(..version.header).ok_or_else(|| {
            Refused::Corrupt(format!(
                "a value of {} bytes has no room for its null bits",
                bytes.len()
            ))
        })?;
        let mut value = Cursor {
            bytes,
            at: version.header,
        };
        let shown = version.nullable.len();
        for (i, column) in self.columns.iter_mut().enumerate() {
            if i >= shown {
                // A column added after the value was written.
                column.append_null();
            } else if version.nullable[i] && nulls[i >> 3] & (1 << (i & 7)) != 0 {
                column.append_null();
            } else {
                column.append(&mut value).map_err(Refused::Corrupt)?;
            }
        }
        Ok(())
    }

    /// The rows appended since the last call, as one batch; the builders start over.
    pub fn finish(&mut self) -> Result<RecordBatch, arrow_schema::ArrowError> {
        // Every builder starts over, also when a column is refused.
        let arrays: Vec<_> = self.columns.iter_mut().map(Column::finish).collect();
        let arrays = arrays.into_iter().collect::<Result<Vec<_>, _>>()?;
        RecordBatch::try_new(Arc::clone(&self.schema), arrays)
    }
}

#[cfg(test)]
mod tests {
    use arrow_array::Array;
    use arrow_array::cast::AsArray;
    use arrow_array::types::{
        Date32Type, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type,
    };
    use fluss::metadata::{DataField, DataTypes, KvFormat};
    use fluss::record::{RowAppendRecordBatchBuilder, to_arrow_schema};
    use fluss::row::encode::{RowEncoder, RowEncoderFactory};
    use fluss::row::{Date, Datum, RowDecoderFactory};

    use super::*;

    /// Every type decoded here, nullable, and two of them NOT NULL.
    fn every_type() -> RowType {
        RowType::new(vec![
            DataField::new("id", DataTypes::bigint().as_non_nullable(), None),
            DataField::new("b", DataTypes::boolean(), None),
            DataField::new("t", DataTypes::tinyint(), None),
            DataField::new("s", DataTypes::smallint(), None),
            DataField::new("i", DataTypes::int(), None),
            DataField::new("f", DataTypes::float(), None),
            DataField::new("d", DataTypes::double(), None),
            DataField::new("name", DataTypes::string(), None),
            DataField::new("c", DataTypes::char(3), None),
            DataField::new("bytes", DataTypes::bytes(), None),
            DataField::new("day", DataTypes::date().as_non_nullable(), None),
        ])
    }

    /// Row `n`: extreme and ordinary values in turn, every nullable column null when `n % 5 == 4`.
    fn datum(n: i64, column: usize) -> Datum<'static> {
        let null = n % 5 == 4 && column != 0 && column != 10;
        if null {
            return Datum::Null;
        }
        let wide = n % 2 == 0;
        match column {
            0 => Datum::from(if wide { i64::MIN + n } else { n }),
            1 => Datum::from(n % 3 == 0),
            2 => Datum::from(if wide { i8::MIN } else { n as i8 }),
            3 => Datum::from(if wide { i16::MIN } else { -(n as i16) }),
            4 => Datum::from(if wide { i32::MIN } else { n as i32 * 1000 }),
            5 => Datum::from(n as f32 / 3.0),
            6 => Datum::from(if wide { f64::MAX } else { -(n as f64) / 7.0 }),
            7 => Datum::from(format!("name-{n}-é{}", "x".repeat(n as usize % 200))),
            8 => Datum::from("abc"),
            9 => Datum::Blob(vec![n as u8; n as usize % 300].into()),
            _ => Datum::Date(Date::new(if wide {
                -(n as i32)
            } else {
                19_000 + n as i32
            })),
        }
    }

    fn encode(row_type: &RowType, n: i64) -> Vec<u8> {
        let mut encoder = RowEncoderFactory::create(KvFormat::COMPACTED, row_type.clone()).unwrap();
        encoder.start_new_row().unwrap();
        for column in 0..row_type.fields().len() {
            encoder.encode_field(column, datum(n, column)).unwrap();
        }
        encoder.finish_row().unwrap().to_vec()
    }

    /// The same values decoded by fluss-rs's decoder, as the snapshot reader did before.
    fn by_fluss(row_type: &RowType, values: &[Vec<u8>]) -> RecordBatch {
        let decoder = RowDecoderFactory::create(KvFormat::COMPACTED, row_type.clone()).unwrap();
        let mut builder = RowAppendRecordBatchBuilder::new(row_type).unwrap();
        for value in values {
            builder.append(&decoder.decode(value)).unwrap();
        }
        Arc::unwrap_or_clone(builder.build_arrow_record_batch().unwrap())
    }

    fn direct(row_type: &RowType, versions: BTreeMap<i16, RowType>) -> Direct {
        Direct::new(row_type, to_arrow_schema(row_type).unwrap(), &versions).unwrap()
    }

    #[test]
    fn every_type_decodes_as_fluss_rs_decodes_it() {
        let row_type = every_type();
        let values: Vec<Vec<u8>> = (0..500).map(|n| encode(&row_type, n)).collect();
        let mut decoder = direct(&row_type, BTreeMap::from([(1, row_type.clone())]));
        for value in &values {
            decoder.append(1, value).unwrap();
        }
        let ours = decoder.finish().unwrap();
        assert_eq!(ours, by_fluss(&row_type, &values));
        assert_eq!(ours.num_rows(), 500);
        assert_eq!(ours.column(7).null_count(), 100, "every fifth row is null");
        let next = decoder.finish().unwrap();
        assert_eq!(next.num_rows(), 0, "the builders start over");
        // Spot checks that the comparison above is not vacuous.
        assert_eq!(ours.column(0).as_primitive::<Int64Type>().value(1), 1);
        assert_eq!(ours.column(2).as_primitive::<Int8Type>().value(0), i8::MIN);
        assert_eq!(ours.column(3).as_primitive::<Int16Type>().value(3), -3);
        assert_eq!(
            ours.column(4).as_primitive::<Int32Type>().value(2),
            i32::MIN
        );
        assert_eq!(ours.column(5).as_primitive::<Float32Type>().value(3), 1.0);
        assert_eq!(
            ours.column(6).as_primitive::<Float64Type>().value(0),
            f64::MAX
        );
        assert_eq!(ours.column(7).as_string::<i32>().value(1), "name-1-éx");
        assert_eq!(ours.column(9).as_binary::<i32>().value(2), [2, 2]);
        assert_eq!(
            ours.column(10).as_primitive::<Date32Type>().value(1),
            19_001
        );
    }

    #[test]
    fn older_rows_have_added_columns_null_and_newer_rows_show_the_target_columns() {
        // Fluss adds nullable columns only: `day` (NOT NULL) stays out.
        let full = RowType::new(every_type().fields()[..10].to_vec());
        let old = RowType::new(full.fields()[..4].to_vec());
        let values: Vec<(i16, Vec<u8>)> = (0..40)
            .map(|n| {
                if n % 2 == 0 {
                    (1, encode(&old, n))
                } else {
                    (2, encode(&full, n))
                }
            })
            .collect();
        let versions = BTreeMap::from([(1, old.clone()), (2, full.clone())]);
        let mut newest = direct(&full, versions.clone());
        for (id, value) in &values {
            newest.append(*id, value).unwrap();
        }
        let batch = newest.finish().unwrap();
        let ints = batch.column(4).as_primitive::<Int32Type>();
        assert!(
            ints.is_null(0) && ints.is_valid(1),
            "old rows: added column null"
        );
        assert_eq!(
            batch.column(3).as_primitive::<Int16Type>().value(2),
            i16::MIN
        );
        // Pinned to the old version: rows of the new one show its first 4 columns.
        let mut pinned = direct(&old, versions);
        for (id, value) in &values {
            pinned.append(*id, value).unwrap();
        }
        let batch = pinned.finish().unwrap();
        assert_eq!(batch.num_columns(), 4);
        assert_eq!(batch.column(0).as_primitive::<Int64Type>().value(3), 3);
    }

    #[test]
    fn a_short_value_an_unknown_schema_and_bad_utf8_are_refused() {
        let row_type = every_type();
        let mut decoder = direct(&row_type, BTreeMap::from([(1, row_type.clone())]));
        let value = encode(&row_type, 1);
        assert!(matches!(
            decoder.append(1, &value[..value.len() - 1]),
            Err(Refused::Corrupt(_))
        ));
        assert!(matches!(decoder.append(1, &[]), Err(Refused::Corrupt(_))));
        assert_eq!(decoder.append(9, &value), Err(Refused::Schema(9)));
        let text = RowType::new(vec![DataField::new("s", DataTypes::string(), None)]);
        let mut decoder = direct(&text, BTreeMap::from([(1, text.clone())]));
        decoder.append(1, &[0, 2, 0xff, 0xfe]).unwrap();
        let cause = decoder.finish().expect_err("invalid UTF-8 accepted");
        assert!(cause.to_string().contains("utf-8"), "{cause}");
        decoder.append(1, &[0, 2, b'o', b'k']).unwrap();
        let next = decoder.finish().unwrap();
        assert_eq!(next.num_rows(), 1, "the builders started over");
    }

    #[test]
    fn types_not_decoded_here_leave_the_table_to_fluss_rs() {
        let with_decimal = RowType::new(vec![
            DataField::new("id", DataTypes::bigint(), None),
            DataField::new("price", DataTypes::decimal(10, 2), None),
        ]);
        let schema = to_arrow_schema(&with_decimal).unwrap();
        let versions = BTreeMap::from([(1, with_decimal.clone())]);
        assert!(Direct::new(&with_decimal, schema, &versions).is_none());
    }
}
