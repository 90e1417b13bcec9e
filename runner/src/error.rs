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

//! The runner's error type.

use snafu::Snafu;
use std::path::PathBuf;

/// Everything the runner can fail at.
#[derive(Debug, Snafu)]
#[snafu(visibility(pub(crate)))]
#[non_exhaustive]
pub enum Error {
    /// `dlopen` failed.
    #[snafu(display("plugin {}: cannot load the library. build it (cargo build) or fix the path", path.display()))]
    Load {
        /// Library path.
        path: PathBuf,
        /// libloading's error.
        source: libloading::Error,
    },

    /// One of the five required symbols is missing.
    #[snafu(display("plugin {}: symbol {name} is missing. is this an Iggy source plugin built with source_connector!?", path.display()))]
    Symbol {
        /// Library path.
        path: PathBuf,
        /// Missing symbol.
        name: &'static str,
        /// libloading's error.
        source: libloading::Error,
    },

    /// `iggy_source_open` returned non-zero.
    #[snafu(display(
        "plugin {id}: iggy_source_open returned {code}. see the plugin's ERROR line above"
    ))]
    OpenFailed {
        /// Plugin id.
        id: u32,
        /// The return code.
        code: i32,
    },

    /// A file could not be read.
    #[snafu(display("{}: cannot read: {source}", path.display()))]
    Read {
        /// The file.
        path: PathBuf,
        /// I/O error.
        source: std::io::Error,
    },

    /// A file could not be written.
    #[snafu(display("{}: cannot write: {source}. check the directory and permissions", path.display()))]
    Write {
        /// The file.
        path: PathBuf,
        /// I/O error.
        source: std::io::Error,
    },

    /// The connector file is not valid TOML of the runtime's format.
    #[snafu(display("{}: not a connector file: {source}", path.display()))]
    ConnectorParse {
        /// The file.
        path: PathBuf,
        /// TOML error.
        source: toml::de::Error,
    },

    /// The connector file describes something the runner cannot run.
    #[snafu(display("{}: {reason}", path.display()))]
    ConnectorInvalid {
        /// The file.
        path: PathBuf,
        /// What is wrong and how to fix it.
        reason: String,
    },

    /// The plugin library was not found.
    #[snafu(display(
        "plugin {path}: not found; searched {searched}. build the plugin or pass --plugin"
    ))]
    PluginNotFound {
        /// Path as written.
        path: String,
        /// Every candidate tried.
        searched: String,
    },

    /// Bad command line.
    #[snafu(display("{message}. run with --help"))]
    Usage {
        /// What is wrong.
        message: String,
    },

    /// Writing output failed.
    #[snafu(display("output: {source}"))]
    Output {
        /// I/O error.
        source: std::io::Error,
    },
}

/// Result with the runner's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
