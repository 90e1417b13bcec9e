#!/usr/bin/env bash
# The closing lines of several scripts/test-times.py summaries as one block, in the order a cut
# output keeps best: every list of slowest tests, then every failed test with the lines after
# its panic, then one count for all, under the label given first.
#     scripts/closing-lines.sh LABEL SUMMARY...
set -euo pipefail
label=$1
shift
count=': [0-9]+ passed, [0-9]+ failed$'
failure='^(failed: |  \| )'
grep -hvE "$failure|$count" "$@" || true
grep -hE "$failure" "$@" || true
awk -v label="$label" "/$count/"' { p += $(NF-3); f += $(NF-1) }
     END { printf "%s: %d passed, %d failed\n", label, p, f }' "$@"
