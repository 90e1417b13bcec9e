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
log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
cargo test --workspace --all-features --no-fail-fast -- --test-threads="${TEST_THREADS:-1}" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
# One closing line for all the test binaries together (cargo ends on the last crate's
# doc-tests, which may be "0 passed").
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed;?$/) p += $i; if ($(i+1) ~ /^failed;?$/) f += $i } }
     END { printf "tests: %d passed, %d failed\n", p, f }' "$log"
# CI keeps only the tail of this output: repeat why each failed test failed (its name and the
# lines around its panic) after the summary, where they survive the cut.
if [ "$status" -ne 0 ]; then
  awk '/^---- .* stdout ----$/ { name = $2; keep = 1; next }
       /^failures:$/ && keep { keep = 0 }
       keep && /panicked at/ { print "failed: " name; n = 8 }
       keep && n > 0 { print "  " $0; n-- }' "$log" | tail -n 120
fi
exit "$status"
