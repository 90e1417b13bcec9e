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

//! The source's side of a bounded read (`stopping_offset`): the stop point in force (the
//! rules themselves are pure, in [`crate::scope::stop`]), whether a state handed over holds it
//! yet, and whether the read is over. Buckets that reach their stop leave the scanner; once
//! every bucket reached it and was acknowledged, the `finished` line is logged once.

use crate::client::discovery::PartitionNames;
use crate::client::offsets;
use crate::client::table::Table;
use crate::config::options::StartingOffset;
use crate::error::{Error, Result};
use crate::position::{BucketKey, Offsets, Positions};
use crate::scope::stop::{self, Bound, Plan, Stop, StoppingOffset};
use crate::state::SavedState;

/// Whether an acknowledged state holds the stop point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StopPoint {
    /// Held by the saved state, or there is none (an unbounded read).
    Saved,
    /// Taken at this open: until a state holding it is acknowledged, a poll hands one over
    /// even if no position moved (a restart must stop at the same place, even when every
    /// bucket was empty).
    Unsaved,
}

/// How far a bounded read got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Some bucket has rows to read, or some delivered row is not acknowledged yet.
    Reading,
    /// Every bucket reached its stop and was acknowledged: the `finished` line was logged.
    Finished,
}

/// Where a bounded read stops, and how far it got; unbounded by default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct BoundedRead {
    bound: Bound,
    stop: StopPoint,
    phase: Phase,
}

impl BoundedRead {
    /// The stop point in force at open. Without a saved one, a new stop point is taken, for
    /// `keys`, the buckets this instance reads at this moment.
    pub(super) async fn open(
        table: &Table,
        keys: &[BucketKey],
        partitions: &PartitionNames,
        configured: Option<StoppingOffset>,
        saved: Option<&SavedState>,
    ) -> Result<Self> {
        let plan = stop::plan(configured, saved.and_then(|s| s.stop.as_ref())).map_err(|m| {
            Error::StateStop {
                saved: m.saved,
                configured: m.configured,
            }
        })?;
        Ok(match plan {
            Plan::Unbounded => Self::new(Bound::unbounded(), StopPoint::Saved),
            Plan::Keep(stop) => Self::new(Bound::new(stop), StopPoint::Saved),
            Plan::Take(at) => {
                // A stop offset is found exactly like a starting offset of the same spelling.
                let spec = match at {
                    StoppingOffset::Latest => StartingOffset::Latest,
                    StoppingOffset::Timestamp(ms) => StartingOffset::Timestamp(ms),
                };
                let offsets = offsets::resolve(table, keys, partitions, spec).await?;
                Self::new(Bound::new(Stop { at, offsets }), StopPoint::Unsaved)
            }
        })
    }

    fn new(bound: Bound, stop: StopPoint) -> Self {
        Self {
            bound,
            stop,
            phase: Phase::Reading,
        }
    }

    /// Where each bucket stops.
    pub(super) fn bound(&self) -> &Bound {
        &self.bound
    }

    /// Forgets a bucket (its partition was dropped), so it does not hold the read open.
    pub(super) fn forget(&mut self, key: &BucketKey) {
        self.bound.forget(key);
    }

    /// The runtime acknowledged a batch: every state handed over holds the stop point.
    pub(super) fn acknowledged(&mut self) {
        self.stop = StopPoint::Saved;
    }

    /// Whether the next state must be handed over for the stop point alone: no acknowledged
    /// state holds it, and none is in flight (`in_flight`: some batch is unanswered).
    pub(super) fn stop_due(&self, in_flight: bool) -> bool {
        self.stop == StopPoint::Unsaved && !in_flight
    }

    /// The buckets of `after` that reached their stop between `before` and `after` (in key
    /// order): the scanner stops fetching rows of theirs that would only be trimmed.
    pub(super) fn reached(&self, before: &Positions, after: &Positions) -> Vec<BucketKey> {
        after
            .iter()
            .filter(|(key, next)| {
                let was_done = before
                    .get(key)
                    .is_some_and(|before| self.bound.is_done(key, *before));
                self.bound.is_done(key, **next) && !was_done
            })
            .map(|(key, _)| *key)
            .collect()
    }

    /// The stop offsets, the first time the read is over at the `committed` positions (every
    /// bucket reached its stop and was acknowledged); `None` before that, and after.
    pub(super) fn finish(&mut self, committed: &Positions) -> Option<&Offsets> {
        if self.phase == Phase::Finished || !self.bound.finished(committed) {
            return None;
        }
        self.phase = Phase::Finished;
        self.bound.stop().map(|stop| &stop.offsets)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::position::{Position, at};

    const B0: BucketKey = BucketKey::bucket(0);
    const B1: BucketKey = BucketKey::bucket(1);

    fn stop(offsets: &[(BucketKey, i64)]) -> Bound {
        Bound::new(Stop {
            at: StoppingOffset::Latest,
            offsets: offsets.iter().copied().collect(),
        })
    }

    fn positions(offsets: &[(BucketKey, i64)]) -> Positions {
        at(offsets.iter().copied().collect())
    }

    #[test]
    fn a_stop_point_taken_now_is_handed_over_until_a_state_holding_it_is_acknowledged() {
        let mut read = BoundedRead::new(stop(&[(B0, 0)]), StopPoint::Unsaved);
        assert!(read.stop_due(false), "even when no position moves");
        assert!(!read.stop_due(true), "a batch in flight already carries it");
        read.acknowledged();
        assert!(!read.stop_due(false));
        let kept = BoundedRead::new(stop(&[(B0, 0)]), StopPoint::Saved);
        assert!(
            !kept.stop_due(false),
            "a saved stop point is in every state"
        );
        let unbounded = BoundedRead::new(Bound::unbounded(), StopPoint::Saved);
        assert!(!unbounded.stop_due(false));
    }

    #[test]
    fn the_read_is_over_once_when_every_bucket_is_acknowledged_at_its_stop() {
        let mut read = BoundedRead::new(stop(&[(B0, 10), (B1, 0)]), StopPoint::Saved);
        assert_eq!(read.finish(&positions(&[(B0, 9), (B1, 0)])), None);
        let offsets: Offsets = [(B0, 10), (B1, 0)].into_iter().collect();
        assert_eq!(
            read.finish(&positions(&[(B0, 10), (B1, 0)])),
            Some(&offsets)
        );
        assert_eq!(
            read.finish(&positions(&[(B0, 10), (B1, 0)])),
            None,
            "the finished line is logged once"
        );
        let mut unbounded = BoundedRead::new(Bound::unbounded(), StopPoint::Saved);
        assert_eq!(unbounded.finish(&positions(&[(B0, 10)])), None);
    }

    #[test]
    fn a_forgotten_bucket_does_not_hold_the_read_open() {
        let mut read = BoundedRead::new(stop(&[(B0, 10), (B1, 5)]), StopPoint::Saved);
        let committed = positions(&[(B0, 10), (B1, 2)]);
        assert_eq!(read.finish(&committed), None);
        read.forget(&B1);
        assert!(read.finish(&committed).is_some());
    }

    #[test]
    fn buckets_reaching_their_stop_in_a_poll_are_named_once() {
        let read = BoundedRead::new(stop(&[(B0, 10), (B1, 5)]), StopPoint::Saved);
        let before = positions(&[(B0, 4), (B1, 5)]);
        assert!(
            read.reached(&before, &positions(&[(B0, 9), (B1, 5)]))
                .is_empty(),
            "B1 was done before"
        );
        assert_eq!(
            read.reached(&before, &positions(&[(B0, 10), (B1, 5)])),
            [B0]
        );
        let mut snapshot = positions(&[(B0, 10)]);
        snapshot.insert(B1, Position::SNAPSHOT);
        assert_eq!(
            read.reached(&Positions::new(), &snapshot),
            [B0],
            "a bucket in its snapshot phase is not done; one without a position before is"
        );
        let unbounded = BoundedRead::new(Bound::unbounded(), StopPoint::Saved);
        assert!(
            unbounded
                .reached(&before, &positions(&[(B0, 100)]))
                .is_empty()
        );
    }
}
