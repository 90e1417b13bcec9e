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

//! What survives the runtime's handling of `Schema::Json` payloads, checked at open and again
//! when the table's schema changes.
//!
//! `iggy-connectors` parses every payload of a `Schema::Json` batch into a `simd_json` value
//! tree and writes it back with `simd_json::to_vec` (apache/iggy `core/connectors/runtime/
//! src/source.rs`). Two things change on the way:
//! - **Key order.** simd-json 0.17 keeps an object's keys in a `halfbrown` map, which stays an
//!   insertion-ordered vector only up to [`KEY_ORDER_LIMIT`] keys; a wider object becomes a
//!   hash map and its keys come out in hash order. The JSON is still equal, so a wide table
//!   gets one WARN at open.
//! - **Numbers.** Integers beyond 64 bits make the parse fail, and with it the whole batch
//!   (Nacked, forever: the same rows come again); a number with a fraction becomes a double,
//!   which holds 15 significant digits. So `decimal_format = "number"` with a DECIMAL wider
//!   than that would stall the stream or change values: `open` refuses it.
//!
//! `payload_schema = "raw"` avoids both: the runtime passes raw payloads through untouched.

use fluss::metadata::{DataField, DataType};

use crate::config::options::{ChangelogFormat, DecimalFormat};
use crate::config::{Config, ConfigError};

/// Widest object whose key order survives: halfbrown's `VEC_LIMIT_UPPER` (simd-json 0.17.3
/// builds `halfbrown::HashMap`, whose vector form holds at most 32 entries).
pub const KEY_ORDER_LIMIT: usize = 32;
/// Digits of a DECIMAL with a fraction that a double carries exactly (`f64::DIGITS`).
const FRACTION_DIGITS: u32 = 15;
/// Digits of a DECIMAL without a fraction that always fit an `i64` (up to 9.2e18).
const INTEGER_DIGITS: u32 = 18;

/// Checks `config` against the scanned columns `fields` of a table (a primary-key table when
/// `changelog`). Returns the WARN line's text when key order will change, and an error when
/// the runtime could not carry the payloads at all.
pub fn check(
    config: &Config,
    fields: &[DataField],
    changelog: bool,
) -> Result<Option<String>, ConfigError> {
    if config.json.decimal == DecimalFormat::Number
        && let Some((column, precision, scale)) = fields
            .iter()
            .find_map(|f| too_wide_decimal(f.name(), f.data_type()))
    {
        return Err(ConfigError {
            key: "decimal_format",
            message: format!(
                "`decimal_format` = \"number\" cannot pass through the runtime with `payload_schema` = \"json\": column \"{column}\" is DECIMAL({precision},{scale}), and the runtime parses JSON numbers as 64-bit integers or doubles ({FRACTION_DIGITS} significant digits), so it would reject the batches or round the values; use `decimal_format = \"string\"`, or `payload_schema = \"raw\"` with `schema = \"raw\"` in [[streams]]"
            ),
        });
    }
    let (what, keys) = widest_object(config, fields, changelog);
    Ok((keys > KEY_ORDER_LIMIT).then(|| {
        format!(
            "{what} have {keys} keys; the runtime re-encodes `payload_schema = \"json\"` payloads and keeps key order only for objects of at most {KEY_ORDER_LIMIT} keys, so keys arrive out of column order (values are unchanged); set `payload_schema = \"raw\"` and `schema = \"raw\"` in [[streams]] for byte-exact payloads"
        )
    }))
}

/// The first DECIMAL (at any depth) that a double or an i64 cannot carry exactly.
fn too_wide_decimal(column: &str, data_type: &DataType) -> Option<(String, u32, u32)> {
    match data_type {
        DataType::Decimal(d) => {
            let limit = if d.scale() == 0 {
                INTEGER_DIGITS
            } else {
                FRACTION_DIGITS
            };
            (d.precision() > limit).then(|| (column.to_owned(), d.precision(), d.scale()))
        }
        DataType::Array(a) => too_wide_decimal(column, a.get_element_type()),
        DataType::Map(m) => too_wide_decimal(column, m.key_type())
            .or_else(|| too_wide_decimal(column, m.value_type())),
        DataType::Row(r) => r
            .fields()
            .iter()
            .find_map(|f| too_wide_decimal(&format!("{column}.{}", f.name()), f.data_type())),
        _ => None,
    }
}

/// The widest JSON object every payload holds (MAP objects depend on the data and are not
/// counted), and what it is, for the WARN line.
fn widest_object(config: &Config, fields: &[DataField], changelog: bool) -> (String, usize) {
    let row_keys = match (changelog, config.changelog_format) {
        (false, _) => fields.len() + usize::from(config.include_metadata),
        (true, ChangelogFormat::Flat) => fields.len() + 1,
        (true, ChangelogFormat::Debezium) => fields.len(),
    };
    let table = config.qualified_table();
    let mut widest = (format!("rows of {table}"), row_keys);
    for field in fields {
        nested_rows(field.name(), field.data_type(), &mut widest);
    }
    widest
}

fn nested_rows(column: &str, data_type: &DataType, widest: &mut (String, usize)) {
    match data_type {
        DataType::Row(r) => {
            if r.fields().len() > widest.1 {
                *widest = (
                    format!("values of ROW column \"{column}\""),
                    r.fields().len(),
                );
            }
            for f in r.fields() {
                nested_rows(&format!("{column}.{}", f.name()), f.data_type(), widest);
            }
        }
        DataType::Array(a) => nested_rows(column, a.get_element_type(), widest),
        DataType::Map(m) => nested_rows(column, m.value_type(), widest),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::test_support::config;
    use fluss::metadata::{DataTypes, RowType};
    use serde_json::json;

    fn ints(n: usize) -> Vec<DataField> {
        (0..n)
            .map(|i| DataField::new(format!("c{i}"), DataTypes::int(), None))
            .collect()
    }

    fn decimal(precision: u32, scale: u32) -> Vec<DataField> {
        vec![DataField::new(
            "amount",
            DataTypes::decimal(precision, scale),
            None,
        )]
    }

    #[test]
    fn rows_up_to_the_limit_keep_their_order_silently() {
        assert_eq!(check(&config(json!({})), &ints(32), false), Ok(None));
        let warn = check(&config(json!({})), &ints(33), false)
            .unwrap()
            .unwrap();
        assert_eq!(
            warn,
            "rows of db.t have 33 keys; the runtime re-encodes `payload_schema = \"json\"` payloads and keeps key order only for objects of at most 32 keys, so keys arrive out of column order (values are unchanged); set `payload_schema = \"raw\"` and `schema = \"raw\"` in [[streams]] for byte-exact payloads"
        );
    }

    #[test]
    fn metadata_and_flat_op_fields_count_as_keys() {
        let meta = config(json!({"include_metadata": true}));
        assert!(check(&meta, &ints(32), false).unwrap().is_some());
        let flat = config(json!({"changelog_format": "flat"}));
        assert!(check(&flat, &ints(32), true).unwrap().is_some());
        let debezium = config(json!({}));
        assert_eq!(check(&debezium, &ints(32), true), Ok(None));
    }

    #[test]
    fn nested_rows_count_too() {
        let inner = RowType::new(ints(40));
        let fields = vec![DataField::new(
            "nested",
            DataTypes::row(inner.fields().clone()),
            None,
        )];
        let warn = check(&config(json!({})), &fields, false).unwrap().unwrap();
        assert!(
            warn.starts_with("values of ROW column \"nested\" have 40 keys"),
            "{warn}"
        );
    }

    #[test]
    fn the_raw_schema_and_arrow_ipc_are_never_warned_about() {
        for extra in [
            json!({"payload_schema": "raw", "decimal_format": "number"}),
            json!({"payload_format": "arrow_ipc", "decimal_format": "number"}),
        ] {
            let config = config(extra);
            let format = crate::format::chosen(&config);
            assert_eq!(format.check_columns(&config, &ints(40), false), Ok(None));
            let decimal = decimal(38, 10);
            assert_eq!(format.check_columns(&config, &decimal, false), Ok(None));
        }
        let config = config(json!({}));
        let format = crate::format::chosen(&config);
        assert!(
            format
                .check_columns(&config, &ints(40), false)
                .unwrap()
                .is_some()
        );
    }

    #[test]
    fn wide_decimals_as_numbers_are_refused_on_the_json_path() {
        let number = config(json!({"decimal_format": "number"}));
        assert_eq!(check(&number, &decimal(15, 2), false), Ok(None));
        assert_eq!(check(&number, &decimal(18, 0), false), Ok(None));
        for (p, s) in [(16, 2), (38, 10), (19, 0), (38, 0)] {
            let e = check(&number, &decimal(p, s), false).unwrap_err();
            assert_eq!(e.key, "decimal_format");
            assert!(
                e.message.starts_with(&format!(
                    "`decimal_format` = \"number\" cannot pass through the runtime with `payload_schema` = \"json\": column \"amount\" is DECIMAL({p},{s})"
                )),
                "{e}"
            );
            assert!(
                e.message
                    .ends_with("`payload_schema = \"raw\"` with `schema = \"raw\"` in [[streams]]")
            );
        }
        let string = config(json!({}));
        assert_eq!(check(&string, &decimal(38, 10), false), Ok(None));
    }

    #[test]
    fn decimals_inside_arrays_and_rows_are_found() {
        let number = config(json!({"decimal_format": "number"}));
        let fields = vec![DataField::new(
            "items",
            DataTypes::array(DataTypes::row(vec![DataField::new(
                "price",
                DataTypes::decimal(20, 4),
                None,
            )])),
            None,
        )];
        let e = check(&number, &fields, false).unwrap_err();
        assert!(
            e.message
                .contains("column \"items.price\" is DECIMAL(20,4)"),
            "{e}"
        );
    }
}
