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

//! The binding to the connector SDK: [`FlussSource`], whose methods are plain, as the SDK's
//! `Source`, and the runtime's C ABI. With [`crate::sdk`] (the message types), the only code that
//! names `iggy_connector_sdk`.
//!
//! The SDK in this repository (`sdk/`) polls the next batch while the runtime sends the previous
//! one where [`FlussSource::poll_ahead`] says it pays.

use crate::error::Error;
use crate::sdk::{ConnectorState, ProducedMessages, SourceBatchResult};
use crate::source::FlussSource;

impl iggy_connector_sdk::Source for FlussSource {
    type Error = Error;

    fn log_prefix(id: u32, config_json: &str) -> String {
        FlussSource::log_prefix(id, config_json)
    }

    async fn open(
        id: u32,
        config_json: &str,
        state: Option<ConnectorState>,
    ) -> Result<Self, Error> {
        FlussSource::open(id, config_json, state).await
    }

    async fn poll(&mut self) -> Result<ProducedMessages, Error> {
        FlussSource::poll(self).await
    }

    fn poll_ahead(&self) -> bool {
        FlussSource::poll_ahead(self)
    }

    async fn on_batch_result(&mut self, result: SourceBatchResult) -> Result<(), Error> {
        FlussSource::on_batch_result(self, result).await
    }

    async fn close(&mut self) -> Result<(), Error> {
        FlussSource::close(self).await
    }
}

iggy_connector_sdk::source_connector!(FlussSource);
