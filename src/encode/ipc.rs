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

//! Arrow IPC payloads: each message is a self-contained Arrow IPC *stream* (schema, one
//! record batch, end marker) holding a run of rows from one Fluss record batch, so any Arrow
//! reader (`arrow_ipc::reader::StreamReader`, `pyarrow.ipc.open_stream`) decodes it alone.
//!
//! Rows are zero-copy slices of the fetched batches; a batch larger than `max_batch_bytes` is
//! split into slices that fit. Primary-key tables gain the leading columns of Fluss'
//! `$changelog` view: `_change_type`, `_log_offset`, `_commit_timestamp`. A snapshot's rows
//! (`starting_offset = "full"`) are `insert`s whose `_log_offset` is the offset the snapshot
//! was taken at and whose `_commit_timestamp` is when it was taken.
//!
//! A consumer must be able to tell the position of every row of a message (to drop exactly
//! the rows it applied before when a replay is cut into messages differently). A log table
//! read without a filter needs nothing more: a message's rows sit at consecutive offsets from
//! the one in its id. Read through a `filter`, its kept rows have gaps, so its messages lead
//! with a `_log_offset` column too ([`Leading::LogOffset`]). A snapshot's rows need none:
//! their indexes count the rows the filter kept, so they are consecutive in every message.
//!
//! Compressed payloads (`arrow_ipc_compression`) are built when the batch is handed over, on
//! several threads ([`Batch::push_deferred`]): compression costs far more than slicing, and one
//! core compressing batch after batch was the bound. Until then a message counts with its
//! uncompressed size times the compression ratio seen so far.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray, TimestampMillisecondArray};
use arrow_ipc::CompressionType;
use arrow_ipc::writer::{IpcWriteOptions, StreamWriter};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use fluss::record::{ChangeType, ScanRecord};

use super::{Encoder, Run, runs};
use crate::config::options::IpcCompression;
use crate::encode::batch::Batch;
use crate::encode::stamp::BucketStamp;
use crate::error::{Error, Result};
use crate::schemas::Schemas;

/// The columns a message carries before the table's, chosen at open from the table kind and
/// whether a `filter` is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leading {
    /// None: a log table read whole, whose message rows sit at consecutive offsets.
    Nothing,
    /// `_log_offset`: a log table read through a filter, whose kept rows have gaps.
    LogOffset,
    /// `_change_type`, `_log_offset`, `_commit_timestamp`: a primary-key table's changes.
    Changelog,
}

impl Leading {
    /// The leading columns of messages of a primary-key table (`primary_key`) or a log table,
    /// read through a filter (`filtered`) or not.
    pub fn of(primary_key: bool, filtered: bool) -> Self {
        match (primary_key, filtered) {
            (true, _) => Self::Changelog,
            (false, true) => Self::LogOffset,
            (false, false) => Self::Nothing,
        }
    }

    fn fields(self) -> Vec<Arc<Field>> {
        let offset = || Arc::new(Field::new("_log_offset", DataType::Int64, false));
        match self {
            Self::Nothing => Vec::new(),
            Self::LogOffset => vec![offset()],
            Self::Changelog => vec![
                Arc::new(Field::new("_change_type", DataType::Utf8, false)),
                offset(),
                Arc::new(Field::new(
                    "_commit_timestamp",
                    DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
                    false,
                )),
            ],
        }
    }

    fn columns(self, rows: &[ScanRecord], bucket: &BucketStamp) -> Vec<ArrayRef> {
        let offsets = || -> ArrayRef {
            Arc::new(Int64Array::from_iter_values(
                rows.iter().map(|r| bucket.offset_of(r.offset())),
            ))
        };
        match self {
            Self::Nothing => Vec::new(),
            Self::LogOffset => vec![offsets()],
            Self::Changelog => vec![
                Arc::new(StringArray::from_iter_values(
                    rows.iter().map(|r| change_name(*r.change_type())),
                )),
                offsets(),
                Arc::new(
                    TimestampMillisecondArray::from_iter_values(rows.iter().map(|r| r.timestamp()))
                        .with_timezone("UTC"),
                ),
            ],
        }
    }
}

/// Encodes runs of rows as Arrow IPC stream messages.
pub struct IpcMessages {
    leading: Leading,
    /// Names each batch's schema id (the stream itself carries the batch's Arrow schema).
    schemas: Schemas,
    options: IpcWriteOptions,
    max_bytes: usize,
    /// The schema with the leading columns, rebuilt only when the table's batch schema changes.
    leading_schema: Option<(SchemaRef, SchemaRef)>,
    /// Compressed payloads against their uncompressed estimates; `None` without compression.
    ratio: Option<Arc<Ratio>>,
}

/// Bytes in and out of the compressed payloads built so far.
#[derive(Default)]
struct Ratio {
    estimated: AtomicU64,
    compressed: AtomicU64,
}

impl Ratio {
    /// `estimate` scaled by the ratio seen so far (1 before the first payload).
    fn scale(&self, estimate: usize) -> usize {
        let estimated = self.estimated.load(Ordering::Relaxed);
        let compressed = self.compressed.load(Ordering::Relaxed);
        if estimated == 0 {
            return estimate;
        }
        (estimate as u128 * u128::from(compressed) / u128::from(estimated)) as usize
    }

    fn record(&self, estimate: usize, compressed: usize) {
        self.estimated.fetch_add(estimate as u64, Ordering::Relaxed);
        self.compressed
            .fetch_add(compressed as u64, Ordering::Relaxed);
    }
}

/// `_change_type` values, named like Fluss' `$changelog` view.
fn change_name(change: ChangeType) -> &'static str {
    match change {
        ChangeType::AppendOnly | ChangeType::Insert => "insert",
        ChangeType::UpdateBefore => "update_before",
        ChangeType::UpdateAfter => "update_after",
        ChangeType::Delete => "delete",
    }
}

/// zstd's level 1 rather than arrow-ipc's default 3: on the benches' rows it compresses 20%
/// faster for 0.4% more bytes (BENCHMARKS.md "Compression").
const ZSTD_LEVEL: i32 = 1;

impl IpcMessages {
    /// An encoder whose messages lead with the `leading` columns.
    pub fn new(
        leading: Leading,
        schemas: Schemas,
        compression: IpcCompression,
        max_bytes: usize,
    ) -> Result<Self> {
        let (compression, level) = match compression {
            IpcCompression::None => (None, None),
            IpcCompression::Lz4 => (Some(CompressionType::LZ4_FRAME), None),
            IpcCompression::Zstd => (Some(CompressionType::ZSTD), Some(ZSTD_LEVEL)),
        };
        let ratio = compression.is_some().then(Arc::default);
        let options = IpcWriteOptions::default()
            .try_with_compression(compression)
            .and_then(|options| options.try_with_compression_level(level))
            .map_err(|cause| Error::Ipc { cause })?;
        Ok(Self {
            leading,
            schemas,
            options,
            max_bytes,
            leading_schema: None,
            ratio,
        })
    }

    #[cfg(test)]
    fn write_stream(&self, batch: &RecordBatch) -> Result<Vec<u8>> {
        write_stream(batch, &self.options, self.max_bytes)
    }

    /// `slice` behind the leading columns of its `rows`.
    fn with_leading_columns(
        &mut self,
        slice: RecordBatch,
        rows: &[ScanRecord],
        bucket: &BucketStamp,
    ) -> Result<RecordBatch> {
        if self.leading == Leading::Nothing {
            return Ok(slice);
        }
        let table_schema = slice.schema();
        let schema = match &self.leading_schema {
            Some((table, leading)) if Arc::ptr_eq(table, &table_schema) => leading.clone(),
            _ => {
                let mut fields = self.leading.fields();
                fields.extend(table_schema.fields().iter().cloned());
                let leading = Arc::new(Schema::new(fields));
                self.leading_schema = Some((table_schema.clone(), leading.clone()));
                leading
            }
        };
        let mut columns = self.leading.columns(rows, bucket);
        columns.extend(slice.columns().iter().cloned());
        RecordBatch::try_new(schema, columns).map_err(|cause| Error::Ipc { cause })
    }
}

impl Encoder for IpcMessages {
    fn encode(
        &mut self,
        bucket: &BucketStamp,
        records: &[ScanRecord],
        batch: &mut Batch,
    ) -> Result<usize> {
        let mut consumed = 0;
        // A handle of its own (the registry is shared): the runs borrow it while `self` builds
        // each message.
        let schemas = self.schemas.clone();
        for run in runs(&schemas, records) {
            let Run {
                start,
                end,
                arrow,
                version,
            } = run?;
            let schema_id = version.id;
            let per_message = rows_per_message(arrow, self.max_bytes);
            let mut at = start;
            while at < end {
                if batch.is_full() {
                    return Ok(consumed);
                }
                let run = contiguous_rows(&records[at..end]).min(per_message);
                let rows = &records[at..at + run];
                let first = &rows[0];
                let slice = arrow.slice(first.row().get_row_id(), run);
                let slice = self.with_leading_columns(slice, rows, bucket)?;
                let estimate = bytes_per_row(arrow) * run;
                match &self.ratio {
                    None => {
                        let payload = write_stream(&slice, &self.options, self.max_bytes)?;
                        batch.push(bucket.ipc(
                            first.offset(),
                            first.timestamp(),
                            run,
                            schema_id,
                            payload,
                        ));
                    }
                    Some(ratio) => {
                        let message = bucket.ipc(
                            first.offset(),
                            first.timestamp(),
                            run,
                            schema_id,
                            Vec::new(),
                        );
                        let (options, max_bytes, ratio) =
                            (self.options.clone(), self.max_bytes, ratio.clone());
                        let scaled = ratio.scale(estimate);
                        batch.push_deferred(
                            message,
                            estimate,
                            scaled,
                            Box::new(move || {
                                let payload = write_stream(&slice, &options, max_bytes)?;
                                ratio.record(estimate, payload.len());
                                Ok(payload)
                            }),
                        );
                    }
                }
                at += run;
                consumed += run;
            }
        }
        Ok(consumed)
    }
}

/// One IPC stream holding `batch`.
fn write_stream(
    batch: &RecordBatch,
    options: &IpcWriteOptions,
    max_bytes: usize,
) -> Result<Vec<u8>> {
    let ipc = |cause| Error::Ipc { cause };
    let capacity = batch.get_array_memory_size().min(max_bytes) + 1024;
    let mut writer = StreamWriter::try_new_with_options(
        Vec::with_capacity(capacity),
        &batch.schema(),
        options.clone(),
    )
    .map_err(ipc)?;
    writer.write(batch).map_err(ipc)?;
    writer.finish().map_err(ipc)?;
    writer.into_inner().map_err(ipc)
}

/// How many leading records point at consecutive rows of their batch (a slice needs that).
fn contiguous_rows(records: &[ScanRecord]) -> usize {
    let Some(first) = records.first() else {
        return 0;
    };
    let base = first.row().get_row_id();
    records
        .iter()
        .enumerate()
        .take_while(|(i, r)| r.row().get_row_id() == base + i)
        .count()
}

/// Uncompressed bytes per row of `batch` (its buffers over its rows).
fn bytes_per_row(batch: &RecordBatch) -> usize {
    (batch.get_array_memory_size() / batch.num_rows().max(1)).max(1)
}

/// Rows per message so that one message stays near `max_bytes`.
fn rows_per_message(batch: &RecordBatch, max_bytes: usize) -> usize {
    (max_bytes / bytes_per_row(batch)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::arrow_batch;
    use arrow_array::Array;
    use arrow_ipc::reader::StreamReader;

    /// A registry naming every batch schema id 1 (these tests need no Fluss fields).
    fn any_schema() -> Schemas {
        Schemas::new(1, Vec::new(), true)
    }

    fn sample(rows: i64) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("name", DataType::Utf8, true),
        ]));
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int64Array::from_iter_values(0..rows)),
                Arc::new(StringArray::from_iter(
                    (0..rows).map(|i| (i % 3 != 0).then(|| format!("n{i}"))),
                )),
            ],
        )
        .unwrap()
    }

    fn read_back(payload: &[u8]) -> Vec<RecordBatch> {
        StreamReader::try_new(payload, None)
            .unwrap()
            .collect::<std::result::Result<_, _>>()
            .unwrap()
    }

    #[test]
    fn a_slice_round_trips_through_the_stream_reader_in_every_compression() {
        let batch = sample(1000);
        let slice = batch.slice(100, 250);
        for compression in [
            IpcCompression::None,
            IpcCompression::Lz4,
            IpcCompression::Zstd,
        ] {
            let encoder =
                IpcMessages::new(Leading::Nothing, any_schema(), compression, 1 << 20).unwrap();
            let payload = encoder.write_stream(&slice).unwrap();
            let back = read_back(&payload);
            assert_eq!(back.len(), 1, "{compression:?}");
            assert_eq!(back[0], slice, "{compression:?}");
        }
    }

    #[test]
    fn a_slice_writes_only_its_own_rows() {
        let batch = sample(100_000);
        let encoder = IpcMessages::new(
            Leading::Nothing,
            any_schema(),
            IpcCompression::None,
            1 << 30,
        )
        .unwrap();
        let whole = encoder.write_stream(&batch).unwrap().len();
        let tenth = encoder.write_stream(&batch.slice(0, 10_000)).unwrap().len();
        assert!(
            tenth * 5 < whole,
            "slice {tenth} bytes vs whole {whole} bytes"
        );
    }

    #[test]
    fn snapshot_rows_are_inserts_at_the_snapshot_offset() {
        use crate::config::options::HeaderSet;
        use crate::encode::stamp::{SnapshotIndex, Stamper, snapshot_id};
        use crate::position::BucketKey;
        use fluss::metadata::{DataTypes, RowType};
        use fluss::row::ColumnarRow;

        let batch = Arc::new(sample(5));
        let row_type = Arc::new(RowType::new(vec![
            DataTypes::field("id", DataTypes::bigint()),
            DataTypes::field("name", DataTypes::string()),
        ]));
        let row = ColumnarRow::new(batch, row_type, 0, None).unwrap();
        let records: Vec<ScanRecord> = (0..5)
            .map(|i| {
                let mut row = row.clone();
                row.set_row_id(i);
                ScanRecord::new(row, i as i64, 1234, ChangeType::Insert)
            })
            .collect();
        let stamp = Stamper::new(7, "db.t", HeaderSet::ALL)
            .unwrap()
            .bucket(BucketKey::bucket(1), None)
            .unwrap()
            .snapshot(300, SnapshotIndex::Every);
        let mut encoder = IpcMessages::new(
            Leading::Changelog,
            any_schema(),
            IpcCompression::None,
            1 << 20,
        )
        .unwrap();
        let mut out = Batch::new(10, usize::MAX);
        assert_eq!(encoder.encode(&stamp, &records, &mut out).unwrap(), 5);
        let messages = out.into_messages().unwrap();
        assert_eq!(messages.len(), 1);
        assert_eq!(
            messages[0].id,
            Some(snapshot_id(7, None, 1, (300, SnapshotIndex::Every), 0))
        );
        let back = &read_back(&messages[0].payload)[0];
        let change = back
            .column(0)
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap();
        let offsets = back
            .column(1)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap();
        assert!((0..5).all(|i| change.value(i) == "insert" && offsets.value(i) == 300));
    }

    #[test]
    fn filtered_log_rows_lead_with_their_offsets_in_every_cut() {
        use crate::config::options::HeaderSet;
        use crate::encode::stamp::{Stamper, message_id};
        use crate::position::BucketKey;

        // Kept rows of a filter: consecutive rows of a compacted batch, offsets with gaps.
        let offsets: Vec<i64> = (0..50).map(|i| 100 + i * i).collect();
        let records: Vec<ScanRecord> = log_records(sample(50))
            .into_iter()
            .zip(&offsets)
            .map(|(r, offset)| {
                ScanRecord::new(r.row().clone(), *offset, r.timestamp(), *r.change_type())
            })
            .collect();
        let stamp = Stamper::new(7, "db.t", HeaderSet::ALL)
            .unwrap()
            .bucket(BucketKey::bucket(1), None)
            .unwrap();
        let per_row = bytes_per_row(
            &arrow_batch(records[0].row().get_record_batch())
                .unwrap()
                .clone(),
        );
        for rows_per_message in [1, 7, 50] {
            let mut encoder = IpcMessages::new(
                Leading::LogOffset,
                any_schema(),
                IpcCompression::None,
                per_row * rows_per_message,
            )
            .unwrap();
            let mut out = Batch::new(100, usize::MAX);
            assert_eq!(encoder.encode(&stamp, &records, &mut out).unwrap(), 50);
            let mut seen = Vec::new();
            for message in out.into_messages().unwrap() {
                let back = &read_back(&message.payload)[0];
                assert_eq!(back.schema().field(0).name(), "_log_offset");
                assert_eq!(back.schema().field(1).name(), "id");
                let column = back
                    .column(0)
                    .as_any()
                    .downcast_ref::<Int64Array>()
                    .unwrap();
                assert_eq!(message.id, Some(message_id(7, None, 1, column.value(0))));
                seen.extend(column.values().iter().copied());
            }
            assert_eq!(seen, offsets, "{rows_per_message} rows per message");
        }
    }

    /// Log records pointing at every row of `batch`.
    fn log_records(batch: RecordBatch) -> Vec<ScanRecord> {
        use fluss::metadata::{DataTypes, RowType};
        use fluss::row::ColumnarRow;

        let rows = batch.num_rows();
        let row_type = Arc::new(RowType::new(vec![
            DataTypes::field("id", DataTypes::bigint()),
            DataTypes::field("name", DataTypes::string()),
        ]));
        let row = ColumnarRow::new(Arc::new(batch), row_type, 0, None).unwrap();
        (0..rows)
            .map(|i| {
                let mut row = row.clone();
                row.set_row_id(i);
                ScanRecord::new(row, i as i64, 1234, ChangeType::AppendOnly)
            })
            .collect()
    }

    #[test]
    fn compressed_payloads_are_built_at_hand_over_and_counted_by_the_ratio_seen() {
        use crate::config::options::HeaderSet;
        use crate::encode::stamp::Stamper;
        use crate::position::BucketKey;

        let whole = sample(20_000);
        let records = log_records(whole.clone());
        let stamp = Stamper::new(7, "db.t", HeaderSet::ALL)
            .unwrap()
            .bucket(BucketKey::bucket(0), None)
            .unwrap();
        let per_row = bytes_per_row(&whole);
        let mut encoder = IpcMessages::new(
            Leading::Nothing,
            any_schema(),
            IpcCompression::Zstd,
            per_row * 1000,
        )
        .unwrap();
        let mut rows_back = Vec::new();
        let mut estimated = Vec::new();
        for half in records.chunks(10_000) {
            let mut out = Batch::new(100, usize::MAX);
            assert_eq!(encoder.encode(&stamp, half, &mut out).unwrap(), 10_000);
            assert!(
                out.has_deferred(),
                "compressed payloads wait for the hand-over"
            );
            estimated.push(out.bytes());
            let messages = out.into_messages().unwrap();
            assert_eq!(messages.len(), 10, "1000 rows per message");
            for message in messages {
                rows_back.extend(read_back(&message.payload));
            }
        }
        let back = arrow_select::concat::concat_batches(&whole.schema(), &rows_back).unwrap();
        assert_eq!(back, whole, "every row, in order");
        assert_eq!(
            estimated[0],
            per_row * 10_000,
            "no ratio before the first payload"
        );
        assert!(
            estimated[1] * 2 < estimated[0],
            "then the compression ratio scales the estimate: {estimated:?}"
        );
    }

    #[test]
    fn rows_per_message_follows_the_byte_cap() {
        let batch = sample(10_000);
        let per_row = batch.get_array_memory_size() / 10_000;
        assert_eq!(rows_per_message(&batch, per_row * 100), 100);
        assert_eq!(rows_per_message(&batch, 1), 1);
        assert_eq!(
            rows_per_message(&batch, usize::MAX / 2),
            usize::MAX / 2 / per_row
        );
        assert!(batch.column(0).len() == 10_000);
    }
}
