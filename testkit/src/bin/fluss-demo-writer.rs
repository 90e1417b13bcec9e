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

//! `fluss-demo-writer BOOTSTRAP [DATABASE]`: creates two tables in DATABASE (`demo` unless
//! given) and keeps writing to them until it is stopped: `orders`, a 3-bucket log table that
//! gains a few rows every second, and `customers`, a 3-bucket primary-key table that sees
//! inserts, updates and deletes. The quickstart writes to `demo`; `scripts/local-fluss.sh`
//! writes to `fluss`, the tables the example connector files read.

use std::time::Duration;

use fluss::client::FlussConnection;
use fluss::config::Config;
use fluss::metadata::{DataTypes, Schema, TableDescriptor, TablePath};
use fluss::row::GenericRow;
use fluss_testkit::tables;

/// The database when none is given.
const DEFAULT_DATABASE: &str = "demo";

fn orders_schema() -> Schema {
    Schema::builder()
        .column("order_id", DataTypes::bigint())
        .column("customer_id", DataTypes::int())
        .column("item", DataTypes::string())
        .column("amount", DataTypes::decimal(10, 2))
        .column("ordered_at", DataTypes::timestamp_ltz_with_precision(3))
        .build()
        .expect("orders schema")
}

fn customers_schema() -> Schema {
    Schema::builder()
        .column("customer_id", DataTypes::int())
        .column("name", DataTypes::string())
        .column("tier", DataTypes::string())
        .primary_key(vec!["customer_id"])
        .expect("primary key")
        .build()
        .expect("customers schema")
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let bootstrap = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:9123".to_owned());
    let database = std::env::args()
        .nth(2)
        .unwrap_or_else(|| DEFAULT_DATABASE.to_owned());
    let conn = FlussConnection::new(Config {
        bootstrap_servers: bootstrap.clone(),
        ..Config::default()
    })
    .await
    .unwrap_or_else(|e| panic!("cannot connect to Fluss at {bootstrap}: {e}"));
    let admin = conn.get_admin().expect("admin");
    let orders = TablePath::new(&database, "orders");
    let customers = TablePath::new(&database, "customers");
    tables::ensure_database(&admin, &database).await;
    for (path, descriptor) in [
        (
            &orders,
            TableDescriptor::builder()
                .schema(orders_schema())
                .distributed_by(Some(3), Vec::new())
                .build()
                .expect("orders"),
        ),
        (
            &customers,
            TableDescriptor::builder()
                .schema(customers_schema())
                .distributed_by(Some(3), vec!["customer_id".to_owned()])
                .build()
                .expect("customers"),
        ),
    ] {
        // Right after start the tablet server may not be registered yet.
        fluss_testkit::poll_until(
            Duration::from_secs(60),
            Duration::from_millis(500),
            &format!("creating {path}"),
            || admin.create_table(path, &descriptor, true),
        )
        .await;
        tables::wait_table_ready(&admin, path, 3).await;
    }
    eprintln!(
        "fluss-demo-writer: writing to {database}.orders and {database}.customers at {bootstrap}"
    );
    write_forever(&conn, &orders, &customers).await;
}

async fn write_forever(conn: &FlussConnection, orders: &TablePath, customers: &TablePath) {
    let orders = conn.get_table(orders).await.expect("orders table");
    let customers = conn.get_table(customers).await.expect("customers table");
    let append = orders
        .new_append()
        .and_then(|a| a.create_writer())
        .expect("append writer");
    let upsert = customers
        .new_upsert()
        .and_then(|u| u.create_writer())
        .expect("upsert writer");
    let items = ["coffee", "tea", "cake", "bagel", "juice"];
    let tiers = ["bronze", "silver", "gold"];
    let mut order_id: i64 = 0;
    let mut tick: i64 = 0;
    loop {
        for _ in 0..3 {
            let customer = (order_id % 20) as i32;
            let mut row = GenericRow::new(5);
            row.set_field(0, order_id);
            row.set_field(1, customer);
            row.set_field(2, items[(order_id % 5) as usize]);
            row.set_field(
                3,
                fluss::row::Decimal::from_unscaled_long(250 + (order_id % 7) * 125, 10, 2)
                    .expect("decimal"),
            );
            row.set_field(
                4,
                fluss::row::TimestampLtz::from_millis_nanos(now_ms(), 0).expect("timestamp"),
            );
            drop(append.append(&row).expect("append"));
            order_id += 1;
        }
        let customer = (tick % 20) as i32;
        let mut row = GenericRow::new(3);
        row.set_field(0, customer);
        row.set_field(1, format!("customer-{customer}"));
        row.set_field(2, tiers[(tick % 3) as usize]);
        let write = if tick % 7 == 6 {
            upsert.delete(&row)
        } else {
            upsert.upsert(&row)
        };
        drop(write.expect("upsert"));
        append.flush().await.expect("flush orders");
        upsert.flush().await.expect("flush customers");
        tick += 1;
        tokio::time::sleep(Duration::from_millis(1000)).await;
    }
}
