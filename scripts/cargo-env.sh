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

# Sourced by scripts/test.sh, scripts/test-runtime.sh and .ci/run: one build for every suite.
#
# - One profile, release: the one the README's deploy step builds and the quickstart uses, so
#   the suites test the library users run and nothing is compiled for a second profile.
# - One clippy pass: clippy-driver wraps rustc for the workspace's own crates while they are
#   built (what `cargo clippy` does under a check build), with warnings as errors. A separate
#   `cargo clippy` would check every dependency again.
# - Every cargo command names the same packages (`--workspace`, or sets whose features cargo
#   resolves the same), so none of them compiles a dependency with other features.

if ! CLIPPY_DRIVER=$(command -v clippy-driver); then
  echo "clippy-driver is missing: rustup component add clippy" >&2
  exit 1
fi
export RUSTC_WORKSPACE_WRAPPER=$CLIPPY_DRIVER
# cargo-clippy's way of passing `-- -D warnings` to the driver.
export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"

# Every target of every package, the suites that are `test = false` included: what clippy
# --all-targets would lint, and every test binary the scripts run. Two commands (`cargo test`
# builds no cdylib that nothing depends on, such as the runner tests' test source); the second
# names each test target, since `--tests` leaves out the `test = false` ones and cargo drops
# `--test NAME` when `--tests` is given too. One command for all of them lets the largest
# (the library's unit tests, `--test it`) compile side by side.
# TEST_BENCHES=0 leaves the benchmarks out (.ci/run does: they are built and linted when a
# change is made, and building them is 190 s of compiler time CI spends on no test).
workspace_test_targets() {
  cargo metadata --no-deps --format-version 1 | python3 -c '
import json, sys
packages = json.load(sys.stdin)["packages"]
print(" ".join(sorted({t["name"] for p in packages for t in p["targets"] if "test" in t["kind"]})))'
}
build_everything() {
  local targets=(--lib --bins --examples) name
  if [ "${TEST_BENCHES:-1}" != 0 ]; then targets+=(--benches); fi
  for name in $(workspace_test_targets); do targets+=(--test "$name"); done
  cargo build --release --workspace
  cargo test --release --workspace "${targets[@]}" --no-run
}

# The Rust consumer example (docs/consuming.md): a crate of its own with Iggy's client crate,
# in a target directory of its own (no dependency of it is built with the workspace's features),
# clippy-linted like the workspace. Its binary and unit tests, which scripts/test-runtime.sh
# builds and runs.
# The suites build it without optimisation (a fifth less CPU; they move a few thousand rows
# through it): docs/consuming.md builds the optimised one.
consumer_example=(--release --locked --manifest-path examples/consumer_rust/Cargo.toml
  --config profile.release.opt-level=0)
consumer_target=${CARGO_TARGET_DIR:-target}/consumer_rust
build_consumer_example() {
  CARGO_TARGET_DIR=$consumer_target cargo build "${consumer_example[@]}"
  CARGO_TARGET_DIR=$consumer_target cargo test "${consumer_example[@]}" --no-run
}
