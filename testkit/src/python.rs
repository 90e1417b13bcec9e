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

//! The Python of the suites: the virtual environment `scripts/python-venv.sh` keeps in cargo's
//! target directory (`<target>/venv`, beside the profile directory of the running test binary),
//! with pyarrow, the Iggy client the Python consumer example uses and moto's S3 server. Never
//! the system interpreter's site-packages: distributions refuse `pip install` there (PEP 668).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The script that creates the environment and installs the packages.
const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/python-venv.sh");

/// The environment's interpreter. The first call of a test binary runs the script, which creates
/// the environment or installs what it lacks (and returns at once when it is complete; callers in
/// other processes wait on its lock).
pub fn python() -> PathBuf {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(|| ensure(&venv_dir())).clone()
}

/// A program the environment installed (`moto_server`), next to its interpreter.
pub fn program(name: &str) -> PathBuf {
    python().with_file_name(name)
}

/// `<target>/venv`: the running test binary is `<target>/<profile>/deps/NAME-HASH`.
fn venv_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    exe.ancestors()
        .nth(3)
        .expect("the test binary lies in <target>/<profile>/deps")
        .join("venv")
}

fn ensure(venv: &Path) -> PathBuf {
    let output = Command::new("bash")
        .arg(SCRIPT)
        .arg(venv)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {SCRIPT}: {e}"));
    assert!(
        output.status.success(),
        "{SCRIPT} {} failed; its output:\n{}",
        venv.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    let python = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    assert!(
        python.is_file(),
        "{SCRIPT} named {} as the interpreter, which does not exist",
        python.display()
    );
    python
}
