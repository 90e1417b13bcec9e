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

//! Waiting for a condition without fixed sleeps.

use std::fmt::Debug;
use std::future::Future;
use std::time::{Duration, Instant};

/// Calls `probe` every `interval` until it returns `Ok`, and returns that
/// value. Panics after `deadline` with `what` and the last error, so a
/// failing test says what it waited for and why it never happened.
pub async fn poll_until<T, E, F, Fut>(
    deadline: Duration,
    interval: Duration,
    what: &str,
    probe: F,
) -> T
where
    E: Debug,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    poll_for(deadline, interval, what, probe)
        .await
        .unwrap_or_else(|timed_out| panic!("{timed_out}"))
}

/// [`poll_until`] that hands the caller the timeout (what was waited for,
/// how long, the last error) instead of panicking.
pub async fn poll_for<T, E, F, Fut>(
    deadline: Duration,
    interval: Duration,
    what: &str,
    mut probe: F,
) -> Result<T, String>
where
    E: Debug,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let started = Instant::now();
    let mut attempts = 0u32;
    loop {
        attempts += 1;
        match probe().await {
            Ok(value) => return Ok(value),
            Err(error) => {
                if started.elapsed() >= deadline {
                    return Err(format!(
                        "timed out after {deadline:?} ({attempts} attempts) waiting for {what}; \
                         last error: {error:?}"
                    ));
                }
            }
        }
        tokio::time::sleep(interval).await;
    }
}
