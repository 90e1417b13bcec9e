//! Turning scanned records into Iggy messages. The encoder is chosen once at open from the
//! table kind and `payload_format`; each one consumes records of one bucket in offset order.

pub mod cdc;
pub mod ipc;
pub mod json;
pub mod rows;

use std::collections::BTreeMap;

use arrow_array::RecordBatch;
use fluss::record::ScanRecord;
use fluss::TableId;
use iggy_connector_sdk::{HeaderKey, HeaderValue, ProducedMessage, Schema};

use crate::batch::Batch;
use crate::error::{Error, Result};
use crate::message::{message_id, BucketHeaders, Headers};
use crate::state::BucketKey;

/// The bucket whose records are being encoded.
pub struct BucketContext<'a> {
    /// Which bucket (and partition).
    pub key: BucketKey,
    /// Its partition name, for partitioned tables.
    pub partition_name: Option<&'a str>,
    /// Its precomputed header values.
    pub headers: &'a BucketHeaders,
}

impl BucketContext<'_> {
    /// The message for the row (or change, or first row of a run) at `offset`.
    pub fn message(
        &self,
        table_id: TableId,
        offset: i64,
        headers: BTreeMap<HeaderKey, HeaderValue>,
        payload: Vec<u8>,
    ) -> ProducedMessage {
        ProducedMessage {
            id: Some(message_id(
                table_id,
                self.key.partition,
                self.key.bucket,
                offset,
            )),
            checksum: None,
            timestamp: None,
            origin_timestamp: None,
            headers: Some(headers),
            payload,
        }
    }
}

/// The Arrow batch a scanned record points into; fluss-rs always sets it for scanned rows.
pub fn arrow_batch(batch: Option<&RecordBatch>) -> Result<&RecordBatch> {
    batch.ok_or_else(|| Error::State {
        reason: "fluss-rs returned a record without its Arrow batch".into(),
    })
}

/// The payload encoder of a source.
pub enum PayloadEncoder {
    /// Log table rows as JSON objects.
    Rows(rows::RowMessages),
    /// Primary-key table changes as JSON events.
    Changes(cdc::ChangeMessages),
    /// Runs of rows (or changes) as Arrow IPC streams.
    Ipc(ipc::IpcMessages),
}

impl PayloadEncoder {
    /// The batch schema the runtime decodes payloads with.
    pub fn schema(&self) -> Schema {
        match self {
            PayloadEncoder::Rows(_) | PayloadEncoder::Changes(_) => Schema::Json,
            PayloadEncoder::Ipc(_) => Schema::Raw,
        }
    }

    /// Encodes `records` (one bucket, offset order) into `batch` until it is full, returning
    /// how many records were consumed. An encoder may leave records it cannot encode alone
    /// yet (an update-before waiting for its update-after) for the next call.
    pub fn encode(
        &mut self,
        headers: &Headers,
        bucket: &BucketContext<'_>,
        records: &[ScanRecord],
        batch: &mut Batch,
    ) -> Result<usize> {
        match self {
            PayloadEncoder::Rows(rows) => rows.encode(headers, bucket, records, batch),
            PayloadEncoder::Changes(changes) => changes.encode(headers, bucket, records, batch),
            PayloadEncoder::Ipc(ipc) => ipc.encode(headers, bucket, records, batch),
        }
    }
}

/// Splits `records` into runs that share one Arrow record batch, so a column encoder is built
/// once per run instead of once per row. Yields `(start, end, batch)`.
pub fn batch_runs(
    records: &[ScanRecord],
) -> impl Iterator<Item = (usize, usize, Option<&RecordBatch>)> + '_ {
    let mut start = 0;
    std::iter::from_fn(move || {
        if start >= records.len() {
            return None;
        }
        let batch = records[start].row().get_record_batch();
        let mut end = start + 1;
        while end < records.len() && same_batch(records[end].row().get_record_batch(), batch) {
            end += 1;
        }
        let run = (start, end, batch);
        start = end;
        Some(run)
    })
}

fn same_batch(a: Option<&RecordBatch>, b: Option<&RecordBatch>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => std::ptr::eq(a, b),
        _ => false,
    }
}
