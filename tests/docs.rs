//! What the user docs claim, checked without a cluster: every performance figure of the README
//! is one BENCHMARKS.md records, links and anchors resolve, no command needs a directory of the
//! machine the project was developed on, connector keys cannot capture each other's environment
//! overrides, the README's secret example reaches the plugin, and the state format behaves as
//! "Upgrading and rolling back" says.

use std::path::{Path, PathBuf};

use iggy_connector_fluss_source::config::Config;
use iggy_connector_fluss_source::position::{BucketKey, Position, Positions};
use iggy_connector_fluss_source::state::{SavedState, Scope, STATE_VERSION};
use serde::Deserialize;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The text of the section that starts with the heading line `heading` (e.g. `## Performance`),
/// up to the next heading of the same or a higher level.
fn section<'a>(text: &'a str, heading: &str) -> &'a str {
    let level = heading.split(' ').next().expect("a heading").len();
    let start = text
        .find(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("the README has a section `{heading}`"))
        + 1;
    let body = &text[start + heading.len()..];
    let end = body
        .lines()
        .scan(0, |offset, line| {
            let at = *offset;
            *offset += line.len() + 1;
            Some((at, line))
        })
        .find(|(_, line)| {
            let hashes = line.chars().take_while(|c| *c == '#').count();
            hashes > 0 && hashes <= level && line[hashes..].starts_with(' ')
        })
        .map_or(body.len(), |(at, _)| at);
    &text[start..start + heading.len() + end]
}

/// Runs of whitespace folded to one space, so a figure broken over two lines still matches.
fn folded(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A figure: one number or a range `a–b`, and its unit.
#[derive(Debug)]
struct Figure {
    text: String,
    numbers: Vec<String>,
    unit: &'static str,
}

const UNITS: [&str; 5] = ["MiB", "K", "M", "×", "x"];

fn is_number_char(c: char) -> bool {
    c.is_ascii_digit() || c == '.' || c == ','
}

/// Every number (or `a–b` range) followed, after at most one space, by K, M, MiB, × or x as a
/// word of its own (so `1.15 MB`, `24 GiB` and `2x2` are not figures).
fn figures(text: &str) -> Vec<Figure> {
    let chars: Vec<char> = text.chars().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let starts_number = chars[i].is_ascii_digit()
            && (i == 0 || !(is_number_char(chars[i - 1]) || chars[i - 1].is_alphabetic()));
        if !starts_number {
            i += 1;
            continue;
        }
        let mut j = i;
        let mut numbers = Vec::new();
        loop {
            let from = j;
            while j < chars.len() && is_number_char(chars[j]) {
                j += 1;
            }
            let number: String = chars[from..j].iter().collect();
            numbers.push(number.trim_end_matches(['.', ',']).to_owned());
            if j + 1 < chars.len() && chars[j] == '–' && chars[j + 1].is_ascii_digit() {
                j += 1;
                continue;
            }
            break;
        }
        let mut k = j;
        if k < chars.len() && chars[k] == ' ' {
            k += 1;
        }
        let rest: String = chars[k..chars.len().min(k + 4)].iter().collect();
        let unit = UNITS.into_iter().find(|unit| {
            rest.starts_with(unit)
                && rest[unit.len()..]
                    .chars()
                    .next()
                    .is_none_or(|c| !c.is_alphanumeric())
        });
        if let Some(unit) = unit {
            let end = k + unit.chars().count();
            found.push(Figure {
                text: chars[i..end].iter().collect(),
                numbers,
                unit,
            });
            i = end;
        } else {
            i = j.max(i + 1);
        }
    }
    found
}

/// Whether `number` occurs in `text` as a number of its own (not inside a longer one).
fn has_number(text: &str, number: &str) -> bool {
    text.match_indices(number).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + number.len()..].chars().next();
        let after_is_digit = match after {
            Some('.') | Some(',') => text[at + number.len() + 1..]
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_digit()),
            Some(c) => c.is_ascii_digit(),
            None => false,
        };
        before.is_none_or(|c| !is_number_char(c)) && !after_is_digit
    })
}

fn assert_recorded(figures: &[Figure], benchmarks: &str, whence: &str) {
    let mut missing = Vec::new();
    for figure in figures {
        let numbers_there = figure.numbers.iter().all(|n| has_number(benchmarks, n));
        let with_unit = match (figure.numbers.as_slice(), figure.unit) {
            ([n], "K" | "M" | "MiB") => benchmarks.contains(&format!("{n} {}", figure.unit)),
            ([a, b], "K" | "M" | "MiB") => {
                benchmarks.contains(&format!("{a}–{b} {}", figure.unit))
                    || benchmarks.contains(&format!("{a}–{b}"))
            }
            _ => true,
        };
        if !(numbers_there && with_unit) {
            missing.push(figure.text.clone());
        }
    }
    assert!(
        missing.is_empty(),
        "figures of the README's {whence} that BENCHMARKS.md does not record: {missing:?}; \
         add the run to BENCHMARKS.md (command, load, commit) or correct the README"
    );
}

#[test]
fn every_performance_figure_of_the_readme_is_recorded_in_benchmarks() {
    let readme = read("README.md");
    let benchmarks = folded(&read("BENCHMARKS.md"));
    let performance = folded(section(&readme, "## Performance"));
    let found = figures(&performance);
    assert!(
        found.len() >= 40,
        "the figure scanner found only {} figures: {found:?}",
        found.len()
    );
    assert_recorded(&found, &benchmarks, "Performance section");

    // Sizing quotes measured peaks (figures with a fraction); its other sizes come from code.
    let sizing = folded(section(&readme, "### Sizing"));
    let measured: Vec<Figure> = figures(&sizing)
        .into_iter()
        .filter(|f| f.unit == "MiB" && f.numbers.iter().all(|n| n.contains('.')))
        .collect();
    assert!(
        measured.len() >= 3,
        "Sizing quotes measured peaks: {measured:?}"
    );
    assert_recorded(&measured, &benchmarks, "Sizing section");
}

#[test]
fn the_figure_scanner_reads_ranges_units_and_nothing_else() {
    let found = figures(
        "55 K rows/s, 2.80–3.09 M rows/s, 0.19× and 0.19x, 67.3 MiB; 1.15 MB, 24 GiB, 2x2, 10 Ki",
    );
    let texts: Vec<&str> = found.iter().map(|f| f.text.as_str()).collect();
    assert_eq!(texts, ["55 K", "2.80–3.09 M", "0.19×", "0.19x", "67.3 MiB"]);
    assert_eq!(found[1].numbers, ["2.80", "3.09"]);
    assert!(has_number("a 1.10 b", "1.10"));
    assert!(!has_number("a 11.10 b", "1.10"));
    assert!(!has_number("a 1.105 b", "1.10"));
    assert!(has_number("(1.10, 2)", "1.10"));
}

/// The user-facing files: README, BENCHMARKS, the connector files and runtime config.
fn user_docs() -> Vec<PathBuf> {
    let mut files = vec![
        root().join("README.md"),
        root().join("BENCHMARKS.md"),
        root().join("config.toml"),
    ];
    let mut pending = vec![root().join("example_config"), root().join("docs")];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
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

#[test]
fn no_user_doc_depends_on_a_directory_outside_the_clone() {
    for path in user_docs() {
        let text = std::fs::read_to_string(&path).expect("a text file");
        for needle in ["../shared", "/tmp/", "/work/"] {
            assert!(
                !text.contains(needle),
                "{} names `{needle}`: a user's clone has no such directory; name the thing to \
                 get and how (README \"The Iggy binaries\")",
                path.display()
            );
        }
    }
    let readme = read("README.md");
    let testing = section(&readme, "## Testing");
    assert!(
        testing.contains("\n### The Iggy binaries\n"),
        "README \"Testing\" has the subsection the scripts point to"
    );
    let binaries = section(&readme, "### The Iggy binaries");
    for needle in [
        "git checkout cc269ef70ef2d78af5102f5560b5b03c9dd81401",
        "cargo build --locked --release",
        "libhwloc-dev",
        "libudev-dev",
        "tar xJf ARCHIVE -C \"$IGGY_BIN_DIR\"",
    ] {
        assert!(
            binaries.contains(needle),
            "\"The Iggy binaries\" shows {needle}"
        );
    }
}

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

#[test]
fn every_link_of_the_readme_resolves() {
    let readme = read("README.md");
    let mut anchors = std::collections::HashSet::new();
    let mut in_code = false;
    for line in readme.lines() {
        if line.starts_with("```") {
            in_code = !in_code;
        }
        if !in_code && line.starts_with('#') {
            anchors.insert(anchor(line.trim_start_matches('#').trim()));
        }
    }
    let mut checked = 0;
    for (at, _) in readme.match_indices("](") {
        let target = &readme[at + 2..];
        let target = &target[..target.find(')').expect("a closing parenthesis")];
        if target.starts_with("http") {
            continue;
        }
        checked += 1;
        if let Some(name) = target.strip_prefix('#') {
            assert!(
                anchors.contains(name),
                "README links to #{name}, no such heading"
            );
        } else {
            assert!(
                Path::new(&root()).join(target).exists(),
                "README links to {target}, which does not exist"
            );
        }
    }
    assert!(checked >= 20, "only {checked} links checked");
}

/// Every connector key shipped, from `config.toml` and `example_config/connectors/`.
fn shipped_keys() -> Vec<String> {
    let mut files = vec![root().join("config.toml")];
    for entry in std::fs::read_dir(root().join("example_config/connectors")).expect("examples") {
        files.push(entry.expect("entry").path());
    }
    files
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .map(|p| {
            fluss_source_runner::ConnectorFile::load(p)
                .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
                .key
        })
        .collect()
}

#[test]
fn no_shipped_key_captures_another_keys_environment_overrides() {
    // The runtime reads IGGY_CONNECTORS_SOURCE_<KEY>_… for a connector, matching in upper case.
    let keys = shipped_keys();
    assert!(keys.len() >= 4, "{keys:?}");
    for a in &keys {
        for b in &keys {
            let prefix = format!("{}_", a.to_uppercase());
            assert!(
                a == b || !b.to_uppercase().starts_with(&prefix),
                "key {a:?} is a prefix of {b:?}: the runtime would check {b:?}'s environment \
                 overrides as fields of {a:?}"
            );
        }
    }
}

#[test]
fn the_readme_secret_example_sets_the_password_of_config_toml() {
    let readme = read("README.md");
    let secrets = section(&readme, "### Secrets through the environment");
    let env: Vec<(String, String)> = secrets
        .lines()
        .filter_map(|line| line.strip_prefix("export "))
        .map(|assignment| {
            let (name, value) = assignment.split_once('=').expect("NAME=value");
            (name.to_owned(), value.trim_matches('\'').to_owned())
        })
        .collect();
    assert_eq!(
        env.len(),
        2,
        "the example exports user and password: {env:?}"
    );
    let password = env
        .iter()
        .find(|(name, _)| name.ends_with("_PLUGIN_CONFIG_SASL_PASSWORD"))
        .map(|(_, value)| value.clone())
        .expect("a SASL_PASSWORD override");
    let file =
        fluss_source_runner::ConnectorFile::load(&root().join("config.toml")).expect("config.toml");
    assert!(
        secrets.contains(&format!("`key = \"{}\"`", file.key)),
        "the example names config.toml's key"
    );
    let json = file.plugin_config_json(env.clone());
    let config = Config::parse(&json).expect("config.toml with the example's overrides");
    let sasl = config
        .sasl
        .as_ref()
        .expect("SASL on with user and password");
    assert_eq!(sasl.mechanism, "PLAIN");
    assert_eq!(sasl.username, "reader");
    assert_eq!(sasl.password.expose(), password);
    assert!(
        !format!("{config:?}").contains(&password),
        "the password is not in the config's Debug form"
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
        "README \"Upgrading and rolling back\" names format 1"
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
        "a reader of the first format refuses the longer record (README: rolling back needs the \
         state copied before the upgrade): {older:?}"
    );
    let decoded = SavedState::decode(&state).expect("this release reads its own state");
    assert_eq!(decoded.positions, positions);
}
