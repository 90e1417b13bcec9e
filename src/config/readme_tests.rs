//! The README's options table must list exactly the keys this parser accepts, with defaults
//! that mean what omitting the key means.

use super::*;
use serde_json::json;

/// `(key, type, default)` of each row of the README's "Configuration options" table.
fn readme_rows() -> Vec<(String, String, String)> {
    let readme = include_str!("../../README.md");
    let section = readme
        .split("## Configuration options")
        .nth(1)
        .expect("README has a Configuration options section");
    section
        .lines()
        .skip_while(|l| !l.starts_with("| Option"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|line| {
            let cells: Vec<String> = line
                .split('|')
                .map(|c| c.trim().trim_matches('`').to_owned())
                .collect();
            (cells[1].clone(), cells[2].clone(), cells[3].clone())
        })
        .collect()
}

/// The keys serde accepts, read from its "expected one of" message.
fn accepted_keys() -> Vec<String> {
    let e = Config::parse(r#"{"__probe__": 1}"#).unwrap_err();
    let list = e
        .message
        .split("expected one of ")
        .nth(1)
        .expect("serde lists the fields");
    let mut keys: Vec<String> = list
        .split(',')
        .map(|k| k.trim().split('`').nth(1).unwrap_or_default().to_owned())
        .filter(|k| !k.is_empty())
        .collect();
    keys.sort();
    keys
}

#[test]
fn keys_are_exactly_what_the_parser_accepts() {
    let mut keys: Vec<String> = keys().iter().map(|k| (*k).to_owned()).collect();
    keys.sort();
    assert_eq!(keys, accepted_keys());
    assert!(keys.len() >= 24, "{keys:?}");
}

#[test]
fn the_readme_table_lists_every_key_exactly_once() {
    let mut documented: Vec<String> = readme_rows().into_iter().map(|r| r.0).collect();
    documented.sort();
    let mut unique = documented.clone();
    unique.dedup();
    assert_eq!(unique, documented, "a key is listed twice in the README");
    assert_eq!(
        documented,
        accepted_keys(),
        "README options table vs Config"
    );
}

#[test]
fn readme_defaults_mean_what_omitting_the_key_means() {
    let base = json!({"bootstrap_servers": "h:1", "database": "d", "table": "t"});
    let omitted = Config::parse(&base.to_string()).unwrap();
    let mut checked = 0;
    for (key, _, default) in readme_rows() {
        if ["required", "all", "none"].contains(&default.as_str())
            || key == "sasl_mechanism"
            || key == "snapshot_dir"
        {
            continue;
        }
        let value: serde_json::Value = serde_json::from_str(&default)
            .unwrap_or_else(|_| panic!("README default of `{key}` is not JSON: {default}"));
        let mut explicit = base.clone();
        explicit[&key] = value;
        let parsed = Config::parse(&explicit.to_string())
            .unwrap_or_else(|e| panic!("README default of `{key}` is refused: {e}"));
        assert_eq!(
            parsed, omitted,
            "README default of `{key}` differs from the code's"
        );
        checked += 1;
    }
    assert!(checked >= 15, "only {checked} defaults checked");
}
