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
    mut probe: F,
) -> T
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
            Ok(value) => return value,
            Err(error) => {
                if started.elapsed() >= deadline {
                    panic!(
                        "timed out after {deadline:?} ({attempts} attempts) waiting for {what}; \
                         last error: {error:?}"
                    );
                }
            }
        }
        tokio::time::sleep(interval).await;
    }
}
