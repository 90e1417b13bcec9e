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

//! Every live connector's figures in the Prometheus text format (0.0.4), encoded by
//! `prometheus-client` from one consistent look at the hub per scrape. Values the connector
//! does not know yet (a bucket's high watermark before the first offsets request, a
//! position during its snapshot phase) are left out rather than shown as 0.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use super::{Counters, ErrorKind, Figures, Labels, Lifecycle, SnapshotPhase, now_millis};
use crate::position::{BucketKey, Position};

/// The `Content-Type` of the answer.
pub const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// A metric family: its name, help and where its value comes from.
type Family<T> = (&'static str, &'static str, T);
/// Where a counter's value is.
type CounterOf = fn(&Counters) -> &AtomicU64;
/// A bucket's value of a gauge, if known.
type GaugeOf = fn(&BucketRow) -> Option<i64>;

/// The counters of one connector, by name and help (names get `_total` when encoded).
const COUNTERS: [Family<CounterOf>; 7] = [
    (
        "fluss_source_rows_fetched",
        "Records fetched from Fluss (changelog records and snapshot rows), before the filter.",
        |c| &c.rows_fetched,
    ),
    (
        "fluss_source_rows_filtered",
        "Fetched records the filter dropped.",
        |c| &c.rows_filtered,
    ),
    (
        "fluss_source_rows_delivered",
        "Records in batches the runtime acknowledged.",
        |c| &c.rows_delivered,
    ),
    (
        "fluss_source_messages_acked",
        "Messages in batches the runtime acknowledged.",
        |c| &c.messages_acked,
    ),
    (
        "fluss_source_messages_nacked",
        "Messages in batches the runtime Nacked (they come again).",
        |c| &c.messages_nacked,
    ),
    (
        "fluss_source_payload_bytes",
        "Payload bytes in batches the runtime acknowledged.",
        |c| &c.payload_bytes,
    ),
    (
        "fluss_source_outages",
        "Periods of retried failures (each begins with one WARN line).",
        |c| &c.outages,
    ),
];

/// One bucket's row of values.
struct BucketRow {
    partition: String,
    bucket: String,
    position: Option<i64>,
    high_watermark: Option<i64>,
    lag: Option<i64>,
    ms_behind: Option<i64>,
    phase: i64,
    snapshot_done: Option<i64>,
    snapshot_total: Option<i64>,
}

/// The per-bucket gauges, by name and help.
const BUCKET_GAUGES: [Family<GaugeOf>; 7] = [
    (
        "fluss_source_position",
        "The next offset the bucket is read from, as acknowledged by the runtime.",
        |r| r.position,
    ),
    (
        "fluss_source_high_watermark",
        "The bucket's high watermark as last listed (refreshed every few seconds).",
        |r| r.high_watermark,
    ),
    (
        "fluss_source_lag_records",
        "High watermark minus position: records written but not yet delivered.",
        |r| r.lag,
    ),
    (
        "fluss_source_ms_behind",
        "Milliseconds between now and the commit time of the last delivered row; 0 when the bucket has no lag.",
        |r| r.ms_behind,
    ),
    (
        "fluss_source_snapshot_phase",
        "0 = reading the changelog, 1 = snapshot waiting to be taken, 2 = snapshot being handed over.",
        |r| Some(r.phase),
    ),
    (
        "fluss_source_snapshot_rows_done",
        "Rows of the bucket's snapshot handed over so far (while it is handed over).",
        |r| r.snapshot_done,
    ),
    (
        "fluss_source_snapshot_rows_total",
        "Rows the bucket's snapshot holds (while it is handed over).",
        |r| r.snapshot_total,
    ),
];

/// One scrape's look at the hub.
#[derive(Debug)]
struct Scrape {
    live: Vec<Arc<Figures>>,
    lifecycle: Vec<(Labels, Lifecycle)>,
}

fn labels(l: &Labels) -> Vec<(&'static str, String)> {
    vec![
        ("connector", l.connector.clone()),
        ("instance", l.instance.clone()),
        ("table", l.table.clone()),
    ]
}

fn bucket_rows(figures: &Figures, now: i64) -> Vec<BucketRow> {
    let views = figures.views();
    let mut keys: Vec<BucketKey> = views.committed.keys().copied().collect();
    keys.extend(views.snapshots.keys().copied());
    keys.sort_unstable();
    keys.dedup();
    keys.into_iter()
        .map(|key| {
            let position = match views.committed.get(&key) {
                Some(Position::At(offset)) => Some(*offset),
                _ => None,
            };
            let high_watermark = views.high_watermarks.get(&key).copied();
            let lag = position.zip(high_watermark).map(|(p, hw)| (hw - p).max(0));
            let ms_behind = match (lag, views.delivered_at.get(&key)) {
                (Some(0), _) => Some(0),
                (Some(_), Some(at)) => Some((now - at).max(0)),
                _ => None,
            };
            let snapshot = views.snapshots.get(&key).copied();
            let (phase, snapshot_done, snapshot_total) = match snapshot {
                None => (0, None, None),
                Some(SnapshotPhase::Waiting) => (1, None, None),
                Some(SnapshotPhase::HandingOver { done, total }) => {
                    (2, Some(done as i64), total.map(|t| t as i64))
                }
            };
            BucketRow {
                partition: key
                    .partition
                    .and_then(|p| views.names.get(&p).cloned())
                    .unwrap_or_default(),
                bucket: key.bucket.to_string(),
                position,
                high_watermark,
                lag,
                ms_behind,
                phase,
                snapshot_done,
                snapshot_total,
            }
        })
        .collect()
}

fn gauge(encoder: &mut MetricEncoder, labels: &[(&str, String)], value: i64) -> std::fmt::Result {
    encoder.encode_family(&labels)?.encode_gauge(&value)
}

fn counter(encoder: &mut MetricEncoder, labels: &[(&str, String)], value: u64) -> std::fmt::Result {
    encoder
        .encode_family(&labels)?
        .encode_counter::<NoLabelSet, _, u64>(&value, None)
}

impl Collector for Scrape {
    fn encode(&self, mut encoder: DescriptorEncoder) -> std::fmt::Result {
        let connectors: Vec<(Vec<(&str, String)>, &Figures)> = self
            .live
            .iter()
            .map(|f| (labels(&f.labels), f.as_ref()))
            .collect();
        for (name, help, field) in COUNTERS {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
            for (labels, figures) in &connectors {
                counter(
                    &mut family,
                    labels,
                    field(&figures.counters).load(Ordering::Relaxed),
                )?;
            }
        }
        let mut family = encoder.encode_descriptor(
            "fluss_source_errors",
            "Fluss call errors by kind: transient (retried), refused (ACLs, a dropped table; retried), out_of_range (offsets no longer on the server), fatal (ended a poll).",
            None,
            MetricType::Counter,
        )?;
        for (labels, figures) in &connectors {
            for (kind, count) in ErrorKind::ALL.iter().zip(&figures.counters.errors) {
                let mut labels = labels.clone();
                labels.push(("kind", kind.name().to_owned()));
                counter(&mut family, &labels, count.load(Ordering::Relaxed))?;
            }
        }
        self.encode_lifecycle(&mut encoder)?;
        let now = now_millis();
        let rows: Vec<(Vec<(&str, String)>, BucketRow)> = connectors
            .iter()
            .flat_map(|(labels, figures)| {
                bucket_rows(figures, now).into_iter().map(|row| {
                    let mut labels = labels.clone();
                    labels.push(("partition", row.partition.clone()));
                    labels.push(("bucket", row.bucket.clone()));
                    (labels, row)
                })
            })
            .collect();
        for (name, help, field) in BUCKET_GAUGES {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
            for (labels, row) in &rows {
                if let Some(value) = field(row) {
                    gauge(&mut family, labels, value)?;
                }
            }
        }
        Ok(())
    }
}

impl Scrape {
    /// Opens, closes and whether each connector is open now; closed connectors keep their
    /// series (with `fluss_source_up` 0) until the process ends.
    fn encode_lifecycle(&self, encoder: &mut DescriptorEncoder) -> std::fmt::Result {
        let families: [(&str, &str, MetricType); 3] = [
            (
                "fluss_source_opens",
                "Times the connector was opened in this process.",
                MetricType::Counter,
            ),
            (
                "fluss_source_closes",
                "Times the connector was closed in this process.",
                MetricType::Counter,
            ),
            (
                "fluss_source_up",
                "1 while the connector is open, 0 after it closed.",
                MetricType::Gauge,
            ),
        ];
        for (index, (name, help, kind)) in families.into_iter().enumerate() {
            let mut family = encoder.encode_descriptor(name, help, None, kind)?;
            for (l, lifecycle) in &self.lifecycle {
                let labels = labels(l);
                match index {
                    0 => counter(&mut family, &labels, lifecycle.opens)?,
                    1 => counter(&mut family, &labels, lifecycle.closes)?,
                    _ => {
                        let up = self.live.iter().any(|f| &f.labels == l);
                        gauge(&mut family, &labels, i64::from(up))?
                    }
                }
            }
        }
        Ok(())
    }
}

/// The text a scrape answers with: the figures of the `live` connectors and every connector's
/// open/close counts.
pub fn render(live: Vec<Arc<Figures>>, lifecycle: Vec<(Labels, Lifecycle)>) -> String {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Scrape { live, lifecycle }));
    let mut text = String::new();
    // Writing into a String cannot fail; an encoder error leaves what was written.
    let _ = prometheus_client::encoding::prometheus_text::encode(&mut text, &registry);
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::position::Position;

    fn scrape_text(figures: &Arc<Figures>, lifecycle: Lifecycle) -> String {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(Scrape {
            live: vec![Arc::clone(figures)],
            lifecycle: vec![(figures.labels.clone(), lifecycle)],
        }));
        let mut text = String::new();
        prometheus_client::encoding::prometheus_text::encode(&mut text, &registry).unwrap();
        text
    }

    fn value(text: &str, series: &str) -> Option<i64> {
        text.lines()
            .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
            .map(|v| v.parse().unwrap())
    }

    const C: &str = r#"connector="orders",instance="1",table="db.t""#;

    fn bucket(b: i32) -> String {
        format!(r#"{{{C},partition="",bucket="{b}"}}"#)
    }

    #[test]
    fn buckets_show_position_watermark_lag_delay_and_snapshot_progress() {
        let figures = Arc::new(Figures::new(Labels {
            connector: "orders".into(),
            instance: "1".into(),
            table: "db.t".into(),
        }));
        let now = now_millis();
        {
            let mut views = figures.views();
            let b = BucketKey::bucket;
            views.committed.insert(b(0), Position::At(10));
            views.high_watermarks.insert(b(0), 25);
            views.delivered_at.insert(b(0), now - 5_000);
            views.committed.insert(b(1), Position::At(7));
            views.high_watermarks.insert(b(1), 7);
            views.delivered_at.insert(b(1), now - 60_000);
            views.committed.insert(b(2), Position::SNAPSHOT);
            views.snapshots.insert(
                b(2),
                SnapshotPhase::HandingOver {
                    done: 3,
                    total: Some(9),
                },
            );
            views.committed.insert(b(3), Position::At(0));
        }
        figures.counters.rows_fetched.store(12, Ordering::Relaxed);
        figures.counters.errors[1].store(2, Ordering::Relaxed);
        let text = scrape_text(
            &figures,
            Lifecycle {
                opens: 2,
                closes: 1,
            },
        );
        let at = |name: &str, b: i32| value(&text, &format!("{name}{}", bucket(b)));
        assert_eq!(at("fluss_source_position", 0), Some(10));
        assert_eq!(at("fluss_source_high_watermark", 0), Some(25));
        assert_eq!(at("fluss_source_lag_records", 0), Some(15));
        let behind = at("fluss_source_ms_behind", 0).unwrap();
        assert!((5_000..6_000).contains(&behind), "{behind}");
        assert_eq!(at("fluss_source_lag_records", 1), Some(0));
        assert_eq!(at("fluss_source_ms_behind", 1), Some(0), "no lag, no delay");
        assert_eq!(at("fluss_source_position", 2), None, "snapshot phase");
        assert_eq!(at("fluss_source_snapshot_phase", 2), Some(2));
        assert_eq!(at("fluss_source_snapshot_rows_done", 2), Some(3));
        assert_eq!(at("fluss_source_snapshot_rows_total", 2), Some(9));
        assert_eq!(at("fluss_source_snapshot_phase", 0), Some(0));
        assert_eq!(at("fluss_source_lag_records", 3), None, "no watermark yet");
        assert_eq!(at("fluss_source_position", 3), Some(0));
        let series = |name: &str| value(&text, &format!("{name}{{{C}}}"));
        assert_eq!(series("fluss_source_rows_fetched_total"), Some(12));
        assert_eq!(series("fluss_source_rows_delivered_total"), Some(0));
        assert_eq!(series("fluss_source_opens_total"), Some(2));
        assert_eq!(series("fluss_source_closes_total"), Some(1));
        assert_eq!(series("fluss_source_up"), Some(1));
        assert_eq!(
            value(
                &text,
                &format!(r#"fluss_source_errors_total{{{C},kind="refused"}}"#)
            ),
            Some(2)
        );
        assert!(text.contains("# TYPE fluss_source_rows_fetched_total counter\n"));
        assert!(text.contains("# TYPE fluss_source_lag_records gauge\n"));
    }
}
