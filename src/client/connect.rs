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
use crate::config::options::PayloadFormat;
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

/// The fluss-rs client configuration for `config`.
pub fn client_config(config: &Config) -> fluss::config::Config {
    let mut client = fluss::config::Config {
        bootstrap_servers: config.bootstrap_servers.clone(),
        // A batch is assembled from several polls; letting one poll return a whole batch keeps
        // the number of polls (each a pass over the fetch buffer) low. An Arrow IPC message
        // holds many rows, so there a poll brings about a quarter of a batch's bytes of rows (at
        // some 80 bytes a row): more per poll is no faster and only holds more decoded rows
        // waiting in the read-ahead (docs/operations.md, "Sizing").
        scanner_log_max_poll_records: match config.payload_format {
            PayloadFormat::Json => config.batch_size.max(500),
            PayloadFormat::ArrowIpc => (config.max_batch_bytes / 320).clamp(10_000, 100_000),
        },
        // fluss-rs defaults to 1 MiB per bucket per fetch round; with one reader a round trip
        // per MiB leaves the encoder waiting (see `fetch_bytes_per_bucket`).
        scanner_log_fetch_max_bytes_for_bucket: fetch_bytes_per_bucket(config),
        scanner_log_fetch_max_bytes: fetch_bytes_per_round(config),
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
fn fetch_bytes_per_bucket(config: &Config) -> i32 {
    let share = if readers(config) > 1 { 8 } else { 4 };
    let bytes = (config.max_batch_bytes / share).clamp(1 << 20, 16 << 20);
    i32::try_from(bytes).unwrap_or(16 << 20)
}

/// Bytes fetched per round from all of a reader's buckets: four buckets' worth, and for Arrow
/// IPC at least twice `max_batch_bytes` (16 MiB by default, 64 MiB at most). A round asks the
/// tablet server for every bucket of the reader, and its pass over them costs per bucket: a
/// reader of hundreds of buckets (a table of many partitions) needs rounds that carry many
/// buckets' rows, or the passes, not the rows, set its pace (BENCHMARKS.md, "At scale"). Such
/// a reader also holds its rounds' bytes until they are polled, so the round follows
/// `max_batch_bytes`, the knob of memory. A reader of at most four buckets fetches no more
/// than four buckets' worth: each bucket is bound by [`fetch_bytes_per_bucket`]. JSON is
/// limited by building its messages, so a larger round would only hold more memory.
fn fetch_bytes_per_round(config: &Config) -> i32 {
    let four = fetch_bytes_per_bucket(config).saturating_mul(4);
    match config.payload_format {
        PayloadFormat::ArrowIpc => {
            let twice = config.max_batch_bytes.saturating_mul(2).min(64 << 20);
            four.max(i32::try_from(twice).unwrap_or(i32::MAX))
        }
        PayloadFormat::Json => four,
    }
}

/// How many client scanners share the buckets (see [`crate::client::scanner`]; never more than there
/// are buckets). Arrow IPC messages are cheap to build, so decompressing the fetched batches
/// is what limits them, and a reader also waits on the network: one more reader than cores,
/// at most 4, which lets Arrow IPC keep up with a bare batch scan of the table
/// (BENCHMARKS.md, "Log tables"). JSON is limited by building its messages, so a second reader
/// would only hold more memory.
pub fn readers(config: &Config) -> usize {
    match config.payload_format {
        PayloadFormat::ArrowIpc => std::thread::available_parallelism()
            .map_or(2, |cores| cores.get() + 1)
            .min(4),
        PayloadFormat::Json => 1,
    }
}

/// Connects, retrying until `connect_timeout` while the cluster is unreachable; each failed
/// attempt that is retried is handed to `retrying` (the source logs it).
pub async fn connect(
    config: &Config,
    mut retrying: impl FnMut(&Error),
) -> Result<Arc<FlussConnection>> {
    let deadline = Instant::now() + config.connect_timeout;
    let mut backoff = Duration::from_millis(200);
    loop {
        let remaining = deadline.saturating_duration_since(Instant::now());
        let attempt = tokio::time::timeout(
            remaining.max(Duration::from_millis(1)),
            FlussConnection::new(client_config(config)),
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

    #[test]
    fn fetch_size_follows_max_batch_bytes_and_readers_within_bounds() {
        let config = |format: &str, bytes: usize| {
            Config::parse(&format!(
                r#"{{"bootstrap_servers":"h:1","database":"d","table":"t","payload_format":"{format}","max_batch_bytes":{bytes}}}"#
            ))
            .unwrap()
        };
        assert_eq!(fetch_bytes_per_bucket(&config("json", 1024)), 1 << 20);
        assert_eq!(fetch_bytes_per_bucket(&config("json", 8 << 20)), 2 << 20);
        assert_eq!(fetch_bytes_per_bucket(&config("json", 1 << 40)), 16 << 20);
        let ipc = config("arrow_ipc", 16 << 20);
        assert!(readers(&ipc) >= 2, "Arrow IPC reads with several scanners");
        assert_eq!(fetch_bytes_per_bucket(&ipc), 2 << 20);
        assert_eq!(readers(&config("json", 8 << 20)), 1);
        // A round: four buckets' worth; Arrow IPC at least twice `max_batch_bytes` (readers of
        // many buckets).
        assert_eq!(fetch_bytes_per_round(&config("json", 8 << 20)), 8 << 20);
        assert_eq!(
            fetch_bytes_per_round(&config("arrow_ipc", 8 << 20)),
            16 << 20
        );
        assert_eq!(
            fetch_bytes_per_round(&config("arrow_ipc", 4 << 20)),
            8 << 20
        );
        assert_eq!(
            fetch_bytes_per_round(&config("arrow_ipc", 1 << 20)),
            4 << 20
        );
        assert_eq!(fetch_bytes_per_round(&ipc), 32 << 20);
        let large = config("arrow_ipc", 1 << 40);
        assert_eq!(fetch_bytes_per_round(&large), 64 << 20);
        assert_eq!(client_config(&large).scanner_log_fetch_max_bytes, 64 << 20);
    }

    #[test]
    fn sasl_credentials_reach_the_client_config() {
        let config = Config::parse(
            r#"{"bootstrap_servers":"h:1","database":"d","table":"t","sasl_username":"u","sasl_password":"p"}"#,
        )
        .unwrap();
        let client = client_config(&config);
        assert_eq!(client.security_protocol, "sasl");
        assert_eq!(client.security_sasl_username, "u");
        assert_eq!(client.security_sasl_password, "p");
        assert_eq!(client.scanner_log_max_poll_records, 1000);
    }
}
