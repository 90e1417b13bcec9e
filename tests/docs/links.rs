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

//! Every relative link of the markdown files resolves: the file exists, and an anchor names a
//! heading of the file it points into.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::{exists, read, root, user_markdown};

/// GitHub's anchor of a heading: lower case, spaces to `-`, other punctuation dropped.
fn anchor(heading: &str) -> String {
    heading
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c.to_ascii_lowercase()),
            _ => None,
        })
        .collect()
}

/// The anchors of a markdown file's headings (outside code blocks).
fn anchors(text: &str) -> HashSet<String> {
    let mut found = HashSet::new();
    let mut in_code = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        }
        if !in_code && line.starts_with('#') {
            found.insert(anchor(line.trim_start_matches('#').trim()));
        }
    }
    found
}

/// The targets of a file's `](target)` links, external ones left out.
fn link_targets(text: &str) -> Vec<String> {
    text.match_indices("](")
        .filter_map(|(at, _)| {
            let target = &text[at + 2..];
            let target = &target[..target.find(')')?];
            (!target.starts_with("http") && !target.contains(' ')).then(|| target.to_owned())
        })
        .collect()
}

/// `dir/../x` and `dir/./x` folded, so a target can be looked up from the root.
fn normalized(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Problems with the links of the markdown file `name` (relative to the root).
fn broken_links(name: &str) -> (usize, Vec<String>) {
    let text = read(name);
    let dir = Path::new(name).parent().unwrap_or(Path::new(""));
    let mut problems = Vec::new();
    let targets = link_targets(&text);
    for target in &targets {
        let (file, fragment) = match target.split_once('#') {
            Some((file, fragment)) => (file, Some(fragment)),
            None => (target.as_str(), None),
        };
        let path = if file.is_empty() {
            PathBuf::from(name)
        } else {
            normalized(&dir.join(file))
        };
        if !exists(&path) {
            problems.push(format!(
                "{name} links to {target}: {} does not exist",
                path.display()
            ));
            continue;
        }
        if let Some(fragment) = fragment {
            let is_markdown = path.extension().is_some_and(|e| e == "md");
            if !is_markdown || !anchors(&read(&path.to_string_lossy())).contains(fragment) {
                problems.push(format!("{name} links to {target}: no such heading"));
            }
        }
    }
    (targets.len(), problems)
}

#[test]
fn every_link_of_the_docs_resolves() {
    let mut files = user_markdown();
    files.extend(["CONTRIBUTING.md".to_owned(), "CHANGELOG.md".to_owned()]);
    let mut checked = 0;
    let mut problems = Vec::new();
    for name in &files {
        let (count, found) = broken_links(name);
        checked += count;
        problems.extend(found);
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(checked >= 100, "only {checked} links checked");
}

/// The README links every chapter in `docs/`.
#[test]
fn the_readme_links_every_chapter() {
    let readme = read("README.md");
    for chapter in crate::chapters() {
        assert!(
            readme.contains(&format!("]({chapter})")),
            "the README links {chapter}"
        );
    }
    assert!(root().join("docs").is_dir());
}

#[test]
fn anchors_follow_githubs_rules() {
    assert_eq!(
        anchor("Snapshots (`starting_offset = \"full\"`)"),
        "snapshots-starting_offset--full"
    );
    assert_eq!(
        anchor("Deploying into `iggy-connectors`"),
        "deploying-into-iggy-connectors"
    );
    assert_eq!(
        normalized(Path::new("docs/../README.md")),
        PathBuf::from("README.md")
    );
}

/// Files outside the docs that name a section of them in prose: code comments, scripts, the
/// examples and the connector files.
fn files_naming_sections() -> Vec<PathBuf> {
    let mut files = vec![root().join("config.toml")];
    let mut pending: Vec<PathBuf> = [
        "src",
        "sdk",
        "runner",
        "testkit",
        "tests",
        "benches",
        "examples",
        "scripts",
        "example_config",
    ]
    .iter()
    .map(|d| root().join(d))
    .collect();
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("a folder") {
            let path = entry.expect("dir entry").path();
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            if path.is_dir() {
                if name != "target" && name != "__pycache__" {
                    pending.push(path);
                }
            } else if ["rs", "toml", "py", "sh"]
                .iter()
                .any(|e| path.extension().is_some_and(|x| x == *e))
                && name != "Cargo.lock"
            {
                files.push(path);
            }
        }
    }
    files
}

/// A file's text with comment markers dropped and lines joined, so a reference broken over two
/// comment lines reads as one.
fn prose(text: &str) -> String {
    text.lines()
        .map(|line| {
            let line = line.trim_start();
            ["//!", "///", "//", "#"]
                .iter()
                .find_map(|marker| line.strip_prefix(marker))
                .unwrap_or(line)
                .trim()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `(document, heading)` of each `README "Section"`, `docs/x.md, "Section"` or
/// `CONTRIBUTING.md "Section"` in `text`.
fn named_sections(text: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = ["README", "CONTRIBUTING", "BENCHMARKS", "docs/"]
        .iter()
        .filter_map(|d| rest.find(d).map(|i| (i, *d)))
        .min()
    {
        let (start, document) = at;
        let mut after = &rest[start..];
        let name_len = if document == "docs/" {
            5 + after[5..]
                .find(|c: char| !(c.is_ascii_lowercase() || c == '_'))
                .unwrap_or(after.len() - 5)
        } else {
            document.len()
        };
        let mut doc = after[..name_len].to_owned();
        after = &after[name_len..];
        if let Some(md) = after.strip_prefix(".md") {
            after = md;
        } else if document == "docs/" {
            rest = &rest[start + name_len..];
            continue;
        }
        doc = if document == "docs/" {
            format!("{doc}.md")
        } else {
            format!("{document}.md")
        };
        let punct = after.trim_start_matches([',', ':']);
        let spaced = punct.trim_start();
        let quoted = spaced.strip_prefix('(').unwrap_or(spaced).strip_prefix('"');
        if spaced.len() < punct.len()
            && let Some(heading) = quoted.and_then(|q| q.split('"').next())
            && heading.len() <= 80
        {
            found.push((doc, heading.to_owned()));
        }
        rest = &rest[start + name_len..];
    }
    found
}

/// Sections named in code comments, scripts, examples and connector files exist: the heading
/// itself or one it begins (`BENCHMARKS.md "At scale"` for "At scale, through the real
/// runtime (…)").
#[test]
fn every_section_named_outside_the_docs_exists() {
    let mut checked = 0;
    let mut problems = Vec::new();
    let own = root().join("tests/docs/links.rs");
    for path in files_naming_sections() {
        if path == own {
            continue; // its examples name sections that do not exist
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        for (doc, heading) in named_sections(&prose(&text)) {
            checked += 1;
            let wanted = anchor(&heading);
            let target = root().join(&doc);
            let found = target.exists()
                && anchors(&read(&doc))
                    .iter()
                    .any(|a| a == &wanted || a.starts_with(&format!("{wanted}-")));
            if !found {
                problems.push(format!(
                    "{} names {doc} \"{heading}\", which has no such section",
                    path.display()
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(checked >= 20, "only {checked} named sections checked");
}

#[test]
fn named_sections_are_found_in_prose() {
    let text = prose(
        "// see README \"Deploying into iggy-connectors\" and docs/operations.md, \"Sizing\";\n\
         // (CONTRIBUTING.md, \"The Iggy binaries\") but not read(\"docs/install.md\") or\n\
         // docs/ alone",
    );
    assert_eq!(
        named_sections(&text),
        [
            ("README.md", "Deploying into iggy-connectors"),
            ("docs/operations.md", "Sizing"),
            ("CONTRIBUTING.md", "The Iggy binaries"),
        ]
        .map(|(d, h)| (d.to_owned(), h.to_owned()))
    );
}
