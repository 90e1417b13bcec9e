#!/usr/bin/env bash
# The plugin inside the real Apache Iggy runtime (tests/runtime, feature iggy-runtime): a
# fresh iggy-server and iggy-connectors per test, reading tables of the local Fluss cluster
# the tests start themselves (as scripts/test.sh: Java 17+ and Maven). Needs the prebuilt
# binaries in IGGY_BIN_DIR; CI runs it through .ci/run after scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${IGGY_BIN_DIR:-}" ] || [ ! -x "$IGGY_BIN_DIR/iggy-server" ] ||
  [ ! -x "$IGGY_BIN_DIR/iggy-connectors" ] || [ ! -x "$IGGY_BIN_DIR/iggy" ]; then
  cat >&2 <<'HOWTO'
IGGY_BIN_DIR must name a directory holding iggy-server, iggy-connectors and iggy; get them with:
  export IGGY_BIN_DIR=$(mktemp -d) && tar xJf ../shared/iggy-runtime/iggy-cc269ef-linux-x86_64.tar.xz -C "$IGGY_BIN_DIR"
iggy-server also needs libhwloc.so.15 and libudev.so.1 (Debian: apt-get install -y libhwloc15 libudev1).
HOWTO
  exit 1
fi

# `test = false` keeps this binary out of scripts/test.sh's --all-targets lint; lint it here.
cargo clippy --features iggy-runtime --test runtime -- -D warnings
# The runtime dlopens the plugin from target/debug; build it first.
cargo build -p iggy_connector_fluss_source
# One test at a time: each starts its own server and runtime next to the Fluss cluster.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
cargo test --features iggy-runtime --test runtime -- --test-threads=1 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed;?$/) p += $i; if ($(i+1) ~ /^failed;?$/) f += $i } }
     END { printf "runtime tests: %d passed, %d failed\n", p, f }' "$log"
exit "$status"
