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

//! Schema changes met while reading (columns added by `ADD COLUMN`): the new versions of
//! polled batches are registered, and each change is logged once with what the format's check
//! of the newest columns says ([`Context::schema_changed`]).

use fluss::record::ScanRecords;

use crate::client::schema_fetch;
use crate::context::Context;
use crate::error::Result;

/// Registers the schema versions of polled batches written after an `ADD COLUMN`, logging
/// each change once.
pub(super) async fn learn(records: &ScanRecords, ctx: &Context) -> Result<()> {
    for records in records.records_by_buckets().values() {
        let changes = schema_fetch::learn(&ctx.table, records).await?;
        ctx.schema_changed(&changes);
    }
    Ok(())
}
