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

//! The SDK's error type and the helper that renders a full `source()` chain.

use snafu::Snafu;
use std::fmt::Write as _;

use crate::header_kind::HeaderKind;

/// Everything the SDK itself can fail at. Plugin errors stay the plugin's own type
/// (`Source::Error`) and are only rendered, with their chain, when logged.
#[derive(Debug, Snafu)]
#[snafu(visibility(pub(crate)))]
#[non_exhaustive]
pub enum Error {
    /// A header key or value of a variable-width kind is empty or too long.
    #[snafu(display(
        "header {kind:?} value: {len} bytes is outside 1..=255, the limit of Iggy's header format. shorten it"
    ))]
    HeaderLength {
        /// Kind of the rejected field.
        kind: HeaderKind,
        /// Its length in bytes.
        len: usize,
    },

    /// A fixed-width header kind got a value of another width.
    #[snafu(display(
        "header {kind:?} value: {len} bytes, but this kind is exactly {expected} bytes wide. use the typed constructor"
    ))]
    HeaderWidth {
        /// Kind of the rejected field.
        kind: HeaderKind,
        /// Its length in bytes.
        len: usize,
        /// The width the kind requires.
        expected: usize,
    },

    /// A `String` header does not hold UTF-8.
    #[snafu(display("header String value: not UTF-8. use HeaderKind::Raw for binary data"))]
    HeaderUtf8 {
        /// The UTF-8 error.
        source: std::str::Utf8Error,
    },

    /// A typed accessor was used on a header of another kind.
    #[snafu(display(
        "header value: is {actual:?}, not {expected:?}. check the kind before reading"
    ))]
    HeaderKindMismatch {
        /// Kind the accessor reads.
        expected: HeaderKind,
        /// Kind the header has.
        actual: HeaderKind,
    },

    /// `ConnectorState::serialize` failed.
    #[snafu(display(
        "connector state: cannot encode as MessagePack. check the state type's Serialize impl"
    ))]
    StateEncode {
        /// The rmp-serde error.
        source: rmp_serde::encode::Error,
    },

    /// `ConnectorState::deserialize` failed.
    #[snafu(display(
        "connector state: the saved bytes do not decode into the expected type. delete the state file to start fresh"
    ))]
    StateDecode {
        /// The rmp-serde error.
        source: rmp_serde::decode::Error,
    },

    /// A batch could not be postcard-encoded.
    #[snafu(display("batch: postcard encoding failed"))]
    BatchEncode {
        /// The postcard error.
        source: postcard::Error,
    },

    /// The runtime passed config bytes that are not UTF-8.
    #[snafu(display(
        "plugin {id}: config bytes are not UTF-8. the runtime always sends JSON text"
    ))]
    ConfigUtf8 {
        /// Plugin id.
        id: u32,
        /// The UTF-8 error.
        source: std::str::Utf8Error,
    },

    /// The plugin's Tokio runtime could not be built.
    #[snafu(display("plugin runtime: cannot start the Tokio runtime. check thread limits"))]
    RuntimeStart {
        /// The I/O error from the runtime builder.
        source: std::io::Error,
    },

    /// A task on the plugin runtime panicked.
    #[snafu(display("{op}: panicked: {message}"))]
    TaskPanic {
        /// Which operation.
        op: &'static str,
        /// The panic payload, if it was a string.
        message: String,
    },

    /// A task on the plugin runtime was cancelled or timed out.
    #[snafu(display("{op}: did not finish within {after:?}"))]
    TaskTimeout {
        /// Which operation.
        op: &'static str,
        /// How long we waited.
        after: std::time::Duration,
    },
}

/// Result with the SDK's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Renders an error followed by each `source()` in its chain, separated by `: `,
/// so one log line carries the whole cause.
pub fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(inner) = cause {
        let _ = write!(text, ": {inner}");
        cause = inner.source();
    }
    text
}

/// Text of a panic payload (`&str` or `String`), for log lines.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "non-string panic payload".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Snafu)]
    #[snafu(display("outer"))]
    struct Outer {
        source: std::io::Error,
    }

    #[test]
    fn chain_lists_every_cause() {
        let error = Outer {
            source: std::io::Error::other("inner"),
        };
        assert_eq!(chain(&error), "outer: inner");
    }

    #[test]
    fn panic_message_reads_str_and_string() {
        let a: Box<dyn std::any::Any + Send> = Box::new("static");
        let b: Box<dyn std::any::Any + Send> = Box::new(String::from("owned"));
        let c: Box<dyn std::any::Any + Send> = Box::new(7_u8);
        assert_eq!(panic_message(a.as_ref()), "static");
        assert_eq!(panic_message(b.as_ref()), "owned");
        assert_eq!(panic_message(c.as_ref()), "non-string panic payload");
    }
}
