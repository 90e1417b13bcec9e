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

# The plugin inside the real Apache Iggy runtime (tests/runtime): a fresh iggy-server and
# iggy-connectors per test, reading tables of the local Fluss cluster the tests start
# themselves (as scripts/test.sh: Java 17+ and Maven). Needs the apache/iggy cc269ef binaries
# in IGGY_BIN_DIR (CONTRIBUTING.md "The Iggy binaries"). Shares scripts/test.sh's build: after it,
# nothing is compiled again.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${IGGY_BIN_DIR:-}" ] || [ ! -x "$IGGY_BIN_DIR/iggy-server" ] ||
  [ ! -x "$IGGY_BIN_DIR/iggy-connectors" ] || [ ! -x "$IGGY_BIN_DIR/iggy" ]; then
  cat >&2 <<'HOWTO'
IGGY_BIN_DIR must name a directory holding iggy-server, iggy-connectors and iggy, built from
apache/iggy at commit cc269ef (see docs/install.md, "The Iggy runtime", for the commands), or
unpacked from an archive of them (CONTRIBUTING.md, "The Iggy binaries"):
  export IGGY_BIN_DIR=$(mktemp -d) && tar xJf iggy-cc269ef-linux-x86_64.tar.xz -C "$IGGY_BIN_DIR"
iggy-server also needs libhwloc.so.15 and libudev.so.1 (Debian: apt-get install -y libhwloc15 libudev1).
HOWTO
  exit 1
fi
source scripts/cargo-env.sh
build_everything
# The Python consumer example's interpreter (the Iggy client, pyarrow), in target/venv.
scripts/python-venv.sh >/dev/null
# The Rust consumer example (docs/consuming.md, scripts/cargo-env.sh): its unit tests, then
# tests/runtime/consumers.rs runs it next to the Python one. It is built in the background
# beside the other runtime tests, which need none of it and mostly wait on servers. CONSUMER_RUST=0 leaves it out but for its formatting (its cold build is the longest
# of the suite's, BENCHMARKS.md "Consumer examples").
consumer_rust=${CONSUMER_RUST:-1}
cargo fmt --manifest-path "$PWD/examples/consumer_rust/Cargo.toml" -- --check

# One test at a time in each lane: each starts its own server and runtime next to a Fluss cluster.
runtime_tests=(cargo test --release --workspace --no-fail-fast --test runtime)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ "$consumer_rust" != 0 ]; then
  export CONSUMER_RUST_BIN=$consumer_target/release/fluss-iggy-consumer
fi
summary=${TEST_SUMMARY:-$work/summary}
source scripts/run-again.sh
set +e
# The fault tests (tests/runtime/faults/, mostly holding a fault) run in a lane of their own
# beside the others, with clusters of their own; their output follows the others'.
# RUNTIME_LANES=1 runs them in one lane with the others, one test at a time.
faults_lane() {
  "${runtime_tests[@]}" -- --test-threads=1 faults:: 2>&1 |
    scripts/test-times.py --label "runtime tests (faults)" --summary "$work/faults.summary" \
      --failed "$work/faults.failed" >"$work/faults.log"
  local rc=${PIPESTATUS[0]}
  if [ "$rc" != 0 ]; then
    run_failed_again "runtime tests (faults)" "$work/faults.failed" "$work/faults.log" \
      "$work/faults.summary" >>"$work/faults.log" 2>&1
    rc=$?
  fi
  return "$rc"
}
faults_skip=(--skip faults::)
if [ "${RUNTIME_LANES:-}" = 1 ]; then faults_skip=(); fi
if [ ${#faults_skip[@]} -gt 0 ]; then
  faults_lane &
  faults_pid=$!
fi
{
  rc=0
  # The consumer's build writes to a log of its own, shown when it fails (scripts/test-times.py
  # would count its crates as compiled again after the shared build).
  if [ "$consumer_rust" != 0 ]; then
    build_consumer_example >"$work/consumer-build.log" 2>&1 &
    consumer_build_pid=$!
  fi
  "${runtime_tests[@]}" -- --test-threads=1 --skip consumers:: "${faults_skip[@]}" || rc=1
  if [ "$consumer_rust" != 0 ]; then
    if wait "$consumer_build_pid"; then
      CARGO_TARGET_DIR=$consumer_target cargo test "${consumer_example[@]}" --no-fail-fast || rc=1
    else
      echo "the Rust consumer example's build failed:" >&2
      cat "$work/consumer-build.log" >&2
      rc=1
    fi
  fi
  "${runtime_tests[@]}" -- --test-threads=1 consumers:: || rc=1
  exit "$rc"
} 2>&1 | scripts/test-times.py --label "runtime tests" --summary "$summary" --failed "$work/failed" |
  tee "$work/log"
status=${PIPESTATUS[0]}
# Tests that failed for an environment fault once more, each alone (scripts/run-again.sh); their
# lines join the closing ones.
if [ "$status" != 0 ]; then
  run_failed_again "runtime tests" "$work/failed" "$work/log" "$work/again"
  status=$?
  if [ -f "$work/again" ]; then tee -a "$summary" <"$work/again"; fi
fi
if [ -n "${faults_pid:-}" ]; then
  wait "$faults_pid" || status=1
  cat "$work/faults.log"
  cat "$work/faults.summary" >>"$summary"
fi
exit "$status"
