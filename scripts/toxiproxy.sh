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

# Toxiproxy, the TCP fault proxy of the network fault tests (tests/runtime/faults/,
# fluss_testkit::toxiproxy): its server built from source with `go install` (a Go module, from
# the Go module proxy) into a cache, once.
#
#   scripts/toxiproxy.sh
#
# Prints the path of the server binary. Several callers at once are serialised by a lock beside
# the cache. Needs Go 1.21 or newer (https://go.dev/doc/install), which fetches the toolchain
# the module asks for by itself.
set -euo pipefail

VERSION=v2.12.0
CACHE_DIR=${TOXIPROXY_CACHE_DIR:-$HOME/.cache/iggy-fluss-source/toxiproxy-$VERSION}
BINARY=$CACHE_DIR/toxiproxy-server

say() { echo "toxiproxy: $*" >&2; }

if [[ $# -gt 0 ]]; then
  grep '^#   scripts/toxiproxy.sh' "$0" | sed 's/^# *//' >&2
  exit 2
fi

if [[ ! -x $BINARY ]]; then
  mkdir -p "$CACHE_DIR"
  exec 9>"$CACHE_DIR.lock"
  flock 9
  if [[ ! -x $BINARY ]]; then
    command -v go >/dev/null 2>&1 ||
      { say "go is missing: install Go 1.21 or newer (https://go.dev/doc/install), it builds Toxiproxy $VERSION"; exit 1; }
    say "building github.com/Shopify/toxiproxy/v2/cmd/server@$VERSION into $CACHE_DIR"
    work=$(mktemp -d "$CACHE_DIR.build.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    if ! GOBIN=$work GOFLAGS=-buildvcs=false go install "github.com/Shopify/toxiproxy/v2/cmd/server@$VERSION" >&2; then
      say "go install github.com/Shopify/toxiproxy/v2/cmd/server@$VERSION failed (above): is the Go module proxy reachable (go env GOPROXY)?"
      exit 1
    fi
    mv "$work/server" "$BINARY"
  fi
fi
echo "$BINARY"
