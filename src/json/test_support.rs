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

//! Helpers shared by the encoder tests: encode a hand-built batch and check the output is JSON.

use arrow_array::{ArrayRef, RecordBatch};
use fluss::metadata::{DataField, DataType, DataTypes};

use super::{JsonOptions, RowEncoder};

/// Encodes every row of a batch built from `columns` as a JSON object, asserting each one
/// parses with serde_json and that `write_fields` agrees with `write_object`.
pub(super) fn rows_with(
    fields: &[DataField],
    columns: Vec<ArrayRef>,
    options: JsonOptions,
) -> Vec<String> {
    let batch = RecordBatch::try_from_iter(
        fields
            .iter()
            .map(|f| f.name().to_owned())
            .zip(columns)
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let mut encoder = RowEncoder::try_new(fields, &batch, options).unwrap();
    (0..batch.num_rows())
        .map(|row| {
            let mut object = Vec::with_capacity(encoder.size_hint());
            encoder.write_object(row, &mut object);
            let mut body = Vec::new();
            encoder.write_fields(row, &mut body);
            assert_eq!(&object[1..object.len() - 1], &body[..]);
            let text = String::from_utf8(object).unwrap();
            if let Err(e) = serde_json::from_str::<serde_json::Value>(&text) {
                panic!("row {row} is not JSON ({e}): {text}");
            }
            text
        })
        .collect()
}

/// [`rows_with`] with the default options.
pub(super) fn rows(fields: &[DataField], columns: Vec<ArrayRef>) -> Vec<String> {
    rows_with(fields, columns, JsonOptions::default())
}

/// The JSON text of each value of a single column `c` of type `data_type`.
pub(super) fn column_values_with(
    data_type: DataType,
    array: ArrayRef,
    options: JsonOptions,
) -> Vec<String> {
    rows_with(&[DataTypes::field("c", data_type)], vec![array], options)
        .into_iter()
        .map(|row| {
            row.strip_prefix("{\"c\":")
                .and_then(|r| r.strip_suffix('}'))
                .unwrap()
                .to_owned()
        })
        .collect()
}

/// [`column_values_with`] with the default options.
pub(super) fn column_values(data_type: DataType, array: ArrayRef) -> Vec<String> {
    column_values_with(data_type, array, JsonOptions::default())
}
