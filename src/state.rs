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

//! The persisted state: what goes through the runtime's state file (the in-memory staging
//! until Ack is [`crate::position::progress`]). What is persisted is a versioned
//! MessagePack record of the table id and the committed positions, so state written for another
//! table (dropped and re-created, or renamed) is refused instead of silently misapplied.
//!
//! The record is followed by its checksum (format 2): the CRC-32C of the record's bytes as a
//! MessagePack uint32. A file damaged in a way that still decodes would otherwise resume at
//! wrong offsets without a word; with the checksum it is refused at `open`. Records of format
//! 1, written before the checksum, still load.
//!
//! A bucket still in its snapshot phase (`starting_offset = "full"`,
//! [`Position::Snapshot`]) is persisted in a list of its own (`snapshots`), as a negative
//! marker (see [`marker`]), so a restart takes that bucket's snapshot again. The record's
//! layout is fixed: positions are converted to and from it here and nowhere else.
//!
//! Its tests (every older record shape and the saved fixture bytes) sit next to it, in this file.

use crate::sdk::ConnectorState;
use fluss::{BucketId, PartitionId, TableId};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::position::{BucketKey, Offset, Offsets, Position, Positions, Resume, at};
use crate::scope::share::Assignment;
use crate::scope::stop::{Stop, StoppingOffset};

/// The format version written by this build: the record followed by its checksum.
pub const STATE_VERSION: u32 = 2;

/// The format before the checksum (the same record, nothing after it), which still loads.
const UNCHECKED_VERSION: u32 = 1;

/// MessagePack's marker of a uint32, which leads the checksum after the record.
const UINT32: u8 = 0xce;

/// The checksum's bytes after the record: the marker and the CRC-32C, big-endian.
const CHECKSUM_LEN: usize = 5;

/// The persisted record. Fields are positional in MessagePack (the SDK uses compact
/// `rmp_serde`), so new fields are only appended, with `#[serde(default)]` so records
/// written before them still load. Format 2 writes the checksum after it ([`with_checksum`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct PersistedState {
    version: u32,
    table_id: TableId,
    table: String,
    positions: Vec<PersistedPosition>,
    /// The share of the buckets the state covers; records without it were written by a single
    /// instance reading everything.
    #[serde(default)]
    assignment: Assignment,
    /// The stop point of a bounded read (`None`: unbounded).
    #[serde(default)]
    stop: Option<(StoppingOffset, Vec<PersistedPosition>)>,
    /// Buckets whose snapshot has not been acknowledged whole (absent before snapshots), with
    /// their [`marker`].
    #[serde(default)]
    snapshots: Vec<PersistedPosition>,
    /// Buckets of `snapshots` part of whose KV snapshot was acknowledged: `(partition, bucket,
    /// snapshot id, rows handed over)`. Left out while empty, so records without it (written
    /// before, or with no such bucket) keep their bytes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    resumes: Vec<PersistedResume>,
    /// Buckets of `resumes` read through a `filter`: `(partition, bucket, rows the filter
    /// kept)`, the index the next row is numbered with. Left out while empty, like `resumes`
    /// (never empty while this is not: each entry has one in `resumes`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    kept: Vec<PersistedKept>,
}

/// A filtered snapshot's numbering as persisted: `(partition, bucket, rows kept)`.
type PersistedKept = (Option<PartitionId>, BucketId, u64);

/// A snapshot's progress as persisted: `(partition, bucket, snapshot id, rows)`.
type PersistedResume = (Option<PartitionId>, BucketId, i64, u64);

/// One bucket's offset as persisted: `(partition, bucket, offset)`.
type PersistedPosition = (Option<PartitionId>, BucketId, i64);

/// What a state covers besides its positions: the instance's share and the stop point.
#[derive(Debug, Clone, Copy, Default)]
pub struct Scope<'a> {
    /// The share of the buckets the positions belong to.
    pub assignment: Assignment,
    /// The stop point of a bounded read.
    pub stop: Option<&'a Stop>,
}

/// The persisted value of a bucket in its snapshot phase: `-1` before any attempt at its
/// snapshot was handed over, `-2 - floor` once one was (its changelog continues at `floor` at
/// the latest). Never a real offset (those are ≥ 0), and `None` for a bucket read from its log.
fn marker(position: Position) -> Option<i64> {
    match position {
        Position::At(_) => None,
        Position::Snapshot { floor: None, .. } => Some(-1),
        Position::Snapshot {
            floor: Some(floor), ..
        } => Some(-2 - floor.max(0)),
    }
}

/// The snapshot-phase position a persisted [`marker`] stands for; `None` for a value that is
/// no marker.
fn from_marker(marker: i64) -> Option<Position> {
    match marker {
        -1 => Some(Position::SNAPSHOT),
        m if m <= -2 => Some(Position::Snapshot {
            floor: Some(-2 - m),
            resume: None,
        }),
        _ => None,
    }
}

fn persisted(offsets: impl IntoIterator<Item = (BucketKey, Offset)>) -> Vec<PersistedPosition> {
    offsets
        .into_iter()
        .map(|(k, offset)| (k.partition, k.bucket, offset))
        .collect()
}

fn restored(positions: Vec<PersistedPosition>) -> Result<Offsets> {
    let mut restored = Offsets::new();
    for (partition, bucket, offset) in positions {
        if offset < 0 || bucket < 0 {
            return Err(Error::StateImpossible { bucket, offset });
        }
        restored.insert(BucketKey { partition, bucket }, offset);
    }
    Ok(restored)
}

/// `record` followed by its checksum.
fn with_checksum(mut record: Vec<u8>) -> Vec<u8> {
    let crc = crc32c::crc32c(&record);
    record.push(UINT32);
    record.extend_from_slice(&crc.to_be_bytes());
    record
}

/// The record of `bytes` when they end with its matching checksum.
fn checksummed(bytes: &[u8]) -> Option<&[u8]> {
    let (record, checksum) = bytes.split_at_checked(bytes.len().checked_sub(CHECKSUM_LEN)?)?;
    let (&marker, crc) = checksum.split_first()?;
    (marker == UINT32 && crc == crc32c::crc32c(record).to_be_bytes()).then_some(record)
}

/// The format version in the first field of the record `bytes` start with, read without
/// decoding the rest, so a damaged record or one of a newer format still tells it.
fn version_of(bytes: &[u8]) -> Option<u32> {
    let fields = match *bytes.first()? {
        0x91..=0x9f => bytes.get(1..)?,
        0xdc => bytes.get(3..)?,
        0xdd => bytes.get(5..)?,
        _ => return None,
    };
    let uint = |n: usize| {
        let digits = fields.get(1..1 + n)?;
        Some(digits.iter().fold(0u64, |v, d| v << 8 | u64::from(*d)))
    };
    let version = match *fields.first()? {
        v @ 0..=0x7f => u64::from(v),
        0xcc => uint(1)?,
        0xcd => uint(2)?,
        0xce => uint(4)?,
        _ => return None,
    };
    u32::try_from(version).ok()
}

/// The record `bytes` hold in full, nothing after it.
fn record_alone(bytes: &[u8]) -> Result<PersistedState> {
    let corrupt = |cause| Error::StateCorrupt {
        bytes: bytes.len(),
        cause,
    };
    let mut rest = bytes;
    let record: PersistedState = rmp_serde::from_read(&mut rest).map_err(corrupt)?;
    if !rest.is_empty() {
        return Err(corrupt(rmp_serde::decode::Error::Syntax(format!(
            "{} bytes after the record",
            rest.len()
        ))));
    }
    Ok(record)
}

/// The record of a saved state (see [`SavedState::decode`]).
fn checked_record(bytes: &[u8]) -> Result<PersistedState> {
    let version = version_of(bytes);
    if let Some(record) = checksummed(bytes) {
        if version == Some(STATE_VERSION) {
            return record_alone(record);
        }
    } else if version == Some(UNCHECKED_VERSION) {
        return record_alone(bytes);
    } else if version == Some(STATE_VERSION)
        || bytes.len() >= CHECKSUM_LEN && bytes[bytes.len() - CHECKSUM_LEN] == UINT32
    {
        // A record of this format (or bytes that end as one does) whose checksum does not
        // match: damaged after it was written.
        return Err(Error::StateChecksum { bytes: bytes.len() });
    }
    match version {
        Some(found) => Err(Error::StateVersion {
            found,
            expected: STATE_VERSION,
        }),
        // Not a record whose first field is its version: the decoder's own words say where
        // it stops (a map of named fields, which this plugin never writes, decodes but is
        // refused too).
        None => Err(record_alone(bytes).err().unwrap_or(Error::StateCorrupt {
            bytes: bytes.len(),
            cause: rmp_serde::decode::Error::Syntax(
                "the first field is not a format version".into(),
            ),
        })),
    }
}

/// State restored from the runtime, before it is checked against the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavedState {
    /// The id of the table the state was written for.
    pub table_id: TableId,
    /// `db.table` at the time it was written.
    pub table: String,
    /// The committed positions.
    pub positions: Positions,
    /// The share of the buckets it was written for.
    pub assignment: Assignment,
    /// The stop point of the bounded read it was written by, if any.
    pub stop: Option<Stop>,
}

impl SavedState {
    /// Encodes positions of `table_id` for the runtime's state file.
    pub fn encode(
        table_id: TableId,
        table: &str,
        positions: &Positions,
        scope: Scope<'_>,
    ) -> Result<ConnectorState> {
        let record = PersistedState {
            version: STATE_VERSION,
            table_id,
            table: table.to_owned(),
            positions: persisted(
                positions
                    .iter()
                    .filter_map(|(key, position)| Some((*key, position.offset()?))),
            ),
            assignment: scope.assignment,
            stop: scope
                .stop
                .map(|stop| (stop.at, persisted(stop.offsets.clone()))),
            snapshots: persisted(
                positions
                    .iter()
                    .filter_map(|(key, position)| Some((*key, marker(*position)?))),
            ),
            resumes: positions
                .iter()
                .filter_map(|(key, position)| match position {
                    Position::Snapshot {
                        resume: Some(resume),
                        ..
                    } => Some((key.partition, key.bucket, resume.snapshot, resume.rows)),
                    _ => None,
                })
                .collect(),
            kept: positions
                .iter()
                .filter_map(|(key, position)| match position {
                    Position::Snapshot {
                        resume: Some(resume),
                        ..
                    } => Some((key.partition, key.bucket, resume.kept?)),
                    _ => None,
                })
                .collect(),
        };
        // The SDKs' `ConnectorState::serialize` is this same call; calling it directly keeps
        // the rmp-serde error typed.
        rmp_serde::to_vec(&record)
            .map(|bytes| ConnectorState(with_checksum(bytes)))
            .map_err(|cause| Error::StateEncode { cause })
    }

    /// Decodes the bytes the runtime handed to `open`: a record of this format whose checksum
    /// matches, or a record of format 1 (no checksum). Anything else is refused, a damaged
    /// file by its checksum.
    pub fn decode(state: &ConnectorState) -> Result<Self> {
        let record = checked_record(&state.0)?;
        let stop = match record.stop {
            Some((at, offsets)) => Some(Stop {
                at,
                offsets: restored(offsets)?,
            }),
            None => None,
        };
        // `restored` (below) refuses negative offsets, so the snapshot markers join after it.
        let mut snapshots = Vec::with_capacity(record.snapshots.len());
        for (partition, bucket, marker) in record.snapshots {
            let position = from_marker(marker).filter(|_| bucket >= 0);
            let Some(position) = position else {
                return Err(Error::StateImpossible {
                    bucket,
                    offset: marker,
                });
            };
            snapshots.push((BucketKey { partition, bucket }, position));
        }
        let mut positions = at(restored(record.positions)?);
        positions.extend(snapshots);
        for (partition, bucket, snapshot, rows) in record.resumes {
            let key = BucketKey { partition, bucket };
            let Some(Position::Snapshot { resume, .. }) = positions.get_mut(&key) else {
                return Err(Error::StateImpossible {
                    bucket,
                    offset: snapshot,
                });
            };
            *resume = Some(Resume {
                snapshot,
                rows,
                kept: None,
            });
        }
        for (partition, bucket, kept) in record.kept {
            let key = BucketKey { partition, bucket };
            let Some(Position::Snapshot {
                resume: Some(resume),
                ..
            }) = positions.get_mut(&key)
            else {
                return Err(Error::StateImpossible {
                    bucket,
                    offset: kept as i64,
                });
            };
            resume.kept = Some(kept);
        }
        Ok(Self {
            table_id: record.table_id,
            table: record.table,
            positions,
            assignment: record.assignment,
            stop,
        })
    }

    /// Refuses state written by an instance with another share of the buckets: its positions
    /// would leave the buckets that moved here unread from their saved offsets, or read
    /// buckets another instance now owns.
    pub fn check_assignment(&self, configured: Assignment) -> Result<()> {
        if self.assignment == configured {
            return Ok(());
        }
        Err(Error::StateAssignment {
            saved: self.assignment,
            configured,
        })
    }

    /// Refuses state written for another table.
    pub fn check_table(&self, table_id: TableId, table: &str) -> Result<()> {
        if self.table_id == table_id {
            return Ok(());
        }
        Err(Error::StateForeignTable {
            saved_table: self.table.clone(),
            saved_id: self.table_id,
            table: table.to_owned(),
            table_id,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::position::samples::{offsets, positions};

    #[test]
    fn snapshot_markers_round_trip_and_are_never_offsets() {
        assert_eq!(marker(Position::SNAPSHOT), Some(-1));
        assert_eq!(from_marker(-1), Some(Position::SNAPSHOT));
        for floor in [0, 1, 2738, i64::MAX - 2] {
            let position = Position::Snapshot {
                floor: Some(floor),
                resume: None,
            };
            let persisted = marker(position).unwrap();
            assert!(persisted <= -2, "{floor}");
            assert_eq!(from_marker(persisted), Some(position));
        }
        assert_eq!(marker(Position::At(0)), None);
        assert_eq!(from_marker(0), None);
    }

    #[test]
    fn state_round_trips() {
        let bytes = SavedState::encode(42, "fluss.orders", &positions(), Scope::default()).unwrap();
        let saved = SavedState::decode(&bytes).unwrap();
        assert_eq!(saved.table_id, 42);
        assert_eq!(saved.table, "fluss.orders");
        assert_eq!(saved.positions, positions());
        saved.check_table(42, "fluss.orders").unwrap();
    }

    #[test]
    fn state_of_another_table_is_refused_with_the_fix() {
        let bytes = SavedState::encode(42, "fluss.orders", &positions(), Scope::default()).unwrap();
        let saved = SavedState::decode(&bytes).unwrap();
        let e = saved
            .check_table(43, "fluss.orders")
            .unwrap_err()
            .to_string();
        assert!(e.contains("belongs to table fluss.orders (id 42)"), "{e}");
        assert!(e.contains("delete the connector's state file"), "{e}");
    }

    /// The version-1 record as written before assignments and stop points existed.
    #[derive(Serialize)]
    struct V1 {
        version: u32,
        table_id: TableId,
        table: String,
        positions: Vec<(Option<PartitionId>, BucketId, i64)>,
    }

    #[test]
    fn state_written_before_assignments_loads_as_one_instance_reading_everything() {
        let v1 = V1 {
            version: 1,
            table_id: 42,
            table: "fluss.orders".into(),
            positions: vec![(None, 0, 10), (Some(7), 1, 5)],
        };
        let bytes = ConnectorState(rmp_serde::to_vec(&v1).unwrap());
        let saved = SavedState::decode(&bytes).unwrap();
        assert_eq!(saved.positions.len(), 2);
        assert_eq!(saved.assignment, Assignment::ALL);
        assert_eq!(saved.stop, None);
        saved.check_assignment(Assignment::ALL).unwrap();
        assert!(
            saved
                .check_assignment(Assignment::try_new(0, 3).unwrap())
                .is_err()
        );
    }

    #[test]
    fn assignment_and_stop_point_round_trip() {
        let share = Assignment::try_new(1, 3).unwrap();
        let stop = Stop {
            at: StoppingOffset::Timestamp(1_700_000_000_000),
            offsets: offsets(),
        };
        let bytes = SavedState::encode(
            42,
            "fluss.orders",
            &positions(),
            Scope {
                assignment: share,
                stop: Some(&stop),
            },
        )
        .unwrap();
        let saved = SavedState::decode(&bytes).unwrap();
        assert_eq!(saved.assignment, share);
        assert_eq!(saved.stop, Some(stop));
    }

    #[test]
    fn state_of_another_share_is_refused_naming_both_and_the_fix() {
        let bytes = SavedState::encode(
            42,
            "fluss.orders",
            &positions(),
            Scope {
                assignment: Assignment::try_new(1, 3).unwrap(),
                stop: None,
            },
        )
        .unwrap();
        let saved = SavedState::decode(&bytes).unwrap();
        let e = saved
            .check_assignment(Assignment::try_new(1, 2).unwrap())
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "the saved state was written with instance_index = 1, instance_count = 3, but this connector is configured with instance_index = 1, instance_count = 2 (a state holds the positions of one share of the buckets; they are not re-mapped); set `instance_index` = 1 and `instance_count` = 3 again, or delete the connector's state file (<state.path>/source_<key>.state in the runtime config) to start again from `starting_offset`"
        );
    }

    #[test]
    fn corrupted_state_is_refused() {
        for bytes in [
            vec![],
            vec![0xc1],
            b"hello world".to_vec(),
            vec![0x93, 1, 2],
        ] {
            let e = SavedState::decode(&ConnectorState(bytes.clone())).unwrap_err();
            assert!(
                e.to_string().contains("is not a Fluss source state"),
                "{bytes:?}: {e}"
            );
        }
    }

    /// A record of table 1 (`a.b`) read by every instance, without a stop point.
    fn record(
        positions: Vec<PersistedPosition>,
        snapshots: Vec<PersistedPosition>,
        resumes: Vec<PersistedResume>,
        kept: Vec<PersistedKept>,
    ) -> PersistedState {
        PersistedState {
            version: STATE_VERSION,
            table_id: 1,
            table: "a.b".into(),
            positions,
            assignment: Assignment::ALL,
            stop: None,
            snapshots,
            resumes,
            kept,
        }
    }

    /// `record` as this build writes a record: followed by its checksum.
    fn sealed(record: &PersistedState) -> ConnectorState {
        ConnectorState(with_checksum(rmp_serde::to_vec(record).unwrap()))
    }

    #[test]
    fn another_version_is_refused() {
        let record = PersistedState {
            version: 99,
            ..record(vec![], vec![], vec![], vec![])
        };
        let bytes = sealed(&record);
        let e = SavedState::decode(&bytes).unwrap_err().to_string();
        assert!(e.contains("format version 99"), "{e}");
    }

    #[test]
    fn negative_offsets_are_refused() {
        let record = record(vec![(None, 0, -3)], vec![], vec![], vec![]);
        let bytes = sealed(&record);
        assert!(SavedState::decode(&bytes).is_err());
    }

    #[test]
    fn a_snapshot_resume_of_a_bucket_not_in_its_snapshot_phase_is_refused() {
        let record = record(vec![(None, 0, 5)], vec![], vec![(None, 0, 3, 100)], vec![]);
        let bytes = sealed(&record);
        let e = SavedState::decode(&bytes).unwrap_err().to_string();
        assert!(e.contains("impossible position"), "{e}");
    }

    #[test]
    fn a_kept_count_of_a_bucket_without_a_snapshot_resume_is_refused() {
        let record = record(
            vec![(None, 0, 5)],
            vec![(None, 1, -1)],
            vec![(None, 1, 3, 100)],
            vec![(None, 0, 7)],
        );
        let bytes = sealed(&record);
        let e = SavedState::decode(&bytes).unwrap_err().to_string();
        assert!(e.contains("impossible position"), "{e}");
    }

    #[test]
    fn buckets_in_their_snapshot_phase_round_trip() {
        let mut with_snapshots = positions();
        with_snapshots.insert(BucketKey::bucket(4), Position::SNAPSHOT);
        with_snapshots.insert(
            BucketKey {
                partition: Some(9),
                bucket: 0,
            },
            Position::SNAPSHOT,
        );
        with_snapshots.insert(
            BucketKey::bucket(5),
            Position::Snapshot {
                floor: Some(2738),
                resume: None,
            },
        );
        with_snapshots.insert(
            BucketKey::bucket(7),
            Position::Snapshot {
                floor: Some(18),
                resume: Some(Resume {
                    snapshot: 4,
                    rows: 50_000,
                    kept: Some(1_234),
                }),
            },
        );
        with_snapshots.insert(
            BucketKey::bucket(6),
            Position::Snapshot {
                floor: Some(17),
                resume: Some(Resume {
                    snapshot: 3,
                    rows: 40_960,
                    kept: None,
                }),
            },
        );
        let bytes =
            SavedState::encode(42, "fluss.orders", &with_snapshots, Scope::default()).unwrap();
        assert_eq!(
            SavedState::decode(&bytes).unwrap().positions,
            with_snapshots
        );
    }

    /// The record as the first format wrote it: four fields, no snapshot list.
    #[derive(Serialize)]
    struct FirstFormat {
        version: u32,
        table_id: TableId,
        table: String,
        positions: Vec<(Option<PartitionId>, BucketId, i64)>,
    }

    #[test]
    fn state_written_before_snapshots_still_loads() {
        let old = FirstFormat {
            version: 1,
            table_id: 42,
            table: "fluss.orders".into(),
            positions: vec![(None, 0, 10), (Some(7), 1, 3)],
        };
        let bytes = ConnectorState(rmp_serde::to_vec(&old).unwrap());
        let saved = SavedState::decode(&bytes).unwrap();
        assert_eq!(saved.table_id, 42);
        assert_eq!(saved.positions.len(), 2);
        assert_eq!(
            saved.positions.get(&BucketKey::bucket(0)),
            Some(&Position::At(10))
        );
        assert!(
            saved.positions.values().all(|p| !p.is_snapshot()),
            "old state has no bucket in its snapshot phase"
        );
    }

    /// Representative states, and the files holding their bytes (`tests/data/state/`, format 1,
    /// and `tests/data/state/format2/`): the persisted format must never change under a
    /// refactoring, so these bytes must load to the same meaning.
    fn fixtures() -> Vec<(&'static str, SavedState)> {
        let key = |partition, bucket| BucketKey { partition, bucket };
        let mut phases = positions();
        phases.insert(BucketKey::bucket(4), Position::SNAPSHOT);
        phases.insert(key(Some(9), 0), Position::SNAPSHOT);
        phases.insert(
            BucketKey::bucket(5),
            Position::Snapshot {
                floor: Some(2738),
                resume: None,
            },
        );
        let mut resumed = phases.clone();
        resumed.insert(
            key(Some(9), 1),
            Position::Snapshot {
                floor: Some(311),
                resume: Some(Resume {
                    snapshot: 12,
                    rows: 65_536,
                    kept: None,
                }),
            },
        );
        let mut filtered = resumed.clone();
        filtered.insert(
            key(None, 2),
            Position::Snapshot {
                floor: Some(77),
                resume: Some(Resume {
                    snapshot: 13,
                    rows: 9_000,
                    kept: Some(321),
                }),
            },
        );
        let stop_offsets: Offsets = [(BucketKey::bucket(0), 12), (key(Some(7), 1), 900)]
            .into_iter()
            .collect();
        let state = |positions: Positions, assignment, stop| SavedState {
            table_id: 42,
            table: "fluss.orders".into(),
            positions,
            assignment,
            stop,
        };
        vec![
            ("offsets", state(positions(), Assignment::ALL, None)),
            (
                "snapshot_phases",
                state(phases.clone(), Assignment::ALL, None),
            ),
            ("snapshot_resume", state(resumed, Assignment::ALL, None)),
            (
                "snapshot_resume_filtered",
                state(filtered, Assignment::ALL, None),
            ),
            (
                "share_and_stop",
                state(
                    phases,
                    Assignment::try_new(1, 3).unwrap(),
                    Some(Stop {
                        at: StoppingOffset::Timestamp(1_700_000_000_000),
                        offsets: stop_offsets.clone(),
                    }),
                ),
            ),
            (
                "stop_latest",
                state(
                    positions(),
                    Assignment::try_new(0, 2).unwrap(),
                    Some(Stop {
                        at: StoppingOffset::Latest,
                        offsets: stop_offsets,
                    }),
                ),
            ),
        ]
    }

    fn encoded(state: &SavedState) -> Vec<u8> {
        let scope = Scope {
            assignment: state.assignment,
            stop: state.stop.as_ref(),
        };
        SavedState::encode(state.table_id, &state.table, &state.positions, scope)
            .unwrap()
            .0
    }

    fn fixture_dir() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/state")
    }

    /// Format 1 (`tests/data/state/*.msgpack`, written by release 0.2.0): each file loads to
    /// the same state, and this build writes it back as format 2, which is the same record
    /// with version 2, followed by its checksum.
    #[test]
    fn format_1_fixture_bytes_load_to_the_same_state_and_encode_back_as_format_2() {
        for (name, state) in fixtures() {
            let path = fixture_dir().join(format!("{name}.msgpack"));
            let bytes = std::fs::read(&path).unwrap();
            assert_eq!(version_of(&bytes), Some(1), "{name}");
            let loaded = SavedState::decode(&ConnectorState(bytes.clone())).unwrap();
            assert_eq!(
                loaded, state,
                "{name}: the saved bytes mean something else now"
            );
            let mut record = bytes;
            record[1] = 2;
            assert_eq!(
                encoded(&loaded),
                with_checksum(record),
                "{name}: format 2 is format 1's record with version 2 and the checksum after it"
            );
        }
    }

    /// Format 2 (`tests/data/state/format2/`): the files load to the same state and this build
    /// writes the same bytes. `WRITE_STATE_FIXTURES=1` writes them (never the format 1 ones).
    #[test]
    fn format_2_fixture_bytes_load_to_the_same_state_and_encode_back_identically() {
        let dir = fixture_dir().join("format2");
        for (name, state) in fixtures() {
            let path = dir.join(format!("{name}.msgpack"));
            if std::env::var_os("WRITE_STATE_FIXTURES").is_some() {
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(&path, encoded(&state)).unwrap();
            }
            let bytes = std::fs::read(&path).unwrap();
            assert_eq!(version_of(&bytes), Some(STATE_VERSION), "{name}");
            let loaded = SavedState::decode(&ConnectorState(bytes.clone())).unwrap();
            assert_eq!(
                loaded, state,
                "{name}: the saved bytes mean something else now"
            );
            assert_eq!(
                encoded(&loaded),
                bytes,
                "{name}: the persisted format changed; old state files would no longer match"
            );
        }
    }

    /// The checksum of the `offsets` fixture, written out: CRC-32C (Castagnoli) of the record
    /// bytes, big-endian after the uint32 marker.
    #[test]
    fn the_checksum_is_the_crc32c_of_the_record_as_a_msgpack_uint32() {
        assert_eq!(
            crc32c::crc32c(b"123456789"),
            0xe306_9283,
            "the standard check value"
        );
        let bytes = std::fs::read(fixture_dir().join("format2/offsets.msgpack")).unwrap();
        let (record, checksum) = bytes.split_at(bytes.len() - CHECKSUM_LEN);
        assert_eq!(checksum[0], 0xce);
        assert_eq!(checksum[1..], crc32c::crc32c(record).to_be_bytes());
    }

    fn checksum_refusal(bytes: &[u8]) -> String {
        match SavedState::decode(&ConnectorState(bytes.to_vec())) {
            Err(e @ Error::StateChecksum { .. }) => e.to_string(),
            other => panic!("{bytes:02x?}: want the checksum refusal, got {other:?}"),
        }
    }

    #[test]
    fn every_flipped_bit_is_refused_by_the_checksum_with_the_fix() {
        let state = &fixtures()[3].1;
        let bytes = encoded(state);
        for bit in 0..bytes.len() * 8 {
            let mut damaged = bytes.clone();
            damaged[bit / 8] ^= 1 << (bit % 8);
            let e = checksum_refusal(&damaged);
            assert_eq!(
                e,
                format!(
                    "the saved state ({} bytes) does not match its checksum: the state file was changed after the connector wrote it (damaged on disk or in a copy, or edited), so its positions cannot be trusted; put back a copy of the file taken before, or delete the connector's state file (<state.path>/source_<key>.state in the runtime config) to start again from `starting_offset`",
                    bytes.len()
                ),
                "bit {bit}"
            );
        }
    }

    #[test]
    fn a_missing_or_cut_checksum_is_refused() {
        let bytes = encoded(&fixtures()[0].1);
        for cut in 1..=CHECKSUM_LEN {
            checksum_refusal(&bytes[..bytes.len() - cut]);
        }
        let mut longer = bytes.clone();
        longer.push(0);
        checksum_refusal(&longer);
    }

    #[test]
    fn a_format_1_record_with_bytes_after_it_is_refused() {
        let mut bytes = std::fs::read(fixture_dir().join("offsets.msgpack")).unwrap();
        bytes.push(0);
        let e = SavedState::decode(&ConnectorState(bytes)).unwrap_err();
        assert!(e.to_string().contains("1 bytes after the record"), "{e}");
    }

    #[test]
    fn a_newer_format_is_refused_by_its_version() {
        let mut record = std::fs::read(fixture_dir().join("offsets.msgpack")).unwrap();
        record[1] = 3;
        let e = SavedState::decode(&ConnectorState(with_checksum(record)))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(
                "the saved state has format version 3 but this plugin reads versions 1 to 2; delete"
            ),
            "{e}"
        );
    }

    #[test]
    fn a_map_of_named_fields_is_refused() {
        #[derive(Serialize)]
        struct Named {
            version: u32,
            table_id: TableId,
            table: String,
            positions: Vec<PersistedPosition>,
        }
        let named = Named {
            version: 1,
            table_id: 42,
            table: "fluss.orders".into(),
            positions: vec![(None, 0, 10)],
        };
        let bytes = rmp_serde::to_vec_named(&named).unwrap();
        let e = SavedState::decode(&ConnectorState(bytes))
            .unwrap_err()
            .to_string();
        assert!(e.contains("is not a Fluss source state"), "{e}");
    }

    #[test]
    fn the_version_is_read_from_every_encoding_of_the_first_field() {
        assert_eq!(version_of(&[0x91, 0x02]), Some(2));
        assert_eq!(version_of(&[0x92, 0xcc, 0xc8]), Some(200));
        assert_eq!(version_of(&[0x92, 0xcd, 0x01, 0x00]), Some(256));
        assert_eq!(version_of(&[0x92, 0xce, 0, 1, 0, 0]), Some(65_536));
        assert_eq!(version_of(&[0xdc, 0, 20, 0x01]), Some(1));
        assert_eq!(version_of(&[0xdd, 0, 0, 0, 20, 0x01]), Some(1));
        for not in [
            &[][..],
            &[0x90],
            &[0x91],
            &[0x91, 0xa1],
            &[0x81, 0x01],
            &[0xdc, 0],
        ] {
            assert_eq!(version_of(not), None, "{not:02x?}");
        }
    }
}
