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
        ("Fluss 1.0 is not released yet", "which Fluss is not tested"),
        ("apache/iggy commit `cc269ef`", "the Iggy commit tested"),
        (
            "Iggy 0.9.0 (2026-09-18) and 0.10.0 (2026-11-07",
            "the Iggy releases, untested",
        ),
        (
            "(docs/install.md#the-iggy-runtime)",
            "where to get the runtime",
        ),
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
        (150..=300).contains(&lines),
        "the README is a front door of about 250 lines, not {lines}"
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

/// The deploy steps' `bash` blocks, in order, without the indentation of the list they sit in.
pub(crate) fn deploy_blocks(readme: &str) -> Vec<String> {
    let steps = section(readme, "## Deploying into `iggy-connectors`");
    let mut blocks = Vec::new();
    let mut lines = steps.lines();
    while let Some(line) = lines.next() {
        let Some(indent) = line.strip_suffix("```bash").filter(|i| i.trim().is_empty()) else {
            continue;
        };
        let mut block = String::new();
        for line in lines.by_ref() {
            if line.trim_start() == "```" {
                break;
            }
            block.push_str(line.strip_prefix(indent).unwrap_or(line.trim_start()));
            block.push('\n');
        }
        blocks.push(block);
    }
    blocks
}

/// The deployment needs no working directory: its runtime config has absolute paths, the
/// server is started with its credentials explained, the connector files name the plugin by
/// file name, and every server the steps start listens on 127.0.0.1 and is stopped by the
/// process id the steps keep.
#[test]
fn the_deployment_needs_no_working_directory() {
    let readme = read("README.md");
    let steps = section(&readme, "## Deploying into `iggy-connectors`");
    let flat = folded(steps);
    for needle in [
        "\"$IGGY_BIN_DIR/iggy-server\" --with-default-root-credentials",
        "IGGY_ROOT_USERNAME",
        "IGGY_ROOT_PASSWORD",
        "\"$IGGY_BIN_DIR/iggy-connectors\"",
        "cp target/release/libiggy_connector_fluss_source.so \"$IGGY_BIN_DIR/\"",
        "scripts/local-fluss.sh start \"$DEPLOY/fluss\"",
        "scripts/local-fluss.sh stop \"$DEPLOY/fluss\"",
        "message poll",
    ] {
        assert!(flat.contains(needle), "the deploy steps show {needle}");
    }
    let blocks = deploy_blocks(&readme);
    assert!(blocks.len() >= 8, "one block per step: {blocks:#?}");
    let config = blocks
        .iter()
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
        if let Some(address) = line.strip_prefix("address = ") {
            assert!(address.starts_with("\"127.0.0.1:"), "{line}: loopback only");
        }
    }
    let script = blocks.concat();
    for (started, pid_file) in [
        ("iggy-server", "\"$DEPLOY/iggy-server.pid\""),
        ("iggy-connectors", "\"$DEPLOY/iggy-connectors.pid\""),
    ] {
        assert!(
            script.contains(&format!("echo $! >{pid_file}")),
            "{started} is started in the background and its pid kept in {pid_file}"
        );
        assert!(
            script.contains(&format!("kill \"$(cat {pid_file})\"")),
            "the last step stops {started} by its pid"
        );
    }
    for name in ["fluss_orders_json.toml", "fluss_customers.toml"] {
        let file = read(&format!("example_config/connectors/{name}"));
        assert!(
            file.contains("path = \"libiggy_connector_fluss_source\""),
            "{name} names the plugin by file name, found next to the runtime from any directory"
        );
        assert!(
            script.contains(&format!("example_config/connectors/{name}")),
            "the steps copy {name} into the deployment"
        );
    }
}

/// The runtime start of the README's step 7: the lines of its block.
fn readme_start_command() -> String {
    let readme = read("README.md");
    deploy_blocks(&readme)
        .into_iter()
        .find(|b| b.contains("\"$IGGY_BIN_DIR/iggy-connectors\""))
        .expect("the step that starts the runtime")
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
    let start: String = block
        .lines()
        .filter(|line| !line.starts_with("export "))
        .map(|line| format!("{line}\n"))
        .collect();
    assert_eq!(start, readme_start_command(), "the README's step 7");

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

/// The Iggy runtime: where users get it (Installing, which the README links from its
/// compatibility table and its deploy steps) and what is known of the releases; contributors'
/// archive of the binaries in CONTRIBUTING.md.
#[test]
fn installing_says_how_to_get_the_iggy_runtime() {
    let install = read("docs/install.md");
    let runtime = folded(section(&install, "## The Iggy runtime"));
    for needle in [
        "git checkout cc269ef70ef2d78af5102f5560b5b03c9dd81401",
        "cargo build --locked --release",
        "libhwloc-dev",
        "libudev-dev",
        "export IGGY_BIN_DIR=$PWD/target/release",
        "Iggy 0.9.0",
        "`apache/iggy-connect`",
        "Iggy 0.10.0",
        "-p iggy_connector_fluss_source -p iggy-connectors -p server -p iggy-cli",
        "(#building-inside-apacheiggy)",
    ] {
        assert!(
            runtime.contains(needle),
            "\"The Iggy runtime\" shows {needle}"
        );
    }
    let readme = read("README.md");
    for heading in ["## Compatibility", "## Deploying into `iggy-connectors`"] {
        assert!(
            section(&readme, heading).contains("(docs/install.md#the-iggy-runtime)"),
            "the README's {heading} links The Iggy runtime"
        );
    }
    let contributing = read("CONTRIBUTING.md");
    let binaries = section(&contributing, "## The Iggy binaries");
    for needle in [
        "(docs/install.md#the-iggy-runtime)",
        "tar cJf iggy-cc269ef-linux-x86_64.tar.xz",
        "tar xJf ARCHIVE -C \"$IGGY_BIN_DIR\"",
    ] {
        assert!(
            binaries.contains(needle),
            "\"The Iggy binaries\" shows {needle}"
        );
    }
}

/// Every rustup line a user copies installs without a question and is followed by the line
/// that puts cargo on the shell's PATH (without it the scripts stop at "cargo is missing").
#[test]
fn every_rustup_line_installs_without_questions_and_loads_cargo() {
    let mut seen = 0;
    for name in crate::user_markdown() {
        let text = read(&name);
        for block in code_blocks(&text, "bash") {
            let lines: Vec<&str> = block.lines().map(str::trim).collect();
            for (i, line) in lines.iter().enumerate() {
                if !line.contains("sh.rustup.rs") {
                    continue;
                }
                seen += 1;
                assert!(
                    line.ends_with("| sh -s -- -y"),
                    "{name}: `{line}` asks questions; end it with `| sh -s -- -y`"
                );
                assert_eq!(
                    lines.get(i + 1).copied(),
                    Some(". \"$HOME/.cargo/env\""),
                    "{name}: the line after `{line}` loads cargo into the shell"
                );
            }
        }
    }
    assert!(
        seen >= 2,
        "the README and Installing install Rust: {seen} lines"
    );
}

/// The packages of an `apt-get install -y …` line of a block.
fn apt_packages(block: &str) -> Vec<String> {
    let joined = block.replace("\\\n", " ");
    let line = joined
        .lines()
        .find(|l| l.contains("apt-get install -y"))
        .unwrap_or_else(|| panic!("an apt-get line in {block}"));
    line.split("apt-get install -y")
        .nth(1)
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

/// The README's quickstart installs exactly what Installing says the build and the quickstart
/// need, and names what the tests need beyond it.
#[test]
fn the_quickstart_prerequisites_are_the_ones_installing_lists() {
    let readme = read("README.md");
    let quickstart = section(&readme, "## Quickstart");
    let block = code_blocks(quickstart, "bash")
        .into_iter()
        .find(|b| b.contains("apt-get install"))
        .expect("the quickstart's prerequisites");
    let mut readme_packages = apt_packages(block);
    readme_packages.sort();
    let install = read("docs/install.md");
    let prerequisites = section(&install, "### Prerequisites");
    let mut needed = Vec::new();
    let mut listed = Vec::new();
    for row in prerequisites.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let packages: Vec<String> = cells[1]
            .split(',')
            .map(|p| p.trim().trim_matches('`').to_owned())
            .collect();
        if cells[2].contains("the build") || cells[2].contains("the quickstart") {
            needed.extend(packages.iter().cloned());
        }
        listed.extend(packages);
    }
    needed.sort();
    assert_eq!(
        readme_packages, needed,
        "the README's quickstart installs what Installing's table says the build and the \
         quickstart need, nothing more"
    );
    let mut install_packages = apt_packages(
        code_blocks(prerequisites, "bash")
            .into_iter()
            .find(|b| b.contains("apt-get install"))
            .expect("Installing's apt-get line"),
    );
    install_packages.sort();
    listed.sort();
    assert_eq!(
        install_packages, listed,
        "Installing's apt-get line installs exactly the packages its table explains"
    );
    let testing = folded(section(&readme, "## Testing"));
    for needle in ["cargo install --locked cargo-sort", "python3-venv"] {
        assert!(
            testing.contains(needle),
            "the README's Testing names {needle}"
        );
    }
    assert!(
        read("scripts/test.sh").contains("cargo sort --workspace --check"),
        "scripts/test.sh needs cargo-sort, which the README names"
    );
}
