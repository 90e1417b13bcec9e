//! The version a user can name: the CHANGELOG's newest release is the version the plugin
//! reports, and the state format the docs name is the one this build writes and reads as
//! "Upgrading and rolling back" says.

use iggy_connector_fluss_source::position::{BucketKey, Position, Positions};
use iggy_connector_fluss_source::state::{SavedState, Scope, STATE_VERSION};
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
        folded(body).contains(&format!("**State format**: version {STATE_VERSION}.")),
        "the {version} entry names the state format it writes"
    );
}

#[test]
fn the_docs_name_the_state_format_this_build_writes() {
    let operations = read("docs/operations.md");
    let upgrading = folded(section(&operations, "## Upgrading and rolling back"));
    assert!(
        upgrading.contains(&format!(
            "Release {} writes format version **{STATE_VERSION}**",
            env!("CARGO_PKG_VERSION")
        )),
        "docs/operations.md \"Upgrading and rolling back\" names this release and format \
         {STATE_VERSION}"
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

#[test]
fn state_is_format_1_and_a_release_before_appended_fields_refuses_it() {
    assert_eq!(
        STATE_VERSION, 1,
        "docs/operations.md \"Upgrading and rolling back\" and the CHANGELOG name format 1"
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
    let decoded = SavedState::decode(&state).expect("this release reads its own state");
    assert_eq!(decoded.positions, positions);
}
