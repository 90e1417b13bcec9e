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

//! The next buckets' KV snapshots, opened while the bucket before them is handed over.
//! Without it, every switch from one bucket's snapshot to the next stalls the batches while
//! the next one's files are copied and opened (a tenth of a second for 7 MB on a quiet
//! machine, more with a remote object store). They are listed and leased with their group
//! ([`super::listed`]); copying and opening run on tasks of their own, whose first batches are
//! then read on their own thread ([`crate::snapshot::files::read_ahead::ReadAhead`]).
//!
//! The next bucket is opened ahead whatever its size; up to [`MOST`] in all while each of the
//! further ones takes at most [`SMALL`] bytes (one larger is left to its turn), so
//! `snapshot_dir` holds at most two buckets' files beyond `(MOST - 1) × SMALL` bytes, and a
//! table of many small buckets does not wait for each bucket's requests and copy in turn.
//!
//! Only a bucket that has handed nothing over yet is opened ahead: one resuming an earlier
//! attempt goes on with that attempt's snapshot, opened when its turn comes. Whatever goes
//! wrong ahead is reported when the bucket's turn comes, as if it happened then; but a bucket
//! that found no room in `snapshot_dir` ahead is copied again at its turn (the buckets before
//! it have given theirs back by then), and a bucket that finds no room at its turn makes the
//! buckets opened ahead give theirs back first, so a small `snapshot_dir` is never held by
//! buckets that wait.

use std::collections::VecDeque;
use std::time::Instant;

use tokio::task::JoinHandle;

use crate::error::{Error, Result};
use crate::position::{BucketKey, Position, Positions};
use crate::snapshot::listed::Leased;
use crate::snapshot::opening::Copied;

/// The most buckets opened ahead at a time.
pub(super) const MOST: usize = 4;
/// The most bytes of local disk a bucket opened ahead after the next one may take.
pub(super) const SMALL: u64 = 8 << 20;

/// A bucket's snapshot being opened (or opened) ahead of its turn.
struct OpenAhead {
    key: BucketKey,
    /// Its leased snapshot, opened at its turn if it was too large to open ahead.
    leased: Leased,
    task: JoinHandle<Result<Option<Copied>>>,
}

/// What became of a bucket opened ahead, at its turn.
pub(super) enum Turn {
    /// Copied and opened (or why not).
    Opened(Result<Copied>),
    /// Not opened ahead: larger than [`SMALL`], or no room in `snapshot_dir` beside the
    /// buckets before it. Its leased snapshot is opened now.
    AtItsTurn(Leased),
}

/// The buckets opened ahead, in the order they were started.
#[derive(Default)]
pub(super) struct Ahead {
    opening: VecDeque<OpenAhead>,
}

impl Ahead {
    /// Whether another bucket may be opened ahead, and with which bound on its size.
    pub(super) fn room(&self) -> Option<Option<u64>> {
        match self.opening.len() {
            0 => Some(None),
            n if n < MOST => Some(Some(SMALL)),
            _ => None,
        }
    }

    /// Whether `key` is being opened ahead.
    pub(super) fn has(&self, key: BucketKey) -> bool {
        self.opening.iter().any(|ahead| ahead.key == key)
    }

    /// Starts copying and opening `leased`, the snapshot of `key`, on a task of its own (at
    /// most `most` bytes of it); its time counts from `started`.
    pub(super) fn start(
        &mut self,
        key: BucketKey,
        leased: Leased,
        started: Instant,
        most: Option<u64>,
    ) {
        let (snapshot, opening) = (leased.0, leased.1.clone());
        let task = tokio::spawn(async move { opening.open(key, snapshot, 0, started, most).await });
        self.opening.push_back(OpenAhead { key, leased, task });
    }

    /// What became of `key` opened ahead (waiting for its opening to finish); `None` if it
    /// was not opened ahead, or its task ended without an answer. Buckets started before it
    /// were skipped: they are discarded.
    pub(super) async fn take(&mut self, key: BucketKey) -> Option<Turn> {
        let at = self.opening.iter().position(|ahead| ahead.key == key)?;
        for skipped in self.opening.drain(..at).collect::<Vec<_>>() {
            skipped.discard().await;
        }
        let ahead = self.opening.pop_front()?;
        match ahead.task.await.ok()? {
            Ok(Some(copied)) => Some(Turn::Opened(Ok(copied))),
            // The buckets before it held their files: now they are gone, it may fit.
            Ok(None) | Err(Error::SnapshotSpace { .. }) => Some(Turn::AtItsTurn(ahead.leased)),
            Err(error) => Some(Turn::Opened(Err(error))),
        }
    }

    /// Whether a bucket is being opened (or waits, opened) ahead.
    pub(super) fn is_empty(&self) -> bool {
        self.opening.is_empty()
    }

    /// Stops opening the buckets `keep` does not keep, and waits until their local copies
    /// are removed.
    pub(super) async fn discard_unless(&mut self, keep: impl Fn(BucketKey) -> bool) {
        let (kept, gone): (VecDeque<_>, VecDeque<_>) =
            self.opening.drain(..).partition(|ahead| keep(ahead.key));
        self.opening = kept;
        for ahead in gone {
            ahead.discard().await;
        }
    }
}

impl OpenAhead {
    /// Stops opening it and waits until its local copy is removed.
    async fn discard(self) {
        self.task.abort();
        // A finished task's snapshot is dropped here; an aborted one's with its future.
        let _ = self.task.await;
    }
}

/// The bucket whose snapshot is opened ahead after `current`'s: the first of `positions`
/// whose snapshot has handed nothing over yet and that `reads` says is read (and is not
/// opened ahead yet).
pub(super) fn next(
    current: BucketKey,
    positions: &Positions,
    reads: impl Fn(BucketKey) -> bool,
) -> Option<BucketKey> {
    positions
        .iter()
        .find(|(key, position)| {
            **key != current && **position == Position::SNAPSHOT && reads(**key)
        })
        .map(|(key, _)| *key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_next_bucket_opened_ahead_has_handed_nothing_over_and_is_read() {
        let b = BucketKey::bucket;
        let resumed = Position::RESUMED;
        let positions = Positions::from([
            (b(0), Position::SNAPSHOT),
            (b(1), Position::At(3)),
            (b(2), resumed),
            (b(3), Position::SNAPSHOT),
            (b(4), Position::SNAPSHOT),
        ]);
        assert_eq!(next(b(0), &positions, |_| true), Some(b(3)));
        assert_eq!(next(b(0), &positions, |key| key != b(3)), Some(b(4)));
        assert_eq!(next(b(3), &positions, |key| key == b(3)), None);
    }
}
