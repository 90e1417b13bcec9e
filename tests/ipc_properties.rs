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

//! Arrow IPC payloads decoded with arrow-ipc's `StreamReader` equal the rows they were cut
//! from, on random batches of every supported type (nested to depth 3, with nulls), under
//! every `arrow_ipc_compression` and a random `max_batch_bytes`.
//!
//! The records handed to the encoder are a random subset of a batch's rows (so runs break
//! where row ids are not consecutive, as after a projection or a changelog gap). Read back in
//! order, the messages must hold every record once: each message one batch, equal to the
//! slice of the source batch at its first record, and the next message starting where it
//! ends. A run whose whole batch fits in `max_batch_bytes` is one message. For primary-key
//! tables the three leading `$changelog` columns must carry each record's change type,
//! offset and timestamp.
//!
//! Cases per property: `PROPTEST_CASES`, default 512 (about 3 s in a debug build on the
//! shared 2-core box).

mod arrow_cases;
mod property;

use arrow_array::RecordBatch;
use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, TimestampMillisecondType};
use arrow_ipc::reader::StreamReader;
use fluss::record::ChangeType;
use iggy_connector_fluss_source::config::options::IpcCompression;
use iggy_connector_fluss_source::encode::Encoder;
use iggy_connector_fluss_source::encode::batch::Batch;
use iggy_connector_fluss_source::encode::ipc::{IpcMessages, Leading};
use iggy_connector_fluss_source::schemas::Schemas;
use proptest::prelude::*;

use arrow_cases::{Case, case_of, config};

const COMPRESSIONS: [IpcCompression; 3] = [
    IpcCompression::None,
    IpcCompression::Lz4,
    IpcCompression::Zstd,
];

/// `_change_type` as Fluss' `$changelog` view names it.
fn change_name(change: ChangeType) -> &'static str {
    match change {
        ChangeType::AppendOnly | ChangeType::Insert => "insert",
        ChangeType::UpdateBefore => "update_before",
        ChangeType::UpdateAfter => "update_after",
        ChangeType::Delete => "delete",
    }
}

/// What is encoded besides the batch: which of the window's rows are records (and their
/// change types), the byte cap, and the leading columns (a primary-key table's, a filtered
/// log table's `_log_offset`, or none).
#[derive(Clone, Debug)]
struct Encoding {
    picked: Vec<(bool, ChangeType)>,
    /// `max_batch_bytes` as a fraction of the whole batch's Arrow memory size, in 1/64.
    cap_64ths: usize,
    leading: Leading,
}

fn encoding() -> impl Strategy<Value = Encoding> {
    let change = prop::sample::select(vec![
        ChangeType::AppendOnly,
        ChangeType::Insert,
        ChangeType::UpdateBefore,
        ChangeType::UpdateAfter,
        ChangeType::Delete,
    ]);
    (
        prop::collection::vec((prop::bool::weighted(0.85), change), 40),
        prop_oneof![1usize..64, 64usize..256],
        prop::sample::select(vec![
            Leading::Nothing,
            Leading::LogOffset,
            Leading::Changelog,
        ]),
    )
        .prop_map(|(picked, cap_64ths, leading)| Encoding {
            picked,
            cap_64ths,
            leading,
        })
}

fn read_back(payload: &[u8]) -> Result<Vec<RecordBatch>, TestCaseError> {
    StreamReader::try_new(payload, None)
        .and_then(|reader| reader.collect::<Result<Vec<_>, _>>())
        .map_err(|e| TestCaseError::fail(format!("payload is not an Arrow IPC stream: {e}")))
}

fn check(
    case: &Case,
    encoding: &Encoding,
    compression: IpcCompression,
) -> Result<(), TestCaseError> {
    let full = case.full_batch();
    let picked: Vec<(usize, ChangeType)> = (case.offset..case.offset + case.len)
        .zip(&encoding.picked)
        .filter(|(_, (keep, _))| *keep)
        .map(|(row, (_, change))| (row, *change))
        .collect();
    let records = arrow_cases::records(&case.fields, full.clone(), picked.clone(), 500);
    let max_bytes = (full.get_array_memory_size() * encoding.cap_64ths / 64).max(1);
    let mut encoder = IpcMessages::new(
        encoding.leading,
        Schemas::new(1, case.fields.clone(), true),
        compression,
        max_bytes,
    )
    .map_err(|e| TestCaseError::fail(format!("IpcMessages::new: {e}")))?;
    let mut batch = Batch::new(usize::MAX, usize::MAX);
    let consumed = encoder
        .encode(&arrow_cases::stamp(None), &records, &mut batch)
        .map_err(|e| TestCaseError::fail(format!("encode: {e}")))?;
    prop_assert_eq!(consumed, records.len());

    let fits = max_bytes >= full.get_array_memory_size();
    let mut at = 0;
    for message in batch.into_messages().expect("payloads built") {
        let batches = read_back(&message.payload)?;
        prop_assert_eq!(batches.len(), 1, "one record batch per message");
        let got = &batches[0];
        let rows = got.num_rows();
        prop_assert!(
            rows > 0 && at + rows <= picked.len(),
            "{} rows at {}",
            rows,
            at
        );
        let first = picked[at].0;
        prop_assert!(
            picked[at..at + rows]
                .iter()
                .enumerate()
                .all(|(i, (row, _))| *row == first + i),
            "a message spans rows that are not consecutive: {:?}",
            &picked[at..at + rows]
        );
        let expected = full.slice(first, rows);
        let data = if encoding.leading == Leading::LogOffset {
            let offsets = got.column(0).as_primitive::<Int64Type>();
            for (i, (row, _)) in picked[at..at + rows].iter().enumerate() {
                prop_assert_eq!(offsets.value(i), 500 + *row as i64);
            }
            got.project(&(1..got.num_columns()).collect::<Vec<_>>())
                .map_err(|e| TestCaseError::fail(format!("project: {e}")))?
        } else if encoding.leading == Leading::Changelog {
            let changes = got.column(0).as_string::<i32>();
            let offsets = got.column(1).as_primitive::<Int64Type>();
            let timestamps = got.column(2).as_primitive::<TimestampMillisecondType>();
            for (i, (row, change)) in picked[at..at + rows].iter().enumerate() {
                prop_assert_eq!(changes.value(i), change_name(*change));
                prop_assert_eq!(offsets.value(i), 500 + *row as i64);
                prop_assert_eq!(timestamps.value(i), *row as i64);
            }
            got.project(&(3..got.num_columns()).collect::<Vec<_>>())
                .map_err(|e| TestCaseError::fail(format!("project: {e}")))?
        } else {
            got.clone()
        };
        prop_assert_eq!(
            &data,
            &expected,
            "rows {}..{} under {:?}",
            first,
            first + rows,
            compression
        );
        at += rows;
        // A run that fits is never split: the next message starts a new run.
        if fits && at < picked.len() {
            prop_assert!(
                picked[at].0 != picked[at - 1].0 + 1,
                "a run split although the batch fits in max_batch_bytes"
            );
        }
    }
    prop_assert_eq!(at, picked.len(), "every record is in exactly one message");
    Ok(())
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn payloads_read_back_as_the_rows_they_hold(case in case_of(0..40), encoding in encoding()) {
        for compression in COMPRESSIONS {
            check(&case, &encoding, compression)?;
        }
    }
}
