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

use tokio::task::JoinHandle;

use super::snapshot_phase::Copied;
use super::FlussSource;
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
    /// Stops opening it and waits until its local copy is removed.
    pub(super) async fn discard(self) {
        self.task.abort();
        // A finished task's snapshot is dropped here; an aborted one's with its future.
        let _ = self.task.await;
    }
}

impl FlussSource {
    /// Opens the snapshot of the bucket due after `current` (whose snapshot was just queued),
    /// if there is one that has handed nothing over yet. Failures are left to its turn.
    pub(super) async fn open_ahead(&mut self, current: BucketKey, positions: &Positions) {
        if self.ahead.is_some() {
            return;
        }
        let Some(next) = positions
            .iter()
            .find(|(key, position)| {
                **key != current && **position == Position::SNAPSHOT && self.buckets.contains(**key)
            })
            .map(|(key, _)| *key)
        else {
            return;
        };
        let started = std::time::Instant::now();
        let Ok(Some(snapshot)) = self.leased_latest(next).await else {
            return;
        };
        let Ok(opening) = self.opening().await else {
            return;
        };
        let mut credentials = std::mem::take(&mut self.remote_credentials);
        let task = tokio::spawn(async move {
            let copied = opening
                .open(next, snapshot, 0, started, &mut credentials)
                .await;
            (credentials, copied)
        });
        self.ahead = Some(OpenAhead { key: next, task });
    }

    /// The snapshot of `key`, if it was opened ahead (waiting for its opening to finish);
    /// `None` if it was not, or its task ended without an answer.
    pub(super) async fn take_ahead(&mut self, key: BucketKey) -> Option<Result<Copied>> {
        let ahead = self.ahead.take()?;
        if ahead.key != key {
            ahead.discard().await;
            return None;
        }
        let (credentials, copied) = ahead.task.await.ok()?;
        self.remote_credentials = credentials;
        Some(copied)
    }

    /// Drops the snapshot opened ahead, if any (a Nack, the close).
    pub(super) async fn discard_ahead(&mut self) {
        if let Some(ahead) = self.ahead.take() {
            ahead.discard().await;
        }
    }

    /// Drops the snapshot opened ahead if its bucket is no longer read (its partition was
    /// dropped), so its files do not wait for the next snapshot or the close.
    pub(super) async fn discard_ahead_if_gone(&mut self) {
        if let Some(ahead) = &self.ahead {
            if !self.buckets.contains(ahead.key) {
                self.discard_ahead().await;
            }
        }
    }
}
