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

//! Test tables: unique names, creation, readiness, partitions, and a small
//! sample schema most tests can share.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fluss::ServerType;
use fluss::client::FlussAdmin;
use fluss::metadata::{
    AddColumn, AlterTableChanges, ColumnPositionType, DataType, DataTypes, JsonSerde,
    PartitionInfo, PartitionSpec, Schema, TableDescriptor, TableInfo, TablePath,
};
use fluss::row::GenericRow;
use fluss::rpc::message::OffsetSpec;

use crate::{poll_for, poll_until};

/// The database every testkit table lives in; created on first use.
pub const TEST_DATABASE: &str = "testkit";

/// Buckets get leaders within a second or two on a healthy cluster; the
/// rest covers a tablet server that is still (re)starting, and the load of
/// CI (several clusters and the Iggy servers on 2 cores), under which a new
/// table's leaders can take over a minute.
const READY_TIMEOUT: Duration = Duration::from_secs(120);
/// A new table whose buckets have no leader after this long is dropped and
/// created again: under CI's load Fluss 0.9.1 has left a new table's buckets
/// without a leader for good ("No leader found" for the whole
/// [`READY_TIMEOUT`]) while the cluster served other tables.
const RECREATE_AFTER: Duration = Duration::from_secs(40);
const READY_INTERVAL: Duration = Duration::from_millis(200);

static TABLE_SEQ: AtomicUsize = AtomicUsize::new(0);

/// A repair for a cluster whose coordinator gives new tables no leaders, by the port of its
/// coordinator's listener.
type Repair = Box<dyn Fn() + Send + Sync>;
static REPAIRS: Mutex<Vec<(u32, Repair)>> = Mutex::new(Vec::new());

/// Registers `repair` for the cluster whose coordinator listens on `coordinator` (`host:port`):
/// [`create_table`] runs it when a new table of that cluster still has no leaders after
/// [`RECREATE_AFTER`], before it creates the table again. Fluss 0.9.1's coordinator has
/// stopped electing leaders for good after an `IllegalStateException` ("The NotifyLeaderAndIsr
/// batch request ... is not empty while creating a new one") while it served other requests;
/// restarting it (its state is in ZooKeeper) brings the elections back.
pub fn on_leaderless(coordinator: &str, repair: impl Fn() + Send + Sync + 'static) {
    let Some(port) = coordinator
        .rsplit_once(':')
        .and_then(|(_, port)| port.parse().ok())
    else {
        return;
    };
    REPAIRS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .push((port, Box::new(repair)));
}

/// Runs the repair registered for the cluster `admin` talks to, if there is one.
async fn repair_leaderless(admin: &FlussAdmin) {
    let Ok(nodes) = admin.get_server_nodes().await else {
        return;
    };
    let ports: Vec<u32> = nodes
        .iter()
        .filter(|node| matches!(node.server_type(), ServerType::CoordinatorServer))
        .map(|node| node.port())
        .collect();
    let repairs = REPAIRS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((port, repair)) = repairs.iter().find(|(port, _)| ports.contains(port)) {
        eprintln!(
            "fluss-testkit: restarting the coordinator on port {port}: it gives new tables no leaders"
        );
        repair();
    }
}

/// A table path in [`TEST_DATABASE`] no other test (in this or an earlier
/// run against the same cluster) uses: `{prefix}_{pid}_{millis}_{n}`.
/// `prefix` should name the test, e.g. `unique_table("resume")`.
pub fn unique_table(prefix: &str) -> TablePath {
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() % 1_000_000_000);
    let n = TABLE_SEQ.fetch_add(1, Ordering::Relaxed);
    TablePath::new(
        TEST_DATABASE,
        format!("{prefix}_{}_{millis}_{n}", std::process::id()),
    )
}

/// Creates `database` unless it exists.
pub async fn ensure_database(admin: &FlussAdmin, database: &str) {
    admin
        .create_database(database, None, true)
        .await
        .unwrap_or_else(|e| panic!("create database {database}: {e}"));
}

/// Creates the table (and its database), then waits until every bucket has
/// a leader unless the table is partitioned (partitions have the buckets;
/// see [`create_partition`]); a table still without leaders after
/// [`RECREATE_AFTER`] is dropped and created once more. Returns the server's
/// view of the table.
pub async fn create_table(
    admin: &FlussAdmin,
    path: &TablePath,
    descriptor: &TableDescriptor,
) -> TableInfo {
    ensure_database(admin, path.database()).await;
    let mut waited = Duration::ZERO;
    loop {
        admin
            .create_table(path, descriptor, false)
            .await
            .unwrap_or_else(|e| panic!("create table {path}: {e}"));
        let info = admin
            .get_table_info(path)
            .await
            .unwrap_or_else(|e| panic!("get_table_info {path}: {e}"));
        if info.is_partitioned() {
            return info;
        }
        let wait = RECREATE_AFTER.min(READY_TIMEOUT - waited);
        let ready = poll_for(
            wait,
            READY_INTERVAL,
            &format!(
                "leaders for the {} bucket(s) of {path}",
                info.get_num_buckets()
            ),
            || bucket_leaders(admin, path, info.get_num_buckets()),
        )
        .await;
        waited += wait;
        match ready {
            Ok(_) => return info,
            Err(timed_out) if waited >= READY_TIMEOUT => panic!(
                "{}the coordinator gave the new table's buckets no leaders within {READY_TIMEOUT:?}, although the table was created again every {RECREATE_AFTER:?}: {timed_out}",
                crate::ENVIRONMENT_FAULT
            ),
            Err(timed_out) => {
                eprintln!("fluss-testkit: {timed_out}; dropping the table and creating it again");
                repair_leaderless(admin).await;
                admin
                    .drop_table(path, true)
                    .await
                    .unwrap_or_else(|e| panic!("drop table {path}: {e}"));
            }
        }
    }
}

/// Creates a log table with `buckets` buckets (rows spread round-robin).
pub async fn create_log_table(
    admin: &FlussAdmin,
    path: &TablePath,
    schema: Schema,
    buckets: i32,
) -> TableInfo {
    let descriptor = TableDescriptor::builder()
        .schema(schema)
        .distributed_by(Some(buckets), Vec::new())
        .build()
        .expect("log table descriptor");
    create_table(admin, path, &descriptor).await
}

/// Creates a primary-key table (the schema carries the key) with `buckets`
/// buckets, bucketed by its primary key.
pub async fn create_pk_table(
    admin: &FlussAdmin,
    path: &TablePath,
    schema: Schema,
    buckets: i32,
) -> TableInfo {
    assert!(
        schema.primary_key().is_some(),
        "create_pk_table needs a schema with a primary key, e.g. sample_pk_schema()"
    );
    create_log_table(admin, path, schema, buckets).await
}

/// Creates a table partitioned by the STRING column `partition_key`, with
/// `buckets` buckets per partition and no automatic partitions: add them
/// with [`create_partition`]. A primary key must include `partition_key`.
pub async fn create_partitioned_table(
    admin: &FlussAdmin,
    path: &TablePath,
    schema: Schema,
    partition_key: &str,
    buckets: i32,
) -> TableInfo {
    let descriptor = TableDescriptor::builder()
        .schema(schema)
        .partitioned_by(vec![partition_key])
        .distributed_by(Some(buckets), Vec::new())
        .build()
        .expect("partitioned table descriptor");
    create_table(admin, path, &descriptor).await
}

/// Adds the partition `partition_key=value` and waits until its buckets
/// have leaders. Returns its info (the id scanners subscribe with).
pub async fn create_partition(
    admin: &FlussAdmin,
    path: &TablePath,
    partition_key: &str,
    value: &str,
) -> PartitionInfo {
    let spec = PartitionSpec::new(HashMap::from([(partition_key, value)]));
    admin
        .create_partition(path, &spec, false)
        .await
        .unwrap_or_else(|e| panic!("create partition {partition_key}={value} of {path}: {e}"));
    let info = admin
        .get_table_info(path)
        .await
        .unwrap_or_else(|e| panic!("get_table_info {path}: {e}"));
    let partition = poll_until(
        READY_TIMEOUT,
        READY_INTERVAL,
        &format!("partition {value} of {path} to be listed"),
        || async {
            let partitions = admin.list_partition_infos(path).await?;
            partitions
                .into_iter()
                .find(|p| p.get_partition_name() == value)
                .ok_or_else(|| fluss::error::Error::UnexpectedError {
                    message: format!("partition {value} not listed yet"),
                    source: None,
                })
        },
    )
    .await;
    wait_partition_ready(admin, path, value, info.get_num_buckets()).await;
    partition
}

/// Adds the partitions `partition_key=value` for each of `values`, in order, and waits until
/// each is listed and its buckets have leaders: [`create_partition`] for hundreds of
/// partitions, which waits for the listing once instead of once per partition. Returns the
/// infos of the partitions made (in the order of `values`) and, when the cluster refused one
/// (e.g. more than its `max.partition.num`), that refusal: the partitions before it stay.
pub async fn create_partitions(
    admin: &FlussAdmin,
    path: &TablePath,
    partition_key: &str,
    values: &[String],
) -> (Vec<PartitionInfo>, Option<String>) {
    let mut refused = None;
    let mut made = Vec::with_capacity(values.len());
    for value in values {
        let spec = PartitionSpec::new(HashMap::from([(partition_key, value.as_str())]));
        match admin.create_partition(path, &spec, false).await {
            Ok(()) => made.push(value.as_str()),
            Err(e) => {
                refused = Some(format!(
                    "partition {partition_key}={value} (after {}): {e}",
                    made.len()
                ));
                break;
            }
        }
    }
    let listed = poll_until(
        READY_TIMEOUT,
        READY_INTERVAL,
        &format!("{} new partitions of {path} to be listed", made.len()),
        || async {
            let partitions = admin.list_partition_infos(path).await?;
            let by_name: HashMap<String, PartitionInfo> = partitions
                .into_iter()
                .map(|p| (p.get_partition_name(), p))
                .collect();
            let missing = made.iter().filter(|v| !by_name.contains_key(**v)).count();
            if missing == 0 {
                Ok(by_name)
            } else {
                Err(fluss::error::Error::UnexpectedError {
                    message: format!("{missing} not listed yet"),
                    source: None,
                })
            }
        },
    )
    .await;
    let buckets = admin
        .get_table_info(path)
        .await
        .unwrap_or_else(|e| panic!("get_table_info {path}: {e}"))
        .get_num_buckets();
    let mut infos = Vec::with_capacity(made.len());
    for value in made {
        wait_partition_ready(admin, path, value, buckets).await;
        infos.push(listed[value].clone());
    }
    (infos, refused)
}

/// Drops the partition `partition_key=value`.
pub async fn drop_partition(
    admin: &FlussAdmin,
    path: &TablePath,
    partition_key: &str,
    value: &str,
) {
    let spec = PartitionSpec::new(HashMap::from([(partition_key, value)]));
    admin
        .drop_partition(path, &spec, false)
        .await
        .unwrap_or_else(|e| panic!("drop partition {partition_key}={value} of {path}: {e}"));
}

/// Waits until `list_offsets` answers for every bucket, i.e. each has a
/// leader. Right after `create_table` it fails with a non-retriable
/// "No leader found" `UnexpectedError` for a moment.
pub async fn wait_table_ready(admin: &FlussAdmin, path: &TablePath, buckets: i32) {
    poll_until(
        READY_TIMEOUT,
        READY_INTERVAL,
        &format!("leaders for the {buckets} bucket(s) of {path}"),
        || bucket_leaders(admin, path, buckets),
    )
    .await;
}

/// The latest offset of every bucket, which only a bucket's leader answers.
async fn bucket_leaders(
    admin: &FlussAdmin,
    path: &TablePath,
    buckets: i32,
) -> fluss::error::Result<HashMap<i32, i64>> {
    let ids: Vec<i32> = (0..buckets).collect();
    admin.list_offsets(path, &ids, OffsetSpec::Latest).await
}

/// [`wait_table_ready`] for one partition, named by its value.
pub async fn wait_partition_ready(
    admin: &FlussAdmin,
    path: &TablePath,
    partition_name: &str,
    buckets: i32,
) {
    let ids: Vec<i32> = (0..buckets).collect();
    let ready = poll_for(
        READY_TIMEOUT,
        READY_INTERVAL,
        &format!("leaders for the {buckets} bucket(s) of partition {partition_name} of {path}"),
        || admin.list_partition_offsets(path, partition_name, &ids, OffsetSpec::Latest),
    )
    .await;
    if let Err(timed_out) = ready {
        panic!(
            "{}the coordinator gives a new partition no leaders: {timed_out}",
            crate::ENVIRONMENT_FAULT
        );
    }
}

/// `id BIGINT, name STRING, amount DOUBLE`: the shape of [`sample_row`].
pub fn sample_log_schema() -> Schema {
    Schema::builder()
        .column("id", DataTypes::bigint())
        .column("name", DataTypes::string())
        .column("amount", DataTypes::double())
        .build()
        .expect("sample log schema")
}

/// [`sample_log_schema`] with `id` as primary key.
pub fn sample_pk_schema() -> Schema {
    Schema::builder()
        .column("id", DataTypes::bigint())
        .column("name", DataTypes::string())
        .column("amount", DataTypes::double())
        .primary_key(vec!["id"])
        .expect("primary key")
        .build()
        .expect("sample pk schema")
}

/// `id BIGINT, name STRING, amount DOUBLE, region STRING`, to partition by
/// `region`; with `primary_key` the key is `(id, region)`.
pub fn sample_partitioned_schema(primary_key: bool) -> Schema {
    let builder = Schema::builder()
        .column("id", DataTypes::bigint())
        .column("name", DataTypes::string())
        .column("amount", DataTypes::double())
        .column("region", DataTypes::string());
    let builder = if primary_key {
        builder
            .primary_key(vec!["id", "region"])
            .expect("primary key")
    } else {
        builder
    };
    builder.build().expect("sample partitioned schema")
}

/// The row `(id, "name-{id}", id * 1.5)` of [`sample_log_schema`] and
/// [`sample_pk_schema`]; values follow from `id` so readers can check them.
pub fn sample_row(id: i64) -> GenericRow<'static> {
    let mut row = GenericRow::new(3);
    row.set_field(0, id);
    row.set_field(1, sample_name(id));
    row.set_field(2, sample_amount(id));
    row
}

/// [`sample_row`] plus `region`, for [`sample_partitioned_schema`].
pub fn sample_partitioned_row(id: i64, region: &str) -> GenericRow<'static> {
    let mut row = GenericRow::new(4);
    row.set_field(0, id);
    row.set_field(1, sample_name(id));
    row.set_field(2, sample_amount(id));
    row.set_field(3, region.to_string());
    row
}

/// The `name` column of [`sample_row`].
pub fn sample_name(id: i64) -> String {
    format!("name-{id}")
}

/// The `amount` column of [`sample_row`].
pub fn sample_amount(id: i64) -> f64 {
    id as f64 * 1.5
}

/// `ALTER TABLE path ADD COLUMN name data_type` (appended, as Fluss 0.9 allows); `Err` holds
/// the server's refusal.
pub async fn add_column(
    admin: &FlussAdmin,
    path: &TablePath,
    name: &str,
    data_type: DataType,
) -> Result<(), String> {
    alter(admin, path, add_column_change(name, data_type)).await
}

/// The change that appends column `name` of `data_type`.
pub fn add_column_change(name: &str, data_type: DataType) -> AlterTableChanges {
    let json = data_type
        .serialize_json()
        .and_then(|value| {
            serde_json::to_vec(&value).map_err(|e| fluss::error::Error::JsonSerdeError {
                message: e.to_string(),
            })
        })
        .expect("a data type serialises to JSON");
    AlterTableChanges {
        add_columns: vec![AddColumn {
            column_name: name.to_owned(),
            data_type_json: json,
            comment: None,
            position: ColumnPositionType::Last,
        }],
        ..Default::default()
    }
}

/// Applies `changes` to `path`; `Err` holds the server's refusal.
pub async fn alter(
    admin: &FlussAdmin,
    path: &TablePath,
    changes: AlterTableChanges,
) -> Result<(), String> {
    admin
        .alter_table(path, false, changes)
        .await
        .map_err(|e| e.to_string())
}

/// Waits until the schema id of `path` is `id`.
pub async fn wait_schema_id(admin: &FlussAdmin, path: &TablePath, id: i32) {
    poll_until(
        READY_TIMEOUT,
        READY_INTERVAL,
        "the new schema id",
        || async {
            let info = admin
                .get_table_info(path)
                .await
                .map_err(|e| e.to_string())?;
            if info.get_schema_id() == id {
                Ok(())
            } else {
                Err(format!("schema id {}", info.get_schema_id()))
            }
        },
    )
    .await;
}

/// Waits (at most `within`) until the latest KV snapshot of every bucket of the primary-key
/// table `path` (of each of its partitions, if it is partitioned) holds all of its changes: its
/// log offset is the bucket's high watermark, so a `full` read then takes every row from the
/// snapshots and none from the changelog. The servers take one every `kv.snapshot.interval`
/// (1 s in the test clusters).
pub async fn kv_snapshots_caught_up(admin: &FlussAdmin, path: &TablePath, within: Duration) {
    let info = admin
        .get_table_info(path)
        .await
        .unwrap_or_else(|e| panic!("get_table_info {path}: {e}"));
    let buckets: Vec<i32> = (0..info.get_num_buckets()).collect();
    let partitions: Vec<Option<String>> = if info.is_partitioned() {
        admin
            .list_partition_infos(path)
            .await
            .unwrap_or_else(|e| panic!("list_partition_infos {path}: {e}"))
            .iter()
            .map(|p| Some(p.get_partition_name()))
            .collect()
    } else {
        vec![None]
    };
    // Partitions found caught up stay so (nothing writes meanwhile): each round asks only
    // about the rest.
    let behind = std::cell::RefCell::new(partitions);
    poll_until(
        within,
        Duration::from_millis(500),
        "a KV snapshot of every bucket at its high watermark",
        || async {
            let mut still = Vec::new();
            let mut first: Option<String> = None;
            let asked = behind.borrow().clone();
            for partition in &asked {
                let lag = bucket_snapshot_lag(admin, path, partition.as_deref(), &buckets)
                    .await
                    .map_err(|e| e.to_string())?;
                if !lag.is_empty() {
                    first.get_or_insert_with(|| {
                        format!(
                            "{} (bucket, snapshot offset, high watermark) behind: {lag:?}",
                            partition.as_deref().unwrap_or("the table")
                        )
                    });
                    still.push(partition.clone());
                }
            }
            let left = still.len();
            *behind.borrow_mut() = still;
            match first {
                None => Ok(()),
                Some(first) => Err(format!("{left} partition(s) behind, e.g. {first}")),
            }
        },
    )
    .await
}

/// The buckets of `partition` (or of the table) whose latest KV snapshot is not at the high
/// watermark: `(bucket, snapshot offset, high watermark)`.
async fn bucket_snapshot_lag(
    admin: &FlussAdmin,
    path: &TablePath,
    partition: Option<&str>,
    buckets: &[i32],
) -> fluss::error::Result<Vec<(i32, Option<i64>, Option<i64>)>> {
    let ends = match partition {
        None => {
            admin
                .list_offsets(path, buckets, OffsetSpec::Latest)
                .await?
        }
        Some(name) => {
            admin
                .list_partition_offsets(path, name, buckets, OffsetSpec::Latest)
                .await?
        }
    };
    let latest = admin.get_latest_kv_snapshots(path, partition).await?;
    let at = |bucket: i32| {
        latest
            .latest_snapshots
            .iter()
            .find(|s| s.bucket_id == bucket && s.snapshot_id.is_some())
            .and_then(|s| s.log_offset)
    };
    Ok(buckets
        .iter()
        .filter(|b| at(**b) != ends.get(b).copied())
        .map(|b| (*b, at(*b), ends.get(b).copied()))
        .collect())
}
