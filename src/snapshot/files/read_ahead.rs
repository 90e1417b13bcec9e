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

//! Reading a bucket's snapshot rows ahead, on a thread of their own: RocksDB's iteration and
//! the decoding of each value into Arrow run on one core while the polling task encodes the
//! previous batch on another, as fluss-rs fetches a changelog ahead of its scanner's polls.
//! At most [`AHEAD`] batches wait, so memory stays bounded whatever the bucket's size.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, Sender, channel, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use arrow_array::RecordBatch;

use super::RowBatches;
use crate::error::{Error, Result};
use crate::position::BucketKey;

/// Batches read ahead and not yet taken (besides the one being read and the one taken).
const AHEAD: usize = 1;

/// What the reading thread sends: a batch, the end, or why it stopped.
type Read = Result<Option<RecordBatch>>;

/// Another [`RowBatches`] read on a thread of its own, [`AHEAD`] batches ahead.
pub struct ReadAhead {
    /// `Mutex` only to be `Sync` (a `Receiver` is not): one caller takes batches at a time.
    batches: Mutex<Receiver<Read>>,
    /// Batches given back, freed by the reading thread (see [`ReadAhead::start`]).
    given_back: Sender<Arc<RecordBatch>>,
    reader: Option<JoinHandle<()>>,
    key: BucketKey,
    dir: PathBuf,
    done: bool,
}

impl ReadAhead {
    /// Starts reading `rows` (bucket `key`'s, copied to `dir`) at once. The thread ends after
    /// the last batch, after an error, or when this is dropped.
    pub fn start(key: BucketKey, dir: PathBuf, rows: Box<dyn RowBatches>) -> Result<Self> {
        let (send, batches) = sync_channel::<Read>(AHEAD);
        let (given_back, returned) = channel::<Arc<RecordBatch>>();
        let copy = dir.clone();
        let reader = std::thread::Builder::new()
            .name(format!("fluss-snapshot-{}", key.bucket))
            .spawn(move || {
                let mut each = |read: Read| {
                    // Batches given back are freed on the thread that allocated them. Freed
                    // on the polling thread, every buffer would go back to this thread's
                    // malloc arena under that arena's lock, which this thread holds while it
                    // allocates the next batch (glibc): the two cores then wait on each other.
                    while let Ok(batch) = returned.try_recv() {
                        drop(batch);
                    }
                    // A send fails when the reader was dropped: nothing more is wanted.
                    send.send(read).is_ok()
                };
                if let Err(panic) = catch_unwind(AssertUnwindSafe(|| rows.read_each(&mut each))) {
                    let _ = send.send(Err(panicked(key, copy, &*panic)));
                }
            })
            .map_err(|cause| {
                corrupt(
                    key,
                    dir.clone(),
                    format!("cannot start a thread to read it: {cause}"),
                )
            })?;
        Ok(Self {
            batches: Mutex::new(batches),
            given_back,
            reader: Some(reader),
            key,
            dir,
            done: false,
        })
    }
}

/// The error a panic while reading becomes: a value the decoders could not take is most
/// likely a damaged copy, which the next attempt copies again.
fn panicked(key: BucketKey, dir: PathBuf, panic: &(dyn std::any::Any + Send)) -> Error {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".into());
    corrupt(
        key,
        dir,
        format!("reading it panicked ({what}); please report it if the files are intact"),
    )
}

/// The error of the copy in `dir` of bucket `key`'s snapshot.
fn corrupt(key: BucketKey, dir: PathBuf, cause: String) -> Error {
    Error::SnapshotCorrupt {
        key,
        path: dir,
        cause,
    }
}

impl RowBatches for ReadAhead {
    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        if self.done {
            return Ok(None);
        }
        let batches = self.batches.get_mut().unwrap_or_else(|p| p.into_inner());
        let read = batches.recv().unwrap_or_else(|_| {
            Err(corrupt(
                self.key,
                self.dir.clone(),
                "its reading thread stopped without a word".into(),
            ))
        });
        self.done = !matches!(read, Ok(Some(_)));
        read
    }

    /// Sends `batch` back to the reading thread, which frees it before its next batch. Once
    /// that thread has ended, the send fails and the batch is dropped here.
    fn give_back(&mut self, batch: Arc<RecordBatch>) {
        let _ = self.given_back.send(batch);
    }
}

impl Drop for ReadAhead {
    /// Stops the thread and waits for it: the rows it owns (the database, the local copy) are
    /// closed and removed when this returns, as they were without reading ahead.
    fn drop(&mut self) {
        // Dropping the receiver makes the thread's next send fail; it finishes the batch it
        // reads (milliseconds) and ends.
        let (_, batches) = sync_channel::<Read>(0);
        drop(std::mem::replace(
            self.batches.get_mut().unwrap_or_else(|p| p.into_inner()),
            batches,
        ));
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use arrow_array::Int64Array;
    use arrow_schema::{DataType, Field, Schema};

    use super::*;

    /// `batches` batches of one row (`0..batches`), counting reads and noting its drop.
    struct Counted {
        next: i64,
        batches: i64,
        read: Arc<AtomicUsize>,
        dropped: Arc<AtomicUsize>,
        fail_at: Option<i64>,
        panic_at: Option<i64>,
    }

    impl RowBatches for Counted {
        fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
            if self.panic_at == Some(self.next) {
                panic!("bad value");
            }
            if self.fail_at == Some(self.next) {
                return Err(Error::SnapshotCorrupt {
                    key: BucketKey::bucket(0),
                    path: "/x".into(),
                    cause: "bad block".into(),
                });
            }
            if self.next == self.batches {
                return Ok(None);
            }
            self.read.fetch_add(1, Ordering::SeqCst);
            let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]));
            let batch =
                RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from(vec![self.next]))])
                    .unwrap();
            self.next += 1;
            Ok(Some(batch))
        }
    }

    impl Drop for Counted {
        fn drop(&mut self) {
            self.dropped.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn counted(batches: i64) -> (Counted, Arc<AtomicUsize>, Arc<AtomicUsize>) {
        let (read, dropped) = (Arc::default(), Arc::default());
        let rows = Counted {
            next: 0,
            batches,
            read: Arc::clone(&read),
            dropped: Arc::clone(&dropped),
            fail_at: None,
            panic_at: None,
        };
        (rows, read, dropped)
    }

    fn start(rows: Counted) -> ReadAhead {
        ReadAhead::start(BucketKey::bucket(0), "/copy".into(), Box::new(rows)).unwrap()
    }

    fn id(batch: &RecordBatch) -> i64 {
        batch
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap()
            .value(0)
    }

    #[test]
    fn batches_come_in_order_and_the_end_stays_the_end() {
        let (rows, _, dropped) = counted(5);
        let mut ahead = start(rows);
        let ids: Vec<i64> = std::iter::from_fn(|| ahead.next_batch().unwrap())
            .map(|b| id(&b))
            .collect();
        assert_eq!(ids, [0, 1, 2, 3, 4]);
        assert!(ahead.next_batch().unwrap().is_none(), "stays exhausted");
        drop(ahead);
        assert_eq!(dropped.load(Ordering::SeqCst), 1, "the rows are dropped");
    }

    #[test]
    fn reading_ahead_is_bounded_and_a_drop_stops_the_thread_and_frees_the_rows() {
        let (rows, read, dropped) = counted(1_000);
        let mut ahead = start(rows);
        assert_eq!(id(&ahead.next_batch().unwrap().unwrap()), 0);
        std::thread::sleep(std::time::Duration::from_millis(100));
        let ahead_of_taken = read.load(Ordering::SeqCst);
        assert!(
            ahead_of_taken <= 1 + AHEAD + 1,
            "one taken, {AHEAD} waiting, one being sent: read {ahead_of_taken}"
        );
        drop(ahead);
        assert_eq!(
            dropped.load(Ordering::SeqCst),
            1,
            "closed when the drop returns"
        );
    }

    #[test]
    fn a_batch_given_back_is_freed_by_the_reading_thread_before_it_reads_far_ahead() {
        let (rows, _, _) = counted(10);
        let mut ahead = start(rows);
        let first = Arc::new(ahead.next_batch().unwrap().unwrap());
        let freed = Arc::downgrade(&first);
        ahead.give_back(first);
        // The thread's next hand-over that starts after the give-back frees it: by the time
        // the third batch after it is taken, that hand-over has happened.
        let later: Vec<i64> = (0..3)
            .map(|_| id(&ahead.next_batch().unwrap().unwrap()))
            .collect();
        assert_eq!(later, [1, 2, 3]);
        assert!(freed.upgrade().is_none(), "the batch given back was freed");
        // Given back after the thread has ended, a batch is dropped where it is.
        while ahead.next_batch().unwrap().is_some() {}
        drop(ahead.reader.take().unwrap().join());
        let last = Arc::new(RecordBatch::new_empty(Arc::new(Schema::empty())));
        let dropped = Arc::downgrade(&last);
        ahead.give_back(last);
        assert!(dropped.upgrade().is_none());
    }

    #[test]
    fn an_error_or_a_panic_while_reading_is_one_error_naming_the_copy() {
        let (mut rows, _, _) = counted(5);
        rows.fail_at = Some(2);
        let mut ahead = start(rows);
        assert!(ahead.next_batch().unwrap().is_some());
        assert!(ahead.next_batch().unwrap().is_some());
        let error = ahead.next_batch().unwrap_err();
        assert!(error.to_string().contains("bad block"), "{error}");
        assert!(ahead.next_batch().unwrap().is_none(), "nothing after it");

        let (mut rows, _, dropped) = counted(5);
        rows.panic_at = Some(1);
        let mut ahead = start(rows);
        assert!(ahead.next_batch().unwrap().is_some());
        let error = ahead.next_batch().unwrap_err();
        let line = error.to_string();
        assert!(
            line.contains("panicked (bad value)") && line.contains("/copy"),
            "{line}"
        );
        assert_eq!(error.fault(), crate::error::Fault::Retry, "copied again");
        drop(ahead);
        assert_eq!(dropped.load(Ordering::SeqCst), 1);
    }
}
