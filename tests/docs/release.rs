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

//! The version a user can name: the CHANGELOG's newest release is the version the plugin
//! reports, and the state format the docs name is the one this build writes and reads as
//! "Upgrading and rolling back" says.

use iggy_connector_fluss_source::position::{BucketKey, Position, Positions};
use iggy_connector_fluss_source::state::{STATE_VERSION, SavedState, Scope};
use serde::Deserialize;

use crate::{folded, read, section};

/// `(version, body)` of each release section of the CHANGELOG, newest first.
fn releases(changelog: &str) -> Vec<(String, String)> {
    changelog
        .split("\n## [")
        .skip(1)
        .map(|part| {
            let (version, rest) = part.split_once(']').expect("## [version]");
            (version.to_owned(), rest.to_owned())
        })
        .collect()
}

#[test]
fn the_changelogs_newest_release_is_the_version_the_plugin_reports() {
    let changelog = read("CHANGELOG.md");
    let releases = releases(&changelog);
    assert_eq!(
        releases.first().map(|r| r.0.as_str()),
        Some("Unreleased"),
        "the CHANGELOG keeps `## [Unreleased]` on top for the next release's entries"
    );
    let (version, body) = releases.get(1).expect("a release");
    // `iggy_source_version` reports the plugin crate's CARGO_PKG_VERSION (sdk/src/ffi.rs,
    // checked in tests/symbols.rs); this test binary belongs to the same crate.
    assert_eq!(
        version,
        env!("CARGO_PKG_VERSION"),
        "the CHANGELOG's newest release is the version the plugin reports; add its entry"
    );
    assert!(
        body.starts_with(" - 20"),
        "a release heading carries its date: ## [{version}] - YYYY-MM-DD"
    );
    assert!(
        folded(body).contains("**State format**: version "),
        "the {version} entry names the state format it writes"
    );
}

/// The state format a CHANGELOG section names (`**State format**: version N.`), if any.
fn state_format(body: &str) -> Option<u32> {
    let folded = folded(body);
    let (_, rest) = folded.split_once("**State format**: version ")?;
    let digits = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    rest[..digits].parse().ok()
}

#[test]
fn the_changelog_names_the_state_format_this_build_writes() {
    let changelog = read("CHANGELOG.md");
    let releases = releases(&changelog);
    let (section, named) = releases
        .iter()
        .find_map(|(version, body)| Some((version, state_format(body)?)))
        .expect("a CHANGELOG section names a state format");
    assert_eq!(
        named, STATE_VERSION,
        "the newest CHANGELOG section that names a state format ({section}) names the one this build writes; a new format is named in `## [Unreleased]`"
    );
}

#[test]
fn the_docs_name_the_state_format_this_build_writes() {
    let operations = read("docs/operations.md");
    let upgrading = folded(section(&operations, "## Upgrading and rolling back"));
    assert!(
        upgrading.contains(&format!(
            "This release writes format version **{STATE_VERSION}**"
        )),
        "docs/operations.md \"Upgrading and rolling back\" names the format this release \
         writes, {STATE_VERSION}"
    );
}

/// The record as the first release of format 1 wrote it, before the share, the stop point and
/// the snapshot list were appended.
#[derive(Debug, Deserialize)]
#[allow(dead_code)]
struct FirstFormat {
    version: u32,
    table_id: i64,
    table: String,
    positions: Vec<(Option<i64>, i32, i64)>,
}

/// The record as release 0.2.0 reads it (format 1 with every field it appended, each with a
/// default); it refuses every version but 1.
#[derive(Debug, Deserialize)]
#[allow(dead_code)]
struct Release020 {
    version: u32,
    table_id: i64,
    table: String,
    positions: Vec<(Option<i64>, i32, i64)>,
    #[serde(default)]
    assignment: (u32, u32),
    #[serde(default)]
    stop: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    snapshots: Vec<(Option<i64>, i32, i64)>,
    #[serde(default)]
    resumes: Vec<(Option<i64>, i32, i64, u64)>,
    #[serde(default)]
    kept: Vec<(Option<i64>, i32, u64)>,
}

#[test]
fn state_is_format_2_and_readers_of_format_1_refuse_it() {
    assert_eq!(
        STATE_VERSION, 2,
        "docs/operations.md \"Upgrading and rolling back\" and the CHANGELOG name format 2"
    );
    let positions: Positions = (0..300)
        .map(|b| (BucketKey::bucket(b), Position::At(1_000_000)))
        .collect();
    let state =
        SavedState::encode(42, "fluss.orders", &positions, Scope::default()).expect("encode");
    assert!(
        state.0.len() < 300 * 16,
        "a few bytes per bucket: {} bytes for 300",
        state.0.len()
    );
    let older = rmp_serde::from_slice::<FirstFormat>(&state.0);
    assert!(
        older.is_err(),
        "a reader of the first format refuses the longer record (rolling back needs the state \
         copied before the upgrade): {older:?}"
    );
    // Release 0.2.0 reads the record (MessagePack after it is not looked at) and refuses it by
    // its version, with the line operations.md quotes.
    let release_020 = rmp_serde::from_slice::<Release020>(&state.0).expect("0.2.0's record");
    assert_eq!(
        release_020.version, 2,
        "release 0.2.0 refuses it: `the saved state has format version 2 but this plugin reads version 1`"
    );
    let decoded = SavedState::decode(&state).expect("this release reads its own state");
    assert_eq!(decoded.positions, positions);
}

/// The connector files a release archive ships (scripts/release.sh copies `config.toml` and
/// `example_config/`): each works as shipped in a deployment whose plugin sits next to the
/// runtime binary, as docs/install.md and the README's deploy steps put it. `path` names the
/// library by file name only (a directory in it would resolve against the runtime's working
/// directory, which a deployment does not fix), and the plugin accepts its `[plugin_config]`.
#[test]
fn the_archives_connector_files_load_as_shipped() {
    let release = read("scripts/release.sh");
    let copies: Vec<&str> = release
        .lines()
        .filter(|l| l.trim_start().starts_with("cp "))
        .collect();
    assert!(
        copies.iter().any(|l| l.contains(" config.toml "))
            && copies.iter().any(|l| l.contains(" example_config ")),
        "scripts/release.sh ships config.toml and example_config/: {copies:?}"
    );
    let mut files = vec![crate::root().join("config.toml")];
    let examples = crate::root().join("example_config/connectors");
    for entry in std::fs::read_dir(&examples).expect("example_config/connectors") {
        files.push(entry.expect("entry").path());
    }
    files.retain(|p| p.extension().is_some_and(|e| e == "toml"));
    assert!(files.len() >= 4, "{files:?}");
    for path in &files {
        let file = fluss_source_runner::ConnectorFile::load(path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(
            file.path,
            "libiggy_connector_fluss_source",
            "{}: `path` names the plugin by file name, found next to the runtime binary",
            path.display()
        );
        let config = file.plugin_config_json(std::iter::empty());
        iggy_connector_fluss_source::config::Config::parse(&config)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
    let install = folded(&read("docs/install.md"));
    assert!(
        install.contains("cp libiggy_connector_fluss_source.so \"$IGGY_BIN_DIR/\""),
        "docs/install.md deploys the archive's library next to the runtime"
    );
}

/// A release archive a doc names by its version exists: the CHANGELOG's entry of that version
/// adds the archive (docs name the archive by `<version>` until then).
#[test]
fn the_docs_name_no_archive_of_a_release_without_one() {
    let changelog = read("CHANGELOG.md");
    let releases = releases(&changelog);
    let with_archive: Vec<&str> = releases
        .iter()
        .filter(|(_, body)| folded(body).contains("release archive"))
        .map(|(version, _)| version.as_str())
        .collect();
    const PREFIX: &str = "iggy_connector_fluss_source-";
    let mut named = 0;
    for path in crate::user_files() {
        let text = std::fs::read_to_string(&path).expect("a text file");
        for (at, _) in text.match_indices(PREFIX) {
            let version: String = text[at + PREFIX.len()..]
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            let version = version.trim_end_matches('.');
            if version.is_empty() {
                continue; // `<version>`
            }
            named += 1;
            assert!(
                with_archive.contains(&version),
                "{} names the archive of {version}, whose CHANGELOG entry has no release archive \
                 (releases with one: {with_archive:?})",
                path.display()
            );
        }
    }
    assert!(
        read("docs/install.md").contains(&format!("{PREFIX}<version>-linux-")),
        "docs/install.md names the archive by `<version>` ({named} concrete names checked)"
    );
}

/// `snapshot_dir`'s room is stated alike wherever it is stated: the two largest buckets' files
/// plus the same number of bytes.
#[test]
fn snapshot_dirs_room_is_one_rule() {
    let mut found = Vec::new();
    for name in [
        "config.toml",
        "docs/configuration.md",
        "docs/delivery.md",
        "CHANGELOG.md",
    ] {
        let text = folded(&read(name).replace("\n# ", "\n"));
        for (at, _) in text.match_indices("files plus ") {
            let bytes: String = text[at + "files plus ".len()..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            found.push((name, bytes));
        }
    }
    let names: std::collections::BTreeSet<&str> = found.iter().map(|(n, _)| *n).collect();
    assert!(
        names.len() >= 3,
        "config.toml, configuration.md and delivery.md state the room: {found:?}"
    );
    assert!(
        found
            .iter()
            .all(|(_, bytes)| *bytes == found[0].1 && !bytes.is_empty()),
        "one number of bytes beyond the two largest buckets' files: {found:?}"
    );
}
