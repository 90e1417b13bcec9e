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

//! One JSON payload (`Vec<u8>`) per row from an Arrow record batch, three ways:
//! `ours` (the plugin's `RowEncoder`), `arrow_json` (arrow-json's line-delimited writer into one
//! buffer, then split into one `Vec` per row — the split is part of the cost) and `value_tree`
//! (a `serde_json::Value` object per row, then `serde_json::to_vec`).
//!
//! Inputs are built once, outside the timed closures. After criterion's report, a short
//! best-of-N timing of each contender prints rows/s, bytes/s and the ratios.
//!
//! `cargo bench --bench json_encode -- --measurement-time 5 --warm-up-time 2`

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Decimal128Type, Float64Type, Int32Type, Int64Type, TimestampMicrosecondType,
};
use arrow_array::{
    ArrayRef, BooleanArray, Date32Array, Decimal128Array, Float64Array, Int32Array, Int64Array,
    RecordBatch, StringArray, TimestampMicrosecondArray,
};
use criterion::{BenchmarkId, Criterion, Throughput};
use fluss::metadata::{DataField, DataType, DataTypes};
use iggy_connector_fluss_source::config::options::JsonOptions;
use iggy_connector_fluss_source::json::RowEncoder;

const ROWS: usize = 100_000;

/// Deterministic pseudo-random numbers (xorshift), so every run encodes the same batch.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// `min..min + spread` random alphanumeric characters.
    fn text(&mut self, min: usize, spread: u64) -> String {
        let len = min + self.below(spread) as usize;
        const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        (0..len)
            .map(|_| char::from(ALPHABET[self.below(ALPHABET.len() as u64) as usize]))
            .collect()
    }
}

/// The ten mixed columns; `group` suffixes the names so the wide batch repeats them.
fn mixed_columns(rng: &mut Rng, rows: usize, group: usize) -> Vec<(DataField, ArrayRef)> {
    let name = |base: &str| {
        if group == 0 {
            base.to_owned()
        } else {
            format!("{base}_{group}")
        }
    };
    let ids: Int64Array = (0..rows as i64).map(|i| i * 7 + 1_000_000).collect();
    let qty: Int32Array = (0..rows).map(|_| rng.below(10_000) as i32 - 100).collect();
    let price: Float64Array = (0..rows)
        .map(|_| rng.below(100_000_000) as f64 / 997.0)
        .collect();
    let names: StringArray = (0..rows).map(|_| Some(rng.text(16, 9))).collect();
    let active: BooleanArray = (0..rows).map(|_| Some(rng.below(2) == 0)).collect();
    let amount = Decimal128Array::from_iter_values(
        (0..rows).map(|_| rng.below(10_000_000_000) as i128 - 1_000_000_000),
    )
    .with_precision_and_scale(18, 4)
    .unwrap_or_else(|e| panic!("decimal type: {e}"));
    let created = TimestampMicrosecondArray::from_iter_values(
        (0..rows).map(|_| 1_700_000_000_000_000 + rng.below(100_000_000_000_000) as i64),
    );
    let day = Date32Array::from_iter_values((0..rows).map(|_| 18_000 + rng.below(3_000) as i32));
    let note: StringArray = (0..rows)
        .map(|_| (rng.below(10) != 0).then(|| rng.text(10, 20)))
        .collect();
    let seq: Int64Array = (0..rows).map(|_| rng.next() as i64).collect();
    vec![
        (
            DataTypes::field(name("id"), DataTypes::bigint()),
            Arc::new(ids),
        ),
        (
            DataTypes::field(name("qty"), DataTypes::int()),
            Arc::new(qty),
        ),
        (
            DataTypes::field(name("price"), DataTypes::double()),
            Arc::new(price),
        ),
        (
            DataTypes::field(name("name"), DataTypes::string()),
            Arc::new(names),
        ),
        (
            DataTypes::field(name("active"), DataTypes::boolean()),
            Arc::new(active),
        ),
        (
            DataTypes::field(name("amount"), DataTypes::decimal(18, 4)),
            Arc::new(amount),
        ),
        (
            DataTypes::field(name("created"), DataTypes::timestamp_with_precision(6)),
            Arc::new(created),
        ),
        (
            DataTypes::field(name("day"), DataTypes::date()),
            Arc::new(day),
        ),
        (
            DataTypes::field(name("note"), DataTypes::string()),
            Arc::new(note),
        ),
        (
            DataTypes::field(name("seq"), DataTypes::bigint()),
            Arc::new(seq),
        ),
    ]
}

/// A batch of `ROWS` rows with `groups` × 10 columns, and its Fluss fields.
fn input(groups: usize) -> (Vec<DataField>, RecordBatch) {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let columns: Vec<(DataField, ArrayRef)> = (0..groups)
        .flat_map(|g| mixed_columns(&mut rng, ROWS, g))
        .collect();
    let fields = columns.iter().map(|(f, _)| f.clone()).collect();
    let batch =
        RecordBatch::try_from_iter(columns.into_iter().map(|(f, a)| (f.name().to_owned(), a)))
            .unwrap_or_else(|e| panic!("batch: {e}"));
    (fields, batch)
}

fn ours(fields: &[DataField], batch: &RecordBatch) -> Vec<Vec<u8>> {
    let mut encoder = RowEncoder::try_new(fields, batch, JsonOptions::default())
        .unwrap_or_else(|e| panic!("{e}"));
    (0..batch.num_rows())
        .map(|row| {
            let mut payload = Vec::with_capacity(encoder.size_hint());
            encoder.write_object(row, &mut payload);
            payload
        })
        .collect()
}

fn arrow_json(batch: &RecordBatch) -> Vec<Vec<u8>> {
    let mut buf = Vec::with_capacity(16 << 20);
    let mut writer = arrow_json::WriterBuilder::new()
        .with_explicit_nulls(true)
        .build::<_, arrow_json::writer::LineDelimited>(&mut buf);
    writer.write(batch).unwrap_or_else(|e| panic!("{e}"));
    writer.finish().unwrap_or_else(|e| panic!("{e}"));
    drop(writer);
    // JSON escapes every newline inside strings, so each raw newline ends a row.
    buf.split(|&b| b == b'\n')
        .filter(|line| !line.is_empty())
        .map(<[u8]>::to_vec)
        .collect()
}

fn iso_timestamp(micros: i64) -> String {
    let days = micros.div_euclid(86_400_000_000);
    let in_day = micros.rem_euclid(86_400_000_000);
    let (y, m, d) = civil(days);
    let secs = in_day / 1_000_000;
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:06}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        in_day % 1_000_000
    )
}

fn civil(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// The straightforward approach: one `serde_json::Value` tree per row, types matched per value.
fn value_tree(fields: &[DataField], batch: &RecordBatch) -> Vec<Vec<u8>> {
    use serde_json::{Map, Value};
    (0..batch.num_rows())
        .map(|row| {
            let mut object = Map::with_capacity(fields.len());
            for (field, column) in fields.iter().zip(batch.columns()) {
                let value = if column.is_null(row) {
                    Value::Null
                } else {
                    match field.data_type() {
                        DataType::BigInt(_) => column.as_primitive::<Int64Type>().value(row).into(),
                        DataType::Int(_) => column.as_primitive::<Int32Type>().value(row).into(),
                        DataType::Double(_) => {
                            let v = column.as_primitive::<Float64Type>().value(row);
                            serde_json::Number::from_f64(v)
                                .map(Value::Number)
                                .unwrap_or_else(|| Value::String(v.to_string()))
                        }
                        DataType::String(_) => column.as_string::<i32>().value(row).into(),
                        DataType::Boolean(_) => column.as_boolean().value(row).into(),
                        DataType::Decimal(d) => {
                            let v = column.as_primitive::<Decimal128Type>().value(row);
                            let scale = 10i128.pow(d.scale());
                            let sign = if v < 0 { "-" } else { "" };
                            Value::String(format!(
                                "{sign}{}.{:0width$}",
                                (v / scale).unsigned_abs(),
                                (v % scale).unsigned_abs(),
                                width = d.scale() as usize
                            ))
                        }
                        DataType::Timestamp(_) => Value::String(iso_timestamp(
                            column.as_primitive::<TimestampMicrosecondType>().value(row),
                        )),
                        DataType::Date(_) => {
                            let (y, m, d) =
                                civil(i64::from(column.as_primitive::<Date32Type>().value(row)));
                            Value::String(format!("{y:04}-{m:02}-{d:02}"))
                        }
                        other => panic!("bench input has no {other}"),
                    }
                };
                object.insert(field.name().to_owned(), value);
            }
            serde_json::to_vec(&Value::Object(object)).unwrap_or_else(|e| panic!("{e}"))
        })
        .collect()
}

fn bench_group(c: &mut Criterion, label: &str, fields: &[DataField], batch: &RecordBatch) {
    let mut group = c.benchmark_group(format!("json_encode/{label}"));
    group.throughput(Throughput::Elements(batch.num_rows() as u64));
    group.sample_size(10);
    group.bench_function(BenchmarkId::from_parameter("ours"), |b| {
        b.iter(|| black_box(ours(fields, black_box(batch))))
    });
    group.bench_function(BenchmarkId::from_parameter("arrow_json"), |b| {
        b.iter(|| black_box(arrow_json(black_box(batch))))
    });
    group.bench_function(BenchmarkId::from_parameter("value_tree"), |b| {
        b.iter(|| black_box(value_tree(fields, black_box(batch))))
    });
    group.finish();
}

/// Nanoseconds this thread has spent on a CPU (Linux `schedstat`), if available. On a
/// shared, loaded machine this is steadier than wall time: waiting for a core is excluded.
fn thread_cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let nanos = stat.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(nanos))
}

/// Best of `runs` timings (CPU time when available, else wall time): the least disturbed.
fn best_of(runs: usize, mut f: impl FnMut() -> Vec<Vec<u8>>) -> (Duration, usize) {
    let mut best = Duration::MAX;
    let mut bytes = 0;
    for _ in 0..runs {
        let (wall, cpu) = (Instant::now(), thread_cpu_time());
        let payloads = black_box(f());
        let elapsed = match (cpu, thread_cpu_time()) {
            (Some(start), Some(end)) => end.saturating_sub(start),
            _ => wall.elapsed(),
        };
        best = best.min(elapsed);
        bytes = payloads.iter().map(Vec::len).sum();
    }
    (best, bytes)
}

fn print_summary(label: &str, fields: &[DataField], batch: &RecordBatch) {
    let rows = batch.num_rows() as f64;
    let runs = 11;
    let results = [
        ("ours", best_of(runs, || ours(fields, batch))),
        ("arrow_json", best_of(runs, || arrow_json(batch))),
        ("value_tree", best_of(runs, || value_tree(fields, batch))),
    ];
    let clock = if thread_cpu_time().is_some() {
        "thread CPU time"
    } else {
        "wall time"
    };
    println!(
        "\n{label}: {} rows x {} columns, best of {runs} by {clock}",
        batch.num_rows(),
        fields.len()
    );
    for (name, (time, bytes)) in &results {
        let secs = time.as_secs_f64();
        println!(
            "  {name:<11} {:>7.3} M rows/s  {:>7.1} MB/s  ({bytes} bytes, {:.1} ms)",
            rows / secs / 1e6,
            *bytes as f64 / secs / 1e6,
            secs * 1e3
        );
    }
    let ours = results[0].1.0.as_secs_f64();
    println!(
        "  ours/arrow_json = {:.2}x, ours/value_tree = {:.2}x",
        results[1].1.0.as_secs_f64() / ours,
        results[2].1.0.as_secs_f64() / ours
    );
}

fn main() {
    let narrow = input(1);
    let wide = input(5);
    let mut c = Criterion::default().configure_from_args();
    bench_group(&mut c, "100k_rows_10_cols", &narrow.0, &narrow.1);
    bench_group(&mut c, "100k_rows_50_cols", &wide.0, &wide.1);
    c.final_summary();
    // Profiling runs (`--profile-time`) should sample only the filtered benchmark.
    if std::env::args().any(|a| a == "--profile-time") {
        return;
    }
    print_summary("100k_rows_10_cols", &narrow.0, &narrow.1);
    print_summary("100k_rows_50_cols", &wide.0, &wide.1);
}
