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

//! The HTTP side: a minimal responder for `GET /metrics` on its own thread (a small
//! current-thread tokio runtime), so it outlives any one connector and never competes with
//! a connector's polls. Bound at `open`, so a port in use fails there; dropping the
//! [`Listener`] stops the thread and frees the port before it returns.

use std::net::SocketAddr;
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

use super::exposition;

/// Longest a client may take to send its request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest request head read.
const MAX_REQUEST: usize = 8 * 1024;

/// A bound address served on its own thread.
pub(super) struct Listener {
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Listener")
    }
}

impl Listener {
    /// Binds `address` and starts serving it, each scrape answered with what `scrape` returns.
    pub(super) fn start(address: SocketAddr, scrape: fn() -> String) -> std::io::Result<Self> {
        let socket = std::net::TcpListener::bind(address)?;
        socket.set_nonblocking(true)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()?;
        let (stop, stopped) = oneshot::channel();
        let thread = std::thread::Builder::new()
            .name("fluss-metrics".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let Ok(listener) = TcpListener::from_std(socket) else {
                        return;
                    };
                    tokio::select! {
                        _ = stopped => {}
                        _ = accept(listener, scrape) => {}
                    }
                });
            })?;
        Ok(Self {
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn accept(listener: TcpListener, scrape: fn() -> String) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                tokio::spawn(answer(stream, scrape));
            }
            // Out of file descriptors and the like: wait instead of spinning.
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// Reads one request head and answers it; the connection is closed after the answer.
async fn answer(mut stream: TcpStream, scrape: fn() -> String) {
    let mut head = Vec::with_capacity(512);
    let read = tokio::time::timeout(REQUEST_TIMEOUT, async {
        let mut chunk = [0u8; 1024];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_REQUEST {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => head.extend_from_slice(&chunk[..n]),
            }
        }
    })
    .await;
    if read.is_err() {
        return;
    }
    let response = respond(&head, scrape);
    let _ = stream.write_all(&response).await;
    let _ = stream.shutdown().await;
}

/// The whole HTTP response to a request head.
fn respond(head: &[u8], scrape: fn() -> String) -> Vec<u8> {
    let line = head.split(|b| *b == b'\n').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let mut words = line.split_whitespace();
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    let (status, content_type, body) = match (method, path) {
        ("GET" | "HEAD", "/metrics") => ("200 OK", exposition::CONTENT_TYPE, scrape().into_bytes()),
        ("GET" | "HEAD", _) => (
            "404 Not Found",
            "text/plain; charset=utf-8",
            b"not found; the metrics are at /metrics\n".to_vec(),
        ),
        _ => (
            "405 Method Not Allowed",
            "text/plain; charset=utf-8",
            b"only GET /metrics is served\n".to_vec(),
        ),
    };
    let mut response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if method != "HEAD" {
        response.extend_from_slice(&body);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(response: &[u8]) -> String {
        String::from_utf8_lossy(response)
            .lines()
            .next()
            .unwrap_or_default()
            .to_owned()
    }

    #[test]
    fn only_get_metrics_is_served() {
        for (request, want) in [
            (&b"GET /metrics HTTP/1.1\r\n\r\n"[..], "HTTP/1.1 200 OK"),
            (b"GET /metrics?x=1 HTTP/1.1\r\n\r\n", "HTTP/1.1 200 OK"),
            (b"GET / HTTP/1.1\r\n\r\n", "HTTP/1.1 404 Not Found"),
            (
                b"POST /metrics HTTP/1.1\r\n\r\n",
                "HTTP/1.1 405 Method Not Allowed",
            ),
        ] {
            assert_eq!(status(&respond(request, String::new)), want);
        }
        let head = respond(b"HEAD /metrics HTTP/1.1\r\n\r\n", String::new);
        assert!(String::from_utf8_lossy(&head).ends_with("\r\n\r\n"));
    }
}
