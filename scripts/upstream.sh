#!/usr/bin/env bash
# Licensed to the Apache Software Foundation (ASF) under one
# or more contributor license agreements.  See the NOTICE file
# distributed with this work for additional information
# regarding copyright ownership.  The ASF licenses this file
# to you under the Apache License, Version 2.0 (the
# "License"); you may not use this file except in compliance
# with the License.  You may obtain a copy of the License at
#
#   http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing,
# software distributed under the License is distributed on an
# "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY
# KIND, either express or implied.  See the License for the
# specific language governing permissions and limitations
# under the License.

# Turns an apache/iggy checkout into one with this connector as
# core/connectors/sources/fluss_source (package iggy_connector_fluss_source), built on that
# workspace's own `iggy_connector_sdk`: the plugin's modules of src/ as they are, bound to the
# SDK by upstream/src/sdk.rs and connector.rs instead of src/'s; the files its unit and property tests read;
# a Cargo.toml on the workspace's dependencies where they fit (upstream/Cargo.toml.in), its
# README and config.toml; a member of the workspace, a row of core/connectors/sources/README.md,
# an example connector file for the runtime, and Cargo.lock updated for the new crates.
# Running it again replaces what an earlier run put there.
#
# Usage: scripts/upstream.sh IGGY_DIR
# Then, in IGGY_DIR: cargo build --release -p iggy_connector_fluss_source
set -euo pipefail

die() { echo "upstream: $*" >&2; exit 1; }
[ $# -eq 1 ] || die "usage: scripts/upstream.sh IGGY_DIR (an apache/iggy checkout)"
repo=$(cd "$(dirname "$0")/.." && pwd)
[ -d "$1" ] || die "$1 is not a directory"
iggy=$(cd "$1" && pwd)
[ -f "$iggy/core/connectors/sdk/Cargo.toml" ] && grep -q '^name = "iggy_connector_sdk"' "$iggy/core/connectors/sdk/Cargo.toml" \
  || die "$iggy is not an apache/iggy checkout (no core/connectors/sdk with the package iggy_connector_sdk)"
grep -q '^\[workspace\]' "$iggy/Cargo.toml" || die "$iggy/Cargo.toml has no [workspace]"
command -v cargo >/dev/null 2>&1 || die "cargo is missing: install Rust (rustup)"

dest=$iggy/core/connectors/sources/fluss_source
version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$repo/Cargo.toml" | head -n 1)
[ -n "$version" ] || die "no version in $repo/Cargo.toml"

rm -rf "$dest"
mkdir -p "$dest/tests" "$dest/docs"
# The plugin's modules; the binding to the SDK is apache/iggy's.
cp -R "$repo/src" "$dest/src"
cp "$repo/upstream/src/sdk.rs" "$repo/upstream/src/connector.rs" "$dest/src/"
# What the unit tests read (the option tables of the configuration chapter, old state files),
# and the property tests with what they read.
cp "$repo/docs/configuration.md" "$dest/docs/"
cp -R "$repo/tests/data" "$repo/tests/arrow_cases" "$repo/tests/property" "$dest/tests/"
for test in config_state_properties exactly_once_properties filter_properties ipc_properties json_properties; do
  cp "$repo/tests/$test.rs" "$dest/tests/"
done
mkdir -p "$dest/examples/consumer_rust/src"
cp "$repo/examples/consumer_rust/src/dedup.rs" "$dest/examples/consumer_rust/src/"
sed "s/@VERSION@/$version/" "$repo/upstream/Cargo.toml.in" >"$dest/Cargo.toml"
cp "$repo/upstream/README.md" "$repo/upstream/config.toml" "$dest/"
cp "$repo/upstream/fluss_source.toml" "$iggy/core/connectors/runtime/example_config/connectors/fluss_source.toml"

# A member of the workspace, in the members' order, and a row of the sources' table.
python3 - "$iggy" <<'PY'
import re, sys
iggy = sys.argv[1]
member = "core/connectors/sources/fluss_source"
path = f"{iggy}/Cargo.toml"
text = open(path).read()
block = re.search(r"(?ms)^\[workspace\]\s*\nmembers = \[\n(.*?)^\]", text)
if block is None:
    sys.exit("upstream: no `members = [` list under [workspace] in " + path)
members = re.findall(r'"([^"]+)"', block.group(1))
if member not in members:
    # Before the first member that sorts after it, the others left as they are.
    later = [m for m in members if m > member]
    at = text.index(f'    "{later[0]}"', block.start(1)) if later else block.end(1)
    text = text[:at] + f'    "{member}",\n' + text[at:]
    open(path, "w").write(text)
path = f"{iggy}/core/connectors/sources/README.md"
text = open(path).read()
row = ("| **fluss_source** | Streams Apache Fluss log tables and primary-key tables (their current "
       "rows from KV snapshots, then every change) as JSON, Debezium change events or Arrow IPC |")
if "**fluss_source**" not in text:
    rows = list(re.finditer(r"(?m)^\| \*\*(\w+)\*\* \|.*$", text))
    if not rows:
        sys.exit("upstream: no table of sources in " + path)
    after = next((r for r in rows if r.group(1) > "fluss_source"), None)
    at = after.start() if after else rows[-1].end() + 1
    text = text[:at] + row + "\n" + text[at:]
    open(path, "w").write(text)
PY

# The new crates into Cargo.lock; every version already locked stays as it is. The checkout's
# rust-toolchain.toml names the toolchain cargo runs with: `rustup toolchain install` in IGGY_DIR
# installs it, or RUSTUP_TOOLCHAIN names another of at least the workspace's rust-version.
# The checkout's rust-toolchain.toml picks the toolchain; one that is not installed stops here
# with the way out rather than rustup's message.
if ! (cd "$iggy" && cargo --version >/dev/null 2>&1); then
  die "the toolchain $iggy/rust-toolchain.toml names is not installed: run \`rustup toolchain install\` in $iggy, or set RUSTUP_TOOLCHAIN to an installed toolchain of at least the workspace's rust-version (e.g. RUSTUP_TOOLCHAIN=stable)"
fi
if ! output=$(cd "$iggy" && cargo update --workspace 2>&1); then
  echo "$output" | head -n 5 >&2
  die "cargo update --workspace failed in $iggy (above)"
fi
echo "upstream: $dest (version $version); build it with: cd $iggy && cargo build --release -p iggy_connector_fluss_source" >&2
