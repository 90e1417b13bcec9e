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

//! The plugin's own Tokio runtime: process-global, created on first use, multi-thread.
//!
//! FFI entry points run on the runtime's threads (often its Tokio workers), so they never
//! `block_on` there: work is spawned here and the caller waits on a std channel, which is
//! legal on any thread, inside or outside any Tokio context.

use snafu::ResultExt;
use std::future::Future;
use std::sync::{Mutex, OnceLock, PoisonError, mpsc};
use std::time::Duration;
use tokio::runtime::Runtime;

use crate::error::{Error, RuntimeStartSnafu, panic_message};

static RUNTIME: OnceLock<Runtime> = OnceLock::new();
static INIT: Mutex<()> = Mutex::new(());

/// The plugin runtime, built on the first call.
pub fn get() -> Result<&'static Runtime, Error> {
    if let Some(runtime) = RUNTIME.get() {
        return Ok(runtime);
    }
    // OnceLock has no fallible init on stable; the mutex makes "build once" hold.
    let _guard = INIT.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(runtime) = RUNTIME.get() {
        return Ok(runtime);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("iggy-source")
        .build()
        .context(RuntimeStartSnafu)?;
    Ok(RUNTIME.get_or_init(|| runtime))
}

/// Runs `future` on the plugin runtime and blocks the calling thread until it ends or
/// `limit` passes (then the task is aborted). Panics inside become [`Error::TaskPanic`].
pub fn run<F>(op: &'static str, limit: Option<Duration>, future: F) -> Result<F::Output, Error>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let runtime = get()?;
    let task = runtime.spawn(future);
    let abort = task.abort_handle();
    let (tx, rx) = mpsc::sync_channel(1);
    runtime.spawn(async move {
        let _ = tx.send(task.await);
    });
    let joined = match limit {
        Some(limit) => match rx.recv_timeout(limit) {
            Ok(joined) => joined,
            Err(_) => {
                abort.abort();
                return Err(Error::TaskTimeout { op, after: limit });
            }
        },
        None => rx.recv().map_err(|_| Error::TaskPanic {
            op,
            message: "the runtime shut down".to_owned(),
        })?,
    };
    joined.map_err(|error| Error::TaskPanic {
        op,
        message: if error.is_panic() {
            panic_message(error.into_panic().as_ref())
        } else {
            "cancelled".to_owned()
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_returns_the_output() {
        assert_eq!(run("t", None, async { 41 + 1 }).unwrap(), 42);
    }

    #[test]
    fn run_reports_a_panic() {
        let error = run("t", None, async { panic!("boom") }).unwrap_err();
        assert_eq!(error.to_string(), "t: panicked: boom");
    }

    #[test]
    fn run_times_out() {
        let error = run("t", Some(Duration::from_millis(20)), async {
            tokio::time::sleep(Duration::from_secs(5)).await
        })
        .unwrap_err();
        assert!(matches!(error, Error::TaskTimeout { .. }), "{error}");
    }

    #[test]
    fn run_works_inside_another_tokio_runtime() {
        let outer = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let value = outer.block_on(async { run("t", None, async { 7 }).unwrap() });
        assert_eq!(value, 7);
    }
}
