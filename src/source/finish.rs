//! The source's part in scale-out, bounded reads and partition pruning: the stop point at
//! open, buckets leaving the scanner once done, and the polls after a bounded read finished.
//! The rules themselves are pure, in [`crate::scope`].

use std::time::Duration;

use iggy_connector_sdk::ProducedMessages;

use super::FlussSource;
use crate::client::discovery::PartitionNames;
use crate::client::offsets;
use crate::client::table::Table;
use crate::config::options::StartingOffset;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::position::progress::Tally;
use crate::position::{BucketKey, Offsets, Positions};
use crate::scope::stop::{self, Bound, Plan, Stop, StoppingOffset};
use crate::state::SavedState;

/// The stop point in force at open, and whether it was taken now (no state holds it yet).
/// A new stop point covers `keys`, the buckets this instance reads at this moment.
pub(super) async fn open(
    table: &Table,
    keys: &[BucketKey],
    partitions: &PartitionNames,
    configured: Option<StoppingOffset>,
    saved: Option<&SavedState>,
) -> Result<(Bound, bool)> {
    let plan = stop::plan(configured, saved.and_then(|s| s.stop.as_ref())).map_err(|m| {
        Error::StateStop {
            saved: m.saved,
            configured: m.configured,
        }
    })?;
    Ok(match plan {
        Plan::Unbounded => (Bound::unbounded(), false),
        Plan::Keep(stop) => (Bound::new(stop), false),
        Plan::Take(at) => {
            // A stop offset is found exactly like a starting offset of the same spelling.
            let spec = match at {
                StoppingOffset::Latest => StartingOffset::Latest,
                StoppingOffset::Timestamp(ms) => StartingOffset::Timestamp(ms),
            };
            let offsets = offsets::resolve(table, keys, partitions, spec).await?;
            (Bound::new(Stop { at, offsets }), true)
        }
    })
}

/// What the open line says about this instance's share of the table (empty by default).
pub(super) fn share(config: &Config, bound: &Bound) -> String {
    let mut share = String::new();
    if config.assignment.count > 1 {
        share += &format!(", {}", config.assignment);
    }
    if let Some(filter) = &config.partitions {
        share += &format!(", partitions {filter}");
    }
    if let Some(stop) = bound.stop() {
        share += &format!(", stopping at {}", stop.at);
    }
    share
}

impl FlussSource {
    /// Unsubscribes the buckets `positions` finished (their stop offset reached in this
    /// poll): the scanner stops fetching rows that would only be trimmed. A failure only
    /// costs fetches, so it is ignored.
    pub(super) async fn unsubscribe_done(&mut self, positions: &Positions) {
        let Some(scanner) = self.scanner.as_ref() else {
            return;
        };
        let current = self.progress.current();
        for (key, next) in positions {
            let was_done = current
                .get(key)
                .is_some_and(|before| self.bound.is_done(key, *before));
            if self.bound.is_done(key, *next) && !was_done {
                let _ = scanner.unsubscribe(*key).await;
            }
        }
    }

    /// A poll once every bucket reached its stop: nothing is read any more. The `finished`
    /// line is logged once everything delivered was acknowledged; a stop point not saved yet
    /// still goes out in a batch of its own.
    pub(super) async fn idle_when_finished(&mut self) -> Result<ProducedMessages> {
        self.idle_since = None;
        if !self.finished && self.bound.finished(self.progress.committed()) {
            self.finished = true;
            if let Some(stop) = self.bound.stop() {
                self.telemetry.finished(&stop.offsets);
            }
        }
        let state = self.stage(
            self.progress.current().clone(),
            Tally::default(),
            Offsets::new(),
        )?;
        if state.is_none() {
            tokio::time::sleep(self.config.poll_interval.max(Duration::from_millis(1))).await;
        }
        Ok(ProducedMessages {
            schema: self.schema,
            messages: Vec::new(),
            state,
        })
    }
}
