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

//! The process-wide hub: the live connectors' figures, each connector's open/close counts
//! (kept after it closes, so a restart is visible) and one listener per address, shared by
//! every connector naming it and closed with the last of them.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use snafu::Snafu;

use super::exposition;
use super::serve::Listener;
use super::{Figures, Labels, Lifecycle};

/// Why metrics could not be set up at `open`.
#[derive(Debug, Snafu)]
pub enum MetricsError {
    /// The address cannot be listened on.
    #[snafu(display(
        "metrics_address = \"{address}\" cannot be listened on ({reason}); choose a free port (or another address) in `metrics_address`, or remove the key to run without metrics"
    ))]
    Bind {
        /// The address.
        address: SocketAddr,
        /// The operating system's words.
        reason: String,
    },
    /// Another live connector in this process has the same labels.
    #[snafu(display(
        "another connector in this process already reports metrics as connector=\"{connector}\" instance=\"{instance}\"; set `metrics_connector` to each connector's key so their series stay apart"
    ))]
    Duplicate {
        /// The `connector` label.
        connector: String,
        /// The `instance` label.
        instance: String,
    },
}

#[derive(Default)]
struct Hub {
    live: Vec<Arc<Figures>>,
    lifecycle: BTreeMap<Labels, Lifecycle>,
    listeners: BTreeMap<SocketAddr, (Listener, usize)>,
}

static HUB: Mutex<Option<Hub>> = Mutex::new(None);

fn hub() -> MutexGuard<'static, Option<Hub>> {
    HUB.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A connector's place in the hub; dropping it removes the connector's figures and releases
/// its listener.
#[derive(Debug)]
pub struct Registration {
    pub(super) figures: Arc<Figures>,
    address: SocketAddr,
}

/// Registers a connector labelled `labels` whose metrics are served at `address`, binding
/// the address unless another connector of this process already did.
pub fn register(address: SocketAddr, labels: Labels) -> Result<Registration, MetricsError> {
    let mut guard = hub();
    let hub = guard.get_or_insert_with(Hub::default);
    if hub
        .live
        .iter()
        .any(|f| f.labels.connector == labels.connector && f.labels.instance == labels.instance)
    {
        return Err(MetricsError::Duplicate {
            connector: labels.connector,
            instance: labels.instance,
        });
    }
    match hub.listeners.get_mut(&address) {
        Some((_, users)) => *users += 1,
        None => {
            let listener = Listener::start(address, scrape).map_err(|e| MetricsError::Bind {
                address,
                reason: e.to_string(),
            })?;
            hub.listeners.insert(address, (listener, 1));
        }
    }
    hub.lifecycle.entry(labels.clone()).or_default().opens += 1;
    let figures = Arc::new(Figures::new(labels));
    hub.live.push(Arc::clone(&figures));
    Ok(Registration { figures, address })
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut guard = hub();
        let Some(hub) = guard.as_mut() else {
            return;
        };
        let stopped = release(hub, self);
        drop(guard);
        // Stopped outside the lock: its thread may be answering a scrape that needs it.
        drop(stopped);
    }
}

/// Removes `this` from `hub`; returns its listener when it was the last user.
fn release(hub: &mut Hub, this: &Registration) -> Option<Listener> {
    hub.live.retain(|f| !Arc::ptr_eq(f, &this.figures));
    hub.lifecycle
        .entry(this.figures.labels.clone())
        .or_default()
        .closes += 1;
    let (_, users) = hub.listeners.get_mut(&this.address)?;
    *users -= 1;
    if *users > 0 {
        return None;
    }
    hub.listeners.remove(&this.address).map(|(l, _)| l)
}

/// The text a scrape answers with, for the hub's connectors.
fn scrape() -> String {
    let (live, lifecycle) = snapshot();
    exposition::render(live, lifecycle)
}

/// What a scrape shows: the live connectors and every connector's open/close counts.
fn snapshot() -> (Vec<Arc<Figures>>, Vec<(Labels, Lifecycle)>) {
    match hub().as_ref() {
        Some(hub) => (
            hub.live.clone(),
            hub.lifecycle.iter().map(|(l, c)| (l.clone(), *c)).collect(),
        ),
        None => Default::default(),
    }
}
