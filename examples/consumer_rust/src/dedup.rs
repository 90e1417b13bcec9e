//! The connector's message id, and the last row applied per Fluss bucket.
//!
//! Delivery is at least once: after a crash the batch in flight comes again, with the same ids.
//! The rows of one bucket arrive in offset order, so one position per bucket tells a repeat
//! from a new row.

use std::collections::HashMap;

/// One Fluss bucket: table id, partition id + 1 (0 without partitions), bucket.
pub type BucketId = (u32, u32, u16);

/// A message id, split into its fields (README "Message formats").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageId {
    pub bucket: BucketId,
    pub row: Row,
}

/// Where the message's first row is in its bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Row {
    /// A log row or change event: its log offset (bits 55-0).
    Log { offset: u64 },
    /// A snapshot row: the snapshot's offset mod 2^24 (bits 55-32), the row's index (31-0).
    Snapshot { at: u32, index: u64 },
}

impl MessageId {
    /// Splits an id of the connector's layout; any other id is an error naming it.
    pub fn parse(id: u128) -> Result<MessageId, String> {
        let bucket = (
            ((id >> 104) & ((1 << 22) - 1)) as u32,
            ((id >> 72) & u128::from(u32::MAX)) as u32,
            ((id >> 56) & 0xFFFF) as u16,
        );
        let row = match id >> 126 {
            0b01 => Row::Log {
                offset: (id & ((1 << 56) - 1)) as u64,
            },
            0b10 => Row::Snapshot {
                at: ((id >> 32) & ((1 << 24) - 1)) as u32,
                index: (id & u128::from(u32::MAX)) as u64,
            },
            layout => {
                return Err(format!(
                    "message id {id:#x} has layout {layout:02b}, not a Fluss source id"
                ))
            }
        };
        Ok(MessageId { bucket, row })
    }
}

/// The last row applied in one bucket.
#[derive(Debug, Clone, Copy)]
enum Progress {
    /// In the snapshot taken at `at`: rows up to `last` (an index) applied.
    Snapshot { at: u32, last: Option<u64> },
    /// In the log: rows up to `last` (an offset) applied.
    Log { last: Option<u64> },
}

/// What to do with a message of `rows` consecutive rows.
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
    /// Judges a message whose `rows` rows are consecutive in its bucket, starting at `id`, and
    /// records them as applied.
    pub fn admit(&mut self, id: MessageId, rows: usize) -> Verdict {
        let progress = self
            .buckets
            .entry(id.bucket)
            .or_insert(Progress::Log { last: None });
        let mut new_snapshot = false;
        let (first, last) = match (id.row, &mut *progress) {
            (Row::Snapshot { .. }, Progress::Log { last: Some(_) }) => {
                // The bucket's log already started; a snapshot cannot come after it.
                self.repeats += rows as u64;
                return Verdict {
                    seen: rows,
                    new_snapshot,
                };
            }
            (Row::Snapshot { at, index }, Progress::Snapshot { at: current, last })
                if at == *current =>
            {
                (index, last)
            }
            (Row::Snapshot { at, index }, progress) => {
                new_snapshot = matches!(progress, Progress::Snapshot { .. });
                *progress = Progress::Snapshot { at, last: None };
                let Progress::Snapshot { last, .. } = progress else {
                    unreachable!()
                };
                (index, last)
            }
            (Row::Log { offset }, Progress::Log { last }) => (offset, last),
            (Row::Log { offset }, progress) => {
                // The first log row after the snapshot: positions start over.
                *progress = Progress::Log { last: None };
                let Progress::Log { last } = progress else {
                    unreachable!()
                };
                (offset, last)
            }
        };
        let seen = match *last {
            Some(applied) if applied >= first => ((applied - first + 1) as usize).min(rows),
            _ => 0,
        };
        let end = first + rows as u64 - 1;
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

    #[test]
    fn repeats_are_dropped_and_partial_overlaps_sliced() {
        let mut d = Deduplicator::default();
        assert_eq!(d.admit(log(1, 0), 100).seen, 0);
        assert_eq!(d.admit(log(1, 100), 50).seen, 0);
        assert_eq!(d.admit(log(1, 80), 100).seen, 70);
        assert_eq!(d.admit(log(2, 0), 10).seen, 0, "buckets are independent");
        assert_eq!(d.admit(log(1, 0), 1).seen, 1);
        assert_eq!(d.repeats, 71);
    }

    #[test]
    fn a_snapshot_taken_again_starts_over_and_the_log_follows_it() {
        let mut d = Deduplicator::default();
        assert_eq!(d.admit(snapshot(1, 30, 0), 10).seen, 0);
        assert_eq!(d.admit(snapshot(1, 30, 5), 10).seen, 5);
        let again = d.admit(snapshot(1, 40, 0), 3);
        assert_eq!((again.seen, again.new_snapshot), (0, true));
        assert_eq!(d.admit(log(1, 40), 1).seen, 0);
        assert_eq!(d.admit(log(1, 40), 1).seen, 1);
        assert_eq!(d.admit(snapshot(1, 40, 0), 1).seen, 1);
    }

    #[test]
    fn other_ids_are_refused() {
        assert!(MessageId::parse(12345).is_err());
    }
}
