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

# The project's test command (README "Testing"; CI runs it through .ci/run): format and
# manifest checks, one clippy-linted release build of every target (scripts/cargo-env.sh), then
# every test, including the integration tests against real local Fluss clusters that the tests
# start themselves (scripts/fluss-cluster.sh; needs Java 17+ and Maven) and the README's
# commands in a fresh clone. The suite in the real Iggy runtime is scripts/test-runtime.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/cargo-env.sh

cargo fmt --all -- --check
# The SDK binding of the build inside apache/iggy (scripts/upstream.sh): no crate here compiles
# it, so its format is checked on its own.
rustfmt --edition 2024 --check upstream/src/*.rs
if ! cargo sort --version >/dev/null 2>&1; then
  echo "cargo-sort is missing: cargo install --locked cargo-sort" >&2
  exit 1
fi
cargo sort --workspace --check
build_everything
# The Python the tests run (pyarrow, moto's S3 server), in target/venv; the tests would create
# it too, one at a time.
scripts/python-venv.sh >/dev/null

# A log tiered to S3 (tests/it/object_store.rs) is read by fluss-rs's own downloader, which
# takes the region from the environment only (docs/operations.md "Limitations"): the test store's region.
export AWS_REGION=${AWS_REGION:-us-east-1}

# Within a lane one test at a time: several tests start clusters of their own, and on a 2-core
# machine parallel JVM starts and table creations starve each other into timeouts.
threads=--test-threads=${TEST_THREADS:-1}

# The cluster suites wait far more than they compute (their processes use about a tenth of the
# time they take), so they run in four lanes side by side, each with its own shared cluster:
# lane 1 the snapshot tests, lane 2 faults, crashes and authorization, lane 3 remote storage,
# failover and bad input, then the testkit's cluster tests, lane 4 the rest of `--test it` (new
# modules land there), then the README's commands. Each lane takes about a quarter of the time
# (6 to 9 minutes on 2 cores). TEST_LANES=1 runs everything in one lane, in this order.
lane1_modules=(snapshots::)
lane2_modules=(faults:: crashes:: authorization::)
lane3_modules=(object_store:: failover:: bad_input::)
lane4_skips=()
for module in "${lane1_modules[@]}" "${lane2_modules[@]}" "${lane3_modules[@]}"; do
  lane4_skips+=(--skip "$module")
done

it_tests() {
  cargo test --release --workspace --no-fail-fast --test it -- "$threads" "$@"
}
lane1() {
  it_tests "${lane1_modules[@]}"
}
lane2() {
  it_tests "${lane2_modules[@]}"
}
lane3() {
  local rc=0
  it_tests "${lane3_modules[@]}" || rc=1
  cargo test --release --workspace --no-fail-fast --test cluster -- "$threads" || rc=1
  return "$rc"
}
lane4() {
  local rc=0
  it_tests "${lane4_skips[@]}" || rc=1
  cargo test --release --workspace --no-fail-fast --test quickstart -- "$threads" || rc=1
  return "$rc"
}
lanes=(1 2 3 4)

# Each lane's output goes to a file of its own (shown when the lane ends, so lanes never
# interleave) and through scripts/test-times.py, which times its tests; the closing lines of
# all lanes are gathered, and one count for every test binary ends the output.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Servers of the test clusters that exit unasked are reported here by fluss-cluster.sh (their
# directories are removed when the tests end); printed at the end when not empty.
export FLUSS_DEATH_REPORT=$work/deaths.log
# A cluster lane's tests that failed for an environment fault (a cluster that did not start, a
# coordinator that gives tables no leaders) are run once more, each alone (scripts/run-again.sh);
# any other failure fails the run.
source scripts/run-again.sh
run_lane() {
  local name=$1
  shift
  set +e
  "$@" 2>&1 | scripts/test-times.py --label "tests ($name)" --summary "$work/$name.summary" \
    --failed "$work/$name.failed" >"$work/$name.log"
  local rc=${PIPESTATUS[0]}
  if [ "$rc" != 0 ] && [ "$name" != offline ]; then
    run_failed_again "tests ($name)" "$work/$name.failed" "$work/$name.log" "$work/$name.summary" \
      >>"$work/$name.log" 2>&1
    rc=$?
  fi
  set -e
  return "$rc"
}

status=0
# What `cargo test -p iggy_connector_fluss_source` runs in any workspace (the upstream check),
# then the other packages (no cluster, a minute or two), then the documentation: every
# intra-doc link resolves, private items' included (their links to private items are what
# documenting private items means, so only broken ones fail). cargo doc checks the dependencies
# once for itself (metadata, no code) and keeps that in target/. This lane runs beside the
# cluster lanes, whose tests mostly wait on servers; the documentation comes last, so that its
# hold on cargo's build lock ends before a cluster lane's next cargo command.
offline() {
  local rc=0
  cargo test --release -p iggy_connector_fluss_source --no-fail-fast -- "$threads" || rc=1
  cargo test --release --workspace --exclude iggy_connector_fluss_source --no-fail-fast -- "$threads" || rc=1
  RUSTDOCFLAGS="-D rustdoc::broken_intra_doc_links -A rustdoc::private_intra_doc_links" \
    cargo doc --release --workspace --no-deps --document-private-items || rc=1
  return "$rc"
}

if [ "${TEST_LANES:-}" = 1 ]; then
  run_lane offline offline || status=1
  cat "$work/offline.log"
  all_lanes() {
    local rc=0
    for lane in "${lanes[@]}"; do
      "lane$lane" || rc=1
    done
    return "$rc"
  }
  run_lane cluster all_lanes || status=1
  cat "$work/cluster.log"
else
  echo "tests: the offline tests and the cluster suites in $((${#lanes[@]} + 1)) lanes side by side (output of each when it ends)" >&2
  run_lane offline offline &
  lane_pids=($!)
  for lane in "${lanes[@]}"; do
    run_lane "lane-$lane" "lane$lane" &
    lane_pids+=($!)
  done
  for pid in "${lane_pids[@]}"; do
    wait "$pid" || status=1
  done
  cat "$work/offline.log"
  for lane in "${lanes[@]}"; do cat "$work/lane-$lane.log"; done
fi

# The shared clusters are stopped by their watchdogs once a suite's process exits.
sleep 2
if [ -s "$FLUSS_DEATH_REPORT" ]; then
  echo "tests: Fluss servers that exited without being stopped:"
  cat "$FLUSS_DEATH_REPORT"
fi

# The closing lines: each lane's slowest tests, then the failures of all, then one count.
summaries=("$work"/*.summary)
closing=$(scripts/closing-lines.sh tests "${summaries[@]}")
echo "$closing"
if [ -n "${TEST_SUMMARY:-}" ]; then
  echo "$closing" >>"$TEST_SUMMARY"
fi
exit "$status"
