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

//! `fluss-source-runner`: runs one source connector file through the plugin's C ABI and
//! prints one JSON line per delivered message. See `--help`.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

use fluss_source_runner::connector::{ConnectorFile, resolve_plugin_path};
use fluss_source_runner::error::{Error, Result};
use fluss_source_runner::payload::StreamSchema;
use fluss_source_runner::run::{Output, RunOptions, install_signal_handlers, run};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

const USAGE: &str = "\
usage: fluss-source-runner --connector FILE [options]

Loads the source plugin named by a connector file (the Iggy connectors runtime's
format) and delivers its batches: one JSON line per message, state saved before
each Ack. Payloads go through the stream's encoder (the last [[streams]] schema:
json, raw or text) as in the runtime; a batch the runtime would reject is Nacked
with its `Rejected source batch` line on stderr. Stops on SIGINT/SIGTERM or a limit
below.

options:
  --connector FILE     connector TOML file (required)
  --plugin PATH        plugin library; default: the file's `path`, resolved like the runtime
  --state FILE         state file; default local_state/source_<key>.state
  --output FILE|-      message lines; default - (stdout)
  --nack-every N       Nack every N-th batch (no lines, no state), as a failed send would
  --max-messages N     stop after acking the batch that reaches N messages
  --max-batches N      stop after N batches
  --idle-exit DURATION stop when no batch arrives for DURATION (e.g. 2s, 500ms)
  -h, --help           this text";

#[derive(Debug, Default)]
struct Args {
    connector: Option<PathBuf>,
    plugin: Option<PathBuf>,
    state: Option<PathBuf>,
    output: Option<String>,
    nack_every: Option<u64>,
    max_messages: Option<u64>,
    max_batches: Option<u64>,
    idle_exit: Option<Duration>,
    help: bool,
}

fn usage(message: impl Into<String>) -> Error {
    Error::Usage {
        message: message.into(),
    }
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Args> {
    let mut parsed = Args::default();
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => {
                (flag.to_owned(), Some(value.to_owned()))
            }
            _ => (arg.clone(), None),
        };
        if flag == "-h" || flag == "--help" {
            parsed.help = true;
            continue;
        }
        let mut value = || {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| usage(format!("{flag} needs a value")))
        };
        let number = |text: String| {
            text.parse::<u64>()
                .map_err(|_| usage(format!("{flag}: {text:?} is not a whole number")))
        };
        match flag.as_str() {
            "--connector" => parsed.connector = Some(value()?.into()),
            "--plugin" => parsed.plugin = Some(value()?.into()),
            "--state" => parsed.state = Some(value()?.into()),
            "--output" => parsed.output = Some(value()?),
            "--nack-every" => parsed.nack_every = Some(number(value()?)?),
            "--max-messages" => parsed.max_messages = Some(number(value()?)?),
            "--max-batches" => parsed.max_batches = Some(number(value()?)?),
            "--idle-exit" => {
                let text = value()?;
                let duration = humantime::parse_duration(&text).map_err(|_| {
                    usage(format!(
                        "--idle-exit: {text:?} is not a duration; use e.g. 2s or 500ms"
                    ))
                })?;
                parsed.idle_exit = Some(duration);
            }
            other => return Err(usage(format!("unknown argument {other:?}"))),
        }
    }
    Ok(parsed)
}

fn options(args: Args) -> Result<RunOptions> {
    let connector_path = args
        .connector
        .ok_or_else(|| usage("--connector FILE is required"))?;
    let connector = ConnectorFile::load(&connector_path)?;
    for note in connector.notes() {
        eprintln!("NOTE runner: {note}");
    }
    if !connector.enabled {
        eprintln!(
            "NOTE runner: the connector is disabled (enabled = false); the runtime would skip it, the runner runs it anyway"
        );
    }
    let stream_schema = match connector.streams.last() {
        Some(stream) => Some(StreamSchema::try_from(stream.schema).map_err(|error| {
            Error::ConnectorInvalid {
                path: connector_path.clone(),
                reason: error.to_string(),
            }
        })?),
        None => {
            eprintln!(
                "NOTE runner: no [[streams]]: the runtime refuses such a source (\"No streams configured for source\"); the runner keeps each batch's own schema"
            );
            None
        }
    };
    let plugin = match args.plugin {
        Some(plugin) => plugin,
        None => resolve_plugin_path(&connector.path)?,
    };
    Ok(RunOptions {
        plugin,
        config_json: connector.plugin_config_json(std::env::vars()),
        state_path: args.state.unwrap_or_else(|| {
            PathBuf::from(format!("local_state/source_{}.state", connector.key))
        }),
        output: match args.output.as_deref() {
            None | Some("-") => Output::Stdout,
            Some(path) => Output::File(path.into()),
        },
        stream_schema,
        nack_every: args.nack_every,
        max_messages: args.max_messages,
        max_batches: args.max_batches,
        idle_exit: args.idle_exit,
    })
}

fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(error) => {
            eprintln!("ERROR runner: {error}");
            return ExitCode::from(2);
        }
    };
    if args.help {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let options = match options(args) {
        Ok(options) => options,
        Err(error) => {
            eprintln!("ERROR runner: {error}");
            return ExitCode::from(2);
        }
    };
    install_signal_handlers();
    match run(options) {
        Ok(summary) => {
            eprintln!(
                "INFO runner: stopped ({:?}): {} batches, {} acked, {} nacked ({} rejected), {} messages",
                summary.stopped_by,
                summary.batches,
                summary.acked,
                summary.nacked,
                summary.rejected,
                summary.messages
            );
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("ERROR runner: {error}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(text: &str) -> Result<Args> {
        parse_args(text.split_whitespace().map(str::to_owned))
    }

    #[test]
    fn parses_every_flag() {
        let parsed = args("--connector c.toml --plugin p.so --state s --output=- --nack-every 3 --max-messages 10 --max-batches 2 --idle-exit 1s").unwrap();
        assert_eq!(parsed.connector, Some(PathBuf::from("c.toml")));
        assert_eq!(parsed.output.as_deref(), Some("-"));
        assert_eq!(parsed.nack_every, Some(3));
        assert_eq!(parsed.idle_exit, Some(Duration::from_secs(1)));
    }

    #[test]
    fn rejects_bad_input() {
        assert!(
            args("--max-messages ten")
                .unwrap_err()
                .to_string()
                .contains("whole number")
        );
        assert!(args("--bogus").is_err());
        assert!(args("--state").is_err());
        assert!(args("--idle-exit soon").is_err());
    }
}
