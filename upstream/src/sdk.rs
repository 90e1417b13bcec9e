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

//! apache/iggy's connector SDK message types, which the other modules build. With
//! [`crate::connector`] (the binding), the only code that names `iggy_connector_sdk`; this module
//! imports nothing of the crate.

pub use iggy_common::{HeaderKey, HeaderValue};
pub use iggy_connector_sdk::source::SourceBatchResult;
pub use iggy_connector_sdk::{ConnectorState, ProducedMessage, ProducedMessages, Schema};
