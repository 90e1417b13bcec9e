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

//! Where the plugin connects and listens: `bootstrap_servers` and `metrics_address`.

use std::net::SocketAddr;

use serde::de::{Deserialize, Deserializer};
use serde_json::Value;

use super::values::{refuse, text};

/// `bootstrap_servers`: `host:port[,host:port…]`, joined by `,` without spaces.
pub(super) fn servers<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    const ACCEPTED: &str = "use host:port[,host:port…], e.g. \"127.0.0.1:9123\"";
    let value = Value::deserialize(d)?;
    let text = text(&value, ACCEPTED)?;
    let servers: Vec<&str> = text.split(',').map(str::trim).collect();
    let well_formed = servers.iter().all(|server| {
        server
            .rsplit_once(':')
            .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok())
    });
    if !well_formed {
        return Err(refuse(&value, ACCEPTED));
    }
    Ok(servers.join(","))
}

/// `metrics_address`: an IP address and a port to listen on.
pub(super) fn metrics_address<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<SocketAddr>, D::Error> {
    const ACCEPTED: &str =
        "use ip:port, e.g. \"127.0.0.1:9187\" (or \"0.0.0.0:9187\" to listen on every interface)";
    let value = Value::deserialize(d)?;
    text(&value, ACCEPTED)?
        .parse()
        .map(Some)
        .map_err(|_| refuse(&value, ACCEPTED))
}
