//! Fluss faults while streaming, on dedicated clusters (the shared one is never disturbed):
//! a tablet server stopped and killed, the coordinator restarted, the whole cluster down for
//! 30 s, and a log truncated past the saved offset under each `on_offset_out_of_range`.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fluss_source_runner::{logs, Level, LogLine};
use fluss_testkit::fluss::client::FlussConnection;
use fluss_testkit::fluss::metadata::{TableDescriptor, TablePath};
use fluss_testkit::fluss::rpc::message::OffsetSpec;
use fluss_testkit::{poll_until, tables, unique_table, Cluster, ClusterOptions};
use serde_json::{json, Value};

use crate::fixture::{assert_bucket_order, ids, rt, Answer, Received, Stream};

/// A plugin config for `table` on `cluster`.
fn config_on(cluster: &Cluster, table: &str, extra: Value) -> Value {
    let mut base = json!({
        "bootstrap_servers": cluster.bootstrap(),
        "database": tables::TEST_DATABASE,
        "table": table,
        "poll_interval": "200ms",
        "connect_timeout": "20s",
        "batch_size": 500,
    });
    if let (Value::Object(b), Value::Object(e)) = (&mut base, extra) {
        b.extend(e);
    }
    base
}

/// Log lines of the instance reading `table` (every plugin line carries `db.table]`).
fn lines_of(table: &str, since: usize) -> Vec<LogLine> {
    let tag = format!("{}.{table}]", tables::TEST_DATABASE);
    logs()
        .into_iter()
        .skip(since)
        .filter(|l| l.message.contains(&tag))
        .collect()
}

async fn append(cluster: &Cluster, path: &TablePath, ids: std::ops::Range<i64>) {
    let conn = cluster.connection().await;
    fluss_testkit::write::append_rows(&conn, path, ids.map(tables::sample_row)).await;
}

/// The log end of both buckets, once the table answers again.
async fn latest(cluster: &Cluster, path: &TablePath) -> std::collections::HashMap<i32, i64> {
    let conn = cluster.connection().await;
    let admin = conn.get_admin().expect("admin");
    poll_until(
        Duration::from_secs(90),
        Duration::from_millis(500),
        "list_offsets to answer",
        || async {
            match tokio::time::timeout(
                Duration::from_secs(5),
                admin.list_offsets(path, &[0, 1], OffsetSpec::Latest),
            )
            .await
            {
                Ok(Ok(offsets)) => Ok(offsets),
                Ok(Err(e)) => Err(e.to_string()),
                Err(_) => Err("no answer".to_owned()),
            }
        },
    )
    .await
}

/// A stream read on its own thread, acking every batch, until told to stop.
struct Reader {
    acked: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Vec<Received>>,
}

impl Reader {
    fn start(config: Value) -> Self {
        let acked = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (acked, stop) = (acked.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut s = Stream::open(&config, None).expect("open");
                while !stop.load(Ordering::Relaxed) {
                    let n = s.read(
                        s.acked.len() + 1,
                        Duration::from_millis(300),
                        Answer::AckAll,
                    );
                    acked.store(n, Ordering::Relaxed);
                }
                let acked = std::mem::take(&mut s.acked);
                s.close();
                acked
            })
        };
        Self {
            acked,
            stop,
            thread,
        }
    }

    /// Waits until `n` messages were acked in total.
    fn wait_for(&self, n: usize, within: Duration, what: &str) {
        rt().block_on(poll_until(
            within,
            Duration::from_millis(100),
            what,
            || async {
                let got = self.acked.load(Ordering::Relaxed);
                if got >= n {
                    Ok(())
                } else {
                    Err(format!("{got} of {n} messages acked"))
                }
            },
        ));
    }

    fn finish(self) -> Vec<Received> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().expect("reader thread")
    }
}

/// Waits until the instance reading `table` logged a WARN after log index `since`.
fn wait_for_warn(table: &str, since: usize, within: Duration, what: &str) -> LogLine {
    rt().block_on(poll_until(
        within,
        Duration::from_millis(200),
        what,
        || async {
            lines_of(table, since)
                .into_iter()
                .find(|l| l.level == Level::Warn)
                .ok_or("no WARN yet")
        },
    ))
}

/// One cluster, one stream, four faults in a row. The stream must come back by itself after
/// each, WARN while it waits, and in the end hold every row exactly once (every batch is
/// acked, so not even a repeat is allowed), in per-bucket order.
#[test]
fn stream_survives_tablet_and_coordinator_faults() {
    let started = Instant::now();
    let cluster = Cluster::start(ClusterOptions {
        // A tablet server killed with -9 truncates its log to the last high-watermark
        // checkpoint; keep that close to the acknowledged end so no written row is lost by
        // Fluss itself.
        conf: vec![(
            "log.replica.high-watermark.checkpoint-interval".into(),
            "100ms".into(),
        )],
        ..ClusterOptions::default()
    });
    let path = unique_table("faults");
    let table = path.table().to_owned();
    rt().block_on(async {
        let conn = cluster.connection().await;
        let admin = conn.get_admin().unwrap();
        tables::create_log_table(&admin, &path, tables::sample_log_schema(), 2).await;
    });
    let mut written: i64 = 0;
    let mut write = |n: i64| {
        rt().block_on(append(&cluster, &path, written..written + n));
        written += n;
        written as usize
    };
    let total = write(20_000);
    let reader = Reader::start(config_on(&cluster, &table, json!({})));
    reader.wait_for(total, Duration::from_secs(60), "the first rows");
    let mut timings = Vec::new();

    // 1. Graceful stop of the (only) tablet server, then start it again.
    let t = Instant::now();
    let total = write(10_000);
    let since = logs().len();
    cluster.stop_tablet(0);
    let warn = wait_for_warn(
        &table,
        since,
        Duration::from_secs(30),
        "a WARN while the tablet server is stopped",
    );
    eprintln!("faults: stopped tablet server: {}", warn.message);
    cluster.start_tablet(0);
    rt().block_on(latest(&cluster, &path));
    reader.wait_for(
        total,
        Duration::from_secs(90),
        "rows written before the stop",
    );
    let total = write(10_000);
    reader.wait_for(
        total,
        Duration::from_secs(90),
        "rows written after the restart",
    );
    timings.push(("graceful tablet stop", t.elapsed()));

    // 2. kill -9 of the tablet server, then start it again.
    let t = Instant::now();
    let total = write(10_000);
    reader.wait_for(
        total,
        Duration::from_secs(60),
        "rows written before the kill",
    );
    let before = rt().block_on(latest(&cluster, &path));
    // Let the high-watermark checkpoint (every 100 ms here) cover every written row: a
    // single-replica server truncates to it on restart, which would be Fluss losing rows.
    std::thread::sleep(Duration::from_secs(1));
    let since = logs().len();
    cluster.kill_tablet(0);
    let warn = wait_for_warn(
        &table,
        since,
        Duration::from_secs(30),
        "a WARN after kill -9 of the tablet server",
    );
    eprintln!("faults: killed tablet server: {}", warn.message);
    cluster.start_tablet(0);
    let after = rt().block_on(latest(&cluster, &path));
    assert!(
        after.iter().all(|(bucket, end)| *end >= before[bucket]),
        "Fluss itself lost acknowledged rows on kill -9 (log end {before:?} before, {after:?} after); \
         check log.replica.high-watermark.checkpoint-interval, this is not the connector"
    );
    let total = write(10_000);
    reader.wait_for(
        total,
        Duration::from_secs(90),
        "rows written after the kill",
    );
    timings.push(("tablet kill -9", t.elapsed()));

    // 3. Restart of the coordinator while rows flow.
    let t = Instant::now();
    let total = write(10_000);
    cluster.restart_coordinator();
    let total2 = write(10_000);
    assert!(total2 > total);
    reader.wait_for(
        total2,
        Duration::from_secs(90),
        "rows around a coordinator restart",
    );
    timings.push(("coordinator restart", t.elapsed()));

    // 4. Fluss down for 30 s: tablet server and coordinator stopped (ZooKeeper stays).
    let t = Instant::now();
    let total = write(10_000);
    let since = logs().len();
    cluster.stop_tablet(0);
    let coordinator_pid: i32 = std::fs::read_to_string(
        cluster
            .dir()
            .expect("local cluster")
            .join("pids/coordinator"),
    )
    .expect("coordinator pid file")
    .trim()
    .parse()
    .expect("coordinator pid");
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &coordinator_pid.to_string()])
        .status()
        .expect("run kill");
    assert!(killed.success(), "kill -TERM of the coordinator");
    let down = Instant::now();
    let warn = wait_for_warn(
        &table,
        since,
        Duration::from_secs(30),
        "a WARN while Fluss is down",
    );
    eprintln!("faults: cluster down: {}", warn.message);
    // The outage itself: 30 s is the point of this step, not a wait for a condition.
    std::thread::sleep(Duration::from_secs(30).saturating_sub(down.elapsed()));
    let warns_while_down = lines_of(&table, since)
        .iter()
        .filter(|l| l.level == Level::Warn)
        .count();
    let errors_while_down: Vec<String> = lines_of(&table, since)
        .into_iter()
        .filter(|l| l.level == Level::Error)
        .map(|l| l.message)
        .collect();
    assert!(
        errors_while_down.is_empty(),
        "an outage is a WARN, not an ERROR: {errors_while_down:#?}"
    );
    // Repeats are rate-limited (first, then one per 30 s).
    assert!(
        warns_while_down <= 6,
        "{warns_while_down} WARN lines in 30 s; retries should be summarised"
    );
    cluster.restart_coordinator();
    cluster.start_tablet(0);
    // The writer needs a leader for every bucket again (the reader does not wait for this).
    rt().block_on(latest(&cluster, &path));
    reader.wait_for(
        total,
        Duration::from_secs(120),
        "rows written before the outage",
    );
    let total = write(10_000);
    reader.wait_for(
        total,
        Duration::from_secs(90),
        "rows written after the outage",
    );
    timings.push(("30 s outage", t.elapsed()));
    let recovered = lines_of(&table, since)
        .into_iter()
        .any(|l| l.level == Level::Info && l.message.contains("reading again after"));
    assert!(recovered, "the recovery is logged at INFO");

    let acked = reader.finish();
    assert_bucket_order(&acked);
    let mut got = ids(&acked);
    let count = got.len();
    got.sort_unstable();
    got.dedup();
    assert_eq!(
        count,
        got.len(),
        "rows repeated although every batch was acked"
    );
    assert_eq!(
        got,
        (0..written).collect::<Vec<_>>(),
        "rows lost or invented across the faults"
    );
    eprintln!("faults: {timings:?}; test total {:?}", started.elapsed());
}

/// A cluster whose logs expire within seconds: 1 KiB segments, tiered to the local remote
/// dir every second, and tables with `table.log.ttl` 1 s.
fn expiring_cluster() -> Cluster {
    Cluster::start(ClusterOptions {
        conf: vec![
            ("log.segment.file-size".into(), "1kb".into()),
            ("remote.log.task-interval-duration".into(), "1s".into()),
            ("table.log.tiered.local-segments".into(), "1".into()),
        ],
        ..ClusterOptions::default()
    })
}

async fn earliest(conn: &FlussConnection, path: &TablePath) -> i64 {
    let admin = conn.get_admin().expect("admin");
    let offsets = tokio::time::timeout(
        Duration::from_secs(10),
        admin.list_offsets(path, &[0], OffsetSpec::Earliest),
    )
    .await
    .expect("list_offsets answers")
    .expect("list_offsets");
    offsets[&0]
}

/// A saved offset below the log start is handled per `on_offset_out_of_range`: `earliest`
/// continues at the log start and `latest` at the end, each with one ERROR line naming the
/// skipped range; `fail` delivers nothing, says why at ERROR and keeps the state.
#[test]
fn truncated_log_follows_on_offset_out_of_range() {
    let started = Instant::now();
    let cluster = expiring_cluster();
    let path = unique_table("truncated");
    let table = path.table().to_owned();
    let log_start = rt().block_on(async {
        let conn = cluster.connection().await;
        let admin = conn.get_admin().unwrap();
        let descriptor = TableDescriptor::builder()
            .schema(tables::sample_log_schema())
            .distributed_by(Some(1), Vec::new())
            .property("table.log.ttl", "1s")
            .build()
            .expect("descriptor");
        tables::create_table(&admin, &path, &descriptor).await;
        // Many small flushes: many segments, so expiry moves the log start in steps.
        for chunk in 0..20 {
            append(&cluster, &path, chunk * 20..chunk * 20 + 20).await;
        }
        0
    });
    assert_eq!(log_start, 0);
    // Read the first 40 rows and stop: the saved state points at offset 40.
    let mut s = Stream::open(
        &config_on(&cluster, &table, json!({"batch_size": 40})),
        None,
    )
    .expect("open");
    s.read(40, Duration::from_secs(20), Answer::AckAll);
    assert_eq!(ids(&s.acked), (0..40).collect::<Vec<_>>());
    let state = s.close().expect("state");
    // More rows, then wait until expiry removed offset 40 from the log.
    let log_start = rt().block_on(async {
        for chunk in 20..30 {
            append(&cluster, &path, chunk * 20..chunk * 20 + 20).await;
        }
        let conn = cluster.connection().await;
        // Expiry removes segments over several task runs; wait until the start is past 40
        // and has not moved for 3 s, so it does not move again while a policy is checked.
        let last = std::cell::Cell::new((-1, Instant::now()));
        poll_until(
            Duration::from_secs(90),
            Duration::from_millis(500),
            "the log start to pass offset 40 and settle (table.log.ttl 1s, remote log task every 1s)",
            || async {
                let start = earliest(&conn, &path).await;
                let (previous, since) = last.get();
                if start != previous {
                    last.set((start, Instant::now()));
                    Err(format!("log starts at {start}"))
                } else if start > 40 && since.elapsed() >= Duration::from_secs(3) {
                    Ok(start)
                } else {
                    Err(format!("log starts at {start}, settling"))
                }
            },
        )
        .await
    });
    eprintln!(
        "truncated: log start moved to {log_start} after {:?}",
        started.elapsed()
    );

    // earliest: continue at the log start, one ERROR line with the range.
    let since = logs().len();
    let mut s = Stream::open(
        &config_on(
            &cluster,
            &table,
            json!({"on_offset_out_of_range": "earliest"}),
        ),
        Some(state.clone()),
    )
    .expect("open with state below the log start");
    s.read(
        600 - log_start as usize,
        Duration::from_secs(10),
        Answer::AckAll,
    );
    let first = s.acked.first().expect("rows after the reset").offset;
    assert!(
        first >= log_start,
        "earliest: first offset {first} is below the log start {log_start}"
    );
    let got = ids(&s.acked);
    assert_eq!(
        got,
        (first..600).collect::<Vec<_>>(),
        "earliest: everything from the (current) log start on, once, in order"
    );
    let errors: Vec<String> = lines_of(&table, since)
        .into_iter()
        .filter(|l| l.level == Level::Error)
        .map(|l| l.message)
        .collect();
    assert_eq!(errors.len(), 1, "earliest: one ERROR line, got {errors:#?}");
    assert!(
        errors[0].contains("bucket 0: offsets 40..") && errors[0].contains("the log was truncated"),
        "earliest: the ERROR line names bucket and skipped range: {}",
        errors[0]
    );
    drop(s);

    // latest: continue at the end; rows written afterwards arrive.
    let since = logs().len();
    let mut s = Stream::open(
        &config_on(
            &cluster,
            &table,
            json!({"on_offset_out_of_range": "latest"}),
        ),
        Some(state.clone()),
    )
    .expect("open");
    rt().block_on(poll_until(
        Duration::from_secs(20),
        Duration::from_millis(100),
        "the out-of-range ERROR line (latest)",
        || async {
            lines_of(&table, since)
                .into_iter()
                .find(|l| l.level == Level::Error)
                .ok_or("none yet")
        },
    ));
    rt().block_on(append(&cluster, &path, 600..610));
    s.read(10, Duration::from_secs(10), Answer::AckAll);
    assert_eq!(
        ids(&s.acked),
        (600..610).collect::<Vec<_>>(),
        "latest: only rows written after the reset"
    );
    let errors: Vec<String> = lines_of(&table, since)
        .into_iter()
        .filter(|l| l.level == Level::Error)
        .map(|l| l.message)
        .collect();
    assert_eq!(errors.len(), 1, "latest: one ERROR line, got {errors:#?}");
    assert!(
        errors[0].contains("bucket 0: offsets 40..600") && errors[0].contains("560 rows skipped"),
        "latest: the ERROR line names the skipped range: {}",
        errors[0]
    );
    drop(s);

    // fail: nothing delivered, an ERROR that says what to do, the state stays.
    let since = logs().len();
    let mut s = Stream::open(
        &config_on(&cluster, &table, json!({"on_offset_out_of_range": "fail"})),
        Some(state.clone()),
    )
    .expect("open");
    let error = rt().block_on(poll_until(
        Duration::from_secs(20),
        Duration::from_millis(100),
        "the out-of-range ERROR line (fail)",
        || async {
            // The SDK logs a failed poll as `plugin <id>: poll failed …: <error>`; the error
            // names the table.
            logs()
                .into_iter()
                .skip(since)
                .find(|l| {
                    l.level == Level::Error
                        && l.message.contains(&format!(
                            "of testkit.{table}: offset 40 is not on the server"
                        ))
                })
                .ok_or("none yet")
        },
    ));
    assert!(
        error.message.contains("on_offset_out_of_range"),
        "fail: the ERROR names the setting to change: {}",
        error.message
    );
    assert_eq!(
        s.read(1, Duration::from_secs(3), Answer::AckAll),
        0,
        "fail: nothing delivered"
    );
    assert_eq!(s.close(), Some(state), "fail: the saved state is kept");
    eprintln!(
        "truncated_log_follows_on_offset_out_of_range: {:?}",
        started.elapsed()
    );
}
