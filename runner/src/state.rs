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

//! The runtime's state file (contract §2.3): missing or empty = no state; saves are
//! atomic (`.tmp`, fsync, rename, fsync of the directory).

use snafu::ResultExt;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::error::{ReadSnafu, Result, WriteSnafu};

/// Loads saved state; `None` if the file is missing or empty.
pub fn load(path: &Path) -> Result<Option<Vec<u8>>> {
    match std::fs::read(path) {
        Ok(bytes) if bytes.is_empty() => Ok(None),
        Ok(bytes) => Ok(Some(bytes)),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(source).context(ReadSnafu { path }),
    }
}

/// Writes `bytes` so that a crash leaves either the old or the new file, never a mix.
pub fn persist(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir).context(WriteSnafu { path: &dir })?;
    let mut tmp_name = path.as_os_str().to_owned();
    tmp_name.push(".tmp");
    let tmp = PathBuf::from(tmp_name);
    {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(&tmp).context(WriteSnafu { path: &tmp })?;
        file.write_all(bytes).context(WriteSnafu { path: &tmp })?;
        file.sync_data().context(WriteSnafu { path: &tmp })?;
    }
    std::fs::rename(&tmp, path).context(WriteSnafu { path })?;
    std::fs::File::open(&dir)
        .and_then(|d| d.sync_all())
        .context(WriteSnafu { path: &dir })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_and_empty_files_mean_no_state() {
        let dir = std::env::temp_dir().join(format!("runner-state-{}", std::process::id()));
        let path = dir.join("nested/source_x.state");
        assert_eq!(load(&path).unwrap(), None);
        persist(&path, b"").unwrap();
        assert_eq!(load(&path).unwrap(), None);
        persist(&path, &[1, 2, 3]).unwrap();
        assert_eq!(load(&path).unwrap(), Some(vec![1, 2, 3]));
        assert!(!path.with_extension("state.tmp").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
