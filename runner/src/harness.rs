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

//! [`Harness`]: loads a source plugin with `libloading` and calls its five symbols
//! exactly as the Iggy connectors runtime does (contract §1.4, §3, §4).
//!
//! The send callback has no user-data pointer, so batches are routed to their
//! [`Instance`] by plugin id through a process-global map; plugin ids come from a
//! process-wide counter starting at 1, like the runtime's.

use iggy_connector_sdk::{LogCallback, ProducedMessages, SendCallback};
use libloading::Library;
use snafu::ResultExt;
use std::collections::BTreeMap;
use std::ffi::{CStr, c_char};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::time::Duration;

use crate::error::{LoadSnafu, OpenFailedSnafu, Result, SymbolSnafu};

type OpenFn = unsafe extern "C" fn(u32, *const u8, usize, *const u8, usize, LogCallback) -> i32;
type HandleFn = unsafe extern "C" fn(u32, SendCallback) -> i32;
type BatchResultFn = unsafe extern "C" fn(u32, u64, u8) -> i32;
type CloseFn = unsafe extern "C" fn(u32) -> i32;
type VersionFn = unsafe extern "C" fn() -> *const c_char;

/// Result byte for Ack.
pub const ACK: u8 = 0;
/// Result byte for Nack.
pub const NACK: u8 = 1;

static NEXT_ID: AtomicU32 = AtomicU32::new(1);
static QUEUES: Mutex<BTreeMap<u32, mpsc::Sender<Batch>>> = Mutex::new(BTreeMap::new());
static LOGS: Mutex<Vec<LogLine>> = Mutex::new(Vec::new());
static LATE_SENDS: AtomicU64 = AtomicU64::new(0);

struct Api {
    open: OpenFn,
    handle: HandleFn,
    batch_result: BatchResultFn,
    close: CloseFn,
    // Last field: dropped after the function pointers are no longer reachable.
    _library: Library,
}

/// A loaded plugin library. Loading the same path twice shares the library (and its
/// globals), as `dlopen` does in the runtime.
pub struct Harness {
    api: Arc<Api>,
    path: PathBuf,
    version: String,
}

impl fmt::Debug for Harness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Harness")
            .field("path", &self.path)
            .field("version", &self.version)
            .finish()
    }
}

impl Harness {
    /// Loads the library, resolves all five symbols and reads the version string.
    pub fn load(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        // SAFETY: loading a plugin runs its initialisers; that is the point of the runner.
        let library = unsafe { Library::new(&path) }.context(LoadSnafu { path: &path })?;
        // SAFETY: the types are the contract's C signatures (§1.1).
        let (open, handle, batch_result, close, version) = unsafe {
            (
                symbol::<OpenFn>(&library, &path, "iggy_source_open")?,
                symbol::<HandleFn>(&library, &path, "iggy_source_handle_v2")?,
                symbol::<BatchResultFn>(&library, &path, "iggy_source_batch_result")?,
                symbol::<CloseFn>(&library, &path, "iggy_source_close")?,
                symbol::<VersionFn>(&library, &path, "iggy_source_version")?,
            )
        };
        // SAFETY: the plugin returns a static NUL-terminated string (§1.5).
        let version = unsafe {
            let text = version();
            if text.is_null() {
                "unknown".to_owned()
            } else {
                CStr::from_ptr(text).to_string_lossy().into_owned()
            }
        };
        Ok(Self {
            api: Arc::new(Api {
                open,
                handle,
                batch_result,
                close,
                _library: library,
            }),
            path,
            version,
        })
    }

    /// What `iggy_source_version` returned.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The library path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Opens a new instance with a fresh id; `Err(OpenFailed { code })` if the plugin
    /// refused.
    pub fn open(&self, config_json: &str, state: Option<&[u8]>) -> Result<Instance> {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let code = self.call_open(id, config_json, state);
        snafu::ensure!(code == 0, OpenFailedSnafu { id, code });
        // Registered before handle_v2, like the runtime's per-id channel.
        let (tx, rx) = mpsc::channel();
        QUEUES
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id, tx);
        Ok(Instance {
            api: self.api.clone(),
            id,
            rx: Mutex::new(rx),
            closed: AtomicBool::new(false),
        })
    }

    /// Raw `iggy_source_open` with a chosen id (no instance bookkeeping).
    pub fn call_open(&self, id: u32, config_json: &str, state: Option<&[u8]>) -> i32 {
        let (state_ptr, state_len) = match state {
            Some(bytes) if !bytes.is_empty() => (bytes.as_ptr(), bytes.len()),
            _ => (std::ptr::null(), 0),
        };
        // SAFETY: both buffers outlive the call, as the contract requires.
        unsafe {
            (self.api.open)(
                id,
                config_json.as_ptr(),
                config_json.len(),
                state_ptr,
                state_len,
                log_callback,
            )
        }
    }

    /// Raw `iggy_source_handle_v2`.
    pub fn call_handle(&self, id: u32) -> i32 {
        // SAFETY: plain integer arguments and a valid callback.
        unsafe { (self.api.handle)(id, send_callback) }
    }

    /// Raw `iggy_source_batch_result`.
    pub fn call_batch_result(&self, id: u32, batch_id: u64, result: u8) -> i32 {
        // SAFETY: plain integer arguments.
        unsafe { (self.api.batch_result)(id, batch_id, result) }
    }

    /// Raw `iggy_source_close`.
    pub fn call_close(&self, id: u32) -> i32 {
        // SAFETY: plain integer argument.
        unsafe { (self.api.close)(id) }
    }

    /// Every log line seen in this process (see [`logs`]).
    pub fn logs(&self) -> Vec<LogLine> {
        logs()
    }
}

/// # Safety
/// `T` must be the symbol's real function pointer type.
unsafe fn symbol<T: Copy>(library: &Library, path: &Path, name: &'static str) -> Result<T> {
    // SAFETY: forwarded to the caller.
    let symbol =
        unsafe { library.get::<T>(name.as_bytes()) }.context(SymbolSnafu { path, name })?;
    Ok(*symbol)
}

/// One batch as received by the send callback.
#[derive(Debug, Clone)]
pub struct Batch {
    /// The plugin's batch id, echoed in the result.
    pub batch_id: u64,
    /// The decoded batch.
    pub messages: ProducedMessages,
    /// Size of the postcard encoding the plugin sent.
    pub encoded_len: usize,
}

/// One open plugin instance. Dropping it closes it if `close` was not called.
pub struct Instance {
    api: Arc<Api>,
    id: u32,
    rx: Mutex<mpsc::Receiver<Batch>>,
    closed: AtomicBool,
}

impl fmt::Debug for Instance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Instance").field("id", &self.id).finish()
    }
}

impl Instance {
    /// The plugin id.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// `iggy_source_handle_v2`: starts polling.
    pub fn start(&self) -> i32 {
        // SAFETY: plain integer argument and a valid callback.
        unsafe { (self.api.handle)(self.id, send_callback) }
    }

    /// The next batch the plugin sent, waiting up to `timeout`.
    pub fn next_batch(&self, timeout: Duration) -> Option<Batch> {
        self.rx
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .recv_timeout(timeout)
            .ok()
    }

    /// `iggy_source_batch_result(id, batch_id, 0)`.
    pub fn ack(&self, batch: &Batch) -> i32 {
        self.result(batch.batch_id, ACK)
    }

    /// `iggy_source_batch_result(id, batch_id, 1)`.
    pub fn nack(&self, batch: &Batch) -> i32 {
        self.result(batch.batch_id, NACK)
    }

    /// `iggy_source_batch_result` with any batch id and result byte.
    pub fn result(&self, batch_id: u64, result: u8) -> i32 {
        // SAFETY: plain integer arguments.
        unsafe { (self.api.batch_result)(self.id, batch_id, result) }
    }

    /// `iggy_source_close`, then unregisters the id (later sends count as late).
    pub fn close(&self) -> i32 {
        self.closed.store(true, Ordering::Release);
        // SAFETY: plain integer argument.
        let code = unsafe { (self.api.close)(self.id) };
        QUEUES
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.id);
        code
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        if !self.closed.load(Ordering::Acquire) {
            self.close();
        }
    }
}

/// Send callbacks that arrived for an id with no registered instance (closed or never
/// opened); a correct plugin never causes one after `close` returned.
pub fn late_sends() -> u64 {
    LATE_SENDS.load(Ordering::Relaxed)
}

extern "C" fn send_callback(id: u32, batch_id: u64, ptr: *const u8, len: usize) -> i32 {
    if ptr.is_null() {
        return -1;
    }
    // SAFETY: the plugin passes a buffer valid for `len` bytes during the call.
    let bytes = unsafe { std::slice::from_raw_parts(ptr, len) };
    let messages = match postcard::from_bytes::<ProducedMessages>(bytes) {
        Ok(messages) => messages,
        Err(error) => {
            eprintln!(
                "ERROR runner: plugin {id}: batch {batch_id} ({len} bytes) does not decode: {error}"
            );
            return -1;
        }
    };
    let queues = QUEUES.lock().unwrap_or_else(PoisonError::into_inner);
    let Some(queue) = queues.get(&id) else {
        LATE_SENDS.fetch_add(1, Ordering::Relaxed);
        return -1;
    };
    let batch = Batch {
        batch_id,
        messages,
        encoded_len: len,
    };
    match queue.send(batch) {
        Ok(()) => 0,
        Err(_) => -1,
    }
}

/// Level of a plugin log line (the callback's 0..=4; anything above is ERROR).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// 0
    Trace,
    /// 1
    Debug,
    /// 2
    Info,
    /// 3
    Warn,
    /// 4 and above
    Error,
}

impl Level {
    fn from_code(code: u8) -> Self {
        match code {
            0 => Level::Trace,
            1 => Level::Debug,
            2 => Level::Info,
            3 => Level::Warn,
            _ => Level::Error,
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Level::Trace => "TRACE",
            Level::Debug => "DEBUG",
            Level::Info => "INFO",
            Level::Warn => "WARN",
            Level::Error => "ERROR",
        })
    }
}

/// One line the plugin logged through the callback.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    /// Level.
    pub level: Level,
    /// The event's target (module path).
    pub target: String,
    /// Message with fields.
    pub message: String,
}

/// Every line any plugin logged in this process so far.
pub fn logs() -> Vec<LogLine> {
    LOGS.lock().unwrap_or_else(PoisonError::into_inner).clone()
}

extern "C" fn log_callback(
    level: u8,
    target_ptr: *const u8,
    target_len: usize,
    message_ptr: *const u8,
    message_len: usize,
) {
    // Same replacements as the runtime for unreadable text (contract §2.4).
    // SAFETY: the plugin passes buffers valid for their lengths during the call.
    let target = unsafe { text(target_ptr, target_len) }.unwrap_or_else(|| "connector".to_owned());
    let message =
        unsafe { text(message_ptr, message_len) }.unwrap_or_else(|| "<invalid utf8>".to_owned());
    let line = LogLine {
        level: Level::from_code(level),
        target,
        message,
    };
    eprintln!("{} {}: {}", line.level, line.target, line.message);
    LOGS.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(line);
}

/// # Safety
/// `ptr` must be NULL or valid for `len` bytes.
unsafe fn text(ptr: *const u8, len: usize) -> Option<String> {
    if ptr.is_null() {
        return (len == 0).then(String::new);
    }
    // SAFETY: forwarded to the caller.
    let bytes = unsafe { std::slice::from_raw_parts(ptr, len) };
    std::str::from_utf8(bytes).ok().map(str::to_owned)
}

/// The symbols the runtime requires of a source plugin, sorted.
pub const SOURCE_SYMBOLS: [&str; 5] = [
    "iggy_source_batch_result",
    "iggy_source_close",
    "iggy_source_handle_v2",
    "iggy_source_open",
    "iggy_source_version",
];

/// The `iggy_*` symbols a library exports, sorted (via `nm -D --defined-only`, from binutils):
/// what the runtime's loader can see.
pub fn exported_iggy_symbols(library: &Path) -> std::io::Result<Vec<String>> {
    let output = std::process::Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(library)
        .output()?;
    if !output.status.success() {
        return Err(std::io::Error::other(format!(
            "nm {} failed: {}",
            library.display(),
            String::from_utf8_lossy(&output.stderr)
        )));
    }
    let mut symbols: Vec<String> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().last())
        .filter(|name| name.starts_with("iggy_"))
        .map(str::to_owned)
        .collect();
    symbols.sort_unstable();
    Ok(symbols)
}
