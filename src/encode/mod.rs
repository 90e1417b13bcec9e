//! Turning scanned records into Iggy messages. The encoder is chosen once at open from the
//! table kind and `payload_format`; each one consumes records of one bucket in offset order.
//!
//! - [`stamp`]: message ids and headers, one stamp per bucket;
//! - [`batch`]: one runtime batch assembled within its limits;
//! - [`rows`]: log-table rows as JSON objects;
//! - [`cdc`]: primary-key changelogs as change envelopes;
//! - [`ipc`]: Arrow IPC messages.

pub mod batch;
pub mod cdc;
pub mod ipc;
pub mod rows;
pub mod stamp;

use fluss::record::ScanRecord;

use crate::encode::batch::Batch;
use crate::encode::stamp::BucketStamp;
use crate::error::Result;

/// Turns one bucket's records into messages. The source picks one implementation at open
/// (JSON rows, change events or Arrow IPC, see `open::encoder` in [`crate::source`]).
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
