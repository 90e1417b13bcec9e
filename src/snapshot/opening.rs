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

//! What opening a bucket's KV snapshot takes, owned and shared by the buckets listed together
//! ([`super::listed`]), so it can run on a task of its own ([`super::opened_ahead`]): copying the snapshot's files into `snapshot_dir` and opening them past
//! the rows an earlier attempt handed over, their first batches read on a thread of their own.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fluss::SnapshotId;
use fluss::metadata::RowType;

use crate::client::schema_fetch;
use crate::client::table::Table;
use crate::context::Context;
use crate::error::Result;
use crate::position::BucketKey;
use crate::snapshot::files::Opened;
use crate::snapshot::files::read_ahead::ReadAhead;
use crate::snapshot::files::rows::{KvRows, Layout};
use crate::snapshot::kv::credentials::SharedCredentials;
use crate::snapshot::kv::files;
use crate::snapshot::kv::local_dir::SnapshotDir;
use crate::telemetry::Telemetry;

/// What opening a bucket's KV snapshot needs, with the schema versions it may hold.
pub(super) struct Opening {
    table: Table,
    /// The connector instance's directory under `snapshot_dir`.
    dir: Arc<SnapshotDir>,
    /// Object-store credentials for files on a remote store.
    credentials: SharedCredentials,
    layout: Layout,
    row_type: Arc<RowType>,
    batch_rows: usize,
}

/// A snapshot copied and opened, with where its files are and how long copying them took.
pub(super) struct Copied {
    pub opened: Opened,
    pub dir: PathBuf,
    pub took: Duration,
}

impl Copied {
    /// Logs where the snapshot's files were copied; the snapshot, ready to be handed over.
    pub(super) fn logged(self, telemetry: &Telemetry) -> Opened {
        let Self { opened, dir, took } = self;
        if let Some(snapshot) = opened.snapshot_id {
            telemetry.snapshot_copied(opened.key, snapshot, opened.disk_bytes, &dir, took);
        }
        opened
    }
}

impl Opening {
    /// What opening a KV snapshot of the table takes, for the instance whose directory is
    /// `dir`, with the instance's object-store `credentials`.
    /// The table's current schema versions are fetched first (a snapshot, listed before
    /// this, may hold rows of versions no fetched batch showed yet); their changes are logged.
    pub(super) async fn prepare(
        ctx: &Context,
        dir: &Arc<SnapshotDir>,
        credentials: &SharedCredentials,
    ) -> Result<Self> {
        let table = &ctx.table;
        let batch_rows = ctx.format.snapshot_read_rows(&ctx.config);
        let changes = schema_fetch::up_to_latest(table).await?;
        ctx.schema_changed(&changes);
        let layout = Layout::of(table);
        let row_type = match &table.projection {
            Some(_) => RowType::new(table.fields.clone()),
            None => layout.row_type.clone(),
        };
        Ok(Self {
            table: table.clone(),
            dir: Arc::clone(dir),
            credentials: Arc::clone(credentials),
            layout,
            row_type: Arc::new(row_type),
            batch_rows,
        })
    }

    /// Copies KV snapshot `snapshot` of `key` (leased) and opens it past its first `skip`
    /// rows, its first batches read on a thread of their own; `None` if its files take more
    /// than `most` bytes (nothing of it is kept then).
    pub(super) async fn open(
        &self,
        key: BucketKey,
        snapshot: SnapshotId,
        skip: u64,
        started: Instant,
        most: Option<u64>,
    ) -> Result<Option<Copied>> {
        let copy = files::copy(
            &self.table,
            key,
            snapshot,
            &self.dir,
            &self.credentials,
            most,
        )
        .await?;
        let Some(copy) = copy else {
            return Ok(None);
        };
        let took = started.elapsed();
        let (disk_bytes, taken_at) = (copy.bytes, copy.log_offset);
        let mut rows = KvRows::open(&self.layout, key, copy, self.batch_rows)?;
        let skipped = rows.skip(skip)?;
        let dir = rows.dir().to_path_buf();
        let rows = ReadAhead::start(key, dir.clone(), Box::new(rows))?;
        let opened = Opened {
            key,
            snapshot_id: Some(snapshot),
            rows: Box::new(rows),
            row_type: Arc::clone(&self.row_type),
            started,
            taken_at,
            continue_at: taken_at,
            disk_bytes,
            skipped,
            first_index: skipped,
        };
        Ok(Some(Copied { opened, dir, took }))
    }
}
