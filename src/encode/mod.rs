//! Turning scanned records into Iggy messages. The encoder is chosen once at open from the
//! table kind and `payload_format`; each one consumes records of one bucket in offset order.

pub mod cdc;
pub mod ipc;
pub mod json;
pub mod rows;

use arrow_array::RecordBatch;
use fluss::record::ScanRecord;

use crate::batch::Batch;
use crate::error::{Error, Result};
use crate::message::BucketStamp;

/// The Arrow batch a scanned record points into; fluss-rs always sets it for scanned rows.
pub fn arrow_batch(batch: Option<&RecordBatch>) -> Result<&RecordBatch> {
    batch.ok_or(Error::RecordWithoutBatch)
}

/// Turns one bucket's records into messages. The source picks one implementation at open
/// (JSON rows, change events or Arrow IPC, see `encoder_for` in [`crate::source`]).
pub trait Encoder: Send {
    /// Encodes `records` (one bucket, offset order) into `batch` until it is full, returning
    /// how many records were consumed. An encoder may leave records it cannot encode alone
    /// yet (an update-before waiting for its update-after) for the next call.
    fn encode(
        &mut self,
        bucket: &BucketStamp,
        records: &[ScanRecord],
        batch: &mut Batch,
    ) -> Result<usize>;
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

/// Whether two records point into the same fetched Arrow batch (the scanner shares one batch
/// among all the records it decoded from it).
pub fn same_batch(a: Option<&RecordBatch>, b: Option<&RecordBatch>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => std::ptr::eq(a, b),
        _ => false,
    }
}
