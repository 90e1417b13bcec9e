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

//! Assembling one runtime batch from several client polls, within `batch_size` messages and
//! (softly) `max_batch_bytes` payload bytes.
//!
//! A message's payload may be *deferred*: a job that builds it (compressed Arrow IPC) runs when
//! the batch is handed over, all jobs of the batch on several threads at once, instead of one
//! by one as the rows are drained. Until then the message counts with an estimate of its size,
//! and the rows it holds stay in memory: a batch is full once those rows reach
//! [`DEFERRED_ROWS_FACTOR`] × `max_batch_bytes`, which bounds that memory.

use std::num::NonZeroUsize;
use std::sync::Mutex;

use crate::sdk::ProducedMessage;

use crate::error::{Error, Result};

/// Builds a deferred payload.
pub type PayloadJob = Box<dyn FnOnce() -> Result<Vec<u8>> + Send>;

/// Uncompressed bytes of deferred payloads a batch may hold, in units of its byte cap.
pub const DEFERRED_ROWS_FACTOR: usize = 2;

/// Threads that build deferred payloads: one per core, at most this many.
const MAX_JOB_THREADS: usize = 8;

/// The messages of the batch being assembled.
pub struct Batch {
    messages: Vec<ProducedMessage>,
    /// Jobs building the payloads of `messages[index]`, in message order.
    deferred: Vec<(usize, PayloadJob)>,
    /// Uncompressed bytes of the rows the deferred payloads hold.
    deferred_bytes: usize,
    bytes: usize,
    max_messages: usize,
    max_bytes: usize,
}

impl std::fmt::Debug for Batch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batch")
            .field("messages", &self.messages.len())
            .field("deferred", &self.deferred.len())
            .field("bytes", &self.bytes)
            .finish()
    }
}

impl Batch {
    /// An empty batch with the given limits.
    pub fn new(max_messages: usize, max_bytes: usize) -> Self {
        Self {
            messages: Vec::with_capacity(max_messages.min(16_384)),
            deferred: Vec::new(),
            deferred_bytes: 0,
            bytes: 0,
            max_messages,
            max_bytes,
        }
    }

    /// Whether no more messages should be added. The byte cap is soft: the message that
    /// crosses it is kept, so a batch always makes progress even with one huge row.
    pub fn is_full(&self) -> bool {
        self.messages.len() >= self.max_messages
            || self.bytes >= self.max_bytes
            || self.deferred_bytes >= self.max_bytes.saturating_mul(DEFERRED_ROWS_FACTOR)
    }

    /// Adds a message.
    pub fn push(&mut self, message: ProducedMessage) {
        self.bytes += message.payload.len();
        self.messages.push(message);
    }

    /// Adds a message whose payload `job` builds when the batch is handed over from rows of
    /// `row_bytes` uncompressed; it counts as `estimated_bytes` until then.
    pub fn push_deferred(
        &mut self,
        message: ProducedMessage,
        row_bytes: usize,
        estimated_bytes: usize,
        job: PayloadJob,
    ) {
        self.bytes += estimated_bytes;
        self.deferred_bytes += row_bytes;
        self.deferred.push((self.messages.len(), job));
        self.messages.push(message);
    }

    /// Whether some payloads are still to be built (see [`Batch::into_messages`]).
    pub fn has_deferred(&self) -> bool {
        !self.deferred.is_empty()
    }

    /// Payload bytes so far (deferred payloads by their estimate).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Messages so far.
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// Whether the batch has no messages.
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// The messages, for handing over. Deferred payloads are built first, on up to one thread
    /// per core (blocking: call it off the async tasks when [`Batch::has_deferred`]).
    pub fn into_messages(self) -> Result<Vec<ProducedMessage>> {
        let Batch {
            mut messages,
            deferred,
            ..
        } = self;
        if deferred.is_empty() {
            return Ok(messages);
        }
        let threads = std::thread::available_parallelism()
            .map_or(1, NonZeroUsize::get)
            .clamp(1, MAX_JOB_THREADS)
            .min(deferred.len());
        // Always on threads of their own, so a panicking job cannot unwind into the caller.
        let payloads = run_parallel(deferred, threads)?;
        for (index, payload) in payloads {
            messages[index].payload = payload;
        }
        Ok(messages)
    }
}

/// Built payloads with the index of their message.
type Built = Vec<(usize, Vec<u8>)>;

/// Runs `jobs` on `threads` scoped threads that take the next job from a shared queue (jobs
/// differ in size, so a fixed split would leave threads idle).
fn run_parallel(jobs: Vec<(usize, PayloadJob)>, threads: usize) -> Result<Built> {
    let queue = Mutex::new(jobs.into_iter());
    let next = || queue.lock().unwrap_or_else(|e| e.into_inner()).next();
    let results: Vec<Result<Built>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    while let Some((index, job)) = next() {
                        done.push((index, job()?));
                    }
                    Ok(done)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|worker| worker.join().unwrap_or(Err(Error::PayloadJobPanicked)))
            .collect()
    });
    let mut payloads = Vec::new();
    for result in results {
        payloads.extend(result?);
    }
    Ok(payloads)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(bytes: usize) -> ProducedMessage {
        ProducedMessage {
            id: None,
            checksum: None,
            timestamp: None,
            origin_timestamp: None,
            headers: None,
            payload: vec![b'x'; bytes],
        }
    }

    #[test]
    fn full_by_count() {
        let mut b = Batch::new(2, 1000);
        b.push(message(1));
        assert!(!b.is_full());
        b.push(message(1));
        assert!(b.is_full());
        assert_eq!(b.len(), 2);
    }

    #[test]
    fn full_by_bytes_keeps_the_crossing_message() {
        let mut b = Batch::new(100, 10);
        b.push(message(6));
        assert!(!b.is_full());
        b.push(message(6));
        assert!(b.is_full());
        assert_eq!(b.bytes(), 12);
        assert_eq!(b.into_messages().unwrap().len(), 2);
    }

    #[test]
    fn deferred_payloads_are_built_in_message_order_on_hand_over() {
        let mut b = Batch::new(100, 1000);
        b.push(message(3));
        for n in 1..=20usize {
            b.push_deferred(message(0), 10, 10, Box::new(move || Ok(vec![b'y'; n])));
        }
        b.push(message(4));
        assert!(b.has_deferred());
        assert_eq!(
            b.bytes(),
            3 + 200 + 4,
            "deferred payloads count by their estimate"
        );
        let lengths: Vec<usize> = b
            .into_messages()
            .unwrap()
            .iter()
            .map(|m| m.payload.len())
            .collect();
        let mut expected = vec![3];
        expected.extend(1..=20);
        expected.push(4);
        assert_eq!(lengths, expected);
    }

    #[test]
    fn rows_waiting_for_their_payload_fill_the_batch() {
        let mut b = Batch::new(100, 10);
        b.push_deferred(message(0), 19, 1, Box::new(|| Ok(vec![])));
        assert!(!b.is_full(), "19 bytes of rows, 1 estimated");
        b.push_deferred(message(0), 1, 1, Box::new(|| Ok(vec![])));
        assert!(b.is_full(), "twice the byte cap in rows");
    }

    #[test]
    fn a_failed_job_fails_the_hand_over() {
        let mut b = Batch::new(100, 1000);
        for n in 0..4 {
            b.push_deferred(
                message(0),
                1,
                1,
                Box::new(move || {
                    if n == 2 {
                        Err(Error::Ipc {
                            cause: arrow_schema::ArrowError::ComputeError("job 2".into()),
                        })
                    } else {
                        Ok(vec![])
                    }
                }),
            );
        }
        let error = b.into_messages().unwrap_err().to_string();
        assert!(error.contains("job 2"), "{error}");
    }

    #[test]
    fn a_panicking_job_is_an_error_not_a_panic() {
        let mut b = Batch::new(100, 1000);
        b.push_deferred(
            message(0),
            1,
            1,
            Box::new(|| panic!("a bug in a payload job")),
        );
        assert!(matches!(b.into_messages(), Err(Error::PayloadJobPanicked)));
    }
}
