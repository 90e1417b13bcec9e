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

//! Columns added to a log table while the real runtime streams it as JSON (`payload_schema =
//! "raw"`, so the payload bytes are the plugin's): each row arrives with the columns of the
//! schema it was written with, and the runtime log holds one INFO line per change.

use std::collections::BTreeMap;

use fluss_testkit::fluss::metadata::{DataTypes, Schema};
use fluss_testkit::fluss::row::GenericRow;
use fluss_testkit::iggy::Stop;
use fluss_testkit::{Cluster, rt, tables, write};
use serde_json::json;

use crate::fixture::{World, connector, create_table, lines_with};

const TOPIC: &str = "evolving";
const KEY: &str = "fluss_evolving";

/// Row `id` of schema `version` (1: `id, name`; 2: `+ c1 STRING`; 3: `+ c2 INT`) and its
/// expected payload.
fn row(id: i64, version: i32) -> (GenericRow<'static>, String) {
    let mut row = GenericRow::new(version as usize + 1);
    row.set_field(0, id);
    row.set_field(1, format!("n-{id}"));
    let mut payload = format!(r#"{{"id":{id},"name":"n-{id}""#);
    if version >= 2 {
        row.set_field(2, format!("c1-{id}"));
        payload.push_str(&format!(r#","c1":"c1-{id}""#));
    }
    if version >= 3 {
        row.set_field(3, id as i32 * 10);
        payload.push_str(&format!(r#","c2":{}"#, id * 10));
    }
    payload.push('}');
    (row, payload)
}

#[test]
fn columns_added_while_the_runtime_streams_arrive_in_the_next_rows() {
    let world = World::new("schema_changes");
    let schema = Schema::builder()
        .column("id", DataTypes::bigint())
        .column("name", DataTypes::string())
        .build()
        .expect("schema");
    let (table, _) = create_table("schema_runtime", schema, 2);
    let mut expected = BTreeMap::new();
    let mut write = |ids: std::ops::Range<i64>, version: i32| {
        let rows: Vec<_> = ids.map(|id| (id, row(id, version))).collect();
        for (id, (_, payload)) in &rows {
            expected.insert(*id, (payload.clone(), version));
        }
        // One at a time: right after an `ALTER TABLE` a tablet server may not know the new
        // schema yet (see `write::append_rows_after_schema_change`).
        rt().block_on(async {
            let connection = Cluster::shared().connection().await;
            write::append_rows_after_schema_change(
                &connection,
                &table,
                rows.into_iter().map(|(_, (row, _))| row),
            )
            .await;
        });
    };
    write(0..20, 1);
    let headers = ["fluss_bucket", "fluss_offset", "fluss_schema_id"];
    let mut runtime = world.runtime(&[connector(
        KEY,
        &table,
        TOPIC,
        "raw",
        json!({"payload_schema": "raw", "headers": headers}),
    )]);
    world.wait_for(TOPIC, "the first rows", |m| m.len() >= 20);
    for (version, name, data_type) in [(2, "c1", DataTypes::string()), (3, "c2", DataTypes::int())]
    {
        rt().block_on(async {
            let connection = Cluster::shared().connection().await;
            let admin = connection.get_admin().expect("admin");
            tables::add_column(&admin, &table, name, data_type)
                .await
                .unwrap_or_else(|e| panic!("ADD COLUMN {name}: {e}"));
            tables::wait_schema_id(&admin, &table, version).await;
        });
        let from = version as i64 * 20 - 20;
        write(from..from + 20, version);
        world.wait_for(TOPIC, &format!("the rows of schema {version}"), |m| {
            m.len() >= from as usize + 20
        });
    }
    runtime.stop(Stop::Interrupt);
    let messages = world.messages(TOPIC);
    let got: BTreeMap<i64, (String, i32)> = messages
        .iter()
        .map(|m| {
            let payload = String::from_utf8(m.payload.clone()).expect("UTF-8 JSON");
            let value: serde_json::Value = serde_json::from_str(&payload).expect("JSON");
            let schema_id = m
                .header("fluss_schema_id")
                .as_i32()
                .expect("fluss_schema_id is an int32 header");
            (value["id"].as_i64().expect("id"), (payload, schema_id))
        })
        .collect();
    assert_eq!(got.len(), messages.len(), "no row twice");
    assert_eq!(
        got, expected,
        "every row with the columns of its schema, exactly"
    );
    let log = runtime.log();
    assert_eq!(
        lines_with(&log, "schema changed from id 1 to id 2: columns added: c1;").len(),
        1,
        "one INFO line for the first change"
    );
    assert_eq!(
        lines_with(&log, "schema changed from id 2 to id 3: columns added: c2;").len(),
        1,
        "one INFO line for the second change"
    );
}
