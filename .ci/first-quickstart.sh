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

# Sourced by .ci/run: the README's first command, once, as a newcomer runs it. As root, .ci/run
# runs it as an ordinary user without root (once an administrator has installed the system
# packages, `scripts/quickstart.sh --messages 3` must run fully as that user, with an ordinary
# PATH, no /sbin), in a fresh clone in that user's home; otherwise as itself, in this checkout.
#
# Its cold build is the one the suites reuse: this checkout's `target` is a link to the clone's,
# which the clone's cargo fills. cargo's fingerprints name a workspace crate's files relative
# to the workspace and compare their times with the build's, so this checkout (whose files are
# older than that build) finds it current; the user runs with the suites' build settings
# (scripts/cargo-env.sh), which only add clippy's lints. The user reads CI's Rust toolchain
# and crate registry where they are, read-only (their directories are made traversable for
# the run), so .ci/run fetches every crate first (`cargo fetch`).
#
#   first_quickstart_prepare DIR   the user, its clone and the link (as root), and DIR for the
#                                  run's record
#   first_quickstart_start         starts the quickstart in the background; its stdout, stderr,
#                                  TMPDIR (tmp/), exit status and duration go to DIR, which
#                                  tests/quickstart.rs reads (QUICKSTART_FIRST_RUN)
#   first_quickstart_clean         restores the directories' modes (the clone stays: this
#                                  checkout's target is in it)

QUICKSTART_USER=${QUICKSTART_USER:-fluss-quickstart}
# Directories given o+x for the run, restored by first_quickstart_clean.
QUICKSTART_TRAVERSED=()

# Lets every user pass through each directory above PATH that does not already allow it.
first_quickstart_allow_traverse() {
  local dir=$1
  while [ "$dir" != / ] && [ -n "$dir" ]; do
    dir=$(dirname "$dir")
    if [ "$(($(stat -c '%#a' "$dir") & 1))" = 0 ]; then
      chmod o+x "$dir"
      QUICKSTART_TRAVERSED+=("$dir")
    fi
  done
}

QUICKSTART_CARGO_HOME=${CARGO_HOME:-$HOME/.cargo}
QUICKSTART_RUSTUP_HOME=${RUSTUP_HOME:-$HOME/.rustup}

first_quickstart_prepare() {
  local home
  QUICKSTART_RECORD=$1
  QUICKSTART_CLONE=
  if [ "$(id -u)" != 0 ]; then
    mkdir -p "$QUICKSTART_RECORD/tmp"
    return
  fi
  if [ -e target ]; then
    echo "ci: this checkout already has a target directory; .ci/run is for a fresh clone" >&2
    return 1
  fi
  id -u "$QUICKSTART_USER" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$QUICKSTART_USER"
  home=$(getent passwd "$QUICKSTART_USER" | cut -d: -f6)
  # A clone of its own per run: an earlier run's (or another process's) clone is never in the way.
  rm -rf "${home:?}"/clone-* 2>/dev/null || true
  QUICKSTART_CLONE="$home/clone-$$-$(date +%s)"
  git clone --quiet --no-hardlinks "$PWD" "$QUICKSTART_CLONE"
  mkdir "$QUICKSTART_CLONE/target"
  chown -R "$QUICKSTART_USER:" "$QUICKSTART_CLONE"
  ln -s "$QUICKSTART_CLONE/target" target
  # The record: root writes the output files, the user its TMPDIR.
  mkdir -p "$QUICKSTART_RECORD/tmp"
  chmod 755 "$QUICKSTART_RECORD"
  chown "$QUICKSTART_USER:" "$QUICKSTART_RECORD/tmp"
  first_quickstart_allow_traverse "$QUICKSTART_RECORD"
  first_quickstart_allow_traverse "$QUICKSTART_CARGO_HOME/bin"
  first_quickstart_allow_traverse "$QUICKSTART_RUSTUP_HOME/toolchains"
}

first_quickstart_start() {
  local record=$QUICKSTART_RECORD home quickstart
  local cargo_home=$QUICKSTART_CARGO_HOME rustup_home=$QUICKSTART_RUSTUP_HOME
  if [ -n "$QUICKSTART_CLONE" ]; then
    home=$(getent passwd "$QUICKSTART_USER" | cut -d: -f6)
    quickstart=(runuser -u "$QUICKSTART_USER" -- env -i HOME="$home" USER="$QUICKSTART_USER"
      LANG=C.UTF-8 PATH="$cargo_home/bin:/usr/local/bin:/usr/bin:/bin" CARGO_HOME="$cargo_home"
      RUSTUP_HOME="$rustup_home" RUSTC_WORKSPACE_WRAPPER="$RUSTC_WORKSPACE_WRAPPER"
      CLIPPY_ARGS="$CLIPPY_ARGS" TMPDIR="$record/tmp" CLONE="$QUICKSTART_CLONE"
      bash -c 'cd "$CLONE" && exec scripts/quickstart.sh --messages 3')
  else
    # Without IGGY_BIN_DIR: a newcomer's first run goes through the runner (the test runs
    # the Iggy mode itself, second).
    quickstart=(env -u IGGY_BIN_DIR TMPDIR="$record/tmp" scripts/quickstart.sh --messages 3)
  fi
  (
    started=$(date +%s)
    set +e
    "${quickstart[@]}" </dev/null >"$record/stdout" 2>"$record/stderr"
    echo $? >"$record/status.part"
    echo $(($(date +%s) - started)) >"$record/seconds"
    mv "$record/status.part" "$record/status"
  ) &
  QUICKSTART_PID=$!
}

first_quickstart_clean() {
  local dir
  for dir in "${QUICKSTART_TRAVERSED[@]}"; do chmod o-x "$dir"; done
  QUICKSTART_TRAVERSED=()
}
