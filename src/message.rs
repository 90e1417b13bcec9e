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

use std::collections::BTreeMap;

use fluss::record::ChangeType;
use fluss::{BucketId, PartitionId, TableId};
use iggy_connector_sdk::{HeaderKey, HeaderValue};
use snafu::ResultExt;

use crate::error::{HeaderSnafu, Result};

/// Header names, as documented in the README.
pub mod names {
    /// `db.table` (string).
    pub const TABLE: &str = "fluss_table";
    /// Bucket number (int32).
    pub const BUCKET: &str = "fluss_bucket";
    /// Log offset of the row, or of the first row of an Arrow batch (int64).
    pub const OFFSET: &str = "fluss_offset";
    /// Commit timestamp of the row's record batch, epoch ms (int64).
    pub const TIMESTAMP: &str = "fluss_timestamp";
    /// `+A`, `+I`, `-U`, `+U` or `-D` (string; not on Arrow IPC messages).
    pub const CHANGE_TYPE: &str = "fluss_change_type";
    /// Partition name (string; partitioned tables only).
    pub const PARTITION: &str = "fluss_partition";
    /// Rows in an Arrow IPC message (int64).
    pub const ROW_COUNT: &str = "fluss_row_count";
}

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
    offset: i64,
) -> u128 {
    let partition = partition.map_or(0, |p| (p as u64).wrapping_add(1));
    (1u128 << 126)
        | fold(table as u64, 22) << 104
        | fold(partition, 32) << 72
        | fold(bucket as u32 as u64, 16) << 56
        | fold(offset as u64, 56)
}

/// Header keys and the values that stay the same for a whole source.
#[derive(Debug, Clone)]
pub struct Headers {
    table_key: HeaderKey,
    bucket_key: HeaderKey,
    offset_key: HeaderKey,
    timestamp_key: HeaderKey,
    change_type_key: HeaderKey,
    partition_key: HeaderKey,
    row_count_key: HeaderKey,
    table: HeaderValue,
    change_types: [HeaderValue; 5],
}

/// The headers of one bucket, prebuilt: a complete map per message kind whose offset,
/// timestamp (and row count) are placeholders. Cloning a map and setting those is cheaper than
/// inserting every header into a new map per message.
#[derive(Debug, Clone)]
pub struct BucketHeaders {
    /// Per change type (see `change_index`), then one without a change type (`NO_CHANGE`).
    rows: [BTreeMap<HeaderKey, HeaderValue>; NO_CHANGE + 1],
    ipc: BTreeMap<HeaderKey, HeaderValue>,
}

fn key(name: &'static str) -> Result<HeaderKey> {
    HeaderKey::from_static_str(name).context(HeaderSnafu { name })
}

/// A string header value; Iggy allows 1..=255 bytes, so a longer name is cut at a character
/// boundary (Fluss table and partition names are far shorter).
fn text(name: &'static str, value: &str) -> Result<HeaderValue> {
    let mut end = value.len().min(255);
    while !value.is_char_boundary(end) {
        end -= 1;
    }
    HeaderValue::from_str(&value[..end]).context(HeaderSnafu { name })
}

/// Index of the row template without a change type, after the five change types.
const NO_CHANGE: usize = 5;

fn change_index(change: ChangeType) -> usize {
    match change {
        ChangeType::AppendOnly => 0,
        ChangeType::Insert => 1,
        ChangeType::UpdateBefore => 2,
        ChangeType::UpdateAfter => 3,
        ChangeType::Delete => 4,
    }
}

impl Headers {
    /// Headers for rows of `qualified_table` (`db.table`).
    pub fn new(qualified_table: &str) -> Result<Self> {
        let change = |c: ChangeType| text(names::CHANGE_TYPE, c.short_string());
        Ok(Self {
            table_key: key(names::TABLE)?,
            bucket_key: key(names::BUCKET)?,
            offset_key: key(names::OFFSET)?,
            timestamp_key: key(names::TIMESTAMP)?,
            change_type_key: key(names::CHANGE_TYPE)?,
            partition_key: key(names::PARTITION)?,
            row_count_key: key(names::ROW_COUNT)?,
            table: text(names::TABLE, qualified_table)?,
            change_types: [
                change(ChangeType::AppendOnly)?,
                change(ChangeType::Insert)?,
                change(ChangeType::UpdateBefore)?,
                change(ChangeType::UpdateAfter)?,
                change(ChangeType::Delete)?,
            ],
        })
    }

    /// The per-bucket part, built once per bucket.
    pub fn bucket(&self, bucket: BucketId, partition_name: Option<&str>) -> Result<BucketHeaders> {
        let mut common = BTreeMap::new();
        common.insert(self.table_key.clone(), self.table.clone());
        common.insert(self.bucket_key.clone(), HeaderValue::from_i32(bucket));
        common.insert(self.offset_key.clone(), HeaderValue::from_i64(0));
        common.insert(self.timestamp_key.clone(), HeaderValue::from_i64(0));
        if let Some(partition) = partition_name {
            common.insert(
                self.partition_key.clone(),
                text(names::PARTITION, partition)?,
            );
        }
        let with = |key: &HeaderKey, value: &HeaderValue| {
            let mut map = common.clone();
            map.insert(key.clone(), value.clone());
            map
        };
        let change = |i: usize| with(&self.change_type_key, &self.change_types[i]);
        Ok(BucketHeaders {
            rows: [
                change(0),
                change(1),
                change(2),
                change(3),
                change(4),
                common.clone(),
            ],
            ipc: with(&self.row_count_key, &HeaderValue::from_i64(0)),
        })
    }

    /// Headers of one row or change.
    pub fn row(
        &self,
        bucket: &BucketHeaders,
        offset: i64,
        timestamp: i64,
        change: Option<ChangeType>,
    ) -> BTreeMap<HeaderKey, HeaderValue> {
        let template = &bucket.rows[change.map_or(NO_CHANGE, change_index)];
        self.stamped(template, offset, timestamp)
    }

    /// Headers of an Arrow IPC message holding `rows` rows starting at `first_offset`.
    pub fn ipc(
        &self,
        bucket: &BucketHeaders,
        first_offset: i64,
        timestamp: i64,
        rows: usize,
    ) -> BTreeMap<HeaderKey, HeaderValue> {
        let mut headers = self.stamped(&bucket.ipc, first_offset, timestamp);
        set(
            &mut headers,
            &self.row_count_key,
            HeaderValue::from_i64(rows as i64),
        );
        headers
    }

    fn stamped(
        &self,
        template: &BTreeMap<HeaderKey, HeaderValue>,
        offset: i64,
        timestamp: i64,
    ) -> BTreeMap<HeaderKey, HeaderValue> {
        let mut headers = template.clone();
        set(
            &mut headers,
            &self.offset_key,
            HeaderValue::from_i64(offset),
        );
        set(
            &mut headers,
            &self.timestamp_key,
            HeaderValue::from_i64(timestamp),
        );
        headers
    }
}

/// Replaces the placeholder of a prebuilt header.
fn set(headers: &mut BTreeMap<HeaderKey, HeaderValue>, key: &HeaderKey, value: HeaderValue) {
    if let Some(slot) = headers.get_mut(key) {
        *slot = value;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn ids_are_deterministic_and_never_zero() {
        assert_eq!(message_id(1, None, 0, 0), message_id(1, None, 0, 0));
        assert_ne!(message_id(0, None, 0, 0), 0);
        assert_eq!(message_id(0, None, 0, 0) >> 126, 1);
    }

    #[test]
    fn ids_use_disjoint_fields() {
        let id = message_id(5, Some(7), 3, 99);
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
    fn oversized_fields_fold_deterministically() {
        let a = message_id(1 << 30, None, 0, 1 << 60);
        assert_eq!(a, message_id(1 << 30, None, 0, 1 << 60));
        assert_eq!(a >> 126, 1);
    }

    #[test]
    fn row_headers_carry_the_contract_fields() {
        let headers = Headers::new("fluss.orders").unwrap();
        let bucket = headers.bucket(2, Some("2026")).unwrap();
        let h = headers.row(&bucket, 41, 1_700_000_000_000, Some(ChangeType::Insert));
        let get = |name: &str| h.get(&HeaderKey::new(name).unwrap()).unwrap();
        assert_eq!(get(names::TABLE).as_str().unwrap(), "fluss.orders");
        assert_eq!(get(names::BUCKET).as_i32().unwrap(), 2);
        assert_eq!(get(names::OFFSET).as_i64().unwrap(), 41);
        assert_eq!(get(names::TIMESTAMP).as_i64().unwrap(), 1_700_000_000_000);
        assert_eq!(get(names::CHANGE_TYPE).as_str().unwrap(), "+I");
        assert_eq!(get(names::PARTITION).as_str().unwrap(), "2026");
        assert_eq!(h.len(), 6);
    }

    #[test]
    fn prebuilt_headers_are_stamped_per_message_without_leaking_between_them() {
        let headers = Headers::new("fluss.orders").unwrap();
        let bucket = headers.bucket(1, None).unwrap();
        let first = headers.row(&bucket, 7, 100, None);
        let second = headers.row(&bucket, 8, 200, Some(ChangeType::Delete));
        let get = |h: &BTreeMap<HeaderKey, HeaderValue>, name: &str| {
            h.get(&HeaderKey::new(name).unwrap()).cloned()
        };
        assert_eq!(get(&first, names::OFFSET).unwrap().as_i64().unwrap(), 7);
        assert_eq!(
            get(&first, names::TIMESTAMP).unwrap().as_i64().unwrap(),
            100
        );
        assert!(get(&first, names::CHANGE_TYPE).is_none());
        assert_eq!(first.len(), 4);
        assert_eq!(get(&second, names::OFFSET).unwrap().as_i64().unwrap(), 8);
        assert_eq!(
            get(&second, names::TIMESTAMP).unwrap().as_i64().unwrap(),
            200
        );
        assert_eq!(
            get(&second, names::CHANGE_TYPE).unwrap().as_str().unwrap(),
            "-D"
        );
        let ipc = headers.ipc(&bucket, 9, 300, 12);
        assert_eq!(get(&ipc, names::OFFSET).unwrap().as_i64().unwrap(), 9);
        assert_eq!(get(&ipc, names::ROW_COUNT).unwrap().as_i64().unwrap(), 12);
        assert_eq!(ipc.len(), 5);
    }

    #[test]
    fn ipc_headers_have_row_count_and_no_change_type() {
        let headers = Headers::new("fluss.orders").unwrap();
        let bucket = headers.bucket(0, None).unwrap();
        let h = headers.ipc(&bucket, 10, 5, 300);
        assert_eq!(
            h.get(&HeaderKey::new(names::ROW_COUNT).unwrap())
                .unwrap()
                .as_i64()
                .unwrap(),
            300
        );
        assert!(!h.contains_key(&HeaderKey::new(names::CHANGE_TYPE).unwrap()));
        assert!(!h.contains_key(&HeaderKey::new(names::PARTITION).unwrap()));
    }
}
