//! Writing test data with fluss-rs: append to log tables, upsert and delete
//! on primary-key tables. Every helper flushes before it returns, so the
//! rows are acknowledged by the server (acks = all).
//!
//! - [`continuous`]: a writer that writes rounds without pause until stopped.

pub mod continuous;

use std::time::Duration;

use fluss::client::FlussConnection;
use fluss::metadata::TablePath;
use fluss::row::GenericRow;

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
    let table = connection
        .get_table(path)
        .await
        .unwrap_or_else(|e| panic!("get_table {path}: {e}"));
    let writer = table
        .new_append()
        .and_then(|append| append.create_writer())
        .unwrap_or_else(|e| panic!("append writer for {path}: {e}"));
    let mut count = 0;
    for row in rows {
        // The per-row future only reports this row's ack; flush below waits
        // for all of them, so dropping it is fine.
        drop(
            writer
                .append(&row)
                .unwrap_or_else(|e| panic!("append row {count} to {path}: {e}")),
        );
        count += 1;
    }
    flush(path, writer.flush()).await;
    count
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
    let table = connection
        .get_table(path)
        .await
        .unwrap_or_else(|e| panic!("get_table {path}: {e}"));
    let writer = table
        .new_upsert()
        .and_then(|upsert| upsert.create_writer())
        .unwrap_or_else(|e| panic!("upsert writer for {path}: {e}"));
    let mut count = 0;
    for change in changes {
        let queued = match &change {
            Change::Upsert(row) => writer.upsert(row),
            Change::Delete(row) => writer.delete(row),
        };
        drop(queued.unwrap_or_else(|e| panic!("write row {count} to {path}: {e}")));
        count += 1;
    }
    flush(path, writer.flush()).await;
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
