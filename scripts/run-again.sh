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

# Sourced by scripts/test.sh and scripts/test-runtime.sh: a test that fails fails the run, with
# one exception: a failure the testkit names as the environment's (its panic message starts with
# fluss_testkit::ENVIRONMENT_FAULT: a Fluss cluster that did not start, a coordinator that gives
# a new table no leaders) is run once more, alone. If it then passes, it is reported ("failed:
# NAME (BINARY): an environment fault; passed when run again alone", after its first failure's
# panic lines) and counted in the summary, and it does not fail the run.

# run_failed_again LABEL FAILED LOG SUMMARY: FAILED lists "BINARY TEST CAUSE"
# (scripts/test-times.py --failed), LOG is the suite's output so far. Returns 0 only when every
# failed test failed for an environment fault and passed alone, and no test binary had died of a
# signal (a crash is not something a second run may hide).
run_failed_again() {
  local label=$1 failed=$2 log=$3 summary=$4
  [ -s "$failed" ] || return 1
  if grep "process didn't exit successfully" "$log" | grep -qv 'exit status: 101'; then
    return 1
  fi
  # A test that failed for its own reasons fails the run; nothing is run again.
  if grep -qv ' environment$' "$failed"; then
    return 1
  fi
  local count binary test rc=0
  count=$(wc -l <"$failed")
  echo "$label: environment faults (a Fluss cluster that did not start, a coordinator that gave tables no leaders): $count failed tests run again" >>"$summary"
  while read -r binary test _; do
    echo "$label: running $test ($binary) again, alone (it failed for an environment fault)"
    if cargo test --release --workspace --test "$binary" -- --exact "$test" --test-threads=1 </dev/null 2>&1 |
      scripts/test-times.py --slowest 0 --label "$label, run again" --summary "$summary" &&
      [ "${PIPESTATUS[0]}" = 0 ]; then
      echo "failed: $test ($binary): an environment fault; passed when run again alone" >>"$summary"
    else
      rc=1
    fi
  done <"$failed"
  return "$rc"
}
