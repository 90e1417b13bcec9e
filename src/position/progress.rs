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

//! In-memory staging of positions: what makes delivery at-least-once.
//!
//! `poll` stages the next offset of every bucket it read from; only an Ack commits the staged
//! positions, a Nack drops them. How a state is encoded is a separate concern
//! ([`crate::state`]); which positions it holds is decided here.

use std::borrow::Cow;
use std::collections::{HashSet, VecDeque};

use fluss::PartitionId;

use super::{BucketKey, Position, Positions, Timestamps};

/// Committed positions plus the positions staged by batches not answered yet: the one in
/// flight and, with the SDK's poll-ahead, the one prepared behind it (oldest first).
#[derive(Debug, Clone, Default)]
pub struct Progress {
    committed: Positions,
    staged: VecDeque<Staged>,
    /// Saved positions of partitions that still exist but `partitions` does not select:
    /// never read, and kept in every state, so widening the selection again resumes those
    /// partitions where they stopped instead of at `starting_offset`.
    set_aside: Positions,
}

/// What one batch handed over stages until it is answered.
#[derive(Debug, Clone)]
struct Staged {
    positions: Positions,
    tally: Tally,
    /// The commit timestamp of the last row of each bucket in the batch.
    times: Timestamps,
}

/// What an Ack commits.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Committed {
    /// What the batch carried.
    pub tally: Tally,
    /// The commit timestamp of the last row of each bucket in it.
    pub times: Timestamps,
}

/// What one batch carried, counted when the runtime acknowledges it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Messages in the batch.
    pub messages: u64,
    /// Fluss records they hold (an Arrow IPC message or an update pair holds several).
    pub rows: u64,
    /// Their payload bytes.
    pub bytes: u64,
}

impl Progress {
    /// Starts from committed positions.
    pub fn new(committed: Positions) -> Self {
        Self {
            committed,
            staged: VecDeque::new(),
            set_aside: Positions::new(),
        }
    }

    /// Keeps the positions of `saved` (a saved state's) that belong to the partitions in
    /// `left_out` in every state (see [`Progress::saved`]).
    pub fn with_set_aside(self, saved: &Positions, left_out: &HashSet<PartitionId>) -> Self {
        let set_aside = saved
            .iter()
            .filter(|(key, _)| key.partition.is_some_and(|p| left_out.contains(&p)))
            .map(|(key, position)| (*key, *position))
            .collect();
        Self { set_aside, ..self }
    }

    /// What a state handed over at `positions` saves: `positions` plus the set-aside ones (a
    /// bucket read wins, though none is in both).
    pub fn saved<'a>(&self, positions: &'a Positions) -> Cow<'a, Positions> {
        if self.set_aside.is_empty() {
            return Cow::Borrowed(positions);
        }
        let mut all = self.set_aside.clone();
        all.extend(positions.iter().map(|(key, position)| (*key, *position)));
        Cow::Owned(all)
    }

    /// Positions acknowledged by the runtime.
    pub fn committed(&self) -> &Positions {
        &self.committed
    }

    /// The positions the next batch starts from: the newest staged ones, if any.
    pub fn current(&self) -> &Positions {
        self.staged.back().map_or(&self.committed, |s| &s.positions)
    }

    /// Whether some batch handed over is still unanswered.
    pub fn has_staged(&self) -> bool {
        !self.staged.is_empty()
    }

    /// Records the positions reached by a batch being handed over, what it carries and the
    /// commit timestamp of its last row per bucket.
    pub fn stage(&mut self, positions: Positions, tally: Tally, times: Timestamps) {
        self.staged.push_back(Staged {
            positions,
            tally,
            times,
        });
    }

    /// The runtime acknowledged the oldest staged batch: its positions become committed.
    /// Returns what that batch carried.
    pub fn commit(&mut self) -> Committed {
        match self.staged.pop_front() {
            Some(staged) => {
                self.committed = staged.positions;
                Committed {
                    tally: staged.tally,
                    times: staged.times,
                }
            }
            None => Committed::default(),
        }
    }

    /// A batch was not delivered: forget its positions and those of every later batch.
    /// Returns what the oldest (the one not delivered) carried.
    pub fn rollback(&mut self) -> Tally {
        let nacked = self.staged.front().map(|s| s.tally).unwrap_or_default();
        self.staged.clear();
        nacked
    }

    /// Adds or moves a committed position outside a batch (new partitions, out-of-range resets).
    pub fn set_committed(&mut self, key: BucketKey, position: Position) {
        self.committed.insert(key, position);
        for staged in &mut self.staged {
            staged.positions.insert(key, position);
        }
    }

    /// Forgets a bucket everywhere (its partition was dropped).
    pub fn forget(&mut self, key: &BucketKey) {
        self.committed.remove(key);
        for staged in &mut self.staged {
            staged.positions.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::position::samples::positions;

    #[test]
    fn ack_commits_and_nack_rolls_back() {
        let mut progress = Progress::new(positions());
        let mut next = positions();
        next.insert(BucketKey::bucket(0), Position::At(20));
        progress.stage(next.clone(), Tally::default(), Timestamps::new());
        assert_eq!(progress.current(), &next);
        progress.rollback();
        assert_eq!(progress.committed(), &positions());
        assert_eq!(progress.current(), &positions());
        progress.stage(next.clone(), Tally::default(), Timestamps::new());
        progress.commit();
        assert_eq!(progress.committed(), &next);
    }

    #[test]
    fn a_batch_polled_ahead_commits_after_the_one_in_flight_and_a_nack_drops_both() {
        let at = |offset| {
            let mut p = positions();
            p.insert(BucketKey::bucket(0), Position::At(offset));
            p
        };
        let mut progress = Progress::new(at(10));
        let tally = |messages| Tally {
            messages,
            rows: 2 * messages,
            bytes: 3 * messages,
        };
        progress.stage(at(20), tally(1), Timestamps::new());
        progress.stage(at(30), tally(2), Timestamps::new());
        assert_eq!(
            progress.current(),
            &at(30),
            "the next poll starts after both"
        );
        assert_eq!(
            progress.commit().tally,
            tally(1),
            "an Ack counts the oldest batch"
        );
        assert_eq!(progress.committed(), &at(20), "an Ack commits the oldest");
        assert_eq!(progress.current(), &at(30));
        progress.stage(at(40), tally(3), Timestamps::new());
        progress.rollback();
        assert_eq!(progress.committed(), &at(20));
        assert_eq!(
            progress.current(),
            &at(20),
            "a Nack drops every staged batch"
        );
        assert_eq!(
            progress.commit(),
            Committed::default(),
            "nothing staged, nothing counted"
        );
        assert_eq!(
            progress.committed(),
            &at(20),
            "an Ack with nothing staged changes nothing"
        );
    }

    fn key(partition: Option<PartitionId>, bucket: fluss::BucketId) -> BucketKey {
        BucketKey { partition, bucket }
    }

    #[test]
    fn positions_of_left_out_partitions_stay_in_every_state() {
        let saved = Positions::from([
            (key(Some(1), 0), Position::At(40)),
            (key(Some(2), 0), Position::At(7)),
            (key(Some(2), 1), Position::At(9)),
            (key(Some(3), 0), Position::At(5)),
        ]);
        // Partition 2 exists but is not selected; 3 is gone (not listed at all).
        let read = Positions::from([(key(Some(1), 0), Position::At(40))]);
        let progress = Progress::new(read).with_set_aside(&saved, &HashSet::from([2]));
        assert_eq!(
            progress.current(),
            &Positions::from([(key(Some(1), 0), Position::At(40))]),
            "set-aside positions are not read"
        );
        let now = Positions::from([(key(Some(1), 0), Position::At(55))]);
        assert_eq!(
            progress.saved(&now).into_owned(),
            Positions::from([
                (key(Some(1), 0), Position::At(55)),
                (key(Some(2), 0), Position::At(7)),
                (key(Some(2), 1), Position::At(9))
            ])
        );
        let unpartitioned = Progress::new(Positions::new()).with_set_aside(
            &Positions::from([(key(None, 0), Position::At(3))]),
            &HashSet::from([2]),
        );
        assert!(matches!(unpartitioned.saved(&now), Cow::Borrowed(_)));
    }

    #[test]
    fn new_buckets_reach_both_committed_and_staged() {
        let mut progress = Progress::new(Positions::new());
        progress.stage(Positions::new(), Tally::default(), Timestamps::new());
        progress.stage(Positions::new(), Tally::default(), Timestamps::new());
        progress.set_committed(BucketKey::bucket(5), Position::At(3));
        assert_eq!(
            progress.current().get(&BucketKey::bucket(5)),
            Some(&Position::At(3))
        );
        progress.commit();
        assert_eq!(
            progress.committed().get(&BucketKey::bucket(5)),
            Some(&Position::At(3))
        );
        assert_eq!(
            progress.current().get(&BucketKey::bucket(5)),
            Some(&Position::At(3))
        );
        progress.forget(&BucketKey::bucket(5));
        assert!(progress.committed().is_empty());
    }
}
