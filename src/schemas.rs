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

//! The table's schema versions, as the fetched batches show them: each version's id and the
//! Fluss fields of its batch columns. A leaf, shared by the reader (which learns new versions
//! from the cluster, see [`crate::client::schema_fetch`]) and the encoders (which look each batch's
//! version up once per batch, never per row).
//!
//! Fluss 0.9 changes a table's schema only by appending nullable columns (`ALTER TABLE … ADD
//! COLUMN`), and the scanners decode every fetched batch with the schema it was written with
//! (fluss-rs' `with_fixed_schema(false)`; unless `columns` pins a projection). So a batch's column count names its version: the
//! registry is keyed by it. With a projection every batch has the columns of the open-time
//! schema, and the registry never changes.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use arrow_array::RecordBatch;
use fluss::metadata::{DataField, RowType};

/// One schema version: its id and the fields of the batches written with it.
#[derive(Debug, PartialEq)]
pub struct Version {
    /// The Fluss schema id.
    pub id: i32,
    /// The Fluss fields of the batch columns, in batch order.
    pub fields: Vec<DataField>,
}

/// A version seen for the first time, for the INFO line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The newest schema id known before it.
    pub from: i32,
    /// Its schema id.
    pub to: i32,
    /// The columns it added, in order.
    pub added: Vec<String>,
}

/// The registry; clones share it.
#[derive(Debug, Clone)]
pub struct Schemas {
    inner: Arc<RwLock<Inner>>,
}

#[derive(Debug)]
struct Inner {
    /// Known versions, by column count (ascending).
    versions: Vec<Arc<Version>>,
    /// `columns` pins one version for every batch.
    pinned: bool,
    /// Every column of each version known, by id (also when pinned: a snapshot's rows are
    /// decoded by their own version).
    row_types: BTreeMap<i32, RowType>,
}

impl Schemas {
    /// A registry that knows the open-time version `id` with batch columns `fields`;
    /// `projected` when `columns` pins them.
    pub fn new(id: i32, fields: Vec<DataField>, projected: bool) -> Self {
        Self {
            inner: Arc::new(RwLock::new(Inner {
                versions: vec![Arc::new(Version { id, fields })],
                pinned: projected,
                row_types: BTreeMap::new(),
            })),
        }
    }

    /// Records every column of the open-time version `id`.
    pub fn with_row_type(self, id: i32, row_type: RowType) -> Self {
        self.write().row_types.insert(id, row_type);
        self
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Every column of each version known, by id.
    pub fn row_types(&self) -> BTreeMap<i32, RowType> {
        self.read().row_types.clone()
    }

    /// The version rows are shown in and all its columns: the newest known, or the open-time
    /// one when a projection pins it (`None` before its columns are recorded).
    pub fn target(&self) -> Option<(i32, RowType)> {
        let inner = self.read();
        let id = if inner.pinned {
            inner.versions.first()?.id
        } else {
            *inner.row_types.keys().next_back()?
        };
        Some((id, inner.row_types.get(&id)?.clone()))
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }

    /// The version of batches with `columns` columns, if known.
    pub fn of_columns(&self, columns: usize) -> Option<Arc<Version>> {
        let inner = self.read();
        if inner.pinned {
            return inner.versions.first().cloned();
        }
        inner
            .versions
            .iter()
            .find(|v| v.fields.len() == columns)
            .cloned()
    }

    /// The version `batch` was written with, if known.
    pub fn of(&self, batch: &RecordBatch) -> Option<Arc<Version>> {
        self.of_columns(batch.num_columns())
    }

    /// Whether batches with `columns` columns have a known version.
    pub fn knows(&self, columns: usize) -> bool {
        let inner = self.read();
        inner.pinned || inner.versions.iter().any(|v| v.fields.len() == columns)
    }

    /// The newest version known.
    pub fn latest(&self) -> Arc<Version> {
        let inner = self.read();
        // Never empty: `new` puts the open-time version in.
        inner
            .versions
            .iter()
            .max_by_key(|v| v.id)
            .cloned()
            .unwrap_or_else(|| {
                Arc::new(Version {
                    id: 0,
                    fields: Vec::new(),
                })
            })
    }

    /// Registers version `id` with `fields` (all the table's columns); returns what it added
    /// to the newest version known before, or `None` when it was known (or the registry is
    /// pinned).
    pub fn add(&self, id: i32, fields: Vec<DataField>) -> Option<Change> {
        let mut inner = self.write();
        inner
            .row_types
            .entry(id)
            .or_insert_with(|| RowType::new(fields.clone()));
        if inner.pinned || inner.versions.iter().any(|v| v.id == id) {
            return None;
        }
        let before = inner
            .versions
            .iter()
            .filter(|v| v.id < id)
            .max_by_key(|v| v.id)
            .cloned();
        let change = Change {
            from: before.as_ref().map_or(0, |v| v.id),
            to: id,
            added: fields
                .iter()
                .skip(before.as_ref().map_or(0, |v| v.fields.len()))
                .map(|f| f.name().to_owned())
                .collect(),
        };
        inner.versions.push(Arc::new(Version { id, fields }));
        inner.versions.sort_by_key(|v| v.fields.len());
        Some(change)
    }
}

#[cfg(test)]
mod tests {
    use fluss::metadata::DataTypes;

    use super::*;

    fn fields(names: &[&str]) -> Vec<DataField> {
        names
            .iter()
            .map(|n| DataTypes::field(*n, DataTypes::int()))
            .collect()
    }

    #[test]
    fn versions_are_found_by_column_count_and_changes_name_the_added_columns() {
        let schemas = Schemas::new(1, fields(&["a", "b"]), false);
        assert_eq!(schemas.of_columns(2).map(|v| v.id), Some(1));
        assert!(!schemas.knows(3));
        assert_eq!(
            schemas.add(2, fields(&["a", "b", "c"])),
            Some(Change {
                from: 1,
                to: 2,
                added: vec!["c".into()]
            })
        );
        assert_eq!(schemas.add(2, fields(&["a", "b", "c"])), None, "known");
        assert_eq!(
            schemas.add(3, fields(&["a", "b", "c", "d", "e"])),
            Some(Change {
                from: 2,
                to: 3,
                added: vec!["d".into(), "e".into()]
            })
        );
        assert_eq!(schemas.of_columns(3).map(|v| v.id), Some(2));
        assert_eq!(schemas.of_columns(5).map(|v| v.id), Some(3));
        assert_eq!(schemas.of_columns(4), None);
        assert_eq!(schemas.latest().id, 3);
        assert_eq!(
            schemas.target().map(|(id, r)| (id, r.fields().len())),
            Some((3, 5))
        );
    }

    #[test]
    fn a_projection_pins_the_open_time_version() {
        let schemas = Schemas::new(4, fields(&["b"]), true)
            .with_row_type(4, RowType::new(fields(&["a", "b"])));
        assert_eq!(schemas.add(5, fields(&["a", "b", "c"])), None);
        assert_eq!(schemas.of_columns(1).map(|v| v.id), Some(4));
        assert!(schemas.knows(1));
        assert_eq!(schemas.latest().id, 4);
        assert_eq!(
            schemas.target().map(|(id, r)| (id, r.fields().len())),
            Some((4, 2))
        );
        assert_eq!(
            schemas.row_types().keys().copied().collect::<Vec<_>>(),
            [4, 5],
            "a snapshot still decodes rows of the newer version"
        );
    }
}
