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

//! [`Context`]: what every step of reading is handed once instead of piece by piece: the
//! configuration, the resolved table, the payload format chosen at open, how the client
//! fetches, and the telemetry every line and metric goes through.

use crate::client::connect::Fetch;
use crate::client::table::Table;
use crate::config::Config;
use crate::format::Format;
use crate::schemas::Change;
use crate::telemetry::Telemetry;

/// The parts of an open source that the steps of reading share. Everything but the telemetry
/// is settled at open.
pub struct Context {
    /// The validated `[plugin_config]`.
    pub config: Config,
    /// The table read, with its schema versions.
    pub table: Table,
    /// The payload format, which answers every format-specific question.
    pub format: Box<dyn Format>,
    /// How the client fetches (the format's answer for this configuration).
    pub fetch: Fetch,
    /// Log lines and metrics.
    pub telemetry: Telemetry,
}

impl Context {
    /// Logs schema versions seen for the first time, and what the format's check of the
    /// newest columns says about them (the stream goes on whatever it says).
    pub fn schema_changed(&self, changes: &[Change]) {
        if changes.is_empty() {
            return;
        }
        for change in changes {
            self.telemetry.schema_changed(change);
        }
        let fields = &self.table.schemas.latest().fields;
        match self
            .format
            .check_columns(&self.config, fields, self.table.primary_key)
        {
            Ok(None) => {}
            Ok(Some(warning)) => self.telemetry.warn(&warning),
            Err(error) => self.telemetry.warn(&error.to_string()),
        }
    }
}
