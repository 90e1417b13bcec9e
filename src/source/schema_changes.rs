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

//! Schema changes met while reading (columns added by `ADD COLUMN`): the new versions are
//! registered, each change is logged once, and the open-time checks of the runtime's JSON
//! re-encoding (key order, wide decimals) run again on the newest columns. The stream goes on
//! whatever they say.

use fluss::record::ScanRecords;

use crate::client::schema_fetch;
use crate::client::table::Table;
use crate::config::Config;
use crate::error::Result;
use crate::schemas::Change;
use crate::source::open::runtime_json;
use crate::source::telemetry::Telemetry;

/// Registers the schema versions of polled batches written after an `ADD COLUMN`, logging
/// each change once.
pub(super) async fn learn(
    records: &ScanRecords,
    table: &Table,
    config: &Config,
    telemetry: &Telemetry,
) -> Result<()> {
    for records in records.records_by_buckets().values() {
        let changes = schema_fetch::learn(table, records).await?;
        report(&changes, table, config, telemetry);
    }
    Ok(())
}

/// Logs schema changes, and what the runtime-JSON checks say about the newest columns.
pub(super) fn report(changes: &[Change], table: &Table, config: &Config, telemetry: &Telemetry) {
    if changes.is_empty() {
        return;
    }
    for change in changes {
        telemetry.schema_changed(change);
    }
    let fields = &table.schemas.latest().fields;
    match runtime_json::check(config, fields, table.primary_key) {
        Ok(None) => {}
        Ok(Some(warning)) => telemetry.warn(&warning),
        Err(error) => telemetry.warn(&error.to_string()),
    }
}
