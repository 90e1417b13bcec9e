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

//! What identifies a message: its deterministic id and its headers.
//!
//! ## Message id
//! A replayed row must carry the same id so consumers (and Iggy's deduplication) can drop
//! repeats, and two rows must never share one. The id is therefore built from disjoint bit
//! fields of the row's coordinates, most significant first:
//!
//! | bits    | width | field                                                     |
//! |---------|-------|-----------------------------------------------------------|
//! | 127-126 | 2     | layout version, `01` (so an id is never 0, which Iggy would replace with a random one) |
//! | 125-104 | 22    | table id                                                  |
//! | 103-72  | 32    | partition id + 1 (0 for a table without partitions)       |
//! | 71-56   | 16    | bucket                                                    |
//! | 55-0    | 56    | log offset                                                |
//!
//! Ids are unique while table id < 2^22, partition id < 2^32 - 1, bucket < 2^16 and offset
//! < 2^56 — far beyond what a Fluss cluster assigns. A larger value is folded (XOR) into its
//! field, which keeps ids deterministic but only probably unique.
//!
//! A snapshot row (`starting_offset = "full"`) has no log offset of its own. Its id has layout
//! version `10` (so it never equals a changelog id), the same table, partition and bucket
//! fields, then:
//!
//! | bits    | width | field                                                     |
//! |---------|-------|-----------------------------------------------------------|
//! | 55-32   | 24    | the offset the snapshot was taken at (the changelog continues there), mod 2^24 |
//! | 31-0    | 32    | the row's index in the bucket's snapshot                  |
//!
//! Read through a `filter`, a snapshot's rows are numbered among the rows the filter kept
//! (0, 1, 2, … in key order) and their ids have layout version `11` instead
//! ([`SnapshotIndex::Kept`]): so the rows of every message sit at consecutive indexes however
//! a replay cuts them, and a consumer that numbered a bucket's rows one way never mistakes
//! them for rows numbered the other way.
//!
//! A snapshot delivered again at the same offset (nothing written meanwhile) repeats its ids;
//! one taken again after writes gets new ids, so a consumer that drops repeated ids never
//! drops a row it has not seen. Two snapshots of a bucket share ids only if their offsets
//! differ by a multiple of 2^24.
//!
//! The tests of the id layout and of every header sit next to it, in this file.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use crate::sdk::{HeaderKey, HeaderValue, ProducedMessage};
use fluss::record::ChangeType;
use fluss::{BucketId, PartitionId, TableId};

use crate::config::options::{Choice, Header, HeaderSet};
use crate::error::{Error, Result};
use crate::position::{BucketKey, Offset};

fn fold(value: u64, bits: u32) -> u128 {
    let mask = (1u64 << bits) - 1;
    let mut folded = value & mask;
    let mut rest = value >> bits;
    while rest != 0 {
        folded ^= rest & mask;
        rest >>= bits;
    }
    u128::from(folded)
}

/// The message id of the row at `offset` (see the module docs for the layout).
pub fn message_id(
    table: TableId,
    partition: Option<PartitionId>,
    bucket: BucketId,
    offset: Offset,
) -> u128 {
    (1u128 << 126) | bucket_bits(table, partition, bucket) | fold(offset as u64, 56)
}

/// How a snapshot's rows are numbered, which its ids say in their layout version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapshotIndex {
    /// Every row of the bucket's snapshot in key order (no filter): layout `10`.
    Every,
    /// The rows a `filter` kept, in key order: layout `11`.
    Kept,
}

/// The message id of the snapshot row at `index` of a snapshot taken at `continue_at` (see
/// the module docs for the layout).
pub fn snapshot_id(
    table: TableId,
    partition: Option<PartitionId>,
    bucket: BucketId,
    (continue_at, numbering): (Offset, SnapshotIndex),
    index: i64,
) -> u128 {
    let layout: u128 = match numbering {
        SnapshotIndex::Every => 2,
        SnapshotIndex::Kept => 3,
    };
    (layout << 126)
        | bucket_bits(table, partition, bucket)
        | u128::from(continue_at as u64 & ((1 << 24) - 1)) << 32
        | fold(index as u64, 32)
}

/// Bits 125-56 of every id, changelog or snapshot: table, partition and bucket.
fn bucket_bits(table: TableId, partition: Option<PartitionId>, bucket: BucketId) -> u128 {
    let partition = partition.map_or(0, |p| (p as u64).wrapping_add(1));
    fold(table as u64, 22) << 104 | fold(partition, 32) << 72 | fold(bucket as u32 as u64, 16) << 56
}

type HeaderMap = BTreeMap<HeaderKey, HeaderValue>;

/// The keys of the headers whose values change per message, and what a bucket's templates
/// add to its common headers (shared by every bucket).
#[derive(Debug)]
struct StampKeys {
    offset: HeaderKey,
    timestamp: HeaderKey,
    row_count: HeaderKey,
    /// `None` unless `fluss_schema_id` is selected: the other headers are placeholders in
    /// every template, this one is skipped per message when not wanted.
    schema_id: Option<HeaderKey>,
    selected: HeaderSet,
    change_type: HeaderKey,
    change_types: [HeaderValue; 5],
}

/// What every message of a source shares: the table id, the selected headers and the values
/// that never change. [`Stamper::bucket`] derives the [`BucketStamp`] each encoder uses.
#[derive(Debug)]
pub struct Stamper {
    table_id: TableId,
    keys: Arc<StampKeys>,
    table: (HeaderKey, HeaderValue),
    bucket_key: HeaderKey,
    partition_key: HeaderKey,
    /// `fluss_primary_key` and its value, for a primary-key table.
    primary_key: Option<(HeaderKey, HeaderValue)>,
}

fn key(header: Header) -> Result<HeaderKey> {
    let name = header.name();
    HeaderKey::try_from(name).map_err(|cause| Error::Header {
        name,
        cause: cause.to_string(),
    })
}

/// A string header value; Iggy allows 1..=255 bytes, so a longer name is cut at a character
/// boundary (Fluss table and partition names are far shorter).
fn text(header: Header, value: &str) -> Result<HeaderValue> {
    let mut end = value.len().min(255);
    while !value.is_char_boundary(end) {
        end -= 1;
    }
    HeaderValue::try_from(&value[..end]).map_err(|cause| Error::Header {
        name: header.name(),
        cause: cause.to_string(),
    })
}

fn change_index(change: ChangeType) -> usize {
    match change {
        ChangeType::AppendOnly => 0,
        ChangeType::Insert => 1,
        ChangeType::UpdateBefore => 2,
        ChangeType::UpdateAfter => 3,
        ChangeType::Delete => 4,
    }
}

impl Stamper {
    /// Stamps for messages of table `table_id` (`qualified_table` = `db.table`) carrying the
    /// `selected` headers.
    pub fn new(table_id: TableId, qualified_table: &str, selected: HeaderSet) -> Result<Self> {
        let change = |c: ChangeType| text(Header::ChangeType, c.short_string());
        let change_types = [
            change(ChangeType::AppendOnly)?,
            change(ChangeType::Insert)?,
            change(ChangeType::UpdateBefore)?,
            change(ChangeType::UpdateAfter)?,
            change(ChangeType::Delete)?,
        ];
        Ok(Self {
            table_id,
            keys: Arc::new(StampKeys {
                offset: key(Header::Offset)?,
                timestamp: key(Header::Timestamp)?,
                row_count: key(Header::RowCount)?,
                schema_id: if selected.contains(Header::SchemaId) {
                    Some(key(Header::SchemaId)?)
                } else {
                    None
                },
                selected,
                change_type: key(Header::ChangeType)?,
                change_types,
            }),
            table: (key(Header::Table)?, text(Header::Table, qualified_table)?),
            bucket_key: key(Header::Bucket)?,
            partition_key: key(Header::Partition)?,
            primary_key: None,
        })
    }

    /// Messages of a primary-key table also name its key `columns` (`fluss_primary_key`).
    pub fn with_primary_key(mut self, columns: &[String]) -> Result<Self> {
        self.primary_key = Some((
            key(Header::PrimaryKey)?,
            text(Header::PrimaryKey, &columns.join(","))?,
        ));
        Ok(self)
    }

    /// The stamp of one bucket, built once per bucket: a complete header map per message
    /// kind whose offset, timestamp (and row count) are placeholders. Cloning a map and
    /// setting those is cheaper than inserting every header into a new map per message. The
    /// headers every message of the bucket has are built here, each kind's map on its first
    /// message: a table of thousands of buckets, most of them idle and each with one or two
    /// kinds of messages, holds only the maps it uses.
    pub fn bucket(&self, key: BucketKey, partition_name: Option<&str>) -> Result<BucketStamp> {
        let selected = self.keys.selected;
        let mut common = HeaderMap::new();
        let mut put = |header: Header, k: &HeaderKey, v: HeaderValue| {
            if selected.contains(header) {
                common.insert(k.clone(), v);
            }
        };
        put(Header::Table, &self.table.0, self.table.1.clone());
        put(
            Header::Bucket,
            &self.bucket_key,
            HeaderValue::from(key.bucket),
        );
        put(Header::Offset, &self.keys.offset, HeaderValue::from(0_i64));
        put(
            Header::Timestamp,
            &self.keys.timestamp,
            HeaderValue::from(0_i64),
        );
        if let Some(schema_key) = &self.keys.schema_id {
            put(Header::SchemaId, schema_key, HeaderValue::from(0_i32));
        }
        if let Some((k, v)) = &self.primary_key {
            put(Header::PrimaryKey, k, v.clone());
        }
        if let Some(partition) = partition_name {
            put(
                Header::Partition,
                &self.partition_key,
                text(Header::Partition, partition)?,
            );
        }
        Ok(BucketStamp {
            table_id: self.table_id,
            snapshot: None,
            key,
            partition_name: partition_name.map(str::to_owned),
            keys: self.keys.clone(),
            common,
            changes: Default::default(),
            ipc: OnceLock::new(),
        })
    }
}

/// Everything that identifies the messages of one bucket: it gives each message its id and
/// headers, for every encoder.
#[derive(Debug, Clone)]
pub struct BucketStamp {
    table_id: TableId,
    /// For a snapshot's rows: the offset the snapshot was taken at and how its rows are
    /// numbered (see [`Self::snapshot`]).
    snapshot: Option<(Offset, SnapshotIndex)>,
    key: BucketKey,
    partition_name: Option<String>,
    keys: Arc<StampKeys>,
    /// The headers of a row without a change type; the others are built from it.
    common: HeaderMap,
    /// A row's headers per change type (see `change_index`), built on first use.
    changes: [OnceLock<HeaderMap>; 5],
    /// An Arrow IPC message's headers, built on first use.
    ipc: OnceLock<HeaderMap>,
}

impl BucketStamp {
    /// Which bucket (and partition).
    pub fn key(&self) -> BucketKey {
        self.key
    }

    /// The partition name, for partitioned tables.
    pub fn partition_name(&self) -> Option<&str> {
        self.partition_name.as_deref()
    }

    /// The stamp of the rows of a snapshot taken at `continue_at`, numbered as `numbering`
    /// says. Encoders hand it records whose offset is their index in the snapshot: the
    /// message id is [`snapshot_id`], and the `fluss_offset` header (and every offset an
    /// encoder writes) is `continue_at`.
    pub fn snapshot(&self, continue_at: Offset, numbering: SnapshotIndex) -> Self {
        Self {
            snapshot: Some((continue_at, numbering)),
            ..self.clone()
        }
    }

    /// The offset a snapshot was taken at, for a snapshot's stamp.
    pub fn snapshot_offset(&self) -> Option<Offset> {
        self.snapshot.map(|(at, _)| at)
    }

    /// The log offset to show for a record stamped here: its own, or for a snapshot row the
    /// offset the snapshot was taken at.
    pub fn offset_of(&self, offset: Offset) -> Offset {
        self.snapshot_offset().unwrap_or(offset)
    }

    /// The message of one row or change whose (first) record is at `offset`, its columns
    /// those of schema `schema_id`.
    pub fn row(
        &self,
        offset: Offset,
        timestamp: i64,
        change: Option<ChangeType>,
        schema_id: i32,
        payload: Vec<u8>,
    ) -> ProducedMessage {
        let template = match change {
            None => &self.common,
            Some(change) => {
                let i = change_index(change);
                self.changes[i].get_or_init(|| {
                    self.with(
                        Header::ChangeType,
                        &self.keys.change_type,
                        &self.keys.change_types[i],
                    )
                })
            }
        };
        let headers = self.stamped(
            template,
            Stamped {
                offset: self.offset_of(offset),
                timestamp,
                schema_id,
                rows: None,
            },
        );
        self.message(offset, headers, payload)
    }

    /// The Arrow IPC message holding `rows` rows of schema `schema_id` starting at
    /// `first_offset`.
    pub fn ipc(
        &self,
        first_offset: Offset,
        timestamp: i64,
        rows: usize,
        schema_id: i32,
        payload: Vec<u8>,
    ) -> ProducedMessage {
        let template = self.ipc.get_or_init(|| {
            self.with(
                Header::RowCount,
                &self.keys.row_count,
                &HeaderValue::from(0_i64),
            )
        });
        let headers = self.stamped(
            template,
            Stamped {
                offset: self.offset_of(first_offset),
                timestamp,
                schema_id,
                rows: Some(rows),
            },
        );
        self.message(first_offset, headers, payload)
    }

    /// The common headers and `header` (`key` = `value`) if it is selected.
    fn with(&self, header: Header, key: &HeaderKey, value: &HeaderValue) -> HeaderMap {
        let mut map = self.common.clone();
        if self.keys.selected.contains(header) {
            map.insert(key.clone(), value.clone());
        }
        map
    }

    fn message(
        &self,
        offset: Offset,
        headers: Option<HeaderMap>,
        payload: Vec<u8>,
    ) -> ProducedMessage {
        let (table, partition, bucket) = (self.table_id, self.key.partition, self.key.bucket);
        let id = match self.snapshot {
            Some(snapshot) => snapshot_id(table, partition, bucket, snapshot, offset),
            None => message_id(table, partition, bucket, offset),
        };
        ProducedMessage {
            id: Some(id),
            checksum: None,
            timestamp: None,
            origin_timestamp: None,
            headers,
            payload,
        }
    }

    /// The template with its placeholders set; `None` when no header is selected, which
    /// the runtime decodes for free.
    fn stamped(&self, template: &HeaderMap, values: Stamped) -> Option<HeaderMap> {
        if template.is_empty() {
            return None;
        }
        let Stamped {
            offset,
            timestamp,
            schema_id,
            rows,
        } = values;
        let mut headers = template.clone();
        set(&mut headers, &self.keys.offset, HeaderValue::from(offset));
        set(
            &mut headers,
            &self.keys.timestamp,
            HeaderValue::from(timestamp),
        );
        if let Some(schema_key) = &self.keys.schema_id {
            set(&mut headers, schema_key, HeaderValue::from(schema_id));
        }
        if let Some(rows) = rows {
            set(
                &mut headers,
                &self.keys.row_count,
                HeaderValue::from(rows as i64),
            );
        }
        Some(headers)
    }
}

/// The per-message values of the headers.
struct Stamped {
    offset: Offset,
    timestamp: i64,
    schema_id: i32,
    rows: Option<usize>,
}

/// Replaces the placeholder of a prebuilt header (a header that is not selected has none).
fn set(headers: &mut HeaderMap, key: &HeaderKey, value: HeaderValue) {
    if let Some(slot) = headers.get_mut(key) {
        *slot = value;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    // The expected ids are written out as the module docs' layout gives them, field by field
    // in hex: `01` and the table (bits 127-104), the partition + 1 (103-72), the bucket
    // (71-56), the offset (55-0); for snapshot rows `10` or `11`, then the snapshot's offset
    // (55-32) and the row's index (31-0).

    #[test]
    fn ids_are_deterministic_and_never_zero() {
        assert_eq!(
            message_id(1, None, 0, 0),
            0x4000_0100_0000_0000_0000_0000_0000_0000
        );
        assert_eq!(
            message_id(0, None, 0, 0),
            0x4000_0000_0000_0000_0000_0000_0000_0000,
            "layout version 01 even for table 0, bucket 0, offset 0"
        );
    }

    #[test]
    fn ids_use_disjoint_fields() {
        let id = message_id(5, Some(7), 3, 99);
        assert_eq!(id, 0x4000_0500_0000_0800_0300_0000_0000_0063);
        assert_eq!((id >> 104) & ((1 << 22) - 1), 5);
        assert_eq!((id >> 72) & ((1 << 32) - 1), 8);
        assert_eq!((id >> 56) & 0xffff, 3);
        assert_eq!(id & ((1 << 56) - 1), 99);
    }

    #[test]
    fn ids_are_unique_across_coordinates() {
        let mut seen = HashSet::new();
        for table in [0, 1, (1 << 22) - 1] {
            for partition in [None, Some(0), Some(1), Some(u32::MAX as i64 - 2)] {
                for bucket in [0, 1, 2, 65_535] {
                    for offset in [0, 1, 1_000_000, (1 << 56) - 1] {
                        assert!(
                            seen.insert(message_id(table, partition, bucket, offset)),
                            "duplicate id for {table} {partition:?} {bucket} {offset}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn snapshot_ids_never_meet_changelog_ids_and_repeat_per_snapshot_offset() {
        let mut changelog = HashSet::new();
        let mut snapshot = HashSet::new();
        for bucket in [0, 1, 7] {
            for n in [0, 1, 2, 1_000, (1 << 24) - 1, 1 << 24, (1 << 32) - 1] {
                changelog.insert(message_id(5, Some(3), bucket, n));
                for continue_at in [0, 1, 500, (1 << 24) - 1] {
                    for numbering in [SnapshotIndex::Every, SnapshotIndex::Kept] {
                        assert!(
                            snapshot.insert(snapshot_id(
                                5,
                                Some(3),
                                bucket,
                                (continue_at, numbering),
                                n
                            )),
                            "duplicate snapshot id {bucket} {continue_at} {numbering:?} {n}"
                        );
                    }
                }
            }
        }
        assert!(changelog.is_disjoint(&snapshot));
        let every = (1234, SnapshotIndex::Every);
        let id = snapshot_id(5, Some(3), 2, every, 99);
        assert_eq!(id, 0x8000_0500_0000_0400_0200_04d2_0000_0063);
        assert_eq!(id >> 126, 2, "layout version 10");
        let kept = snapshot_id(5, Some(3), 2, (1234, SnapshotIndex::Kept), 99);
        assert_eq!(kept, 0xc000_0500_0000_0400_0200_04d2_0000_0063);
        assert_eq!(kept >> 126, 3, "layout version 11");
        assert_eq!(
            kept & !(3 << 126),
            id & !(3 << 126),
            "the same fields below"
        );
        assert_eq!((id >> 104) & ((1 << 22) - 1), 5);
        assert_eq!((id >> 72) & ((1 << 32) - 1), 4);
        assert_eq!((id >> 56) & 0xffff, 2);
        assert_eq!((id >> 32) & ((1 << 24) - 1), 1234);
        assert_eq!(id & ((1 << 32) - 1), 99);
    }

    #[test]
    fn snapshot_stamps_show_the_snapshot_offset() {
        let bucket = stamp(HeaderSet::ALL, None).snapshot(500, SnapshotIndex::Every);
        assert_eq!(bucket.snapshot_offset(), Some(500));
        let m = bucket.row(3, 77, Some(ChangeType::Insert), 1, Vec::new());
        assert_eq!(m.id, Some(0x8000_0300_0000_0000_0200_01f4_0000_0003));
        assert_eq!(header(&m, Header::Offset).unwrap().int64(), 500);
        assert_eq!(header(&m, Header::Timestamp).unwrap().int64(), 77);
        let ipc = bucket.ipc(0, 77, 10, 1, Vec::new());
        assert_eq!(ipc.id, Some(0x8000_0300_0000_0000_0200_01f4_0000_0000));
        assert_eq!(header(&ipc, Header::Offset).unwrap().int64(), 500);
    }

    #[test]
    fn oversized_fields_fold_deterministically() {
        // Table 2^30: bit 30 folds onto bit 8 of the 22-bit field; offset 2^60: bit 60 onto
        // bit 4 of the 56-bit field.
        let a = message_id(1 << 30, None, 0, 1 << 60);
        assert_eq!(a, 0x4001_0000_0000_0000_0000_0000_0000_0010);
    }

    /// Header values read through the conversions every SDK's header type has.
    trait Numbers {
        fn int64(&self) -> i64;
        fn int32(&self) -> i32;
    }

    impl Numbers for HeaderValue {
        fn int64(&self) -> i64 {
            i64::try_from(self).unwrap()
        }

        fn int32(&self) -> i32 {
            i32::try_from(self).unwrap()
        }
    }

    fn header(m: &ProducedMessage, header: Header) -> Option<&HeaderValue> {
        m.headers
            .as_ref()
            .and_then(|h| h.get(&HeaderKey::try_from(header.name()).unwrap()))
    }

    fn stamp(selected: HeaderSet, partition: Option<&str>) -> BucketStamp {
        let stamper = Stamper::new(3, "fluss.orders", selected).unwrap();
        let key = BucketKey {
            partition: partition.map(|_| 7),
            bucket: 2,
        };
        stamper.bucket(key, partition).unwrap()
    }

    #[test]
    fn row_messages_carry_the_contract_fields_and_id() {
        let m = stamp(HeaderSet::ALL, Some("2026")).row(
            41,
            1_700_000_000_000,
            Some(ChangeType::Insert),
            1,
            b"{}".to_vec(),
        );
        assert_eq!(m.id, Some(0x4000_0300_0000_0800_0200_0000_0000_0029));
        assert_eq!(m.payload, b"{}");
        let get = |h: Header| header(&m, h).unwrap().clone();
        assert_eq!(get(Header::Table).as_str().unwrap(), "fluss.orders");
        assert_eq!(get(Header::Bucket).int32(), 2);
        assert_eq!(get(Header::Offset).int64(), 41);
        assert_eq!(get(Header::Timestamp).int64(), 1_700_000_000_000);
        assert_eq!(get(Header::ChangeType).as_str().unwrap(), "+I");
        assert_eq!(get(Header::Partition).as_str().unwrap(), "2026");
        assert_eq!(m.headers.as_ref().unwrap().len(), 6);
    }

    #[test]
    fn prebuilt_headers_are_stamped_per_message_without_leaking_between_them() {
        let bucket = stamp(HeaderSet::ALL, None);
        let first = bucket.row(7, 100, None, 1, Vec::new());
        let second = bucket.row(8, 200, Some(ChangeType::Delete), 1, Vec::new());
        let value = |m: &ProducedMessage, h: Header| header(m, h).unwrap().int64();
        assert_eq!(value(&first, Header::Offset), 7);
        assert_eq!(value(&first, Header::Timestamp), 100);
        assert!(header(&first, Header::ChangeType).is_none());
        assert_eq!(first.headers.as_ref().unwrap().len(), 4);
        assert_eq!(value(&second, Header::Offset), 8);
        assert_eq!(value(&second, Header::Timestamp), 200);
        assert_eq!(
            header(&second, Header::ChangeType)
                .unwrap()
                .as_str()
                .unwrap(),
            "-D"
        );
        let ipc = bucket.ipc(9, 300, 12, 1, Vec::new());
        assert_eq!(value(&ipc, Header::Offset), 9);
        assert_eq!(value(&ipc, Header::RowCount), 12);
        assert_eq!(ipc.headers.as_ref().unwrap().len(), 5);
        assert_eq!(ipc.id, Some(0x4000_0300_0000_0000_0200_0000_0000_0009));
    }

    #[test]
    fn ipc_headers_have_row_count_and_no_change_type() {
        let m = stamp(HeaderSet::ALL, None).ipc(10, 5, 300, 1, Vec::new());
        assert_eq!(header(&m, Header::RowCount).unwrap().int64(), 300);
        assert!(header(&m, Header::ChangeType).is_none());
        assert!(header(&m, Header::Partition).is_none());
    }

    #[test]
    fn a_bucket_holds_only_the_header_maps_of_the_messages_it_made() {
        let bucket = stamp(HeaderSet::ALL, Some("p"));
        let built = |b: &BucketStamp| {
            let changes = b.changes.iter().filter(|c| c.get().is_some()).count();
            (changes, b.ipc.get().is_some())
        };
        assert_eq!(
            built(&bucket),
            (0, false),
            "an idle bucket holds its common headers only"
        );
        let first = bucket.row(5, 6, Some(ChangeType::Insert), 1, Vec::new());
        let again = bucket.row(7, 8, Some(ChangeType::Insert), 1, Vec::new());
        bucket.row(9, 9, None, 1, Vec::new());
        assert_eq!(built(&bucket), (1, false));
        assert_eq!(
            header(&first, Header::ChangeType),
            header(&again, Header::ChangeType)
        );
        assert_eq!(header(&again, Header::Offset).unwrap().int64(), 7);
        bucket.ipc(10, 5, 300, 1, Vec::new());
        assert_eq!(built(&bucket), (1, true));
    }

    #[test]
    fn only_selected_headers_are_attached() {
        let bucket = stamp(
            HeaderSet::of(&[Header::Offset, Header::RowCount]),
            Some("p"),
        );
        let row = bucket.row(5, 6, Some(ChangeType::Insert), 1, Vec::new());
        assert_eq!(row.headers.as_ref().unwrap().len(), 1);
        assert_eq!(header(&row, Header::Offset).unwrap().int64(), 5);
        let ipc = bucket.ipc(5, 6, 2, 1, Vec::new());
        assert_eq!(ipc.headers.as_ref().unwrap().len(), 2);
        assert_eq!(header(&ipc, Header::RowCount).unwrap().int64(), 2);
    }

    #[test]
    fn primary_key_tables_name_their_key_on_every_message() {
        let stamper = Stamper::new(3, "fluss.orders", HeaderSet::ALL)
            .unwrap()
            .with_primary_key(&["region".to_owned(), "id".to_owned()])
            .unwrap();
        let bucket = stamper.bucket(BucketKey::bucket(2), None).unwrap();
        let snapshot = bucket.snapshot(9, SnapshotIndex::Kept);
        for m in [
            bucket.row(5, 6, Some(ChangeType::Insert), 1, Vec::new()),
            bucket.ipc(5, 6, 2, 1, Vec::new()),
            snapshot.row(0, 6, Some(ChangeType::Insert), 1, Vec::new()),
        ] {
            let key = header(&m, Header::PrimaryKey).unwrap();
            assert_eq!(key.as_str().unwrap(), "region,id");
        }
        let log = stamp(HeaderSet::ALL, None).row(5, 6, None, 1, Vec::new());
        assert!(
            header(&log, Header::PrimaryKey).is_none(),
            "log tables have none"
        );
        let unnamed = Stamper::new(3, "fluss.orders", HeaderSet::of(&[Header::Offset]))
            .unwrap()
            .with_primary_key(&["id".to_owned()])
            .unwrap()
            .bucket(BucketKey::bucket(2), None)
            .unwrap()
            .row(5, 6, None, 1, Vec::new());
        assert!(
            header(&unnamed, Header::PrimaryKey).is_none(),
            "only when selected"
        );
    }

    #[test]
    fn the_schema_id_header_is_attached_only_when_named() {
        let all = stamp(HeaderSet::ALL, None).row(5, 6, None, 3, Vec::new());
        assert!(header(&all, Header::SchemaId).is_none());
        let named = stamp(HeaderSet::of(&[Header::SchemaId, Header::Offset]), None);
        let row = named.row(5, 6, None, 3, Vec::new());
        assert_eq!(header(&row, Header::SchemaId).unwrap().int32(), 3);
        let ipc = named.ipc(5, 6, 2, 4, Vec::new());
        assert_eq!(header(&ipc, Header::SchemaId).unwrap().int32(), 4);
        assert_eq!(ipc.headers.as_ref().unwrap().len(), 2);
    }

    #[test]
    fn no_headers_means_none_but_ids_stay() {
        let bucket = stamp(HeaderSet::NONE, Some("p"));
        let row = bucket.row(5, 6, Some(ChangeType::Insert), 1, Vec::new());
        assert_eq!(row.headers, None);
        assert_eq!(row.id, Some(0x4000_0300_0000_0800_0200_0000_0000_0005));
        assert_eq!(bucket.ipc(5, 6, 2, 1, Vec::new()).headers, None);
        let only_rows = stamp(HeaderSet::of(&[Header::RowCount]), None);
        assert_eq!(
            only_rows.row(1, 1, None, 1, Vec::new()).headers,
            None,
            "a JSON row has no row-count header, so nothing is left"
        );
    }
}
