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

# The connector inside apache/iggy, checked as apache/iggy's CI checks a connector, from a
# source tree of apache/iggy in one command:
#
#   scripts/upstream-check.sh IGGY_SRC [WORK_DIR]
#
# IGGY_SRC is an apache/iggy checkout (copied, left as it is) or a .tar.gz of one (unpacked);
# WORK_DIR (default: a new temporary directory, kept) receives the copy. Then:
# 1. scripts/upstream.sh adds the connector as core/connectors/sources/fluss_source;
# 2. the plugin's sources there are this repository's, but for the SDK binding (src/sdk.rs, src/connector.rs);
# 3. apache/iggy's checks: `cargo fmt --all -- --check`, `cargo sort --check --no-format
#    --workspace`, `cargo clippy -p iggy_connector_fluss_source --all-targets --all-features --
#    -D warnings`, `cargo test -p iggy_connector_fluss_source` (its unit and property tests),
#    `cargo test --locked --doc -p iggy_connector_fluss_source`, `cargo machete --with-metadata`
#    on the crate and the license headers (`hawkeye check`, licenserc.toml);
# 4. `cargo build --release -p iggy_connector_fluss_source`, whose library it prints last
#    (FLUSS_PLUGIN_LIBRARY=that path runs this repository's suites against it).
# cargo-sort, cargo-machete and hawkeye are installed with `cargo install --locked` when missing.
# The checkout's rust-toolchain.toml names the toolchain; when that one is not installed and
# RUSTUP_TOOLCHAIN is not set, the default toolchain runs it if it is at least the workspace's
# rust-version. Each step's time is printed; any failure stops the script.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
started=$(date +%s)
step() { echo "upstream-check: $* (at $(($(date +%s) - started)) s)" >&2; }
die() { echo "upstream-check: FAILED: $*" >&2; exit 1; }

[ $# -ge 1 ] && [ $# -le 2 ] || die "usage: scripts/upstream-check.sh IGGY_SRC [WORK_DIR]"
src=$1
work=${2:-$(mktemp -d)}
mkdir -p "$work"
work=$(cd "$work" && pwd)
if [ -f "$src" ]; then
  step "unpacking $src into $work"
  tar xzf "$src" -C "$work"
  iggy=$(find "$work" -mindepth 1 -maxdepth 1 -type d | head -n 1)
elif [ -d "$src" ]; then
  step "copying $src into $work/iggy"
  rm -rf "$work/iggy"
  cp -R "$src" "$work/iggy"
  iggy=$work/iggy
else
  die "$src is neither an apache/iggy checkout nor a tarball of one"
fi
[ -n "$iggy" ] && [ -f "$iggy/Cargo.toml" ] || die "no Cargo.toml at the top of $src"

cd "$iggy"
if [ -z "${RUSTUP_TOOLCHAIN:-}" ] && ! cargo --version >/dev/null 2>&1; then
  wanted=$(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
  have=$(RUSTUP_TOOLCHAIN=stable rustc --version 2>/dev/null | awk '{print $2}')
  if [ -n "$have" ] && [ "$(printf '%s\n%s\n' "$wanted" "$have" | sort -V | head -n 1)" = "$wanted" ]; then
    step "the toolchain of rust-toolchain.toml is not installed: using stable $have (rust-version $wanted)"
    export RUSTUP_TOOLCHAIN=stable
  else
    die "the toolchain of $iggy/rust-toolchain.toml is not installed (rustup toolchain install), and stable ($have) is older than rust-version $wanted"
  fi
fi
for tool in cargo-sort cargo-machete; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    step "installing $tool"
    cargo install --locked --quiet "$tool"
  fi
done
# The license checker at the version apache/iggy's CI runs (its configuration format changes
# between major versions).
hawkeye_version=$(cat "$iggy/.github/config/hawkeye.version" 2>/dev/null || echo 6.5.1)
if ! hawkeye --version 2>/dev/null | grep -qF "$hawkeye_version"; then
  step "installing hawkeye $hawkeye_version"
  cargo install --locked --quiet --force hawkeye --version "$hawkeye_version"
fi

step "adding the connector (scripts/upstream.sh)"
"$repo/scripts/upstream.sh" "$iggy"
crate=$iggy/core/connectors/sources/fluss_source
differences=$(diff -r "$repo/src" "$crate/src" | grep -v '^diff -r' || true)
expected=$(for file in connector.rs sdk.rs; do diff "$repo/src/$file" "$repo/upstream/src/$file"; done || true)
[ "$differences" = "$expected" ] || die "the plugin's sources differ from this repository's beyond src/sdk.rs and src/connector.rs:
$(diff -rq "$repo/src" "$crate/src")"
step "the plugin's sources are this repository's but for src/sdk.rs and src/connector.rs"

run() {
  step "$*"
  "$@" || die "$*"
}
run cargo fmt --all -- --check
run cargo sort --check --no-format --workspace
run cargo clippy --locked -p iggy_connector_fluss_source --all-targets --all-features -- -D warnings
run cargo test --locked -p iggy_connector_fluss_source
run cargo test --locked --doc -p iggy_connector_fluss_source
run cargo machete --with-metadata "$crate"
run hawkeye check
run cargo build --locked --release -p iggy_connector_fluss_source
library=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')/release/libiggy_connector_fluss_source.so
[ -f "$library" ] || die "no $library after the build"
step "done"
echo "$library"
