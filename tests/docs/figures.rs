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

//! Every measured figure of the user docs belongs to one claim of `benches/figures.toml`: it is
//! written with that claim's key right after it (`55 K<!-- rt-shapes.json.rows -->`) and shows
//! exactly its value, every claim is shown in BENCHMARKS.md, and BENCHMARKS.md states each run's
//! command and load (CONTRIBUTING.md, "Figures").

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::{folded, read, user_markdown};

#[derive(Debug, Deserialize)]
struct FiguresFile {
    machines: BTreeMap<String, String>,
    runs: BTreeMap<String, Run>,
    figures: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[allow(dead_code)]
struct Run {
    bench: String,
    command: String,
    machine: String,
    load: String,
    commit: String,
}

fn figures_file() -> FiguresFile {
    toml::from_str(&read("benches/figures.toml")).expect("benches/figures.toml")
}

/// A figure as the scanner finds it: one number or a range `a–b`, and its unit.
#[derive(Debug)]
struct Figure {
    text: String,
    /// Byte offset just after the figure's unit.
    end: usize,
}

const UNITS: [&str; 8] = ["MiB", "K", "M", "G", "×", "x", "us", "ns"];

fn is_number_char(c: char) -> bool {
    c.is_ascii_digit() || c == '.' || c == ','
}

/// Every number (or `a–b` range) followed, after at most one space, by one of [`UNITS`] as a
/// word of its own (so `1.15 MB`, `24 GiB`, `2x2` and `0x40` are not figures).
fn figures(text: &str) -> Vec<Figure> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let byte_at = |i: usize| chars.get(i).map_or(text.len(), |(b, _)| *b);
    let mut found = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i].1;
        let starts_number = c.is_ascii_digit()
            && (i == 0 || {
                let before = chars[i - 1].1;
                !(is_number_char(before) || before.is_alphabetic() || before == '_')
            });
        if !starts_number {
            i += 1;
            continue;
        }
        let mut j = i;
        loop {
            while j < chars.len() && is_number_char(chars[j].1) {
                j += 1;
            }
            if j + 1 < chars.len() && chars[j].1 == '–' && chars[j + 1].1.is_ascii_digit() {
                j += 1;
                continue;
            }
            break;
        }
        let mut k = j;
        if k < chars.len() && chars[k].1 == ' ' {
            k += 1;
        }
        let rest = &text[byte_at(k)..];
        let unit = UNITS.into_iter().find(|unit| {
            rest.starts_with(unit)
                && rest[unit.len()..]
                    .chars()
                    .next()
                    .is_none_or(|c| !c.is_alphanumeric() && c != '_')
        });
        match unit {
            Some(unit) => {
                let end = byte_at(k) + unit.len();
                found.push(Figure {
                    text: text[byte_at(i)..end].to_owned(),
                    end,
                });
                i = chars.partition_point(|(b, _)| *b < end);
            }
            None => i = j.max(i + 1),
        }
    }
    found
}

/// `(byte offset of the marker, key)` of every `<!-- key -->` whose key names a figure.
fn markers(text: &str) -> Vec<(usize, String)> {
    text.match_indices("<!--")
        .filter_map(|(at, _)| {
            let body = &text[at + 4..];
            let key = body[..body.find("-->")?].trim();
            let is_key = key.contains('.')
                && key
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
            is_key.then(|| (at, key.to_owned()))
        })
        .collect()
}

/// Problems with the figures and markers of one document.
fn check_document(name: &str, text: &str, file: &FiguresFile) -> Vec<String> {
    let text = folded(text);
    let mut problems = Vec::new();
    for (at, key) in markers(&text) {
        let Some(value) = file.figures.get(&key) else {
            problems.push(format!(
                "{name}: `{key}` is not a key of benches/figures.toml"
            ));
            continue;
        };
        let run = key.split('.').next().unwrap_or_default();
        if !file.runs.contains_key(run) {
            problems.push(format!("{name}: `{key}` names no run `{run}`"));
        }
        if !text[..at].ends_with(value.as_str()) {
            let shown = &text[text[..at]
                .char_indices()
                .rev()
                .nth(20)
                .map_or(0, |(b, _)| b)..at];
            problems.push(format!(
                "{name}: `{key}` is {value:?} in benches/figures.toml, the text shows \"…{shown}\""
            ));
        }
    }
    for figure in figures(&text) {
        if !text[figure.end..].starts_with("<!--") {
            let from = figure.end.saturating_sub(80);
            let from = (0..=from)
                .rev()
                .find(|b| text.is_char_boundary(*b))
                .unwrap_or(0);
            problems.push(format!(
                "{name}: the figure `{}` has no key (\"…{}\"); write it as \
                 `{}<!-- RUN.CLAIM -->` with its entry in benches/figures.toml",
                figure.text,
                &text[from..figure.end],
                figure.text
            ));
        }
    }
    problems
}

#[test]
fn every_figure_of_the_user_docs_shows_the_value_of_its_claim() {
    let file = figures_file();
    let mut problems = Vec::new();
    let mut marked = 0;
    for name in user_markdown() {
        let text = read(&name);
        marked += markers(&folded(&text)).len();
        problems.extend(check_document(&name, &text, &file));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(marked >= 150, "only {marked} marked figures");
}

#[test]
fn benchmarks_shows_every_claim_and_states_each_runs_command_and_load() {
    let file = figures_file();
    let benchmarks = folded(&read("BENCHMARKS.md"));
    let plain = benchmarks.replace('`', "");
    let shown: Vec<String> = markers(&benchmarks).into_iter().map(|(_, k)| k).collect();
    let missing: Vec<&String> = file
        .figures
        .keys()
        .filter(|key| !shown.contains(key))
        .collect();
    assert!(
        missing.is_empty(),
        "claims of benches/figures.toml that BENCHMARKS.md does not show: {missing:?}"
    );
    for (id, run) in &file.runs {
        assert!(
            file.machines.contains_key(&run.machine),
            "run {id}: machine `{}` is not in [machines]",
            run.machine
        );
        for (what, text) in [("command", &run.command), ("load", &run.load)] {
            let text = folded(text).replace('`', "");
            assert!(
                plain.contains(&text),
                "BENCHMARKS.md does not state run {id}'s {what}: {text}"
            );
        }
        assert!(
            run.commit.len() >= 7 && run.commit.chars().all(|c| c.is_ascii_hexdigit()),
            "run {id}: the commit it measured"
        );
        assert!(
            file.figures
                .keys()
                .any(|k| k.starts_with(&format!("{id}."))),
            "run {id} has no figure"
        );
    }
    for description in file.machines.values() {
        assert!(
            plain.contains(&folded(description)),
            "BENCHMARKS.md describes the machine: {description}"
        );
    }
}

#[test]
fn a_figure_that_disagrees_with_its_claim_or_has_no_key_is_reported() {
    let file: FiguresFile = toml::from_str(
        r#"
        [machines]
        m = "a machine"
        [runs.r]
        bench = "b"
        command = "c"
        machine = "m"
        load = "l"
        commit = "abcdef1"
        [figures]
        "r.rate" = "55 K"
        "r.rss" = "74.5 MiB"
        "#,
    )
    .unwrap();
    let good = "JSON at 55 K<!-- r.rate --> rows/s, peak RSS 74.5 MiB<!-- r.rss -->.";
    assert_eq!(check_document("good", good, &file), Vec::<String>::new());
    let wrong = check_document("wrong", "peak RSS 75.4 MiB<!-- r.rss -->", &file);
    assert!(wrong[0].contains("`r.rss` is \"74.5 MiB\""), "{wrong:?}");
    let unmarked = check_document("unmarked", "at 55 K rows/s", &file);
    assert!(unmarked[0].contains("`55 K` has no key"), "{unmarked:?}");
    let unknown = check_document("unknown", "at 55 K<!-- r.other -->", &file);
    assert!(unknown[0].contains("not a key"), "{unknown:?}");
}

#[test]
fn the_figure_scanner_reads_ranges_and_units_and_nothing_else() {
    let text = "55 K rows/s, 2.80–3.09 M rows/s, 0.19× and 0.19x, 67.3 MiB, 13.51 us, 378 ns, \
                2.297 G; 1.15 MB, 24 GiB, 2x2, 0x40, E2E_2x, 10 Ki, 30 s";
    let texts: Vec<String> = figures(text).into_iter().map(|f| f.text).collect();
    assert_eq!(
        texts,
        [
            "55 K",
            "2.80–3.09 M",
            "0.19×",
            "0.19x",
            "67.3 MiB",
            "13.51 us",
            "378 ns",
            "2.297 G"
        ]
    );
    assert_eq!(
        markers("a 1.10x<!-- r.ratio --> b <!-- a comment -->"),
        [(7, "r.ratio".to_owned())]
    );
}

/// The runs whose figures one line of a table shows.
fn runs_of_row(row: &str) -> std::collections::BTreeSet<String> {
    markers(row)
        .into_iter()
        .map(|(_, key)| key.split('.').next().unwrap_or_default().to_owned())
        .collect()
}

/// A table row of the user chapters shows the figures of one run, so no row compares rates of
/// runs made under other loads (BENCHMARKS.md may set runs side by side, and says so).
#[test]
fn each_table_row_of_the_chapters_shows_one_run() {
    let mut problems = Vec::new();
    let mut rows = 0;
    for name in user_markdown() {
        if name == "BENCHMARKS.md" {
            continue;
        }
        for line in read(&name).lines().filter(|l| l.starts_with('|')) {
            let runs = runs_of_row(line);
            rows += usize::from(!runs.is_empty());
            if runs.len() > 1 {
                problems.push(format!(
                    "{name}: a row with figures of runs {runs:?}: {line}"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(rows >= 10, "only {rows} table rows with figures");
}

#[test]
fn a_row_names_the_runs_of_its_figures() {
    let row = "| a | 55 K<!-- rt-shapes.json.rows --> | 1.10x<!-- rt-json5000.ratio --> |";
    assert_eq!(
        runs_of_row(row),
        ["rt-json5000", "rt-shapes"].map(str::to_owned).into()
    );
}
