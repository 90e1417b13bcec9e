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

use std::sync::Arc;

use arrow_array::RecordBatch;
use fluss::record::ScanRecord;

use crate::encode::batch::Batch;
use crate::encode::stamp::BucketStamp;
use crate::error::{Error, Result};
use crate::records::{arrow_batch, batch_runs};
use crate::schemas::{Schemas, Version};

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

/// Records `start..end` of one bucket's records that share a fetched Arrow batch, with that
/// batch and the schema version it was written with.
pub struct Run<'a> {
    /// The first record of the run.
    pub start: usize,
    /// One past its last record.
    pub end: usize,
    /// The batch its records point into.
    pub arrow: &'a RecordBatch,
    /// The version the batch was written with.
    pub version: Arc<Version>,
}

/// The runs of `records` ([`batch_runs`]) with their batch and version, as the encoders of
/// fetched batches walk them: an error for a record without its batch, or for a batch of a
/// version `schemas` does not know.
pub fn runs<'a>(
    schemas: &'a Schemas,
    records: &'a [ScanRecord],
) -> impl Iterator<Item = Result<Run<'a>>> + 'a {
    batch_runs(records).map(|(start, end, arrow)| {
        let arrow = arrow_batch(arrow)?;
        let version = schemas.of(arrow).ok_or(Error::UnknownSchema {
            columns: arrow.num_columns(),
        })?;
        Ok(Run {
            start,
            end,
            arrow,
            version,
        })
    })
}
