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

//! Credentials for remote storage on an object store (S3, OSS). Fluss hands out short-lived
//! ones (the tablet servers' `GetFileSystemSecurityToken`, as Flink's readers get them) along
//! with the store's endpoint, region and addressing style; fluss-rs's `SecurityTokenManager`
//! fetches them and renews them before they expire. It is started on the first object-store
//! file only, so a cluster whose `remote.data.dir` is a (shared) file system is never asked.

use std::collections::HashMap;
use std::time::Duration;

use fluss::client::{CredentialsReceiver, FlussConnection, SecurityTokenManager};

/// How long the first credentials may take to arrive.
const FIRST_CREDENTIALS: Duration = Duration::from_secs(30);

/// The URL schemes of the object stores that need credentials from Fluss.
const OBJECT_STORES: [&str; 3] = ["s3://", "s3a://", "oss://"];

/// Whether files at `url` live on an object store (and need [`RemoteCredentials`]).
pub fn needs_credentials(url: &str) -> bool {
    OBJECT_STORES.iter().any(|scheme| url.starts_with(scheme))
}

/// Whether `url` is on S3 (whose client needs a region).
fn is_s3(url: &str) -> bool {
    url.starts_with("s3://") || url.starts_with("s3a://")
}

/// The bucket of an object-store URL (`s3://bucket/key` → `bucket`).
fn bucket_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    rest.split('/').next().unwrap_or(rest)
}

/// Why no credentials could be had.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missing {
    /// None arrived within the wait (the servers could not obtain a token: their logs say why).
    TimedOut(Duration),
    /// The renewal task ended.
    Stopped,
}

impl std::fmt::Display for Missing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::TimedOut(after) => write!(f, "none arrived within {after:?}"),
            Self::Stopped => f.write_str("their renewal stopped"),
        }
    }
}

/// [`RemoteCredentials`] shared by the tasks copying snapshots at the same time; each holds
/// it only while it takes the current credentials.
pub type SharedCredentials = std::sync::Arc<tokio::sync::Mutex<RemoteCredentials>>;

/// The object-store credentials of one connection, renewed in the background once started.
#[derive(Default)]
pub struct RemoteCredentials {
    started: Option<(SecurityTokenManager, CredentialsReceiver)>,
}

impl RemoteCredentials {
    /// The current credentials and settings for the object store holding `url`, as fluss-rs's
    /// `FileIO` takes them (`access_key_id`, `secret_access_key`, `security_token`, `endpoint`,
    /// `region`, ...), waiting for the first ones at most [`FIRST_CREDENTIALS`].
    pub async fn props(
        &mut self,
        conn: &FlussConnection,
        url: &str,
    ) -> std::result::Result<HashMap<String, String>, Missing> {
        let mut props = self.current(conn).await?;
        if is_s3(url) && !props.contains_key("region") {
            // The servers name the region as `fs.s3a.region`, which fluss-rs 1.0.0 does not
            // carry over (it maps only `fs.s3a.endpoint.region`): ask the store, as the S3
            // client would (the endpoint's name, else the bucket's region header).
            let endpoint = props
                .get("endpoint")
                .cloned()
                .unwrap_or_else(|| "https://s3.amazonaws.com".to_owned());
            let bucket = bucket_of(url);
            if let Some(region) = opendal::services::S3::detect_region(&endpoint, bucket).await {
                props.insert("region".to_owned(), region);
            }
        }
        Ok(props)
    }

    /// The latest credentials, waiting for the first ones.
    async fn current(
        &mut self,
        conn: &FlussConnection,
    ) -> std::result::Result<HashMap<String, String>, Missing> {
        let (_, receiver) = self.started.get_or_insert_with(|| {
            let manager = SecurityTokenManager::new(conn.get_connections(), conn.get_metadata());
            manager.start();
            let receiver = manager.subscribe();
            (manager, receiver)
        });
        let wait = receiver.wait_for(Option::is_some);
        match tokio::time::timeout(FIRST_CREDENTIALS, wait).await {
            Ok(Ok(props)) => Ok(props.clone().unwrap_or_default()),
            Ok(Err(_)) => Err(Missing::Stopped),
            Err(_) => Err(Missing::TimedOut(FIRST_CREDENTIALS)),
        }
    }
}

impl Drop for RemoteCredentials {
    fn drop(&mut self) {
        if let Some((manager, _)) = &self.started {
            manager.stop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_object_stores_need_credentials() {
        for url in ["s3://bucket/kv/1", "s3a://b/x", "oss://b/x"] {
            assert!(needs_credentials(url), "{url}");
        }
        for url in ["file:///tmp/fluss/kv", "/tmp/fluss/kv", "hdfs://nn/x", "s3"] {
            assert!(!needs_credentials(url), "{url}");
        }
    }

    #[test]
    fn the_bucket_is_the_authority_of_the_url() {
        assert_eq!(bucket_of("s3://fluss/remote/kv/1"), "fluss");
        assert_eq!(bucket_of("s3a://b"), "b");
        assert!(is_s3("s3a://b/x") && !is_s3("oss://b/x"));
    }
}
