#!/usr/bin/env bash
# Quickstart: see the plugin stream Fluss tables in one command.
#
# Builds the plugin, the runner and a demo writer; starts a local Fluss 0.9.1 cluster
# (scripts/fluss-cluster.sh: jars from Maven Central, everything on 127.0.0.1); creates
# demo.orders (log table) and demo.customers (primary-key table) and keeps writing to them;
# then runs the plugin through the runner, exactly as the Iggy connectors runtime drives it,
# printing every message as one JSON line. Ctrl-C stops everything it started.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

say() { echo "quickstart: $*" >&2; }

ensure_tools() {
  local missing=()
  if ! command -v java >/dev/null 2>&1 ||
     ! java -XshowSettings:properties -version 2>&1 | awk -F'= ' '/java.specification.version/ {exit !($2+0 >= 17)}'; then
    missing+=(openjdk-17-jre-headless)
  fi
  command -v mvn >/dev/null 2>&1 || missing+=(maven)
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing ${missing[*]} (Fluss needs Java 17+, Maven fetches its jars)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    say "please install ${missing[*]} first (Java 17 or newer and Maven 3), then run me again"
    exit 1
  fi
}

ensure_tools
command -v cargo >/dev/null 2>&1 || { say "please install Rust (https://rustup.rs) first"; exit 1; }

scripts/fluss-cluster.sh fetch
say "building the plugin, the runner and the demo writer"
cargo build -q -p iggy_connector_fluss_source -p fluss-source-runner -p fluss-testkit --bin fluss-demo-writer

WORK=$(mktemp -d -t fluss-quickstart.XXXXXX)
PIDS=()
cleanup() {
  trap - EXIT INT TERM
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  "$ROOT/scripts/fluss-cluster.sh" stop "$WORK/fluss" >/dev/null 2>&1 || true
  rm -rf "$WORK"
  say "stopped everything"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say "starting a local Fluss cluster"
BOOTSTRAP=$(scripts/fluss-cluster.sh start "$WORK/fluss" --owner-pid $$ | tail -n 1)
say "Fluss is up at $BOOTSTRAP"

target/debug/fluss-demo-writer "$BOOTSTRAP" 2>"$WORK/writer.log" &
PIDS+=($!)
for _ in $(seq 1 120); do
  grep -q "writing to" "$WORK/writer.log" 2>/dev/null && break
  kill -0 "${PIDS[0]}" 2>/dev/null || { cat "$WORK/writer.log" >&2; exit 1; }
  sleep 0.5
done

connector() { # key table extra-plugin-config
  cat >"$WORK/$1.toml" <<TOML
type = "source"
key = "$1"
enabled = true
version = 0
name = "quickstart $2"
path = "$ROOT/target/debug/libiggy_connector_fluss_source"

[[streams]]
stream = "quickstart"
topic = "$2"
schema = "json"

[plugin_config]
bootstrap_servers = "$BOOTSTRAP"
database = "demo"
table = "$2"
poll_interval = "500ms"
$3
TOML
}
connector orders orders 'include_metadata = true'
connector customers customers 'changelog_format = "debezium"'

say "streaming demo.orders (JSON rows) and demo.customers (Debezium change events); Ctrl-C to stop"
for key in orders customers; do
  target/debug/fluss-source-runner --connector "$WORK/$key.toml" --state "$WORK/$key.state" --output - &
  PIDS+=($!)
done
wait "${PIDS[@]:1}"
