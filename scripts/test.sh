#!/usr/bin/env bash
# The project's test command (README "Testing"; CI runs it through .ci/run): format and
# manifest checks, one clippy-linted release build of every target (scripts/cargo-env.sh), then
# every test, including the integration tests against real local Fluss clusters that the tests
# start themselves (scripts/fluss-cluster.sh; needs Java 17+ and Maven) and the README's
# commands in a fresh clone. The suite in the real Iggy runtime is scripts/test-runtime.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/cargo-env.sh

cargo fmt --all -- --check
if ! cargo sort --version >/dev/null 2>&1; then
  echo "cargo-sort is missing: cargo install --locked cargo-sort" >&2
  exit 1
fi
cargo sort --workspace --check
build_everything

# One test at a time: several tests start clusters of their own, and on a 2-core machine
# parallel JVM starts and table creations starve each other into timeouts.
threads=--test-threads=${TEST_THREADS:-1}
set +e
{
  rc=0
  # What `cargo test -p iggy_connector_fluss_source` runs in any workspace (the upstream
  # check), then the other packages, then the suites that need a cluster.
  cargo test --release -p iggy_connector_fluss_source --no-fail-fast -- "$threads" || rc=1
  cargo test --release --workspace --exclude iggy_connector_fluss_source --no-fail-fast -- "$threads" || rc=1
  cargo test --release --workspace --no-fail-fast --test it --test cluster -- "$threads" || rc=1
  cargo test --release --workspace --no-fail-fast --test quickstart -- "$threads" || rc=1
  exit "$rc"
} 2>&1 | scripts/test-times.py --label tests ${TEST_SUMMARY:+--summary "$TEST_SUMMARY"}
status=${PIPESTATUS[0]}
exit "$status"
