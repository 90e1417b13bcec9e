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

//! What no user-facing file may contain: a directory of the machine the project was developed
//! on, a commit hash other than the tested apache/iggy commit, or history told in prose.

use crate::user_files;

/// The tested apache/iggy commit, the one hash the docs name.
const IGGY_COMMIT: &str = "cc269ef70ef2d78af5102f5560b5b03c9dd81401";

/// Words of 7 to 40 hexadecimal digits with a digit and a letter in them: commit hashes.
fn commit_hashes(text: &str) -> Vec<&str> {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|word| {
            (7..=40).contains(&word.len())
                && word
                    .chars()
                    .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
                && word.chars().any(|c| c.is_ascii_digit())
                && word.chars().any(|c| c.is_ascii_alphabetic())
                && !IGGY_COMMIT.starts_with(word)
        })
        .collect()
}

#[test]
fn no_user_file_names_a_commit_but_the_tested_iggy_one() {
    for path in user_files() {
        let text = std::fs::read_to_string(&path).expect("a text file");
        let hashes = commit_hashes(&text);
        assert!(
            hashes.is_empty(),
            "{} names commits {hashes:?}: user docs name releases (CHANGELOG.md) and the tested \
             apache/iggy commit only; a run's commit belongs in benches/figures.toml",
            path.display()
        );
    }
}

#[test]
fn no_user_file_depends_on_a_directory_outside_the_clone() {
    for path in user_files() {
        let text = std::fs::read_to_string(&path).expect("a text file");
        for needle in ["../shared", "/tmp/", "/work/"] {
            assert!(
                !text.contains(needle),
                "{} names `{needle}`: a user's clone has no such directory; name the thing to \
                 get and how (CONTRIBUTING.md \"The Iggy binaries\")",
                path.display()
            );
        }
    }
}

/// Phrases that tell the docs' history or how they were made instead of the product as it is.
const HISTORY: [&str; 10] = [
    "a later run",
    "an earlier run",
    "since commit",
    "before this commit",
    "used to",
    "no longer used",
    "agents",
    "workplace",
    "this session",
    "that code",
];

#[test]
fn no_user_doc_tells_history() {
    for path in user_files() {
        if path.ends_with("CHANGELOG.md") {
            continue; // history is its job
        }
        let text = std::fs::read_to_string(&path)
            .expect("a text file")
            .to_lowercase();
        for phrase in HISTORY {
            assert!(
                !text.contains(phrase),
                "{} says \"{phrase}\": describe the product as it is (git keeps the history)",
                path.display()
            );
        }
    }
}

#[test]
fn the_hash_scanner_finds_commits_and_leaves_the_rest() {
    let text = "commit 4a8de94 and a573f05; cc269ef and the full cc269ef70ef2d78a; \
                deadbeef words, 1432555 digits, 0x40000000, e2e, fluss_source, 8388608";
    assert_eq!(commit_hashes(text), ["4a8de94", "a573f05"]);
}

/// Words of lab notes: the machine and load of a measurement (BENCHMARKS.md states them, and
/// only it), design history, and apache/iggy's source files cited as evidence.
const LAB_NOTES: [&str; 12] = [
    "load average",
    "stolen by other guests",
    "xeon",
    "epyc",
    "24 gib",
    "were weighed",
    "the build without it",
    "core/connectors/runtime/",
    "core/sdk/src/",
    "core/server/src/",
    "over 500 lines",
    "measured:",
];

#[test]
fn no_user_file_holds_lab_notes() {
    for path in user_files() {
        if path.ends_with("BENCHMARKS.md") {
            continue; // the measurements' machine and load are its job
        }
        let text =
            crate::folded(&std::fs::read_to_string(&path).expect("a text file")).to_lowercase();
        for phrase in LAB_NOTES {
            assert!(
                !text.contains(phrase),
                "{} says \"{phrase}\": user docs state what is and cite figures by key; \
                 machines and loads go to BENCHMARKS.md, design history to CONTRIBUTING.md",
                path.display()
            );
        }
    }
}

/// The files of the examples, for the checks that hold for every user-facing file.
fn example_files() -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![crate::root().join("examples")];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("examples/") {
            let path = entry.expect("dir entry").path();
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            if path.is_dir() {
                if name != "target" && name != "__pycache__" {
                    pending.push(path);
                }
            } else if ["rs", "py", "toml"]
                .iter()
                .any(|e| path.extension().is_some_and(|x| x == *e))
                && name != "Cargo.lock"
            {
                files.push(path);
            }
        }
    }
    assert!(files.len() >= 5, "{files:?}");
    files
}

#[test]
fn no_example_file_holds_measurements() {
    for path in example_files() {
        let text = std::fs::read_to_string(&path)
            .expect("a text file")
            .to_lowercase();
        for phrase in LAB_NOTES
            .iter()
            .chain(&["cpu-seconds", "this session", "workplace"])
        {
            assert!(
                !text.contains(phrase),
                "{} says \"{phrase}\": an example states what it does; its costs are in \
                 BENCHMARKS.md",
                path.display()
            );
        }
    }
}

/// Every Rust file of the workspace, for the checks of code comments.
pub(crate) fn rust_files() -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let mut pending: Vec<std::path::PathBuf> = [
        "src", "sdk", "runner", "testkit", "tests", "benches", "examples",
    ]
    .iter()
    .map(|d| crate::root().join(d))
    .collect();
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("a source folder") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n != "target") {
                    pending.push(path);
                }
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    assert!(files.len() >= 50, "{} Rust files", files.len());
    files
}

#[test]
fn no_code_comment_explains_its_files_length() {
    let own = crate::root().join("tests/docs/hygiene.rs");
    for path in rust_files() {
        if path == own {
            continue; // the phrase is named above
        }
        let text = std::fs::read_to_string(&path).expect("a Rust file");
        for (n, line) in text.lines().enumerate() {
            let lower = line.to_lowercase();
            assert!(
                !(lower.contains("//") && lower.contains("over 500 lines")),
                "{}:{}: a comment states a rule or a reason, not the file's length: {line}",
                path.display(),
                n + 1
            );
        }
    }
}
