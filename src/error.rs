//! The plugin's error type and the one place that classifies fluss-rs errors.

use std::time::Duration;

use snafu::Snafu;

use crate::config::ConfigError;
use crate::encode::json::EncodeError;

/// Everything that can go wrong in the plugin; each message says what happened and how to fix it.
#[derive(Debug, Snafu)]
#[snafu(visibility(pub(crate)))]
pub enum Error {
    /// The `[plugin_config]` section is invalid.
    #[snafu(display("{source}"))]
    Config { source: ConfigError },

    /// The cluster did not answer within `connect_timeout`.
    #[snafu(display(
        "cannot reach the Fluss cluster at {bootstrap} within {}: {last_error}; check `bootstrap_servers` and that the coordinator is running",
        humantime::format_duration(*after)
    ))]
    Unreachable {
        bootstrap: String,
        after: Duration,
        last_error: String,
    },

    /// The server refused our SASL credentials (or asked for them and got none).
    #[snafu(display(
        "Fluss refused the connection to {bootstrap}: {reason}; check `sasl_username`/`sasl_password` (and that `bootstrap_servers` names the SASL listener)"
    ))]
    Authentication { bootstrap: String, reason: String },

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

    /// The saved state cannot be used for this table.
    #[snafu(display("{reason}"))]
    State { reason: String },

    /// A Fluss call failed.
    #[snafu(display("Fluss {op} failed: {}", describe_fluss(source)))]
    Fluss {
        op: &'static str,
        #[snafu(source(from(fluss::error::Error, Box::new)))]
        source: Box<fluss::error::Error>,
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

    /// A saved offset is no longer on the server and `on_offset_out_of_range = "fail"`.
    #[snafu(display(
        "{bucket} of {table}: offset {offset} is not on the server (the log holds {log_start}..{log_end}); set `on_offset_out_of_range` to \"earliest\" or \"latest\", or delete the state file to start from `starting_offset`"
    ))]
    OffsetOutOfRange {
        table: String,
        bucket: String,
        offset: i64,
        log_start: i64,
        log_end: i64,
    },

    /// A column could not be encoded.
    #[snafu(display("{source}"))]
    Encode { source: EncodeError },

    /// A header value does not fit Iggy's header rules.
    #[snafu(display("cannot build the `{name}` header: {source}"))]
    Header {
        name: &'static str,
        source: iggy_connector_sdk::Error,
    },

    /// Building an Arrow IPC payload failed.
    #[snafu(display("Arrow IPC encoding failed: {source}"))]
    Ipc { source: arrow_schema::ArrowError },
}

/// Result alias for the plugin.
pub type Result<T, E = Error> = std::result::Result<T, E>;

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

/// fluss-rs' own `Display` repeats the cause (`{message}: {source:?}`); keep it on one line.
fn describe_fluss(error: &fluss::error::Error) -> String {
    error.to_string().replace('\n', " ")
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
            bucket: crate::state::BucketKey::bucket(2).to_string(),
            offset: 100,
            log_start: 250,
            log_end: 900,
        };
        assert_eq!(
            e.to_string(),
            "bucket 2 of fluss.orders: offset 100 is not on the server (the log holds 250..900); set `on_offset_out_of_range` to \"earliest\" or \"latest\", or delete the state file to start from `starting_offset`"
        );
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
