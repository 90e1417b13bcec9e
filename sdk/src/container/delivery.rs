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

//! The poll loop of one instance and its timing ([`BatchPolicy`]).
//!
//! Per instance exactly one batch is in flight: poll → send → wait for the result → run
//! the plugin's `on_batch_result` → poll again. A source that polls ahead
//! ([`Source::poll_ahead`]) has its batch sent through the send callback on a thread of its
//! own ([`SendThread`]) and awaited by a task of its own, while its next poll (and that
//! batch's encoding) runs. Nacks and poll errors back off
//! ([`BatchPolicy::backoff`]); too many Nacks in a row stop the loop.

use std::sync::{Arc, PoisonError, mpsc};
use std::time::Duration;
use tokio::sync::{oneshot, watch};
use tracing::{debug, error, warn};

use super::{Delivered, Pending, SendCallback, Shared};
use crate::error::chain;
use crate::message::ProducedMessages;
use crate::{Source, SourceBatchResult};

/// Timing of the delivery protocol. Defaults are the upstream SDK's; tests shorten them
/// through the environment (read at every `open`):
///
/// * `IGGY_SOURCE_RESULT_TIMEOUT_MS`: wait for a batch result (default 30000);
/// * `IGGY_SOURCE_NACK_BACKOFF_MS`: first Nack/poll-error backoff, doubled per repeat (100);
/// * `IGGY_SOURCE_MAX_BACKOFF_MS`: backoff cap (5000);
/// * `IGGY_SOURCE_MAX_NACKS`: consecutive Nacks after which polling stops (5);
/// * `IGGY_SOURCE_POLL_AHEAD`: `0` never polls ahead, whatever the source says (as the
///   upstream SDK's container, which polls the next batch only after the previous one's
///   result); any other value or none leaves it to [`Source::poll_ahead`].
#[derive(Debug, Clone)]
pub struct BatchPolicy {
    /// A batch without a result after this long counts as Nacked.
    pub result_timeout: Duration,
    /// Backoff after the first Nack or poll error.
    pub nack_backoff: Duration,
    /// Upper bound of the doubling backoff.
    pub max_backoff: Duration,
    /// Consecutive Nacks (reset by an Ack) after which the instance stops polling.
    pub max_consecutive_nacks: u32,
    /// Longest `iggy_source_batch_result` waits for `on_batch_result` to finish.
    pub hook_timeout: Duration,
    /// Longest `iggy_source_close` waits for the loop, then for the plugin's `close`.
    pub close_timeout: Duration,
    /// Whether a source that asks to poll ahead ([`Source::poll_ahead`]) may.
    pub poll_ahead: bool,
}

impl Default for BatchPolicy {
    fn default() -> Self {
        Self {
            result_timeout: Duration::from_secs(30),
            nack_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(5),
            max_consecutive_nacks: 5,
            hook_timeout: Duration::from_secs(30),
            close_timeout: Duration::from_secs(10),
            poll_ahead: true,
        }
    }
}

impl BatchPolicy {
    /// Defaults overridden by the `IGGY_SOURCE_*` variables listed on the type.
    pub fn from_env() -> Self {
        let millis = |name: &str| {
            std::env::var(name)
                .ok()
                .and_then(|text| text.trim().parse::<u64>().ok())
                .map(Duration::from_millis)
        };
        let defaults = Self::default();
        Self {
            result_timeout: millis("IGGY_SOURCE_RESULT_TIMEOUT_MS")
                .unwrap_or(defaults.result_timeout),
            nack_backoff: millis("IGGY_SOURCE_NACK_BACKOFF_MS").unwrap_or(defaults.nack_backoff),
            max_backoff: millis("IGGY_SOURCE_MAX_BACKOFF_MS").unwrap_or(defaults.max_backoff),
            max_consecutive_nacks: std::env::var("IGGY_SOURCE_MAX_NACKS")
                .ok()
                .and_then(|text| text.trim().parse().ok())
                .unwrap_or(defaults.max_consecutive_nacks),
            poll_ahead: std::env::var("IGGY_SOURCE_POLL_AHEAD")
                .ok()
                .is_none_or(|v| v.trim() != "0"),
            ..defaults
        }
    }

    /// Backoff after the `n`-th consecutive failure: `nack_backoff × 2^(n-1)`, capped.
    pub fn backoff(&self, n: u32) -> Duration {
        let factor = 1_u32 << n.saturating_sub(1).min(20);
        self.nack_backoff
            .saturating_mul(factor)
            .min(self.max_backoff)
    }
}

/// The one line logged when the runtime Nacked `nacks` batches in a row and polling stops:
/// the runtime's own lines say what failed, this one says what it means and how to recover.
fn nack_storm(prefix: &str, nacks: u32) -> String {
    format!(
        "{prefix}: the runtime did not accept {nacks} batches in a row, so polling stops until the connector is restarted; nothing after the last accepted batch was acknowledged, so nothing is lost. Likely causes: the `[[streams]] schema` does not fit the payloads (the runtime logs \"Rejected source batch\" or \"Failed to decode message payload\"; raw payloads need `schema = \"raw\"`, JSON payloads declared as json need `schema = \"json\"`), or the Iggy server cannot be reached (the runtime logs \"Failed to send\"). Fix the cause, then restart the connector"
    )
}

async fn stopped(stop: &mut watch::Receiver<bool>) {
    // A dropped sender also means stop.
    let _ = stop.wait_for(|stop| *stop).await;
}

/// Sleeps `delay` unless stopped first; `true` = stopped.
async fn sleep_or_stop(delay: Duration, stop: &mut watch::Receiver<bool>) -> bool {
    tokio::select! {
        biased;
        _ = stopped(stop) => true,
        _ = tokio::time::sleep(delay) => false,
    }
}

/// How a sent batch ended, from the loop's point of view.
struct Outcome {
    result: SourceBatchResult,
    /// Present when `batch_result` waits for the hook.
    done: Option<mpsc::SyncSender<bool>>,
    stopping: bool,
}

impl Outcome {
    /// Not delivered, with no `batch_result` waiting for the hook.
    fn nack(stopping: bool) -> Self {
        Self {
            result: SourceBatchResult::Nack,
            done: None,
            stopping,
        }
    }
}

/// After a timeout or stop: if `batch_result` already took the pending entry its
/// result is on the way and wins; otherwise the batch counts as Nacked.
async fn reclaim(shared: &Shared, rx: oneshot::Receiver<Delivered>, stopping: bool) -> Outcome {
    if shared.take_pending().is_some() {
        return Outcome::nack(stopping);
    }
    match rx.await {
        Ok(delivered) => Outcome {
            result: delivered.result,
            done: Some(delivered.done),
            stopping,
        },
        Err(_) => Outcome::nack(stopping),
    }
}

/// A polled batch, encoded for the send callback.
struct Prepared {
    count: usize,
    encoded: Result<Vec<u8>, crate::error::Error>,
}

/// Encodes `batch` into the spare buffer; `None` when there is nothing to send.
fn prepare(shared: &Shared, batch: ProducedMessages) -> Option<Prepared> {
    if batch.messages.is_empty() && batch.state.is_none() {
        return None;
    }
    let count = batch.messages.len();
    let buffer = std::mem::take(&mut *shared.buffer.lock().unwrap_or_else(PoisonError::into_inner));
    Some(Prepared {
        count,
        encoded: batch.into_postcard_in(buffer),
    })
}

/// A thread of the instance's own that calls the send callback for batches polled ahead.
///
/// Not a task the poll loop spawns: such a task waits in its worker's LIFO slot, which no
/// other worker steals, until the loop's poll awaits something not ready, so a poll that
/// encodes a whole batch without waiting (a KV snapshot's rows, read ahead) would run before
/// the runtime's decoding instead of beside it. Not the blocking pool either: it may hand each
/// call to another thread, each allocating the decoded messages from a malloc arena of its
/// own, and the runtime process's peak RSS would grow with the length of the run. One thread
/// per instance keeps the runtime's allocations in one arena.
struct SendThread {
    jobs: mpsc::Sender<Job>,
}

/// A batch for the [`SendThread`], and where its callback's return goes.
struct Job {
    batch_id: u64,
    encoded: Vec<u8>,
    returned: oneshot::Sender<(Option<i32>, Vec<u8>)>,
}

impl SendThread {
    /// Starts the thread; it ends when this is dropped.
    fn start(owner: Arc<Shared>, send: SendCallback) -> std::io::Result<Self> {
        let (jobs, queued) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name(format!("iggy-source-send-{}", owner.id))
            .spawn(move || {
                for job in queued {
                    let code = owner.send(send, job.batch_id, &job.encoded);
                    // The delivering task may be gone (close): nobody waits for the answer.
                    let _ = job.returned.send((code, job.encoded));
                }
            })?;
        Ok(Self { jobs })
    }

    fn call(&self, batch_id: u64, encoded: Vec<u8>) -> Call {
        let (returned, call) = oneshot::channel();
        let job = Job {
            batch_id,
            encoded,
            returned,
        };
        match self.jobs.send(job) {
            Ok(()) => Call::Running(call),
            // The thread is gone (it cannot panic short of the callback doing so): refused.
            Err(mpsc::SendError(job)) => Call::Returned(Some(-1), job.encoded),
        }
    }
}

/// A batch handed to the send callback, its result on the way.
struct Sending {
    batch_id: u64,
    rx: oneshot::Receiver<Delivered>,
    call: Call,
}

/// The send callback's call: what it returned, with the buffer it read.
enum Call {
    Returned(Option<i32>, Vec<u8>),
    Running(oneshot::Receiver<(Option<i32>, Vec<u8>)>),
}

/// Registers batch `batch_id` as pending and calls the send callback with it, on `thread`
/// if given, else here; `None` when its encoding failed (logged; the batch counts as Nacked).
fn send_batch(
    owner: &Arc<Shared>,
    send: SendCallback,
    batch_id: u64,
    encoded: Result<Vec<u8>, crate::error::Error>,
    thread: Option<&SendThread>,
) -> Option<Sending> {
    let encoded = match encoded {
        Ok(encoded) => encoded,
        Err(error) => {
            error!(
                "{}: batch {batch_id} rolled back: {}",
                owner.prefix,
                chain(&error)
            );
            return None;
        }
    };
    let (tx, rx) = oneshot::channel();
    // Registered before the call: the runtime may answer from another thread before
    // the send callback has even returned.
    *owner.pending.lock().unwrap_or_else(PoisonError::into_inner) = Some(Pending { batch_id, tx });
    let call = match thread {
        Some(thread) => thread.call(batch_id, encoded),
        None => Call::Returned(owner.send(send, batch_id, &encoded), encoded),
    };
    Some(Sending { batch_id, rx, call })
}

/// How the batch of `sending` ended: refused by the callback, answered by the runtime,
/// stopped, or timed out.
async fn deliver(
    owner: Arc<Shared>,
    sending: Option<Sending>,
    mut stop: watch::Receiver<bool>,
) -> Outcome {
    let Some(Sending {
        batch_id,
        mut rx,
        call,
    }) = sending
    else {
        return Outcome::nack(false);
    };
    let shared = owner.as_ref();
    let stop = &mut stop;
    let prefix = &shared.prefix;
    let (code, encoded) = match call {
        Call::Returned(code, encoded) => (code, encoded),
        Call::Running(call) => match call.await {
            Ok(returned) => returned,
            // The send thread ended with the callback (a panic).
            Err(_) => return reclaim(shared, rx, false).await,
        },
    };
    match code {
        Some(0) => {}
        refused => {
            if let Some(code) = refused {
                warn!(
                    "{prefix}: runtime refused batch {batch_id} (send callback returned {code}); rolling back"
                );
            }
            return reclaim(shared, rx, refused.is_none()).await;
        }
    }
    shared.keep_buffer(encoded);
    enum Waited {
        Delivered(Result<Delivered, oneshot::error::RecvError>),
        Stopped,
        TimedOut,
    }
    // Order: a result that already arrived wins over close and over the timeout.
    let waited = tokio::select! {
        biased;
        delivered = &mut rx => Waited::Delivered(delivered),
        _ = stopped(stop) => Waited::Stopped,
        _ = tokio::time::sleep(shared.policy.result_timeout) => Waited::TimedOut,
    };
    match waited {
        Waited::Delivered(Ok(delivered)) => Outcome {
            result: delivered.result,
            done: Some(delivered.done),
            stopping: false,
        },
        Waited::Delivered(Err(_)) => Outcome::nack(false),
        Waited::Stopped => reclaim(shared, rx, true).await,
        Waited::TimedOut => {
            warn!(
                "{prefix}: no result for batch {batch_id} within {:?}; treating it as Nack",
                shared.policy.result_timeout
            );
            reclaim(shared, rx, false).await
        }
    }
}

pub(super) async fn poll_loop<T: Source>(
    mut source: T,
    shared: Arc<Shared>,
    send: SendCallback,
    mut stop: watch::Receiver<bool>,
) -> T {
    let prefix = &shared.prefix;
    let policy = shared.policy.clone();
    let poll_ahead = shared.policy.poll_ahead && source.poll_ahead();
    // Without its thread, the loop calls the send callback itself before it polls ahead.
    let sender = poll_ahead
        .then(|| match SendThread::start(shared.clone(), send) {
            Ok(thread) => Some(thread),
            Err(error) => {
                warn!("{}: cannot start a thread to send batches from ({error}); sending from the polling task", shared.prefix);
                None
            }
        })
        .flatten();
    let mut batch_id: u64 = 1;
    let mut nacks: u32 = 0;
    let mut poll_failures: u32 = 0;
    // What a poll made (and encoded) while the previous batch was in flight.
    let mut ahead: Option<Result<Option<Prepared>, T::Error>> = None;
    loop {
        let polled = match ahead.take() {
            Some(polled) => polled,
            // Close first: an in-progress poll is dropped, never awaited to the end.
            None => tokio::select! {
                biased;
                _ = stopped(&mut stop) => break,
                polled = source.poll() => polled.map(|batch| prepare(&shared, batch)),
            },
        };
        let prepared = match polled {
            Ok(prepared) => {
                poll_failures = 0;
                prepared
            }
            Err(error) => {
                poll_failures = poll_failures.saturating_add(1);
                let delay = policy.backoff(poll_failures);
                error!(
                    "{prefix}: poll failed, retrying in {delay:?}: {}",
                    chain(&error)
                );
                if sleep_or_stop(delay, &mut stop).await {
                    break;
                }
                continue;
            }
        };
        let Some(Prepared { count, encoded }) = prepared else {
            // Nothing to deliver; let other tasks run before polling again.
            tokio::task::yield_now().await;
            continue;
        };
        let outcome = if poll_ahead {
            // Sent from a thread of its own and awaited by a task of its own: the runtime
            // decodes the batch inside the send callback, and that runs on another core while
            // this task polls and encodes the next batch.
            let sent = send_batch(&shared, send, batch_id, encoded, sender.as_ref());
            let sending = tokio::spawn(deliver(shared.clone(), sent, stop.clone()));
            ahead = tokio::select! {
                biased;
                _ = stopped(&mut stop) => None,
                polled = source.poll() => Some(polled.map(|batch| prepare(&shared, batch))),
            };
            sending.await.unwrap_or(Outcome::nack(false))
        } else {
            let sent = send_batch(&shared, send, batch_id, encoded, None);
            deliver(shared.clone(), sent, stop.clone()).await
        };
        let mut keep_polling = true;
        if let Err(error) = source.on_batch_result(outcome.result).await {
            error!(
                "{prefix}: on_batch_result({:?}) for batch {batch_id} failed; polling stops until the connector restarts: {}",
                outcome.result,
                chain(&error)
            );
            keep_polling = false;
        }
        match outcome.result {
            SourceBatchResult::Ack => {
                nacks = 0;
                debug!("{prefix}: batch {batch_id} acknowledged ({count} messages)");
            }
            SourceBatchResult::Nack => {
                // The source rolled back what it staged for the batch polled ahead too.
                ahead = None;
                nacks = nacks.saturating_add(1);
                debug!("{prefix}: batch {batch_id} not acknowledged ({nacks} in a row)");
                if nacks >= policy.max_consecutive_nacks && !outcome.stopping {
                    error!("{}", nack_storm(prefix, nacks));
                    keep_polling = false;
                }
            }
        }
        batch_id += 1;
        if let Some(done) = outcome.done {
            let _ = done.send(keep_polling);
        }
        if !keep_polling || outcome.stopping {
            break;
        }
        if outcome.result == SourceBatchResult::Nack
            && sleep_or_stop(policy.backoff(nacks), &mut stop).await
        {
            break;
        }
    }
    source
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_caps() {
        let policy = BatchPolicy::default();
        let delays: Vec<u64> = (1..=8)
            .map(|n| policy.backoff(n).as_millis() as u64)
            .collect();
        assert_eq!(delays, [100, 200, 400, 800, 1600, 3200, 5000, 5000]);
        assert_eq!(policy.backoff(u32::MAX), Duration::from_secs(5));
    }
}
