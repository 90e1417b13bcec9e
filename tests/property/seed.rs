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

//! The seed of a randomised test: from an environment variable when it holds a number, else
//! from the clock, and printed either way, so a failure is replayed by setting the variable to
//! the printed value. Shared by every randomised test of the workspace (the testkit's and the
//! SDK's include this file).

/// The seed in `var` when it holds a number, else one from the clock; prints
/// `seed: VAR=SEED (set it to replay WHAT)`.
pub fn from_env(var: &str, what: &str) -> u64 {
    let seed = std::env::var(var)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        });
    eprintln!("seed: {var}={seed} (set it to replay {what})");
    seed
}
