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
