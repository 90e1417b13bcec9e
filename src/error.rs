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

//! The plugin's error type and the one place that classifies fluss-rs errors.
//!
//! Each variant's `Display` is a whole log line: what failed, its cause (rendered once), then
//! the fix. Typed causes are kept in `cause` fields rather than as snafu `source`s, because the
//! SDK appends every `source()` to the line it logs, which would print the cause a second
//! time, after the fix. fluss-rs errors are rendered by [`describe_fluss`], since their own
//! `Display` repeats their cause (`{message}: {source:?}`).

use std::time::Duration;

use fluss::{BucketId, TableId};
use snafu::Snafu;

use crate::config::ConfigError;
use crate::filter::{ApplyError, FilterError};
use crate::json::EncodeError;
use crate::metrics::hub::MetricsError;
use crate::position::{BucketKey, Offset};
use crate::records::RecordWithoutBatch;
use crate::scope::share::Assignment;
use crate::scope::stop::StoppingOffset;

/// The fix for any unusable saved state, worded once for every message that needs it.
const RESET_HINT: &str = "delete the connector's state file (<state.path>/source_<key>.state in the runtime config) to start again from `starting_offset`";

/// Everything that can go wrong in the plugin; each message says what happened and how to fix it.
#[derive(Debug, Snafu)]
#[snafu(visibility(pub(crate)))]
pub enum Error {
    /// The `[plugin_config]` section is invalid.
    #[snafu(transparent)]
    Config { source: ConfigError },

    /// `metrics_address` cannot be served.
    #[snafu(transparent)]
    Metrics { source: MetricsError },

    /// The cluster did not answer within `connect_timeout`; `cause` is the last failure
    /// (`None`: the last attempt itself hung).
    #[snafu(display(
        "cannot reach the Fluss cluster at {bootstrap} within {}: {}; check `bootstrap_servers` and that the coordinator is running",
        humantime::format_duration(*after),
        cause.as_deref().map_or_else(|| "no answer".to_owned(), ToString::to_string)
    ))]
    Unreachable {
        bootstrap: String,
        after: Duration,
        cause: Option<Box<Error>>,
    },

    /// The server refused our SASL credentials (or asked for them and got none).
    #[snafu(display(
        "Fluss refused the connection to {bootstrap}: {cause}; check `sasl_username`/`sasl_password` (and that `bootstrap_servers` names the SASL listener)"
    ))]
    Authentication {
        bootstrap: String,
        cause: Box<Error>,
    },

    /// The SASL user may not read the table (Fluss ACLs); `cause` says what the server checked.
    #[snafu(display(
        "user {user} may not read table {database}.{table}: {cause}; grant READ on TABLE {database}.{table} to User:{user} (a Fluss ACL), or set `sasl_username` to a user that has it"
    ))]
    NotAuthorized {
        user: String,
        database: String,
        table: String,
        cause: Box<Error>,
    },

    /// The table was dropped (or dropped and re-created) while it was being read.
    #[snafu(display(
        "table {table} (id {table_id}) was dropped while it was being read; nothing more is read and the saved state is kept; re-create the table and {RESET_HINT}, or point `table` at another table"
    ))]
    TableDropped { table: String, table_id: TableId },

    /// The configured table does not exist.
    #[snafu(display(
        "table {database}.{table} does not exist; create it or fix `database`/`table`"
    ))]
    TableNotFound { database: String, table: String },

    /// `table_type` asserts a kind the table is not.
    #[snafu(display(
        "table {database}.{table} is a {actual} table but `table_type` is \"{expected}\"; set `table_type = \"{actual}\"` or \"auto\""
    ))]
    TableTypeMismatch {
        database: String,
        table: String,
        expected: &'static str,
        actual: &'static str,
    },

    /// `columns` names a column the table does not have.
    #[snafu(display(
        "`columns`: table {database}.{table} has no column \"{column}\"; its columns are {available}"
    ))]
    UnknownColumn {
        database: String,
        table: String,
        column: String,
        available: String,
    },

    /// The saved state is not MessagePack of a Fluss source state.
    #[snafu(display(
        "the saved state ({bytes} bytes) is not a Fluss source state ({cause}); {RESET_HINT}"
    ))]
    StateCorrupt {
        bytes: usize,
        cause: rmp_serde::decode::Error,
    },

    /// The saved state does not match its checksum: the file changed after it was written.
    #[snafu(display(
        "the saved state ({bytes} bytes) does not match its checksum: the state file was changed after the connector wrote it (damaged on disk or in a copy, or edited), so its positions cannot be trusted; put back a copy of the file taken before, or {RESET_HINT}"
    ))]
    StateChecksum { bytes: usize },

    /// The saved state has a format version this plugin does not read.
    #[snafu(display(
        "the saved state has format version {found} but this plugin reads versions 1 to {expected}; {RESET_HINT}"
    ))]
    StateVersion { found: u32, expected: u32 },

    /// The saved state holds a position no Fluss bucket can have.
    #[snafu(display(
        "the saved state holds an impossible position (bucket {bucket}, offset {offset}); {RESET_HINT}"
    ))]
    StateImpossible { bucket: BucketId, offset: Offset },

    /// The saved state was written for another table.
    #[snafu(display(
        "the saved state belongs to table {saved_table} (id {saved_id}), but {table} has id {table_id} (the table was dropped and re-created, or the connector now reads another table); {RESET_HINT}"
    ))]
    StateForeignTable {
        saved_table: String,
        saved_id: TableId,
        table: String,
        table_id: TableId,
    },

    /// The saved state was written by an instance with another share of the buckets.
    #[snafu(display(
        "the saved state was written with {saved}, but this connector is configured with {configured} (a state holds the positions of one share of the buckets; they are not re-mapped); set `instance_index` = {} and `instance_count` = {} again, or {RESET_HINT}",
        saved.index, saved.count
    ))]
    StateAssignment {
        saved: Assignment,
        configured: Assignment,
    },

    /// The saved stop point was taken for another `stopping_offset`.
    #[snafu(display(
        "the saved state stops at the offsets taken for `stopping_offset` = {saved}, but `stopping_offset` is now {configured}; set it back to {saved}, remove it to read on without end from the saved positions, or {RESET_HINT}"
    ))]
    StateStop {
        saved: StoppingOffset,
        configured: StoppingOffset,
    },

    /// `partitions` does not fit the table.
    #[snafu(display("{reason}"))]
    PartitionFilter { reason: String },

    /// The positions could not be encoded for the runtime's state file.
    #[snafu(display("cannot encode the connector state: {cause}"))]
    StateEncode { cause: rmp_serde::encode::Error },

    /// fluss-rs handed over a scanned record without the Arrow batch it points into.
    #[snafu(transparent)]
    RecordWithoutBatch { source: RecordWithoutBatch },

    /// A Fluss call failed.
    #[snafu(display("Fluss {op} failed: {}", describe_fluss(cause)))]
    Fluss {
        op: &'static str,
        cause: Box<fluss::error::Error>,
    },

    /// A Fluss call did not answer in time (fluss-rs has no request timeout of its own).
    #[snafu(display(
        "Fluss {op} did not answer within {}",
        humantime::format_duration(*after)
    ))]
    Timeout { op: &'static str, after: Duration },

    /// The task reading the table ahead ended without reporting an error (it panicked); the
    /// scanner is rebuilt from the source's own positions.
    #[snafu(display("the Fluss read-ahead task stopped unexpectedly"))]
    ReaderStopped,

    /// The server answered a snapshot's offset or scan request without the bucket.
    #[snafu(display(
        "Fluss gave no high watermark or rows for the snapshot of {key} (its partition may have been dropped)"
    ))]
    SnapshotUnanswered { key: BucketKey },

    /// A KV snapshot file could not be read from remote storage.
    #[snafu(display(
        "cannot copy the KV snapshot file {path} of {key} from Fluss's remote storage: {}; check that this host can read the cluster's `remote.data.dir` (the same path or object store the tablet servers write to, with credentials); the snapshot is tried again",
        describe_fluss(cause)
    ))]
    SnapshotRemote {
        key: BucketKey,
        path: String,
        cause: Box<fluss::error::Error>,
    },

    /// Fluss gave no credentials for the object store that holds the KV snapshot files.
    #[snafu(display(
        "cannot read the KV snapshot file {path} of {key}: Fluss gave no credentials for its remote storage ({reason}); the tablet servers obtain them with the keys of `remote.data.dir`'s store (for S3: `s3.access-key`/`s3.secret-key` or `s3.assumed.role.arn`, `s3.region`, and STS access; their logs name the failure); the snapshot is tried again"
    ))]
    SnapshotCredentials {
        key: BucketKey,
        path: String,
        reason: String,
    },

    /// A KV snapshot file could not be written to `snapshot_dir`.
    #[snafu(display(
        "cannot write the KV snapshot files of {key} to {}: {cause}; free space there or point `snapshot_dir` at a directory with room for the bucket's snapshot (and write access); the snapshot is tried again",
        path.display()
    ))]
    SnapshotDisk {
        key: BucketKey,
        path: std::path::PathBuf,
        cause: std::io::Error,
    },

    /// `snapshot_dir` has no room for a bucket's KV snapshot files.
    #[snafu(display(
        "cannot copy the KV snapshot files of {key} into `snapshot_dir` {}: they need {needed} bytes and its file system has {free} bytes free; free space there or point `snapshot_dir` at a directory with room for them; nothing of the bucket is handed over until its snapshot is copied, which is tried again",
        root.display()
    ))]
    SnapshotSpace {
        key: BucketKey,
        root: std::path::PathBuf,
        needed: u64,
        free: u64,
    },

    /// RocksDB could not open or read a copied KV snapshot.
    #[snafu(display(
        "cannot read the KV snapshot of {key} copied to {}: {cause}; the copy is corrupt or incomplete (check the disk of `snapshot_dir` and the cluster's remote storage); it is copied again and the snapshot tried again",
        path.display()
    ))]
    SnapshotCorrupt {
        key: BucketKey,
        path: std::path::PathBuf,
        cause: String,
    },

    /// A KV snapshot row was written with another schema than the table's current one.
    #[snafu(display(
        "the KV snapshot of {key} holds rows of schema id {found}, a schema version the table did not have when the snapshot was taken (its rows are shown in schema id {expected}); please report it, and set `starting_offset = \"earliest\"` to read the changelog instead"
    ))]
    SnapshotSchema {
        key: BucketKey,
        found: i16,
        expected: i16,
    },

    /// A saved offset is no longer on the server and `on_offset_out_of_range = "fail"`.
    #[snafu(display(
        "{key} of {table}: offset {offset} is not on the server (the log holds {log_start}..{log_end}); set `on_offset_out_of_range` to \"earliest\", \"latest\" or (primary-key tables) \"snapshot\", or {RESET_HINT}"
    ))]
    OffsetOutOfRange {
        table: String,
        key: BucketKey,
        offset: Offset,
        log_start: Offset,
        log_end: Offset,
    },

    /// A fetched batch has a column count no schema version of the table has.
    #[snafu(display(
        "a fetched record batch has {columns} columns, which no schema version of the table known to the connector has; this is a bug, please report it (restarting the connector reads the batch again)"
    ))]
    UnknownSchema { columns: usize },

    /// A column could not be encoded.
    #[snafu(transparent)]
    Encode { source: EncodeError },

    /// A header value does not fit Iggy's header rules.
    #[snafu(display("cannot build the `{name}` header: {cause}"))]
    Header {
        name: &'static str,
        /// The SDK's reason, as text (the SDKs name it with their own error types).
        cause: String,
    },

    /// Building an Arrow IPC payload failed.
    #[snafu(display("Arrow IPC encoding failed: {cause}"))]
    Ipc { cause: arrow_schema::ArrowError },

    /// A thread building deferred payloads panicked (a bug: the batch is not handed over).
    #[snafu(display(
        "building the payloads of a batch panicked; the batch is not handed over and its rows come again (please report this bug)"
    ))]
    PayloadJobPanicked,

    /// `filter` does not fit the table (an unknown column, a literal of the wrong type).
    #[snafu(transparent)]
    Filter { source: FilterError },

    /// `filter` could not be evaluated on a fetched batch (its columns are not what the
    /// table said at open).
    #[snafu(display("cannot apply `filter` to a fetched batch: {cause}"))]
    FilterEval { cause: arrow_schema::ArrowError },
}

impl Error {
    /// A failed fluss-rs call `op`.
    pub fn fluss(op: &'static str, cause: fluss::error::Error) -> Self {
        Self::Fluss {
            op,
            cause: Box::new(cause),
        }
    }

    /// What a failed plugin call means for the stream (see [`fault`]).
    pub fn fault(&self) -> Fault {
        match self {
            Error::Fluss { cause, .. } => fault(cause),
            Error::Timeout { .. }
            | Error::ReaderStopped
            | Error::SnapshotUnanswered { .. }
            | Error::SnapshotRemote { .. }
            | Error::SnapshotCredentials { .. }
            | Error::SnapshotDisk { .. }
            | Error::SnapshotSpace { .. }
            | Error::SnapshotCorrupt { .. } => Fault::Retry,
            _ => Fault::Fatal,
        }
    }
}

impl From<ApplyError> for Error {
    /// A filter that could not be applied: the fluss-rs part keeps its classification.
    fn from(error: ApplyError) -> Self {
        match error {
            ApplyError::Arrow { cause } => Self::FilterEval { cause },
            ApplyError::WithoutBatch { cause } => cause.into(),
            ApplyError::Rows { cause } => Self::fluss("filter", cause),
        }
    }
}

/// Result alias for the plugin.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The pause before a step that failed for a [`Fault::Retry`] is tried again (a client poll, a
/// bucket's snapshot).
pub const RETRY_PAUSE: std::time::Duration = std::time::Duration::from_millis(500);

/// What the source should do about a failed fluss-rs call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// A transient condition (connection loss, leader election): retry with backoff.
    Retry,
    /// The fetch offset is outside the log: apply `on_offset_out_of_range`.
    OutOfRange,
    /// The server refused our credentials.
    Auth,
    /// Anything else: report it.
    Fatal,
}

/// Classifies a fluss-rs error. fluss-rs reports some conditions only as message text
/// (`UnexpectedError`), so this is the only function that looks at messages.
pub fn fault(error: &fluss::error::Error) -> Fault {
    use fluss::error::FlussError;
    if let Some(api) = error.api_error() {
        return match api {
            FlussError::AuthenticateException | FlussError::AuthorizationException => Fault::Auth,
            FlussError::LogOffsetOutOfRangeException => Fault::OutOfRange,
            // A server that is still starting answers with an unexpected exception (e.g. a
            // restarted coordinator: "CoordinatorEventProcessor is not initialized yet").
            FlussError::UnknownServerError => Fault::Retry,
            _ if error.is_retriable() => Fault::Retry,
            _ => Fault::Fatal,
        };
    }
    if error.is_retriable() {
        return Fault::Retry;
    }
    let text = error.to_string();
    if text.contains("is out of range") {
        Fault::OutOfRange
    } else if text.contains("No leader found")
        || text.contains("leader not available")
        || text.contains("Connection refused")
        || text.contains("connection error")
    {
        Fault::Retry
    } else if text.contains("uthenticat") || text.contains("SASL") {
        Fault::Auth
    } else {
        Fault::Fatal
    }
}

/// Whether the server says it cannot find the table being read: fluss-rs passes the server's
/// "Failed to get tables" on as text only. Kept next to [`fault`], the other reader of messages.
pub fn table_missing(error: &fluss::error::Error) -> bool {
    error.api_error() == Some(fluss::error::FlussError::TableNotExist)
        || error.to_string().contains("Failed to get tables")
}

/// One line for a fluss-rs error, each cause once. Its own `Display` prints a message and then
/// the `Debug` form of the source the message was made from (`connection error:
/// ConnectionError("IO Error: Connection refused")`); this keeps the innermost text that
/// says something.
pub fn describe_fluss(error: &fluss::error::Error) -> String {
    use fluss::error::{Error as E, RpcError};
    let joined = |message: &str, cause: String| {
        let message = message.trim();
        if message.is_empty() || cause.contains(message) {
            cause
        } else if message.contains(&cause) {
            message.to_owned()
        } else {
            format!("{message}: {cause}")
        }
    };
    let text = match error {
        E::RpcError { message, source } => {
            let cause = match source {
                RpcError::ConnectionError(text) => text.clone(),
                other => other.to_string(),
            };
            // fluss-rs builds `message` from the same error ("connection error").
            if message.trim() == "connection error" {
                cause
            } else {
                joined(message, cause)
            }
        }
        E::UnexpectedError { message, source } => match source {
            Some(source) => joined(message, source.to_string()),
            None => message.clone(),
        },
        E::IoUnexpectedError { message, source } => joined(message, source.to_string()),
        E::ArrowError { message, source } => joined(message, source.to_string()),
        E::FlussAPIError { api_error } => {
            format!(
                "{} (error code {})",
                api_error.message.trim(),
                api_error.code
            )
        }
        other => other.to_string(),
    };
    text.replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_range_is_detected_from_the_message() {
        let e = fluss::error::Error::UnexpectedError {
            message: "The fetching offset 3 is out of range: log start 10".into(),
            source: None,
        };
        assert_eq!(fault(&e), Fault::OutOfRange);
    }

    #[test]
    fn no_leader_is_retried() {
        let e = fluss::error::Error::UnexpectedError {
            message: "No leader found for table bucket TableBucket { table_id: 1 }".into(),
            source: None,
        };
        assert_eq!(fault(&e), Fault::Retry);
    }

    #[test]
    fn a_starting_server_is_retried() {
        let e = fluss::error::Error::FlussAPIError {
            api_error: fluss::error::ApiError {
                code: -1,
                message: "java.lang.IllegalStateException: CoordinatorEventProcessor is not initialized yet.".into(),
            },
        };
        assert_eq!(fault(&e), Fault::Retry);
    }

    #[test]
    fn other_unexpected_errors_are_fatal() {
        let e = fluss::error::Error::UnexpectedError {
            message: "something else".into(),
            source: None,
        };
        assert_eq!(fault(&e), Fault::Fatal);
    }

    #[test]
    fn out_of_range_message_names_bucket_range_and_fix() {
        let e = Error::OffsetOutOfRange {
            table: "fluss.orders".into(),
            key: BucketKey::bucket(2),
            offset: 100,
            log_start: 250,
            log_end: 900,
        };
        assert_eq!(
            e.to_string(),
            "bucket 2 of fluss.orders: offset 100 is not on the server (the log holds 250..900); set `on_offset_out_of_range` to \"earliest\", \"latest\" or (primary-key tables) \"snapshot\", or delete the connector's state file (<state.path>/source_<key>.state in the runtime config) to start again from `starting_offset`"
        );
    }

    #[test]
    fn fluss_errors_state_each_cause_once() {
        let refused = fluss::error::Error::RpcError {
            message: "connection error".into(),
            source: fluss::error::RpcError::ConnectionError(
                "IO Error: Connection refused (os error 111)".into(),
            ),
        };
        assert_eq!(
            Error::fluss("connect", refused).to_string(),
            "Fluss connect failed: IO Error: Connection refused (os error 111)"
        );
        let api = fluss::error::Error::FlussAPIError {
            api_error: fluss::error::ApiError {
                code: 7,
                message: "Table 'db.t' does not exist.".into(),
            },
        };
        assert_eq!(
            describe_fluss(&api),
            "Table 'db.t' does not exist. (error code 7)"
        );
        let unreachable = Error::Unreachable {
            bootstrap: "127.0.0.1:1".into(),
            after: Duration::from_secs(2),
            cause: Some(Box::new(Error::Timeout {
                op: "list_databases",
                after: Duration::from_secs(30),
            })),
        };
        assert_eq!(
            unreachable.to_string(),
            "cannot reach the Fluss cluster at 127.0.0.1:1 within 2s: Fluss list_databases did not answer within 30s; check `bootstrap_servers` and that the coordinator is running"
        );
        assert!(
            std::error::Error::source(&unreachable).is_none(),
            "the SDK would print the cause again"
        );
    }

    #[test]
    fn config_errors_pass_through_unchanged() {
        let e = Error::from(ConfigError {
            key: "poll_interval",
            message: "bad".into(),
        });
        assert_eq!(e.to_string(), "invalid plugin_config: bad");
        assert!(std::error::Error::source(&e).is_none());
    }

    #[test]
    fn a_missing_table_is_recognised_by_code_or_by_the_servers_words() {
        let text = fluss::error::Error::UnexpectedError {
            message: "FlussRuntimeException: Failed to get tables '[db.t]'".into(),
            source: None,
        };
        assert!(table_missing(&text));
        assert!(table_missing(&fluss::error::Error::table_not_exist("db.t")));
        let other = fluss::error::Error::UnexpectedError {
            message: "something else".into(),
            source: None,
        };
        assert!(!table_missing(&other));
    }

    #[test]
    fn table_not_found_message_names_the_fix() {
        let e = Error::TableNotFound {
            database: "fluss".into(),
            table: "orders".into(),
        };
        assert_eq!(
            e.to_string(),
            "table fluss.orders does not exist; create it or fix `database`/`table`"
        );
    }
}
