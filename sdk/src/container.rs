//! Live plugin instances keyed by plugin id, and the poll loop that drives each one.
//!
//! The runtime loads a library once and opens it several times with fresh ids
//! (contract §1.4), so every entry point looks its instance up by id. Per instance
//! exactly one batch is in flight: poll → send → wait for the result → run the
//! plugin's `on_batch_result` → poll again. A source that polls ahead
//! ([`Source::poll_ahead`]) has its batch sent from a task of its own while its next
//! poll (and that batch's encoding) runs.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::{oneshot, watch};
use tracing::{debug, error, info, warn};

use crate::error::{chain, panic_message};
use crate::message::{ConnectorState, ProducedMessages};
use crate::{runtime, Source, SourceBatchResult};

/// `int32_t (*)(uint32_t plugin_id, uint64_t batch_id, const uint8_t *ptr, size_t len)`:
/// the runtime's send callback. Non-zero means the batch was not queued.
pub type SendCallback = extern "C" fn(u32, u64, *const u8, usize) -> i32;

/// Timing of the delivery protocol. Defaults are the upstream SDK's; tests shorten them
/// through the environment (read at every `open`):
///
/// * `IGGY_SOURCE_RESULT_TIMEOUT_MS`: wait for a batch result (default 30000);
/// * `IGGY_SOURCE_NACK_BACKOFF_MS`: first Nack/poll-error backoff, doubled per repeat (100);
/// * `IGGY_SOURCE_MAX_BACKOFF_MS`: backoff cap (5000);
/// * `IGGY_SOURCE_MAX_NACKS`: consecutive Nacks after which polling stops (5).
#[derive(Debug, Clone, PartialEq, Eq)]
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

/// What `batch_result` hands the loop: the result, and where to report that the
/// plugin's hook has run (`true` = applied and polling continues).
struct Delivered {
    result: SourceBatchResult,
    done: mpsc::SyncSender<bool>,
}

struct Pending {
    batch_id: u64,
    tx: oneshot::Sender<Delivered>,
}

/// The part of an instance the loop and the FFI calls share.
struct Shared {
    id: u32,
    policy: BatchPolicy,
    pending: Mutex<Option<Pending>>,
    /// `false` once close started; checked under the lock around every send callback
    /// so none can start after `close` returns.
    sending: Mutex<bool>,
    failed: AtomicBool,
    /// The postcard buffer of the last batch, reused by the next: a fresh multi-megabyte
    /// buffer per batch left freed chunks behind in the allocator's per-thread arenas.
    buffer: Mutex<Vec<u8>>,
}

impl Shared {
    fn send(&self, callback: SendCallback, batch_id: u64, bytes: &[u8]) -> Option<i32> {
        let open = self.sending.lock().unwrap_or_else(PoisonError::into_inner);
        if !*open {
            return None;
        }
        Some(callback(self.id, batch_id, bytes.as_ptr(), bytes.len()))
    }

    /// Keeps `buffer` for the next batch unless it is far larger than batches usually are
    /// (one huge batch must not pin its memory for good).
    fn keep_buffer(&self, mut buffer: Vec<u8>) {
        const KEEP_AT_MOST: usize = 64 << 20;
        if buffer.capacity() <= KEEP_AT_MOST && buffer.capacity() <= buffer.len().saturating_mul(2)
        {
            buffer.clear();
            *self.buffer.lock().unwrap_or_else(PoisonError::into_inner) = buffer;
        }
    }

    fn take_pending(&self) -> Option<Pending> {
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }
}

enum Phase<T> {
    /// `open` is running; nothing else may touch the id.
    Opening,
    /// Opened, no poll loop yet.
    Idle(T),
    Running {
        stop: watch::Sender<bool>,
        done: mpsc::Receiver<()>,
    },
    Closing,
}

struct Slot<T> {
    shared: Arc<Shared>,
    phase: Mutex<Phase<T>>,
    /// The source, handed back by the poll loop when it ends.
    returned: Arc<Mutex<Option<T>>>,
}

/// All live instances of one plugin type in this process; `source_connector!` puts one
/// in a `static`.
pub struct Container<T> {
    slots: Mutex<BTreeMap<u32, Arc<Slot<T>>>>,
}

impl<T: Source> Default for Container<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Source> Container<T> {
    /// An empty container (usable in a `static`).
    pub const fn new() -> Self {
        Self {
            slots: Mutex::new(BTreeMap::new()),
        }
    }

    fn slot(&self, id: u32) -> Option<Arc<Slot<T>>> {
        self.slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&id)
            .cloned()
    }

    fn remove(&self, id: u32) {
        self.slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&id);
    }

    /// `iggy_source_open`: 0 only for a usable instance; -1 for a taken id or bad
    /// config bytes, 1 when the plugin's `open` failed. A failure leaves nothing behind.
    pub fn open(&self, id: u32, config: &[u8], state: Option<&[u8]>) -> i32 {
        let policy = BatchPolicy::from_env();
        {
            let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
            if slots.contains_key(&id) {
                error!("plugin {id}: open refused: id {id} is already open. the runtime never reuses ids; check the caller");
                return -1;
            }
            let shared = Arc::new(Shared {
                id,
                policy,
                pending: Mutex::new(None),
                sending: Mutex::new(true),
                buffer: Mutex::new(Vec::new()),
                failed: AtomicBool::new(false),
            });
            slots.insert(
                id,
                Arc::new(Slot {
                    shared,
                    phase: Mutex::new(Phase::Opening),
                    returned: Arc::new(Mutex::new(None)),
                }),
            );
        }
        let config = match std::str::from_utf8(config) {
            Ok(text) => text.to_owned(),
            Err(source) => {
                self.remove(id);
                let error = crate::error::Error::ConfigUtf8 { id, source };
                error!("plugin {id}: open failed: {}", chain(&error));
                return -1;
            }
        };
        let state = state.map(|bytes| ConnectorState(bytes.to_vec()));
        let opened = runtime::run(
            "open",
            None,
            async move { T::open(id, &config, state).await },
        );
        let source = match opened {
            Ok(Ok(source)) => source,
            Ok(Err(error)) => {
                self.remove(id);
                error!("plugin {id}: open failed: {}", chain(&error));
                return 1;
            }
            Err(error) => {
                self.remove(id);
                error!("plugin {id}: open failed: {}", chain(&error));
                return -1;
            }
        };
        match self.slot(id) {
            Some(slot) => {
                *slot.phase.lock().unwrap_or_else(PoisonError::into_inner) = Phase::Idle(source);
                0
            }
            None => -1,
        }
    }

    /// `iggy_source_handle_v2`: starts the poll loop on the plugin runtime and returns.
    pub fn handle(&self, id: u32, send: SendCallback) -> i32 {
        let Some(slot) = self.slot(id) else {
            warn!("plugin {id}: handle refused: no open instance with this id");
            return -1;
        };
        let runtime = match runtime::get() {
            Ok(runtime) => runtime,
            Err(error) => {
                error!("plugin {id}: handle failed: {}", chain(&error));
                return -1;
            }
        };
        let mut phase = slot.phase.lock().unwrap_or_else(PoisonError::into_inner);
        let source = match std::mem::replace(&mut *phase, Phase::Closing) {
            Phase::Idle(source) => source,
            other => {
                *phase = other;
                warn!("plugin {id}: handle refused: the instance is already running or closing");
                return -1;
            }
        };
        let (stop_tx, stop_rx) = watch::channel(false);
        let (done_tx, done_rx) = mpsc::sync_channel(1);
        let task = runtime.spawn(poll_loop(source, slot.shared.clone(), send, stop_rx));
        let shared = slot.shared.clone();
        let returned = slot.returned.clone();
        runtime.spawn(async move {
            match task.await {
                Ok(source) => {
                    *returned.lock().unwrap_or_else(PoisonError::into_inner) = Some(source)
                }
                Err(error) if error.is_panic() => {
                    let message = panic_message(error.into_panic().as_ref());
                    error!("plugin {id}: panic in poll: {message}; the instance stops producing until restarted");
                    shared.failed.store(true, Ordering::Release);
                }
                Err(_) => warn!("plugin {id}: poll loop cancelled"),
            }
            // A panic can leave a batch registered; its result must now fail.
            drop(shared.take_pending());
            let _ = done_tx.send(());
        });
        *phase = Phase::Running {
            stop: stop_tx,
            done: done_rx,
        };
        0
    }

    /// `iggy_source_batch_result`: 0 once the plugin's `on_batch_result` has run for the
    /// pending batch, even when polling stops after it (that is logged here, once; the runtime
    /// would only log "Plugin returned: -1" without the cause); -1 for an unknown id, no
    /// pending batch, another batch id, an invalid result byte (applied as Nack) or a hook
    /// that did not finish in time.
    pub fn batch_result(&self, id: u32, batch_id: u64, code: u8) -> i32 {
        let Some(slot) = self.slot(id) else {
            debug!(
                "plugin {id}: result for batch {batch_id} ignored: no open instance with this id"
            );
            return -1;
        };
        let (result, valid) = match code {
            0 => (SourceBatchResult::Ack, true),
            1 => (SourceBatchResult::Nack, true),
            other => {
                warn!("plugin {id}: batch {batch_id}: result byte {other} is neither 0 (Ack) nor 1 (Nack); treating it as Nack");
                (SourceBatchResult::Nack, false)
            }
        };
        let pending = {
            let mut pending = slot
                .shared
                .pending
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            match pending.as_ref() {
                Some(awaiting) if awaiting.batch_id == batch_id => pending.take(),
                Some(awaiting) => {
                    warn!(
                        "plugin {id}: result for batch {batch_id} ignored: batch {} is awaiting its result",
                        awaiting.batch_id
                    );
                    return -1;
                }
                None => {
                    warn!("plugin {id}: result for batch {batch_id} ignored: no batch is awaiting a result (late after a timeout?)");
                    return -1;
                }
            }
        };
        let Some(pending) = pending else {
            return -1;
        };
        let (done_tx, done_rx) = mpsc::sync_channel(1);
        let delivered = Delivered {
            result,
            done: done_tx,
        };
        if pending.tx.send(delivered).is_err() {
            return -1;
        }
        match done_rx.recv_timeout(slot.shared.policy.hook_timeout) {
            Ok(_) if valid => 0,
            Ok(_) => -1,
            Err(_) => {
                warn!(
                    "plugin {id}: on_batch_result for batch {batch_id} did not finish within {:?}",
                    slot.shared.policy.hook_timeout
                );
                -1
            }
        }
    }

    /// `iggy_source_close`: stops the loop (rolling back a pending batch, dropping an
    /// in-progress poll), runs the plugin's `close`, removes the instance. No send
    /// callback happens after this returns.
    pub fn close(&self, id: u32) -> i32 {
        let Some(slot) = self.slot(id) else {
            warn!("plugin {id}: close ignored: no open instance with this id");
            return -1;
        };
        let policy = slot.shared.policy.clone();
        let phase = {
            let mut phase = slot.phase.lock().unwrap_or_else(PoisonError::into_inner);
            match std::mem::replace(&mut *phase, Phase::Closing) {
                busy @ (Phase::Opening | Phase::Closing) => {
                    *phase = busy;
                    warn!("plugin {id}: close ignored: the instance is opening or already closing");
                    return -1;
                }
                other => other,
            }
        };
        let source = match phase {
            Phase::Idle(source) => Some(source),
            Phase::Running { stop, done } => {
                let _ = stop.send(true);
                if done.recv_timeout(policy.close_timeout).is_err() {
                    warn!(
                        "plugin {id}: poll loop did not stop within {:?}; abandoning it",
                        policy.close_timeout
                    );
                }
                slot.returned
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take()
            }
            Phase::Opening | Phase::Closing => None,
        };
        *slot
            .shared
            .sending
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = false;
        let mut code = 0;
        if let Some(mut source) = source {
            match runtime::run("close", Some(policy.close_timeout), async move {
                source.close().await
            }) {
                Ok(Ok(())) => {}
                Ok(Err(error)) => {
                    error!("plugin {id}: close failed: {}", chain(&error));
                    code = -1;
                }
                Err(error) => {
                    error!("plugin {id}: close failed: {}", chain(&error));
                    code = -1;
                }
            }
        } else if slot.shared.failed.load(Ordering::Acquire) {
            info!("plugin {id}: closed after a panic; the plugin's close was skipped");
        }
        self.remove(id);
        code
    }
}

/// The one line logged when the runtime Nacked `nacks` batches in a row and polling stops:
/// the runtime's own lines say what failed, this one says what it means and how to recover.
fn nack_storm(id: u32, nacks: u32) -> String {
    format!(
        "plugin {id}: the runtime did not accept {nacks} batches in a row, so polling stops until the connector is restarted; nothing after the last accepted batch was acknowledged, so nothing is lost. Likely causes: the `[[streams]] schema` does not fit the payloads (the runtime logs \"Rejected source batch\" or \"Failed to decode message payload\"; raw payloads need `schema = \"raw\"`, JSON payloads declared as json need `schema = \"json\"`), or the Iggy server cannot be reached (the runtime logs \"Failed to send\"). Fix the cause, then restart the connector"
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

async fn deliver(
    shared: Arc<Shared>,
    send: SendCallback,
    batch_id: u64,
    encoded: Result<Vec<u8>, crate::error::Error>,
    mut stop: watch::Receiver<bool>,
) -> Outcome {
    let shared = shared.as_ref();
    let stop = &mut stop;
    let id = shared.id;
    let encoded = match encoded {
        Ok(encoded) => encoded,
        Err(error) => {
            error!(
                "plugin {id}: batch {batch_id} rolled back: {}",
                chain(&error)
            );
            return Outcome::nack(false);
        }
    };
    let (tx, mut rx) = oneshot::channel();
    // Registered before the call: the runtime may answer from another thread before
    // the send callback has even returned.
    *shared
        .pending
        .lock()
        .unwrap_or_else(PoisonError::into_inner) = Some(Pending { batch_id, tx });
    match shared.send(send, batch_id, &encoded) {
        Some(0) => {}
        refused => {
            if let Some(code) = refused {
                warn!("plugin {id}: runtime refused batch {batch_id} (send callback returned {code}); rolling back");
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
                "plugin {id}: no result for batch {batch_id} within {:?}; treating it as Nack",
                shared.policy.result_timeout
            );
            reclaim(shared, rx, false).await
        }
    }
}

async fn poll_loop<T: Source>(
    mut source: T,
    shared: Arc<Shared>,
    send: SendCallback,
    mut stop: watch::Receiver<bool>,
) -> T {
    let id = shared.id;
    let policy = shared.policy.clone();
    let poll_ahead = source.poll_ahead();
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
                    "plugin {id}: poll failed, retrying in {delay:?}: {}",
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
            // Delivered from a task of its own: the runtime decodes the batch inside the send
            // callback, and that runs on another core while this task polls and encodes the
            // next batch.
            let sending = tokio::spawn(deliver(
                shared.clone(),
                send,
                batch_id,
                encoded,
                stop.clone(),
            ));
            ahead = tokio::select! {
                biased;
                _ = stopped(&mut stop) => None,
                polled = source.poll() => Some(polled.map(|batch| prepare(&shared, batch))),
            };
            sending.await.unwrap_or(Outcome::nack(false))
        } else {
            deliver(shared.clone(), send, batch_id, encoded, stop.clone()).await
        };
        let mut keep_polling = true;
        if let Err(error) = source.on_batch_result(outcome.result).await {
            error!(
                "plugin {id}: on_batch_result({:?}) for batch {batch_id} failed; polling stops until the connector restarts: {}",
                outcome.result,
                chain(&error)
            );
            keep_polling = false;
        }
        match outcome.result {
            SourceBatchResult::Ack => {
                nacks = 0;
                debug!("plugin {id}: batch {batch_id} acknowledged ({count} messages)");
            }
            SourceBatchResult::Nack => {
                // The source rolled back what it staged for the batch polled ahead too.
                ahead = None;
                nacks = nacks.saturating_add(1);
                debug!("plugin {id}: batch {batch_id} not acknowledged ({nacks} in a row)");
                if nacks >= policy.max_consecutive_nacks && !outcome.stopping {
                    error!("{}", nack_storm(id, nacks));
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
