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

# The Python the suites and the consumer example run: a virtual environment of their own, never
# the system interpreter's site-packages (Debian 12 and Ubuntu 24.04 refuse `pip install` there,
# PEP 668). It holds
#   pyarrow                  the independent (non-Rust) reader of Arrow IPC payloads
#                            (tests/it/arrow_ipc.rs, the Python consumer's `--format arrow`),
#   apache-iggy==0.9.0.dev4  the Python client of Iggy the Python consumer example uses (the
#                            release that talks to the tested server, tests/runtime/consumers.rs),
#   moto[server]             a local S3 for remote storage on an object store
#                            (tests/it/object_store.rs, fluss_testkit::s3).
#
#   scripts/python-venv.sh [DIR]
#
# Creates DIR (default: `venv` in cargo's target directory, where the tests look for it) with
# `python3 -m venv`, installs the packages once (a stamp file lists what is installed) and prints
# DIR/bin/python. Several callers at once are serialised by a lock beside DIR. Needs Python 3.9+
# with its venv module (Debian/Ubuntu: `sudo apt-get install -y python3-venv`).
set -euo pipefail

PACKAGES=(pyarrow "apache-iggy==0.9.0.dev4" "moto[server]")

say() { echo "python-venv: $*" >&2; }

if [[ $# -gt 1 || ${1:-} == -* ]]; then
  grep '^#   scripts/python-venv.sh ' "$0" | sed 's/^# *//' >&2
  exit 2
fi
if [[ $# == 1 ]]; then
  venv=$1
else
  root=$(cd "$(dirname "$0")/.." && pwd)
  # `cargo metadata` knows CARGO_TARGET_DIR and build.target-dir.
  target=$(cd "$root" && cargo metadata --format-version 1 --no-deps 2>/dev/null |
    sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
  venv=${target:-$root/target}/venv
fi
mkdir -p "$(dirname "$venv")"
venv=$(cd "$(dirname "$venv")" && pwd)/$(basename "$venv")

want=$(printf '%s\n' "${PACKAGES[@]}")
stamp=$venv/.packages
ready() { [[ -x $venv/bin/python && -f $stamp && "$(cat "$stamp")" == "$want" ]]; }

if ! ready; then
  exec 9>"$venv.lock"
  flock 9
  if ! ready; then
    if [[ ! -x $venv/bin/python ]]; then
      command -v python3 >/dev/null 2>&1 ||
        { say "python3 is missing: install Python 3 with its venv module (Debian/Ubuntu: sudo apt-get install -y python3-venv)"; exit 1; }
      say "creating $venv"
      if ! python3 -m venv "$venv" >&2; then
        rm -rf "$venv"
        say "python3 -m venv failed (above): install Python's venv module (Debian/Ubuntu: sudo apt-get install -y python3-venv)"
        exit 1
      fi
    fi
    say "installing ${PACKAGES[*]} into $venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${PACKAGES[@]}" >&2 ||
      { say "pip could not install ${PACKAGES[*]} from PyPI into $venv (its output is above)"; exit 1; }
    printf '%s\n' "$want" >"$stamp"
  fi
fi
echo "$venv/bin/python"
