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

//! Processes that a test's shell scripts start in the background and leave behind when the
//! shell exits. Such an orphan goes to the system's init, and an init that does not reap its
//! children keeps every one that exits as a zombie, which `kill -0` still reports as running: a
//! script waiting for it to end would wait for ever. [`Adopted`] makes the test process their
//! parent instead (`PR_SET_CHILD_SUBREAPER`) and reaps those whose pids the scripts write down,
//! as a user's interactive shell reaps its jobs.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the pid files are read and their processes reaped.
const INTERVAL: Duration = Duration::from_millis(100);

/// While it lives, this process adopts its descendants' orphans and reaps those named by the
/// pid files it watches.
pub struct Adopted {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// The pids in `path`: a file holding one, or a directory of such files.
fn pids_in(path: &Path) -> Vec<libc::pid_t> {
    let files: Vec<PathBuf> = match std::fs::read_dir(path) {
        Ok(entries) => entries.flatten().map(|e| e.path()).collect(),
        Err(_) => vec![path.to_owned()],
    };
    files
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .filter_map(|text| text.trim().parse().ok())
        .collect()
}

impl Adopted {
    /// Adopts orphans from now on and reaps, every [`INTERVAL`], the exited ones among the
    /// pids that `pid_files` (files or directories of them, present or not yet) name.
    pub fn reap(pid_files: Vec<PathBuf>) -> Adopted {
        // SAFETY: prctl with PR_SET_CHILD_SUBREAPER takes one integer argument.
        let set = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
        assert_eq!(
            set,
            0,
            "prctl(PR_SET_CHILD_SUBREAPER): {}",
            std::io::Error::last_os_error()
        );
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                // Reaped once, a pid is never waited for again: the number may go to a child
                // this process waits for itself.
                let mut reaped = std::collections::HashSet::new();
                while !stop.load(Ordering::Relaxed) {
                    for pid in pid_files.iter().flat_map(|p| pids_in(p)) {
                        if reaped.contains(&pid) {
                            continue;
                        }
                        let mut status = 0;
                        // SAFETY: waitpid on a pid the scripts started; one that is not this
                        // process's child only returns an error.
                        if unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) } == pid {
                            reaped.insert(pid);
                        }
                    }
                    std::thread::sleep(INTERVAL);
                }
            })
        };
        Adopted {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Adopted {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        // SAFETY: as above; later orphans go to init again.
        unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) };
    }
}
