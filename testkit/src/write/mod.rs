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

//! Writing test data with fluss-rs: append to log tables, upsert and delete
//! on primary-key tables. Every helper flushes before it returns, so the
//! rows are acknowledged by the server (acks = all).
//!
//! - [`continuous`]: a writer that writes rounds without pause until stopped.

pub mod continuous;

use std::sync::Arc;
use std::time::Duration;

use arrow_array::RecordBatch;
use fluss::client::{AppendWriter, FlussConnection, FlussTable, UpsertWriter, WriteResultFuture};
use fluss::metadata::TablePath;
use fluss::row::{ColumnarRow, GenericRow};
use fluss::rpc::FlussError;

/// A flush that takes longer than this means the cluster is stuck; the
/// writer itself retries forever (`writer_retries` = i32::MAX).
const FLUSH_TIMEOUT: Duration = Duration::from_secs(120);

/// Appends `rows` to the log table `path` and flushes. Returns how many rows
/// were written.
pub async fn append_rows<'a>(
    connection: &FlussConnection,
    path: &TablePath,
    rows: impl IntoIterator<Item = GenericRow<'a>>,
) -> usize {
    write_all::<AppendWriter, _>(connection, path, rows).await
}

/// A fluss-rs writer as the helpers here drive it: opened on a table, one write per item,
/// then a flush.
trait Writer<T>: Sized {
    /// What the writer does, for panic messages ("append", "upsert").
    const KIND: &'static str;
    fn open(table: &FlussTable<'_>) -> fluss::error::Result<Self>;
    fn write(&self, item: &T) -> fluss::error::Result<WriteResultFuture>;
    fn flush(&self) -> impl std::future::Future<Output = fluss::error::Result<()>>;
}

impl<'a> Writer<GenericRow<'a>> for AppendWriter {
    const KIND: &'static str = "append";
    fn open(table: &FlussTable<'_>) -> fluss::error::Result<Self> {
        table.new_append()?.create_writer()
    }
    fn write(&self, row: &GenericRow<'a>) -> fluss::error::Result<WriteResultFuture> {
        self.append(row)
    }
    fn flush(&self) -> impl std::future::Future<Output = fluss::error::Result<()>> {
        AppendWriter::flush(self)
    }
}

impl Writer<RecordBatch> for AppendWriter {
    const KIND: &'static str = "append";
    fn open(table: &FlussTable<'_>) -> fluss::error::Result<Self> {
        <Self as Writer<GenericRow<'_>>>::open(table)
    }
    fn write(&self, batch: &RecordBatch) -> fluss::error::Result<WriteResultFuture> {
        // A clone of a record batch shares its columns.
        self.append_arrow_batch(batch.clone())
    }
    fn flush(&self) -> impl std::future::Future<Output = fluss::error::Result<()>> {
        AppendWriter::flush(self)
    }
}

impl<'a> Writer<Change<'a>> for UpsertWriter {
    const KIND: &'static str = "upsert";
    fn open(table: &FlussTable<'_>) -> fluss::error::Result<Self> {
        table.new_upsert()?.create_writer()
    }
    fn write(&self, change: &Change<'a>) -> fluss::error::Result<WriteResultFuture> {
        match change {
            Change::Upsert(row) => self.upsert(row),
            Change::Delete(row) => self.delete(row),
        }
    }
    fn flush(&self) -> impl std::future::Future<Output = fluss::error::Result<()>> {
        UpsertWriter::flush(self)
    }
}

/// The table `path`, which must exist.
async fn open_table<'c>(connection: &'c FlussConnection, path: &TablePath) -> FlussTable<'c> {
    connection
        .get_table(path)
        .await
        .unwrap_or_else(|e| panic!("get_table {path}: {e}"))
}

/// Writes `items` in order through one new `W` on the table `path`, then flushes: every row
/// acknowledged (see [`Acks`]). Returns how many were written.
async fn write_all<W: Writer<T>, T>(
    connection: &FlussConnection,
    path: &TablePath,
    items: impl IntoIterator<Item = T>,
) -> usize {
    let table = open_table(connection, path).await;
    let writer = W::open(&table).unwrap_or_else(|e| panic!("{} writer for {path}: {e}", W::KIND));
    let mut acks = Acks::new(path);
    for item in items {
        let ack = writer
            .write(&item)
            .unwrap_or_else(|e| panic!("{} row {} to {path}: {e}", W::KIND, acks.count));
        acks.push(ack).await;
    }
    flush(path, writer.flush()).await;
    acks.all().await
}

/// The per-row acknowledgements of one helper's writes: a flush waits for every batch, but a
/// row the server refused is reported only by its own future, so each is awaited (the oldest
/// once [`ACKS_IN_FLIGHT`] wait, which keeps memory bounded without waiting row by row) and a
/// refusal panics with the row's number and cause instead of the row going missing.
struct Acks<'p> {
    path: &'p TablePath,
    pending: std::collections::VecDeque<(usize, WriteResultFuture)>,
    count: usize,
}

/// Row acknowledgements kept before the oldest is awaited.
const ACKS_IN_FLIGHT: usize = 50_000;

impl<'p> Acks<'p> {
    fn new(path: &'p TablePath) -> Self {
        Self {
            path,
            pending: Default::default(),
            count: 0,
        }
    }

    async fn push(&mut self, ack: WriteResultFuture) {
        self.pending.push_back((self.count, ack));
        self.count += 1;
        if self.pending.len() > ACKS_IN_FLIGHT
            && let Some((row, oldest)) = self.pending.pop_front()
        {
            self.check(row, oldest).await;
        }
    }

    async fn check(&self, row: usize, ack: WriteResultFuture) {
        let path = self.path;
        match tokio::time::timeout(FLUSH_TIMEOUT, ack).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => panic!("write of row {row} to {path} was refused: {e}"),
            Err(_) => {
                panic!("write of row {row} to {path} not acknowledged within {FLUSH_TIMEOUT:?}")
            }
        }
    }

    /// Awaits the rest (after the flush, all are done); returns how many rows were written.
    async fn all(mut self) -> usize {
        while let Some((row, ack)) = self.pending.pop_front() {
            self.check(row, ack).await;
        }
        self.count
    }
}

/// Appends Arrow `batches` (the table's columns, in order) to the log table `path` and
/// flushes; returns how many rows were written. One write per batch, so this is the writer for
/// millions of rows. A batch goes to one bucket (the next one, with the round-robin assigner of
/// [`crate::Cluster::config`]) and, in a partitioned table, to the partition of its first row:
/// give each partition batches of its own.
pub async fn append_batches(
    connection: &FlussConnection,
    path: &TablePath,
    batches: impl IntoIterator<Item = RecordBatch>,
) -> usize {
    let mut rows = 0;
    let counted = batches
        .into_iter()
        .inspect(|batch| rows += batch.num_rows());
    write_all::<AppendWriter, _>(connection, path, counted).await;
    rows
}

/// Upserts every row of Arrow `batches` (the table's columns, in order) into the primary-key
/// table `path` and flushes; returns how many rows were written. The rows are read in place
/// (no [`GenericRow`] per row), so millions of them are written at the pace of the writer;
/// each row goes to the partition and bucket of its own key.
pub async fn upsert_batches(
    connection: &FlussConnection,
    path: &TablePath,
    batches: impl IntoIterator<Item = RecordBatch>,
) -> usize {
    let table = open_table(connection, path).await;
    let row_type = Arc::new(table.get_table_info().get_row_type().clone());
    let writer = table
        .new_upsert()
        .and_then(|upsert| upsert.create_writer())
        .unwrap_or_else(|e| panic!("upsert writer for {path}: {e}"));
    let mut acks = Acks::new(path);
    for batch in batches {
        let rows = batch.num_rows();
        let mut row = ColumnarRow::new(Arc::new(batch), Arc::clone(&row_type), 0, None)
            .unwrap_or_else(|e| panic!("rows of a batch for {path}: {e}"));
        for i in 0..rows {
            row.set_row_id(i);
            let ack = writer
                .upsert(&row)
                .unwrap_or_else(|e| panic!("upsert row {} to {path}: {e}", acks.count));
            acks.push(ack).await;
        }
    }
    flush(path, writer.flush()).await;
    acks.all().await
}

/// One write to a primary-key table.
pub enum Change<'a> {
    /// Insert or replace the row with this key.
    Upsert(GenericRow<'a>),
    /// Delete the key of this row (only key columns matter).
    Delete(GenericRow<'a>),
}

/// Upserts `rows` into the primary-key table `path` and flushes.
pub async fn upsert_rows<'a>(
    connection: &FlussConnection,
    path: &TablePath,
    rows: impl IntoIterator<Item = GenericRow<'a>>,
) -> usize {
    write_changes(connection, path, rows.into_iter().map(Change::Upsert)).await
}

/// Deletes the keys of `rows` (full rows; only key columns matter) from the
/// primary-key table `path` and flushes.
pub async fn delete_rows<'a>(
    connection: &FlussConnection,
    path: &TablePath,
    rows: impl IntoIterator<Item = GenericRow<'a>>,
) -> usize {
    write_changes(connection, path, rows.into_iter().map(Change::Delete)).await
}

/// Applies `changes` in order through one upsert writer (so per-key order is
/// the order given) and flushes.
pub async fn write_changes<'a>(
    connection: &FlussConnection,
    path: &TablePath,
    changes: impl IntoIterator<Item = Change<'a>>,
) -> usize {
    write_all::<UpsertWriter, _>(connection, path, changes).await
}

/// Appends `rows` to the log table `path` right after an `ALTER TABLE`, one at a time (see
/// [`write_each_once_the_schema_is_known`]). Returns how many rows were written.
pub async fn append_rows_after_schema_change<'a>(
    connection: &FlussConnection,
    path: &TablePath,
    rows: impl IntoIterator<Item = GenericRow<'a>>,
) -> usize {
    write_each_once_the_schema_is_known::<AppendWriter, _>(connection, path, rows).await
}

/// Applies `changes` in order to the primary-key table `path` right after an `ALTER TABLE`,
/// one at a time (see [`write_each_once_the_schema_is_known`]). Returns how many were written.
pub async fn write_changes_after_schema_change<'a>(
    connection: &FlussConnection,
    path: &TablePath,
    changes: impl IntoIterator<Item = Change<'a>>,
) -> usize {
    write_each_once_the_schema_is_known::<UpsertWriter, _>(connection, path, changes).await
}

/// Writes `items` in order, each flushed and acknowledged before the next. After an `ALTER
/// TABLE` the coordinator shows the new schema id before every tablet server knows it, and a
/// tablet server refuses writes of that schema meanwhile (`SchemaNotExist`, "Invalid schema id",
/// which fluss-rs's writer does not retry). A refused row was not written, so it is written
/// again until it is accepted; any other refusal panics, and so does a schema still unknown
/// after [`FLUSH_TIMEOUT`].
async fn write_each_once_the_schema_is_known<W: Writer<T>, T>(
    connection: &FlussConnection,
    path: &TablePath,
    items: impl IntoIterator<Item = T>,
) -> usize {
    let table = open_table(connection, path).await;
    let writer = W::open(&table).unwrap_or_else(|e| panic!("{} writer for {path}: {e}", W::KIND));
    let (mut count, mut refused) = (0, 0);
    for item in items {
        let deadline = tokio::time::Instant::now() + FLUSH_TIMEOUT;
        loop {
            let ack = writer
                .write(&item)
                .unwrap_or_else(|e| panic!("{} row {count} to {path}: {e}", W::KIND));
            flush(path, writer.flush()).await;
            match tokio::time::timeout(FLUSH_TIMEOUT, ack).await {
                Ok(Ok(())) => break,
                Ok(Err(e))
                    if e.api_error() == Some(FlussError::SchemaNotExist)
                        && tokio::time::Instant::now() < deadline =>
                {
                    refused += 1;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Ok(Err(e)) => panic!("{} of row {count} to {path} was refused: {e}", W::KIND),
                Err(_) => panic!(
                    "{} of row {count} to {path} not acknowledged within {FLUSH_TIMEOUT:?}",
                    W::KIND
                ),
            }
        }
        count += 1;
    }
    if refused > 0 {
        eprintln!(
            "{path}: {refused} writes refused for a schema not known yet, then written again"
        );
    }
    count
}

async fn flush(
    path: &TablePath,
    flushing: impl std::future::Future<Output = fluss::error::Result<()>>,
) {
    match tokio::time::timeout(FLUSH_TIMEOUT, flushing).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => panic!("flush to {path}: {e}"),
        Err(_) => panic!(
            "flush to {path} did not finish within {FLUSH_TIMEOUT:?}; is a tablet server down?"
        ),
    }
}
