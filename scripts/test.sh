#!/usr/bin/env bash
# The project's test command (README "Testing"; CI runs it through .ci/run):
# format check, clippy with warnings as errors, then every test, including the
# integration tests against a real local Fluss cluster that the tests start
# themselves (scripts/fluss-cluster.sh; needs Java 17+ and Maven).
set -euo pipefail
cd "$(dirname "$0")/.."

cargo fmt --all -- --check
cargo clippy --workspace --all-targets --all-features -- -D warnings
# The plugin and the test source are cdylibs the tests load; build them first.
cargo build --workspace --all-features
# One test at a time: several tests start clusters of their own, and on a 2-core machine
# parallel JVM starts and table creations starve each other into timeouts.
cargo test --workspace --all-features -- --test-threads="${TEST_THREADS:-1}"
