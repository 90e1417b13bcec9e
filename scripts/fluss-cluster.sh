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

# Local Apache Fluss 0.9.1 cluster for tests, CI and the quickstart: jars from
# Maven Central, one JVM per server, everything on 127.0.0.1, no docker.
# Run `scripts/fluss-cluster.sh help` for the commands.
set -euo pipefail

FLUSS_VERSION=0.9.1-incubating
# log4j version pinned by the Fluss 0.9.1 root pom (`log4j.version`); the
# server uses SLF4J 1.7, hence the log4j-slf4j-impl binding (not slf4j2-impl).
LOG4J_VERSION=2.25.4
CACHE_DIR=${FLUSS_CACHE_DIR:-$HOME/.cache/iggy-fluss-source/fluss-0.9.1}
LIB_DIR=$CACHE_DIR/lib
S3_LIB_DIR=$CACHE_DIR/lib-s3

ZK_MAIN=org.apache.fluss.shaded.zookeeper3.org.apache.zookeeper.server.quorum.QuorumPeerMain
COORDINATOR_MAIN=org.apache.fluss.server.coordinator.CoordinatorServer
TABLET_MAIN=org.apache.fluss.server.tablet.TabletServer

# Heaps sized for a 2-core CI box running several clusters one after another;
# override through the environment when a test needs more.
ZK_HEAP=${FLUSS_ZK_HEAP:-128m}
COORDINATOR_HEAP=${FLUSS_COORDINATOR_HEAP:-384m}
TABLET_HEAP=${FLUSS_TABLET_HEAP:-768m}
# Seconds to wait for a port to accept connections / a process to exit on TERM.
START_TIMEOUT=${FLUSS_START_TIMEOUT:-90}
STOP_TIMEOUT=${FLUSS_STOP_TIMEOUT:-20}

# Absolute, so the watchdog can re-run us from any working directory.
SELF=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")

die() { echo "fluss-cluster: $*" >&2; exit 1; }
info() { echo "fluss-cluster: $*" >&2; }

# ---------------------------------------------------------------- fetch

ARTIFACTS=(
  "org.apache.fluss:fluss-server:$FLUSS_VERSION"
  "org.apache.logging.log4j:log4j-api:$LOG4J_VERSION"
  "org.apache.logging.log4j:log4j-core:$LOG4J_VERSION"
  "org.apache.logging.log4j:log4j-slf4j-impl:$LOG4J_VERSION"
)

require_java() {
  command -v java >/dev/null 2>&1 || die "java not found on PATH; install a JDK 17 or newer (e.g. apt-get install openjdk-17-jre-headless)"
  local v
  v=$(java -XshowSettings:properties -version 2>&1 | awk -F'= ' '/java.specification.version/ {print $2; exit}')
  [[ -n "$v" ]] || die "could not read the Java version from 'java -XshowSettings:properties -version'"
  # Fluss 0.9.1 calls MappedByteBuffer.duplicate(), which only exists from Java 17 on.
  (( ${v%%.*} >= 17 )) || die "Java $v found, Fluss $FLUSS_VERSION needs Java 17 or newer; put a newer java first on PATH"
}

fetch() {
  require_java
  local stamp=$LIB_DIR/.complete want
  want=$(printf '%s\n' "${ARTIFACTS[@]}")
  if [[ -f $stamp && "$(cat "$stamp")" == "$want" ]]; then
    write_log4j_conf
    return 0
  fi
  command -v mvn >/dev/null 2>&1 || die "mvn not found on PATH; install Maven 3 (e.g. apt-get install maven), it downloads the Fluss jars from Maven Central"
  mkdir -p "$CACHE_DIR"
  local tmp
  tmp=$(mktemp -d "$CACHE_DIR/lib.tmp.XXXXXX")
  # One Maven run for all jars (each run costs a JVM start, ~7 s): a
  # throw-away pom lists them, copy-dependencies without transitives copies
  # exactly these; fluss-server is a fat jar (verified below).
  local a g n v deps=""
  for a in "${ARTIFACTS[@]}"; do
    IFS=: read -r g n v <<<"$a"
    deps+="<dependency><groupId>$g</groupId><artifactId>$n</artifactId><version>$v</version></dependency>"
  done
  cat >"$tmp/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.iggy-fluss-source</groupId><artifactId>fluss-jars</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>$deps</dependencies>
</project>
POM
  info "fetching ${ARTIFACTS[*]}"
  if ! mvn -q -B -f "$tmp/pom.xml" dependency:copy-dependencies -DexcludeTransitive=true \
      -DoutputDirectory="$tmp" >"$tmp/mvn.log" 2>&1; then
    cat "$tmp/mvn.log" >&2
    rm -rf "$tmp"
    die "maven could not download the Fluss jars (see the output above; is Maven Central reachable?)"
  fi
  rm -f "$tmp/pom.xml"
  rm -f "$tmp/mvn.log"
  # The fat jar must carry the shaded ZooKeeper, RocksDB and slf4j-api, or the
  # servers fail at start with a ClassNotFoundException much later.
  local cls
  local listing
  listing=$(unzip -Z1 "$tmp/fluss-server-$FLUSS_VERSION.jar" 2>/dev/null || jar tf "$tmp/fluss-server-$FLUSS_VERSION.jar")
  for cls in \
    "org/apache/fluss/shaded/zookeeper3/org/apache/zookeeper/server/quorum/QuorumPeerMain.class" \
    "org/apache/fluss/server/tablet/TabletServer.class" \
    "org/rocksdb/RocksDB.class" \
    "org/slf4j/Logger.class"; do
    grep -qxF "$cls" <<<"$listing" || { rm -rf "$tmp"; die "fluss-server-$FLUSS_VERSION.jar lacks $cls; the jar layout changed, fix ARTIFACTS in $SELF"; }
  done
  printf '%s\n' "$want" >"$tmp/.complete"
  rm -rf "$LIB_DIR"
  mv "$tmp" "$LIB_DIR"
  write_log4j_conf
  info "jars in $LIB_DIR"
}

# Our own log4j2 configuration: one plain file per server (path from
# -Dlog.file), INFO by default, the chatty ZooKeeper client/server and
# RocksDB-adjacent packages at WARN so test failures show Fluss' own lines.
write_log4j_conf() {
  local f=$CACHE_DIR/log4j2.properties
  [[ -f $f ]] && return 0
  mkdir -p "$CACHE_DIR"
  cat >"$f.tmp" <<'LOG4J'
# Written by scripts/fluss-cluster.sh; one log file per server process.
status = warn
rootLogger.level = ${env:FLUSS_LOG_LEVEL:-INFO}
rootLogger.appenderRef.file.ref = file

appender.file.type = File
appender.file.name = file
appender.file.fileName = ${sys:log.file}
appender.file.append = true
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{HH:mm:ss.SSS} %-5p [%t] %c{1.} - %m%n

logger.zk.name = org.apache.fluss.shaded.zookeeper3
logger.zk.level = WARN
logger.curator.name = org.apache.fluss.shaded.curator5
logger.curator.level = WARN
LOG4J
  mv "$f.tmp" "$f"
}

# ---------------------------------------------------------------- helpers

# A process that exists and has not exited: not a zombie (the servers are
# re-parented when this script exits, and a non-reaping init leaves zombies
# that `kill -0` still reports).
alive() {
  local pid=$1 state
  [[ -n "$pid" && -r /proc/$pid/stat ]] || return 1
  state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) || return 1
  [[ "$state" != Z && "$state" != X ]]
}

# A pid counts as ours only while it is alive and its command line names this
# cluster dir, so a recycled pid is never signalled.
is_ours() {
  local pid=$1 dir=$2
  alive "$pid" || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "-Dfluss.cluster.dir=$dir " ||
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "fluss-cluster.sh watchdog $dir "
}

pid_of() { cat "$1/pids/$2" 2>/dev/null || true; }
port_of() { cat "$1/ports/$2" 2>/dev/null || true; }

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Pick a port nobody listens on or recently used. Outside the kernel's
# ephemeral range so client sockets cannot grab it between pick and bind.
free_port() {
  local dir=$1 p i used
  used=$(cat "$dir"/ports/* 2>/dev/null || true)
  for i in $(seq 1 200); do
    p=$((20000 + RANDOM % 12000))
    grep -qx "$p" <<<"$used" && continue
    if command -v ss >/dev/null 2>&1; then
      ss -Htan "( sport = :$p )" 2>/dev/null | grep -q . && continue
    fi
    port_open "$p" && continue
    reserve_port "$dir" "$p" || continue
    echo "$p"
    return 0
  done
  die "no free port found on 127.0.0.1"
}

# Ports are reserved machine-wide (one directory per port, naming its cluster) until the
# cluster is stopped: a port that is free only because its server is restarting (a
# coordinator or tablet restart) must not be picked by another cluster starting meanwhile.
PORT_REGISTRY=${FLUSS_PORT_REGISTRY:-${TMPDIR:-/tmp}/fluss-cluster-ports}

reserve_port() {
  local dir=$1 p=$2 owner
  mkdir -p "$PORT_REGISTRY"
  if mkdir "$PORT_REGISTRY/$p" 2>/dev/null; then
    echo "$dir" >"$PORT_REGISTRY/$p/owner"
    return 0
  fi
  owner=$(cat "$PORT_REGISTRY/$p/owner" 2>/dev/null || true)
  # A reservation whose cluster directory is gone is stale: take it over.
  if [[ -n $owner && ! -d $owner/pids ]]; then
    echo "$dir" >"$PORT_REGISTRY/$p/owner"
    return 0
  fi
  return 1
}

release_ports() {
  local dir=$1 f p
  for f in "$dir"/ports/*; do
    [[ -e $f ]] || continue
    p=$(cat "$f")
    if [[ -n $p && "$(cat "$PORT_REGISTRY/$p/owner" 2>/dev/null || true)" == "$dir" ]]; then
      rm -rf "${PORT_REGISTRY:?}/$p"
    fi
  done
}

# Wait until NAME's port accepts connections; fail early if the process died.
wait_port() {
  local dir=$1 name=$2 port=$3 pid deadline=$((SECONDS + START_TIMEOUT))
  pid=$(pid_of "$dir" "$name")
  while ! port_open "$port"; do
    # Not is_ours: right after launch the child may not have exec'ed java yet (its command
    # line is still this script's), and it stays our child, so its pid is not reused.
    if ! alive "$pid"; then
      info "$name (pid $pid) exited before listening on 127.0.0.1:$port"
      return 1
    fi
    if ((SECONDS >= deadline)); then
      info "$name (pid $pid) did not listen on 127.0.0.1:$port within ${START_TIMEOUT}s"
      return 1
    fi
    sleep 0.2
  done
}

log_tail() {
  local dir=$1 lines=${2:-40} f
  for f in "$dir"/log/*.log "$dir"/log/*.out; do
    [[ -s $f ]] || continue
    echo "===== $f (last $lines lines) ====="
    tail -n "$lines" "$f"
  done
}

# Servers stopped by a control command (a fault test), not lost.
on_purpose() { mkdir -p "$1/stopped" && touch "$1/stopped/$2"; }

# With FLUSS_DEATH_REPORT naming a file: before a cluster is stopped and removed, append to it
# every server that had exited without being told to, with its log's last lines, so a test that
# saw the cluster vanish can be explained after the directory is gone.
report_deaths() {
  local dir=$1 f name
  [[ -n ${FLUSS_DEATH_REPORT:-} ]] || return 0
  for f in "$dir"/pids/*; do
    [[ -e $f ]] || continue
    name=$(basename "$f")
    [[ $name != watchdog && ! -e $dir/stopped/$name ]] || continue
    is_ours "$(cat "$f")" "$dir" && continue
    {
      echo "$(date +%T) $dir: $name (pid $(cat "$f")) had exited before the cluster was stopped"
      tail -n 15 "$dir/log/$name.out" 2>/dev/null
      grep -E "ERROR|FATAL|OutOfMemory" "$dir/log/$name.log" 2>/dev/null | tail -n 15
      ls "$dir"/hs_err* "$dir"/tmp/hs_err* 2>/dev/null
    } >>"$FLUSS_DEATH_REPORT" || true
  done
  return 0
}

# Stop one process: TERM, wait, KILL. Silent if it is already gone.
stop_pid() {
  local dir=$1 name=$2 signal=${3:-TERM} pid i
  pid=$(pid_of "$dir" "$name")
  is_ours "$pid" "$dir" || return 0
  kill -s "$signal" "$pid" 2>/dev/null || true
  # A paused (SIGSTOP) server acts on the signal only once it runs again.
  kill -s CONT "$pid" 2>/dev/null || true
  for ((i = 0; i < STOP_TIMEOUT * 10; i++)); do
    is_ours "$pid" "$dir" || return 0
    sleep 0.1
  done
  info "$name (pid $pid) ignored $signal for ${STOP_TIMEOUT}s, sending KILL"
  kill -KILL "$pid" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    is_ours "$pid" "$dir" || return 0
    sleep 0.1
  done
  info "$name (pid $pid) still alive after KILL"
}

classpath() {
  local dir=$1 cp="" j
  # fluss-server last, like upstream's config.sh, so log4j's classes win.
  for j in "$LIB_DIR"/log4j-*.jar; do cp+="$j:"; done
  # Remote storage on S3 (`--conf remote.data.dir=s3://...`) needs Fluss's S3 file system.
  if grep -q '^remote.data.dir=s3://' "$dir/conf/extra.conf" 2>/dev/null; then
    cp+="$S3_LIB_DIR/fluss-fs-s3-$FLUSS_VERSION.jar:"
  fi
  echo "${cp}$LIB_DIR/fluss-server-$FLUSS_VERSION.jar"
}

# Fluss's S3 file system (a 30 MB jar with the AWS SDK), fetched only for a cluster whose
# remote storage is on S3.
fetch_s3() {
  [[ -f $S3_LIB_DIR/fluss-fs-s3-$FLUSS_VERSION.jar ]] && return 0
  mkdir -p "$S3_LIB_DIR"
  info "fetching org.apache.fluss:fluss-fs-s3:$FLUSS_VERSION"
  mvn -q -B dependency:copy -Dartifact="org.apache.fluss:fluss-fs-s3:$FLUSS_VERSION" \
    -DoutputDirectory="$S3_LIB_DIR" >"$S3_LIB_DIR/mvn.log" 2>&1 ||
    { cat "$S3_LIB_DIR/mvn.log" >&2; die "maven could not download fluss-fs-s3 (is Maven Central reachable?)"; }
}

# Start one JVM in its own session, detached from our stdin/stdout/stderr so a
# caller reading our output (e.g. Rust's Command::output) sees EOF when this
# script exits, not when the cluster stops.
launch() {
  local dir=$1 name=$2 heap=$3 main=$4
  shift 4
  local -a jvm=(
    java -Dfluss.cluster.dir="$dir" "-Xmx$heap" "-Xms${FLUSS_XMS:-64m}"
    -XX:+IgnoreUnrecognizedVMOptions -XX:+UseSerialGC -XX:+ExitOnOutOfMemoryError
    # Arrow needs reflective access to java.nio on Java 17+; on the class path
    # it is in the unnamed module (upstream also names arrow's module, which
    # only prints an "Unknown module" warning here).
    --add-opens=java.base/java.nio=ALL-UNNAMED
    -Djava.io.tmpdir="$dir/tmp"
    -Dlog.file="$dir/log/$name.log"
    -Dlog4j.configurationFile="file:$CACHE_DIR/log4j2.properties"
    -Dlog4j.shutdownHookEnabled=false
    -Dzookeeper.admin.enableServer=false
  )
  # ZooKeeper and the coordinator do little work in tests: C1 only starts
  # faster and leaves the second core to the tablet servers and the test.
  [[ $name == tablet-* ]] || jvm+=(-XX:TieredStopAtLevel=1)
  # shellcheck disable=SC2206
  jvm+=(${FLUSS_JAVA_OPTS:-} -cp "$(classpath "$dir")" "$main" "$@")
  setsid "${jvm[@]}" </dev/null >"$dir/log/$name.out" 2>&1 &
  echo $! >"$dir/pids/$name"
}

# server.yaml for one server: shared keys, then the server's own, then the
# user's --conf lines; a later key replaces an earlier one (the YAML parser
# would reject duplicates).
write_server_yaml() {
  local dir=$1 name=$2
  shift 2
  local -A val=()
  local -a order=()
  local kv k
  while IFS= read -r kv; do
    [[ -n $kv ]] || continue
    k=${kv%%=*}
    [[ -v "val[$k]" ]] || order+=("$k")
    val[$k]=${kv#*=}
  done < <(cat "$dir/conf/common.conf"; printf '%s\n' "$@"; advertised "$dir" "$name"; cat "$dir/conf/extra.conf")
  mkdir -p "$dir/conf/$name"
  for k in "${order[@]}"; do
    printf '%s: %s\n' "$k" "${val[$k]}"
  done >"$dir/conf/$name/server.yaml"
}

listeners() {
  local dir=$1 name=$2
  local l="FLUSS://127.0.0.1:$(port_of "$dir" "$name")"
  [[ -f $dir/sasl-bootstrap ]] && l+=", SASL://127.0.0.1:$(port_of "$dir" "$name-sasl")"
  [[ -f $dir/proxied-bootstrap ]] && l+=", PROXIED://127.0.0.1:$(port_of "$dir" "$name-proxied")"
  echo "$l"
}

# A proxied cluster (start --proxied) advertises its PROXIED listener at the port of a fault
# proxy in front of it, so clients that bootstrap there reach every server through a proxy
# (clients learn the servers' addresses from the metadata, per listener); the servers talk to
# each other on FLUSS, directly.
advertised() {
  local dir=$1 name=$2 l
  [[ -f $dir/proxied-bootstrap ]] || return 0
  l="FLUSS://127.0.0.1:$(port_of "$dir" "$name")"
  [[ -f $dir/sasl-bootstrap ]] && l+=", SASL://127.0.0.1:$(port_of "$dir" "$name-sasl")"
  echo "advertised.listeners=$l, PROXIED://127.0.0.1:$(port_of "$dir" "$name-proxy")"
}

start_zookeeper() {
  local dir=$1
  cat >"$dir/conf/zookeeper.properties" <<ZK
dataDir=$dir/data/zookeeper
clientPort=$(port_of "$dir" zookeeper)
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
tickTime=2000
initLimit=10
syncLimit=5
ZK
  launch "$dir" zookeeper "$ZK_HEAP" "$ZK_MAIN" "$dir/conf/zookeeper.properties"
  wait_port "$dir" zookeeper "$(port_of "$dir" zookeeper)"
}

start_coordinator_server() {
  local dir=$1
  write_server_yaml "$dir" coordinator "bind.listeners=$(listeners "$dir" coordinator)" \
    "data.dir=$dir/data/coordinator"
  launch "$dir" coordinator "$COORDINATOR_HEAP" "$COORDINATOR_MAIN" --configDir "$dir/conf/coordinator"
  wait_port "$dir" coordinator "$(port_of "$dir" coordinator)"
}

start_tablet_server() {
  local dir=$1 i=$2
  write_server_yaml "$dir" "tablet-$i" "bind.listeners=$(listeners "$dir" "tablet-$i")" \
    "tablet-server.id=$i" "data.dir=$dir/data/tablet-$i"
  launch "$dir" "tablet-$i" "$TABLET_HEAP" "$TABLET_MAIN" --configDir "$dir/conf/tablet-$i"
  wait_port "$dir" "tablet-$i" "$(port_of "$dir" "tablet-$i")"
}

# The owner's start time (field 22 of /proc/PID/stat) tells a recycled pid apart.
proc_start_time() { awk '{print $22}' "/proc/$1/stat" 2>/dev/null || true; }

watchdog() {
  local dir=$1 owner=$2 started=$3
  while [[ -d $dir && "$(proc_start_time "$owner")" == "$started" ]]; do
    sleep 1
  done
  [[ -d $dir ]] || exit 0
  echo "$(date +%T) owner pid $owner exited, stopping the cluster" >>"$dir/log/watchdog.out"
  exec "$SELF" stop "$dir"
}

cluster_dir() {
  [[ -n ${1:-} ]] || die "missing DIR"
  [[ -d $1/pids ]] || die "$1 is not a cluster directory (no pids/ inside)"
  (cd "$1" && pwd)
}

server_name() {
  [[ ${2:-} == zookeeper || ${2:-} == coordinator || ${2:-} =~ ^tablet-[0-9]+$ ]] ||
    die "server name must be zookeeper, coordinator or tablet-I, got '${2:-}'"
  [[ -f $1/pids/$2 ]] || die "no server $2 in $1"
}

tablet_index() {
  [[ ${2:-} =~ ^[0-9]+$ ]] || die "tablet index must be a number, got '${2:-}'"
  [[ -f $1/ports/tablet-$2 ]] || die "no tablet server $2 in $1 (tablets: 0..$(($(cat "$1/tablets") - 1)))"
}

# ---------------------------------------------------------------- commands

start() {
  local dir="" tablets=1 sasl=0 proxied=0 owner="" coordinator_port="" i
  local -a extra=()
  while (($#)); do
    case $1 in
      --tablets) tablets=${2:?--tablets needs a number}; shift 2 ;;
      --coordinator-port) coordinator_port=${2:?--coordinator-port needs a port}; shift 2 ;;
      --sasl) sasl=1; shift ;;
      --proxied) proxied=1; shift ;;
      --owner-pid) owner=${2:?--owner-pid needs a pid}; shift 2 ;;
      --conf)
        [[ ${2:-} == *=* ]] || die "--conf needs key=value, got '${2:-}'"
        extra+=("$2"); shift 2 ;;
      -*) die "unknown option '$1' for start" ;;
      *) [[ -z $dir ]] || die "start takes one DIR, got '$dir' and '$1'"; dir=$1; shift ;;
    esac
  done
  [[ -n $dir ]] || die "usage: start DIR [--tablets N] [--sasl] [--proxied] [--owner-pid PID] [--coordinator-port PORT] [--conf key=value ...]"
  [[ $tablets =~ ^[1-9][0-9]*$ ]] || die "--tablets must be a positive number, got '$tablets'"
  if [[ -n $coordinator_port ]]; then
    [[ $coordinator_port =~ ^[1-9][0-9]*$ ]] && ((coordinator_port < 65536)) ||
      die "--coordinator-port must be a port number, got '$coordinator_port'"
    ! port_open "$coordinator_port" ||
      die "127.0.0.1:$coordinator_port is in use; stop what listens there or choose another --coordinator-port"
  fi
  if [[ -n $owner ]]; then
    [[ $owner =~ ^[0-9]+$ && -r /proc/$owner/stat ]] || die "--owner-pid $owner is not a running process"
  fi
  if [[ -e $dir ]] && [[ -n "$(ls -A "$dir" 2>/dev/null)" ]]; then
    die "$dir exists and is not empty; start needs a fresh directory (stale ZooKeeper or data dirs corrupt the metadata)"
  fi
  fetch
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  mkdir -p "$dir"/{pids,ports,log,conf,data,remote,tmp}
  echo "$tablets" >"$dir/tablets"
  # On any failure from here on: show the logs, stop what runs, keep DIR for a look.
  # (A global: the EXIT trap runs after this function's locals are gone.)
  STARTING_DIR=$dir
  trap 'rc=$?; if ((rc)); then info "start failed; server logs follow"; log_tail "$STARTING_DIR" >&2; stop "$STARTING_DIR" --keep; fi' EXIT

  local name
  for name in zookeeper coordinator $(seq -f 'tablet-%g' 0 $((tablets - 1))); do
    if [[ $name == coordinator && -n $coordinator_port ]]; then
      reserve_port "$dir" "$coordinator_port" ||
        die "127.0.0.1:$coordinator_port is reserved by another cluster ($PORT_REGISTRY/$coordinator_port)"
      echo "$coordinator_port" >"$dir/ports/$name"
    else
      free_port "$dir" >"$dir/ports/$name"
    fi
    if ((sasl)) && [[ $name != zookeeper ]]; then free_port "$dir" >"$dir/ports/$name-sasl"; fi
    if ((proxied)) && [[ $name != zookeeper ]]; then
      free_port "$dir" >"$dir/ports/$name-proxied"
      free_port "$dir" >"$dir/ports/$name-proxy"
      echo "$name 127.0.0.1:$(port_of "$dir" "$name-proxy") 127.0.0.1:$(port_of "$dir" "$name-proxied")" >>"$dir/proxies"
    fi
  done
  echo "127.0.0.1:$(port_of "$dir" coordinator)" >"$dir/bootstrap"
  if ((sasl)); then
    echo "127.0.0.1:$(port_of "$dir" coordinator-sasl)" >"$dir/sasl-bootstrap"
    printf '%s\n' "admin admin-secret" "alice alice-secret" >"$dir/sasl-users"
  fi
  if ((proxied)); then echo "127.0.0.1:$(port_of "$dir" coordinator-proxy)" >"$dir/proxied-bootstrap"; fi

  {
    echo "zookeeper.address=127.0.0.1:$(port_of "$dir" zookeeper)"
    echo "remote.data.dir=$dir/remote"
    echo "default.bucket.number=1"
    echo "default.replication.factor=1"
    # Two cores: one network thread and a few workers per server are plenty.
    echo "netty.server.num-network-threads=1"
    echo "netty.server.num-worker-threads=2"
    echo "netty.client.num-network-threads=1"
    echo "server.io-pool.size=2"
    echo "server.background.threads=2"
    echo "log.replica.fetcher-number=1"
    echo "kv.rocksdb.thread.num=1"
    # Primary-key snapshots are read from the KV snapshot files (Fluss's default interval is
    # 10 minutes): take them every second, and keep a few so a listed one is still there
    # when it is leased.
    echo "kv.snapshot.interval=1s"
    echo "kv.snapshot.num-retained=5"
    # A tablet server killed with -9 stays registered until its ZooKeeper
    # session expires (default 60 s, capped at 40 s by tickTime 2000); the
    # fault tests restart it sooner than that.
    echo "zookeeper.client.session-timeout=10s"
    if ((sasl)); then
      echo "security.protocol.map=SASL:sasl"
      echo "security.sasl.enabled.mechanisms=plain"
      echo 'security.sasl.plain.jaas.config=org.apache.fluss.security.auth.sasl.plain.PlainLoginModule required user_admin="admin-secret" user_alice="alice-secret";'
    fi
  } >"$dir/conf/common.conf"
  printf '%s\n' "${extra[@]+"${extra[@]}"}" >"$dir/conf/extra.conf"
  if grep -q '^remote.data.dir=s3://' "$dir/conf/extra.conf"; then fetch_s3; fi

  if [[ -n $owner ]]; then
    setsid "$SELF" watchdog "$dir" "$owner" "$(proc_start_time "$owner")" </dev/null >>"$dir/log/watchdog.out" 2>&1 &
    echo $! >"$dir/pids/watchdog"
  fi

  info "starting ZooKeeper on 127.0.0.1:$(port_of "$dir" zookeeper)"
  start_zookeeper "$dir"
  info "starting coordinator on $(listeners "$dir" coordinator)"
  start_coordinator_server "$dir"
  # Tablet servers start in parallel: each JVM spends ~most of its start in
  # class loading, and two cores still overlap them usefully.
  for ((i = 0; i < tablets; i++)); do
    info "starting tablet server $i on $(listeners "$dir" "tablet-$i")"
    write_server_yaml "$dir" "tablet-$i" "bind.listeners=$(listeners "$dir" "tablet-$i")" \
      "tablet-server.id=$i" "data.dir=$dir/data/tablet-$i"
    launch "$dir" "tablet-$i" "$TABLET_HEAP" "$TABLET_MAIN" --configDir "$dir/conf/tablet-$i"
  done
  for ((i = 0; i < tablets; i++)); do
    wait_port "$dir" "tablet-$i" "$(port_of "$dir" "tablet-$i")"
  done
  trap - EXIT
  cat "$dir/bootstrap"
}

stop() {
  local dir="" keep=0
  while (($#)); do
    case $1 in
      --keep) keep=1; shift ;;
      *) dir=$1; shift ;;
    esac
  done
  [[ -n $dir && -d $dir ]] || { info "nothing to stop at '${dir}'"; return 0; }
  dir=$(cd "$dir" && pwd)
  report_deaths "$dir"
  # Watchdog first so it does not race us; skip it when we are the watchdog.
  local wd
  wd=$(pid_of "$dir" watchdog)
  if [[ -n $wd && $wd != "$$" ]] && is_ours "$wd" "$dir"; then kill -KILL "$wd" 2>/dev/null || true; fi
  # Tablet servers before the coordinator: their controlled shutdown talks to it.
  local f pids=()
  for f in "$dir"/pids/tablet-*; do
    [[ -e $f ]] || continue
    stop_pid "$dir" "$(basename "$f")" &
    pids+=($!)
  done
  ((${#pids[@]} == 0)) || wait "${pids[@]}"
  stop_pid "$dir" coordinator
  stop_pid "$dir" zookeeper
  ((keep)) || { release_ports "$dir"; rm -rf "$dir"; }
}

status() {
  local dir
  dir=$(cluster_dir "${1:-}")
  local f name pid port st
  for f in "$dir"/pids/*; do
    [[ -e $f ]] || continue
    name=$(basename "$f")
    pid=$(cat "$f")
    port=$(port_of "$dir" "$name")
    st=down
    is_ours "$pid" "$dir" && st=up
    printf '%-12s pid=%-8s port=%-6s %s\n' "$name" "$pid" "${port:--}" "$st"
  done
  echo "bootstrap $(cat "$dir/bootstrap")"
  [[ ! -f $dir/sasl-bootstrap ]] || echo "sasl-bootstrap $(cat "$dir/sasl-bootstrap")"
}

control() {
  local cmd=$1 dir
  dir=$(cluster_dir "${2:-}")
  case $cmd in
    stop-tablet) tablet_index "$dir" "${3:-}"; stop_pid "$dir" "tablet-$3" TERM; on_purpose "$dir" "tablet-$3" ;;
    kill-tablet) tablet_index "$dir" "${3:-}"; stop_pid "$dir" "tablet-$3" KILL; on_purpose "$dir" "tablet-$3" ;;
    start-tablet)
      tablet_index "$dir" "${3:-}"
      rm -f "$dir/stopped/tablet-$3"
      if is_ours "$(pid_of "$dir" "tablet-$3")" "$dir"; then die "tablet server $3 is still running"; fi
      start_tablet_server "$dir" "$3" || { log_tail "$dir" >&2; die "tablet server $3 did not start"; }
      ;;
    pause | resume | kill)
      server_name "$dir" "${3:-}"
      # SIGSTOP freezes the JVM as a GC pause or a hung process would: it keeps its sockets
      # and answers nothing until SIGCONT.
      case $cmd in
        pause) is_ours "$(pid_of "$dir" "$3")" "$dir" || die "$3 is not running"; kill -STOP "$(pid_of "$dir" "$3")" ;;
        resume) is_ours "$(pid_of "$dir" "$3")" "$dir" || die "$3 is not running"; kill -CONT "$(pid_of "$dir" "$3")" ;;
        kill) stop_pid "$dir" "$3" KILL; on_purpose "$dir" "$3" ;;
      esac
      ;;
    start-zookeeper)
      rm -f "$dir/stopped/zookeeper"
      if is_ours "$(pid_of "$dir" zookeeper)" "$dir"; then die "ZooKeeper is still running"; fi
      start_zookeeper "$dir" || { log_tail "$dir" >&2; die "ZooKeeper did not start"; }
      ;;
    restart-coordinator)
      rm -f "$dir/stopped/coordinator"
      stop_pid "$dir" coordinator TERM
      # The port must be free again before the new JVM binds it.
      local i
      for ((i = 0; i < 100; i++)); do port_open "$(port_of "$dir" coordinator)" || break; sleep 0.1; done
      start_coordinator_server "$dir" || { log_tail "$dir" >&2; die "coordinator did not restart"; }
      ;;
  esac
}

usage() {
  cat <<'USAGE'
usage: fluss-cluster.sh COMMAND ...
  fetch                         download Fluss 0.9.1 + log4j jars into $FLUSS_CACHE_DIR
  server-jar                    fetch, then print the path of fluss-server's jar (it holds the
                                RocksDB the tablet servers run; the testkit writes checkpoints with it)
  start DIR [--tablets N] [--sasl] [--proxied] [--owner-pid PID] [--coordinator-port PORT] [--conf key=value ...]
                                start ZooKeeper, a coordinator and N tablet servers in a fresh DIR;
                                prints the bootstrap address (host:port) as the last stdout line;
                                the coordinator on 127.0.0.1:PORT (else a free port); --proxied
                                adds a listener per server advertised at a proxy port (DIR/proxies:
                                name, proxy address, server address; DIR/proxied-bootstrap)
  stop DIR [--keep]             stop every process of the cluster, then remove DIR (unless --keep)
  stop-tablet DIR I             stop tablet server I gracefully (TERM)
  kill-tablet DIR I             kill tablet server I (kill -9)
  start-tablet DIR I            start tablet server I again (same id, port and data dir)
  restart-coordinator DIR       stop and start the coordinator (same port)
  pause DIR NAME                SIGSTOP server NAME (zookeeper, coordinator, tablet-I)
  resume DIR NAME               SIGCONT server NAME
  kill DIR NAME                 kill server NAME (kill -9); start it with start-tablet,
                                restart-coordinator or start-zookeeper
  start-zookeeper DIR           start ZooKeeper again (same port and data)
  status DIR                    one line per process: name pid port up|down
  logs DIR [LINES]              tail of every server log
USAGE
}

main() {
  local cmd=${1:-help}
  shift || true
  case $cmd in
    fetch) fetch "$@" ;;
    server-jar) fetch && echo "$LIB_DIR/fluss-server-$FLUSS_VERSION.jar" ;;
    start) start "$@" ;;
    stop) stop "$@" ;;
    stop-tablet|kill-tablet|start-tablet|restart-coordinator|pause|resume|kill|start-zookeeper) control "$cmd" "$@" ;;
    status) status "$@" ;;
    logs) log_tail "$(cluster_dir "${1:-}")" "${2:-60}" ;;
    watchdog) watchdog "$@" ;;
    help|-h|--help) usage ;;
    *) usage >&2; die "unknown command '$cmd'" ;;
  esac
}

main "$@"
