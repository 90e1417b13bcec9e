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

//! Random record batches of every Fluss type the encoders accept, for the property tests.
//!
//! A case is drawn as Fluss types plus a value tree per cell, and only then turned into Arrow
//! arrays (with the Arrow types of `fluss::record::to_arrow_type`, as the scanner delivers
//! them), so shrinking works on plain values and a failure prints readable ones.
//!
//! One file because it is one generator: the Fluss types, the value tree of
//! each cell and their conversion to Arrow arrays belong together for shrinking to stay readable.

// Each test binary that includes this module uses only part of it.
#![allow(dead_code)]

use std::sync::Arc;

use arrow_array::{
    ArrayRef, BinaryArray, BooleanArray, Date32Array, Decimal128Array, FixedSizeBinaryArray,
    Float32Array, Float64Array, Int8Array, Int16Array, Int32Array, Int64Array, ListArray, MapArray,
    RecordBatch, StringArray, StructArray, Time32MillisecondArray, Time32SecondArray,
    Time64MicrosecondArray, Time64NanosecondArray, TimestampMicrosecondArray,
    TimestampMillisecondArray, TimestampNanosecondArray, TimestampSecondArray,
};
use arrow_buffer::{NullBuffer, OffsetBuffer};
use arrow_schema::{DataType as ArrowType, Field, Schema};
use fluss::metadata::{DataField, DataType, DataTypes, RowType};
use fluss::record::{ChangeType, ScanRecord, to_arrow_type};
use fluss::row::ColumnarRow;
use iggy_connector_fluss_source::config::options::HeaderSet;
use iggy_connector_fluss_source::encode::stamp::{BucketStamp, Stamper};
use iggy_connector_fluss_source::position::BucketKey;
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::Config;

/// The proptest config of every property ([`crate::property::config`]).
pub fn config(default: u32) -> Config {
    crate::property::config(default)
}

/// One cell's value; which variant goes with which Fluss type is fixed by [`value`].
#[derive(Clone, Debug)]
pub enum Cell {
    Bool(bool),
    /// Integers of every width, DATE days and TIME/TIMESTAMP in their Arrow unit.
    Int(i64),
    F32(f32),
    F64(f64),
    Text(String),
    Bytes(Vec<u8>),
    /// The unscaled DECIMAL value.
    Decimal(i128),
    List(Vec<Option<Cell>>),
    /// Entries in order; keys are never null in Arrow maps.
    Map(Vec<(Cell, Option<Cell>)>),
    Row(Vec<Option<Cell>>),
}

/// A batch to encode: the Fluss fields, a cell per row and column, and the window
/// (`offset`, `len`) of the built batch that is encoded, so slicing is exercised too.
#[derive(Clone, Debug)]
pub struct Case {
    pub fields: Vec<DataField>,
    pub columns: Vec<Vec<Option<Cell>>>,
    pub offset: usize,
    pub len: usize,
}

impl Case {
    /// The whole batch, before slicing.
    pub fn full_batch(&self) -> RecordBatch {
        let arrow_fields: Vec<Field> = self
            .fields
            .iter()
            .map(|f| Field::new(f.name(), arrow_type(f.data_type()), true))
            .collect();
        let columns = self
            .fields
            .iter()
            .zip(&self.columns)
            .map(|(f, cells)| build(f.data_type(), cells))
            .collect();
        let rows = self.columns.first().map_or(0, Vec::len);
        RecordBatch::try_new_with_options(
            Arc::new(Schema::new(arrow_fields)),
            columns,
            &arrow_array::RecordBatchOptions::new().with_row_count(Some(rows)),
        )
        .expect("a batch of the Fluss types' Arrow types")
    }

    /// The window of the batch that is encoded.
    pub fn batch(&self) -> RecordBatch {
        self.full_batch().slice(self.offset, self.len)
    }
}

/// Scanned records of rows `row_ids` of `batch`, as fluss-rs hands them over: all pointing
/// at one shared batch (the encoders group records by that pointer), row `r` at log offset
/// `first_offset + r`, timestamp `r` and the given change type.
pub fn records(
    fields: &[DataField],
    batch: RecordBatch,
    row_ids: impl IntoIterator<Item = (usize, ChangeType)>,
    first_offset: i64,
) -> Vec<ScanRecord> {
    let row = ColumnarRow::new(
        Arc::new(batch),
        Arc::new(RowType::new(fields.to_vec())),
        0,
        None,
    )
    .expect("fluss-rs reads the generated batch");
    row_ids
        .into_iter()
        .map(|(id, change)| {
            let mut row = row.clone();
            row.set_row_id(id);
            ScanRecord::new(row, first_offset + id as i64, id as i64, change)
        })
        .collect()
}

/// The stamp of bucket 3 of table 7 (`db.t`), in partition `partition` if given.
pub fn stamp(partition: Option<&str>) -> BucketStamp {
    let key = BucketKey {
        partition: partition.map(|_| 11),
        bucket: 3,
    };
    Stamper::new(7, "db.t", HeaderSet::ALL)
        .and_then(|s| s.bucket(key, partition))
        .expect("a stamp for a short table and partition name")
}

fn arrow_type(data_type: &DataType) -> ArrowType {
    to_arrow_type(data_type).expect("every generated Fluss type maps to Arrow")
}

/// Text with many characters JSON must escape, at every position of 8-byte chunks, mixed
/// with multi-byte UTF-8 and DEL (which is not escaped).
const TRICKY_TEXT: &str = "[\\x00-\\x1f\"\\\\\\x7fa-c/ é€😀]{0,40}";

/// Text whose escapes (if any) follow a run of clean bytes of any length, so the 8-byte
/// skip of the escape scan stops in every chunk position, also after multi-byte UTF-8.
const CLEAN_THEN_ESCAPE: &str = "[a-z é€😀\\x7f/]{0,30}[\\x00-\\x1f\"\\\\]{0,2}[a-z é\\x7f]{0,20}";

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        TRICKY_TEXT,
        CLEAN_THEN_ESCAPE,
        "[a-z]{0,24}"
    ]
}

/// Field names that need escaping too; the index prefix keeps them unique within a row.
fn field_names(count: usize) -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(TRICKY_TEXT, count).prop_map(|names| {
        names
            .into_iter()
            .enumerate()
            .map(|(i, n)| format!("{i}:{n}"))
            .collect()
    })
}

/// Every scalar Fluss type, with every TIME/TIMESTAMP precision and random DECIMAL(p, s).
pub fn scalar_type() -> impl Strategy<Value = DataType> {
    prop_oneof![
        Just(DataTypes::boolean()),
        Just(DataTypes::tinyint()),
        Just(DataTypes::smallint()),
        Just(DataTypes::int()),
        Just(DataTypes::bigint()),
        Just(DataTypes::float()),
        Just(DataTypes::double()),
        (1u32..=10).prop_map(DataTypes::char),
        Just(DataTypes::string()),
        (1u32..=38)
            .prop_flat_map(|p| (Just(p), 0..=p))
            .prop_map(|(p, s)| DataTypes::decimal(p, s)),
        Just(DataTypes::date()),
        (0u32..=9).prop_map(DataTypes::time_with_precision),
        (0u32..=9).prop_map(DataTypes::timestamp_with_precision),
        (0u32..=9).prop_map(DataTypes::timestamp_ltz_with_precision),
        Just(DataTypes::bytes()),
        (1usize..=20).prop_map(DataTypes::binary),
    ]
}

/// Any type: scalars, and ARRAY, MAP (any scalar key) and ROW nested up to depth 3.
pub fn data_type() -> impl Strategy<Value = DataType> {
    scalar_type().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            inner.clone().prop_map(DataTypes::array),
            (scalar_type(), inner.clone()).prop_map(|(k, v)| DataTypes::map(k, v)),
            prop::collection::vec(inner, 1..4).prop_flat_map(|types| {
                field_names(types.len()).prop_map(move |names| {
                    DataTypes::row(
                        names
                            .into_iter()
                            .zip(types.clone())
                            .map(|(n, t)| DataTypes::field(n, t))
                            .collect(),
                    )
                })
            }),
        ]
    })
}

/// Units per second of the Arrow type a TIME/TIMESTAMP of `precision` is stored in.
pub fn units_per_second(precision: u32) -> i64 {
    match precision {
        0 => 1,
        1..=3 => 1_000,
        4..=6 => 1_000_000,
        _ => 1_000_000_000,
    }
}

/// A non-null value of `data_type`: edge values mixed with typical ones.
pub fn value(data_type: &DataType) -> BoxedStrategy<Cell> {
    use Cell::*;
    match data_type {
        DataType::Boolean(_) => any::<bool>().prop_map(Bool).boxed(),
        DataType::TinyInt(_) => any::<i8>().prop_map(|v| Int(v.into())).boxed(),
        DataType::SmallInt(_) => any::<i16>().prop_map(|v| Int(v.into())).boxed(),
        DataType::Int(_) => any::<i32>().prop_map(|v| Int(v.into())).boxed(),
        DataType::BigInt(_) => any::<i64>().prop_map(Int).boxed(),
        // Every bit pattern: NaNs with payloads and sign, infinities, subnormals, -0.
        DataType::Float(_) => prop_oneof![
            any::<f32>(),
            any::<u32>().prop_map(f32::from_bits),
            prop::sample::select(vec![f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0])
        ]
        .prop_map(F32)
        .boxed(),
        DataType::Double(_) => prop_oneof![
            any::<f64>(),
            any::<u64>().prop_map(f64::from_bits),
            prop::sample::select(vec![f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0])
        ]
        .prop_map(F64)
        .boxed(),
        DataType::Char(_) | DataType::String(_) => text().prop_map(Text).boxed(),
        DataType::Decimal(d) => {
            let max = 10i128.pow(d.precision()) - 1;
            prop_oneof![
                // Any number of digits up to the precision, so short and long ones both come.
                (0..=d.precision()).prop_flat_map(|digits| {
                    let bound = 10i128.pow(digits) - 1;
                    -bound..=bound
                }),
                prop::sample::select(vec![0, 1, -1, max, -max]),
            ]
            .prop_map(Decimal)
            .boxed()
        }
        DataType::Date(_) => prop_oneof![
            any::<i32>(),
            // Years about -800 to 10200, across year 0 and year 10000 (2,932,897).
            -1_000_000..3_000_000i32,
            -719_600..-719_400i32,
            2_932_800..2_933_000i32,
        ]
        .prop_map(|v| Int(v.into()))
        .boxed(),
        DataType::Time(t) => (0..86_400 * units_per_second(t.precision()))
            .prop_map(Int)
            .boxed(),
        DataType::Timestamp(t) => timestamp_value(t.precision()),
        DataType::TimestampLTz(t) => timestamp_value(t.precision()),
        DataType::Bytes(_) => prop::collection::vec(any::<u8>(), 0..30)
            .prop_map(Bytes)
            .boxed(),
        DataType::Binary(b) => prop::collection::vec(any::<u8>(), b.length())
            .prop_map(Bytes)
            .boxed(),
        DataType::Array(a) => prop::collection::vec(optional(a.get_element_type()), 0..4)
            .prop_map(List)
            .boxed(),
        DataType::Map(m) => {
            prop::collection::vec((value(m.key_type()), optional(m.value_type())), 0..4)
                .prop_map(Map)
                .boxed()
        }
        DataType::Row(r) => r
            .fields()
            .iter()
            .map(|f| optional(f.data_type()))
            .collect::<Vec<_>>()
            .prop_map(Row)
            .boxed(),
    }
}

fn timestamp_value(precision: u32) -> BoxedStrategy<Cell> {
    let ups = units_per_second(precision);
    // About 200 years either side of 1970 (still inside i64 nanoseconds).
    let near = 200 * 366 * 86_400 * ups;
    prop_oneof![any::<i64>(), -near..near, -2 * ups..2 * ups]
        .prop_map(Cell::Int)
        .boxed()
}

/// A value of `data_type` or null (one in five).
pub fn optional(data_type: &DataType) -> BoxedStrategy<Option<Cell>> {
    prop::option::weighted(0.8, value(data_type)).boxed()
}

/// Up to 5 columns of any types and up to 8 rows, encoded through a random window.
pub fn case() -> impl Strategy<Value = Case> {
    case_of(0..9)
}

/// Up to 5 columns of any types and `rows` rows, encoded through a random window.
pub fn case_of(rows: std::ops::Range<usize>) -> impl Strategy<Value = Case> {
    (prop::collection::vec(data_type(), 1..6), rows)
        .prop_flat_map(|(types, rows)| {
            let columns: Vec<_> = types
                .iter()
                .map(|t| prop::collection::vec(optional(t), rows))
                .collect();
            (
                field_names(types.len()),
                Just(types),
                columns,
                any::<(Index, Index)>(),
            )
        })
        .prop_map(|(names, types, columns, (a, b))| {
            let rows = columns.first().map_or(0, Vec::len);
            let offset = a.index(rows + 1);
            let len = b.index(rows - offset + 1);
            Case {
                fields: names
                    .into_iter()
                    .zip(types)
                    .map(|(n, t)| DataTypes::field(n, t))
                    .collect(),
                columns,
                offset,
                len,
            }
        })
}

/// Validity of `cells`.
fn nulls(cells: &[Option<Cell>]) -> Option<NullBuffer> {
    Some(NullBuffer::from(
        cells.iter().map(Option::is_some).collect::<Vec<_>>(),
    ))
}

fn ints(cells: &[Option<Cell>]) -> impl Iterator<Item = Option<i64>> + '_ {
    cells.iter().map(|c| {
        c.as_ref().map(|c| match c {
            Cell::Int(v) => *v,
            other => panic!("an integer cell expected, got {other:?}"),
        })
    })
}

/// The child cells of list-like `cells` (nulls have none) and the length of each slot.
fn children<T: Clone>(
    cells: &[Option<Cell>],
    items: impl Fn(&Cell) -> &[T],
) -> (Vec<T>, Vec<usize>) {
    let mut all = Vec::new();
    let lengths = cells
        .iter()
        .map(|c| match c {
            Some(c) => {
                let items = items(c);
                all.extend_from_slice(items);
                items.len()
            }
            None => 0,
        })
        .collect();
    (all, lengths)
}

/// The Arrow array of `cells` of Fluss type `data_type`.
pub fn build(data_type: &DataType, cells: &[Option<Cell>]) -> ArrayRef {
    let arrow = arrow_type(data_type);
    match data_type {
        DataType::Boolean(_) => Arc::new(BooleanArray::from_iter(cells.iter().map(|c| {
            c.as_ref().map(|c| match c {
                Cell::Bool(b) => *b,
                other => panic!("a boolean cell expected, got {other:?}"),
            })
        }))),
        DataType::TinyInt(_) => Arc::new(Int8Array::from_iter(
            ints(cells).map(|v| v.map(|v| v as i8)),
        )),
        DataType::SmallInt(_) => Arc::new(Int16Array::from_iter(
            ints(cells).map(|v| v.map(|v| v as i16)),
        )),
        DataType::Int(_) => Arc::new(Int32Array::from_iter(
            ints(cells).map(|v| v.map(|v| v as i32)),
        )),
        DataType::BigInt(_) => Arc::new(Int64Array::from_iter(ints(cells))),
        DataType::Float(_) => Arc::new(Float32Array::from_iter(cells.iter().map(|c| {
            c.as_ref().map(|c| match c {
                Cell::F32(v) => *v,
                other => panic!("a FLOAT cell expected, got {other:?}"),
            })
        }))),
        DataType::Double(_) => Arc::new(Float64Array::from_iter(cells.iter().map(|c| {
            c.as_ref().map(|c| match c {
                Cell::F64(v) => *v,
                other => panic!("a DOUBLE cell expected, got {other:?}"),
            })
        }))),
        DataType::Char(_) | DataType::String(_) => {
            Arc::new(StringArray::from_iter(cells.iter().map(|c| {
                c.as_ref().map(|c| match c {
                    Cell::Text(s) => s.as_str(),
                    other => panic!("a text cell expected, got {other:?}"),
                })
            })))
        }
        DataType::Decimal(d) => Arc::new(
            Decimal128Array::from_iter(cells.iter().map(|c| {
                c.as_ref().map(|c| match c {
                    Cell::Decimal(v) => *v,
                    other => panic!("a DECIMAL cell expected, got {other:?}"),
                })
            }))
            .with_precision_and_scale(d.precision() as u8, d.scale() as i8)
            .expect("precision and scale within Decimal128's"),
        ),
        DataType::Date(_) => Arc::new(Date32Array::from_iter(
            ints(cells).map(|v| v.map(|v| v as i32)),
        )),
        DataType::Time(_) => match arrow {
            ArrowType::Time32(arrow_schema::TimeUnit::Second) => Arc::new(
                Time32SecondArray::from_iter(ints(cells).map(|v| v.map(|v| v as i32))),
            ),
            ArrowType::Time32(_) => Arc::new(Time32MillisecondArray::from_iter(
                ints(cells).map(|v| v.map(|v| v as i32)),
            )),
            ArrowType::Time64(arrow_schema::TimeUnit::Microsecond) => {
                Arc::new(Time64MicrosecondArray::from_iter(ints(cells)))
            }
            _ => Arc::new(Time64NanosecondArray::from_iter(ints(cells))),
        },
        DataType::Timestamp(_) | DataType::TimestampLTz(_) => {
            let ArrowType::Timestamp(unit, tz) = arrow else {
                unreachable!("to_arrow_type maps timestamps to Timestamp")
            };
            use arrow_schema::TimeUnit::*;
            match unit {
                Second => {
                    Arc::new(TimestampSecondArray::from_iter(ints(cells)).with_timezone_opt(tz))
                }
                Millisecond => Arc::new(
                    TimestampMillisecondArray::from_iter(ints(cells)).with_timezone_opt(tz),
                ),
                Microsecond => Arc::new(
                    TimestampMicrosecondArray::from_iter(ints(cells)).with_timezone_opt(tz),
                ),
                Nanosecond => {
                    Arc::new(TimestampNanosecondArray::from_iter(ints(cells)).with_timezone_opt(tz))
                }
            }
        }
        DataType::Bytes(_) | DataType::Binary(_) => {
            let bytes = cells.iter().map(|c| {
                c.as_ref().map(|c| match c {
                    Cell::Bytes(b) => b.as_slice(),
                    other => panic!("a bytes cell expected, got {other:?}"),
                })
            });
            match arrow {
                ArrowType::FixedSizeBinary(n) => Arc::new(
                    FixedSizeBinaryArray::try_from_sparse_iter_with_size(bytes, n)
                        .expect("BINARY(n) values of n bytes"),
                ),
                _ => Arc::new(BinaryArray::from_iter(bytes)),
            }
        }
        DataType::Array(a) => {
            let ArrowType::List(field) = arrow else {
                unreachable!("to_arrow_type maps ARRAY to List")
            };
            let (items, lengths) = children(cells, |c| match c {
                Cell::List(items) => items,
                other => panic!("a list cell expected, got {other:?}"),
            });
            Arc::new(
                ListArray::try_new(
                    field,
                    OffsetBuffer::from_lengths(lengths),
                    build(a.get_element_type(), &items),
                    nulls(cells),
                )
                .expect("a valid list array"),
            )
        }
        DataType::Map(m) => {
            let ArrowType::Map(entries_field, _) = arrow else {
                unreachable!("to_arrow_type maps MAP to Map")
            };
            let ArrowType::Struct(entry_fields) = entries_field.data_type().clone() else {
                unreachable!("map entries are a struct")
            };
            let (entries, lengths) = children(cells, |c| match c {
                Cell::Map(entries) => entries,
                other => panic!("a map cell expected, got {other:?}"),
            });
            let keys: Vec<Option<Cell>> = entries.iter().map(|(k, _)| Some(k.clone())).collect();
            let values: Vec<Option<Cell>> = entries.into_iter().map(|(_, v)| v).collect();
            let entries = StructArray::try_new(
                entry_fields,
                vec![build(m.key_type(), &keys), build(m.value_type(), &values)],
                None,
            )
            .expect("valid map entries");
            Arc::new(
                MapArray::try_new(
                    entries_field,
                    OffsetBuffer::from_lengths(lengths),
                    entries,
                    nulls(cells),
                    false,
                )
                .expect("a valid map array"),
            )
        }
        DataType::Row(r) => {
            let ArrowType::Struct(arrow_fields) = arrow else {
                unreachable!("to_arrow_type maps ROW to Struct")
            };
            let columns = r
                .fields()
                .iter()
                .enumerate()
                .map(|(k, f)| {
                    // A null row's fields are null too, so non-null children stay valid.
                    let column: Vec<Option<Cell>> = cells
                        .iter()
                        .map(|c| match c {
                            Some(Cell::Row(fields)) => fields[k].clone(),
                            Some(other) => panic!("a row cell expected, got {other:?}"),
                            None => None,
                        })
                        .collect();
                    build(f.data_type(), &column)
                })
                .collect();
            Arc::new(
                StructArray::try_new(arrow_fields, columns, nulls(cells))
                    .expect("a valid struct array"),
            )
        }
    }
}
