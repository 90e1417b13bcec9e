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

//! Talking to Fluss: the client's tuning, connecting (with retries until `connect_timeout`
//! and a round trip that proves the credentials), and [`call`], the deadline every fluss-rs
//! request goes through.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fluss::client::FlussConnection;

use crate::config::Config;
use crate::error::{Error, Fault, Result};

/// How long one Fluss request may take before it counts as hung. fluss-rs has no request
/// timeout of its own, so every call is bounded by this.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// Runs one Fluss call with a deadline, mapping its error to [`Error::Fluss`].
pub async fn call<T>(
    op: &'static str,
    after: Duration,
    fut: impl Future<Output = fluss::error::Result<T>>,
) -> Result<T> {
    match tokio::time::timeout(after, fut).await {
        Ok(result) => result.map_err(|cause| Error::fluss(op, cause)),
        Err(_) => Err(Error::Timeout { op, after }),
    }
}

/// How the client fetches: what the payload format decides (`Format::fetch`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fetch {
    /// Records one client poll returns at most.
    pub records_per_poll: usize,
    /// Client scanners sharing the buckets (see [`crate::client::scanner`]; never more than
    /// there are buckets).
    pub readers: usize,
    /// The least bytes one fetch round asks for from all of a reader's buckets.
    pub round_bytes_at_least: usize,
}

/// The fluss-rs client configuration for `config`, fetching as `fetch` says.
pub fn client_config(config: &Config, fetch: Fetch) -> fluss::config::Config {
    let mut client = fluss::config::Config {
        bootstrap_servers: config.bootstrap_servers.clone(),
        scanner_log_max_poll_records: fetch.records_per_poll,
        // fluss-rs defaults to 1 MiB per bucket per fetch round; with one reader a round trip
        // per MiB leaves the encoder waiting (see `fetch_bytes_per_bucket`).
        scanner_log_fetch_max_bytes_for_bucket: fetch_bytes_per_bucket(config, fetch),
        scanner_log_fetch_max_bytes: fetch_bytes_per_round(config, fetch),
        ..fluss::config::Config::default()
    };
    // Never let a TCP connect outlive the open deadline.
    client.connect_timeout_ms = client.connect_timeout_ms.min(
        config
            .connect_timeout
            .as_millis()
            .try_into()
            .unwrap_or(u64::MAX),
    );
    if let Some(sasl) = &config.sasl {
        client.security_protocol = "sasl".into();
        client.security_sasl_mechanism = sasl.mechanism.clone();
        client.security_sasl_username = sasl.username.clone();
        client.security_sasl_password = sasl.password.expose().to_owned();
    }
    client
}

/// Bytes fetched per bucket per round: a quarter of `max_batch_bytes` for one reader, an
/// eighth when several readers fetch side by side (their fetches add up), within 1..=16 MiB:
/// the smallest fetch that keeps a reader from waiting on the network, since a larger one only
/// holds more memory (docs/operations.md, "Sizing").
fn fetch_bytes_per_bucket(config: &Config, fetch: Fetch) -> i32 {
    let share = if fetch.readers > 1 { 8 } else { 4 };
    let bytes = (config.max_batch_bytes / share).clamp(1 << 20, 16 << 20);
    i32::try_from(bytes).unwrap_or(16 << 20)
}

/// Bytes fetched per round from all of a reader's buckets: four buckets' worth, or the
/// format's least round if that is more. A round asks the tablet server for every bucket of
/// the reader, and its pass over them costs per bucket; a reader of at most four buckets
/// fetches no more than four buckets' worth, each bound by [`fetch_bytes_per_bucket`].
fn fetch_bytes_per_round(config: &Config, fetch: Fetch) -> i32 {
    let four = fetch_bytes_per_bucket(config, fetch).saturating_mul(4);
    four.max(i32::try_from(fetch.round_bytes_at_least).unwrap_or(i32::MAX))
}

/// Connects, retrying until `connect_timeout` while the cluster is unreachable; each failed
/// attempt that is retried is handed to `retrying` (the source logs it).
pub async fn connect(
    config: &Config,
    fetch: Fetch,
    mut retrying: impl FnMut(&Error),
) -> Result<Arc<FlussConnection>> {
    let deadline = Instant::now() + config.connect_timeout;
    let mut backoff = Duration::from_millis(200);
    loop {
        let remaining = deadline.saturating_duration_since(Instant::now());
        let attempt = tokio::time::timeout(
            remaining.max(Duration::from_millis(1)),
            FlussConnection::new(client_config(config, fetch)),
        )
        .await;
        let last_error = match attempt {
            Ok(Ok(conn)) => {
                let conn = Arc::new(conn);
                // Bootstrapping can succeed without authenticating every server; one admin
                // round trip proves the credentials before `open` reports success.
                match probe(&conn).await {
                    Ok(()) => return Ok(conn),
                    Err(e) => e,
                }
            }
            Ok(Err(e)) => Error::fluss("connect", e),
            Err(_) => {
                return Err(Error::Unreachable {
                    bootstrap: config.bootstrap_servers.clone(),
                    after: config.connect_timeout,
                    cause: None,
                });
            }
        };
        if last_error.fault() == Fault::Auth {
            return Err(Error::Authentication {
                bootstrap: config.bootstrap_servers.clone(),
                cause: Box::new(last_error),
            });
        }
        if Instant::now() + backoff >= deadline {
            return Err(Error::Unreachable {
                bootstrap: config.bootstrap_servers.clone(),
                after: config.connect_timeout,
                cause: Some(Box::new(last_error)),
            });
        }
        retrying(&last_error);
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(2));
    }
}

async fn probe(conn: &FlussConnection) -> Result<()> {
    let admin = conn
        .get_admin()
        .map_err(|cause| Error::fluss("get_admin", cause))?;
    call("list_databases", CALL_TIMEOUT, admin.list_databases())
        .await
        .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(bytes: usize) -> Config {
        Config::parse(&format!(
            r#"{{"bootstrap_servers":"h:1","database":"d","table":"t","max_batch_bytes":{bytes}}}"#
        ))
        .unwrap()
    }

    const ONE: Fetch = Fetch {
        records_per_poll: 1000,
        readers: 1,
        round_bytes_at_least: 0,
    };

    #[test]
    fn fetch_size_follows_max_batch_bytes_and_readers_within_bounds() {
        assert_eq!(fetch_bytes_per_bucket(&config(1024), ONE), 1 << 20);
        assert_eq!(fetch_bytes_per_bucket(&config(8 << 20), ONE), 2 << 20);
        assert_eq!(fetch_bytes_per_bucket(&config(1 << 40), ONE), 16 << 20);
        let three = Fetch { readers: 3, ..ONE };
        assert_eq!(fetch_bytes_per_bucket(&config(16 << 20), three), 2 << 20);
        // A round: four buckets' worth, or the format's least round if that is more.
        assert_eq!(fetch_bytes_per_round(&config(8 << 20), ONE), 8 << 20);
        let least = Fetch {
            round_bytes_at_least: 32 << 20,
            ..three
        };
        assert_eq!(fetch_bytes_per_round(&config(16 << 20), least), 32 << 20);
        let client = client_config(&config(1 << 40), least);
        assert_eq!(client.scanner_log_fetch_max_bytes, 64 << 20);
        assert_eq!(client.scanner_log_max_poll_records, 1000);
    }

    #[test]
    fn sasl_credentials_reach_the_client_config() {
        let config = Config::parse(
            r#"{"bootstrap_servers":"h:1","database":"d","table":"t","sasl_username":"u","sasl_password":"p"}"#,
        )
        .unwrap();
        let client = client_config(&config, ONE);
        assert_eq!(client.security_protocol, "sasl");
        assert_eq!(client.security_sasl_username, "u");
        assert_eq!(client.security_sasl_password, "p");
    }
}
