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

//! A bucket's KV snapshot files read in key order ([`super::rocks`]), a bounded batch at a
//! time. Each value is a 2-byte little-endian schema id followed by the row in the table's KV
//! format (COMPACTED); each row is decoded by its own schema version and shown in the target
//! version ([`super::versions`]), into Arrow batches of the scanned columns, as the
//! changelog's batches are.

use std::collections::BTreeMap;

use arrow_array::RecordBatch;
use fluss::metadata::{KvFormat, RowType};
use fluss::record::{RowAppendRecordBatchBuilder, to_arrow_schema};

use super::RowBatches;
use super::compacted::{Direct, Refused};
use super::rocks::{self, Checkpoint};
use super::versions::Versions;
use crate::client::table::Table;
use crate::error::{Error, Result};
use crate::position::BucketKey;
use crate::snapshot::kv::files::LocalCopy;

/// Bytes of the schema id in front of every value.
const SCHEMA_ID_BYTES: usize = 2;

/// How a table's KV values are laid out and which of their columns are read.
#[derive(Debug, Clone)]
pub struct Layout {
    /// The row type rows are shown in (every column of the target version).
    pub row_type: RowType,
    /// The values' format.
    pub kv_format: KvFormat,
    /// The schema id of `row_type`.
    pub schema_id: i16,
    /// Every column of each schema version values may carry, by id (`row_type`'s among them).
    pub versions: BTreeMap<i16, RowType>,
    /// The columns read (`None` = all), as the changelog's batches hold them.
    pub projection: Option<Vec<usize>>,
}

impl Layout {
    /// The layout of `table` with the schema versions it knows: rows shown in the newest (or
    /// with `columns`, in the open-time version, which the projection indexes).
    pub fn of(table: &Table) -> Self {
        let id16 = |id: i32| i16::try_from(id).unwrap_or(i16::MAX);
        let (schema_id, row_type) = table.schemas.target().unwrap_or_else(|| {
            (
                table.info.get_schema_id(),
                table.info.get_row_type().clone(),
            )
        });
        let mut versions: BTreeMap<i16, RowType> = table
            .schemas
            .row_types()
            .into_iter()
            .map(|(id, row_type)| (id16(id), row_type))
            .collect();
        versions
            .entry(id16(schema_id))
            .or_insert_with(|| row_type.clone());
        Self {
            row_type,
            kv_format: table
                .info
                .get_table_config()
                .get_kv_format()
                .unwrap_or(KvFormat::COMPACTED),
            schema_id: id16(schema_id),
            versions,
            projection: table.projection.clone(),
        }
    }
}

/// The values of a snapshot's rows in key order: its files ([`rocks::Rows`]), or rows made
/// in memory by tests.
pub trait Values: Send + Sync {
    /// Moves to the next row; `false` after the last.
    fn advance(&mut self) -> std::result::Result<bool, rocks::Error>;
    /// The current row's value.
    fn value(&self) -> &[u8];
}

impl Values for rocks::Rows {
    fn advance(&mut self) -> std::result::Result<bool, rocks::Error> {
        rocks::Rows::advance(self)
    }

    fn value(&self) -> &[u8] {
        rocks::Rows::value(self)
    }
}

/// The rows of one bucket's snapshot files.
pub struct KvRows {
    key: BucketKey,
    // Declared before `copy`: the files close before their directory is removed.
    values: Box<dyn Values>,
    copy: LocalCopy,
    decoding: Decoding,
    batch_rows: usize,
    /// Every row was read.
    ended: bool,
    /// Rows read so far.
    pub read: u64,
}

/// How the values are turned into batches of the scanned columns.
struct Decoding {
    row_type: RowType,
    schema_id: i16,
    versions: Versions,
    /// The direct decoder, when every column has a type it decodes (else `versions`).
    direct: Option<Direct>,
    projection: Option<Vec<usize>>,
}

impl KvRows {
    /// Opens the files of `copy` (bucket `key`, laid out as `layout`), to be read
    /// `batch_rows` rows at a time.
    pub fn open(
        layout: &Layout,
        key: BucketKey,
        copy: LocalCopy,
        batch_rows: usize,
    ) -> Result<Self> {
        let values = Checkpoint::open(copy.dir())
            .and_then(|checkpoint| checkpoint.rows())
            .map_err(|e| corrupt(key, &copy, e.to_string()))?;
        Self::over(layout, key, copy, Box::new(values), batch_rows)
    }

    /// Reads `values` as the rows of `copy`.
    pub fn over(
        layout: &Layout,
        key: BucketKey,
        copy: LocalCopy,
        values: Box<dyn Values>,
        batch_rows: usize,
    ) -> Result<Self> {
        let versions = Versions::new(
            layout.kv_format,
            &layout.versions,
            layout.row_type.fields().len(),
        )
        .map_err(|e| corrupt(key, &copy, e.to_string()))?;
        let direct = match layout.kv_format {
            KvFormat::COMPACTED => to_arrow_schema(&layout.row_type)
                .ok()
                .and_then(|schema| Direct::new(&layout.row_type, schema, &layout.versions)),
            _ => None,
        };
        Ok(Self {
            key,
            values,
            copy,
            decoding: Decoding {
                row_type: layout.row_type.clone(),
                schema_id: layout.schema_id,
                versions,
                direct,
                projection: layout.projection.clone(),
            },
            batch_rows: batch_rows.max(1),
            ended: false,
            read: 0,
        })
    }

    /// Bytes of the snapshot's files on local disk.
    pub fn disk_bytes(&self) -> u64 {
        self.copy.bytes
    }

    /// The local directory of the snapshot's files.
    pub fn dir(&self) -> &std::path::Path {
        self.copy.dir()
    }

    /// Skips the first `rows` rows (already handed over by an earlier attempt at the same
    /// snapshot); returns how many were there to skip.
    pub fn skip(&mut self, rows: u64) -> Result<u64> {
        let mut skipped = 0;
        while skipped < rows {
            if !self.step()? {
                break;
            }
            skipped += 1;
        }
        self.read += skipped;
        Ok(skipped)
    }

    /// Moves to the next row; `false` (and ended) after the last.
    fn step(&mut self) -> Result<bool> {
        if self.ended {
            return Ok(false);
        }
        let more = self
            .values
            .advance()
            .map_err(|e| corrupt(self.key, &self.copy, e.to_string()))?;
        self.ended = !more;
        Ok(more)
    }

    fn corrupt(&self, cause: String) -> Error {
        corrupt(self.key, &self.copy, cause)
    }
}

/// The error of a snapshot copy that cannot be read.
fn corrupt(key: BucketKey, copy: &LocalCopy, cause: String) -> Error {
    Error::SnapshotCorrupt {
        key,
        path: copy.dir().to_path_buf(),
        cause,
    }
}

impl RowBatches for KvRows {
    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        if self.ended {
            return Ok(None);
        }
        let batch = match self.decoding.direct.take() {
            Some(mut direct) => {
                let rows = self.read_values(|id, value| direct.append(id, value));
                let batch = rows.and_then(|rows| {
                    (rows > 0)
                        .then(|| direct.finish())
                        .transpose()
                        .map_err(|e| self.corrupt(e.to_string()))
                });
                self.decoding.direct = Some(direct);
                batch?
            }
            None => {
                let mut builder = RowAppendRecordBatchBuilder::new(&self.decoding.row_type)
                    .map_err(|e| self.corrupt(e.to_string()))?;
                // A clone (an `Arc` per schema version): `read_values` borrows `self`.
                let versions = self.decoding.versions.clone();
                let append = |id, value: &[u8]| {
                    let row = versions.decode(id, value).ok_or(Refused::Schema(id))?;
                    let appended = builder.append(&row);
                    drop(row);
                    appended
                        .map(drop)
                        .map_err(|e| Refused::Corrupt(e.to_string()))
                };
                let rows = self.read_values(append)?;
                (rows > 0)
                    .then(|| builder.build_arrow_record_batch())
                    .transpose()
                    .map_err(|e| self.corrupt(e.to_string()))?
                    .map(std::sync::Arc::unwrap_or_clone)
            }
        };
        let Some(batch) = batch else {
            return Ok(None);
        };
        let batch = match &self.decoding.projection {
            Some(columns) => batch
                .project(columns)
                .map_err(|e| self.corrupt(e.to_string()))?,
            None => batch,
        };
        Ok(Some(batch))
    }
}

impl KvRows {
    /// Hands the next values (at most `batch_rows`) to `append` with their schema ids, in key
    /// order; returns how many.
    fn read_values(
        &mut self,
        mut append: impl FnMut(i16, &[u8]) -> std::result::Result<(), Refused>,
    ) -> Result<usize> {
        let mut rows = 0;
        while rows < self.batch_rows && self.step()? {
            let value = self.values.value();
            let Some((id, row)) = value.split_first_chunk::<SCHEMA_ID_BYTES>() else {
                return Err(self.corrupt(format!("a value of {} bytes", value.len())));
            };
            append(i16::from_le_bytes(*id), row).map_err(|refused| match refused {
                Refused::Schema(found) => Error::SnapshotSchema {
                    key: self.key,
                    found,
                    expected: self.decoding.schema_id,
                },
                Refused::Corrupt(cause) => self.corrupt(cause),
            })?;
            rows += 1;
        }
        self.read += rows as u64;
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use arrow_array::{Array, Int32Array, Int64Array, StringArray};
    use fluss::metadata::{DataField, DataTypes};
    use fluss::row::Datum;
    use fluss::row::encode::{RowEncoder, RowEncoderFactory};

    use super::*;

    fn two_columns() -> RowType {
        RowType::new(vec![
            DataField::new("id", DataTypes::bigint(), None),
            DataField::new("name", DataTypes::string(), None),
        ])
    }

    fn layout(projection: Option<Vec<usize>>) -> Layout {
        Layout {
            row_type: two_columns(),
            kv_format: KvFormat::COMPACTED,
            schema_id: 1,
            versions: BTreeMap::from([(1, two_columns())]),
            projection,
        }
    }

    /// Schema 2 adds a nullable `extra` INT to schema 1.
    fn three_columns() -> RowType {
        let mut fields = two_columns().fields().clone();
        fields.push(DataField::new("extra", DataTypes::int(), None));
        RowType::new(fields)
    }

    /// Values in memory, in the order a snapshot's files give them.
    struct Memory {
        values: std::vec::IntoIter<Vec<u8>>,
        current: Vec<u8>,
    }

    impl Values for Memory {
        fn advance(&mut self) -> std::result::Result<bool, rocks::Error> {
            match self.values.next() {
                Some(value) => {
                    self.current = value;
                    Ok(true)
                }
                None => Ok(false),
            }
        }

        fn value(&self) -> &[u8] {
            &self.current
        }
    }

    /// A snapshot of `rows` rows (`id`, `name-<id>`) as Fluss writes its KV store: each value
    /// is the schema id (little endian) and the COMPACTED row.
    fn database(rows: i64, schema_id: i16) -> Snapshot {
        database_of(rows, |_| schema_id)
    }

    /// A snapshot's copy (an empty directory, removed with it) and its values.
    struct Snapshot {
        copy: LocalCopy,
        values: Memory,
    }

    impl Snapshot {
        fn open(self, layout: &Layout, key: BucketKey, batch_rows: usize) -> KvRows {
            KvRows::over(layout, key, self.copy, Box::new(self.values), batch_rows).unwrap()
        }
    }

    /// Like [`database`], row `id` written with schema `schema_of(id)` (2: `extra = id * 10`).
    fn database_of(rows: i64, schema_of: impl Fn(i64) -> i16) -> Snapshot {
        static SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "kv-rows-test-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let mut old = RowEncoderFactory::create(KvFormat::COMPACTED, two_columns()).unwrap();
        let mut new = RowEncoderFactory::create(KvFormat::COMPACTED, three_columns()).unwrap();
        let mut values = Vec::new();
        for id in 0..rows {
            let schema_id = schema_of(id);
            let encoder = if schema_id == 2 { &mut new } else { &mut old };
            encoder.start_new_row().unwrap();
            encoder.encode_field(0, Datum::from(id)).unwrap();
            let name = format!("name-{id}");
            encoder.encode_field(1, Datum::from(name.as_str())).unwrap();
            if schema_id == 2 {
                encoder
                    .encode_field(2, Datum::from(id as i32 * 10))
                    .unwrap();
            }
            let row = encoder.finish_row().unwrap();
            let mut value = schema_id.to_le_bytes().to_vec();
            value.extend_from_slice(&row);
            values.push(value);
        }
        Snapshot {
            copy: LocalCopy::existing(dir, 0),
            values: Memory {
                values: values.into_iter(),
                current: Vec::new(),
            },
        }
    }

    fn ids(rows: &mut KvRows) -> Vec<Vec<i64>> {
        let mut batches = Vec::new();
        while let Some(batch) = rows.next_batch().unwrap() {
            let ids = batch
                .column(0)
                .as_any()
                .downcast_ref::<Int64Array>()
                .unwrap();
            batches.push(ids.values().to_vec());
        }
        batches
    }

    #[test]
    fn rows_come_in_key_order_in_bounded_batches_and_decode_every_column() {
        let db = database(10, 1);
        let dir = db.copy.dir().to_path_buf();
        let mut rows = db.open(&layout(None), BucketKey::bucket(0), 4);
        let first = rows.next_batch().unwrap().unwrap();
        assert_eq!(first.num_rows(), 4);
        let names = first
            .column(1)
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap();
        assert_eq!(names.value(3), "name-3");
        assert_eq!(ids(&mut rows), [vec![4, 5, 6, 7], vec![8, 9]]);
        assert_eq!(rows.read, 10);
        assert!(rows.next_batch().unwrap().is_none(), "stays exhausted");
        drop(rows);
        assert!(!dir.exists(), "the copy is removed with its reader");
    }

    /// The ids of each batch `read_each` hands over, until `each` has taken `stop_after`.
    fn ids_each(rows: KvRows, stop_after: usize) -> (Vec<Vec<i64>>, bool) {
        let mut batches = Vec::new();
        let mut ended = false;
        Box::new(rows).read_each(&mut |read| match read.unwrap() {
            Some(batch) => {
                let ids = batch.column(0).as_any().downcast_ref::<Int64Array>();
                batches.push(ids.unwrap().values().to_vec());
                batches.len() < stop_after
            }
            None => {
                ended = true;
                false
            }
        });
        (batches, ended)
    }

    #[test]
    fn one_iterator_for_every_batch_hands_over_what_batch_by_batch_reads_do() {
        let each = |skip, stop_after| {
            let mut rows = database(10, 1).open(&layout(None), BucketKey::bucket(0), 3);
            rows.skip(skip).unwrap();
            ids_each(rows, stop_after)
        };
        let mut rows = database(10, 1).open(&layout(None), BucketKey::bucket(0), 3);
        rows.skip(2).unwrap();
        let by_batch = ids(&mut rows);
        drop(rows);
        assert_eq!(by_batch, [vec![2, 3, 4], vec![5, 6, 7], vec![8, 9]]);
        assert_eq!(each(2, usize::MAX), (by_batch, true), "then the end, once");
        assert_eq!(
            each(0, 2),
            (vec![vec![0, 1, 2], vec![3, 4, 5]], false),
            "stops when told to"
        );
    }

    #[test]
    fn skipping_goes_on_after_the_rows_handed_over_and_projection_keeps_the_read_columns() {
        let mut rows = database(10, 1).open(&layout(Some(vec![1])), BucketKey::bucket(0), 4);
        assert_eq!(rows.skip(6).unwrap(), 6);
        let batch = rows.next_batch().unwrap().unwrap();
        assert_eq!(batch.num_columns(), 1, "only the projected column");
        let names = batch
            .column(0)
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap();
        assert_eq!(names.value(0), "name-6");
        assert_eq!(batch.num_rows(), 4);
        assert!(rows.next_batch().unwrap().is_none());
        let mut rows = database(3, 1).open(&layout(None), BucketKey::bucket(0), 4);
        assert_eq!(
            rows.skip(5).unwrap(),
            3,
            "a shorter snapshot skips what it has"
        );
        assert!(rows.next_batch().unwrap().is_none());
    }

    #[test]
    fn rows_of_two_schema_versions_are_shown_in_the_newest_with_the_added_column_null() {
        let versions = BTreeMap::from([(1, two_columns()), (2, three_columns())]);
        let newest = Layout {
            row_type: three_columns(),
            schema_id: 2,
            versions: versions.clone(),
            ..layout(None)
        };
        let mut rows = database_of(6, |id| if id % 2 == 0 { 1 } else { 2 }).open(
            &newest,
            BucketKey::bucket(0),
            4,
        );
        let mut extra = Vec::new();
        while let Some(batch) = rows.next_batch().unwrap() {
            assert_eq!(batch.num_columns(), 3);
            let column = batch
                .column(2)
                .as_any()
                .downcast_ref::<Int32Array>()
                .unwrap();
            extra.extend(column.iter());
        }
        assert_eq!(
            extra,
            [None, Some(10), None, Some(30), None, Some(50)],
            "old rows have the added column null"
        );
        // `columns` pins schema 1: rows of schema 2 are shown without the added column.
        let pinned = Layout {
            versions,
            projection: Some(vec![1, 0]),
            ..layout(None)
        };
        let mut rows =
            database_of(3, |id| if id == 1 { 2 } else { 1 }).open(&pinned, BucketKey::bucket(0), 4);
        let batch = rows.next_batch().unwrap().unwrap();
        assert_eq!(batch.num_columns(), 2);
        let names = batch
            .column(0)
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap();
        assert_eq!(
            names.iter().collect::<Vec<_>>(),
            [Some("name-0"), Some("name-1"), Some("name-2")]
        );
    }

    #[test]
    fn a_value_of_another_schema_is_refused_with_its_schema_id() {
        let mut rows = database(2, 7).open(&layout(None), BucketKey::bucket(3), 4);
        let error = rows.next_batch().unwrap_err();
        assert!(
            matches!(
                error,
                Error::SnapshotSchema {
                    found: 7,
                    expected: 1,
                    ..
                }
            ),
            "{error}"
        );
        assert!(error.to_string().contains("bucket 3"), "{error}");
    }

    #[test]
    fn a_missing_or_corrupt_copy_is_one_error_naming_the_bucket_and_the_directory() {
        let dir = std::env::temp_dir().join(format!("kv-rows-test-empty-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let copy = LocalCopy::existing(dir.clone(), 0);
        let error = KvRows::open(&layout(None), BucketKey::bucket(2), copy, 4)
            .err()
            .expect("no database there");
        assert!(matches!(error, Error::SnapshotCorrupt { .. }), "{error}");
        let line = error.to_string();
        assert!(
            line.contains("bucket 2") && line.contains(&dir.display().to_string()),
            "{line}"
        );
        assert_eq!(error.fault(), crate::error::Fault::Retry, "tried again");
    }
}
