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

//! Bounded reads (`stopping_offset`): where each bucket stops, taken once and kept.
//!
//! The stop point is the offset of every bucket at the moment the connector first opened with
//! `stopping_offset` set (`latest`: the high watermarks; `timestamp:…`: the first offset
//! committed at or after that time, or the high watermark when there is none yet). It is
//! persisted in the state, so a restart stops at the same place. A bucket is done once its
//! next offset reaches its stop offset; records at or past it are trimmed even when a fetch
//! brought them along. Buckets not in the stop point (partitions created after it was taken)
//! are never read.
//!
//! Offsets are contiguous within a Fluss bucket, so a bucket's next offset lands exactly on
//! its stop offset once the last record below it is delivered.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::position::{BucketKey, Offset, Offsets, Position, Positions};

/// `stopping_offset`: where a bounded read ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum StoppingOffset {
    /// The high watermarks seen when the connector first opened.
    Latest,
    /// The first offset committed at or after this epoch millisecond (rows before it are read).
    Timestamp(i64),
}

impl fmt::Display for StoppingOffset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Latest => f.write_str("\"latest\""),
            Self::Timestamp(ms) => write!(f, "\"timestamp:{ms}\""),
        }
    }
}

/// A stop point: what it was taken for and the stop offset of every bucket it covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stop {
    /// The `stopping_offset` it was taken for.
    pub at: StoppingOffset,
    /// The first offset not read, per bucket.
    pub offsets: Offsets,
}

/// What `open` does about the stop point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// `stopping_offset` is unset: read without end (a saved stop point is dropped).
    Unbounded,
    /// Take a new stop point now (no saved one).
    Take(StoppingOffset),
    /// Keep the saved stop point.
    Keep(Stop),
}

/// A saved stop point taken for another `stopping_offset` than the one configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// What the saved stop point was taken for.
    pub saved: StoppingOffset,
    /// What the configuration asks for now.
    pub configured: StoppingOffset,
}

/// Decides between the configured `stopping_offset` and a saved stop point. Removing the key
/// turns a bounded read into an unbounded one that goes on from the saved positions; changing
/// it is refused, because the saved positions may already be past the new stop point.
pub fn plan(configured: Option<StoppingOffset>, saved: Option<&Stop>) -> Result<Plan, Mismatch> {
    match (configured, saved) {
        (None, _) => Ok(Plan::Unbounded),
        (Some(at), None) => Ok(Plan::Take(at)),
        (Some(at), Some(stop)) if stop.at == at => Ok(Plan::Keep(stop.clone())),
        (Some(configured), Some(stop)) => Err(Mismatch {
            saved: stop.at,
            configured,
        }),
    }
}

/// The stop point in force, if any: which buckets are read and how far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bound {
    stop: Option<Stop>,
}

impl Bound {
    /// No end: every bucket is read for ever.
    pub fn unbounded() -> Self {
        Self::default()
    }

    /// Stops at `stop`.
    pub fn new(stop: Stop) -> Self {
        Self { stop: Some(stop) }
    }

    /// The stop point, `None` when unbounded.
    pub fn stop(&self) -> Option<&Stop> {
        self.stop.as_ref()
    }

    /// Whether `key` is read at all (a bounded read skips buckets outside its stop point).
    pub fn reads(&self, key: &BucketKey) -> bool {
        self.stop
            .as_ref()
            .is_none_or(|s| s.offsets.contains_key(key))
    }

    /// The first offset of `key` not read, `None` when unbounded.
    pub fn limit(&self, key: &BucketKey) -> Option<Offset> {
        self.stop.as_ref().and_then(|s| s.offsets.get(key).copied())
    }

    /// Whether `key` at `position` has nothing more to read (a bucket in its snapshot phase
    /// is done only when it is outside the stop point).
    pub fn is_done(&self, key: &BucketKey, position: Position) -> bool {
        self.stop.is_some()
            && self
                .limit(key)
                .is_none_or(|stop| position.offset().is_some_and(|next| next >= stop))
    }

    /// Drops the records (in offset order) at or past `key`'s stop offset.
    pub fn trim<T>(&self, key: &BucketKey, records: &mut Vec<T>, offset: impl Fn(&T) -> Offset) {
        if self.stop.is_none() {
            return;
        }
        let stop = self.limit(key).unwrap_or(Offset::MIN);
        let keep = records.partition_point(|r| offset(r) < stop);
        records.truncate(keep);
    }

    /// The positions of the buckets that still have rows to read.
    pub fn unfinished(&self, positions: &Positions) -> Positions {
        positions
            .iter()
            .filter(|(key, next)| !self.is_done(key, **next))
            .map(|(key, next)| (*key, *next))
            .collect()
    }

    /// Whether a bounded read is complete at `positions`: every bucket of the stop point has
    /// reached its stop offset (a bucket without a position was dropped with its partition).
    pub fn finished(&self, positions: &Positions) -> bool {
        self.stop.as_ref().is_some_and(|stop| {
            stop.offsets.iter().all(|(key, end)| {
                positions
                    .get(key)
                    .is_none_or(|next| next.offset().is_some_and(|next| next >= *end))
            })
        })
    }

    /// Forgets a bucket (its partition was dropped).
    pub fn forget(&mut self, key: &BucketKey) {
        if let Some(stop) = &mut self.stop {
            stop.offsets.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::position::at;

    const B0: BucketKey = BucketKey::bucket(0);
    const B1: BucketKey = BucketKey::bucket(1);
    const B2: BucketKey = BucketKey::bucket(2);

    fn bound(stops: &[(BucketKey, i64)]) -> Bound {
        Bound::new(Stop {
            at: StoppingOffset::Latest,
            offsets: stops.iter().copied().collect(),
        })
    }

    #[test]
    fn unbounded_reads_everything_and_never_finishes() {
        let b = Bound::unbounded();
        assert!(b.reads(&B0));
        assert!(!b.is_done(&B0, Position::At(i64::MAX)));
        let mut records = vec![1, 2, 3];
        b.trim(&B0, &mut records, |r| *r);
        assert_eq!(records, [1, 2, 3]);
        assert!(!b.finished(&Positions::new()));
        let positions: Positions = at([(B0, 5)].into_iter().collect());
        assert_eq!(b.unfinished(&positions), positions);
    }

    #[test]
    fn records_at_or_past_the_stop_are_trimmed() {
        let b = bound(&[(B0, 10)]);
        let mut records: Vec<i64> = (7..14).collect();
        b.trim(&B0, &mut records, |r| *r);
        assert_eq!(records, [7, 8, 9], "offset 10 is the first not read");
        let mut late = vec![10, 11];
        b.trim(&B0, &mut late, |r| *r);
        assert!(late.is_empty());
        let mut outside = vec![0, 1];
        b.trim(&B1, &mut outside, |r| *r);
        assert!(outside.is_empty(), "a bucket outside the stop point");
    }

    #[test]
    fn a_read_finishes_when_every_bucket_reaches_its_stop() {
        let b = bound(&[(B0, 10), (B1, 0), (B2, 4)]);
        assert!(!b.reads(&BucketKey::bucket(3)), "created after the stop");
        let mut positions: Positions = at([(B0, 3), (B1, 0), (B2, 4)].into_iter().collect());
        assert!(
            b.is_done(&B1, Position::At(0)),
            "an empty bucket is done at once"
        );
        assert_eq!(
            b.unfinished(&positions),
            at([(B0, 3)].into_iter().collect())
        );
        assert!(!b.finished(&positions));
        positions.insert(B0, Position::At(10));
        assert!(b.finished(&positions));
        assert!(b.unfinished(&positions).is_empty());
    }

    #[test]
    fn a_dropped_bucket_does_not_hold_the_read_open() {
        let mut b = bound(&[(B0, 10), (B1, 5)]);
        let positions: Positions = at([(B0, 10), (B1, 2)].into_iter().collect());
        assert!(!b.finished(&positions));
        b.forget(&B1);
        assert!(b.finished(&positions));
        let mut without: Positions = positions.clone();
        without.remove(&B0);
        assert!(
            bound(&[(B0, 10)]).finished(&without),
            "no position = forgotten"
        );
    }

    #[test]
    fn the_plan_keeps_takes_or_drops_the_stop_point() {
        let saved = Stop {
            at: StoppingOffset::Latest,
            offsets: [(B0, 3)].into_iter().collect(),
        };
        assert_eq!(plan(None, Some(&saved)), Ok(Plan::Unbounded));
        assert_eq!(plan(None, None), Ok(Plan::Unbounded));
        assert_eq!(
            plan(Some(StoppingOffset::Latest), None),
            Ok(Plan::Take(StoppingOffset::Latest))
        );
        assert_eq!(
            plan(Some(StoppingOffset::Latest), Some(&saved)),
            Ok(Plan::Keep(saved.clone()))
        );
        assert_eq!(
            plan(Some(StoppingOffset::Timestamp(5)), Some(&saved)),
            Err(Mismatch {
                saved: StoppingOffset::Latest,
                configured: StoppingOffset::Timestamp(5)
            })
        );
    }
}
