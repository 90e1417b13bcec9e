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

//! Live plugin instances keyed by plugin id: the registry behind the `extern "C"` entry
//! points `open`, `handle`, `batch_result` and `close`, and the state an instance shares
//! with its poll loop (`delivery.rs` runs that loop).
//!
//! The runtime loads a library once and opens it several times with fresh ids
//! (contract §1.4), so every entry point looks its instance up by id.

mod delivery;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use tokio::sync::{oneshot, watch};
use tracing::{debug, error, info, warn};

use crate::error::{chain, panic_message};
use crate::message::ConnectorState;
use crate::{Source, SourceBatchResult, runtime};
use delivery::poll_loop;

pub use delivery::BatchPolicy;

/// `int32_t (*)(uint32_t plugin_id, uint64_t batch_id, const uint8_t *ptr, size_t len)`:
/// the runtime's send callback. Non-zero means the batch was not queued.
pub type SendCallback = extern "C" fn(u32, u64, *const u8, usize) -> i32;

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
    /// What every line about this instance starts with ([`Source::log_prefix`]).
    prefix: String,
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
        let prefix = T::log_prefix(id, &String::from_utf8_lossy(config));
        {
            let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
            if slots.contains_key(&id) {
                error!(
                    "{prefix}: open refused: id {id} is already open. the runtime never reuses ids; check the caller"
                );
                return -1;
            }
            let shared = Arc::new(Shared {
                id,
                prefix: prefix.clone(),
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
                error!("{prefix}: open failed: {}", chain(&error));
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
                error!("{prefix}: open failed: {}", chain(&error));
                return 1;
            }
            Err(error) => {
                self.remove(id);
                error!("{prefix}: open failed: {}", chain(&error));
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
        let prefix = slot.shared.prefix.clone();
        let runtime = match runtime::get() {
            Ok(runtime) => runtime,
            Err(error) => {
                error!("{prefix}: handle failed: {}", chain(&error));
                return -1;
            }
        };
        let mut phase = slot.phase.lock().unwrap_or_else(PoisonError::into_inner);
        let source = match std::mem::replace(&mut *phase, Phase::Closing) {
            Phase::Idle(source) => source,
            other => {
                *phase = other;
                warn!("{prefix}: handle refused: the instance is already running or closing");
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
                    error!("{prefix}: panic in poll: {message}; the instance stops producing until restarted");
                    shared.failed.store(true, Ordering::Release);
                }
                Err(_) => warn!("{prefix}: poll loop cancelled"),
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
        let prefix = &slot.shared.prefix;
        let (result, valid) = match code {
            0 => (SourceBatchResult::Ack, true),
            1 => (SourceBatchResult::Nack, true),
            other => {
                warn!(
                    "{prefix}: batch {batch_id}: result byte {other} is neither 0 (Ack) nor 1 (Nack); treating it as Nack"
                );
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
                        "{prefix}: result for batch {batch_id} ignored: batch {} is awaiting its result",
                        awaiting.batch_id
                    );
                    return -1;
                }
                None => {
                    warn!(
                        "{prefix}: result for batch {batch_id} ignored: no batch is awaiting a result (late after a timeout?)"
                    );
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
                    "{prefix}: on_batch_result for batch {batch_id} did not finish within {:?}",
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
        let prefix = &slot.shared.prefix;
        let phase = {
            let mut phase = slot.phase.lock().unwrap_or_else(PoisonError::into_inner);
            match std::mem::replace(&mut *phase, Phase::Closing) {
                busy @ (Phase::Opening | Phase::Closing) => {
                    *phase = busy;
                    warn!("{prefix}: close ignored: the instance is opening or already closing");
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
                        "{prefix}: poll loop did not stop within {:?}; abandoning it",
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
                    error!("{prefix}: close failed: {}", chain(&error));
                    code = -1;
                }
                Err(error) => {
                    error!("{prefix}: close failed: {}", chain(&error));
                    code = -1;
                }
            }
        } else if slot.shared.failed.load(Ordering::Acquire) {
            info!("{prefix}: closed after a panic; the plugin's close was skipped");
        }
        self.remove(id);
        code
    }
}
