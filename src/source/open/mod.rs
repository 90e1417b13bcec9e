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

//! Open-time wiring: the parts `open` builds from the configuration and the resolved table
//! (the metrics, the filter and its pushdown, the starting positions, the stamper) and the
//! open line's summary.

use crate::client::discovery::PartitionNames;
use crate::client::offsets;
use crate::client::table::Table;
use crate::config::Config;
use crate::config::options::{HeaderSet, StartingOffset};
use crate::encode::stamp::Stamper;
use crate::error::Result;
use crate::filter::{Filter, pushdown};
use crate::metrics::{Labels, Metrics};
use crate::position::{BucketKey, Position, Positions};
use crate::scope::stop::Stop;
use crate::state::SavedState;

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

/// The INFO line's description of what `open` found (`format`: the payload format's name),
/// and of this instance's share of the table (`stop`: where a bounded read stops).
pub(super) fn summary(
    config: &Config,
    table: &Table,
    format: &str,
    partitions: usize,
    stop: Option<&Stop>,
) -> String {
    format!(
        "{} table id {} at {}: {} buckets{}, {} columns, payload {}{}{}",
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
        format,
        describe_filter(config, table),
        share(config, stop),
    )
}

/// What the open line says about this instance's share of the table (empty by default).
fn share(config: &Config, stop: Option<&Stop>) -> String {
    let mut share = String::new();
    if config.assignment.count > 1 {
        share += &format!(", {}", config.assignment);
    }
    if let Some(filter) = &config.partitions {
        share += &format!(", partitions {filter}");
    }
    if let Some(stop) = stop {
        share += &format!(", stopping at {}", stop.at);
    }
    share
}

/// Where each of `keys` starts: its position in the `saved` state, or else where `start`
/// (`starting_offset`) puts it, looked up. Also each start with where it comes from, in key
/// order, for the open line.
pub(super) async fn starts(
    table: &Table,
    keys: &[BucketKey],
    partitions: &PartitionNames,
    saved: Option<&SavedState>,
    start: StartingOffset,
) -> Result<(Positions, Vec<(BucketKey, Position, &'static str)>)> {
    let mut committed = Positions::new();
    let mut starts = Vec::with_capacity(keys.len());
    let mut fresh = Vec::new();
    for key in keys {
        match saved.and_then(|s| s.positions.get(key)) {
            Some(position) => {
                committed.insert(*key, *position);
                starts.push((*key, *position, "saved state"));
            }
            None => fresh.push(*key),
        }
    }
    let resolved = offsets::starting(table, &fresh, partitions, start).await?;
    for (key, position) in resolved {
        committed.insert(key, position);
        starts.push((key, position, "starting_offset"));
    }
    starts.sort_by_key(|(k, _, _)| *k);
    Ok((committed, starts))
}

/// How the messages of `table` (`qualified`: `db.table`) are stamped: ids, and the headers
/// of `headers`.
pub(super) fn stamper(table: &Table, qualified: &str, headers: HeaderSet) -> Result<Stamper> {
    let stamper = Stamper::new(table.id(), qualified, headers)?;
    if table.primary_key {
        return stamper.with_primary_key(table.info.get_primary_keys());
    }
    Ok(stamper)
}
