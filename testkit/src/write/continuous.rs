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

//! A writer that keeps writing rounds of rows to one table on its own thread until stopped,
//! recording which writes the cluster acknowledged: the load of the failover test and of the
//! soak bench, which then check that every acknowledged write arrived.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use fluss::client::{AppendWriter, UpsertWriter};
use fluss::metadata::TablePath;
use fluss::row::GenericRow;

use crate::{Cluster, tables};

/// How a [`Writer`] writes.
#[derive(Debug, Clone, Copy)]
pub struct Pace {
    /// Rows per round; a round is flushed (acknowledged by all in-sync replicas) before the
    /// next one starts.
    pub round: i64,
    /// Distinct keys of a primary-key table, so most writes are updates.
    pub keys: i64,
    /// A primary-key table's write `seq` deletes its key when `seq % delete_every` is 0 (and
    /// `delete_every` is not); its key in [`Written`] is then `d<seq>`.
    pub delete_every: i64,
    /// Longest a flush may take; a longer one counts as not acknowledged.
    pub flush_timeout: Duration,
    /// Pause between two rounds.
    pub pause: Duration,
    /// Printed (`<label>: a round to … is not acknowledged`) when a round fails; `None`
    /// keeps quiet.
    pub label: Option<&'static str>,
}

/// What a writer wrote: keys whose flush succeeded, and keys of rounds whose flush failed or
/// timed out (they may or may not be in the table).
#[derive(Debug, Default)]
pub struct Written {
    /// Keys of acknowledged writes, in write order: a log row's `id`, a change's `name`.
    pub acked: Vec<String>,
    /// When each key of `acked` was acknowledged (its round's flush returned).
    pub acked_at: Vec<Instant>,
    /// Keys of rounds whose flush failed or timed out.
    pub unconfirmed: Vec<String>,
    /// The longest flush.
    pub longest_flush: Duration,
    /// Writers replaced after a flush that failed or timed out.
    pub rebuilds: usize,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A thread writing rounds of rows to one table until [`Writer::finish`].
pub struct Writer {
    written: Arc<Mutex<Written>>,
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

impl Writer {
    /// Starts writing to `path` on `cluster`: log rows ([`tables::sample_row`]) keyed by
    /// `id`, or for a primary-key table (a key, a name and a number) rows whose
    /// `name` (`w<seq>`) names the write, on key `seq % pace.keys`, some of them deletes
    /// ([`Pace::delete_every`]).
    pub fn start(cluster: Arc<Cluster>, path: TablePath, primary_key: bool, pace: Pace) -> Self {
        let written = Arc::new(Mutex::new(Written::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (written, stop) = (written.clone(), stop.clone());
            std::thread::spawn(move || {
                // One runtime per writer session: a fluss-rs 1.0.0 sender whose flush did not
                // finish can spin in `RecordAccumulator::ready` for good, starving a
                // current-thread runtime; dropping the runtime ends it (rows it held count as
                // unconfirmed).
                let mut seq = 0;
                while !stop.load(Ordering::Relaxed) {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .expect("writer runtime");
                    let session = Session {
                        cluster: cluster.clone(),
                        path: path.clone(),
                        primary_key,
                        pace,
                        written: written.clone(),
                        stop: stop.clone(),
                    };
                    seq = runtime.block_on(session.write_rounds(seq));
                    runtime.shutdown_background();
                }
            })
        };
        Self {
            written,
            stop,
            thread,
        }
    }

    /// The keys acknowledged so far.
    pub fn acked(&self) -> Vec<String> {
        lock(&self.written).acked.clone()
    }

    /// How many writes were acknowledged so far.
    pub fn count(&self) -> usize {
        lock(&self.written).acked.len()
    }

    /// Stops writing and returns what was written.
    pub fn finish(self) -> Written {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().expect("writer thread");
        std::mem::take(&mut *lock(&self.written))
    }
}

/// One write of a round.
struct Write {
    /// Its key in [`Written`].
    key: String,
    row: GenericRow<'static>,
    /// A delete of the row's key rather than an upsert or an append.
    delete: bool,
}

/// The writes of round `seq..seq + pace.round` (see [`Writer::start`]).
fn round(primary_key: bool, seq: i64, pace: &Pace) -> Vec<Write> {
    (seq..seq + pace.round)
        .map(|n| {
            if primary_key {
                let delete = pace.delete_every > 0 && n % pace.delete_every == 0;
                let mut row = GenericRow::new(3);
                row.set_field(0, n % pace.keys);
                row.set_field(1, format!("w{n}"));
                row.set_field(2, n as f64);
                let key = if delete {
                    format!("d{n}")
                } else {
                    format!("w{n}")
                };
                Write { key, row, delete }
            } else {
                Write {
                    key: n.to_string(),
                    row: tables::sample_row(n),
                    delete: false,
                }
            }
        })
        .collect()
}

/// One writer of either table kind.
enum Sink {
    Append(AppendWriter),
    Upsert(UpsertWriter),
}

impl Sink {
    fn write(&self, write: &Write) -> bool {
        match self {
            Sink::Append(w) => w.append(&write.row).is_ok(),
            Sink::Upsert(w) if write.delete => w.delete(&write.row).is_ok(),
            Sink::Upsert(w) => w.upsert(&write.row).is_ok(),
        }
    }

    async fn flush(&self, timeout: Duration) -> Result<(), String> {
        let flushing = async {
            match self {
                Sink::Append(w) => w.flush().await,
                Sink::Upsert(w) => w.flush().await,
            }
        };
        match tokio::time::timeout(timeout, flushing).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err(format!("no acknowledgement within {timeout:?}")),
        }
    }
}

/// One writer session: one connection and one fluss-rs writer, until a round fails.
struct Session {
    cluster: Arc<Cluster>,
    path: TablePath,
    primary_key: bool,
    pace: Pace,
    written: Arc<Mutex<Written>>,
    stop: Arc<AtomicBool>,
}

impl Session {
    /// Writes rounds from `seq` until stopped or a round fails; returns the next `seq`.
    async fn write_rounds(self, mut seq: i64) -> i64 {
        // A writer whose flush failed or timed out is replaced on a new connection: after a
        // leader moves, an old fluss-rs writer can stay stuck for minutes. Rows it still
        // holds may arrive later; they count as unconfirmed.
        let conn = self.cluster.connection().await;
        // The table's metadata comes from any server the client knows, which may be one that
        // hangs (a paused process): bounded like a flush, then the session starts over.
        let table = tokio::time::timeout(self.pace.flush_timeout, conn.get_table(&self.path)).await;
        let Ok(Ok(table)) = table else {
            tokio::time::sleep(Duration::from_secs(1)).await;
            return seq;
        };
        let sink = if self.primary_key {
            table
                .new_upsert()
                .and_then(|u| u.create_writer())
                .map(Sink::Upsert)
        } else {
            table
                .new_append()
                .and_then(|a| a.create_writer())
                .map(Sink::Append)
        };
        let Ok(sink) = sink else {
            tokio::time::sleep(Duration::from_secs(1)).await;
            return seq;
        };
        while !self.stop.load(Ordering::Relaxed) {
            let rows = round(self.primary_key, seq, &self.pace);
            seq += self.pace.round;
            // Every row is queued even after a refusal, so the round's keys are all accounted.
            let mut queued = true;
            for write in &rows {
                queued &= sink.write(write);
            }
            let started = Instant::now();
            let flushed = sink.flush(self.pace.flush_timeout).await;
            let ok = queued && flushed.is_ok();
            {
                let mut w = lock(&self.written);
                w.longest_flush = w.longest_flush.max(started.elapsed());
                let keys = rows.into_iter().map(|write| write.key);
                if ok {
                    let now = Instant::now();
                    let before = w.acked.len();
                    w.acked.extend(keys);
                    let added = w.acked.len() - before;
                    w.acked_at.extend(std::iter::repeat_n(now, added));
                } else {
                    if let Some(label) = self.pace.label {
                        eprintln!(
                            "{label}: a round to {} is not acknowledged ({flushed:?}); new writer",
                            self.path
                        );
                    }
                    w.unconfirmed.extend(keys);
                    w.rebuilds += 1;
                }
            }
            if !ok {
                return seq;
            }
            tokio::time::sleep(self.pace.pause).await;
        }
        seq
    }
}
