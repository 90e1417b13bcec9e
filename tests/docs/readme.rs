//! The README as the front door: what a newcomer needs within its first lines, its connector
//! files the same as the shipped ones, its deploy steps and the secrets example that builds on
//! them, and the compatibility table's figures from the manifest.

use iggy_connector_fluss_source::config::Config;

use crate::{code_blocks, folded, read, root, section};

/// Within the README's first 150 lines a newcomer finds what the connector does, whether their
/// Fluss and Iggy are supported, a connector file to copy and the command to run.
#[test]
fn the_readme_answers_a_newcomers_questions_within_150_lines() {
    let readme = read("README.md");
    let top: String = readme.lines().take(150).collect::<Vec<_>>().join("\n");
    for (needle, what) in [
        ("streams an [Apache Fluss]", "what it does"),
        ("## Compatibility", "the compatibility table"),
        ("| Apache Fluss server | 0.9.1 |", "the Fluss server tested"),
        (
            "Fluss 1.0 servers are not yet tested",
            "which Fluss is not tested",
        ),
        ("apache/iggy commit `cc269ef`", "the Iggy commit tested"),
        ("scripts/quickstart.sh", "the command to run"),
        ("```toml\n# A Fluss log table", "a log-table connector file"),
        (
            "```toml\n# A Fluss primary-key table",
            "a primary-key connector file",
        ),
    ] {
        assert!(
            top.contains(needle),
            "the README's first 150 lines lack {what} ({needle})"
        );
    }
    let lines = readme.lines().count();
    assert!(
        (150..=260).contains(&lines),
        "the README is a front door of about 200 lines, not {lines}"
    );
}

/// The README's versions come from the manifest and the binaries it names.
#[test]
fn the_compatibility_table_names_the_manifests_versions() {
    let readme = folded(&read("README.md"));
    let manifest: toml::Table = toml::from_str(&read("Cargo.toml")).expect("Cargo.toml");
    let package = &manifest["workspace"]["package"];
    let rust_version = package["rust-version"].as_str().expect("rust-version");
    assert!(
        readme.contains(&format!("`rust-version` {rust_version}")),
        "the README names rust-version {rust_version}"
    );
    let version = package["version"].as_str().expect("the one version");
    assert_eq!(version, env!("CARGO_PKG_VERSION"), "members inherit it");
    assert!(
        readme.contains(&format!("Version {version} ([CHANGELOG]")),
        "the README names version {version}"
    );
    let fluss = manifest["workspace"]["dependencies"]["fluss-rs"]["version"]
        .as_str()
        .expect("fluss-rs");
    assert!(
        readme.contains(&format!("`fluss-rs` {}", fluss.trim_start_matches('='))),
        "the README names fluss-rs {fluss}"
    );
}

/// The two connector files of the README are the shipped example files, byte for byte, and
/// the other shipped files parse.
#[test]
fn the_readme_connector_files_are_the_shipped_examples() {
    let readme = read("README.md");
    let files = section(&readme, "## Connector files");
    let blocks = code_blocks(files, "toml");
    assert_eq!(blocks.len(), 2, "a log-table file and a primary-key file");
    for (block, path) in blocks.iter().zip([
        "example_config/connectors/fluss_orders_json.toml",
        "example_config/connectors/fluss_customers.toml",
    ]) {
        assert_eq!(
            *block,
            read(path),
            "the README shows {path} as it is; change both together"
        );
        assert!(
            files.contains(&format!("]({path})")),
            "the README links {path}"
        );
    }
}

/// The deploy steps work from any directory: no step needs the repository root, the runtime
/// config has absolute paths, and the server is started with its credentials explained.
#[test]
fn the_deploy_steps_need_no_working_directory() {
    let readme = read("README.md");
    let steps = section(&readme, "## Deploying into `iggy-connectors`");
    let flat = folded(steps);
    for needle in [
        "\"$IGGY_BIN_DIR/iggy-server\" --with-default-root-credentials",
        "IGGY_ROOT_USERNAME",
        "IGGY_ROOT_PASSWORD",
        "\"$IGGY_BIN_DIR/iggy-connectors\"",
        "cp target/release/libiggy_connector_fluss_source.so \"$IGGY_BIN_DIR/\"",
    ] {
        assert!(flat.contains(needle), "the deploy steps show {needle}");
    }
    let config = code_blocks(steps, "bash")
        .into_iter()
        .find(|b| b.contains("[connectors]"))
        .expect("the runtime config");
    for line in config.lines().map(str::trim) {
        if let Some(value) = line
            .strip_prefix("path = ")
            .or(line.strip_prefix("config_dir = "))
        {
            assert!(
                value.starts_with("\"$DEPLOY/"),
                "{line}: an absolute path, not one relative to the working directory"
            );
        }
    }
    for name in ["fluss_orders_json.toml", "fluss_customers.toml"] {
        let file = read(&format!("example_config/connectors/{name}"));
        assert!(
            file.contains("path = \"libiggy_connector_fluss_source\""),
            "{name} names the plugin by file name, found next to the runtime from any directory"
        );
    }
}

/// The runtime start command of the README's step 6.
fn readme_start_command() -> String {
    let readme = read("README.md");
    let steps = folded(section(&readme, "## Deploying into `iggy-connectors`"));
    let at = steps.find("**Start the runtime**: `").expect("step 6") + 24;
    steps[at..at + steps[at..].find('`').expect("closing backtick")].to_owned()
}

/// The secrets example sets the SASL credentials of the README's log-table connector and starts
/// the runtime as the deploy steps do, whose connectors directory holds that file.
#[test]
fn the_secrets_example_reaches_the_readme_connector() {
    let operations = read("docs/operations.md");
    let secrets = section(&operations, "## Secrets through the environment");
    let block = code_blocks(secrets, "bash")
        .into_iter()
        .next()
        .expect("the example");
    let env: Vec<(String, String)> = block
        .lines()
        .filter_map(|line| line.strip_prefix("export "))
        .map(|assignment| {
            let (name, value) = assignment.split_once('=').expect("NAME=value");
            (name.to_owned(), value.trim_matches('\'').to_owned())
        })
        .collect();
    assert_eq!(env.len(), 2, "user and password: {env:?}");
    let start = block.lines().last().expect("the start command");
    assert_eq!(start, readme_start_command(), "the README's step 6");

    let path = root().join("example_config/connectors/fluss_orders_json.toml");
    let file = fluss_source_runner::ConnectorFile::load(&path).expect("the README's file");
    assert!(
        secrets.contains(&format!("`key = \"{}\"`", file.key)),
        "the example names the key of the file it configures"
    );
    let password = env
        .iter()
        .find(|(name, _)| name.ends_with("_PLUGIN_CONFIG_SASL_PASSWORD"))
        .map(|(_, value)| value.clone())
        .expect("a SASL_PASSWORD override");
    let config = Config::parse(&file.plugin_config_json(env.clone()))
        .expect("the file with the example's overrides");
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

/// The Iggy binaries: where to get them, in CONTRIBUTING.md, which the README links.
#[test]
fn contributing_says_how_to_get_the_iggy_binaries() {
    let contributing = read("CONTRIBUTING.md");
    let binaries = section(&contributing, "## The Iggy binaries");
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
    assert!(read("README.md").contains("(CONTRIBUTING.md#the-iggy-binaries)"));
}
