#!/usr/bin/env python3
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

"""Pass `cargo test` output through unchanged, then print how long each test took.

    cargo test ... -- --test-threads=1 2>&1 | scripts/test-times.py [--slowest N] [--label NAME]

Stable libtest prints no durations, so they are taken from the time each result line arrives:
with one test thread the tests of a binary run back to back, and a test's time is from the end
of the one before it (or the binary's "running N tests" line) to its own result ("ok" may come
on a later line when the test wrote to the raw stderr).

At the end it prints the N slowest tests, each failed test's name ("failed: NAME") and its
panic message up to the backtrace ("  | LINE"), and one closing line for all binaries together
("tests: N passed, N failed"), so that they end the output (CI keeps its tail); --summary FILE
appends the same lines to FILE, where scripts/closing-lines.sh gathers those of several runs;
--failed FILE appends "BINARY TEST CAUSE" for each failed test, for scripts/run-again.sh: CAUSE is
"environment" when its panic message names an environment fault (the testkit's
ENVIRONMENT_FAULT: a Fluss cluster that did not start, a coordinator that gives tables no
leaders), else "test".
"""

import argparse
import re
import sys
import time

RESULT = re.compile(r"^test (\S+)(?: - should panic)? \.\.\. (ok|FAILED|ignored)")
STARTED = re.compile(r"^test (\S+)(?: - should panic)? \.\.\. ")
RUNNING = re.compile(r"^\s*Running .*\(.*/([^/)]+?)(?:-[0-9a-f]{16})?\)$")
BEGIN = re.compile(r"^running \d+ tests?$")
COMPILING = re.compile(r"^\s+Compiling (\S+)")
SUMMARY = re.compile(r"^test result: \S+\. (\d+) passed; (\d+) failed")
# fluss_testkit::ENVIRONMENT_FAULT, which the testkit's panic messages start with.
ENVIRONMENT_FAULT = "environment fault: "


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slowest", type=int, default=15)
    parser.add_argument("--label", default="tests")
    parser.add_argument("--summary", help="also append the closing lines to this file")
    parser.add_argument(
        "--failed", help='append "BINARY TEST" for each failed test to this file (to run it again)'
    )
    args = parser.parse_args()

    binary = "?"
    since = time.monotonic()
    open_test = None  # a "test X ... " line whose result has not come yet
    times = []  # (seconds, binary, test)
    passed = failed = 0
    failed_tests = []  # (binary, test)
    failures = []  # lines of the "---- X stdout ----" sections
    in_failure = False
    compiled = []  # crates cargo compiled while the tests ran: a build the scripts did not share

    for line in sys.stdin:
        now = time.monotonic()
        sys.stdout.write(line)
        sys.stdout.flush()
        text = line.rstrip("\n")
        if m := COMPILING.match(text):
            compiled.append(m.group(1))
        if m := RUNNING.match(text):
            binary = m.group(1)
        if BEGIN.match(text):
            since, open_test = now, None
            continue
        if m := RESULT.match(text):
            times.append((now - since, binary, m.group(1)))
            if m.group(2) == "FAILED":
                failed_tests.append((binary, m.group(1)))
            since, open_test = now, None
            continue
        if m := STARTED.match(text):
            open_test = m.group(1)
            continue
        if open_test is not None and text.strip() in ("ok", "FAILED", "ignored"):
            times.append((now - since, binary, open_test))
            if text.strip() == "FAILED":
                failed_tests.append((binary, open_test))
            since, open_test = now, None
            continue
        if m := SUMMARY.match(text):
            passed += int(m.group(1))
            failed += int(m.group(2))
            in_failure = False
            continue
        if text.startswith("---- ") and text.endswith(" stdout ----"):
            in_failure = True
        elif text == "failures:" and in_failure:
            in_failure = False
        if in_failure:
            failures.append(text)

    closing = []
    if compiled:
        closing.append(
            f"{args.label}: cargo compiled {len(compiled)} crates again after the shared build "
            f"(a command whose packages or settings differ): {' '.join(compiled)}"
        )
    if times and args.slowest > 0:
        closing.append(f"{args.label}: the {min(args.slowest, len(times))} slowest of {len(times)}")
        for seconds, binary, test in sorted(times, reverse=True)[: args.slowest]:
            closing.append(f"  {seconds:7.1f} s  {binary}  {test}")
    # The panic lines of each failed test, then the count, last, where a cut output keeps them.
    name, keep = None, 0
    for text in failures:
        if text.startswith("---- "):
            name = text[5:].split(" ")[0]
            continue
        if "panicked at" in text:
            closing.append(f"failed: {name}")
            keep = 12
        if text.startswith("stack backtrace:"):
            keep = 0
        if keep:
            closing.append(f"  | {text}")
            keep -= 1
    closing.append(f"{args.label}: {passed} passed, {failed} failed")
    print("\n".join(closing))
    if args.failed:
        # The tests whose failure section holds an environment fault.
        environment, name = set(), None
        for text in failures:
            if text.startswith("---- "):
                name = text[5:].split(" ")[0]
            elif ENVIRONMENT_FAULT in text and name is not None:
                environment.add(name)
        with open(args.failed, "a", encoding="utf-8") as out:
            out.writelines(
                f"{binary} {test} {'environment' if test in environment else 'test'}\n"
                for binary, test in failed_tests
            )
    if args.summary:
        with open(args.summary, "a", encoding="utf-8") as out:
            out.write("\n".join(closing) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
