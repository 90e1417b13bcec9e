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

//! Counting the runtime's state saves: an inotify watch on its `[state] path` directory that
//! counts each write of a connector's state file and the file's size after it, so a bench can
//! report how often a connector's state is saved and how large each save is.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use super::*;

/// What the watch saw of one state file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Saves {
    /// Writes of the file (closed after writing, or renamed into place).
    pub count: u64,
    /// The file's size after each write, summed.
    pub bytes: u64,
    /// The largest size seen after a write.
    pub largest: u64,
}

impl Saves {
    /// Bytes per save (0 without saves).
    pub fn per_save(&self) -> f64 {
        self.bytes as f64 / self.count.max(1) as f64
    }
}

/// A running watch of a state directory, until [`StateSaves::finish`].
pub struct StateSaves {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<BTreeMap<String, Saves>>,
}

/// Events that mean a file holds new contents: written and closed, or renamed into place.
const EVENTS: u32 = libc::IN_CLOSE_WRITE | libc::IN_MOVED_TO;

impl StateSaves {
    /// Watches `dir` (created if missing): call it before the runtime starts, with
    /// [`ConnectorsRuntime::state_dir_in`] of the runtime's directory, so no save is missed.
    pub fn watch(dir: &Path) -> StateSaves {
        fs::create_dir_all(dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
        // SAFETY: plain syscalls on a descriptor this function owns; the path is a valid
        // NUL-terminated string.
        let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        assert!(
            fd >= 0,
            "inotify_init1: {}",
            std::io::Error::last_os_error()
        );
        let path = CString::new(dir.as_os_str().as_bytes()).expect("a path without NUL");
        // SAFETY: as above.
        let watch = unsafe { libc::inotify_add_watch(fd, path.as_ptr(), EVENTS) };
        assert!(
            watch >= 0,
            "inotify_add_watch {}: {}",
            dir.display(),
            std::io::Error::last_os_error()
        );
        let stop = Arc::new(AtomicBool::new(false));
        let dir = dir.to_owned();
        let stopping = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let mut seen: BTreeMap<String, Saves> = BTreeMap::new();
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                // One last read after the stop flag, so saves just before it count.
                let last = stopping.load(Ordering::Relaxed);
                let mut poll = libc::pollfd {
                    fd,
                    events: libc::POLLIN,
                    revents: 0,
                };
                // SAFETY: one valid pollfd; `buf` outlives the read and its length is passed.
                let n = unsafe {
                    libc::poll(&mut poll, 1, if last { 0 } else { 100 });
                    libc::read(fd, buf.as_mut_ptr().cast(), buf.len())
                };
                if n > 0 {
                    for name in names(&buf[..n as usize]) {
                        let size = fs::metadata(dir.join(&name)).map_or(0, |m| m.len());
                        let entry = seen.entry(name).or_default();
                        entry.count += 1;
                        entry.bytes += size;
                        entry.largest = entry.largest.max(size);
                    }
                    continue;
                }
                if last {
                    break;
                }
            }
            // SAFETY: the descriptor is ours and no longer used.
            unsafe { libc::close(fd) };
            seen
        });
        StateSaves { stop, thread }
    }

    /// Ends the watch: what it saw, per file name (e.g. `source_bench.state`).
    pub fn finish(self) -> BTreeMap<String, Saves> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().expect("the state watch thread")
    }
}

/// The file names of the inotify events in `buf` (`struct inotify_event`: wd, mask, cookie,
/// len, then `len` bytes of NUL-padded name).
fn names(buf: &[u8]) -> Vec<String> {
    const HEAD: usize = std::mem::size_of::<libc::inotify_event>();
    let mut names = Vec::new();
    let mut at = 0;
    while at + HEAD <= buf.len() {
        let len = u32::from_ne_bytes(buf[at + 12..at + 16].try_into().expect("4 bytes")) as usize;
        let name = &buf[at + HEAD..(at + HEAD + len).min(buf.len())];
        let name = name.split(|b| *b == 0).next().unwrap_or_default();
        if !name.is_empty() {
            names.push(String::from_utf8_lossy(name).into_owned());
        }
        at += HEAD + len;
    }
    names
}
