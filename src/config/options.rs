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

//! The values of every enumerated `[plugin_config]` key, each listed once: the parser in
//! [`crate::config`] and the error messages read the accepted names from [`Choice::CHOICES`],
//! and the default of a key is the `#[default]` value of its type. The modules that act on an
//! option import it from here, so `config` and `encode` never import each other.

/// An option whose accepted values are a fixed list of names (snake_case, as
/// docs/configuration.md spells them). Parsing ignores ASCII case.
pub trait Choice: Copy + 'static {
    /// Every accepted name with its value, in the order error messages list them.
    const CHOICES: &'static [(&'static str, Self)];

    /// The value named `name`, in any ASCII case.
    fn named(name: &str) -> Option<Self> {
        Self::CHOICES
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, value)| *value)
    }

    /// The name of this value, as docs/configuration.md spells it.
    fn name(self) -> &'static str
    where
        Self: PartialEq,
    {
        Self::CHOICES
            .iter()
            .find(|(_, value)| *value == self)
            .map_or("?", |(name, _)| name)
    }
}

/// Which kind of table `table_type` asserts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TableType {
    /// Detect it from the table.
    #[default]
    Auto,
    /// An append-only log table.
    Log,
    /// A primary-key table (read as its changelog).
    PrimaryKey,
}

impl Choice for TableType {
    const CHOICES: &'static [(&'static str, Self)] = &[
        ("auto", Self::Auto),
        ("log", Self::Log),
        ("primary_key", Self::PrimaryKey),
    ];
}

/// Where buckets without saved state begin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StartingOffset {
    /// Primary-key tables: each bucket's current rows (a snapshot), then its changelog from
    /// the offset the snapshot was taken at. Log tables: [`StartingOffset::Earliest`].
    #[default]
    Full,
    /// The log start of each bucket.
    Earliest,
    /// The high watermark: only rows written after open.
    Latest,
    /// The first offset whose commit timestamp is at or after this epoch millisecond.
    Timestamp(i64),
    /// This log offset in every bucket.
    Offset(i64),
}

/// Message payload encoding (`payload_format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PayloadFormat {
    /// One JSON object per row or change.
    #[default]
    Json,
    /// One Arrow IPC stream per run of rows of a record batch.
    ArrowIpc,
}

impl Choice for PayloadFormat {
    const CHOICES: &'static [(&'static str, Self)] =
        &[("json", Self::Json), ("arrow_ipc", Self::ArrowIpc)];
}

/// The Iggy schema a batch of JSON payloads declares (`payload_schema`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PayloadSchema {
    /// `Schema::Json`: the runtime parses every payload into a value tree (its transforms
    /// work on it) and writes it back, which reorders keys of wide objects and re-prints
    /// numbers.
    #[default]
    Json,
    /// `Schema::Raw`: the runtime passes the bytes through untouched (the stream must say
    /// `schema = "raw"`).
    Raw,
}

impl Choice for PayloadSchema {
    const CHOICES: &'static [(&'static str, Self)] = &[("json", Self::Json), ("raw", Self::Raw)];
}

/// Arrow IPC body compression (`arrow_ipc_compression`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IpcCompression {
    /// Uncompressed buffers.
    #[default]
    None,
    /// LZ4 frame compression.
    Lz4,
    /// Zstandard compression.
    Zstd,
}

impl Choice for IpcCompression {
    const CHOICES: &'static [(&'static str, Self)] = &[
        ("none", Self::None),
        ("lz4", Self::Lz4),
        ("zstd", Self::Zstd),
    ];
}

/// How primary-key table changes are shaped in JSON (`changelog_format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ChangelogFormat {
    /// Debezium-style envelope with `op`, `before`, `after` and `source`.
    #[default]
    Debezium,
    /// The row image plus an `__op` field.
    Flat,
}

impl Choice for ChangelogFormat {
    const CHOICES: &'static [(&'static str, Self)] =
        &[("debezium", Self::Debezium), ("flat", Self::Flat)];
}

/// What to do when a saved offset is no longer on the server (`on_offset_out_of_range`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutOfRangePolicy {
    /// Continue from the log start (the skipped range is logged at ERROR).
    #[default]
    Earliest,
    /// Continue from the high watermark (the skipped range is logged at ERROR).
    Latest,
    /// Stop with an error.
    Fail,
    /// Primary-key tables: take the bucket's snapshot again (from its latest KV snapshot) and
    /// continue at that snapshot's offset; log tables: as `Earliest`.
    Snapshot,
}

impl Choice for OutOfRangePolicy {
    const CHOICES: &'static [(&'static str, Self)] = &[
        ("earliest", Self::Earliest),
        ("latest", Self::Latest),
        ("fail", Self::Fail),
        ("snapshot", Self::Snapshot),
    ];
}

/// How DATE, TIME, TIMESTAMP and TIMESTAMP_LTZ values are written (`temporal_format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TemporalFormat {
    /// ISO 8601 strings with all digits of the column's precision; TIMESTAMP_LTZ ends in `Z`.
    #[default]
    Iso8601,
    /// Integers: DATE as days, TIME as milliseconds of the day, timestamps as microseconds,
    /// all counted from 1970-01-01T00:00:00 (UTC for TIMESTAMP_LTZ).
    Epoch,
}

impl Choice for TemporalFormat {
    const CHOICES: &'static [(&'static str, Self)] =
        &[("iso8601", Self::Iso8601), ("epoch", Self::Epoch)];
}

/// How DECIMAL values are written (`decimal_format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum DecimalFormat {
    /// Exact text in a JSON string, e.g. `"-12.340"`: safe for readers that parse numbers
    /// as doubles.
    #[default]
    String,
    /// The same exact text as a bare JSON number, e.g. `-12.340`.
    Number,
}

impl Choice for DecimalFormat {
    const CHOICES: &'static [(&'static str, Self)] =
        &[("string", Self::String), ("number", Self::Number)];
}

/// Choices that pick JSON value encoders; read when a row encoder is built, never per row.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JsonOptions {
    /// Rendering of temporal columns.
    pub temporal: TemporalFormat,
    /// Rendering of decimal columns.
    pub decimal: DecimalFormat,
}

/// One of the headers a message can carry (docs/messages.md, "Headers").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Header {
    /// `fluss_table`: `db.table` (string).
    Table,
    /// `fluss_bucket`: bucket number (int32).
    Bucket,
    /// `fluss_offset`: log offset of the row, or of the first row of an Arrow batch (int64).
    Offset,
    /// `fluss_timestamp`: commit timestamp of the row's record batch, epoch ms (int64).
    Timestamp,
    /// `fluss_change_type`: `+A`, `+I`, `-U`, `+U` or `-D` (string; not on Arrow IPC messages).
    ChangeType,
    /// `fluss_partition`: partition name (string; partitioned tables only).
    Partition,
    /// `fluss_row_count`: rows in an Arrow IPC message (int64).
    RowCount,
    /// `fluss_schema_id`: the Fluss schema id of the row's columns (int32); only when named,
    /// not part of `all`.
    SchemaId,
    /// `fluss_primary_key`: the primary key's column names, joined by `,` (string;
    /// primary-key tables only), so a consumer of per-key state needs no other knowledge.
    PrimaryKey,
}

impl Header {
    fn bit(self) -> u16 {
        1 << self as u16
    }
}

impl Choice for Header {
    const CHOICES: &'static [(&'static str, Self)] = &[
        ("fluss_table", Self::Table),
        ("fluss_bucket", Self::Bucket),
        ("fluss_offset", Self::Offset),
        ("fluss_timestamp", Self::Timestamp),
        ("fluss_change_type", Self::ChangeType),
        ("fluss_partition", Self::Partition),
        ("fluss_row_count", Self::RowCount),
        ("fluss_schema_id", Self::SchemaId),
        ("fluss_primary_key", Self::PrimaryKey),
    ];
}

/// Which headers messages carry (`headers`): a set of [`Header`]s.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct HeaderSet(u16);

impl HeaderSet {
    /// Every header but `fluss_schema_id` (the default, `"all"`; the schema id is attached
    /// only when named, so messages keep the headers they had before it existed).
    pub const ALL: Self = Self(0x17f);
    /// No headers at all (`"none"`): the message id still carries table, partition, bucket
    /// and offset.
    pub const NONE: Self = Self(0);

    /// The set holding exactly `headers`.
    pub fn of(headers: &[Header]) -> Self {
        Self(headers.iter().fold(0, |bits, h| bits | h.bit()))
    }

    /// Whether `header` is attached.
    pub fn contains(self, header: Header) -> bool {
        self.0 & header.bit() != 0
    }

    /// Whether no header is attached.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

impl Default for HeaderSet {
    /// [`HeaderSet::ALL`].
    fn default() -> Self {
        Self::ALL
    }
}

impl std::fmt::Debug for HeaderSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set()
            .entries(
                Header::CHOICES
                    .iter()
                    .filter(|(_, h)| self.contains(*h))
                    .map(|(name, _)| name),
            )
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_choices() {
        assert_eq!(PayloadFormat::ArrowIpc.name(), "arrow_ipc");
        assert_eq!(PayloadSchema::Raw.name(), "raw");
        assert_eq!(Header::RowCount.name(), "fluss_row_count");
    }

    #[test]
    fn header_sets() {
        let set = HeaderSet::of(&[Header::Offset, Header::Bucket]);
        assert!(set.contains(Header::Offset) && set.contains(Header::Bucket));
        assert!(!set.contains(Header::Table));
        assert!(HeaderSet::NONE.is_empty());
        for (_, header) in Header::CHOICES {
            assert_eq!(
                HeaderSet::ALL.contains(*header),
                *header != Header::SchemaId,
                "{header:?}"
            );
        }
        assert!(HeaderSet::of(&[Header::SchemaId]).contains(Header::SchemaId));
        assert_eq!(format!("{set:?}"), "{\"fluss_bucket\", \"fluss_offset\"}");
    }
}
