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

//! Scraping the plugin's Prometheus endpoint (`metrics_address`) the way Prometheus does,
//! with the samples parsed into name, labels and value.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// One series: metric name and labels.
pub type Series = (String, BTreeMap<String, String>);

/// Every sample of one scrape.
pub type Samples = BTreeMap<Series, f64>;

/// A port of 127.0.0.1 nothing listens on right now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// `GET /metrics` on 127.0.0.1:`port`: the status line and every sample (the answer must
/// declare the Prometheus text format).
pub fn scrape(port: u16) -> std::io::Result<(String, Samples)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    stream.write_all(b"GET /metrics HTTP/1.1\r\nHost: test\r\n\r\n")?;
    let mut text = String::new();
    stream.read_to_string(&mut text)?;
    let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP response");
    assert!(
        head.contains("Content-Type: text/plain; version=0.0.4"),
        "{head}"
    );
    let status = head.lines().next().unwrap_or_default().to_owned();
    Ok((status, parse(body)))
}

/// The samples of a Prometheus text exposition (label values without `",` in them).
pub fn parse(body: &str) -> Samples {
    body.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|line| {
            let (series, value) = line.rsplit_once(' ').expect("name and value");
            let (name, labels) = match series.split_once('{') {
                Some((name, labels)) => (name, labels.trim_end_matches('}')),
                None => (series, ""),
            };
            let labels = labels
                .split("\",")
                .filter(|l| !l.is_empty())
                .map(|pair| {
                    let (k, v) = pair.split_once('=').expect("label=value");
                    (k.to_owned(), v.trim_matches('"').to_owned())
                })
                .collect();
            ((name.to_owned(), labels), value.parse().expect("a number"))
        })
        .collect()
}

/// The samples of `name` whose `connector` label is `connector`, by their `bucket` label
/// (`""` for per-connector metrics).
pub fn of(samples: &Samples, name: &str, connector: &str) -> BTreeMap<String, f64> {
    samples
        .iter()
        .filter(|((n, l), _)| n == name && l.get("connector").is_some_and(|c| c == connector))
        .map(|((_, l), v)| (l.get("bucket").cloned().unwrap_or_default(), *v))
        .collect()
}

/// The one sample of a per-connector metric.
pub fn one(samples: &Samples, name: &str, connector: &str) -> f64 {
    let found = of(samples, name, connector);
    assert_eq!(found.len(), 1, "{name} of {connector}: {found:?}");
    found.into_values().next().unwrap_or_default()
}

/// Scrapes until `done` holds; panics with the last scrape after `within`.
pub fn scrape_until(
    port: u16,
    within: Duration,
    what: &str,
    done: impl Fn(&Samples) -> bool,
) -> Samples {
    let started = Instant::now();
    loop {
        let (status, samples) = scrape(port).expect("the endpoint answers");
        assert_eq!(status, "HTTP/1.1 200 OK");
        if done(&samples) {
            return samples;
        }
        assert!(
            started.elapsed() < within,
            "{what} not seen within {within:?}; last scrape: {samples:#?}"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}
