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

//! Iggy's binary message format, as `iggy message poll --output-file` writes it.

use super::*;

/// A typed user-header value (Iggy's `HeaderKind`s).
#[derive(Debug, Clone, PartialEq)]
pub enum HeaderValue {
    /// Raw bytes.
    Raw(Vec<u8>),
    /// UTF-8 text.
    String(String),
    /// A boolean.
    Bool(bool),
    /// int8.
    Int8(i8),
    /// int16.
    Int16(i16),
    /// int32.
    Int32(i32),
    /// int64.
    Int64(i64),
    /// int128.
    Int128(i128),
    /// uint8.
    Uint8(u8),
    /// uint16.
    Uint16(u16),
    /// uint32.
    Uint32(u32),
    /// uint64.
    Uint64(u64),
    /// uint128.
    Uint128(u128),
    /// float32.
    Float32(f32),
    /// float64.
    Float64(f64),
}

impl HeaderValue {
    /// The value of an int32 header.
    pub fn as_i32(&self) -> Option<i32> {
        match self {
            HeaderValue::Int32(v) => Some(*v),
            _ => None,
        }
    }

    /// The value of an int64 header.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            HeaderValue::Int64(v) => Some(*v),
            _ => None,
        }
    }

    /// The value of a string header.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            HeaderValue::String(v) => Some(v),
            _ => None,
        }
    }

    /// Decodes a value of kind `code` (Iggy's `HeaderKind::as_code`) from its little-endian
    /// bytes.
    fn decode(code: u8, bytes: &[u8]) -> Result<HeaderValue, String> {
        fn fixed<const N: usize>(bytes: &[u8]) -> Result<[u8; N], String> {
            bytes
                .try_into()
                .map_err(|_| format!("{} bytes where {N} were expected", bytes.len()))
        }
        Ok(match code {
            1 => HeaderValue::Raw(bytes.to_vec()),
            2 => HeaderValue::String(
                String::from_utf8(bytes.to_vec()).map_err(|e| format!("string header: {e}"))?,
            ),
            3 => HeaderValue::Bool(fixed::<1>(bytes)?[0] != 0),
            4 => HeaderValue::Int8(i8::from_le_bytes(fixed(bytes)?)),
            5 => HeaderValue::Int16(i16::from_le_bytes(fixed(bytes)?)),
            6 => HeaderValue::Int32(i32::from_le_bytes(fixed(bytes)?)),
            7 => HeaderValue::Int64(i64::from_le_bytes(fixed(bytes)?)),
            8 => HeaderValue::Int128(i128::from_le_bytes(fixed(bytes)?)),
            9 => HeaderValue::Uint8(u8::from_le_bytes(fixed(bytes)?)),
            10 => HeaderValue::Uint16(u16::from_le_bytes(fixed(bytes)?)),
            11 => HeaderValue::Uint32(u32::from_le_bytes(fixed(bytes)?)),
            12 => HeaderValue::Uint64(u64::from_le_bytes(fixed(bytes)?)),
            13 => HeaderValue::Uint128(u128::from_le_bytes(fixed(bytes)?)),
            14 => HeaderValue::Float32(f32::from_le_bytes(fixed(bytes)?)),
            15 => HeaderValue::Float64(f64::from_le_bytes(fixed(bytes)?)),
            other => return Err(format!("unknown header kind {other}")),
        })
    }
}

/// One message as stored in an Iggy topic.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// The partition it was read from (0 when parsed from bytes alone).
    pub partition: u32,
    /// Offset within the partition.
    pub offset: u64,
    /// The message id (the producer's, or a random one if it sent 0).
    pub id: u128,
    /// Server timestamp, epoch µs.
    pub timestamp: u64,
    /// The producer's timestamp, epoch µs.
    pub origin_timestamp: u64,
    /// Checksum as stored.
    pub checksum: u64,
    /// The payload bytes.
    pub payload: Vec<u8>,
    /// User headers by name (every header this plugin writes has a string key).
    pub headers: BTreeMap<String, HeaderValue>,
}

impl Message {
    /// The header `name`; panics naming the message when it is missing.
    pub fn header(&self, name: &str) -> &HeaderValue {
        self.headers.get(name).unwrap_or_else(|| {
            panic!(
                "message {} (partition {}, offset {}) has no header {name}: {:?}",
                self.id, self.partition, self.offset, self.headers
            )
        })
    }
}

/// Little-endian integer at `at` of `bytes`, `N` bytes wide.
fn le<const N: usize>(bytes: &[u8], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(&bytes[at..at + N]);
    out
}

/// Decodes messages in Iggy's binary format: per message a 64-byte header (checksum u64,
/// id u128, offset u64, timestamp u64, origin timestamp u64, user-headers length u32,
/// payload length u32, 8 reserved bytes; all little-endian), the payload, then the user
/// headers, each as key kind u8, key length u32, key, value kind u8, value length u32, value.
pub fn parse_messages(bytes: &[u8]) -> Result<Vec<Message>, String> {
    let mut messages = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let header = bytes
            .get(at..at + MESSAGE_HEADER_SIZE)
            .ok_or_else(|| format!("truncated message header at byte {at}"))?;
        let headers_len = u32::from_le_bytes(le(header, 48)) as usize;
        let payload_len = u32::from_le_bytes(le(header, 52)) as usize;
        let body = at + MESSAGE_HEADER_SIZE;
        let payload = bytes
            .get(body..body + payload_len)
            .ok_or_else(|| format!("truncated payload at byte {body}"))?;
        let user = bytes
            .get(body + payload_len..body + payload_len + headers_len)
            .ok_or_else(|| format!("truncated user headers at byte {}", body + payload_len))?;
        messages.push(Message {
            partition: 0,
            checksum: u64::from_le_bytes(le(header, 0)),
            id: u128::from_le_bytes(le(header, 8)),
            offset: u64::from_le_bytes(le(header, 24)),
            timestamp: u64::from_le_bytes(le(header, 32)),
            origin_timestamp: u64::from_le_bytes(le(header, 40)),
            payload: payload.to_vec(),
            headers: parse_headers(user)?,
        });
        at = body + payload_len + headers_len;
    }
    Ok(messages)
}

fn parse_headers(mut bytes: &[u8]) -> Result<BTreeMap<String, HeaderValue>, String> {
    fn field<'a>(bytes: &mut &'a [u8]) -> Result<(u8, &'a [u8]), String> {
        if bytes.len() < 5 {
            return Err(format!(
                "truncated header field ({} bytes left)",
                bytes.len()
            ));
        }
        let kind = bytes[0];
        let len = u32::from_le_bytes(le(bytes, 1)) as usize;
        let value = bytes
            .get(5..5 + len)
            .ok_or_else(|| format!("header field of {len} bytes is truncated"))?;
        *bytes = &bytes[5 + len..];
        Ok((kind, value))
    }
    let mut headers = BTreeMap::new();
    while !bytes.is_empty() {
        let (_, key) = field(&mut bytes)?;
        let (kind, value) = field(&mut bytes)?;
        headers.insert(
            String::from_utf8_lossy(key).into_owned(),
            HeaderValue::decode(kind, value)?,
        );
    }
    Ok(headers)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two messages as `iggy message poll --output-file` wrote them from a real server:
    /// `iggy message send --headers k:int32:5 s1 t1 hello world`.
    const POLLED: &str = "a5ed6601995f35756374cc37a672437ba06e4c9f6332d5fc0000000000000000\
        c61589f88e610600ba1389f88e6106000f000000050000000000000000000000\
        68656c6c6f02010000006b06040000000500000060d2a4f4a9e257992e8cdad7\
        338d40079a05268d18434bfa0100000000000000c61589f88e610600bc1389f8\
        8e6106000f000000050000000000000000000000776f726c6402010000006b06\
        0400000005000000";

    fn unhex(hex: &str) -> Vec<u8> {
        (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn parses_what_the_cli_wrote() {
        let messages = parse_messages(&unhex(POLLED)).unwrap();
        assert_eq!(messages.len(), 2);
        assert_eq!(messages[0].payload, b"hello");
        assert_eq!(messages[1].payload, b"world");
        assert_eq!((messages[0].offset, messages[1].offset), (0, 1));
        assert_ne!(messages[0].id, messages[1].id);
        for m in &messages {
            assert_eq!(m.header("k"), &HeaderValue::Int32(5));
            assert_eq!(m.headers.len(), 1);
            assert!(m.origin_timestamp > 1_700_000_000_000_000, "epoch µs");
        }
    }

    #[test]
    fn truncated_input_is_an_error() {
        let bytes = unhex(POLLED);
        for cut in [1, 63, 64, 68, 70, 80] {
            assert!(parse_messages(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        assert!(parse_messages(&[]).unwrap().is_empty());
    }

    #[test]
    fn header_kinds_decode_little_endian() {
        assert_eq!(
            HeaderValue::decode(7, &(-2i64).to_le_bytes()),
            Ok(HeaderValue::Int64(-2))
        );
        assert_eq!(
            HeaderValue::decode(2, b"+I"),
            Ok(HeaderValue::String("+I".into()))
        );
        assert!(HeaderValue::decode(6, &[1, 2]).is_err());
        assert!(HeaderValue::decode(99, &[]).is_err());
    }

    #[test]
    fn connector_file_names_the_plugin_without_its_suffix() {
        let mut connector = SourceConnector::new(
            "fluss_a",
            Path::new("/t/libiggy_connector_fluss_source.so"),
            "s",
            "t",
            "json",
            serde_json::json!({ "table": "orders", "batch_size": 10 }),
        );
        connector.linger_time = Some("1ms".into());
        let parsed: toml::Value = toml::from_str(&connector.to_toml()).unwrap();
        assert_eq!(parsed["type"].as_str(), Some("source"));
        assert_eq!(
            parsed["path"].as_str(),
            Some("/t/libiggy_connector_fluss_source")
        );
        assert_eq!(parsed["streams"][0]["linger_time"].as_str(), Some("1ms"));
        assert!(parsed["streams"][0].get("batch_length").is_none());
        assert_eq!(parsed["plugin_config"]["batch_size"].as_integer(), Some(10));
    }

    #[test]
    fn colours_are_stripped_from_logs() {
        let path = std::env::temp_dir().join(format!("iggy-log-{}.txt", std::process::id()));
        fs::write(
            &path,
            "\u{1b}[2m09:15\u{1b}[0m \u{1b}[32m INFO\u{1b}[0m Rejected batch\n",
        )
        .unwrap();
        assert_eq!(read_log(&path), "09:15  INFO Rejected batch\n");
        let _ = fs::remove_file(path);
    }
}
