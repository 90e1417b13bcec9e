//! Open-time wiring: the parts `open` builds from the configuration and the resolved table
//! (the filter and its pushdown, the encoder, the batch schema) and the open line's summary;
//! [`runtime_json`]: the check of the configuration against what the runtime's handling of
//! JSON payloads keeps (at open, and again when the table's schema changes).

pub mod runtime_json;

use iggy_connector_sdk::Schema;

use crate::client::table::Table;
use crate::config::options::{Choice, PayloadFormat, PayloadSchema};
use crate::config::Config;
use crate::encode::cdc::ChangeMessages;
use crate::encode::ipc::{IpcMessages, Leading};
use crate::encode::{rows::RowMessages, Encoder};
use crate::error::Result;
use crate::filter::{pushdown, Filter};
use crate::metrics::{Labels, Metrics};

/// The configured filter checked against `table`, with its pushdown set on the table for log
/// tables (fluss-rs supports pushdown on log-table scans; a primary-key table's changelog is
/// filtered on the client only); `None` without a filter.
pub(super) fn filter(config: &Config, table: &mut Table) -> Result<Option<Filter>> {
    let Some(text) = &config.filter else {
        return Ok(None);
    };
    let filter = Filter::new(
        text,
        &table.fields,
        table.info.get_row_type().fields(),
        table.primary_key,
    )?;
    if !table.primary_key {
        table.pushdown = pushdown::predicate(filter.expr());
    }
    Ok(Some(filter))
}

/// The open line's words on the filter: empty without one.
fn describe_filter(config: &Config, table: &Table) -> String {
    match &config.filter {
        None => String::new(),
        Some(text) => format!(
            ", filter `{}` ({})",
            text.text,
            if table.pushdown.is_some() {
                "pushed down, then applied exactly"
            } else {
                "applied on the client"
            }
        ),
    }
}

/// The connector's metrics: registered in the process-wide hub (its listener bound) when
/// `metrics_address` is set.
pub(super) fn metrics(config: &Config) -> Result<Metrics> {
    let labels = Labels {
        connector: config.metrics_label(),
        instance: config.assignment.index.to_string(),
        table: config.qualified_table(),
    };
    Ok(Metrics::start(config.metrics_address, labels)?)
}

/// The schema batches declare: Arrow IPC is always raw bytes; JSON says what
/// `payload_schema` asks for.
pub(super) fn batch_schema(config: &Config) -> Schema {
    match (config.payload_format, config.payload_schema) {
        (PayloadFormat::ArrowIpc, _) | (PayloadFormat::Json, PayloadSchema::Raw) => Schema::Raw,
        (PayloadFormat::Json, PayloadSchema::Json) => Schema::Json,
    }
}

/// The INFO line's description of what `open` found.
pub(super) fn summary(config: &Config, table: &Table, partitions: usize) -> String {
    format!(
        "{} table id {} at {}: {} buckets{}, {} columns, payload {}{}",
        if table.primary_key {
            "primary-key"
        } else {
            "log"
        },
        table.id(),
        config.bootstrap_servers,
        table.buckets(),
        if table.info.is_partitioned() {
            format!(" × {partitions} partitions")
        } else {
            String::new()
        },
        table.fields.len(),
        config.payload_format.name(),
        describe_filter(config, table),
    )
}

pub(super) fn encoder(config: &Config, table: &Table) -> Result<Box<dyn Encoder>> {
    Ok(if config.payload_format == PayloadFormat::ArrowIpc {
        Box::new(IpcMessages::new(
            Leading::of(table.primary_key, config.filter.is_some()),
            table.schemas.clone(),
            config.arrow_ipc_compression,
            config.max_batch_bytes,
        )?)
    } else if table.primary_key {
        Box::new(ChangeMessages::new(
            &config.database,
            &config.table,
            table.schemas.clone(),
            config.json,
            config.changelog_format,
        ))
    } else {
        Box::new(RowMessages::new(
            table.schemas.clone(),
            config.json,
            config.include_metadata,
        ))
    })
}
