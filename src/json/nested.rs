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

//! ARRAY, MAP and ROW: each holds child encoders built by the same factory as top-level
//! columns, so nesting costs no extra type dispatch per value.

use arrow_array::StringArray;

use super::values::{slot, write_json_bytes};
use super::{FieldsEncoder, NullableEncoder, ValueEncoder};

/// ARRAY as a JSON array of its elements.
pub(super) struct ListEncoder<'a> {
    offsets: &'a [i32],
    element: NullableEncoder<'a>,
}

impl<'a> ListEncoder<'a> {
    pub(super) fn new(offsets: &'a [i32], element: NullableEncoder<'a>) -> Self {
        Self { offsets, element }
    }
}

/// The child index range of entry `idx`; offsets of a valid array are non-negative.
#[inline]
fn range(offsets: &[i32], idx: usize) -> std::ops::Range<usize> {
    offsets[idx] as usize..offsets[idx + 1] as usize
}

impl ValueEncoder for ListEncoder<'_> {
    fn encode(&mut self, idx: usize, out: &mut Vec<u8>) {
        out.push(b'[');
        for (n, child) in range(self.offsets, idx).enumerate() {
            if n > 0 {
                out.push(b',');
            }
            self.element.encode(child, out);
        }
        out.push(b']');
    }
}

/// MAP with STRING/CHAR keys as a JSON object. Arrow map keys are never null.
pub(super) struct MapObjectEncoder<'a> {
    offsets: &'a [i32],
    key_offsets: &'a [i32],
    key_data: &'a [u8],
    value: NullableEncoder<'a>,
}

impl<'a> MapObjectEncoder<'a> {
    pub(super) fn new(
        offsets: &'a [i32],
        keys: &'a StringArray,
        value: NullableEncoder<'a>,
    ) -> Self {
        Self {
            offsets,
            key_offsets: keys.value_offsets(),
            key_data: keys.value_data(),
            value,
        }
    }
}

impl ValueEncoder for MapObjectEncoder<'_> {
    fn encode(&mut self, idx: usize, out: &mut Vec<u8>) {
        out.push(b'{');
        for (n, entry) in range(self.offsets, idx).enumerate() {
            if n > 0 {
                out.push(b',');
            }
            write_json_bytes(out, slot(self.key_offsets, self.key_data, entry));
            out.push(b':');
            self.value.encode(entry, out);
        }
        out.push(b'}');
    }
}

/// MAP with any other key type as `[{"key":…,"value":…}]`: JSON object keys must be strings,
/// and stringifying e.g. INT keys would hide their type from consumers.
pub(super) struct MapEntriesEncoder<'a> {
    offsets: &'a [i32],
    key: NullableEncoder<'a>,
    value: NullableEncoder<'a>,
}

impl<'a> MapEntriesEncoder<'a> {
    pub(super) fn new(
        offsets: &'a [i32],
        key: NullableEncoder<'a>,
        value: NullableEncoder<'a>,
    ) -> Self {
        Self {
            offsets,
            key,
            value,
        }
    }
}

impl ValueEncoder for MapEntriesEncoder<'_> {
    fn encode(&mut self, idx: usize, out: &mut Vec<u8>) {
        out.push(b'[');
        for (n, entry) in range(self.offsets, idx).enumerate() {
            if n > 0 {
                out.push(b',');
            }
            out.extend_from_slice(b"{\"key\":");
            self.key.encode(entry, out);
            out.extend_from_slice(b",\"value\":");
            self.value.encode(entry, out);
            out.push(b'}');
        }
        out.push(b']');
    }
}

/// ROW as a nested object keyed by the Fluss field names.
pub(super) struct RowObjectEncoder<'a>(pub(super) FieldsEncoder<'a>);

impl ValueEncoder for RowObjectEncoder<'_> {
    fn encode(&mut self, idx: usize, out: &mut Vec<u8>) {
        out.push(b'{');
        self.0.encode(idx, out);
        out.push(b'}');
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::builder::{Int32Builder, ListBuilder, MapBuilder, StringBuilder};
    use arrow_array::{
        Array, ArrayRef, Int32Array, Int64Array, ListArray, StringArray, StructArray,
    };
    use arrow_buffer::{NullBuffer, OffsetBuffer};
    use arrow_schema::{Field, Fields};
    use fluss::metadata::{DataType, DataTypes};

    use super::super::test_support::{column_values, rows};

    #[test]
    fn array_of_ints_with_nulls_and_empty_arrays() {
        let mut b = ListBuilder::new(Int32Builder::new());
        b.append_value([Some(1), None, Some(-3)]);
        b.append_value([]);
        b.append_null();
        b.append_value([None]);
        let array: ArrayRef = Arc::new(b.finish());
        assert_eq!(
            column_values(DataTypes::array(DataTypes::int()), array),
            ["[1,null,-3]", "[]", "null", "[null]"]
        );
    }

    #[test]
    fn array_of_arrays_of_strings() {
        let mut b = ListBuilder::new(ListBuilder::new(StringBuilder::new()));
        b.values().append_value([Some("a\"b"), None]);
        b.values().append_value([] as [Option<&str>; 0]);
        b.append(true);
        b.append(true);
        let array: ArrayRef = Arc::new(b.finish());
        assert_eq!(
            column_values(
                DataTypes::array(DataTypes::array(DataTypes::string())),
                array
            ),
            [r#"[["a\"b",null],[]]"#, "[]"]
        );
    }

    #[test]
    fn map_with_string_keys_is_an_object() {
        let mut b = MapBuilder::new(None, StringBuilder::new(), Int32Builder::new());
        b.keys().append_value("a");
        b.values().append_value(1);
        b.keys().append_value("quote\"key\n");
        b.values().append_null();
        b.append(true).unwrap();
        b.append(true).unwrap();
        b.append(false).unwrap();
        let array: ArrayRef = Arc::new(b.finish());
        let expected = [r#"{"a":1,"quote\"key\n":null}"#, "{}", "null"];
        assert_eq!(
            column_values(
                DataTypes::map(DataTypes::string(), DataTypes::int()),
                array.clone()
            ),
            expected
        );
        assert_eq!(
            column_values(DataTypes::map(DataTypes::char(10), DataTypes::int()), array),
            expected
        );
    }

    #[test]
    fn map_with_int_keys_is_a_list_of_entries() {
        let mut b = MapBuilder::new(None, Int32Builder::new(), StringBuilder::new());
        b.keys().append_value(-1);
        b.values().append_value("x");
        b.keys().append_value(2);
        b.values().append_null();
        b.append(true).unwrap();
        b.append(true).unwrap();
        b.append(false).unwrap();
        let array: ArrayRef = Arc::new(b.finish());
        assert_eq!(
            column_values(DataTypes::map(DataTypes::int(), DataTypes::string()), array),
            [
                r#"[{"key":-1,"value":"x"},{"key":2,"value":null}]"#,
                "[]",
                "null"
            ]
        );
    }

    #[test]
    fn map_of_string_to_array_of_int() {
        let mut b = MapBuilder::new(
            None,
            StringBuilder::new(),
            ListBuilder::new(Int32Builder::new()),
        );
        b.keys().append_value("evens");
        b.values().append_value([Some(2), Some(4)]);
        b.keys().append_value("none");
        b.values().append_value([]);
        b.keys().append_value("missing");
        b.values().append_null();
        b.append(true).unwrap();
        let array: ArrayRef = Arc::new(b.finish());
        assert_eq!(
            column_values(
                DataTypes::map(DataTypes::string(), DataTypes::array(DataTypes::int())),
                array
            ),
            [r#"{"evens":[2,4],"none":[],"missing":null}"#]
        );
    }

    fn row_type(fields: &[(&str, DataType)]) -> DataType {
        DataTypes::row(
            fields
                .iter()
                .map(|(n, t)| DataTypes::field(*n, t.clone()))
                .collect(),
        )
    }

    fn struct_array(columns: Vec<(&str, ArrayRef)>, nulls: Option<Vec<bool>>) -> StructArray {
        let fields: Fields = columns
            .iter()
            .map(|(n, a)| Field::new(*n, a.data_type().clone(), true))
            .collect();
        StructArray::try_new(
            fields,
            columns.into_iter().map(|(_, a)| a).collect(),
            nulls.map(NullBuffer::from),
        )
        .unwrap()
    }

    #[test]
    fn array_of_rows_uses_fluss_field_names() {
        let items = struct_array(
            vec![
                (
                    "sku",
                    Arc::new(StringArray::from(vec![Some("a"), None, Some("c")])),
                ),
                ("qty", Arc::new(Int32Array::from(vec![1, 2, 3]))),
            ],
            Some(vec![true, true, false]),
        );
        let list = ListArray::try_new(
            Arc::new(Field::new_list_field(items.data_type().clone(), true)),
            OffsetBuffer::new(vec![0, 2, 2, 3].into()),
            Arc::new(items),
            Some(NullBuffer::from(vec![true, true, true])),
        )
        .unwrap();
        // Arrow's child names differ on purpose: the Fluss names are the ones printed.
        let data_type = DataTypes::array(row_type(&[
            ("SKU", DataTypes::string()),
            ("quantity", DataTypes::int()),
        ]));
        assert_eq!(
            column_values(data_type, Arc::new(list)),
            [
                r#"[{"SKU":"a","quantity":1},{"SKU":null,"quantity":2}]"#,
                "[]",
                "[null]"
            ]
        );
    }

    #[test]
    fn rows_nest_four_levels_with_nulls_at_each_level() {
        // level4 { n BIGINT }, level3 { d: level4, s }, level2 { c: level3 }, level1 { b: level2, i }
        let l4 = struct_array(
            vec![(
                "n",
                Arc::new(Int64Array::from(vec![
                    Some(i64::MAX),
                    None,
                    Some(1),
                    Some(2),
                ])),
            )],
            None,
        );
        let l3 = struct_array(
            vec![
                ("d", Arc::new(l4)),
                ("s", Arc::new(StringArray::from(vec!["x", "y", "z", "w"]))),
            ],
            Some(vec![true, true, false, true]),
        );
        let l2 = struct_array(
            vec![("c", Arc::new(l3))],
            Some(vec![true, true, true, false]),
        );
        let l1 = struct_array(
            vec![
                ("b", Arc::new(l2)),
                ("i", Arc::new(Int32Array::from(vec![1, 2, 3, 4]))),
            ],
            None,
        );
        let t4 = row_type(&[("n", DataTypes::bigint())]);
        let t3 = row_type(&[("d", t4), ("s", DataTypes::string())]);
        let t2 = row_type(&[("c", t3)]);
        let t1 = row_type(&[("b", t2), ("i", DataTypes::int())]);
        let nulls = Int32Array::from(vec![None, Some(0), None, None]);
        let got = rows(
            &[
                DataTypes::field("r", t1),
                DataTypes::field("after", DataTypes::int()),
            ],
            vec![Arc::new(l1), Arc::new(nulls)],
        );
        assert_eq!(
            got,
            [
                r#"{"r":{"b":{"c":{"d":{"n":9223372036854775807},"s":"x"}},"i":1},"after":null}"#,
                r#"{"r":{"b":{"c":{"d":{"n":null},"s":"y"}},"i":2},"after":0}"#,
                r#"{"r":{"b":{"c":null},"i":3},"after":null}"#,
                r#"{"r":{"b":null,"i":4},"after":null}"#,
            ]
        );
    }

    #[test]
    fn struct_arity_must_match_the_row_type() {
        let s = struct_array(vec![("a", Arc::new(Int32Array::from(vec![1])))], None);
        let batch =
            arrow_array::RecordBatch::try_from_iter([("r", Arc::new(s) as ArrayRef)]).unwrap();
        let fields = [DataTypes::field(
            "r",
            row_type(&[("a", DataTypes::int()), ("b", DataTypes::int())]),
        )];
        let err = super::super::RowEncoder::try_new(&fields, &batch, Default::default())
            .err()
            .unwrap();
        assert!(err.to_string().starts_with("column `r`: "), "{err}");
    }
}
