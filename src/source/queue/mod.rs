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

//! Every bucket the source reads, in one registry: its partition's name, its stamp (message
//! id and headers) and the records fetched from it but not yet handed over. Discovery adds
//! and removes whole partitions here; [`Buckets::drain`] moves queued records into a batch.
//!
//! A bucket in its snapshot phase (`starting_offset = "full"`) queues its snapshot ([`HandOver`]) ahead
//! of its changelog records, filtered and stamped here like them ([`crate::snapshot::hand_over`]): the
//! snapshot's rows are handed over first, and when the last of them is in a batch the
//! bucket's position becomes the offset its changelog continues at.
//!
//! With a `filter`, records are filtered as they are queued ([`Filter::select`]); the offset
//! after the last polled record is kept as the bucket's `end`, so once the kept records are
//! consumed the position moves past the filtered-out ones too (nothing is re-read after a
//! restart, and a bucket whose records all fail the filter still advances).
//!
//! Nothing here touches the network, so queueing and draining are tested on their own.
//! Those tests sit next to it, in this file.

use std::collections::{BTreeMap, HashMap, VecDeque};

use fluss::PartitionId;
use fluss::record::ScanRecord;

use crate::client::discovery::PartitionNames;
use crate::encode::Encoder;
use crate::encode::batch::Batch;
use crate::encode::stamp::{BucketStamp, Stamper};
use crate::error::{Error, Result};
use crate::filter::Filter;
use crate::metrics::SnapshotPhase;
use crate::position::{BucketKey, Offset, Position, Positions, Timestamps};
use crate::snapshot::Reads;
use crate::snapshot::files::Opened;
use crate::snapshot::hand_over::{HandOver, Report};

/// One bucket: how its messages are stamped, and its records waiting to be encoded
/// (`records[next..]`, in offset order).
struct Entry {
    stamp: BucketStamp,
    snapshot: Option<HandOver>,
    records: Vec<ScanRecord>,
    next: usize,
    /// The offset after the last record polled, filtered out or not: the bucket's position
    /// once `records` are all consumed. `None` once it is applied.
    end: Option<Offset>,
}

impl Entry {
    /// Whether anything waits to be handed over or a position still has to move (so the
    /// bucket has a turn).
    fn is_waiting(&self) -> bool {
        self.snapshot.is_some() || self.next < self.records.len() || self.end.is_some()
    }
}

/// The registry of the buckets being read.
pub struct Buckets {
    stamper: Stamper,
    partitions: PartitionNames,
    entries: HashMap<BucketKey, Entry>,
    /// Buckets with records waiting, in the order they take turns: one busy bucket cannot
    /// starve the others.
    turns: VecDeque<BucketKey>,
    /// The `filter` records must pass to be queued.
    filter: Option<Filter>,
}

/// What one [`Buckets::drain`] did.
#[derive(Default)]
pub struct Drained {
    /// Records consumed: put into the batch, or passed over by the filter.
    pub records: usize,
    /// The commit timestamp of the last row of each bucket put into the batch.
    pub times: Timestamps,
    /// Snapshots whose last row went into the batch.
    pub finished: Vec<Report>,
    /// Snapshots that could not be read on: their buckets take their snapshot again, and the
    /// scanner, which still reads their changelog, must be rebuilt.
    pub failed: Vec<(BucketKey, Error)>,
    /// Snapshot rows read, and those the filter kept.
    pub snapshot_rows: (usize, usize),
}

impl Drained {
    /// Adds what a later drain into the same batch did.
    pub fn add(&mut self, later: Drained) {
        self.records += later.records;
        self.times.extend(later.times);
        self.finished.extend(later.finished);
        self.failed.extend(later.failed);
        self.snapshot_rows.0 += later.snapshot_rows.0;
        self.snapshot_rows.1 += later.snapshot_rows.1;
    }
}

impl Buckets {
    /// A registry of `keys`, whose partitions are named by `partitions`.
    pub fn new(stamper: Stamper, partitions: PartitionNames, keys: &[BucketKey]) -> Result<Self> {
        let mut buckets = Self {
            stamper,
            partitions,
            entries: HashMap::with_capacity(keys.len()),
            turns: VecDeque::new(),
            filter: None,
        };
        for key in keys {
            buckets.insert(*key)?;
        }
        Ok(buckets)
    }

    /// Queues only the records `filter` keeps (see the module docs).
    pub fn with_filter(mut self, filter: Option<Filter>) -> Self {
        self.filter = filter;
        self
    }

    /// Partition id → name of every known partition.
    pub fn partitions(&self) -> &PartitionNames {
        &self.partitions
    }

    /// Adds a partition and its buckets `keys`.
    pub fn add_partition(
        &mut self,
        partition: PartitionId,
        name: String,
        keys: &[BucketKey],
    ) -> Result<()> {
        self.partitions.insert(partition, name);
        for key in keys {
            self.insert(*key)?;
        }
        Ok(())
    }

    /// Forgets a partition: its name, its buckets and their waiting records (the rows are
    /// gone with the partition). Returns the name it had.
    pub fn drop_partition(&mut self, partition: PartitionId) -> Option<String> {
        self.entries
            .retain(|key, _| key.partition != Some(partition));
        self.turns.retain(|key| key.partition != Some(partition));
        self.partitions.remove(&partition)
    }

    fn insert(&mut self, key: BucketKey) -> Result<()> {
        let name = key.partition.and_then(|p| self.partitions.get(&p));
        let stamp = self.stamper.bucket(key, name.map(String::as_str))?;
        self.entries.insert(
            key,
            Entry {
                stamp,
                snapshot: None,
                records: Vec::new(),
                next: 0,
                end: None,
            },
        );
        Ok(())
    }

    /// Queues newly polled records of bucket `key` (those the filter keeps) behind those
    /// already waiting, and returns how many it kept. Records of a bucket that is not
    /// registered (its partition was dropped meanwhile) are dropped.
    pub fn queue(&mut self, key: BucketKey, records: Vec<ScanRecord>) -> Result<usize> {
        let Some(entry) = self.entries.get_mut(&key) else {
            return Ok(0);
        };
        let Some(last) = records.last() else {
            return Ok(0);
        };
        let end = last.offset() + 1;
        let records = match &self.filter {
            Some(filter) => filter.select(records)?,
            None => records,
        };
        let kept = records.len();
        if !entry.is_waiting() {
            self.turns.push_back(key);
        }
        if entry.next < entry.records.len() {
            entry.records.drain(..entry.next);
            entry.records.extend(records);
        } else {
            entry.records = records;
        }
        entry.next = 0;
        entry.end = Some(end);
        Ok(kept)
    }

    /// Whether bucket `key` is registered.
    pub fn contains(&self, key: BucketKey) -> bool {
        self.entries.contains_key(&key)
    }

    /// Queues the snapshot of bucket `key` (the rows the filter keeps, stamped as that
    /// bucket's snapshot), to be handed over before its changelog records.
    pub fn queue_snapshot(&mut self, key: BucketKey, opened: Opened) -> Result<()> {
        let Some(entry) = self.entries.get_mut(&key) else {
            return Ok(());
        };
        let snapshot = HandOver::new(&entry.stamp, opened, self.filter.clone())?;
        if !entry.is_waiting() {
            self.turns.push_back(key);
        }
        entry.snapshot = Some(snapshot);
        Ok(())
    }

    /// Where the snapshot of every bucket of `positions` in its snapshot phase stands.
    pub fn snapshot_phases(&self, positions: &Positions) -> BTreeMap<BucketKey, SnapshotPhase> {
        positions
            .iter()
            .filter(|(_, position)| position.is_snapshot())
            .map(|(key, _)| {
                let snapshot = self.entries.get(key).and_then(|e| e.snapshot.as_ref());
                let phase = match snapshot {
                    Some(snapshot) => {
                        let (done, total) = snapshot.progress();
                        SnapshotPhase::HandingOver {
                            done: done as u64,
                            total: total.map(|t| t as u64),
                        }
                    }
                    None => SnapshotPhase::Waiting,
                };
                (*key, phase)
            })
            .collect()
    }

    /// Whether some bucket's snapshot is still being handed over.
    pub fn has_snapshot(&self) -> bool {
        self.entries.values().any(|e| e.snapshot.is_some())
    }

    /// The next bucket of `positions` whose snapshot is due: the first read here in its
    /// snapshot phase, none while a snapshot is being handed over (one at a time).
    pub fn snapshot_due(&self, positions: &Positions) -> Option<BucketKey> {
        if self.has_snapshot() {
            return None;
        }
        positions
            .iter()
            .find(|(key, position)| position.is_snapshot() && self.contains(**key))
            .map(|(key, _)| *key)
    }

    /// The positions the changelog scanner reads: `positions`, where a bucket whose snapshot
    /// is being handed over reads from the offset its snapshot continues at, and a bucket
    /// whose snapshot is not taken yet is not read.
    pub fn reading(&self, positions: &Positions) -> Positions {
        positions
            .iter()
            .filter_map(|(key, position)| {
                if !position.is_snapshot() {
                    return Some((*key, *position));
                }
                let snapshot = self.entries.get(key)?.snapshot.as_ref()?;
                Some((*key, Position::At(snapshot.continue_at())))
            })
            .collect()
    }

    /// Drops every waiting changelog record (the scanner is rebuilt and fetches them again);
    /// snapshots being handed over stay.
    pub fn clear_queued(&mut self) {
        for entry in self.entries.values_mut() {
            entry.records = Vec::new();
            entry.next = 0;
            entry.end = None;
        }
        let entries = &self.entries;
        self.turns
            .retain(|key| entries.get(key).is_some_and(Entry::is_waiting));
    }

    /// Drops every snapshot being handed over and every waiting record (a Nack: the buckets
    /// whose snapshot was not acknowledged take it again).
    pub fn clear_all(&mut self) {
        for entry in self.entries.values_mut() {
            entry.snapshot = None;
        }
        self.clear_queued();
    }

    /// Moves waiting records into `batch` with `encoder` until the batch is full or nothing
    /// waits, advancing `positions` past every record consumed. Buckets take turns. Returns
    /// what it did; a failed encoding leaves the bucket first in line.
    pub fn drain(
        &mut self,
        encoder: &mut dyn Encoder,
        batch: &mut Batch,
        positions: &mut Positions,
    ) -> Result<Drained> {
        let mut drained = Drained::default();
        for _ in 0..self.turns.len() {
            if batch.is_full() {
                break;
            }
            let Some(key) = self.turns.pop_front() else {
                break;
            };
            let Some(entry) = self.entries.get_mut(&key) else {
                continue;
            };
            if let Some(snapshot) = entry.snapshot.as_mut() {
                // Read batch after read batch until the batch is full: a turn is not one read
                // batch, or a snapshot would hand over one read batch per poll.
                loop {
                    let rows = snapshot.chunk();
                    let consumed = match encoder.encode(snapshot.stamp(), &rows, batch) {
                        Ok(consumed) => consumed,
                        Err(error) => {
                            self.turns.push_front(key);
                            return Err(error);
                        }
                    };
                    drained.records += consumed;
                    if let Some(last) = consumed.checked_sub(1).and_then(|i| rows.get(i)) {
                        drained.times.insert(key, last.timestamp());
                    }
                    // Before the next batch is read: the records hold the current one, which
                    // goes back to its reader when its rows are used up.
                    drop(rows);
                    snapshot.advance(consumed);
                    let (fetched, kept) = snapshot.take_counts();
                    drained.snapshot_rows.0 += fetched;
                    drained.snapshot_rows.1 += kept;
                    if let Some(error) = snapshot.failure() {
                        // Its rows so far stay delivered; the bucket's snapshot is taken again
                        // (it is still in its snapshot phase) and its changelog records go.
                        entry.snapshot = None;
                        entry.records = Vec::new();
                        entry.next = 0;
                        entry.end = None;
                        drained.failed.push((key, error));
                        break;
                    }
                    if let (Some(resume), Some(Position::Snapshot { floor, .. })) =
                        (snapshot.resume(), positions.get(&key))
                    {
                        let floor = *floor;
                        let resume = Some(resume);
                        positions.insert(key, Position::Snapshot { floor, resume });
                    }
                    if snapshot.is_done() {
                        positions.insert(key, Position::At(snapshot.continue_at()));
                        drained.finished.push(snapshot.report);
                        entry.snapshot = None;
                        break;
                    }
                    if consumed == 0 || batch.is_full() {
                        break;
                    }
                }
                if entry.is_waiting() {
                    self.turns.push_back(key);
                }
                continue;
            }
            let records = &entry.records[entry.next..];
            let encoded = if records.is_empty() {
                Ok(0)
            } else {
                encoder.encode(&entry.stamp, records, batch)
            };
            let consumed = match encoded {
                Ok(consumed) => consumed,
                Err(error) => {
                    self.turns.push_front(key);
                    return Err(error);
                }
            };
            if consumed > 0 {
                let last = &records[consumed - 1];
                positions.insert(key, Position::At(last.offset() + 1));
                drained.times.insert(key, last.timestamp());
                entry.next += consumed;
                drained.records += consumed;
            }
            if entry.next < entry.records.len() {
                self.turns.push_back(key);
            } else {
                entry.records = Vec::new();
                entry.next = 0;
                if let Some(end) = entry.end.take() {
                    positions.insert(key, Position::At(end));
                }
            }
        }
        Ok(drained)
    }
}

impl Reads for Buckets {
    fn reads(&self, key: BucketKey) -> bool {
        self.contains(key)
    }

    fn partitions(&self) -> &PartitionNames {
        &self.partitions
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Int64Array, RecordBatch};
    use arrow_schema::{DataType, Field, Schema};
    use fluss::metadata::{DataField, DataTypes, RowType};
    use fluss::record::ChangeType;
    use fluss::row::ColumnarRow;

    use super::*;
    use crate::config::options::HeaderSet;

    /// Encodes each record as a message holding its offset, at most `limit` per call.
    struct Offsets {
        limit: usize,
    }

    impl Encoder for Offsets {
        fn encode(
            &mut self,
            bucket: &BucketStamp,
            records: &[ScanRecord],
            batch: &mut Batch,
        ) -> Result<usize> {
            let mut consumed = 0;
            for record in records.iter().take(self.limit) {
                if batch.is_full() {
                    break;
                }
                let payload = format!("{}/{}", bucket.key().bucket, record.offset()).into_bytes();
                batch.push(bucket.row(record.offset(), 0, None, 1, payload));
                consumed += 1;
            }
            Ok(consumed)
        }
    }

    /// Records at `offsets` whose column `v` holds their offset.
    fn records(offsets: std::ops::Range<i64>) -> Vec<ScanRecord> {
        let schema = Arc::new(Schema::new(vec![Field::new("v", DataType::Int64, false)]));
        let batch = Arc::new(
            RecordBatch::try_new(
                schema,
                vec![Arc::new(Int64Array::from_iter_values(offsets.clone()))],
            )
            .unwrap(),
        );
        let row_type = Arc::new(RowType::new(vec![DataField::new(
            "v",
            DataTypes::bigint(),
            None,
        )]));
        offsets
            .enumerate()
            .map(|(i, offset)| {
                let row = ColumnarRow::new(batch.clone(), row_type.clone(), i, None).unwrap();
                ScanRecord::new(row, offset, 0, ChangeType::AppendOnly)
            })
            .collect()
    }

    fn registry(keys: &[BucketKey]) -> Buckets {
        let stamper = Stamper::new(1, "db.t", HeaderSet::NONE).unwrap();
        Buckets::new(stamper, PartitionNames::new(), keys).unwrap()
    }

    fn payloads(batch: Batch) -> Vec<String> {
        batch
            .into_messages()
            .unwrap()
            .into_iter()
            .map(|m| String::from_utf8(m.payload).unwrap())
            .collect()
    }

    const B0: BucketKey = BucketKey::bucket(0);
    const B1: BucketKey = BucketKey::bucket(1);

    #[test]
    fn buckets_take_turns_and_keep_their_order() {
        let mut buckets = registry(&[B0, B1]);
        buckets.queue(B0, records(0..4)).unwrap();
        buckets.queue(B1, records(10..12)).unwrap();
        let mut batch = Batch::new(100, usize::MAX);
        let mut positions = Positions::new();
        let consumed = buckets
            .drain(&mut Offsets { limit: 2 }, &mut batch, &mut positions)
            .unwrap()
            .records;
        assert_eq!(consumed, 4, "one turn each, two records per turn");
        assert_eq!(payloads(batch), ["0/0", "0/1", "1/10", "1/11"]);
        assert_eq!(positions.get(&B0), Some(&Position::At(2)));
        assert_eq!(positions.get(&B1), Some(&Position::At(12)));
        let mut batch = Batch::new(100, usize::MAX);
        buckets
            .drain(&mut Offsets { limit: 2 }, &mut batch, &mut positions)
            .unwrap();
        assert_eq!(payloads(batch), ["0/2", "0/3"], "the rest of bucket 0 next");
        assert_eq!(positions.get(&B0), Some(&Position::At(4)));
    }

    #[test]
    fn a_full_batch_leaves_records_queued_in_order() {
        let mut buckets = registry(&[B0]);
        buckets.queue(B0, records(0..5)).unwrap();
        let mut batch = Batch::new(3, usize::MAX);
        let mut positions = Positions::new();
        buckets
            .drain(&mut Offsets { limit: 100 }, &mut batch, &mut positions)
            .unwrap();
        assert_eq!(payloads(batch), ["0/0", "0/1", "0/2"]);
        buckets.queue(B0, records(5..7)).unwrap();
        let mut batch = Batch::new(100, usize::MAX);
        buckets
            .drain(&mut Offsets { limit: 100 }, &mut batch, &mut positions)
            .unwrap();
        assert_eq!(
            payloads(batch),
            ["0/3", "0/4", "0/5", "0/6"],
            "newly polled records queue behind the waiting ones"
        );
        assert_eq!(positions.get(&B0), Some(&Position::At(7)));
    }

    #[test]
    fn an_encoder_may_leave_records_for_later() {
        let mut buckets = registry(&[B0]);
        buckets.queue(B0, records(0..3)).unwrap();
        let mut positions = Positions::new();
        let mut batch = Batch::new(100, usize::MAX);
        let consumed = buckets
            .drain(&mut Offsets { limit: 0 }, &mut batch, &mut positions)
            .unwrap()
            .records;
        assert_eq!(consumed, 0);
        assert!(positions.is_empty(), "nothing consumed, nothing moves");
        let consumed = buckets
            .drain(&mut Offsets { limit: 100 }, &mut batch, &mut positions)
            .unwrap()
            .records;
        assert_eq!(consumed, 3, "the records were still queued");
    }

    #[test]
    fn a_dropped_partition_takes_its_queued_records_along() {
        let p = |bucket| BucketKey {
            partition: Some(7),
            bucket,
        };
        let stamper = Stamper::new(1, "db.t", HeaderSet::ALL).unwrap();
        let mut buckets = Buckets::new(stamper, PartitionNames::new(), &[B0]).unwrap();
        buckets
            .add_partition(7, "2026".into(), &[p(0), p(1)])
            .unwrap();
        assert_eq!(
            buckets.partitions().get(&7).map(String::as_str),
            Some("2026")
        );
        buckets.queue(p(0), records(0..2)).unwrap();
        buckets.queue(B0, records(0..1)).unwrap();
        assert_eq!(buckets.drop_partition(7).as_deref(), Some("2026"));
        buckets.queue(p(1), records(0..2)).unwrap();
        let mut batch = Batch::new(100, usize::MAX);
        let mut positions = Positions::new();
        buckets
            .drain(&mut Offsets { limit: 100 }, &mut batch, &mut positions)
            .unwrap();
        assert_eq!(
            payloads(batch),
            ["0/0"],
            "only the unpartitioned bucket is left"
        );
        assert_eq!(positions.len(), 1);
    }

    #[test]
    fn clearing_drops_every_queued_record() {
        let mut buckets = registry(&[B0, B1]);
        buckets.queue(B0, records(0..2)).unwrap();
        buckets.queue(B1, records(0..2)).unwrap();
        buckets.clear_queued();
        let mut batch = Batch::new(100, usize::MAX);
        let mut positions = Positions::new();
        assert_eq!(
            buckets
                .drain(&mut Offsets { limit: 100 }, &mut batch, &mut positions)
                .unwrap()
                .records,
            0
        );
        buckets.queue(B1, records(2..3)).unwrap();
        buckets
            .drain(&mut Offsets { limit: 100 }, &mut batch, &mut positions)
            .unwrap();
        assert_eq!(payloads(batch), ["1/2"]);
    }

    fn filtered(text: &str) -> Buckets {
        let fields = [DataField::new("v", DataTypes::bigint(), None)];
        let text = crate::filter::FilterText::parse(text).unwrap();
        let filter = Filter::new(&text, &fields, &fields, false).unwrap();
        registry(&[B0]).with_filter(Some(filter))
    }

    #[test]
    fn filtered_out_records_are_not_delivered_but_move_the_position() {
        let mut buckets = filtered("v = 1 OR v >= 5");
        buckets.queue(B0, records(0..4)).unwrap();
        buckets.queue(B0, records(4..7)).unwrap();
        let mut batch = Batch::new(100, usize::MAX);
        let mut positions = Positions::new();
        let consumed = buckets
            .drain(&mut Offsets { limit: 100 }, &mut batch, &mut positions)
            .unwrap()
            .records;
        assert_eq!(consumed, 3);
        assert_eq!(payloads(batch), ["0/1", "0/5", "0/6"]);
        assert_eq!(positions.get(&B0), Some(&Position::At(7)));
    }

    #[test]
    fn a_poll_with_no_match_still_moves_the_position() {
        let mut buckets = filtered("v > 100");
        buckets.queue(B0, records(0..3)).unwrap();
        let mut batch = Batch::new(100, usize::MAX);
        let mut positions = Positions::new();
        buckets
            .drain(&mut Offsets { limit: 100 }, &mut batch, &mut positions)
            .unwrap();
        assert!(batch.is_empty());
        assert_eq!(
            positions.get(&B0),
            Some(&Position::At(3)),
            "past the filtered-out records"
        );
        let mut batch = Batch::new(100, usize::MAX);
        buckets
            .drain(&mut Offsets { limit: 100 }, &mut batch, &mut positions)
            .unwrap();
        assert_eq!(positions.get(&B0), Some(&Position::At(3)), "applied once");
    }

    #[test]
    fn the_end_waits_while_kept_records_wait() {
        let mut buckets = filtered("v >= 1");
        buckets.queue(B0, records(0..4)).unwrap();
        let mut batch = Batch::new(2, usize::MAX);
        let mut positions = Positions::new();
        buckets
            .drain(&mut Offsets { limit: 100 }, &mut batch, &mut positions)
            .unwrap();
        assert_eq!(payloads(batch), ["0/1", "0/2"]);
        assert_eq!(
            positions.get(&B0),
            Some(&Position::At(3)),
            "only past what was delivered"
        );
    }

    #[test]
    fn a_snapshot_goes_first_and_its_last_row_moves_the_position_to_its_offset() {
        let mut buckets = registry(&[B0, B1]);
        buckets.queue(B0, records(40..42)).unwrap();
        buckets
            .queue_snapshot(B0, crate::snapshot::hand_over::tests::opened(3, 40))
            .unwrap();
        buckets.queue(B1, records(7..8)).unwrap();
        assert!(buckets.has_snapshot());
        let mut positions: Positions = [(B0, Position::SNAPSHOT), (B1, Position::At(7))]
            .into_iter()
            .collect();
        assert_eq!(
            buckets.reading(&positions),
            [(B0, Position::At(40)), (B1, Position::At(7))]
                .into_iter()
                .collect(),
            "the changelog is read from where the snapshot leaves off"
        );
        let mut batch = Batch::new(2, usize::MAX);
        let drained = buckets
            .drain(&mut Offsets { limit: 100 }, &mut batch, &mut positions)
            .unwrap();
        assert_eq!(payloads(batch), ["0/0", "0/1"], "snapshot rows by index");
        assert_eq!(
            positions.get(&B0),
            Some(&Position::SNAPSHOT),
            "a partly handed over snapshot keeps the bucket pending"
        );
        assert!(drained.finished.is_empty());
        assert_eq!(
            drained.snapshot_rows,
            (3, 3),
            "its one read batch was read whole"
        );
        assert_eq!(drained.times.len(), 1);
        let mut batch = Batch::new(100, usize::MAX);
        let drained = buckets
            .drain(&mut Offsets { limit: 100 }, &mut batch, &mut positions)
            .unwrap();
        assert_eq!(payloads(batch), ["1/7", "0/2"], "buckets take turns");
        assert_eq!(drained.records, 2);
        let finished = drained.finished;
        assert_eq!(
            finished.len(),
            1,
            "the snapshot's last row was in this batch"
        );
        assert_eq!(
            (finished[0].key, finished[0].rows, finished[0].continue_at),
            (B0, 3, 40)
        );
        assert_eq!(
            positions.get(&B0),
            Some(&Position::At(40)),
            "the last snapshot row moves the bucket to where its changelog continues"
        );
        let mut batch = Batch::new(100, usize::MAX);
        let drained = buckets
            .drain(&mut Offsets { limit: 100 }, &mut batch, &mut positions)
            .unwrap();
        assert_eq!(payloads(batch), ["0/40", "0/41"], "the changelog follows");
        assert_eq!(positions.get(&B0), Some(&Position::At(42)));
        assert!(drained.finished.is_empty(), "reported once");
        assert!(!buckets.has_snapshot());
    }

    #[test]
    fn a_snapshot_is_due_for_the_first_bucket_read_in_its_snapshot_phase_one_at_a_time() {
        let b = BucketKey::bucket;
        let mut buckets = registry(&[b(1), b(2)]);
        let positions = Positions::from([
            (b(0), Position::SNAPSHOT),
            (b(1), Position::At(5)),
            (b(2), Position::SNAPSHOT),
        ]);
        assert_eq!(
            buckets.snapshot_due(&positions),
            Some(b(2)),
            "bucket 0 is not read here"
        );
        buckets
            .queue_snapshot(b(2), crate::snapshot::hand_over::tests::opened(3, 7))
            .unwrap();
        assert_eq!(
            buckets.snapshot_due(&positions),
            None,
            "one is being handed over"
        );
        assert_eq!(buckets.snapshot_due(&Positions::new()), None);
    }

    #[test]
    fn a_nack_drops_snapshots_but_a_rebuild_keeps_them() {
        let mut buckets = registry(&[B0]);
        buckets
            .queue_snapshot(B0, crate::snapshot::hand_over::tests::opened(3, 40))
            .unwrap();
        buckets.queue(B0, records(40..41)).unwrap();
        buckets.clear_queued();
        assert!(
            buckets.has_snapshot(),
            "a scanner rebuild keeps the snapshot"
        );
        let pending: Positions = [(B0, Position::SNAPSHOT)].into_iter().collect();
        buckets.clear_all();
        assert!(!buckets.has_snapshot());
        assert!(
            buckets.reading(&pending).is_empty(),
            "a bucket without its snapshot is not read"
        );
        let mut batch = Batch::new(100, usize::MAX);
        let mut positions = pending.clone();
        assert_eq!(
            buckets
                .drain(&mut Offsets { limit: 100 }, &mut batch, &mut positions)
                .unwrap()
                .records,
            0
        );
        assert_eq!(positions, pending);
    }

    #[test]
    fn stamps_are_named_after_their_partition() {
        let stamper = Stamper::new(1, "db.t", HeaderSet::ALL).unwrap();
        let key = BucketKey {
            partition: Some(3),
            bucket: 0,
        };
        let names: PartitionNames = [(3, "eu".to_owned())].into_iter().collect();
        let mut buckets = Buckets::new(stamper, names, &[key]).unwrap();
        buckets.queue(key, records(0..1)).unwrap();
        struct Name(Option<String>);
        impl Encoder for Name {
            fn encode(
                &mut self,
                b: &BucketStamp,
                r: &[ScanRecord],
                _: &mut Batch,
            ) -> Result<usize> {
                self.0 = b.partition_name().map(str::to_owned);
                Ok(r.len())
            }
        }
        let mut name = Name(None);
        buckets
            .drain(
                &mut name,
                &mut Batch::new(10, usize::MAX),
                &mut Positions::new(),
            )
            .unwrap();
        assert_eq!(name.0.as_deref(), Some("eu"));
    }
}
