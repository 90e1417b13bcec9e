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

//! A connector instance's directory under `snapshot_dir`, which holds its buckets' KV
//! snapshot files (whole tables' rows, so they are private to the process's user: every
//! directory is created 0700 and every file 0600, and a directory of that name owned by
//! another user, or a symbolic link in its place, is refused).
//!
//! The directory is created at the first copy, locked (`flock`) while the instance is open and
//! removed at close. A process that ends without closing (a crash, SIGKILL) releases the
//! lock with its last file descriptor and leaves the directory behind; the next `open` of a
//! primary-key table removes every such unlocked directory of the same user in its
//! `snapshot_dir` ([`remove_leftovers`]). A locked one belongs to an instance that runs, in
//! this process or another, and is left alone.

use std::fs::{DirBuilder, File, OpenOptions, Permissions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

/// The mode of every directory created under `snapshot_dir` (and of `snapshot_dir` itself
/// when the plugin creates it).
pub const DIR_MODE: u32 = 0o700;
/// The mode of every snapshot file.
pub const FILE_MODE: u32 = 0o600;
/// How the directories of connector instances are named (the KV snapshot lease's id).
pub const PREFIX: &str = "iggy-fluss-source-";

/// One connector instance's directory in `snapshot_dir`: created and locked on first need,
/// removed when dropped.
#[derive(Debug)]
pub struct SnapshotDir {
    root: PathBuf,
    path: PathBuf,
    /// The directory, open and locked, once created.
    held: Mutex<Option<File>>,
}

impl SnapshotDir {
    /// The directory `owner` (which starts with [`PREFIX`]) in `root`; nothing is created yet.
    pub fn new(root: &Path, owner: &str) -> Self {
        Self {
            root: root.to_owned(),
            path: root.join(owner),
            held: Mutex::new(None),
        }
    }

    /// `snapshot_dir`.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The instance's directory (it may not exist yet).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The directory, created (with `snapshot_dir` when missing) and locked on first need,
    /// and again when it was removed meanwhile (by a cleaner of the temporary directory).
    pub fn ensure(&self) -> io::Result<&Path> {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        if held.as_ref().is_some_and(|dir| same_inode(dir, &self.path)) {
            return Ok(&self.path);
        }
        *held = None;
        *held = Some(self.create_locked()?);
        Ok(&self.path)
    }

    fn create_locked(&self) -> io::Result<File> {
        DirBuilder::new()
            .recursive(true)
            .mode(DIR_MODE)
            .create(&self.root)?;
        // Another instance's `open` may remove the directory between its creation and the
        // lock (it is a leftover until locked): then it is created again.
        for _ in 0..5 {
            match DirBuilder::new().mode(DIR_MODE).create(&self.path) {
                Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(e),
                _ => {}
            }
            let dir = open_own_dir(&self.path)?;
            if !try_lock(&dir)? {
                return Err(io::Error::new(
                    io::ErrorKind::WouldBlock,
                    "another process holds this directory (a connector instance of the same id, table and instance_index runs there too)",
                ));
            }
            if same_inode(&dir, &self.path) {
                // A leftover of an earlier run of this instance keeps its name: private again.
                dir.set_permissions(Permissions::from_mode(DIR_MODE))?;
                return Ok(dir);
            }
        }
        Err(io::Error::other(
            "the directory was removed each time it was created",
        ))
    }

    /// Removes the directory and what it holds, and releases it (the instance closes): a
    /// copy still being read by a thread keeps its open files until it stops.
    pub fn remove(&self) {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(dir) = held.take() {
            // Removed while still locked, so no other instance's `open` takes it meanwhile.
            if same_inode(&dir, &self.path) {
                let _ = std::fs::remove_dir_all(&self.path);
            }
        }
    }
}

impl Drop for SnapshotDir {
    fn drop(&mut self) {
        self.remove();
    }
}

/// Creates directory `path` (0700); its parent exists.
pub fn create_private_dir(path: &Path) -> io::Result<()> {
    DirBuilder::new().mode(DIR_MODE).create(path)
}

/// Creates (or truncates) file `path` (0600) for writing.
pub fn create_private_file(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(FILE_MODE)
        .open(path)
}

/// Bytes free for this user on the file system holding `path`.
pub fn available(path: &Path) -> io::Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in the path"))?;
    let mut stat = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `path` is a NUL-terminated string and `stat` a buffer of the size statvfs writes.
    if unsafe { libc::statvfs(path.as_ptr(), stat.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: statvfs returned 0, so it filled the buffer.
    let stat = unsafe { stat.assume_init() };
    // Both are 64-bit on x86_64 and aarch64 Linux, narrower on some other targets.
    #[allow(clippy::useless_conversion)]
    Ok(u64::from(stat.f_bavail).saturating_mul(u64::from(stat.f_frsize)))
}

/// A directory another run left in `snapshot_dir`, and what became of it.
#[derive(Debug)]
pub struct Leftover {
    /// The directory.
    pub path: PathBuf,
    /// The bytes of its files.
    pub bytes: u64,
    /// `Err` when it could not be removed.
    pub removed: io::Result<()>,
}

/// Removes the directories of connector instances (named [`PREFIX`]…) that this user owns in
/// `root` and no process holds: what runs that ended without closing left behind. A `root`
/// that does not exist (yet) holds none.
pub fn remove_leftovers(root: &Path) -> Vec<Leftover> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut leftovers = Vec::new();
    for entry in entries.flatten() {
        if !entry.file_name().to_string_lossy().starts_with(PREFIX) {
            continue;
        }
        let path = entry.path();
        // Another user's directory, a file, a link: not this user's leftover.
        let Ok(dir) = open_own_dir(&path) else {
            continue;
        };
        // Held: its instance runs.
        if !try_lock(&dir).unwrap_or(false) {
            continue;
        }
        let bytes = disk_bytes(&path);
        let removed = std::fs::remove_dir_all(&path);
        leftovers.push(Leftover {
            path,
            bytes,
            removed,
        });
    }
    leftovers
}

/// The bytes of the files under `path`.
pub fn disk_bytes(path: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(path) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.metadata() {
            Ok(meta) if meta.is_dir() => disk_bytes(&entry.path()),
            Ok(meta) => meta.len(),
            Err(_) => 0,
        })
        .sum()
}

/// Opens directory `path` if it is one (not a link to one) and belongs to this process's user.
fn open_own_dir(path: &Path) -> io::Result<File> {
    let dir = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
        .open(path)?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    let owner = dir.metadata()?.uid();
    if owner != me {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("it belongs to user id {owner}, not to this process's user ({me})"),
        ));
    }
    Ok(dir)
}

/// Takes the exclusive lock of `dir` without waiting; `false` when another open file holds
/// it (this process's or another's).
fn try_lock(dir: &File) -> io::Result<bool> {
    // SAFETY: the descriptor belongs to `dir`, which lives across the call.
    if unsafe { libc::flock(dir.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        return Ok(true);
    }
    let error = io::Error::last_os_error();
    if error.kind() == io::ErrorKind::WouldBlock {
        Ok(false)
    } else {
        Err(error)
    }
}

/// Whether `path` is still the directory `dir` was opened at.
fn same_inode(dir: &File, path: &Path) -> bool {
    match (dir.metadata(), std::fs::symlink_metadata(path)) {
        (Ok(open), Ok(named)) => open.ino() == named.ino() && open.dev() == named.dev(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh directory for one test, removed at the end.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(name: &str) -> Self {
            let path =
                std::env::temp_dir().join(format!("fluss-local-dir-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&path);
            Self(path)
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn mode(path: &Path) -> u32 {
        std::fs::symlink_metadata(path).unwrap().mode() & 0o777
    }

    #[test]
    fn directories_and_files_are_private_and_removed_with_the_instance() {
        let scratch = Scratch::new("private");
        let root = scratch.0.join("snapshots");
        let dir = SnapshotDir::new(&root, "iggy-fluss-source-1-2-0");
        assert!(!root.exists(), "nothing is created before the first copy");
        let path = dir.ensure().unwrap().to_owned();
        assert_eq!(mode(&root), DIR_MODE, "a snapshot_dir the plugin creates");
        assert_eq!(mode(&path), DIR_MODE);
        let bucket = path.join("b0");
        create_private_dir(&bucket).unwrap();
        let mut file = create_private_file(&bucket.join("000001.sst")).unwrap();
        io::Write::write_all(&mut file, b"rows").unwrap();
        assert_eq!(mode(&bucket), DIR_MODE);
        assert_eq!(mode(&bucket.join("000001.sst")), FILE_MODE);
        assert_eq!(disk_bytes(&path), 4);
        drop(dir);
        assert!(!path.exists(), "removed with the instance");
        assert!(root.exists(), "snapshot_dir itself stays");
    }

    #[test]
    fn a_directory_removed_meanwhile_is_created_again() {
        let scratch = Scratch::new("again");
        let dir = SnapshotDir::new(&scratch.0, "iggy-fluss-source-1-2-0");
        let path = dir.ensure().unwrap().to_owned();
        std::fs::remove_dir_all(&path).unwrap();
        assert_eq!(dir.ensure().unwrap(), path);
        assert!(path.is_dir());
    }

    #[test]
    fn a_leftover_of_the_same_name_is_taken_over_private_again() {
        let scratch = Scratch::new("takeover");
        let path = scratch.0.join("iggy-fluss-source-1-2-0");
        std::fs::create_dir_all(path.join("b3")).unwrap();
        std::fs::set_permissions(&path, Permissions::from_mode(0o755)).unwrap();
        let dir = SnapshotDir::new(&scratch.0, "iggy-fluss-source-1-2-0");
        dir.ensure().unwrap();
        assert_eq!(mode(&path), DIR_MODE);
    }

    #[test]
    fn a_held_directory_is_refused_to_a_second_instance_of_the_same_name() {
        let scratch = Scratch::new("held");
        let first = SnapshotDir::new(&scratch.0, "iggy-fluss-source-1-2-0");
        first.ensure().unwrap();
        let second = SnapshotDir::new(&scratch.0, "iggy-fluss-source-1-2-0");
        let e = second.ensure().unwrap_err();
        assert!(e.to_string().contains("another process holds"), "{e}");
        drop(second);
        assert!(first.path().is_dir(), "the holder's directory stays");
    }

    #[test]
    fn a_link_in_place_of_the_directory_is_refused() {
        let scratch = Scratch::new("link");
        let elsewhere = scratch.0.join("elsewhere");
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, scratch.0.join("iggy-fluss-source-1-2-0")).unwrap();
        let dir = SnapshotDir::new(&scratch.0, "iggy-fluss-source-1-2-0");
        assert!(dir.ensure().is_err(), "a link is not followed");
        assert!(remove_leftovers(&scratch.0).is_empty());
        assert!(elsewhere.is_dir(), "nothing behind the link is removed");
    }

    #[test]
    fn leftovers_are_removed_and_held_directories_and_other_names_kept() {
        let scratch = Scratch::new("leftovers");
        let live = SnapshotDir::new(&scratch.0, "iggy-fluss-source-1-2-0");
        live.ensure().unwrap();
        let crashed = scratch.0.join("iggy-fluss-source-3-2-0");
        std::fs::create_dir_all(crashed.join("b0")).unwrap();
        std::fs::write(crashed.join("b0/000009.sst"), vec![0; 1000]).unwrap();
        let unrelated = scratch.0.join("something-else");
        std::fs::create_dir_all(&unrelated).unwrap();
        let found = remove_leftovers(&scratch.0);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].path, crashed);
        assert_eq!(found[0].bytes, 1000);
        assert!(found[0].removed.is_ok());
        assert!(!crashed.exists());
        assert!(live.path().is_dir(), "a held directory stays");
        assert!(unrelated.is_dir(), "only the plugin's names are looked at");
        assert!(remove_leftovers(&scratch.0.join("missing")).is_empty());
    }

    #[test]
    fn free_space_is_that_of_the_file_system() {
        let free = available(&std::env::temp_dir()).unwrap();
        assert!(free > 0);
        assert!(available(Path::new("/no/such/dir")).is_err());
    }
}
