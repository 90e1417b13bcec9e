// Licensed to the Apache Software Foundation (ASF) under one
// or more contributor license agreements.  See the NOTICE file
// distributed with this work for additional information
// regarding copyright ownership.  The ASF licenses this file
// to you under the Apache License, Version 2.0 (the
// "License"); you may not use this file except in compliance
// with the License.  You may obtain a copy of the License at
//
//   http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing,
// software distributed under the License is distributed on an
// "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY
// KIND, either express or implied.  See the License for the
// specific language governing permissions and limitations
// under the License.

//! Every ERROR and WARN line the plugin logs states each cause once: a cause printed by an
//! error and again by its chain shows up as a repeated segment.
//!
//! The test provokes such lines itself (an unreachable cluster: a WARN per retried connect,
//! then the ERROR of the failed open), so it checks something whichever tests ran before it
//! and in whatever order; it also checks every line the tests before it logged in this process.

use fluss_source_runner::{Level, logs};
use serde_json::json;

use crate::bad_input::{Case, assert_no_repeated_cause, refused_in_process};

#[test]
fn no_error_or_warn_line_repeats_a_cause() {
    refused_in_process(&Case::new(
        "unreachable bootstrap",
        json!({"bootstrap_servers": "127.0.0.1:1", "database": "d", "table": "t", "connect_timeout": "2s"}),
        "cannot reach the Fluss cluster at 127.0.0.1:1 within 2s: Fluss connect failed: IO Error: Connection refused (os error 111); check `bootstrap_servers` and that the coordinator is running",
    ));
    let lines: Vec<(Level, String)> = logs()
        .into_iter()
        .filter(|l| matches!(l.level, Level::Error | Level::Warn))
        .map(|l| (l.level, l.message))
        .collect();
    assert!(
        lines.iter().any(|(level, line)| *level == Level::Warn
            && line.starts_with("fluss[")
            && line.contains("cannot reach Fluss at 127.0.0.1:1 yet")),
        "the retried connect should have logged a WARN line with the instance prefix; got {lines:#?}"
    );
    for (_, line) in &lines {
        assert_no_repeated_cause(line);
    }
    eprintln!(
        "no_error_or_warn_line_repeats_a_cause: {} ERROR/WARN lines checked",
        lines.len()
    );
}
