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

//! JSON rows from Arrow record batches: one JSON object per row, each its own payload.
//!
//! Design (after arrow-json's writer): [`factory::make_encoder`] is the only `match` on types; it pairs
//! each column's Fluss type with its Arrow array once per batch and returns a small encoder that
//! writes one non-null value. Nulls are checked next to the encoder, and not at all for
//! null-free columns. Field names are escaped once per batch into `"name":` prefixes.
//!
//! Approach kept: this hand-written encoder, not arrow-json with custom encoders. Plain
//! arrow-json is about 3x slower on our rows, and matching the contract (NaN strings, base64,
//! decimal text, Fluss-precision temporals) would need an `EncoderFactory` for most types on
//! top of its per-row field-name escaping. Figures: BENCHMARKS.md, `benches/json_encode.rs`.

mod digits;
mod factory;
mod nested;
mod temporal;
mod values;

use factory::make_encoder;

use std::fmt;

use arrow_array::{Array, RecordBatch};
use arrow_buffer::NullBuffer;
use fluss::metadata::{DataField, DataType};

use crate::config::options::JsonOptions;

/// A column the encoder cannot handle; raised while building a [`RowEncoder`], never per row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EncodeError {
    kind: ErrorKind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum ErrorKind {
    TypeMismatch {
        column: String,
        fluss_type: String,
        arrow_type: String,
    },
    ColumnCount {
        fields: usize,
        columns: usize,
    },
}

impl EncodeError {
    fn mismatch(column: &str, fluss_type: &DataType, arrow_type: &arrow_schema::DataType) -> Self {
        Self {
            kind: ErrorKind::TypeMismatch {
                column: column.to_owned(),
                fluss_type: fluss_type.to_string(),
                arrow_type: arrow_type.to_string(),
            },
        }
    }
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ErrorKind::TypeMismatch {
                column,
                fluss_type,
                arrow_type,
            } => write!(
                f,
                "column `{column}`: Fluss type {fluss_type} cannot be read from Arrow type \
                 {arrow_type}; the record batch does not follow the table's row type"
            ),
            ErrorKind::ColumnCount { fields, columns } => write!(
                f,
                "the row type has {fields} fields but the record batch has {columns} columns; \
                 pass the fields of the (projected) row type the batch was read with"
            ),
        }
    }
}

impl std::error::Error for EncodeError {}

/// Writes one non-null value; nulls are handled by [`NullableEncoder`] around it.
trait ValueEncoder {
    fn encode(&mut self, idx: usize, out: &mut Vec<u8>);
}

/// An encoder plus its array's validity, kept side by side so the null check needs no virtual
/// call; `nulls` is `None` for null-free arrays so they skip the bitmap entirely.
struct NullableEncoder<'a> {
    encoder: Box<dyn ValueEncoder + 'a>,
    nulls: Option<&'a NullBuffer>,
}

impl NullableEncoder<'_> {
    #[inline]
    fn encode(&mut self, idx: usize, out: &mut Vec<u8>) {
        if let Some(nulls) = self.nulls
            && nulls.is_null(idx)
        {
            out.extend_from_slice(b"null");
            return;
        }
        self.encoder.encode(idx, out);
    }
}

/// One field of an object: its pre-rendered `,"name":` and its value encoder.
struct FieldEncoder<'a> {
    prefix: Prefix,
    value: NullableEncoder<'a>,
}

/// A field's `,"name":`; short ones live in a fixed block so writing them is a fixed-size copy
/// (see `digits`), not a `memcpy` call per field per row.
enum Prefix {
    Short([u8; Prefix::SHORT], usize),
    Long(Box<[u8]>),
}

impl Prefix {
    const SHORT: usize = 32;

    fn new(text: &[u8]) -> Self {
        let mut block = [0u8; Self::SHORT];
        match block.get_mut(..text.len()) {
            Some(head) => {
                head.copy_from_slice(text);
                Self::Short(block, text.len())
            }
            None => Self::Long(text.into()),
        }
    }

    fn len(&self) -> usize {
        match self {
            Self::Short(_, len) => *len,
            Self::Long(text) => text.len(),
        }
    }

    #[inline]
    fn write(&self, out: &mut Vec<u8>) {
        match self {
            Self::Short(block, len) => digits::put_block(out, block, *len),
            Self::Long(text) => out.extend_from_slice(text),
        }
    }
}

/// The `"a":1,"b":2` body shared by top-level rows and nested ROW values.
struct FieldsEncoder<'a> {
    fields: Vec<FieldEncoder<'a>>,
}

impl<'a> FieldsEncoder<'a> {
    fn try_new(
        parent: Option<&str>,
        fields: &[DataField],
        columns: &[&'a dyn Array],
        options: JsonOptions,
    ) -> Result<Self, EncodeError> {
        let fields = fields
            .iter()
            .zip(columns)
            .enumerate()
            .map(|(i, (field, column))| {
                let path = match parent {
                    Some(parent) => format!("{parent}.{}", field.name()),
                    None => field.name().to_owned(),
                };
                let mut prefix = Vec::with_capacity(field.name().len() + 4);
                if i > 0 {
                    prefix.push(b',');
                }
                write_json_string(&mut prefix, field.name());
                prefix.push(b':');
                Ok(FieldEncoder {
                    prefix: Prefix::new(&prefix),
                    value: make_encoder(&path, field.data_type(), *column, options)?,
                })
            })
            .collect::<Result<Vec<_>, EncodeError>>()?;
        Ok(Self { fields })
    }

    #[inline]
    fn encode(&mut self, idx: usize, out: &mut Vec<u8>) {
        for field in &mut self.fields {
            field.prefix.write(out);
            field.value.encode(idx, out);
        }
    }
}

/// Encodes the rows of one record batch as JSON objects; build one per batch.
pub struct RowEncoder<'a> {
    fields: FieldsEncoder<'a>,
    /// Length of the last object written (fields plus braces), the base of [`Self::size_hint`].
    last_len: usize,
}

impl<'a> RowEncoder<'a> {
    /// Pairs each Fluss field with its column: `fields[i]` describes `batch.column(i)`.
    ///
    /// Fails if the lengths differ or a column's Arrow type is not what the Fluss type maps to
    /// (the mapping of `fluss::record::to_arrow_type`; nested field names and nullability flags
    /// are not compared, as the Fluss type is what names and renders them).
    pub fn try_new(
        fields: &[DataField],
        batch: &'a RecordBatch,
        options: JsonOptions,
    ) -> Result<Self, EncodeError> {
        if fields.len() != batch.num_columns() {
            return Err(EncodeError {
                kind: ErrorKind::ColumnCount {
                    fields: fields.len(),
                    columns: batch.num_columns(),
                },
            });
        }
        let columns: Vec<&'a dyn Array> = batch.columns().iter().map(|c| c.as_ref()).collect();
        let fields = FieldsEncoder::try_new(None, fields, &columns, options)?;
        // Before any row is written, guess from the names plus a typical value width.
        let last_len = 2 + fields
            .fields
            .iter()
            .map(|f| f.prefix.len() + 8)
            .sum::<usize>();
        Ok(Self { fields, last_len })
    }

    /// Appends `"a":1,"b":"x"` for `row`, without braces, so callers can wrap the fields in an
    /// envelope or add their own next to them.
    ///
    /// `row` must be below the batch's row count; no check is made per row.
    pub fn write_fields(&mut self, row: usize, out: &mut Vec<u8>) {
        let start = out.len();
        self.fields.encode(row, out);
        self.last_len = out.len() - start + 2;
    }

    /// Appends `{…}` for `row`.
    pub fn write_object(&mut self, row: usize, out: &mut Vec<u8>) {
        out.push(b'{');
        self.write_fields(row, out);
        out.push(b'}');
    }

    /// A capacity for the next row's payload: the last object's length plus an eighth, so a
    /// slightly longer row still fits without the `Vec` growing (and copying) once more, plus
    /// the 64-byte stack blocks that short values are copied in as whole (see `digits`).
    pub fn size_hint(&self) -> usize {
        self.last_len + self.last_len / 8 + 64
    }
}

/// Appends `s` as a JSON string literal: quotes, and escapes for `"`, `\` and control
/// characters; everything else, including non-ASCII UTF-8, is copied as is.
pub fn write_json_string(out: &mut Vec<u8>, s: &str) {
    values::write_json_bytes(out, s.as_bytes());
}

#[cfg(test)]
mod test_support;

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{
        ArrayRef, BooleanArray, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray,
        TimestampMicrosecondArray,
    };
    use fluss::metadata::DataTypes;

    use super::test_support::rows;
    use super::{JsonOptions, RowEncoder};

    #[test]
    fn fields_keep_column_order_and_names_are_escaped() {
        let fields = [
            DataTypes::field("z", DataTypes::int()),
            DataTypes::field("a \"quoted\"\nname", DataTypes::string()),
            DataTypes::field("ünï", DataTypes::boolean()),
            DataTypes::field("m", DataTypes::double()),
        ];
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int32Array::from(vec![Some(1), None])),
            Arc::new(StringArray::from(vec![Some("x"), None])),
            Arc::new(BooleanArray::from(vec![None, Some(false)])),
            Arc::new(Float64Array::from(vec![Some(f64::NAN), None])),
        ];
        assert_eq!(
            rows(&fields, columns),
            [
                r#"{"z":1,"a \"quoted\"\nname":"x","ünï":null,"m":"NaN"}"#,
                r#"{"z":null,"a \"quoted\"\nname":null,"ünï":false,"m":null}"#,
            ]
        );
    }

    #[test]
    fn write_fields_appends_without_braces_after_existing_bytes() {
        let fields = [
            DataTypes::field("a", DataTypes::int()),
            DataTypes::field("b", DataTypes::string()),
        ];
        let batch = RecordBatch::try_from_iter([
            ("a", Arc::new(Int32Array::from(vec![7])) as ArrayRef),
            ("b", Arc::new(StringArray::from(vec!["x"])) as ArrayRef),
        ])
        .unwrap();
        let mut encoder = RowEncoder::try_new(&fields, &batch, JsonOptions::default()).unwrap();
        let mut out = b"{\"op\":\"c\",\"after\":{".to_vec();
        encoder.write_fields(0, &mut out);
        out.extend_from_slice(b"}}");
        assert_eq!(out, br#"{"op":"c","after":{"a":7,"b":"x"}}"#);
    }

    #[test]
    fn an_empty_row_type_is_an_empty_object() {
        let batch = RecordBatch::try_new_with_options(
            Arc::new(arrow_schema::Schema::empty()),
            vec![],
            &arrow_array::RecordBatchOptions::new().with_row_count(Some(1)),
        )
        .unwrap();
        let mut encoder = RowEncoder::try_new(&[], &batch, JsonOptions::default()).unwrap();
        let mut out = Vec::new();
        encoder.write_object(0, &mut out);
        assert_eq!(out, b"{}");
    }

    #[test]
    fn sliced_batches_read_the_right_rows() {
        let fields = [
            DataTypes::field("i", DataTypes::bigint()),
            DataTypes::field("s", DataTypes::string()),
        ];
        let batch = RecordBatch::try_from_iter([
            (
                "i",
                Arc::new(Int64Array::from(vec![Some(0), None, Some(2), Some(3)])) as ArrayRef,
            ),
            (
                "s",
                Arc::new(StringArray::from(vec![
                    Some("a"),
                    Some("b"),
                    None,
                    Some("d"),
                ])) as ArrayRef,
            ),
        ])
        .unwrap()
        .slice(1, 3);
        let mut encoder = RowEncoder::try_new(&fields, &batch, JsonOptions::default()).unwrap();
        let got: Vec<String> = (0..batch.num_rows())
            .map(|row| {
                let mut out = Vec::new();
                encoder.write_object(row, &mut out);
                String::from_utf8(out).unwrap()
            })
            .collect();
        assert_eq!(
            got,
            [
                r#"{"i":null,"s":"b"}"#,
                r#"{"i":2,"s":null}"#,
                r#"{"i":3,"s":"d"}"#
            ]
        );
    }

    #[test]
    fn size_hint_follows_the_previous_row() {
        let fields = [DataTypes::field("s", DataTypes::string())];
        let long = "x".repeat(1000);
        let batch = RecordBatch::try_from_iter([(
            "s",
            Arc::new(StringArray::from(vec!["", long.as_str()])) as ArrayRef,
        )])
        .unwrap();
        let mut encoder = RowEncoder::try_new(&fields, &batch, JsonOptions::default()).unwrap();
        assert!(encoder.size_hint() >= b"{\"s\":\"\"}".len());
        let mut out = Vec::new();
        encoder.write_object(1, &mut out);
        assert!(encoder.size_hint() >= out.len());
    }

    fn refusal(fields: &[fluss::metadata::DataField], columns: Vec<(&str, ArrayRef)>) -> String {
        let batch = RecordBatch::try_from_iter(columns).unwrap();
        let result = RowEncoder::try_new(fields, &batch, JsonOptions::default());
        match result {
            Ok(_) => panic!("accepted a batch that does not match the row type"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn a_column_of_the_wrong_arrow_type_is_refused_naming_it() {
        let message = refusal(
            &[DataTypes::field("id", DataTypes::bigint())],
            vec![("id", Arc::new(Int32Array::from(vec![1])))],
        );
        assert_eq!(
            message,
            "column `id`: Fluss type BIGINT cannot be read from Arrow type Int32; \
             the record batch does not follow the table's row type"
        );
    }

    #[test]
    fn a_timestamp_in_another_unit_than_its_precision_is_refused() {
        // TIMESTAMP(2) is stored in milliseconds; microseconds mean a different schema.
        let message = refusal(
            &[DataTypes::field(
                "ts",
                DataTypes::timestamp_with_precision(2),
            )],
            vec![("ts", Arc::new(TimestampMicrosecondArray::from(vec![1])))],
        );
        assert!(
            message.starts_with("column `ts`: Fluss type TIMESTAMP(2)"),
            "{message}"
        );
    }

    #[test]
    fn a_nested_mismatch_names_the_path() {
        let message = refusal(
            &[DataTypes::field("tags", DataTypes::array(DataTypes::int()))],
            vec![(
                "tags",
                Arc::new(arrow_array::ListArray::from_iter_primitive::<
                    arrow_array::types::Int64Type,
                    _,
                    _,
                >([Some([Some(1)])])),
            )],
        );
        assert!(
            message.starts_with("column `tags[]`: Fluss type INT"),
            "{message}"
        );
    }

    #[test]
    fn a_column_count_mismatch_is_refused() {
        let message = refusal(
            &[
                DataTypes::field("a", DataTypes::int()),
                DataTypes::field("b", DataTypes::int()),
            ],
            vec![("a", Arc::new(Int32Array::from(vec![1])))],
        );
        assert!(
            message.starts_with("the row type has 2 fields but the record batch has 1 columns")
        );
    }
}
