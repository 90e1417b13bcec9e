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
