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
