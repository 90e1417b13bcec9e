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

//! Work between batches and when it is due: the liveness probe while no records arrive,
//! partition discovery, the high watermarks, and the progress line. [`Upkeep`] keeps the
//! timers (each decision takes the time, so the rules are tested without waiting) and the
//! known high watermarks; the work itself is the owner's of what it touches
//! ([`super::recovery`] probes, [`super::partition_changes`] discovers, [`Watermarks`] lists).

use std::time::{Duration, Instant};

use crate::position::progress::Progress;
use crate::source::watermarks::{LISTING_INTERVAL, Watermarks};
use crate::telemetry::Telemetry;

/// fluss-rs' `poll` returns nothing, without an error, while the servers are down. After this
/// long without records the source asks the cluster for its offsets, so an outage shows up as
/// a WARN instead of a silent stall. The probe's listing also keeps the high watermarks
/// current while records do not flow, so it runs as often as their listing otherwise would.
const LIVENESS_INTERVAL: Duration = LISTING_INTERVAL;

/// Whether client polls return records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    /// The last poll returned records (or nothing was polled yet).
    Records,
    /// Polls return nothing since then.
    IdleSince(Instant),
}

/// The timers of the work between batches, and the high watermarks it keeps.
pub(super) struct Upkeep {
    flow: Flow,
    last_liveness: Instant,
    last_discovery: Instant,
    watermarks: Watermarks,
}

impl Upkeep {
    /// Timers started at `now`: the first probe and discovery are an interval away.
    pub(super) fn new(now: Instant) -> Self {
        Self {
            flow: Flow::Records,
            last_liveness: now,
            last_discovery: now,
            watermarks: Watermarks::default(),
        }
    }

    /// The known high watermarks (the liveness probe lists them while idle).
    pub(super) fn watermarks(&mut self) -> &mut Watermarks {
        &mut self.watermarks
    }

    /// Polls are not idle: records arrived, or reading paused on purpose (a bounded read
    /// finished), which is no outage either.
    pub(super) fn not_idle(&mut self) {
        self.flow = Flow::Records;
    }

    /// A client poll returned nothing at `now`.
    pub(super) fn nothing_arrived(&mut self, now: Instant) {
        if self.flow == Flow::Records {
            self.flow = Flow::IdleSince(now);
        }
    }

    /// Whether the liveness probe is due at `now`: no records for [`LIVENESS_INTERVAL`], and
    /// no probe for as long. Being due starts the next interval.
    pub(super) fn liveness_due(&mut self, now: Instant) -> bool {
        let Flow::IdleSince(since) = self.flow else {
            return false;
        };
        let due = now.saturating_duration_since(since) >= LIVENESS_INTERVAL
            && now.saturating_duration_since(self.last_liveness) >= LIVENESS_INTERVAL;
        if due {
            self.last_liveness = now;
        }
        due
    }

    /// Whether partition discovery is due at `now`, every `interval` (zero: never). Being
    /// due starts the next interval.
    pub(super) fn discovery_due(&mut self, now: Instant, interval: Duration) -> bool {
        let due =
            !interval.is_zero() && now.saturating_duration_since(self.last_discovery) >= interval;
        if due {
            self.last_discovery = now;
        }
        due
    }

    /// Whether records flow: then the high watermarks are listed in their own walk (see
    /// [`Watermarks::list_when_due`]); while they do not, the liveness probe lists them.
    pub(super) fn records_flow(&self) -> bool {
        self.flow == Flow::Records
    }

    /// The progress line, when due: the known high watermarks of the buckets read against
    /// where reading stands.
    pub(super) fn progress_line(&self, progress: &Progress, telemetry: &mut Telemetry) {
        if telemetry.progress_due() {
            telemetry.progress(progress.current(), self.watermarks.known());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    #[test]
    fn the_liveness_probe_is_due_after_an_interval_without_records_and_without_probes() {
        let start = Instant::now();
        let mut upkeep = Upkeep::new(start);
        assert!(
            !upkeep.liveness_due(start + 60 * SECOND),
            "records flow: no probe"
        );
        upkeep.nothing_arrived(start + SECOND);
        upkeep.nothing_arrived(start + 3 * SECOND);
        assert!(
            !upkeep.liveness_due(start + 5 * SECOND),
            "idle for 4 s only (since the first empty poll)"
        );
        assert!(upkeep.liveness_due(start + 6 * SECOND));
        assert!(
            !upkeep.liveness_due(start + 8 * SECOND),
            "the probe just ran"
        );
        assert!(upkeep.liveness_due(start + 11 * SECOND));
        upkeep.not_idle();
        assert!(!upkeep.liveness_due(start + 30 * SECOND));
        upkeep.nothing_arrived(start + 30 * SECOND);
        assert!(
            !upkeep.liveness_due(start + 34 * SECOND),
            "a new idle spell waits its own interval"
        );
        assert!(upkeep.liveness_due(start + 35 * SECOND));
    }

    #[test]
    fn the_liveness_probe_waits_an_interval_after_the_start() {
        let start = Instant::now();
        let mut upkeep = Upkeep::new(start);
        upkeep.nothing_arrived(start);
        assert!(!upkeep.liveness_due(start + 4 * SECOND));
        assert!(upkeep.liveness_due(start + 5 * SECOND));
    }

    #[test]
    fn discovery_is_due_every_interval_and_never_with_a_zero_interval() {
        let start = Instant::now();
        let mut upkeep = Upkeep::new(start);
        let interval = 10 * SECOND;
        assert!(!upkeep.discovery_due(start + 9 * SECOND, interval));
        assert!(upkeep.discovery_due(start + 12 * SECOND, interval));
        assert!(
            !upkeep.discovery_due(start + 21 * SECOND, interval),
            "the interval counts from the last discovery"
        );
        assert!(upkeep.discovery_due(start + 22 * SECOND, interval));
        assert!(!upkeep.discovery_due(start + 3600 * SECOND, Duration::ZERO));
    }
}
