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

//! A bucket's snapshot opened for reading: its local files' rows and where its changelog
//! continues.

use std::sync::Arc;
use std::time::Instant;

use fluss::SnapshotId;
use fluss::metadata::RowType;

use super::RowBatches;
use crate::position::{BucketKey, Offset};

/// A bucket's snapshot, opened and ready to be handed over.
pub struct Opened {
    /// Which bucket.
    pub key: BucketKey,
    /// The KV snapshot read (`None` for rows that come from elsewhere, e.g. tests).
    pub snapshot_id: Option<SnapshotId>,
    /// Its rows, in key order.
    pub rows: Box<dyn RowBatches>,
    /// The Fluss type of those rows (the scanned columns).
    pub row_type: Arc<RowType>,
    /// When taking it started.
    pub started: Instant,
    /// The snapshot's log offset: its rows hold every change below it, and its message ids
    /// and `fluss_offset` headers carry it.
    pub taken_at: Offset,
    /// The offset the changelog continues at: `taken_at`, or lower (see
    /// [`Opened::continue_from`]).
    pub continue_at: Offset,
    /// Bytes of snapshot files on local disk.
    pub disk_bytes: u64,
    /// Rows (in key order) an earlier attempt at the same snapshot handed over, which `rows`
    /// skipped.
    pub skipped: u64,
    /// The index the rows to come are numbered from: `skipped`, or with a `filter` the rows
    /// of those the filter kept (see [`crate::encode::stamp::SnapshotIndex`]).
    pub first_index: u64,
}

impl Opened {
    /// Continues the changelog at `floor` instead, when an earlier attempt at this bucket's
    /// snapshot was partly delivered (see [`crate::position::Position::Snapshot`]): the
    /// changes since then, deletes included, bring that attempt's rows up to date. The switch
    /// is then not exact (changes already in this snapshot come again).
    pub fn continue_from(&mut self, floor: Offset) {
        self.continue_at = self.continue_at.min(floor);
    }

    /// Whether the switch to the changelog is exact (no change is delivered twice): the
    /// changelog continues at the snapshot's own log offset.
    pub fn exact(&self) -> bool {
        self.continue_at == self.taken_at
    }
}
