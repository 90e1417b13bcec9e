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

//! The configured table: looked up once at open and checked against `table_type` and
//! `columns`, each refusal naming the cause and the fix.

use std::sync::Arc;

use fluss::client::{FlussAdmin, FlussConnection};
use fluss::error::FlussError;
use fluss::metadata::{DataField, TableInfo, TablePath};
use fluss::{BucketId, PartitionId, TableId};

use crate::client::connect::{CALL_TIMEOUT, call};
use crate::config::Config;
use crate::config::options::TableType;
use crate::error::{Error, Fault, Result};
use crate::position::BucketKey;
use crate::schemas::Schemas;
use crate::scope::share::Assignment;

/// The resolved table and what the source reads of it. Cloning shares the connection.
#[derive(Clone)]
pub struct Table {
    /// The live connection (scanners keep their own `Arc`s into it).
    pub conn: Arc<FlussConnection>,
    /// The admin client.
    pub admin: Arc<FlussAdmin>,
    /// `db.table` as a path.
    pub path: TablePath,
    /// Table metadata as of open.
    pub info: TableInfo,
    /// Whether the table has a primary key (read as its changelog).
    pub primary_key: bool,
    /// Column indexes pushed down to the server (`None` = all columns).
    pub projection: Option<Vec<usize>>,
    /// The Fluss fields of the columns in the scanned batches, in batch order.
    pub fields: Vec<DataField>,
    /// The part of `filter` the server applies (see [`crate::filter::pushdown`]).
    pub pushdown: Option<fluss::predicate::Predicate>,
    /// The schema versions batches are read with: `fields` as of open, then those of columns
    /// added since (see [`crate::client::schema_fetch`]).
    pub schemas: Schemas,
}

impl Table {
    /// Loads the client's metadata of those of `partitions` it does not know yet, in one
    /// request. Subscribing to a partition's bucket loads that partition's metadata first, so
    /// buckets subscribed one at a time (as their snapshots are handed over) would otherwise
    /// cost a request each. Best effort: after a failure each subscription asks for its own.
    pub async fn know_partitions(&self, partitions: impl IntoIterator<Item = PartitionId>) {
        let partitions: Vec<PartitionId> = partitions.into_iter().collect();
        if partitions.is_empty() {
            return;
        }
        let metadata = self.conn.get_metadata();
        let _ = call(
            "update_partition_metadata",
            CALL_TIMEOUT,
            metadata.check_and_update_partition_metadata_by_ids(&self.path, &partitions),
        )
        .await;
    }

    /// Looks the table up and checks it against `table_type` and `columns`.
    pub async fn resolve(conn: Arc<FlussConnection>, config: &Config) -> Result<Self> {
        let admin = conn
            .get_admin()
            .map_err(|cause| Error::fluss("get_admin", cause))?;
        let path = TablePath::new(config.database.clone(), config.table.clone());
        let info = match call("get_table_info", CALL_TIMEOUT, admin.get_table_info(&path)).await {
            Ok(info) => info,
            Err(Error::Fluss { cause, .. })
                if matches!(
                    cause.api_error(),
                    Some(FlussError::TableNotExist | FlussError::DatabaseNotExist)
                ) =>
            {
                return Err(Error::TableNotFound {
                    database: config.database.clone(),
                    table: config.table.clone(),
                });
            }
            Err(e) if e.fault() == Fault::Auth => return Err(not_authorized(config, e)),
            Err(e) => return Err(e),
        };
        let primary_key = info.has_primary_key();
        let actual = if primary_key { "primary_key" } else { "log" };
        let expected = match config.table_type {
            TableType::Auto => None,
            TableType::Log => Some("log"),
            TableType::PrimaryKey => Some("primary_key"),
        };
        if let Some(expected) = expected.filter(|e| *e != actual) {
            return Err(Error::TableTypeMismatch {
                database: config.database.clone(),
                table: config.table.clone(),
                expected,
                actual,
            });
        }
        let all_fields = info.get_row_type().fields();
        let projection = match &config.columns {
            None => None,
            Some(columns) => Some(project(config, &info, columns, primary_key)?),
        };
        let fields = match &projection {
            None => all_fields.clone(),
            Some(indexes) => indexes.iter().map(|i| all_fields[*i].clone()).collect(),
        };
        let schemas = Schemas::new(info.get_schema_id(), fields.clone(), projection.is_some())
            .with_row_type(info.get_schema_id(), info.get_row_type().clone());
        Ok(Self {
            conn,
            admin,
            path,
            info,
            primary_key,
            projection,
            fields,
            pushdown: None,
            schemas,
        })
    }

    /// The table id, which keys state and message ids.
    pub fn id(&self) -> TableId {
        self.info.get_table_id()
    }

    /// Number of buckets per table (or per partition).
    pub fn buckets(&self) -> BucketId {
        self.info.get_num_buckets()
    }

    /// Every bucket of the table, or of each given partition, that `assignment` gives this
    /// instance.
    pub fn bucket_keys(
        &self,
        assignment: Assignment,
        partitions: impl IntoIterator<Item = PartitionId>,
    ) -> Vec<BucketKey> {
        let buckets = 0..self.buckets();
        let mut keys: Vec<BucketKey> = if self.info.is_partitioned() {
            partitions
                .into_iter()
                .flat_map(|p| {
                    buckets.clone().map(move |bucket| BucketKey {
                        partition: Some(p),
                        bucket,
                    })
                })
                .collect()
        } else {
            buckets.map(BucketKey::bucket).collect()
        };
        keys.retain(|key| assignment.owns(key));
        keys
    }
}

/// Column indexes for `columns`; primary-key columns are always kept for change events.
fn project(
    config: &Config,
    info: &TableInfo,
    columns: &[String],
    primary_key: bool,
) -> Result<Vec<usize>> {
    let row_type = info.get_row_type();
    let mut indexes = Vec::with_capacity(columns.len());
    for column in columns {
        let index = row_type
            .get_field_index(column)
            .ok_or_else(|| Error::UnknownColumn {
                database: config.database.clone(),
                table: config.table.clone(),
                column: column.clone(),
                available: row_type.get_field_names().join(", "),
            })?;
        indexes.push(index);
    }
    if primary_key {
        for key in info.get_primary_keys() {
            if let Some(index) = row_type.get_field_index(key)
                && !indexes.contains(&index)
            {
                indexes.push(index);
            }
        }
    }
    Ok(indexes)
}

/// A refused table access, named after the user it was refused to.
pub fn not_authorized(config: &Config, cause: Error) -> Error {
    Error::NotAuthorized {
        user: config
            .sasl
            .as_ref()
            .map_or_else(|| "ANONYMOUS".to_owned(), |s| s.username.clone()),
        database: config.database.clone(),
        table: config.table.clone(),
        cause: Box::new(cause),
    }
}
