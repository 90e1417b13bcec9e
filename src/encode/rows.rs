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

//! Log-table rows as flat JSON objects, one message per row, optionally with a `_fluss`
//! metadata object.

use fluss::record::ScanRecord;

use super::{Encoder, runs};
use crate::config::options::JsonOptions;
use crate::encode::batch::Batch;
use crate::encode::stamp::BucketStamp;
use crate::error::{Error, Result};
use crate::json::{RowEncoder, write_json_string};
use crate::schemas::Schemas;

/// Encodes log-table rows as JSON messages.
pub struct RowMessages {
    schemas: Schemas,
    options: JsonOptions,
    include_metadata: bool,
}

impl RowMessages {
    /// An encoder for rows whose columns `schemas` names per batch.
    pub fn new(schemas: Schemas, options: JsonOptions, include_metadata: bool) -> Self {
        Self {
            schemas,
            options,
            include_metadata,
        }
    }

    fn write_metadata(bucket: &BucketStamp, record: &ScanRecord, out: &mut Vec<u8>) {
        use std::io::Write;
        // A table has at least one column, so the fields end before this.
        out.push(b',');
        let _ = write!(
            out,
            "\"_fluss\":{{\"bucket\":{},\"partition\":",
            bucket.key().bucket
        );
        match bucket.partition_name() {
            Some(name) => write_json_string(out, name),
            None => out.extend_from_slice(b"null"),
        }
        let _ = write!(
            out,
            ",\"offset\":{},\"timestamp\":{}}}",
            record.offset(),
            record.timestamp()
        );
    }
}

impl Encoder for RowMessages {
    fn encode(
        &mut self,
        bucket: &BucketStamp,
        records: &[ScanRecord],
        batch: &mut Batch,
    ) -> Result<usize> {
        let mut consumed = 0;
        for run in runs(&self.schemas, records) {
            let run = run?;
            let mut rows = RowEncoder::try_new(&run.version.fields, run.arrow, self.options)
                .map_err(|source| Error::Encode { source })?;
            for record in &records[run.start..run.end] {
                if batch.is_full() {
                    return Ok(consumed);
                }
                let mut payload = Vec::with_capacity(rows.size_hint() + 96);
                payload.push(b'{');
                rows.write_fields(record.row().get_row_id(), &mut payload);
                if self.include_metadata {
                    Self::write_metadata(bucket, record, &mut payload);
                }
                payload.push(b'}');
                batch.push(bucket.row(
                    record.offset(),
                    record.timestamp(),
                    Some(*record.change_type()),
                    run.version.id,
                    payload,
                ));
                consumed += 1;
            }
        }
        Ok(consumed)
    }
}
