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

//! Forwards `tracing` events to the runtime's log callback (contract §2.4).
//!
//! Spans do not cross the callback and the runtime only prints the text it gets, so
//! the event's fields are rendered into the text: `batch handed over rows=3`.
//! Plugin-side filter: `RUST_LOG` in `tracing_subscriber::filter::Targets` syntax
//! (`info,iggy_connector_fluss_source=debug`), default INFO; an unparsable value falls
//! back to INFO.

use std::fmt::{self, Write as _};
use std::sync::Once;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

/// `void (*)(uint8_t level, const uint8_t *target, size_t target_len,
/// const uint8_t *message, size_t message_len)`: the runtime's logger.
pub type LogCallback = extern "C" fn(u8, *const u8, usize, *const u8, usize);

static INSTALL: Once = Once::new();

/// Installs the forwarding layer as the global subscriber; only the first call acts
/// (the runtime passes the same callback to every open).
pub fn install(callback: LogCallback) {
    INSTALL.call_once(|| {
        let subscriber = tracing_subscriber::registry()
            .with(filter_from_env())
            .with(CallbackLayer::new(callback));
        // Fails only if the plugin installed its own subscriber first; keep theirs.
        let _ = tracing::subscriber::set_global_default(subscriber);
    });
}

fn filter_from_env() -> Targets {
    std::env::var("RUST_LOG")
        .ok()
        .and_then(|text| text.parse::<Targets>().ok())
        .unwrap_or_else(|| Targets::new().with_default(Level::INFO))
}

/// Runtime level code: 0 TRACE, 1 DEBUG, 2 INFO, 3 WARN, 4 ERROR.
pub fn level_code(level: &Level) -> u8 {
    match *level {
        Level::TRACE => 0,
        Level::DEBUG => 1,
        Level::INFO => 2,
        Level::WARN => 3,
        Level::ERROR => 4,
    }
}

/// A layer that hands each event to a [`LogCallback`].
pub struct CallbackLayer {
    callback: LogCallback,
}

impl CallbackLayer {
    /// Forwards to `callback`.
    pub fn new(callback: LogCallback) -> Self {
        Self { callback }
    }
}

impl<S: Subscriber> Layer<S> for CallbackLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let text = render(event);
        let metadata = event.metadata();
        let target = metadata.target();
        (self.callback)(
            level_code(metadata.level()),
            target.as_ptr(),
            target.len(),
            text.as_ptr(),
            text.len(),
        );
    }
}

/// The event's message followed by its other fields as ` key=value`.
pub fn render(event: &Event<'_>) -> String {
    let mut fields = FieldText::default();
    event.record(&mut fields);
    if fields.message.is_empty() {
        fields.rest.trim_start().to_owned()
    } else {
        fields.message + &fields.rest
    }
}

#[derive(Default)]
struct FieldText {
    message: String,
    rest: String,
}

impl Visit for FieldText {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message.push_str(value);
        } else if value.is_empty() || value.contains([' ', '"', '=']) {
            let _ = write!(self.rest, " {}={value:?}", field.name());
        } else {
            let _ = write!(self.rest, " {}={value}", field.name());
        }
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        let text = crate::error::chain(value);
        self.record_str(field, &text);
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        } else {
            let _ = write!(self.rest, " {}={value:?}", field.name());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    static LINES: Mutex<Vec<(u8, String, String)>> = Mutex::new(Vec::new());

    extern "C" fn capture(level: u8, t: *const u8, tl: usize, m: *const u8, ml: usize) {
        // SAFETY: the layer passes pointers into live &str values.
        let (target, message) = unsafe {
            (
                std::slice::from_raw_parts(t, tl),
                std::slice::from_raw_parts(m, ml),
            )
        };
        LINES.lock().unwrap().push((
            level,
            String::from_utf8_lossy(target).into_owned(),
            String::from_utf8_lossy(message).into_owned(),
        ));
    }

    fn captured(f: impl FnOnce()) -> Vec<(u8, String, String)> {
        let subscriber = tracing_subscriber::registry()
            .with(Targets::new().with_default(Level::TRACE))
            .with(CallbackLayer::new(capture));
        LINES.lock().unwrap().clear();
        tracing::subscriber::with_default(subscriber, f);
        std::mem::take(&mut *LINES.lock().unwrap())
    }

    #[test]
    fn fields_follow_the_message() {
        let lines = captured(|| {
            tracing::debug!(rows = 3, "batch handed over");
            tracing::warn!(table = "fluss.orders", reason = "no leader", "retrying");
            tracing::error!(ok = true, "plugin {}: failed", 3);
            tracing::info!(only = 1);
        });
        let texts: Vec<&str> = lines.iter().map(|l| l.2.as_str()).collect();
        assert_eq!(
            texts,
            [
                "batch handed over rows=3",
                "retrying table=fluss.orders reason=\"no leader\"",
                "plugin 3: failed ok=true",
                "only=1",
            ]
        );
        let levels: Vec<u8> = lines.iter().map(|l| l.0).collect();
        assert_eq!(levels, [1, 3, 4, 2]);
        assert!(lines[0].1.ends_with("log::tests"), "target {}", lines[0].1);
    }

    #[test]
    fn error_fields_carry_their_chain() {
        #[derive(Debug, snafu::Snafu)]
        #[snafu(display("outer"))]
        struct Outer {
            source: std::io::Error,
        }
        let error = Outer {
            source: std::io::Error::other("inner"),
        };
        let lines = captured(|| {
            tracing::error!(
                error = &error as &(dyn std::error::Error + 'static),
                "poll failed"
            )
        });
        assert_eq!(lines[0].2, "poll failed error=\"outer: inner\"");
    }

    #[test]
    fn level_codes_match_the_runtime() {
        assert_eq!(level_code(&Level::TRACE), 0);
        assert_eq!(level_code(&Level::ERROR), 4);
    }
}
