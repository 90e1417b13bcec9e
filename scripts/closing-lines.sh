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

# The closing lines of several scripts/test-times.py summaries as one block, in the order a cut
# output keeps best: every list of slowest tests, then every failed test with the lines after
# its panic (and whether it passed when run again alone), then one count for all, under the label
# given first.
#     scripts/closing-lines.sh LABEL SUMMARY...
set -euo pipefail
label=$1
shift
count=': [0-9]+ passed, [0-9]+ failed$'
failure='^(failed: |  \| )'
# (The count of tests run again is reworded, so that a block made of blocks counts it once.)
grep -hvE "$failure|$count" "$@" | sed 's/ failed tests run again$/ failed tests were run again alone/' || true
grep -hE "$failure" "$@" || true
# A test run again alone (scripts/run-again.sh) counts by its second result.
awk -v label="$label" "/$count/"' { p += $(NF-3); f += $(NF-1) }
     / failed tests run again$/ { f -= $(NF-4) }
     END { printf "%s: %d passed, %d failed\n", label, p, f }' "$@"
