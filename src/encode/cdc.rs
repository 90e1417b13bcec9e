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

//! Primary-key table changes as JSON change events, in the Debezium envelope or flat.
//!
//! Fluss' changelog holds `+I`, `-U`/`+U` pairs and `-D` (a `WAL` changelog image has lone
//! `+U`s instead of pairs). A pair becomes one `u` event with both images. fluss-rs returns a
//! pair within one poll, but the pair may straddle the end of what is pending, so a trailing
//! `-U` is left for the next call rather than split across two batches.
//!
//! A snapshot's rows (`starting_offset = "full"`, stamped by [`BucketStamp::snapshot`]) are
//! Debezium read events: `op = "r"` with `before: null`, and `source.offset` the offset the
//! snapshot was taken at.

use std::io::Write;
use std::time::{SystemTime, UNIX_EPOCH};

use arrow_array::RecordBatch;
use fluss::record::{ChangeType, ScanRecord};

use super::Encoder;
use crate::config::options::ChangelogFormat;
use crate::config::options::JsonOptions;
use crate::encode::batch::Batch;
use crate::encode::stamp::BucketStamp;
use crate::error::{Error, Result};
use crate::json::{RowEncoder, write_json_string};
use crate::records::{arrow_batch, same_batch};
use crate::schemas::Schemas;

/// The Debezium `op` of a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `c`: a row was inserted (`+I`, or `+A` should a log record ever pass through).
    Create,
    /// `u`: a row was updated (`-U`/`+U` pair, or a lone `+U`/`-U`).
    Update,
    /// `d`: a row was deleted (`-D`).
    Delete,
    /// `r`: a row of a bucket's snapshot (Debezium's read event).
    Read,
}

impl Op {
    fn code(self) -> &'static str {
        match self {
            Op::Create => "c",
            Op::Update => "u",
            Op::Delete => "d",
            Op::Read => "r",
        }
    }
}

/// One change event: up to two changelog records.
#[derive(Clone, Copy)]
pub struct Change<'r> {
    /// The event kind.
    pub op: Op,
    /// The row image before the change.
    pub before: Option<&'r ScanRecord>,
    /// The row image after the change.
    pub after: Option<&'r ScanRecord>,
    /// How many records the change consumed (2 for a pair).
    pub records: usize,
}

impl Change<'_> {
    /// The first record of the change: its offset identifies the change.
    fn first(&self) -> Option<&ScanRecord> {
        self.before.or(self.after)
    }

    /// The change type carried in the `fluss_change_type` header.
    fn change_type(&self) -> ChangeType {
        match (self.op, self.before, self.after) {
            (Op::Create | Op::Read, ..) => ChangeType::Insert,
            (Op::Delete, ..) => ChangeType::Delete,
            (Op::Update, _, Some(_)) => ChangeType::UpdateAfter,
            (Op::Update, _, None) => ChangeType::UpdateBefore,
        }
    }
}

/// Pairs the next change from `records`; `None` when the records end in a `-U` whose `+U`
/// has not been read yet (or there are none).
pub fn next_change(records: &[ScanRecord]) -> Option<Change<'_>> {
    let record = records.first()?;
    let single = |op, before, after| Change {
        op,
        before,
        after,
        records: 1,
    };
    Some(match record.change_type() {
        ChangeType::AppendOnly | ChangeType::Insert => single(Op::Create, None, Some(record)),
        ChangeType::UpdateAfter => single(Op::Update, None, Some(record)),
        ChangeType::Delete => single(Op::Delete, Some(record), None),
        ChangeType::UpdateBefore => match records.get(1) {
            None => return None,
            Some(next) if *next.change_type() == ChangeType::UpdateAfter => Change {
                op: Op::Update,
                before: Some(record),
                after: Some(next),
                records: 2,
            },
            // Not seen in a FULL changelog; kept as an update with no after image rather
            // than dropped.
            Some(_) => single(Op::Update, Some(record), None),
        },
    })
}

/// Encodes primary-key table changes as JSON messages.
pub struct ChangeMessages {
    schemas: Schemas,
    options: JsonOptions,
    format: ChangelogFormat,
    /// `"source":{"connector":"fluss","db":…,"table":…,"partition":` escaped once.
    source_prefix: Vec<u8>,
}

/// Row encoders for the (at most two) Arrow batches a change can touch.
struct Encoders<'r> {
    schemas: &'r Schemas,
    options: JsonOptions,
    /// The batch encoded last, its encoder and its schema id.
    current: Option<(&'r RecordBatch, RowEncoder<'r>, i32)>,
}

impl<'r> Encoders<'r> {
    fn write(&mut self, record: &'r ScanRecord, out: &mut Vec<u8>) -> Result<()> {
        let batch = arrow_batch(record.row().get_record_batch())?;
        let reuse =
            matches!(&self.current, Some((current, ..)) if same_batch(Some(*current), Some(batch)));
        if !reuse {
            let version = self.schemas.of(batch).ok_or(Error::UnknownSchema {
                columns: batch.num_columns(),
            })?;
            let encoder = RowEncoder::try_new(&version.fields, batch, self.options)
                .map_err(|source| Error::Encode { source })?;
            self.current = Some((batch, encoder, version.id));
        }
        if let Some((_, encoder, _)) = self.current.as_mut() {
            encoder.write_fields(record.row().get_row_id(), out);
        }
        Ok(())
    }

    /// The schema id of the image written last.
    fn schema_id(&self) -> i32 {
        self.current.as_ref().map_or(0, |(.., id)| *id)
    }
}

impl ChangeMessages {
    /// An encoder for changes of `db.table`, whose columns `schemas` names per batch.
    pub fn new(
        database: &str,
        table: &str,
        schemas: Schemas,
        options: JsonOptions,
        format: ChangelogFormat,
    ) -> Self {
        let mut source_prefix = br#""source":{"connector":"fluss","db":"#.to_vec();
        write_json_string(&mut source_prefix, database);
        source_prefix.extend_from_slice(br#","table":"#);
        write_json_string(&mut source_prefix, table);
        source_prefix.extend_from_slice(br#","partition":"#);
        Self {
            schemas,
            options,
            format,
            source_prefix,
        }
    }

    fn write_image<'r>(
        encoders: &mut Encoders<'r>,
        image: Option<&'r ScanRecord>,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        match image {
            None => out.extend_from_slice(b"null"),
            Some(record) => {
                out.push(b'{');
                encoders.write(record, out)?;
                out.push(b'}');
            }
        }
        Ok(())
    }

    fn write_debezium<'r>(
        &self,
        encoders: &mut Encoders<'r>,
        change: &Change<'r>,
        bucket: &BucketStamp,
        now_ms: i64,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        out.extend_from_slice(br#"{"op":""#);
        out.extend_from_slice(change.op.code().as_bytes());
        out.extend_from_slice(br#"","before":"#);
        Self::write_image(encoders, change.before, out)?;
        out.extend_from_slice(br#","after":"#);
        Self::write_image(encoders, change.after, out)?;
        out.push(b',');
        out.extend_from_slice(&self.source_prefix);
        match bucket.partition_name() {
            Some(name) => write_json_string(out, name),
            None => out.extend_from_slice(b"null"),
        }
        let first = change
            .first()
            .map_or((0, 0), |r| (bucket.offset_of(r.offset()), r.timestamp()));
        let _ = write!(
            out,
            r#","bucket":{},"offset":{},"ts_ms":{}}},"ts_ms":{now_ms}}}"#,
            bucket.key().bucket,
            first.0,
            first.1
        );
        Ok(())
    }

    fn write_flat<'r>(
        &self,
        encoders: &mut Encoders<'r>,
        change: &Change<'r>,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let image = match change.op {
            Op::Delete => change.before,
            _ => change.after.or(change.before),
        };
        out.push(b'{');
        if let Some(record) = image {
            encoders.write(record, out)?;
            // A table has at least one column, so the fields end before `__op`.
            out.push(b',');
        }
        out.extend_from_slice(br#""__op":""#);
        out.extend_from_slice(change.op.code().as_bytes());
        out.extend_from_slice(b"\"}");
        Ok(())
    }
}

impl Encoder for ChangeMessages {
    fn encode(
        &mut self,
        bucket: &BucketStamp,
        records: &[ScanRecord],
        batch: &mut Batch,
    ) -> Result<usize> {
        let mut encoders = Encoders {
            schemas: &self.schemas,
            options: self.options,
            current: None,
        };
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        let mut consumed = 0;
        let mut payload_hint = 256;
        while !batch.is_full() {
            let Some(mut change) = next_change(&records[consumed..]) else {
                break;
            };
            if bucket.snapshot_offset().is_some() {
                change.op = Op::Read;
            }
            let Some(first) = change.first() else {
                break;
            };
            let mut payload = Vec::with_capacity(payload_hint);
            match self.format {
                ChangelogFormat::Debezium => {
                    self.write_debezium(&mut encoders, &change, bucket, now_ms, &mut payload)?
                }
                ChangelogFormat::Flat => self.write_flat(&mut encoders, &change, &mut payload)?,
            }
            payload_hint = payload.len() + 32;
            batch.push(bucket.row(
                first.offset(),
                first.timestamp(),
                Some(change.change_type()),
                encoders.schema_id(),
                payload,
            ));
            consumed += change.records;
        }
        Ok(consumed)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Int64Array, StringArray};
    use arrow_schema::{DataType as ArrowType, Field, Schema};
    use fluss::metadata::{DataField, DataTypes, RowType};
    use fluss::row::ColumnarRow;

    use super::*;
    use crate::config::options::HeaderSet;
    use crate::encode::stamp::{SnapshotIndex, Stamper};
    use crate::position::BucketKey;

    fn fields() -> Vec<DataField> {
        vec![
            DataTypes::field("id", DataTypes::bigint()),
            DataTypes::field("name", DataTypes::string()),
        ]
    }

    /// Records over one Arrow batch of `(id, name)` rows with the given change types,
    /// offsets starting at 10 and commit timestamp 1000 + offset.
    fn records(rows: &[(i64, &str, ChangeType)]) -> Vec<ScanRecord> {
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", ArrowType::Int64, false),
            Field::new("name", ArrowType::Utf8, true),
        ]));
        let batch = Arc::new(
            RecordBatch::try_new(
                schema,
                vec![
                    Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0))),
                    Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.1))),
                ],
            )
            .unwrap(),
        );
        let row_type = Arc::new(RowType::new(fields()));
        rows.iter()
            .enumerate()
            .map(|(i, (_, _, change))| {
                let row = ColumnarRow::new(batch.clone(), row_type.clone(), i, None).unwrap();
                ScanRecord::new(row, 10 + i as i64, 1000 + i as i64, *change)
            })
            .collect()
    }

    fn encode(format: ChangelogFormat, records: &[ScanRecord]) -> (usize, Vec<String>) {
        let stamp = Stamper::new(7, "db.t", HeaderSet::ALL)
            .unwrap()
            .bucket(BucketKey::bucket(1), None)
            .unwrap();
        encode_with(&stamp, format, records)
    }

    fn encode_with(
        stamp: &BucketStamp,
        format: ChangelogFormat,
        records: &[ScanRecord],
    ) -> (usize, Vec<String>) {
        let mut encoder = ChangeMessages::new(
            "db",
            "t",
            Schemas::new(1, fields(), false),
            JsonOptions::default(),
            format,
        );
        let mut batch = Batch::new(100, 1 << 20);
        let consumed = encoder.encode(stamp, records, &mut batch).unwrap();
        let payloads = batch
            .into_messages()
            .unwrap()
            .into_iter()
            .map(|m| String::from_utf8(m.payload).unwrap())
            .collect();
        (consumed, payloads)
    }

    /// Replaces the wall-clock `ts_ms` at the end of a Debezium event.
    fn without_now(event: &str) -> String {
        let cut = event.rfind(",\"ts_ms\":").unwrap();
        format!("{}}}", &event[..cut])
    }

    #[test]
    fn pairs_become_one_update_and_singles_map_to_their_ops() {
        use ChangeType::*;
        let recs = records(&[
            (1, "a", Insert),
            (1, "a", UpdateBefore),
            (1, "b", UpdateAfter),
            (2, "x", UpdateAfter),
            (1, "b", Delete),
        ]);
        let (consumed, events) = encode(ChangelogFormat::Debezium, &recs);
        assert_eq!(consumed, 5);
        let events: Vec<String> = events.iter().map(|e| without_now(e)).collect();
        assert_eq!(
            events,
            [
                r#"{"op":"c","before":null,"after":{"id":1,"name":"a"},"source":{"connector":"fluss","db":"db","table":"t","partition":null,"bucket":1,"offset":10,"ts_ms":1000}}"#,
                r#"{"op":"u","before":{"id":1,"name":"a"},"after":{"id":1,"name":"b"},"source":{"connector":"fluss","db":"db","table":"t","partition":null,"bucket":1,"offset":11,"ts_ms":1001}}"#,
                r#"{"op":"u","before":null,"after":{"id":2,"name":"x"},"source":{"connector":"fluss","db":"db","table":"t","partition":null,"bucket":1,"offset":13,"ts_ms":1003}}"#,
                r#"{"op":"d","before":{"id":1,"name":"b"},"after":null,"source":{"connector":"fluss","db":"db","table":"t","partition":null,"bucket":1,"offset":14,"ts_ms":1004}}"#,
            ]
        );
    }

    #[test]
    fn a_trailing_update_before_waits_for_its_pair() {
        use ChangeType::*;
        let recs = records(&[(1, "a", Insert), (1, "a", UpdateBefore)]);
        let (consumed, events) = encode(ChangelogFormat::Flat, &recs);
        assert_eq!(consumed, 1, "the -U stays pending");
        assert_eq!(events, [r#"{"id":1,"name":"a","__op":"c"}"#]);
    }

    #[test]
    fn flat_events_carry_the_after_image_or_the_deleted_row() {
        use ChangeType::*;
        let recs = records(&[
            (1, "a", UpdateBefore),
            (1, "b", UpdateAfter),
            (1, "b", Delete),
        ]);
        let (consumed, events) = encode(ChangelogFormat::Flat, &recs);
        assert_eq!(consumed, 3);
        assert_eq!(
            events,
            [
                r#"{"id":1,"name":"b","__op":"u"}"#,
                r#"{"id":1,"name":"b","__op":"d"}"#
            ]
        );
    }

    #[test]
    fn snapshot_rows_are_read_events_at_the_snapshot_offset() {
        use ChangeType::*;
        let stamp = Stamper::new(7, "db.t", HeaderSet::ALL)
            .unwrap()
            .bucket(BucketKey::bucket(1), None)
            .unwrap()
            .snapshot(900, SnapshotIndex::Every);
        let recs = records(&[(1, "a", Insert), (2, "b", Insert)]);
        let (consumed, events) = encode_with(&stamp, ChangelogFormat::Debezium, &recs);
        assert_eq!(consumed, 2);
        assert_eq!(
            without_now(&events[1]),
            r#"{"op":"r","before":null,"after":{"id":2,"name":"b"},"source":{"connector":"fluss","db":"db","table":"t","partition":null,"bucket":1,"offset":900,"ts_ms":1001}}"#
        );
        let (_, flat) = encode_with(&stamp, ChangelogFormat::Flat, &recs);
        assert_eq!(
            flat,
            [
                r#"{"id":1,"name":"a","__op":"r"}"#,
                r#"{"id":2,"name":"b","__op":"r"}"#
            ]
        );
    }

    #[test]
    fn every_event_is_valid_json_with_a_wall_clock_ts() {
        use ChangeType::*;
        let recs = records(&[(1, "q\"uote", Insert)]);
        let (_, events) = encode(ChangelogFormat::Debezium, &recs);
        let v: serde_json::Value = serde_json::from_str(&events[0]).unwrap();
        assert_eq!(v["after"]["name"], "q\"uote");
        assert!(v["ts_ms"].as_i64().unwrap() > 1_600_000_000_000);
    }
}
