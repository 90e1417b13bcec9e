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

//! Replicated clusters: who leads a bucket, which replicas are in sync, a rolling restart,
//! and what the server processes cost.
//!
//! Leaders come from fluss-rs metadata (the coordinator's view, refreshed per call). The
//! in-sync replica set has no client API on a 0.9.1 server (`GetClusterHealth` is 1.0 only,
//! and the metadata response carries no ISR), so it is read from the coordinator's log: it
//! logs every leader-and-ISR write to ZooKeeper (`Batch Register`, `Batch Update`, `Updated
//! LeaderAndIsr{leader=1, leaderEpoch=0, isr=[1, 2, 0], ...} for bucket TableBucket{...}`) from
//! its one event thread, so the last line of a bucket is its current state.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use fluss::client::FlussConnection;
use fluss::metadata::{TableBucket, TablePath};
use fluss::{BucketId, PartitionId, TableId};

use super::{CALL_TIMEOUT, Cluster, READY_TIMEOUT, RETRY_INTERVAL, connect_admin};
use crate::runtime::on_own_runtime;

/// One bucket as the coordinator's log names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct LoggedBucket {
    table: TableId,
    partition: Option<PartitionId>,
    bucket: BucketId,
}

/// The first (creation) and the latest leader-and-ISR entry of a bucket.
#[derive(Debug, Clone)]
struct LoggedState {
    replicas: usize,
    leader: i32,
    isr: Vec<i32>,
}

impl Cluster {
    /// The tablet server (its index, which is also its `tablet-server.id`) that leads
    /// `bucket` of `path` (of partition `partition`, for partitioned tables) according to
    /// fresh metadata from the coordinator, or `None` while the bucket has no leader.
    pub fn bucket_leader(
        &self,
        path: &TablePath,
        partition: Option<PartitionId>,
        bucket: BucketId,
    ) -> Option<usize> {
        let config = self.config();
        let owned = path.clone();
        // Metadata requests go to any server the client knows, which may be the one just
        // killed: retry on a fresh connection until one answers.
        on_own_runtime(async move {
            let deadline = Instant::now() + READY_TIMEOUT;
            super::retry("leader lookup", deadline, || async {
                let connection = FlussConnection::new(config.clone())
                    .await
                    .map_err(|e| format!("connect: {e}"))?;
                leader_of(&connection, &owned, partition, bucket).await
            })
            .await
        })
        .unwrap_or_else(|reason| {
            panic!(
                "cannot look up the leader of {path} bucket {bucket}: {reason}\n{}",
                self.status()
            )
        })
        .map(|id| id as usize)
    }

    /// Waits until `bucket` of `path` has a leader other than `not` (e.g. the server just
    /// killed) and returns it; panics after `within`.
    pub fn wait_new_leader(
        &self,
        path: &TablePath,
        partition: Option<PartitionId>,
        bucket: BucketId,
        not: usize,
        within: Duration,
    ) -> usize {
        let deadline = Instant::now() + within;
        loop {
            let leader = self.bucket_leader(path, partition, bucket);
            match leader {
                Some(l) if l != not => return l,
                _ if Instant::now() >= deadline => panic!(
                    "{path} bucket {bucket} has no leader other than tablet server {not} after \
                     {within:?} (now {leader:?})\n{}",
                    self.logs()
                ),
                _ => std::thread::sleep(RETRY_INTERVAL),
            }
        }
    }

    /// The in-sync replicas of every bucket of `tables` (partitions included), as the
    /// coordinator last wrote them to ZooKeeper: `(bucket, leader, isr)`.
    pub fn in_sync_replicas(&self, tables: &[&TablePath]) -> Vec<(TableBucket, i32, Vec<i32>)> {
        let ids = self.table_ids(tables);
        let mut out: Vec<(TableBucket, i32, Vec<i32>)> = self
            .logged_states()
            .into_iter()
            .filter(|(b, _)| ids.contains(&b.table))
            .map(|(b, s)| {
                (
                    TableBucket::new_with_partition(b.table, b.partition, b.bucket),
                    s.leader,
                    s.isr,
                )
            })
            .collect();
        out.sort_by_key(|(b, _, _)| (b.table_id(), b.partition_id(), b.bucket_id()));
        out
    }

    /// Waits until every bucket of `tables` has all its replicas in sync again (the ISR
    /// has as many members as at creation): after a restarted tablet server caught up. Call
    /// it with every tablet server running. Panics after `within` with the buckets still
    /// short.
    ///
    /// A Fluss 0.9.1 leader can keep a stale ISR for good: when a follower stops while the
    /// leader's expansion request for it is in flight, the coordinator shrinks the ISR with
    /// the same leader epoch, the leader skips that update ("Skipped the become-leader state
    /// change ... already the leader") and never asks to add the follower back (see
    /// apache/fluss#2146, #3927: "recovery may require another leader transition"). A bucket
    /// short for [`STUCK_AFTER`] gets that transition: its leader is restarted gracefully,
    /// once per bucket, when every bucket it is in sync for has another in-sync replica.
    pub fn wait_in_sync(&self, tables: &[&TablePath], within: Duration) {
        let ids = self.table_ids(tables);
        let started = Instant::now();
        let deadline = started + within;
        let mut restarted: Vec<LoggedBucket> = Vec::new();
        loop {
            let states = self.logged_states();
            let mut short: Vec<(&LoggedBucket, &LoggedState)> = states
                .iter()
                .filter(|(b, s)| ids.contains(&b.table) && s.isr.len() < s.replicas)
                .collect();
            let known = states.keys().filter(|b| ids.contains(&b.table)).count();
            if known > 0 && short.is_empty() {
                return;
            }
            if Instant::now() >= deadline {
                short.sort_by_key(|(b, _)| (b.table, b.partition, b.bucket));
                let mut lines: Vec<String> = short
                    .iter()
                    .map(|(b, s)| format!("{b:?}: isr {:?} of {} replicas", s.isr, s.replicas))
                    .collect();
                if known == 0 {
                    lines.push(format!(
                        "no bucket of table ids {ids:?} in the coordinator log"
                    ));
                }
                panic!(
                    "replicas not back in sync after {within:?}: {lines:#?}\n{}",
                    self.logs()
                );
            }
            if started.elapsed() >= STUCK_AFTER {
                let stuck = short
                    .iter()
                    .find(|(b, s)| !restarted.contains(b) && can_restart(&states, s.leader));
                if let Some((bucket, state)) = stuck {
                    eprintln!(
                        "fluss-testkit: {bucket:?} has isr {:?} of {} replicas after {:.1?}: \
                         restarting its leader, tablet server {}, to reset its stale ISR",
                        state.isr,
                        state.replicas,
                        started.elapsed(),
                        state.leader
                    );
                    restarted.push(**bucket);
                    let leader = state.leader as usize;
                    self.stop_tablet(leader);
                    self.start_tablet(leader);
                    continue;
                }
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    /// Restarts every tablet server, one at a time: a graceful stop, a start, and a wait
    /// until the buckets of `tables` are fully in sync again before the next one, so no
    /// bucket is ever left without an in-sync replica to lead it.
    pub fn rolling_restart(&self, tables: &[&TablePath]) {
        for i in 0..self.tablets() {
            let started = Instant::now();
            self.stop_tablet(i);
            self.start_tablet(i);
            self.wait_in_sync(tables, READY_TIMEOUT);
            eprintln!(
                "fluss-testkit: rolling restart: tablet server {i} back in sync after {:.1?}",
                started.elapsed()
            );
        }
    }

    /// Number of tablet servers this cluster was started with (1 for an external one).
    pub fn tablets(&self) -> usize {
        self.local.as_ref().map_or(1, |l| l.tablets)
    }

    /// How long [`Cluster::start`] took until the cluster served (`None` if external).
    pub fn start_time(&self) -> Option<Duration> {
        self.local.as_ref().map(|l| l.started_in)
    }

    /// The resident memory of every running server process, `(name, KiB)`, e.g.
    /// `("tablet-0", 131_072)`; from `/proc/<pid>/status` of the pids the script recorded.
    pub fn memory(&self) -> Vec<(String, u64)> {
        let Some(dir) = self.dir() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let Ok(entries) = std::fs::read_dir(dir.join("pids")) else {
            return out;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name == "watchdog" {
                continue;
            }
            let Some(pid) = super::read_trimmed(&entry.path()) else {
                continue;
            };
            // Only a live process of this cluster (the pid may have been reused).
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let marker = format!("-Dfluss.cluster.dir={}", dir.display());
            if !String::from_utf8_lossy(&cmdline).contains(&marker) {
                continue;
            }
            if let Some(kib) = rss_kib(&pid) {
                out.push((name, kib));
            }
        }
        out.sort();
        out
    }

    fn table_ids(&self, tables: &[&TablePath]) -> Vec<TableId> {
        let config = self.config();
        let paths: Vec<TablePath> = tables.iter().map(|p| (*p).clone()).collect();
        on_own_runtime(async move {
            let deadline = Instant::now() + READY_TIMEOUT;
            let admin = connect_admin(&config, deadline).await?;
            let mut ids = Vec::new();
            for path in &paths {
                let info = tokio::time::timeout(CALL_TIMEOUT, admin.get_table_info(path))
                    .await
                    .map_err(|_| format!("get_table_info {path}: no answer"))?
                    .map_err(|e| format!("get_table_info {path}: {e}"))?;
                ids.push(info.table_id);
            }
            Ok(ids)
        })
        .unwrap_or_else(|reason| panic!("cannot resolve table ids: {reason}"))
    }

    /// Every bucket's creation size and latest state from the coordinator log.
    fn logged_states(&self) -> HashMap<LoggedBucket, LoggedState> {
        let dir = self.local_dir("in_sync_replicas");
        let text =
            std::fs::read_to_string(dir.join("log").join("coordinator.log")).unwrap_or_default();
        let mut states: HashMap<LoggedBucket, LoggedState> = HashMap::new();
        for line in text.lines() {
            let Some((bucket, leader, isr)) = parse_leader_and_isr(line) else {
                continue;
            };
            let register = line.contains("Register LeaderAndIsr");
            match states.get_mut(&bucket) {
                Some(state) if !register => {
                    state.leader = leader;
                    state.isr = isr;
                }
                _ => {
                    states.insert(
                        bucket,
                        LoggedState {
                            replicas: isr.len(),
                            leader,
                            isr,
                        },
                    );
                }
            }
        }
        states
    }
}

async fn leader_of(
    connection: &FlussConnection,
    path: &TablePath,
    partition: Option<PartitionId>,
    bucket: BucketId,
) -> Result<Option<i32>, String> {
    let metadata = connection.get_metadata();
    tokio::time::timeout(CALL_TIMEOUT, metadata.update_table_metadata(path))
        .await
        .map_err(|_| "metadata request: no answer".to_string())?
        .map_err(|e| format!("metadata of {path}: {e}"))?;
    let table_id = metadata
        .get_cluster()
        .get_table_id(path)
        .ok_or_else(|| format!("{path} is not in the metadata"))?;
    let table_bucket = TableBucket::new_with_partition(table_id, partition, bucket);
    let leader = tokio::time::timeout(CALL_TIMEOUT, metadata.leader_for(path, &table_bucket))
        .await
        .map_err(|_| "leader lookup: no answer".to_string())?
        .map_err(|e| format!("leader of {table_bucket:?}: {e}"))?;
    Ok(leader.map(|node| node.id()))
}

/// How long a bucket may stay short of in-sync replicas, with every server running, before
/// [`Cluster::wait_in_sync`] treats its leader's ISR as stale. A restarted follower of a test
/// table catches up within seconds.
const STUCK_AFTER: Duration = Duration::from_secs(30);

/// Whether tablet server `leader` can be stopped without leaving a bucket without an
/// in-sync replica: every bucket whose ISR holds it holds another server too.
fn can_restart(states: &HashMap<LoggedBucket, LoggedState>, leader: i32) -> bool {
    leader >= 0
        && states
            .values()
            .filter(|s| s.isr.contains(&leader))
            .all(|s| s.isr.len() >= 2)
}

/// `LeaderAndIsr{leader=1, leaderEpoch=0, isr=[1, 2, 0], ...} for bucket
/// TableBucket{tableId=3, partitionId=7, bucket=2}` → bucket, leader, isr.
fn parse_leader_and_isr(line: &str) -> Option<(LoggedBucket, i32, Vec<i32>)> {
    let state = &line[line.find("LeaderAndIsr{leader=")? + "LeaderAndIsr{leader=".len()..];
    let leader: i32 = state[..state.find(',')?].trim().parse().ok()?;
    let isr_text = &state[state.find("isr=[")? + "isr=[".len()..];
    let isr: Vec<i32> = isr_text[..isr_text.find(']')?]
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let bucket_text = &line[line.find("TableBucket{")? + "TableBucket{".len()..];
    let bucket_text = &bucket_text[..bucket_text.find('}')?];
    let mut table = None;
    let mut partition = None;
    let mut bucket = None;
    for field in bucket_text.split(',') {
        let (key, value) = field.trim().split_once('=')?;
        match key {
            "tableId" => table = value.parse().ok(),
            "partitionId" => partition = value.parse().ok(),
            "bucket" => bucket = value.parse().ok(),
            _ => {}
        }
    }
    Some((
        LoggedBucket {
            table: table?,
            partition,
            bucket: bucket?,
        },
        leader,
        isr,
    ))
}

/// `VmRSS` of a process in KiB.
pub(crate) fn rss_kib(pid: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_coordinator_leader_and_isr_lines() {
        let line = "09:56:48.207 INFO  [coordinator-event-thread] o.a.f.s.z.ZooKeeperClient - Batch Update LeaderAndIsr{leader=1, leaderEpoch=1, isr=[1, 2, 0], coordinatorEpoch=0, bucketEpoch=2} for bucket TableBucket{tableId=1, bucket=2} in Zookeeper.";
        let (bucket, leader, isr) = parse_leader_and_isr(line).expect("parsed");
        assert_eq!(
            bucket,
            LoggedBucket {
                table: 1,
                partition: None,
                bucket: 2
            }
        );
        assert_eq!((leader, isr), (1, vec![1, 2, 0]));
        let partitioned = "x - Updated LeaderAndIsr{leader=-1, leaderEpoch=3, isr=[], coordinatorEpoch=0, bucketEpoch=4} for bucket TableBucket{tableId=5, partitionId=9, bucket=0}";
        let (bucket, leader, isr) = parse_leader_and_isr(partitioned).expect("parsed");
        assert_eq!(bucket.partition, Some(9));
        assert_eq!((leader, isr), (-1, vec![]));
        assert!(parse_leader_and_isr("no state here").is_none());
    }

    #[test]
    fn a_leader_is_restarted_only_if_no_bucket_then_lacks_an_in_sync_replica() {
        let state = |leader, isr: &[i32]| LoggedState {
            replicas: 3,
            leader,
            isr: isr.to_vec(),
        };
        let bucket = |bucket| LoggedBucket {
            table: 1,
            partition: None,
            bucket,
        };
        let mut states = HashMap::from([
            (bucket(0), state(0, &[0, 1])),
            (bucket(1), state(1, &[1, 2, 0])),
        ]);
        assert!(can_restart(&states, 0));
        // Bucket 2 is in sync on server 0 alone: stopping 0 would leave it leaderless.
        states.insert(bucket(2), state(0, &[0]));
        assert!(!can_restart(&states, 0));
        assert!(can_restart(&states, 1));
        // No leader (-1) is nothing to restart.
        assert!(!can_restart(&states, -1));
    }
}
