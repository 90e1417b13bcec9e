//! A bucket's KV snapshot files opened read-only with RocksDB and read in key order, a
//! bounded batch at a time. Each value is a 2-byte little-endian schema id followed by the
//! row in the table's KV format (COMPACTED); each row is decoded by its own schema version
//! and shown in the target version ([`super::versions`]), into Arrow batches of the scanned
//! columns, as the changelog's batches are.
//!
//! Read through [`RowBatches::read_each`] (as the read-ahead thread does), one iterator goes
//! over the whole bucket. A new iterator per batch would seek past the last key in every
//! file of the snapshot and read ahead from there again, per file and batch, reading and
//! copying far more bytes than the batch's rows hold.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::RecordBatch;
use fluss::metadata::{KvFormat, RowType};
use fluss::record::{to_arrow_schema, RowAppendRecordBatchBuilder};
use rocksdb::{DBRawIterator, Options, DB};

use super::compacted::{Direct, Refused};
use super::versions::Versions;
use super::{hand_each, RowBatches};
use crate::client::kv_snapshot::files::LocalCopy;
use crate::client::table::Table;
use crate::error::{Error, Result};
use crate::position::BucketKey;

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

/// The rows of one bucket's snapshot files.
pub struct KvRows {
    key: BucketKey,
    // Declared before `copy`: the database closes before its directory is removed. An `Arc`
    // so that an iterator can borrow it while the rows are read into `self`.
    db: Arc<DB>,
    copy: LocalCopy,
    decoding: Decoding,
    batch_rows: usize,
    next: Next,
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

/// Where the next batch starts.
enum Next {
    /// At the first key.
    First,
    /// After this key, the last one read.
    After(Box<[u8]>),
    /// Nowhere: every row was read.
    End,
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
        let corrupt = |cause: String| Error::SnapshotCorrupt {
            key,
            path: copy.dir().to_path_buf(),
            cause,
        };
        let mut options = Options::default();
        // RocksDB opens a snapshot's files on up to 16 threads it starts for the purpose (and
        // each new thread may take a malloc arena of its own): one file after another is as
        // fast for the few files of a bucket's snapshot.
        options.set_max_file_opening_threads(1);
        let db = DB::open_for_read_only(&options, copy.dir(), false)
            .map_err(|e| corrupt(e.into_string()))?;
        let versions = Versions::new(
            layout.kv_format,
            &layout.versions,
            layout.row_type.fields().len(),
        )
        .map_err(|e| corrupt(e.to_string()))?;
        let direct = match layout.kv_format {
            KvFormat::COMPACTED => to_arrow_schema(&layout.row_type)
                .ok()
                .and_then(|schema| Direct::new(&layout.row_type, schema, &layout.versions)),
            _ => None,
        };
        Ok(Self {
            key,
            db: Arc::new(db),
            copy,
            decoding: Decoding {
                row_type: layout.row_type.clone(),
                schema_id: layout.schema_id,
                versions,
                direct,
                projection: layout.projection.clone(),
            },
            batch_rows: batch_rows.max(1),
            next: Next::First,
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
        if rows == 0 {
            return Ok(0);
        }
        let mut skipped = 0;
        let mut last = Vec::new();
        let mut iter = self.db.raw_iterator_opt(one_pass());
        iter.seek_to_first();
        while skipped < rows && iter.valid() {
            if let Some(key) = iter.key() {
                last.clear();
                last.extend_from_slice(key);
            }
            skipped += 1;
            iter.next();
        }
        self.check(&iter)?;
        let end = !iter.valid();
        drop(iter);
        self.next = match (end, skipped > 0) {
            (true, _) => Next::End,
            (false, true) => Next::After(last.into_boxed_slice()),
            (false, false) => Next::First,
        };
        self.read = skipped;
        Ok(skipped)
    }

    fn check(&self, iter: &rocksdb::DBRawIterator<'_>) -> Result<()> {
        iter.status().map_err(|e| Error::SnapshotCorrupt {
            key: self.key,
            path: self.copy.dir().to_path_buf(),
            cause: e.into_string(),
        })
    }

    fn corrupt(&self, cause: String) -> Error {
        Error::SnapshotCorrupt {
            key: self.key,
            path: self.copy.dir().to_path_buf(),
            cause,
        }
    }
}

/// Read options of a single pass in key order: blocks read once are not kept in RocksDB's
/// block cache (it would fill to its capacity, 8 MiB by default, whatever the batch size), and
/// files are read ahead in large sequential reads.
fn one_pass() -> rocksdb::ReadOptions {
    let mut options = rocksdb::ReadOptions::default();
    options.fill_cache(false);
    options.set_readahead_size(2 << 20);
    options
}

impl RowBatches for KvRows {
    /// A batch with an iterator of its own, which seeks past the last key read.
    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        let db = Arc::clone(&self.db);
        let mut iter = db.raw_iterator_opt(one_pass());
        self.seek(&mut iter);
        self.batch_from(&mut iter)
    }

    /// Every batch from one iterator.
    fn read_each(mut self: Box<Self>, each: &mut dyn FnMut(Result<Option<RecordBatch>>) -> bool) {
        // RocksDB counts every step of an iterator into a thread-local of this thread unless
        // told not to (its default level counts): about 5% of the reading's instructions.
        rocksdb::perf::set_perf_stats(rocksdb::perf::PerfStatsLevel::Disable);
        let db = Arc::clone(&self.db);
        let mut iter = db.raw_iterator_opt(one_pass());
        self.seek(&mut iter);
        hand_each(|| self.batch_from(&mut iter), each);
    }
}

impl KvRows {
    /// Moves `iter` to the first key not read yet.
    fn seek(&self, iter: &mut DBRawIterator<'_>) {
        match &self.next {
            Next::After(last) => {
                iter.seek(last);
                if iter.valid() && iter.key() == Some(&last[..]) {
                    iter.next();
                }
            }
            Next::First => iter.seek_to_first(),
            // Nothing is read from it.
            Next::End => {}
        }
    }

    /// The next batch from `iter`, which stands at the first key not read yet.
    fn batch_from(&mut self, iter: &mut DBRawIterator<'_>) -> Result<Option<RecordBatch>> {
        if matches!(self.next, Next::End) {
            return Ok(None);
        }
        let batch = match self.decoding.direct.take() {
            Some(mut direct) => {
                let rows = self.read_values(iter, |id, value| direct.append(id, value))?;
                let batch = (rows > 0)
                    .then(|| direct.finish())
                    .transpose()
                    .map_err(|e| self.corrupt(e.to_string()))?;
                self.decoding.direct = Some(direct);
                batch
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
                let rows = self.read_values(iter, append)?;
                (rows > 0)
                    .then(|| builder.build_arrow_record_batch())
                    .transpose()
                    .map_err(|e| self.corrupt(e.to_string()))?
                    .map(Arc::unwrap_or_clone)
            }
        };
        let Some(batch) = batch else {
            self.next = Next::End;
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
    /// Hands the next values (at most `batch_rows`, after the last key read) to `append` with
    /// their schema ids, in key order; returns how many.
    fn read_values(
        &mut self,
        iter: &mut DBRawIterator<'_>,
        mut append: impl FnMut(i16, &[u8]) -> std::result::Result<(), Refused>,
    ) -> Result<usize> {
        let mut rows = 0;
        let mut last = None;
        while rows < self.batch_rows && iter.valid() {
            let (Some(key), Some(value)) = (iter.key(), iter.value()) else {
                break;
            };
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
            if rows == self.batch_rows {
                // Where the next batch starts. A shorter batch is the last one: it ends
                // where the iterator does.
                last = Some(Box::from(key));
            }
            iter.next();
        }
        self.check(iter)?;
        if !iter.valid() {
            self.next = Next::End;
        } else if let Some(last) = last {
            self.next = Next::After(last);
        }
        self.read += rows as u64;
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use arrow_array::{Array, Int32Array, Int64Array, StringArray};
    use fluss::metadata::{DataField, DataTypes};
    use fluss::row::encode::{RowEncoder, RowEncoderFactory};
    use fluss::row::Datum;

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

    /// A RocksDB database of `rows` rows (`id`, `name-<id>`) as Fluss writes its KV store:
    /// each value is the schema id (little endian) and the COMPACTED row.
    fn database(rows: i64, schema_id: i16) -> LocalCopy {
        database_of(rows, |_| schema_id)
    }

    /// Like [`database`], row `id` written with schema `schema_of(id)` (2: `extra = id * 10`).
    fn database_of(rows: i64, schema_of: impl Fn(i64) -> i16) -> LocalCopy {
        let schema_id = schema_of(0) * 100 + schema_of(1) * 10 + schema_of(rows - 1);
        let dir = std::env::temp_dir().join(format!(
            "kv-rows-test-{}-{rows}-{schema_id}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        {
            let mut options = Options::default();
            options.create_if_missing(true);
            let db = DB::open(&options, &dir).unwrap();
            let mut old = RowEncoderFactory::create(KvFormat::COMPACTED, two_columns()).unwrap();
            let mut new = RowEncoderFactory::create(KvFormat::COMPACTED, three_columns()).unwrap();
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
                // Big-endian keys: RocksDB's order is the ids' order.
                db.put(id.to_be_bytes(), value).unwrap();
            }
            db.flush().unwrap();
        }
        LocalCopy::existing(dir, 0)
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
        let copy = database(10, 1);
        let dir = copy.dir().to_path_buf();
        let mut rows = KvRows::open(&layout(None), BucketKey::bucket(0), copy, 4).unwrap();
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
            let copy = database(10, 1);
            let mut rows = KvRows::open(&layout(None), BucketKey::bucket(0), copy, 3).unwrap();
            rows.skip(skip).unwrap();
            ids_each(rows, stop_after)
        };
        let copy = database(10, 1);
        let mut rows = KvRows::open(&layout(None), BucketKey::bucket(0), copy, 3).unwrap();
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
        let copy = database(10, 1);
        let mut rows = KvRows::open(&layout(Some(vec![1])), BucketKey::bucket(0), copy, 4).unwrap();
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
        let copy = database(3, 1);
        let mut rows = KvRows::open(&layout(None), BucketKey::bucket(0), copy, 4).unwrap();
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
        let copy = database_of(6, |id| if id % 2 == 0 { 1 } else { 2 });
        let mut rows = KvRows::open(&newest, BucketKey::bucket(0), copy, 4).unwrap();
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
        let copy = database_of(3, |id| if id == 1 { 2 } else { 1 });
        let mut rows = KvRows::open(&pinned, BucketKey::bucket(0), copy, 4).unwrap();
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
        let copy = database(2, 7);
        let mut rows = KvRows::open(&layout(None), BucketKey::bucket(3), copy, 4).unwrap();
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
