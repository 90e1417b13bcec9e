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

//! Tokio runtimes for test code: one shared runtime for a test binary's own fluss-rs calls,
//! and a fresh one per blocking wait.

use std::future::Future;
use std::sync::LazyLock;

/// The shared multi-thread runtime for the fluss-rs calls tests and benches make themselves.
pub fn rt() -> &'static tokio::runtime::Runtime {
    static RT: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("tokio runtime")
    });
    &RT
}

/// Runs `future` on a fresh current-thread runtime in its own thread, so a blocking API
/// built on it works both from plain code and from inside a test's runtime, and nothing
/// spawned by fluss-rs outlives the wait. A panic in `future` comes back as an `Err`.
pub fn on_own_runtime<T, F>(future: F) -> Result<T, String>
where
    T: Send + 'static,
    F: Future<Output = Result<T, String>> + Send + 'static,
{
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot build a Tokio runtime: {e}"))?
            .block_on(future)
    })
    .join()
    .unwrap_or_else(|panic| {
        Err(format!(
            "the waiting thread panicked: {:?}",
            panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
        ))
    })
}
