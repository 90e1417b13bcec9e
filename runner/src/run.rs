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

//! [`run`]: the loop the CLI runs: take a batch, turn its payloads into what the runtime
//! writes (or reject it, as the runtime does, see [`crate::payload`]), write its lines,
//! persist its state, then Ack (or Nack on schedule), like the runtime's forwarding task
//! (contract §4.2).

use snafu::ResultExt;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::error::{OutputSnafu, Result, WriteSnafu};
use crate::harness::Harness;
use crate::payload::StreamSchema;
use crate::{output, state};

static STOP: AtomicBool = AtomicBool::new(false);

/// Where message lines go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// Standard output.
    Stdout,
    /// A file, created or truncated.
    File(PathBuf),
}

/// What to run and when to stop.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Plugin library.
    pub plugin: PathBuf,
    /// Config JSON passed to `iggy_source_open`.
    pub config_json: String,
    /// State file read at open and written before each Ack of a batch with state.
    pub state_path: PathBuf,
    /// Where message lines go.
    pub output: Output,
    /// The stream encoder payloads go through (the connector file's last `[[streams]]`
    /// `schema`); `None` uses each batch's own schema, and leaves payloads of schemas the
    /// runner does not emulate as they are.
    pub stream_schema: Option<StreamSchema>,
    /// Nack every N-th batch (simulating a failed send: no lines, no state).
    pub nack_every: Option<u64>,
    /// Stop after acking the batch that brings the written messages to this count.
    pub max_messages: Option<u64>,
    /// Stop after this many batches (acked or nacked).
    pub max_batches: Option<u64>,
    /// Stop when no batch arrives for this long.
    pub idle_exit: Option<Duration>,
}

/// Why the run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// `max_messages` reached.
    MaxMessages,
    /// `max_batches` reached.
    MaxBatches,
    /// No batch within `idle_exit`.
    Idle,
    /// SIGINT or SIGTERM.
    Signal,
}

/// Totals of one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunSummary {
    /// Plugin id used.
    pub plugin_id: u32,
    /// Batches taken.
    pub batches: u64,
    /// Batches acknowledged.
    pub acked: u64,
    /// Batches nacked, on schedule or rejected.
    pub nacked: u64,
    /// Batches nacked because the runtime would reject them (decode or encode errors).
    pub rejected: u64,
    /// Messages written (acknowledged batches only).
    pub messages: u64,
    /// What ended the run.
    pub stopped_by: StopReason,
    /// `iggy_source_close`'s return code.
    pub close_code: i32,
}

/// Installs SIGINT/SIGTERM handlers that make [`run`] stop taking batches, close the
/// instance and return.
pub fn install_signal_handlers() {
    extern "C" fn on_signal(_: libc::c_int) {
        // Only an atomic store: async-signal-safe.
        STOP.store(true, Ordering::SeqCst);
    }
    let handler = on_signal as extern "C" fn(libc::c_int);
    // SAFETY: the handler only stores to an atomic.
    unsafe {
        libc::signal(libc::SIGINT, handler as libc::sighandler_t);
        libc::signal(libc::SIGTERM, handler as libc::sighandler_t);
    }
}

/// Whether a stop signal arrived.
pub fn stop_requested() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// Loads the plugin, opens it with the saved state, and delivers batches until a stop
/// condition; always closes the instance.
pub fn run(options: RunOptions) -> Result<RunSummary> {
    let harness = Harness::load(&options.plugin)?;
    let saved = state::load(&options.state_path)?;
    let instance = harness.open(&options.config_json, saved.as_deref())?;
    let mut out: Box<dyn Write> = match &options.output {
        Output::Stdout => Box::new(BufWriter::new(std::io::stdout().lock())),
        Output::File(path) => Box::new(BufWriter::new(
            File::create(path).context(WriteSnafu { path })?,
        )),
    };
    instance.start();
    let mut summary = RunSummary {
        plugin_id: instance.id(),
        batches: 0,
        acked: 0,
        nacked: 0,
        rejected: 0,
        messages: 0,
        stopped_by: StopReason::Signal,
        close_code: 0,
    };
    let mut last_batch = Instant::now();
    let mut lines = String::new();
    let result = loop {
        if stop_requested() {
            break Ok(StopReason::Signal);
        }
        let Some(batch) = instance.next_batch(Duration::from_millis(100)) else {
            if options
                .idle_exit
                .is_some_and(|idle| last_batch.elapsed() >= idle)
            {
                break Ok(StopReason::Idle);
            }
            continue;
        };
        last_batch = Instant::now();
        summary.batches += 1;
        let nack = options
            .nack_every
            .is_some_and(|every| every > 0 && summary.batches.is_multiple_of(every));
        lines.clear();
        match output::render_batch(&batch, options.stream_schema, &mut lines) {
            Err(rejection) => {
                // The runtime's one ERROR line for the batch; nothing is sent or saved.
                eprintln!(
                    "ERROR runner: {}",
                    rejection.log_line(batch.batch_id, instance.id())
                );
                instance.nack(&batch);
                summary.nacked += 1;
                summary.rejected += 1;
            }
            Ok(()) if nack => {
                instance.nack(&batch);
                summary.nacked += 1;
            }
            Ok(()) => {
                // Lines are out (flushed) and state is durable before the Ack, as in the runtime.
                let written = out
                    .write_all(lines.as_bytes())
                    .and_then(|()| out.flush())
                    .context(OutputSnafu);
                let saved = written.and_then(|()| match &batch.messages.state {
                    Some(state) => state::persist(&options.state_path, &state.0),
                    None => Ok(()),
                });
                if let Err(error) = saved {
                    instance.nack(&batch);
                    break Err(error);
                }
                instance.ack(&batch);
                summary.acked += 1;
                summary.messages += batch.messages.messages.len() as u64;
            }
        }
        if options
            .max_messages
            .is_some_and(|max| summary.messages >= max)
        {
            break Ok(StopReason::MaxMessages);
        }
        if options
            .max_batches
            .is_some_and(|max| summary.batches >= max)
        {
            break Ok(StopReason::MaxBatches);
        }
    };
    summary.close_code = instance.close();
    summary.stopped_by = result?;
    Ok(summary)
}
