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

//! A bucket's KV snapshot read from its local copy (made by
//! [`crate::snapshot::kv::files`]): no request to the cluster, only the RocksDB
//! checkpoint's files on local disk, decoded into Arrow batches of the scanned columns.
//!
//! - [`rocks`]: the checkpoint's files read in key order, without RocksDB (a leaf);
//! - [`rows`]: its values decoded into Arrow batches by schema id;
//! - [`compacted`]: values of the common column types decoded straight into Arrow;
//! - [`versions`]: rows of each schema version shown in the newest (the other types);
//! - [`read_ahead`]: the batches of [`rows`] read on a thread of their own, a bounded number ahead;
//! - [`opened`]: a bucket's snapshot opened for reading, and where its changelog continues.

pub mod compacted;
pub mod opened;
pub mod read_ahead;
pub mod rocks;
pub mod rows;
pub mod versions;

pub use opened::Opened;

use std::sync::Arc;

use arrow_array::RecordBatch;

use crate::error::Result;

/// Where a bucket's snapshot rows come from, a bounded batch at a time.
pub trait RowBatches: Send + Sync {
    /// The next rows (at most the reader's batch size), `None` once all were read.
    fn next_batch(&mut self) -> Result<Option<RecordBatch>>;

    /// Hands every batch in turn to `each` (then the end, or the error that stops it) until
    /// `each` returns `false`: what a reader that keeps a position between batches does
    /// faster than one [`RowBatches::next_batch`] at a time.
    fn read_each(mut self: Box<Self>, each: &mut dyn FnMut(Result<Option<RecordBatch>>) -> bool) {
        hand_each(|| self.next_batch(), each);
    }

    /// Takes back a batch it handed out, once nothing reads it any more: a reader on a thread
    /// of its own ([`read_ahead::ReadAhead`]) frees it there. By default it is dropped here.
    fn give_back(&mut self, batch: Arc<RecordBatch>) {
        drop(batch);
    }
}

/// Hands the batches of `next` to `each` until the end, an error, or `each` returns `false`.
fn hand_each(
    mut next: impl FnMut() -> Result<Option<RecordBatch>>,
    each: &mut dyn FnMut(Result<Option<RecordBatch>>) -> bool,
) {
    loop {
        let read = next();
        let last = !matches!(read, Ok(Some(_)));
        if !each(read) || last {
            break;
        }
    }
}
