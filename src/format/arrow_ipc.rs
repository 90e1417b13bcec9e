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

//! `payload_format = "arrow_ipc"`: Arrow IPC streams of many rows each ([`IpcMessages`]),
//! compressed as `arrow_ipc_compression` says, declared `Schema::Raw`.

use fluss::metadata::DataField;

use crate::client::connect::Fetch;
use crate::client::table::Table;
use crate::config::options::IpcCompression;
use crate::config::{Config, ConfigError};
use crate::encode::Encoder;
use crate::encode::ipc::{IpcMessages, Leading};
use crate::error::Result;
use crate::format::Format;
use crate::sdk::Schema;

/// Arrow IPC payloads, with their body compression.
pub struct ArrowIpc {
    compression: IpcCompression,
}

impl ArrowIpc {
    /// The Arrow IPC format of `config` (`arrow_ipc_compression`).
    pub fn new(config: &Config) -> Self {
        Self {
            compression: config.arrow_ipc_compression,
        }
    }
}

impl Format for ArrowIpc {
    fn name(&self) -> &'static str {
        "arrow_ipc"
    }

    fn encoder(&self, config: &Config, table: &Table) -> Result<Box<dyn Encoder>> {
        Ok(Box::new(IpcMessages::new(
            Leading::of(table.primary_key, config.filter.is_some()),
            table.schemas.clone(),
            self.compression,
            config.max_batch_bytes,
        )?))
    }

    /// Arrow IPC is bytes to the runtime.
    fn batch_schema(&self) -> Schema {
        Schema::Raw
    }

    /// Compressed: compressing is the expensive part, and its messages are small. Not
    /// uncompressed: its batches are a few large messages, cheap to encode and decode, so a
    /// second batch of them in memory only costs page faults and peak RSS (BENCHMARKS.md,
    /// "Through the stand-in runner").
    fn polls_ahead(&self) -> bool {
        self.compression != IpcCompression::None
    }

    /// Messages are cheap to build, so decompressing the fetched batches is what limits
    /// them, and a reader also waits on the network: one more scanner than cores, at most 4,
    /// which lets Arrow IPC keep up with a bare batch scan of the table (BENCHMARKS.md, "Log
    /// tables"). A poll brings about a quarter of a batch's bytes of rows (at some 80 bytes a
    /// row): more per poll is no faster and only holds more decoded rows in the read-ahead. A
    /// fetch round asks for at least twice `max_batch_bytes` (at most 64 MiB), so that a
    /// reader of many buckets is paced by rows, not by its passes over the buckets
    /// (BENCHMARKS.md, "At scale"; docs/operations.md, "Sizing").
    fn fetch(&self, config: &Config) -> Fetch {
        Fetch {
            records_per_poll: (config.max_batch_bytes / 320).clamp(10_000, 100_000),
            readers: std::thread::available_parallelism()
                .map_or(2, |cores| cores.get() + 1)
                .min(4),
            round_bytes_at_least: config.max_batch_bytes.saturating_mul(2).min(64 << 20),
        }
    }

    /// `batch_size` counts messages of many rows each, so the most rows at once (one message
    /// each, or fewer rows where `max_batch_bytes` cuts it).
    fn snapshot_read_rows(&self, _config: &Config) -> usize {
        16_384
    }

    /// The runtime passes raw payloads through untouched: every column arrives as it is.
    fn check_columns(
        &self,
        _config: &Config,
        _fields: &[DataField],
        _changelog: bool,
    ) -> Result<Option<String>, ConfigError> {
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::format::chosen;
    use crate::format::test_support::config;
    use crate::sdk::Schema;

    #[test]
    fn arrow_ipc_reads_with_several_scanners_in_large_rounds() {
        let config = config(json!({"payload_format": "arrow_ipc", "max_batch_bytes": 16 << 20}));
        let format = chosen(&config);
        assert_eq!(format.name(), "arrow_ipc");
        let fetch = format.fetch(&config);
        assert!(fetch.readers >= 2, "Arrow IPC reads with several scanners");
        assert!(fetch.readers <= 4);
        assert_eq!(
            fetch.round_bytes_at_least,
            32 << 20,
            "twice max_batch_bytes"
        );
        assert_eq!(fetch.records_per_poll, (16 << 20) / 320);
        let large =
            self::config(json!({"payload_format": "arrow_ipc", "max_batch_bytes": 1u64 << 40}));
        assert_eq!(
            format.fetch(&large).round_bytes_at_least,
            64 << 20,
            "at most 64 MiB"
        );
        assert_eq!(format.fetch(&large).records_per_poll, 100_000);
        assert_eq!(format.batch_schema(), Schema::Raw);
        assert_eq!(format.snapshot_read_rows(&config), 16_384);
    }

    #[test]
    fn only_compressed_arrow_ipc_polls_ahead() {
        let plain = config(json!({"payload_format": "arrow_ipc"}));
        assert!(!chosen(&plain).polls_ahead());
        let lz4 = config(json!({"payload_format": "arrow_ipc", "arrow_ipc_compression": "lz4"}));
        assert!(chosen(&lz4).polls_ahead());
    }
}
