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

//! Learning the table's schema versions from the cluster, as fetched batches (or a snapshot's
//! rows) show them: a batch with a column count [`crate::schemas::Schemas`] does not know was
//! written with another version than the open-time one (after an `ALTER TABLE … ADD COLUMN`,
//! or before one when an older part of the log is read), so the versions not known yet are
//! fetched by id, up to the table's latest. Each is fetched once per connector run.

use fluss::metadata::{DataField, Schema, SchemaInfo};
use fluss::record::ScanRecord;

use crate::client::connect::{CALL_TIMEOUT, call};
use crate::client::table::Table;
use crate::error::Result;
use crate::records::batch_runs;
use crate::schemas::Change;

/// Registers the versions of `records`' batches that `table.schemas` does not know yet,
/// fetching them; returns the changes, oldest first, for the INFO line.
pub async fn learn(table: &Table, records: &[ScanRecord]) -> Result<Vec<Change>> {
    let mut unknown = false;
    for (_, _, batch) in batch_runs(records) {
        if let Some(batch) = batch
            && !table.schemas.knows(batch.num_columns())
        {
            unknown = true;
            break;
        }
    }
    if !unknown {
        return Ok(Vec::new());
    }
    up_to_latest(table).await
}

/// Registers every version of the table the registry does not know yet, up to its latest
/// (also used when a snapshot is taken: its rows may be of any version); returns the versions
/// newer than the newest known before, as changes.
pub async fn up_to_latest(table: &Table) -> Result<Vec<Change>> {
    let latest = fetch(table, None).await?;
    let known = table.schemas.row_types();
    let newest_known = known.keys().next_back().copied().unwrap_or(0);
    let mut changes = Vec::new();
    // Fluss numbers a table's versions from 1 up.
    for id in 1..latest.schema_id() {
        if known.contains_key(&id) {
            continue;
        }
        let info = fetch(table, Some(id)).await?;
        changes.extend(table.schemas.add(id, fields(info.schema())));
    }
    changes.extend(
        table
            .schemas
            .add(latest.schema_id(), fields(latest.schema())),
    );
    changes.retain(|change| change.to > newest_known);
    Ok(changes)
}

/// The schema of version `id` of `table` (`None`: its latest).
pub async fn fetch(table: &Table, id: Option<i32>) -> Result<SchemaInfo> {
    call(
        "get_table_schema",
        CALL_TIMEOUT,
        table.admin.get_table_schema(&table.path, id),
    )
    .await
}

fn fields(schema: &Schema) -> Vec<DataField> {
    schema.row_type().fields().to_vec()
}
