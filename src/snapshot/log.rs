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

//! The lines the snapshot phase writes, on the instance's [`Telemetry`] (with its prefix and
//! log target).

use std::time::Duration;

use crate::position::{BucketKey, Offset};
use crate::snapshot::hand_over::Report;
use crate::snapshot::kv::local_dir::Leftover;
use crate::telemetry::{TARGET, Telemetry};

impl Telemetry {
    /// A directory of KV snapshot files that a run which ended without closing (a crash, a
    /// SIGKILL) left in `snapshot_dir` was removed, or could not be.
    pub fn snapshot_leftover(&self, leftover: &Leftover) {
        match &leftover.removed {
            Ok(()) => {
                tracing::info!(target: TARGET, "{}: removed {} ({} bytes), KV snapshot files a run that ended without closing left in `snapshot_dir`",
                    self.line_prefix(),
                    leftover.path.display(),
                    leftover.bytes
                )
            }
            Err(cause) => {
                tracing::warn!(target: TARGET, "{}: cannot remove {} ({} bytes), KV snapshot files a run that ended without closing left in `snapshot_dir`: {cause}; remove it by hand",
                    self.line_prefix(),
                    leftover.path.display(),
                    leftover.bytes
                )
            }
        }
    }

    /// A bucket's snapshot is being taken.
    pub fn snapshot_started(&self, key: BucketKey) {
        tracing::info!(target: TARGET, "{}: {key}: snapshot starts", self.line_prefix());
    }

    /// A bucket's KV snapshot was copied to local disk (the disk it uses until it is handed
    /// over).
    pub fn snapshot_copied(
        &self,
        key: BucketKey,
        snapshot: i64,
        bytes: u64,
        dir: &std::path::Path,
        took: Duration,
    ) {
        tracing::info!(target: TARGET, "{}: {key}: KV snapshot {snapshot} copied to {} ({bytes} bytes of local disk, {:.3} s)",
            self.line_prefix(),
            dir.display(),
            took.as_secs_f64()
        );
    }

    /// A bucket's snapshot was handed over whole.
    pub fn snapshot_finished(&self, report: &Report) {
        tracing::info!(target: TARGET, "{}: {}: snapshot handed over: rows={} bytes={} disk_bytes={} seconds={:.3}; the changelog continues at offset {} ({})",
            self.line_prefix(),
            report.key,
            report.rows,
            report.bytes,
            report.disk_bytes,
            report.started.elapsed().as_secs_f64(),
            report.continue_at,
            if report.exact {
                "exact switch"
            } else {
                "not exact: changes since an earlier attempt come again"
            }
        );
    }

    /// A bucket has no KV snapshot yet, so it is read from its changelog.
    pub fn snapshot_absent(&self, key: BucketKey, earliest: Offset) {
        tracing::info!(target: TARGET, "{}: {key}: no KV snapshot yet (nothing written, or the first snapshot is not taken yet), so it is read from its changelog at its earliest offset {earliest}",
            self.line_prefix()
        );
    }
}
