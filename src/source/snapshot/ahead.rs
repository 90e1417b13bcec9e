//! The next bucket's KV snapshot, opened while the bucket before it is handed over. Without
//! it, every switch from one bucket's snapshot to the next stalls the batches while the next
//! one's files are copied and opened (a tenth of a second for 7 MB on a quiet machine, more
//! with a remote object store). Listing and leasing it are calls of a few milliseconds and
//! run at once; copying and opening run on a task of their own, whose first batches are then
//! read on their own thread ([`crate::snapshot_files::ahead::ReadAhead`]). At most one
//! bucket is opened ahead, so `snapshot_dir` holds at most two buckets' files.
//!
//! Only a bucket that has handed nothing over yet is opened ahead: one resuming an earlier
//! attempt goes on with that attempt's snapshot, opened when its turn comes. Whatever goes
//! wrong ahead is reported when the bucket's turn comes, as if it happened then.

use std::time::Instant;

use fluss::SnapshotId;
use tokio::task::JoinHandle;

use super::opening::{Copied, Opening};
use crate::client::kv_snapshot::credentials::RemoteCredentials;
use crate::error::Result;
use crate::position::{BucketKey, Position, Positions};

/// What the opening task hands back: the object-store credentials it borrowed, and the
/// snapshot.
type Outcome = (RemoteCredentials, Result<Copied>);

/// A bucket's snapshot being opened (or opened) ahead of its turn.
pub(super) struct OpenAhead {
    key: BucketKey,
    task: JoinHandle<Outcome>,
}

impl OpenAhead {
    /// Starts copying and opening KV snapshot `snapshot` of `key` (leased) on a task of its
    /// own, with `credentials` lent to it; its time counts from `started`.
    pub(super) fn start(
        key: BucketKey,
        snapshot: SnapshotId,
        started: Instant,
        opening: Opening,
        mut credentials: RemoteCredentials,
    ) -> Self {
        let task = tokio::spawn(async move {
            let copied = opening
                .open(key, snapshot, 0, started, &mut credentials)
                .await;
            (credentials, copied)
        });
        Self { key, task }
    }

    /// The bucket it opens.
    pub(super) fn key(&self) -> BucketKey {
        self.key
    }

    /// Waits until it is opened: the credentials lent and the snapshot; `None` if its task
    /// ended without an answer.
    pub(super) async fn finish(self) -> Option<Outcome> {
        self.task.await.ok()
    }

    /// Stops opening it and waits until its local copy is removed.
    pub(super) async fn discard(self) {
        self.task.abort();
        // A finished task's snapshot is dropped here; an aborted one's with its future.
        let _ = self.task.await;
    }
}

/// The bucket whose snapshot is opened ahead after `current`'s: the first of `positions`
/// whose snapshot has handed nothing over yet and that `reads` says is read.
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
    use crate::position::Resume;

    #[test]
    fn the_next_bucket_opened_ahead_has_handed_nothing_over_and_is_read() {
        let b = BucketKey::bucket;
        let resumed = Position::Snapshot {
            floor: Some(4),
            resume: Some(Resume {
                snapshot: 1,
                rows: 10,
                kept: None,
            }),
        };
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
