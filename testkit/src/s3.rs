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

//! A local S3 for clusters whose remote storage is an object store: moto's server (from the
//! suites' Python environment, [`crate::python`]), which also answers the STS `GetSessionToken`
//! calls the tablet servers make to hand out credentials. It binds 127.0.0.1 and is stopped by
//! its process id when dropped.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long the server may take to answer.
const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// A running S3 server with one bucket.
pub struct S3Server {
    child: Child,
    endpoint: String,
    bucket: String,
}

impl S3Server {
    /// Starts a server on a free port and creates `bucket` in it.
    pub fn start(bucket: &str) -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let moto = crate::python::program("moto_server");
        let child = Command::new(&moto)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start {} ({e}): scripts/python-venv.sh installs it",
                    moto.display()
                )
            });
        let server = Self {
            child,
            endpoint: format!("http://127.0.0.1:{port}"),
            bucket: bucket.to_owned(),
        };
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            match server.request("PUT", &format!("/{bucket}")) {
                Ok((200, _)) => return server,
                Ok((status, body)) => panic!("creating bucket {bucket} answered {status}: {body}"),
                Err(_) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(200))
                }
                Err(e) => panic!(
                    "moto_server on {} did not answer within {READY_TIMEOUT:?}: {e}",
                    server.endpoint
                ),
            }
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The `server.yaml` lines that put a cluster's remote storage into the bucket (under
    /// `remote/`), with static keys the tablet servers trade for session credentials.
    pub fn cluster_conf(&self) -> Vec<(String, String)> {
        [
            ("remote.data.dir", format!("s3://{}/remote", self.bucket)),
            ("s3.endpoint", self.endpoint.clone()),
            ("s3.region", "us-east-1".into()),
            ("s3.access-key", "testing".into()),
            ("s3.secret-key", "testing".into()),
            ("s3.path-style-access", "true".into()),
            ("s3.assumed.role.sts.endpoint", self.endpoint.clone()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
    }

    /// The keys of the bucket's objects under `prefix` (the first 1,000).
    pub fn list(&self, prefix: &str) -> Vec<String> {
        let (status, body) = self
            .request("GET", &format!("/{}?prefix={prefix}", self.bucket))
            .expect("listing the bucket");
        assert_eq!(status, 200, "listing the bucket: {body}");
        body.split("<Key>")
            .skip(1)
            .filter_map(|rest| rest.split("</Key>").next())
            .map(str::to_owned)
            .collect()
    }

    /// One unsigned HTTP/1.1 request (moto does not check signatures); status and body.
    fn request(&self, method: &str, path: &str) -> std::io::Result<(u16, String)> {
        let host = self.endpoint.trim_start_matches("http://");
        let mut stream = TcpStream::connect(host)?;
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        write!(
            stream,
            "{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )?;
        let mut response = String::new();
        stream.read_to_string(&mut response)?;
        let status = response
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| std::io::Error::other(format!("no HTTP status in {response:?}")))?;
        let body = response
            .split_once("\r\n\r\n")
            .map_or(String::new(), |(_, b)| b.to_owned());
        Ok((status, body))
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
