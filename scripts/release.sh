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

# The release artifact of the plugin, built and then proven in the real Iggy runtime:
#
#   scripts/release.sh
#
# 1. Builds the plugin's `.so` as the suites build it (release, `--locked`): the only C code in it,
#    zstd's, is compiled from the sources `zstd-sys` carries and linked in statically, so that it
#    needs nothing on the host beyond the C runtime (libc, libm, libgcc_s). The version comes
#    from `cargo metadata`.
# 2. Packs dist/iggy_connector_fluss_source-<version>-linux-<arch>.tar.gz: one directory of that
#    name holding the `.so`, LICENSE, README.md, CHANGELOG.md, docs/, config.toml,
#    example_config/ and SHA256SUMS (of those files); dist/<archive>.sha256 beside it is for
#    `sha256sum -c`.
# 3. Smoke test of the unpacked archive's `.so`, which FLUSS_PLUGIN_LIBRARY names to the test
#    suites (built as scripts/test.sh builds them): tests/artifact.rs (the files, no shared
#    library beyond the C runtime, the glibc docs/install.md and the README name),
#    tests/symbols.rs (the five symbols, it loads), then `iggy-connectors` from IGGY_BIN_DIR
#    loading it against a local Fluss cluster:
#    a log table as JSON through a restart of the runtime, as Arrow IPC, and a primary-key
#    table's KV snapshot (tests/runtime). It needs what scripts/test-runtime.sh needs:
#    IGGY_BIN_DIR, Java 17+ and Maven.
#
# Any failure stops the script with a non-zero status, and the archive is removed.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
started=$(date +%s)
say() { echo "release: $* (at $(($(date +%s) - started)) s)" >&2; }
fail() {
  echo "release: FAILED: $*" >&2
  exit 1
}

if [ -z "${IGGY_BIN_DIR:-}" ] || [ ! -x "$IGGY_BIN_DIR/iggy-connectors" ]; then
  fail "IGGY_BIN_DIR must name the directory of iggy-server, iggy-connectors and iggy (apache/iggy cc269ef; CONTRIBUTING.md, \"The Iggy binaries\"): the smoke test loads the artifact in the real runtime"
fi
for tool in cc objdump sha256sum python3; do
  command -v "$tool" >/dev/null 2>&1 || fail "$tool is missing (docs/install.md lists the prerequisites)"
done

package=iggy_connector_fluss_source
read -r version target_dir < <(cargo metadata --no-deps --format-version 1 | python3 -c '
import json, sys
meta = json.load(sys.stdin)
version = next(p["version"] for p in meta["packages"] if p["name"] == sys.argv[1])
print(version, meta["target_directory"])' "$package")
arch=$(uname -m)
name=$package-$version-linux-$arch
work=$(mktemp -d)
dist=$ROOT/dist
archive=$dist/$name.tar.gz
# The archive is kept only when the smoke test passes.
cleanup() {
  local status=$?
  rm -rf "$work"
  if [ "$status" != 0 ]; then rm -f "$archive" "$archive.sha256"; fi
}
trap cleanup EXIT

# 1. The build.
source scripts/cargo-env.sh
say "building $name"
cargo build --release --locked -p "$package" || fail "the build failed (above)"
library=$target_dir/release/lib$package.so
[ -f "$library" ] || fail "the build did not produce $library"

# 2. The archive.
stage=$work/stage/$name
mkdir -p "$stage" "$dist"
rm -f "$archive" "$archive.sha256"
cp "$library" LICENSE README.md CHANGELOG.md config.toml "$stage/"
cp -r docs example_config "$stage/"
(cd "$stage" && find . -type f -printf '%P\n' | LC_ALL=C sort | xargs sha256sum >"$work/sums")
mv "$work/sums" "$stage/SHA256SUMS"
# Reproducible: sorted names, one owner, the commit's time on every file.
mtime=$(git log -1 --format=%cI 2>/dev/null || date -u +%FT%TZ)
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="$mtime" \
  -C "$work/stage" -czf "$archive" "$name"
(cd "$dist" && sha256sum "$name.tar.gz" >"$name.tar.gz.sha256")
say "packed $archive ($(du -h "$archive" | cut -f1))"

# 3. The smoke test, of what the archive holds.
unpacked=$work/unpacked
mkdir -p "$unpacked"
(cd "$dist" && sha256sum -c --quiet "$name.tar.gz.sha256") || fail "the archive does not match its checksum"
tar -xzf "$archive" -C "$unpacked"
(cd "$unpacked/$name" && sha256sum -c --quiet SHA256SUMS) || fail "the unpacked files do not match SHA256SUMS"
export FLUSS_PLUGIN_LIBRARY=$unpacked/$name/lib$package.so
libs=$(objdump -p "$FLUSS_PLUGIN_LIBRARY" | awk '$1 == "NEEDED" {print $2}' | tr '\n' ' ')
glibc=$(objdump -p "$FLUSS_PLUGIN_LIBRARY" | grep -o 'GLIBC_[0-9][0-9.]*' | sort -V | tail -n 1)
say "the library needs ${libs}and ${glibc/_/ } or newer"

tests=(cargo test --release --workspace --no-fail-fast)
say "smoke test: what the library needs from the host, its symbols"
"${tests[@]}" --test artifact --test symbols -- --test-threads=1 ||
  fail "tests/artifact.rs or tests/symbols.rs failed against $FLUSS_PLUGIN_LIBRARY"
say "smoke test: the library in iggy-connectors (a log table as JSON and Arrow IPC, a primary-key snapshot)"
"${tests[@]}" --test runtime -- --test-threads=1 --exact \
  log_json::every_row_arrives_once_in_bucket_order_through_a_graceful_restart \
  arrow_ipc::arrow_ipc_payloads_decode_to_the_rows_written \
  snapshot::a_snapshot_of_200_000_keys_replays_to_the_table ||
  fail "the runtime tests failed against $FLUSS_PLUGIN_LIBRARY"

say "done: $archive and $archive.sha256"
