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

# Quickstart: see the plugin stream Fluss tables in one command.
#
#   scripts/quickstart.sh [--messages N]
#
# Builds the plugin, the runner and a demo writer in release mode (into `cargo metadata`'s target
# directory, so CARGO_TARGET_DIR is honoured; the README's deploy step then reuses that build); starts a local Fluss 0.9.1 cluster (scripts/fluss-cluster.sh:
# jars from Maven Central, everything on 127.0.0.1); creates demo.orders (log table) and
# demo.customers (primary-key table) and keeps writing to them; then runs the plugin through the
# runner, exactly as the Iggy connectors runtime drives it, printing every message as one JSON
# line on stdout (progress goes to stderr). Ctrl-C stops everything it started and removes its
# temporary directory.
#
#   --messages N, QUICKSTART_MESSAGES=N
#       Non-interactive: stop once each table has delivered at least N messages (the batch that
#       reaches N is printed whole), then clean up as on Ctrl-C and exit 0.
#   IGGY_BIN_DIR=DIR
#       Stream through a real Apache Iggy instead of the runner: starts DIR/iggy-server on
#       127.0.0.1 (fresh data dir, default root user iggy/iggy) and DIR/iggy-connectors with one
#       connector file per demo table, then prints what lands in the topics quickstart/orders
#       and quickstart/customers, read back with DIR/iggy (`message poll`), one JSON line per
#       message: {"topic":…,"offset":…,"id":"0x…","payload":…}.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

say() { echo "quickstart: $*" >&2; }
usage() {
  grep -E '^#( Quickstart:|   scripts/quickstart.sh )' "$0" | sed 's/^# *//' >&2
  exit 2
}

MESSAGES=${QUICKSTART_MESSAGES:-}
while (($#)); do
  case $1 in
    --messages) [[ $# -ge 2 ]] || usage; MESSAGES=$2; shift 2 ;;
    --messages=*) MESSAGES=${1#*=}; shift ;;
    -h|--help) usage ;;
    *) say "unknown argument '$1'"; usage ;;
  esac
done
if [[ -n $MESSAGES && ! $MESSAGES =~ ^[1-9][0-9]*$ ]]; then
  say "--messages (QUICKSTART_MESSAGES) must be a positive number, got '$MESSAGES'"
  exit 2
fi
if [[ -n ${IGGY_BIN_DIR:-} ]]; then
  for bin in iggy-server iggy-connectors iggy; do
    [[ -x $IGGY_BIN_DIR/$bin ]] || { say "IGGY_BIN_DIR=$IGGY_BIN_DIR has no executable $bin"; exit 1; }
  done
fi

# The system packages the build and the cluster need, each checked without root and without
# /sbin on PATH (docs/install.md lists them).
ensure_tools() {
  local missing=()
  if ! command -v java >/dev/null 2>&1 ||
     ! java -XshowSettings:properties -version 2>&1 | awk -F'= ' '/java.specification.version/ {exit !($2+0 >= 17)}'; then
    missing+=(openjdk-17-jre-headless)
  fi
  command -v mvn >/dev/null 2>&1 || missing+=(maven)
  # rustc links with `cc`, and zstd's C sources are compiled with it.
  command -v cc >/dev/null 2>&1 || missing+=(build-essential)
  [ ${#missing[@]} -eq 0 ] && return 0
  # Each package once, in the order found.
  local packages=() p
  for p in "${missing[@]}"; do
    [[ " ${packages[*]} " == *" $p "* ]] || packages+=("$p")
  done
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing ${packages[*]} (Fluss needs Java 17+, Maven fetches its jars, the build a C compiler)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}" >/dev/null
    return 0
  fi
  say "missing system packages; on Debian or Ubuntu an administrator installs them with:"
  say "  sudo apt-get install -y ${packages[*]}"
  say "other systems: a C compiler and linker, Java 17+ and Maven 3 (docs/install.md); then run"
  say "me again"
  exit 1
}

ensure_tools
command -v cargo >/dev/null 2>&1 || {
  say "cargo is missing: install Rust with rustup (https://rustup.rs), as the user who runs me,"
  say "then load its environment into this shell (or open a new one):"
  say "  curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y"
  say "  . \"\$HOME/.cargo/env\""
  exit 1
}

scripts/fluss-cluster.sh fetch
say "building the plugin, the runner and the demo writer"
# No target selection: each package's library and binaries (the plugin's cdylib included).
# Release: the library users deploy, and the build `cargo build --release -p
# iggy_connector_fluss_source` (README, Deploying) finds done.
cargo build -q --release -p iggy_connector_fluss_source -p fluss-source-runner -p fluss-testkit
# Where cargo put them: `cargo metadata` knows CARGO_TARGET_DIR and build.target-dir.
TARGET_DIR=$(cargo metadata --format-version 1 --no-deps 2>/dev/null |
  sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
[[ -n $TARGET_DIR ]] || TARGET_DIR=${CARGO_TARGET_DIR:-target}
[[ $TARGET_DIR == /* ]] || TARGET_DIR=$ROOT/$TARGET_DIR
BIN=$TARGET_DIR/release
for f in fluss-demo-writer fluss-source-runner libiggy_connector_fluss_source.so; do
  [[ -e $BIN/$f ]] || { say "the build did not produce $BIN/$f"; exit 1; }
done
say "binaries in $BIN"

WORK=$(mktemp -d -t fluss-quickstart.XXXXXX)
# Everything started below keeps its temporary files in here, so cleanup removes them too:
# fluss-rs 1.0.0 makes a `fluss-remote-logs*` directory per log scanner and never deletes it
# when the process exits, and the cluster script keeps its port registry in TMPDIR.
mkdir -p "$WORK/tmp"
export TMPDIR="$WORK/tmp"
say "working in $WORK"
# Stopped in this order on exit: readers, runners or the runtime, the writer, the Iggy server.
PIDS=()
start() { # name stderr-file|- command...: runs it in the background, remembered for cleanup
  local name=$1 log=$2
  shift 2
  if [[ $log == - ]]; then "$@" & else "$@" 2>"$log" & fi
  PIDS+=($!)
  say "started $name (pid $!)"
}
cleanup() {
  trap - EXIT INT TERM
  local pid
  for pid in "${PIDS[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  "$ROOT/scripts/fluss-cluster.sh" stop "$WORK/fluss" >/dev/null 2>&1 || true
  rm -rf "$WORK"
  say "stopped everything"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
free_port() {
  local p
  for _ in $(seq 1 200); do
    p=$((20000 + RANDOM % 12000))
    port_open "$p" || { echo "$p"; return 0; }
  done
  say "no free port found on 127.0.0.1"
  exit 1
}

say "starting a local Fluss cluster"
BOOTSTRAP=$(scripts/fluss-cluster.sh start "$WORK/fluss" --owner-pid $$ | tail -n 1)
say "Fluss is up at $BOOTSTRAP"

start fluss-demo-writer "$WORK/writer.log" "$BIN/fluss-demo-writer" "$BOOTSTRAP"
WRITER=$!
for _ in $(seq 1 120); do
  grep -q "writing to" "$WORK/writer.log" 2>/dev/null && break
  kill -0 "$WRITER" 2>/dev/null || { cat "$WORK/writer.log" >&2; exit 1; }
  sleep 0.5
done

connector() { # dir key table extra-plugin-config
  cat >"$1/$2.toml" <<TOML
type = "source"
key = "$2"
enabled = true
version = 0
name = "quickstart $3"
path = "$BIN/libiggy_connector_fluss_source"

[[streams]]
stream = "quickstart"
topic = "$3"
schema = "json"

[plugin_config]
bootstrap_servers = "$BOOTSTRAP"
database = "demo"
table = "$3"
poll_interval = "500ms"
$4
TOML
}
connectors() { # dir
  connector "$1" orders orders 'include_metadata = true'
  connector "$1" customers customers 'changelog_format = "debezium"'
}

# Prints each complete line of FILE as it grows, one write per line (so two printers never
# interleave inside a line), until process PID has exited and the file is read to its end.
print_lines() { # file pid
  tail -s 0.2 --pid="$2" -n +1 -F "$1" 2>/dev/null | while IFS= read -r line; do
    printf '%s\n' "$line"
  done
}

stream_with_runner() {
  local key limit=()
  [[ -z $MESSAGES ]] || limit=(--max-messages "$MESSAGES")
  connectors "$WORK"
  say "streaming demo.orders (JSON rows) and demo.customers (Debezium change events)${MESSAGES:+ until $MESSAGES messages each}; Ctrl-C to stop"
  local runners=()
  for key in orders customers; do
    start "fluss-source-runner $key" - "$BIN/fluss-source-runner" --connector "$WORK/$key.toml" \
      --state "$WORK/$key.state" --output "$WORK/$key.jsonl" "${limit[@]}"
    runners+=($!)
  done
  local printers=()
  for i in 0 1; do
    key=$([[ $i == 0 ]] && echo orders || echo customers)
    print_lines "$WORK/$key.jsonl" "${runners[$i]}" &
    printers+=($!)
    PIDS=($! "${PIDS[@]}")
  done
  local status=0
  for i in 0 1; do
    wait "${runners[$i]}" || status=$?
  done
  wait "${printers[@]}" || true
  if ((status)); then
    say "a runner failed (exit $status); its ERROR line is above"
    exit "$status"
  fi
}

# One message of Iggy's binary format (as `iggy message poll --output-file` writes it) at POS:
# a 64-byte header (checksum u64, id u128, offset u64, timestamp u64, origin timestamp u64,
# user-headers length u32, payload length u32, reserved u64), the payload, the user headers.
u32_at() { od -An -v -tu4 -j "$2" -N 4 "$1" | tr -d ' \n'; }
u64_at() { od -An -v -tu8 -j "$2" -N 8 "$1" | tr -d ' \n'; }
hex_le_at() { # file pos bytes: the little-endian integer there, as 0x…
  local bytes hex="" b
  read -r -a bytes <<<"$(od -An -v -tx1 -j "$2" -N "$3" "$1" | tr '\n' ' ')"
  for b in "${bytes[@]}"; do hex=$b$hex; done
  echo "0x$hex"
}

# Polls quickstart/TOPIC from offset 0 and prints each message, until MOST messages (if set).
read_topic() { # topic most
  local topic=$1 most=$2 next=0 printed=0 file=$WORK/poll-$1.bin
  local pos size headers payload offset
  while [[ -z $most ]] || ((printed < most)); do
    rm -f "$file"
    if ! "$IGGY_BIN_DIR/iggy" -q -u iggy -p iggy --tcp-server-address "$IGGY_ADDRESS" \
        message poll --offset "$next" -m 100 --output-file "$file" quickstart "$topic" 0 \
        >/dev/null 2>&1 || [[ ! -s $file ]]; then
      sleep 0.5 # the runtime creates the topic with its first batch
      continue
    fi
    pos=0
    size=$(stat -c %s "$file")
    while ((pos + 64 <= size)); do
      headers=$(u32_at "$file" $((pos + 48)))
      payload=$(u32_at "$file" $((pos + 52)))
      offset=$(u64_at "$file" $((pos + 24)))
      printf '{"topic":"%s","offset":%s,"id":"%s","payload":%s}\n' "$topic" "$offset" \
        "$(hex_le_at "$file" $((pos + 8)) 16)" "$(tail -c +$((pos + 65)) "$file" | head -c "$payload")"
      next=$((offset + 1))
      printed=$((printed + 1))
      pos=$((pos + 64 + payload + headers))
    done
  done
}

stream_with_iggy() {
  local port
  port=$(free_port)
  IGGY_ADDRESS=127.0.0.1:$port
  mkdir -p "$WORK/iggy" "$WORK/connectors" "$WORK/runtime-state"
  say "starting iggy-server on $IGGY_ADDRESS"
  (cd "$WORK" && IGGY_SYSTEM_PATH="$WORK/iggy" IGGY_TCP_ADDRESS="$IGGY_ADDRESS" \
    IGGY_QUIC_ENABLED=false IGGY_WEBSOCKET_ENABLED=false IGGY_HTTP_ENABLED=false \
    IGGY_SYSTEM_SHARDING_CPU_ALLOCATION=all \
    exec "$IGGY_BIN_DIR/iggy-server" --with-default-root-credentials) >"$WORK/iggy-server.log" 2>&1 &
  # The server goes last on exit, after the runtime has sent and closed everything.
  PIDS+=($!)
  local server=$!
  say "started iggy-server (pid $server)"
  for _ in $(seq 1 120); do
    port_open "$port" && break
    kill -0 "$server" 2>/dev/null || { tail -n 30 "$WORK/iggy-server.log" >&2; say "iggy-server exited"; exit 1; }
    sleep 0.5
  done
  port_open "$port" || { tail -n 30 "$WORK/iggy-server.log" >&2; say "iggy-server did not listen on $IGGY_ADDRESS"; exit 1; }

  connectors "$WORK/connectors"
  cat >"$WORK/runtime.toml" <<TOML
[iggy]
address = "$IGGY_ADDRESS"
username = "iggy"
password = "iggy"

[state]
path = "$WORK/runtime-state"

[connectors]
config_type = "local"
config_dir = "$WORK/connectors"

[http]
enabled = false
TOML
  say "streaming demo.orders and demo.customers through iggy-connectors into Iggy topics quickstart/orders and quickstart/customers${MESSAGES:+ until $MESSAGES messages each}; Ctrl-C to stop"
  # Placed before the server in PIDS so that it stops (and sends what it holds) first.
  (cd "$WORK" && IGGY_CONNECTORS_CONFIG_PATH="$WORK/runtime.toml" exec "$IGGY_BIN_DIR/iggy-connectors") \
    >"$WORK/iggy-connectors.log" 2>&1 &
  local runtime=$!
  PIDS=("$runtime" "${PIDS[@]}")
  say "started iggy-connectors (pid $runtime)"
  # The consumer finds the key columns in the messages (fluss_primary_key); only the topics are named.
  say "to apply every row once (docs/consuming.md), attach the Python consumer from another terminal:"
  say "  python3 $ROOT/examples/consumer_python/consume.py --server $IGGY_ADDRESS --stream quickstart --topic customers --format debezium"
  say "  (--topic orders --format json for the orders; it needs apache-iggy==0.9.0.dev4, in a virtual environment)"
  local readers=() topic
  for topic in orders customers; do
    read_topic "$topic" "$MESSAGES" &
    readers+=($!)
    PIDS=($! "${PIDS[@]}")
  done
  # Wait for the readers; stop early if the runtime dies.
  while :; do
    local running=0 pid
    for pid in "${readers[@]}"; do kill -0 "$pid" 2>/dev/null && running=1; done
    ((running)) || break
    if ! kill -0 "$runtime" 2>/dev/null; then
      tail -n 30 "$WORK/iggy-connectors.log" >&2
      say "iggy-connectors exited; its log is above"
      exit 1
    fi
    sleep 0.5
  done
}

if [[ -n ${IGGY_BIN_DIR:-} ]]; then
  stream_with_iggy
else
  stream_with_runner
fi
