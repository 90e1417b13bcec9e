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

//! The kinds of header values, a leaf module: the error type names them, and the header
//! types (which return that error) build on them.

use serde::{Deserialize, Serialize};

/// Type of a header key or value. Postcard writes the declaration index; Iggy's own
/// TLV code is that index + 1 ([`HeaderKind::as_code`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum HeaderKind {
    /// 1..=255 opaque bytes.
    Raw,
    /// 1..=255 bytes of UTF-8.
    String,
    /// One byte, 0 or 1.
    Bool,
    /// Little-endian `i8`.
    Int8,
    /// Little-endian `i16`.
    Int16,
    /// Little-endian `i32`.
    Int32,
    /// Little-endian `i64`.
    Int64,
    /// Little-endian `i128`.
    Int128,
    /// `u8`.
    Uint8,
    /// Little-endian `u16`.
    Uint16,
    /// Little-endian `u32`.
    Uint32,
    /// Little-endian `u64`.
    Uint64,
    /// Little-endian `u128`.
    Uint128,
    /// Little-endian `f32` bits.
    Float32,
    /// Little-endian `f64` bits.
    Float64,
}

impl HeaderKind {
    /// Iggy's TLV code (declaration index + 1); ordering by it equals ordering by kind.
    pub fn as_code(&self) -> u8 {
        *self as u8 + 1
    }

    /// Exact width of a fixed-width kind; `None` for `Raw` and `String`.
    pub fn fixed_width(&self) -> Option<usize> {
        match self {
            HeaderKind::Raw | HeaderKind::String => None,
            HeaderKind::Bool | HeaderKind::Int8 | HeaderKind::Uint8 => Some(1),
            HeaderKind::Int16 | HeaderKind::Uint16 => Some(2),
            HeaderKind::Int32 | HeaderKind::Uint32 | HeaderKind::Float32 => Some(4),
            HeaderKind::Int64 | HeaderKind::Uint64 | HeaderKind::Float64 => Some(8),
            HeaderKind::Int128 | HeaderKind::Uint128 => Some(16),
        }
    }
}
