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

# A local Apache Fluss 0.9.1 cluster with the tables the example connector files read, kept
# running until it is stopped (README "Deploying into iggy-connectors"):
#
#   scripts/local-fluss.sh start DIR    start it in DIR (new or empty), return when it is ready
#   scripts/local-fluss.sh stop DIR     stop it and remove DIR
#   scripts/local-fluss.sh status DIR   one line per process, then the bootstrap address
#
# `start` builds the demo writer (the quickstart's build, so after the quickstart nothing is
# compiled), starts ZooKeeper, a coordinator on 127.0.0.1:9123 (the address the example
# connector files name; LOCAL_FLUSS_PORT=PORT for another) and a tablet server, all on
# 127.0.0.1 (scripts/fluss-cluster.sh: jars from Maven Central, Java 17+ and Maven), then the
# writer: it creates fluss.orders (a log table, 3 buckets) and fluss.customers (a primary-key
# table keyed by customer_id, 3 buckets) and keeps adding orders and changing customers every
# second until `stop`. The servers' data, logs and the cluster's remote storage (KV snapshot
# files) stay in DIR, which `stop` removes.
set -euo pipefail
# DIR as the caller names it, relative to the caller's working directory.
if (($# == 2)) && [[ $2 != /* ]]; then
  set -- "$1" "$PWD/$2"
fi
cd "$(dirname "$0")/.."
ROOT=$PWD

say() { echo "local-fluss: $*" >&2; }
die() { say "$*"; exit 1; }
usage() {
  grep '^#   scripts/local-fluss.sh ' "$0" | sed 's/^# *//' >&2
  exit 2
}

DATABASE=fluss
PORT=${LOCAL_FLUSS_PORT:-9123}

# The writer's process id, from DIR/writer.pid, when that process is still the writer.
writer_pid() {
  local dir=$1 pid
  pid=$(cat "$dir/writer.pid" 2>/dev/null) || return 1
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "fluss-demo-writer" || return 1
  echo "$pid"
}

stop_writer() {
  local dir=$1 pid i
  pid=$(writer_pid "$dir") || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
}

start() {
  local dir=$1
  if [[ -e $dir ]] && [[ -n "$(ls -A "$dir" 2>/dev/null)" ]]; then
    die "$dir is not empty: a cluster may run there (scripts/local-fluss.sh status $dir); stop it first or name a new directory"
  fi
  command -v cargo >/dev/null 2>&1 ||
    die "cargo is missing: install Rust with rustup, then '. \"\$HOME/.cargo/env\"' (docs/install.md)"
  say "building the demo writer"
  cargo build -q --release -p iggy_connector_fluss_source -p fluss-source-runner -p fluss-testkit
  local target_dir
  target_dir=$(cargo metadata --format-version 1 --no-deps 2>/dev/null |
    sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
  [[ -n $target_dir ]] || target_dir=${CARGO_TARGET_DIR:-target}
  [[ $target_dir == /* ]] || target_dir=$ROOT/$target_dir
  local writer=$target_dir/release/fluss-demo-writer
  [[ -x $writer ]] || die "the build did not produce $writer"

  say "starting Fluss in $dir (coordinator on 127.0.0.1:$PORT)"
  local bootstrap
  bootstrap=$(scripts/fluss-cluster.sh start "$dir" --coordinator-port "$PORT" | tail -n 1)
  dir=$(cd "$dir" && pwd)
  # From here on a failure stops what was started and keeps DIR's logs for a look (a global:
  # the EXIT trap may run after this function's locals are gone).
  STARTED_DIR=$dir
  trap 'rc=$?; if ((rc)); then stop_writer "$STARTED_DIR"; "$ROOT/scripts/fluss-cluster.sh" stop "$STARTED_DIR" --keep; say "start failed; the logs are in $STARTED_DIR/log"; fi' EXIT

  setsid "$writer" "$bootstrap" "$DATABASE" </dev/null >"$dir/log/writer.log" 2>&1 &
  echo $! >"$dir/writer.pid"
  local i
  for ((i = 0; i < 240; i++)); do
    grep -q "writing to" "$dir/log/writer.log" 2>/dev/null && break
    writer_pid "$dir" >/dev/null || { cat "$dir/log/writer.log" >&2; die "the writer exited"; }
    sleep 0.5
  done
  grep -q "writing to" "$dir/log/writer.log" ||
    { cat "$dir/log/writer.log" >&2; die "the writer did not create the tables within 120 s"; }
  trap - EXIT
  say "Fluss is up at $bootstrap with $DATABASE.orders (log table) and $DATABASE.customers (primary-key table), written to every second"
  say "stop it with: scripts/local-fluss.sh stop $dir"
  echo "$bootstrap"
}

stop() {
  local dir=$1
  [[ -d $dir ]] || { say "nothing to stop at $dir"; return 0; }
  [[ -d $dir/pids ]] || die "$dir is not a local Fluss directory (no pids/ inside)"
  stop_writer "$dir"
  scripts/fluss-cluster.sh stop "$dir"
  say "stopped; $dir removed"
}

status() {
  local dir=$1 pid
  scripts/fluss-cluster.sh status "$dir"
  if pid=$(writer_pid "$dir"); then
    printf '%-12s pid=%-8s %s\n' writer "$pid" up
  else
    printf '%-12s %s\n' writer down
  fi
}

(($# == 2)) || usage
case $1 in
  start) start "$2" ;;
  stop) stop "$2" ;;
  status) status "$2" ;;
  *) usage ;;
esac
