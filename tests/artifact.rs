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

//! The release artifact's library (scripts/release.sh names it in `FLUSS_PLUGIN_LIBRARY`, in the
//! unpacked archive) loads on any glibc Linux at or above the glibc the docs name: it
//! needs no shared library beyond the C runtime (RocksDB, its compression libraries and
//! libstdc++ are linked in), no newer glibc symbol than that one, and no text relocations; the
//! archive holds the docs and example configs beside it.
//!
//! `test = false`: the suites' own build links the system's RocksDB; scripts/release.sh runs
//! this file against the artifact, `cargo test --release --test artifact` with the variable set.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The shared libraries the artifact may need: the C runtime of every glibc Linux (and the
/// dynamic loader of either architecture the release is built for).
const C_RUNTIME: [&str; 7] = [
    "ld-linux-aarch64.so.1",
    "ld-linux-x86-64.so.2",
    "libc.so.6",
    "libdl.so.2",
    "libgcc_s.so.1",
    "libm.so.6",
    "libpthread.so.0",
];

/// The library under test: only the one the variable names, never the suites' build.
fn artifact() -> PathBuf {
    let lib = std::env::var_os("FLUSS_PLUGIN_LIBRARY")
        .filter(|l| !l.is_empty())
        .map(PathBuf::from)
        .expect(
            "FLUSS_PLUGIN_LIBRARY names the release artifact's library; scripts/release.sh sets it",
        );
    assert!(lib.is_file(), "{} is not a file", lib.display());
    lib
}

/// What `objdump -p` says the library needs.
struct Needs {
    /// `NEEDED` entries of the dynamic section.
    libraries: Vec<String>,
    /// Symbol versions required from each needed library (`GLIBC_2.34`, …).
    versions: Vec<String>,
    /// The dynamic section's flags ask the loader to patch code (`TEXTREL`).
    text_relocations: bool,
}

fn needs(library: &Path) -> Needs {
    let output = Command::new("objdump")
        .arg("-p")
        .arg(library)
        .output()
        .expect("objdump (binutils) is installed");
    assert!(
        output.status.success(),
        "objdump -p {} failed: {}",
        library.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8_lossy(&output.stdout);
    let mut needs = Needs {
        libraries: Vec::new(),
        versions: Vec::new(),
        text_relocations: false,
    };
    let mut in_version_references = false;
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["NEEDED", lib] => needs.libraries.push((*lib).to_owned()),
            ["TEXTREL", ..] => needs.text_relocations = true,
            ["Version", "References:"] => in_version_references = true,
            // `0x0d696914 0x00 05 GLIBC_2.34` under `required from libc.so.6:`.
            [hash, _, _, version] if in_version_references && hash.starts_with("0x") => {
                needs.versions.push((*version).to_owned())
            }
            _ => {}
        }
    }
    needs
}

/// `2.34` as `[2, 34]`.
fn version_numbers(text: &str) -> Vec<u32> {
    text.split('.')
        .map(|n| {
            n.parse()
                .unwrap_or_else(|e| panic!("version {text:?}: {e}"))
        })
        .collect()
}

/// The glibc `doc` (relative to the repository root) names: the version after "needs glibc ".
fn documented_glibc(doc: &str) -> Vec<u32> {
    const MARK: &str = "needs glibc ";
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(doc);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{doc}: {e}"));
    let folded = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let at = folded
        .find(MARK)
        .unwrap_or_else(|| panic!("{doc} says which glibc the library needs (`{MARK}X.Y`)"));
    let number: String = folded[at + MARK.len()..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    version_numbers(number.trim_end_matches('.'))
}

/// What the archive's directory holds beside the library (docs/install.md lists it).
const BESIDE_THE_LIBRARY: [&str; 8] = [
    "CHANGELOG.md",
    "LICENSE",
    "README.md",
    "SHA256SUMS",
    "config.toml",
    "docs/install.md",
    "example_config/config.toml",
    "example_config/connectors",
];

#[test]
fn the_archive_holds_the_docs_and_the_example_configs() {
    let lib = artifact();
    let dir = lib.parent().expect("the archive's directory");
    let missing: Vec<&str> = BESIDE_THE_LIBRARY
        .into_iter()
        .filter(|name| !dir.join(name).exists())
        .collect();
    assert!(
        missing.is_empty(),
        "{} lacks {missing:?} (scripts/release.sh packs them)",
        dir.display()
    );
    let sums = std::fs::read_to_string(dir.join("SHA256SUMS")).expect("SHA256SUMS");
    assert!(
        sums.lines()
            .any(|l| l.ends_with(" libiggy_connector_fluss_source.so")),
        "SHA256SUMS covers the library:\n{sums}"
    );
}

#[test]
fn the_artifact_needs_no_shared_library_beyond_the_c_runtime() {
    let lib = artifact();
    let needs = needs(&lib);
    let foreign: Vec<&String> = needs
        .libraries
        .iter()
        .filter(|l| !C_RUNTIME.contains(&l.as_str()))
        .collect();
    assert!(
        foreign.is_empty(),
        "{} needs {foreign:?}; RocksDB, its compression libraries and libstdc++ belong inside it \
         (scripts/release.sh); all it needs: {:?}",
        lib.display(),
        needs.libraries
    );
    assert!(
        needs.libraries.iter().any(|l| l == "libc.so.6"),
        "{:?}",
        needs.libraries
    );
    assert!(
        !needs.text_relocations,
        "{} has text relocations (position-dependent code linked in)",
        lib.display()
    );
}

#[test]
fn the_artifact_needs_the_glibc_the_docs_name() {
    let lib = artifact();
    let newest = needs(&lib)
        .versions
        .iter()
        .filter_map(|v| v.strip_prefix("GLIBC_"))
        .map(version_numbers)
        .max()
        .expect("the library requires GLIBC_ symbol versions");
    for doc in ["docs/install.md", "README.md"] {
        assert_eq!(
            newest,
            documented_glibc(doc),
            "the newest GLIBC_ version {} requires is the one {doc} names",
            lib.display()
        );
    }
}

/// The archive's connector files work as shipped: each names the plugin by the file name of the
/// library beside it (which a deployment puts next to `iggy-connectors`, where the runtime
/// finds it from any working directory), and the plugin accepts its `[plugin_config]`.
#[test]
fn the_archives_connector_files_name_its_library() {
    let lib = artifact();
    let dir = lib.parent().expect("the archive's directory");
    let name = lib
        .file_stem()
        .expect("the library's file name")
        .to_string_lossy()
        .into_owned();
    let mut files = vec![dir.join("config.toml")];
    for entry in std::fs::read_dir(dir.join("example_config/connectors")).expect("examples") {
        files.push(entry.expect("entry").path());
    }
    files.retain(|p| p.extension().is_some_and(|e| e == "toml"));
    assert!(files.len() >= 4, "{files:?}");
    for path in &files {
        let file = fluss_source_runner::ConnectorFile::load(path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(
            file.path,
            name,
            "{}: `path` is the library's file name without `.so`",
            path.display()
        );
        let config = file.plugin_config_json(std::iter::empty());
        iggy_connector_fluss_source::config::Config::parse(&config)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
}
