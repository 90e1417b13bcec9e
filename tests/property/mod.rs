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

//! The proptest configuration every property test of the workspace runs with: its case count,
//! its seed printed and taken from `PROPTEST_RNG_SEED`, and its failures kept next to the test.

pub mod seed;

use proptest::test_runner::{Config, FileFailurePersistence, RngSeed};

/// `PROPTEST_CASES` cases if set, else `default` in an optimised build (this repository's
/// suites test in release) and a 64th of it, at least 16, in an unoptimised one (`cargo test -p
/// iggy_connector_fluss_source` inside apache/iggy, whose test profile compiles Arrow without
/// optimisation, about 50 times slower). The seed is `PROPTEST_RNG_SEED` when set,
/// else one from the clock, printed either way (`seed: PROPTEST_RNG_SEED=N`), so a failure is
/// replayed with the same cases. A failing case is also saved in
/// `<test>.proptest-regressions` beside the test file and tried first by the next runs (commit
/// it to keep the case).
pub fn config(default: u32) -> Config {
    let default = if cfg!(debug_assertions) {
        (default / 64).max(16).min(default)
    } else {
        default
    };
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(default);
    let seed = seed::from_env("PROPTEST_RNG_SEED", "these cases");
    Config {
        cases,
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..Config::default()
    }
}
