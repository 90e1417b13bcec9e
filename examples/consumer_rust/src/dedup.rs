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

//! The connector's message id, where each row of a message sits in its bucket, and the last
//! row applied per Fluss bucket.
//!
//! Delivery is at least once: after a crash the batch in flight comes again, with the same ids,
//! possibly cut into messages differently. The rows of one bucket arrive in position order, and
//! every message says where each of its rows is, so one position per bucket tells a repeat
//! from a new row. Depends on nothing but `std`, so any consumer can take it as it is.

use std::collections::HashMap;

/// One Fluss bucket: table id, partition id + 1 (0 without partitions), bucket.
pub type BucketId = (u32, u32, u16);

/// A message id, split into its fields (docs/messages.md "Message ids").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageId {
    pub bucket: BucketId,
    pub row: Row,
}

/// Where the message's first row is in its bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Row {
    /// A log row or change event (layout `01`): its log offset (bits 55-0).
    Log { offset: u64 },
    /// A snapshot row: which snapshot (the offset it was taken at, mod 2^24, bits 55-32, and
    /// how its rows are numbered) and the row's index (bits 31-0).
    Snapshot { snapshot: Snapshot, index: u64 },
}

/// One snapshot of a bucket: rows numbered among all of its rows (layout `10`) or among those
/// a filter kept (layout `11`), taken at `at` (mod 2^24). Another value for the same bucket
/// means the snapshot was taken anew.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Snapshot {
    pub at: u32,
    pub filtered: bool,
}

impl MessageId {
    /// Splits an id of the connector's layout; any other id is an error naming it.
    pub fn parse(id: u128) -> Result<MessageId, String> {
        let bucket = (
            ((id >> 104) & ((1 << 22) - 1)) as u32,
            ((id >> 72) & u128::from(u32::MAX)) as u32,
            ((id >> 56) & 0xFFFF) as u16,
        );
        let snapshot = |filtered| Row::Snapshot {
            snapshot: Snapshot {
                at: ((id >> 32) & ((1 << 24) - 1)) as u32,
                filtered,
            },
            index: (id & u128::from(u32::MAX)) as u64,
        };
        let row = match id >> 126 {
            0b00 => {
                return Err(format!(
                    "message id {id:#x} has layout 00, not a Fluss source id"
                ));
            }
            0b01 => Row::Log {
                offset: (id & ((1 << 56) - 1)) as u64,
            },
            0b10 => snapshot(false),
            _ => snapshot(true),
        };
        Ok(MessageId { bucket, row })
    }

    /// The position of the message's first row: its offset, or its index in the snapshot.
    pub fn position(&self) -> u64 {
        match self.row {
            Row::Log { offset } => offset,
            Row::Snapshot { index, .. } => index,
        }
    }
}

/// Where each row of a message sits in its bucket, ascending.
#[derive(Debug, Clone, Copy)]
pub enum Positions<'a> {
    /// `n` rows at consecutive positions from the id's: JSON and Debezium messages (one row
    /// each), snapshot rows, and Arrow IPC messages without a `_log_offset` column.
    Consecutive(usize),
    /// The rows' own positions: the `_log_offset` column of an Arrow IPC message of log rows
    /// or changes (a primary-key table's, or a log table's read through a filter).
    Listed(&'a [i64]),
}

impl Positions<'_> {
    /// The positions of a message whose Arrow `_log_offset` column is `offsets`, if it has
    /// one: listed for log rows and changes, consecutive for snapshot rows (whose
    /// `_log_offset` is the snapshot's offset).
    pub fn of<'a>(id: &MessageId, rows: usize, offsets: Option<&'a [i64]>) -> Positions<'a> {
        match (id.row, offsets) {
            (Row::Log { .. }, Some(offsets)) => Positions::Listed(offsets),
            _ => Positions::Consecutive(rows),
        }
    }

    fn len(&self) -> usize {
        match self {
            Positions::Consecutive(rows) => *rows,
            Positions::Listed(offsets) => offsets.len(),
        }
    }

    /// How many leading rows sit at or before `applied`, and the last row's position.
    fn up_to(&self, first: u64, applied: Option<u64>) -> (usize, u64) {
        match self {
            Positions::Consecutive(rows) => {
                let seen = match applied {
                    Some(applied) if applied >= first => {
                        ((applied - first + 1) as usize).min(*rows)
                    }
                    _ => 0,
                };
                (seen, first + *rows as u64 - 1)
            }
            Positions::Listed(offsets) => {
                let seen = applied.map_or(0, |applied| {
                    offsets.partition_point(|offset| *offset as u64 <= applied)
                });
                (seen, offsets.last().map_or(first, |last| *last as u64))
            }
        }
    }
}

/// The last row applied in one bucket.
#[derive(Debug, Clone, Copy)]
enum Progress {
    /// In `snapshot`: rows up to `last` (an index) applied.
    Snapshot {
        snapshot: Snapshot,
        last: Option<u64>,
    },
    /// In the log: rows up to `last` (an offset) applied.
    Log { last: Option<u64> },
}

/// What to do with a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    /// Leading rows applied before: skip them.
    pub seen: usize,
    /// The bucket's snapshot started again at another offset: what the older one delivered is
    /// superseded (a consumer of per-key state forgets the bucket's keys first).
    pub new_snapshot: bool,
}

/// The last row applied per bucket, and counts of what it dropped.
#[derive(Debug, Default)]
pub struct Deduplicator {
    buckets: HashMap<BucketId, Progress>,
    /// Rows dropped as repeats.
    pub repeats: u64,
}

impl Deduplicator {
    /// Judges a message of one bucket starting at `id` whose rows sit at `positions`, and
    /// records them as applied.
    pub fn admit(&mut self, id: MessageId, positions: Positions) -> Verdict {
        let rows = positions.len();
        let progress = self
            .buckets
            .entry(id.bucket)
            .or_insert(Progress::Log { last: None });
        let mut new_snapshot = false;
        let last = match (id.row, &mut *progress) {
            (Row::Snapshot { .. }, Progress::Log { last: Some(_) }) => {
                // The bucket's log already started; a snapshot cannot come after it.
                self.repeats += rows as u64;
                return Verdict {
                    seen: rows,
                    new_snapshot,
                };
            }
            (
                Row::Snapshot { snapshot, .. },
                Progress::Snapshot {
                    snapshot: current,
                    last,
                },
            ) if snapshot == *current => last,
            (Row::Snapshot { snapshot, .. }, progress) => {
                new_snapshot = matches!(progress, Progress::Snapshot { .. });
                *progress = Progress::Snapshot {
                    snapshot,
                    last: None,
                };
                let Progress::Snapshot { last, .. } = progress else {
                    unreachable!()
                };
                last
            }
            (Row::Log { .. }, Progress::Log { last }) => last,
            (Row::Log { .. }, progress) => {
                // The first log row after the snapshot: positions start over.
                *progress = Progress::Log { last: None };
                let Progress::Log { last } = progress else {
                    unreachable!()
                };
                last
            }
        };
        if rows == 0 {
            return Verdict {
                seen: 0,
                new_snapshot,
            };
        }
        let (seen, end) = positions.up_to(id.position(), *last);
        *last = Some(last.map_or(end, |applied| applied.max(end)));
        self.repeats += seen as u64;
        Verdict { seen, new_snapshot }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(bucket: u128, offset: u128) -> MessageId {
        MessageId::parse(1 << 126 | 5 << 104 | bucket << 56 | offset).unwrap()
    }

    fn snapshot(bucket: u128, at: u128, index: u128) -> MessageId {
        MessageId::parse(2 << 126 | 5 << 104 | bucket << 56 | at << 32 | index).unwrap()
    }

    fn rows(n: usize) -> Positions<'static> {
        Positions::Consecutive(n)
    }

    #[test]
    fn repeats_are_dropped_and_partial_overlaps_sliced() {
        let mut d = Deduplicator::default();
        assert_eq!(d.admit(log(1, 0), rows(100)).seen, 0);
        assert_eq!(d.admit(log(1, 100), rows(50)).seen, 0);
        assert_eq!(d.admit(log(1, 80), rows(100)).seen, 70);
        assert_eq!(
            d.admit(log(2, 0), rows(10)).seen,
            0,
            "buckets are independent"
        );
        assert_eq!(d.admit(log(1, 0), rows(1)).seen, 1);
        assert_eq!(d.repeats, 71);
    }

    #[test]
    fn rows_with_gaps_are_judged_by_their_own_positions() {
        // {100, 150} and {200}, then a replay cut anew: {100, 150, 200, 250}.
        let mut d = Deduplicator::default();
        assert_eq!(d.admit(log(1, 100), Positions::Listed(&[100, 150])).seen, 0);
        assert_eq!(d.admit(log(1, 200), Positions::Listed(&[200])).seen, 0);
        let replay = [100, 150, 200, 250];
        assert_eq!(d.admit(log(1, 100), Positions::Listed(&replay)).seen, 3);
        assert_eq!(d.admit(log(1, 250), Positions::Listed(&[250])).seen, 1);
    }

    #[test]
    fn a_snapshot_taken_again_starts_over_and_the_log_follows_it() {
        let mut d = Deduplicator::default();
        assert_eq!(d.admit(snapshot(1, 30, 0), rows(10)).seen, 0);
        assert_eq!(d.admit(snapshot(1, 30, 5), rows(10)).seen, 5);
        let again = d.admit(snapshot(1, 40, 0), rows(3));
        assert_eq!((again.seen, again.new_snapshot), (0, true));
        assert_eq!(d.admit(log(1, 40), rows(1)).seen, 0);
        assert_eq!(d.admit(log(1, 40), rows(1)).seen, 1);
        assert_eq!(d.admit(snapshot(1, 40, 0), rows(1)).seen, 1);
    }

    #[test]
    fn a_snapshot_numbered_among_filtered_rows_is_another_snapshot() {
        let mut d = Deduplicator::default();
        assert_eq!(d.admit(snapshot(1, 30, 0), rows(10)).seen, 0);
        let filtered = MessageId::parse(3 << 126 | 5 << 104 | 1 << 56 | 30 << 32).unwrap();
        let verdict = d.admit(filtered, rows(4));
        assert_eq!((verdict.seen, verdict.new_snapshot), (0, true));
    }

    #[test]
    fn other_ids_are_refused() {
        assert!(MessageId::parse(12345).is_err());
    }
}
