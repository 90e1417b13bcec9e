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

# Sourced by .ci/run: the README's first command as a user without root. Once an administrator
# has installed the system packages, `scripts/quickstart.sh --messages 3` must run fully as an
# ordinary user, with an ordinary PATH (no /sbin), in a fresh clone.
#
# The user (NONROOT_USER) gets a fresh clone of this checkout and a copy of this checkout's
# compiled dependencies, taken once CI's own quickstart has built them, and uses CI's Rust
# toolchain and crate registry where they are, read-only (their directories are made
# traversable for the run): cargo's fingerprint of a dependency names the path of its sources in
# the registry, so the same registry makes the copy current, and the user's cargo compiles only
# the workspace's own crates (their paths differ) instead of a second cold build.
#
#   nonroot_quickstart_prepare     as root: the user, its clone and the copy of the compiled
#                                  dependencies
#   nonroot_quickstart_start DIR   as root: starts the quickstart as the user in the background
#                                  (its build compiles the workspace's crates, so .ci/run starts
#                                  it once its own build is done); its stdout, stderr, exit status
#                                  and duration go to DIR
#   nonroot_quickstart_check DIR   waits for it; fails (status 1) unless it exited 0 and printed
#                                  at least 3 messages of each demo table
#   nonroot_quickstart_clean       removes the clone and restores the directories' modes

NONROOT_USER=${NONROOT_USER:-fluss-quickstart}
# Directories given o+x for the run, restored by nonroot_quickstart_clean.
NONROOT_TRAVERSED=()

# Lets every user pass through each directory above PATH that does not already allow it.
nonroot_allow_traverse() {
  local dir=$1
  while [ "$dir" != / ] && [ -n "$dir" ]; do
    dir=$(dirname "$dir")
    if [ "$(($(stat -c '%#a' "$dir") & 1))" = 0 ]; then
      chmod o+x "$dir"
      NONROOT_TRAVERSED+=("$dir")
    fi
  done
}

NONROOT_CARGO_HOME=${CARGO_HOME:-$HOME/.cargo}
NONROOT_RUSTUP_HOME=${RUSTUP_HOME:-$HOME/.rustup}

nonroot_quickstart_prepare() {
  local home
  id -u "$NONROOT_USER" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$NONROOT_USER"
  home=$(getent passwd "$NONROOT_USER" | cut -d: -f6)
  # A clone of its own per run: an earlier run's (or another process's) clone is never in the way.
  rm -rf "${home:?}"/clone-* 2>/dev/null || true
  NONROOT_CLONE="$home/clone-$$-$(date +%s)"
  git clone --quiet --no-hardlinks "$PWD" "$NONROOT_CLONE"
  mkdir -p "$NONROOT_CLONE/target/release"
  cp -a target/release/build target/release/deps target/release/.fingerprint "$NONROOT_CLONE/target/release/"
  chown -R "$NONROOT_USER:" "$NONROOT_CLONE"
  nonroot_allow_traverse "$NONROOT_CARGO_HOME/bin"
  nonroot_allow_traverse "$NONROOT_RUSTUP_HOME/toolchains"
}

nonroot_quickstart_start() {
  local out=$1 home
  local cargo_home=$NONROOT_CARGO_HOME rustup_home=$NONROOT_RUSTUP_HOME
  home=$(getent passwd "$NONROOT_USER" | cut -d: -f6)
  mkdir -p "$out"
  (
    started=$(date +%s)
    set +e
    runuser -u "$NONROOT_USER" -- env -i HOME="$home" USER="$NONROOT_USER" LANG=C.UTF-8 \
      PATH="$cargo_home/bin:/usr/local/bin:/usr/bin:/bin" CARGO_HOME="$cargo_home" \
      RUSTUP_HOME="$rustup_home" CLONE="$NONROOT_CLONE" \
      bash -c 'cd "$CLONE" && exec scripts/quickstart.sh --messages 3' \
      </dev/null >"$out/stdout" 2>"$out/stderr"
    echo $? >"$out/status.part"
    echo $(($(date +%s) - started)) >"$out/seconds"
    mv "$out/status.part" "$out/status"
  ) &
  NONROOT_QUICKSTART_PID=$!
}

nonroot_quickstart_check() {
  local out=$1 table count
  wait "$NONROOT_QUICKSTART_PID" || true
  echo "ci: the quickstart as $NONROOT_USER: $(cat "$out/seconds") s, exit status $(cat "$out/status")" >&2
  if [ "$(cat "$out/status")" != 0 ]; then
    tail -n 30 "$out/stderr" >&2
    return 1
  fi
  for table in demo.orders demo.customers; do
    count=$(grep -c "\"fluss_table\":\"$table\"" "$out/stdout" || true)
    if [ "$count" -lt 3 ]; then
      echo "ci: the quickstart as $NONROOT_USER printed $count messages of $table, expected at least 3" >&2
      return 1
    fi
  done
  tail -n 2 "$out/stderr" >&2
}

nonroot_quickstart_clean() {
  local dir
  if [ -n "${NONROOT_CLONE:-}" ]; then rm -rf "$NONROOT_CLONE" || true; fi
  for dir in "${NONROOT_TRAVERSED[@]}"; do chmod o-x "$dir"; done
  NONROOT_TRAVERSED=()
}
