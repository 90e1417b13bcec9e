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

//! The records of one poll, reduced to the ones the filter keeps, before they are queued for
//! encoding, so every payload format (JSON rows, change events, Arrow IPC) sees only them.
//!
//! The mask is computed once per fetched Arrow batch ([`super::eval`]). When only some rows
//! of a batch match, the matching rows are copied into a compacted batch (arrow's `take`) and
//! the kept records point into it: the Arrow IPC encoder then writes one message per run of
//! matching rows instead of one per row, and the JSON encoders read fewer, denser columns.
//! Records keep their offsets and timestamps, so message ids and headers do not change.
//!
//! Primary-key changelogs are filtered as the changelog of the filtered table: each record
//! is evaluated on its own image, and an update pair whose images fall on different sides of
//! the filter becomes the change that view sees. A `-U` that matches followed by a `+U` that
//! does not becomes a delete of the old image (the row leaves the view); a `-U` that does not
//! match followed by a `+U` that does becomes an insert of the new image (the row enters it).
//! Both matching stay an update; neither, nothing. Lone `+U`s (WAL images) are kept when they
//! match. fluss-rs returns an update pair within one poll (one log batch), so a pair is never
//! split between two calls.

use std::sync::Arc;

use arrow_array::UInt32Array;
use arrow_select::take::take_record_batch;
use fluss::record::{ChangeType, ScanRecord};
use fluss::row::ColumnarRow;

use super::ApplyError;
use super::Filter;
use crate::records::{arrow_batch, batch_runs};

impl Filter {
    /// The records of `records` (one bucket, offset order) the filter keeps, in order, with
    /// update pairs of a changelog resolved as the module docs say.
    pub fn select(&self, records: Vec<ScanRecord>) -> Result<Vec<ScanRecord>, ApplyError> {
        let mut keep = vec![false; records.len()];
        let mut runs = Vec::new();
        for (start, end, batch) in batch_runs(&records) {
            let batch = arrow_batch(batch).map_err(|cause| ApplyError::WithoutBatch { cause })?;
            let ids = records[start..end].iter().map(|r| r.row().get_row_id());
            let (low, high) = ids.fold((usize::MAX, 0), |(l, h), id| (l.min(id), h.max(id)));
            let mask = self
                .matches(&batch.slice(low, high + 1 - low))
                .map_err(|cause| ApplyError::Arrow { cause })?;
            for (keep, record) in keep[start..end].iter_mut().zip(&records[start..end]) {
                *keep = mask.value(record.row().get_row_id() - low);
            }
            runs.push((start, end));
        }
        let types = if self.changelog {
            resolve_pairs(&records, &keep)
        } else {
            Vec::new()
        };
        if types.is_empty() && keep.iter().all(|k| *k) {
            return Ok(records);
        }
        let change_type = |i: usize| types.get(i).copied().unwrap_or(*records[i].change_type());
        let mut kept = Vec::with_capacity(keep.iter().filter(|k| **k).count());
        for (start, end) in runs {
            let selected: Vec<usize> = (start..end).filter(|i| keep[*i]).collect();
            if selected.len() == end - start {
                kept.extend(selected.into_iter().map(|i| {
                    let r = &records[i];
                    ScanRecord::new(r.row().clone(), r.offset(), r.timestamp(), change_type(i))
                }));
                continue;
            }
            if selected.is_empty() {
                continue;
            }
            let batch = arrow_batch(records[start].row().get_record_batch())
                .map_err(|cause| ApplyError::WithoutBatch { cause })?;
            let indices: UInt32Array = selected
                .iter()
                .map(|i| records[*i].row().get_row_id() as u32)
                .collect();
            let compacted =
                take_record_batch(batch, &indices).map_err(|cause| ApplyError::Arrow { cause })?;
            let row = ColumnarRow::new(Arc::new(compacted), self.row_type.clone(), 0, None)
                .map_err(|cause| ApplyError::Rows { cause })?;
            for (row_id, i) in selected.into_iter().enumerate() {
                let mut row = row.clone();
                row.set_row_id(row_id);
                let r = &records[i];
                kept.push(ScanRecord::new(
                    row,
                    r.offset(),
                    r.timestamp(),
                    change_type(i),
                ));
            }
        }
        Ok(kept)
    }
}

/// The change type each record is delivered with: a `-U`/`+U` pair split by the filter
/// becomes a delete or an insert. Empty when no pair is split.
fn resolve_pairs(records: &[ScanRecord], keep: &[bool]) -> Vec<ChangeType> {
    let mut types: Vec<ChangeType> = Vec::new();
    let mut i = 0;
    while i + 1 < records.len() {
        let pair = *records[i].change_type() == ChangeType::UpdateBefore
            && *records[i + 1].change_type() == ChangeType::UpdateAfter;
        if !pair {
            i += 1;
            continue;
        }
        if keep[i] != keep[i + 1] {
            if types.is_empty() {
                types = records.iter().map(|r| *r.change_type()).collect();
            }
            if keep[i] {
                types[i] = ChangeType::Delete;
            } else {
                types[i + 1] = ChangeType::Insert;
            }
        }
        i += 2;
    }
    types
}

#[cfg(test)]
mod tests {
    use arrow_array::{Int64Array, RecordBatch};
    use arrow_schema::{DataType, Field, Schema};
    use fluss::metadata::{DataField, DataTypes, RowType};

    use super::*;
    use crate::filter::FilterText;

    fn fields() -> Vec<DataField> {
        vec![DataField::new("v", DataTypes::bigint(), None)]
    }

    /// Records at offsets 100.. whose column `v` holds `values`, with `types`.
    fn records(values: &[i64], types: &[ChangeType]) -> Vec<ScanRecord> {
        let schema = Arc::new(Schema::new(vec![Field::new("v", DataType::Int64, true)]));
        let batch = Arc::new(
            RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from(values.to_vec()))])
                .unwrap(),
        );
        let row_type = Arc::new(RowType::new(fields()));
        let row = ColumnarRow::new(batch, row_type, 0, None).unwrap();
        types
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let mut row = row.clone();
                row.set_row_id(i);
                ScanRecord::new(row, 100 + i as i64, 7, *t)
            })
            .collect()
    }

    fn filter(text: &str, changelog: bool) -> Filter {
        Filter::new(
            &FilterText::parse(text).unwrap(),
            &fields(),
            &fields(),
            changelog,
        )
        .unwrap()
    }

    /// (offset, change type, value) of each kept record, read from the batch it points into.
    fn seen(records: &[ScanRecord]) -> Vec<(i64, ChangeType, i64)> {
        records
            .iter()
            .map(|r| {
                let batch = r.row().get_record_batch().unwrap();
                let column = batch
                    .column(0)
                    .as_any()
                    .downcast_ref::<Int64Array>()
                    .unwrap();
                (
                    r.offset(),
                    *r.change_type(),
                    column.value(r.row().get_row_id()),
                )
            })
            .collect()
    }

    use ChangeType::{
        AppendOnly as A, Delete as D, Insert as I, UpdateAfter as UA, UpdateBefore as UB,
    };

    #[test]
    fn matching_records_keep_offsets_and_point_into_a_compacted_batch() {
        let kept = filter("v >= 3", false)
            .select(records(&[1, 5, 2, 3, 9], &[A; 5]))
            .unwrap();
        assert_eq!(seen(&kept), [(101, A, 5), (103, A, 3), (104, A, 9)]);
        let batch = kept[0].row().get_record_batch().unwrap();
        assert_eq!(batch.num_rows(), 3, "only the matching rows are copied");
        let ids: Vec<usize> = kept.iter().map(|r| r.row().get_row_id()).collect();
        assert_eq!(
            ids,
            [0, 1, 2],
            "contiguous, so IPC writes them as one message"
        );
    }

    #[test]
    fn all_or_nothing_matches_copy_nothing() {
        let all = records(&[4, 5], &[A; 2]);
        let original = all[0].row().get_record_batch().unwrap() as *const RecordBatch;
        let kept = filter("v > 0", false).select(all).unwrap();
        assert!(std::ptr::eq(
            kept[1].row().get_record_batch().unwrap(),
            original
        ));
        assert!(
            filter("v > 9", false)
                .select(records(&[4, 5], &[A; 2]))
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn a_split_update_pair_becomes_the_change_the_filtered_view_sees() {
        // v >= 10: 5 → 20 enters the view, 30 → 1 leaves it, 11 → 12 stays, 2 → 3 is unseen.
        let kept = filter("v >= 10", true)
            .select(records(
                &[5, 20, 30, 1, 11, 12, 2, 3, 40],
                &[UB, UA, UB, UA, UB, UA, UB, UA, D],
            ))
            .unwrap();
        assert_eq!(
            seen(&kept),
            [
                (101, I, 20),
                (102, D, 30),
                (104, UB, 11),
                (105, UA, 12),
                (108, D, 40),
            ]
        );
    }

    #[test]
    fn a_lone_update_after_is_kept_when_it_matches() {
        let kept = filter("v > 1", true)
            .select(records(&[1, 2, 3], &[UA, UA, I]))
            .unwrap();
        assert_eq!(seen(&kept), [(101, UA, 2), (102, I, 3)]);
    }
}
