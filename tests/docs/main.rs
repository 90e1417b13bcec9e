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

//! What the user docs claim, checked without a cluster: every figure against the claim it
//! belongs to in `benches/figures.toml` (figures), links and anchors, also the sections code and
//! examples name (links), the README as the front door, its prerequisites and the secrets
//! example (readme), the README's sample output rebuilt by the code (sample), the reference
//! tables of Messages against the encoders (messages), the version, the CHANGELOG, the state
//! format and the shipped connector files (release), and what no user file may contain:
//! history, lab notes (hygiene).

mod figures;
mod hygiene;
mod links;
mod messages;
mod readme;
mod release;
mod sample;

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The chapters in `docs/`, sorted, as paths relative to the repository root.
fn chapters() -> Vec<String> {
    let mut found: Vec<String> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .map(|p| format!("docs/{}", p.file_name().unwrap().to_string_lossy()))
        .collect();
    found.sort();
    assert!(found.len() >= 6, "the chapters: {found:?}");
    found
}

/// The documents a user reads for the product: the README, the chapters and BENCHMARKS.md.
fn user_markdown() -> Vec<String> {
    let mut files = vec!["README.md".to_owned(), "BENCHMARKS.md".to_owned()];
    files.extend(chapters());
    files
}

/// Every user-facing file: the markdown above, the CHANGELOG, the connector files and the
/// runtime config.
fn user_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = user_markdown().iter().map(|f| root().join(f)).collect();
    files.push(root().join("CHANGELOG.md"));
    files.push(root().join("config.toml"));
    let mut pending = vec![root().join("example_config")];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("example_config") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                pending.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files
}

/// Runs of whitespace folded to one space, so a phrase broken over two lines still matches.
fn folded(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The text of the section that starts with the heading line `heading` (e.g. `## Sizing`), up
/// to the next heading of the same or a higher level.
fn section<'a>(text: &'a str, heading: &str) -> &'a str {
    let level = heading.split(' ').next().expect("a heading").len();
    let start = text
        .find(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("no section `{heading}`"))
        + 1;
    let body = &text[start + heading.len()..];
    let mut offset = 0;
    let mut in_code = false;
    for line in body.lines() {
        if line.starts_with("```") {
            in_code = !in_code;
        }
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if !in_code && hashes > 0 && hashes <= level && line[hashes..].starts_with(' ') {
            break;
        }
        offset += line.len() + 1;
    }
    &text[start..(start + heading.len() + offset).min(text.len())]
}

/// The fenced code blocks of `text` with the given info string (`toml`, `bash`), in order.
fn code_blocks<'a>(text: &'a str, info: &str) -> Vec<&'a str> {
    let fence = format!("```{info}\n");
    let mut blocks = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(&fence) {
        let body = &rest[at + fence.len()..];
        let end = body.find("```").expect("a closing fence");
        blocks.push(&body[..end]);
        rest = &body[end + 3..];
    }
    blocks
}

/// Whether `path` (relative to the root) exists in the repository.
fn exists(path: &Path) -> bool {
    root().join(path).exists()
}
