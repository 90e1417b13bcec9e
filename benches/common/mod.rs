//! The data shared by the benches: a 10-column batch of mixed types (the shape the project's
//! throughput figures are quoted for) and its Fluss schema.
#![allow(dead_code)] // each bench uses a different part

use std::sync::Arc;

use arrow_array::{
    BooleanArray, Date32Array, Decimal128Array, Float64Array, Int32Array, Int64Array, RecordBatch,
    StringArray, TimestampMicrosecondArray,
};
use arrow_schema::{DataType as ArrowType, Field, Schema as ArrowSchema, TimeUnit};
use fluss_testkit::fluss::metadata::{DataField, DataTypes, Schema};

/// The Fluss schema of [`mixed_batch`].
pub fn mixed_schema() -> Schema {
    Schema::builder()
        .column("id", DataTypes::bigint())
        .column("qty", DataTypes::int())
        .column("price", DataTypes::double())
        .column("name", DataTypes::string())
        .column("active", DataTypes::boolean())
        .column("amount", DataTypes::decimal(18, 4))
        .column("created", DataTypes::timestamp_with_precision(6))
        .column("day", DataTypes::date())
        .column("note", DataTypes::string())
        .column("ref", DataTypes::bigint())
        .build()
        .expect("schema")
}

/// The Fluss fields of [`mixed_batch`], for the encoders.
pub fn mixed_fields() -> Vec<DataField> {
    mixed_schema().row_type().fields().clone()
}

/// Rows `start..start + rows`: BIGINT id, INT, DOUBLE, STRING of 21 chars, BOOLEAN,
/// DECIMAL(18,4), TIMESTAMP(6), DATE, a STRING with 10% nulls, BIGINT.
pub fn mixed_batch(start: i64, rows: usize) -> RecordBatch {
    let ids: Vec<i64> = (start..start + rows as i64).collect();
    let schema = Arc::new(ArrowSchema::new(vec![
        Field::new("id", ArrowType::Int64, true),
        Field::new("qty", ArrowType::Int32, true),
        Field::new("price", ArrowType::Float64, true),
        Field::new("name", ArrowType::Utf8, true),
        Field::new("active", ArrowType::Boolean, true),
        Field::new("amount", ArrowType::Decimal128(18, 4), true),
        Field::new(
            "created",
            ArrowType::Timestamp(TimeUnit::Microsecond, None),
            true,
        ),
        Field::new("day", ArrowType::Date32, true),
        Field::new("note", ArrowType::Utf8, true),
        Field::new("ref", ArrowType::Int64, true),
    ]));
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from(ids.clone())),
            Arc::new(Int32Array::from_iter_values(
                ids.iter().map(|i| (i % 1000) as i32),
            )),
            Arc::new(Float64Array::from_iter_values(
                ids.iter().map(|i| *i as f64 * 0.25),
            )),
            Arc::new(StringArray::from_iter_values(
                ids.iter().map(|i| format!("customer-{i:012}")),
            )),
            Arc::new(BooleanArray::from_iter(
                ids.iter().map(|i| Some(i % 2 == 0)),
            )),
            Arc::new(
                Decimal128Array::from_iter_values(ids.iter().map(|i| *i as i128 * 12_345))
                    .with_precision_and_scale(18, 4)
                    .expect("decimal"),
            ),
            Arc::new(TimestampMicrosecondArray::from_iter_values(
                ids.iter().map(|i| 1_700_000_000_000_000 + i * 1_000),
            )),
            Arc::new(Date32Array::from_iter_values(
                ids.iter().map(|i| 19_000 + (i % 1000) as i32),
            )),
            Arc::new(StringArray::from_iter(
                ids.iter()
                    .map(|i| (i % 10 != 0).then(|| format!("note {i}"))),
            )),
            Arc::new(Int64Array::from_iter_values(ids.iter().map(|i| i * 7))),
        ],
    )
    .expect("batch")
}
