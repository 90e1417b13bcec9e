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

//! The high watermarks the source knows of the buckets it reads, for the progress line's lag
//! and the metrics. [`Watermarks`] lists them a slice of partitions at a time (see
//! [`Rotation`]), every [`LISTING_INTERVAL`] while records flow, in a task of its own so the
//! request never holds up a poll; while the table is idle the liveness probe's listings (the
//! same walk) take their place. A table of P partitions thus costs the same requests per
//! second whatever P is, and a bucket's high watermark is at most ⌈P / 8⌉ listings old.

use std::time::{Duration, Instant};

use fluss::rpc::message::OffsetSpec;
use tokio::sync::oneshot::{self, error::TryRecvError};

use crate::client::discovery::PartitionNames;
use crate::client::offsets;
use crate::context::Context;
use crate::metrics::Metrics;
use crate::position::{BucketKey, Offsets, Positions};
use crate::source::rotation::Rotation;

/// How often a slice of the high watermarks is listed while records flow (and how often the
/// liveness probe lists one while they do not): a scrape every 15 s or more sees every change
/// of lag on a table of up to 8 partitions.
pub(super) const LISTING_INTERVAL: Duration = Duration::from_secs(5);

/// A listing, under way or done.
struct Listing {
    at: Instant,
    /// The listed high watermarks, sent when its task ends. The channel closes without them
    /// if the listing failed (the liveness probe reports outages, so a failure only leaves
    /// the known values), and once they were taken in: either way the listing has ended.
    answer: oneshot::Receiver<Offsets>,
}

/// The known high watermarks, and the walk and listing that keep them current.
#[derive(Default)]
pub(super) struct Watermarks {
    known: Offsets,
    rotation: Rotation,
    /// The last listing, `None` before the first.
    listing: Option<Listing>,
}

impl Watermarks {
    /// The buckets of `reading` the next listing asks about (the walk moves past them); a
    /// partition without a name cannot be asked about and is left out.
    pub(super) fn next_slice(
        &mut self,
        reading: &Positions,
        partitions: &PartitionNames,
    ) -> Vec<BucketKey> {
        self.rotation.next(
            reading
                .keys()
                .filter(|key| key.partition.is_none_or(|p| partitions.contains_key(&p)))
                .copied(),
        )
    }

    /// Takes in high watermarks just listed (and reports them to the metrics).
    pub(super) fn record(&mut self, latest: &Offsets, metrics: &Metrics) {
        metrics.high_watermarks(latest);
        self.known.extend(latest);
    }

    /// The known high watermark of every bucket listed so far.
    pub(super) fn known(&self) -> &Offsets {
        &self.known
    }

    /// Forgets buckets no longer read (their partition was dropped).
    pub(super) fn retain(&mut self, reading: &Positions) {
        self.known.retain(|key, _| reading.contains_key(key));
    }

    /// Takes in a finished listing's answer, then starts the next slice's listing in a task
    /// when one is due (see [`Self::settle`]).
    pub(super) fn list_when_due(
        &mut self,
        now: Instant,
        reading: &Positions,
        partitions: &PartitionNames,
        ctx: &Context,
    ) {
        if !self.settle(now) {
            return;
        }
        let keys = self.next_slice(reading, partitions);
        let table = ctx.table.clone();
        // The names of the slice's partitions only.
        let names: PartitionNames = keys
            .iter()
            .filter_map(|key| key.partition)
            .filter_map(|p| Some((p, partitions.get(&p)?.clone())))
            .collect();
        // The metrics get the answer at once, not at the next poll, which may be far off
        // while the runtime is busy with the batch before.
        let sink = ctx.telemetry.metrics().sink();
        let (tx, answer) = oneshot::channel();
        tokio::spawn(async move {
            if let Ok(latest) = offsets::list(&table, &keys, &names, OffsetSpec::Latest).await {
                if let Some(sink) = sink {
                    sink.high_watermarks(&latest);
                }
                let _ = tx.send(latest);
            }
        });
        self.listing = Some(Listing { at: now, answer });
    }

    /// Takes in the last listing's answer once it ended; whether the next listing is due at
    /// `now`: never listed yet, or [`LISTING_INTERVAL`] after the last one once it ended (one
    /// at a time).
    fn settle(&mut self, now: Instant) -> bool {
        let Some(listing) = &mut self.listing else {
            return true;
        };
        let at = listing.at;
        match listing.answer.try_recv() {
            Err(TryRecvError::Empty) => return false,
            Ok(latest) => self.known.extend(latest),
            Err(TryRecvError::Closed) => {}
        }
        now.saturating_duration_since(at) >= LISTING_INTERVAL
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(partition: i64, bucket: i32) -> BucketKey {
        BucketKey {
            partition: Some(partition),
            bucket,
        }
    }

    #[test]
    fn slices_leave_out_partitions_without_a_name_and_known_values_follow_the_buckets_read() {
        let mut watermarks = Watermarks::default();
        let reading: Positions = (0..3)
            .map(|p| (key(p, 0), crate::position::Position::At(0)))
            .collect();
        let names: PartitionNames = [(0, "a".to_owned()), (2, "c".to_owned())].into();
        assert_eq!(
            watermarks.next_slice(&reading, &names),
            vec![key(0, 0), key(2, 0)]
        );
        let metrics = Metrics::off();
        watermarks.record(&[(key(0, 0), 5), (key(1, 0), 7)].into(), &metrics);
        watermarks.record(&[(key(0, 0), 9)].into(), &metrics);
        assert_eq!(
            watermarks.known(),
            &Offsets::from([(key(0, 0), 9), (key(1, 0), 7)])
        );
        watermarks.retain(
            &reading
                .into_iter()
                .filter(|(k, _)| k.partition != Some(1))
                .collect(),
        );
        assert_eq!(watermarks.known(), &Offsets::from([(key(0, 0), 9)]));
    }

    #[test]
    fn a_listing_is_due_at_once_then_an_interval_after_the_last_one_ended() {
        const SECOND: Duration = Duration::from_secs(1);
        let start = Instant::now();
        let mut watermarks = Watermarks::default();
        assert!(watermarks.settle(start), "never listed yet");
        let (tx, answer) = oneshot::channel();
        watermarks.listing = Some(Listing { at: start, answer });
        assert!(!watermarks.settle(start + 9 * SECOND), "still running");
        assert!(watermarks.known().is_empty());
        tx.send(Offsets::from([(key(0, 1), 42)])).unwrap();
        assert!(
            !watermarks.settle(start + 4 * SECOND),
            "an interval not over"
        );
        assert_eq!(watermarks.known(), &Offsets::from([(key(0, 1), 42)]));
        assert!(watermarks.settle(start + 5 * SECOND));

        // A listing that failed sends nothing: it has ended all the same.
        let (tx, answer) = oneshot::channel::<Offsets>();
        watermarks.listing = Some(Listing { at: start, answer });
        drop(tx);
        assert!(watermarks.settle(start + 5 * SECOND));
        assert_eq!(watermarks.known().len(), 1, "the known values stay");
    }
}
