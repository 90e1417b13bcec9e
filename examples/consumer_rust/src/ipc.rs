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

//! Arrow IPC payloads decoded over the message's own bytes.
//!
//! Each payload is one IPC stream (schema, one record batch, end marker). `Buffer::from(Bytes)`
//! wraps the bytes the Iggy client received, without a copy, and a `StreamDecoder` that
//! *requires* alignment builds the arrays as views into them: where arrow-ipc would otherwise
//! copy a misaligned buffer in silence, it fails instead, so a decode that succeeds copied
//! nothing. The IPC format pads every buffer to 8 bytes from the stream's start, so a payload
//! that starts 8-byte aligned decodes in place; one that does not (the client packs messages
//! back to back), or a type that needs 16 (DECIMAL as `Decimal128`), is copied once, whole,
//! into an aligned buffer and decoded from there. Compressed payloads (`lz4`, `zstd`) are
//! decompressed into new buffers: never zero-copy.

use arrow_array::RecordBatch;
use arrow_buffer::Buffer;
use arrow_ipc::reader::StreamDecoder;
use arrow_schema::ArrowError;

/// The alignment IPC keeps for every buffer, relative to the stream's start.
const IPC_ALIGNMENT: usize = 8;

/// How a payload was decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decoded {
    /// Every column buffer points into the payload's bytes.
    InPlace,
    /// The payload was copied once into an aligned buffer, then decoded in place there.
    AlignedCopy,
    /// Some buffers are new (decompressed): the payload was compressed.
    Decompressed,
}

/// Decodes the one record batch of an IPC stream payload.
pub fn decode(payload: bytes::Bytes) -> Result<(RecordBatch, Decoded), ArrowError> {
    let buffer = Buffer::from(payload);
    if !(buffer.as_ptr() as usize).is_multiple_of(IPC_ALIGNMENT) {
        // No buffer of it can be aligned: copy at once rather than fail a decode first.
        let batch = decode_buffer(Buffer::from(buffer.as_slice()))?;
        return Ok((batch, Decoded::AlignedCopy));
    }
    match decode_buffer(buffer.clone()) {
        Ok(batch) => {
            let how = if points_into(&batch, &buffer) {
                Decoded::InPlace
            } else {
                Decoded::Decompressed
            };
            Ok((batch, how))
        }
        Err(ArrowError::InvalidArgumentError(why)) if why.contains("align") => {
            // Buffer::from(&[u8]) copies into a 64-byte aligned allocation.
            let aligned = Buffer::from(buffer.as_slice());
            let batch = decode_buffer(aligned)?;
            Ok((batch, Decoded::AlignedCopy))
        }
        Err(other) => Err(other),
    }
}

fn decode_buffer(mut buffer: Buffer) -> Result<RecordBatch, ArrowError> {
    let mut decoder = StreamDecoder::new().with_require_alignment(true);
    let mut batch = None;
    while !buffer.is_empty() {
        if let Some(decoded) = decoder.decode(&mut buffer)?
            && batch.replace(decoded).is_some()
        {
            return Err(ArrowError::IpcError(
                "a payload holds more than one record batch".into(),
            ));
        }
    }
    decoder.finish()?;
    batch.ok_or_else(|| ArrowError::IpcError("a payload without a record batch".into()))
}

/// Whether every data buffer of every column lies inside `payload` (the proof of no copy).
pub fn points_into(batch: &RecordBatch, payload: &Buffer) -> bool {
    let range = payload.as_ptr() as usize..payload.as_ptr() as usize + payload.len();
    let inside = |b: &Buffer| b.is_empty() || range.contains(&(b.as_ptr() as usize));
    batch.columns().iter().all(|column| {
        let data = column.to_data();
        data.buffers().iter().all(inside) && data.nulls().is_none_or(|nulls| inside(nulls.buffer()))
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Decimal128Array, Int64Array, StringArray};
    use arrow_ipc::CompressionType;
    use arrow_ipc::writer::{IpcWriteOptions, StreamWriter};
    use arrow_schema::{DataType, Field, Schema};

    use super::*;

    fn sample(decimal: bool) -> RecordBatch {
        let mut fields = vec![
            Field::new("id", DataType::Int64, false),
            Field::new("name", DataType::Utf8, true),
        ];
        let mut columns: Vec<arrow_array::ArrayRef> = vec![
            Arc::new(Int64Array::from_iter_values(0..1000)),
            Arc::new(StringArray::from_iter(
                (0..1000).map(|i| (i % 3 != 0).then(|| format!("n{i}"))),
            )),
        ];
        if decimal {
            fields.push(Field::new("amount", DataType::Decimal128(20, 2), false));
            columns.push(Arc::new(
                Decimal128Array::from_iter_values(0..1000)
                    .with_precision_and_scale(20, 2)
                    .unwrap(),
            ));
        }
        RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
    }

    fn payload(batch: &RecordBatch, compression: Option<CompressionType>) -> Vec<u8> {
        let options = IpcWriteOptions::default()
            .try_with_compression(compression)
            .unwrap();
        let mut writer =
            StreamWriter::try_new_with_options(Vec::new(), &batch.schema(), options).unwrap();
        writer.write(batch).unwrap();
        writer.finish().unwrap();
        writer.into_inner().unwrap()
    }

    /// Bytes in a 64-byte aligned allocation, as a payload at an aligned place of a response.
    struct Aligned(Buffer);

    impl AsRef<[u8]> for Aligned {
        fn as_ref(&self) -> &[u8] {
            self.0.as_slice()
        }
    }

    fn aligned(bytes: &[u8]) -> bytes::Bytes {
        bytes::Bytes::from_owner(Aligned(Buffer::from(bytes)))
    }

    #[test]
    fn an_aligned_payload_decodes_in_place() {
        let batch = sample(false);
        let bytes = payload(&batch, None);
        let (back, how) = decode(aligned(&bytes)).unwrap();
        assert_eq!((back, how), (batch, Decoded::InPlace));
    }

    #[test]
    fn a_misaligned_payload_is_copied_once() {
        let batch = sample(false);
        let bytes = payload(&batch, None);
        let mut backing = vec![0u8; bytes.len() + 3];
        backing[3..].copy_from_slice(&bytes);
        let shifted = bytes::Bytes::from(backing).slice(3..);
        assert_ne!(shifted.as_ptr() as usize % 8, 0);
        let (back, how) = decode(shifted).unwrap();
        assert_eq!((back, how), (batch, Decoded::AlignedCopy));
    }

    #[test]
    fn compressed_payloads_decode_into_new_buffers() {
        let batch = sample(true);
        for compression in [CompressionType::LZ4_FRAME, CompressionType::ZSTD] {
            let (back, how) = decode(aligned(&payload(&batch, Some(compression)))).unwrap();
            assert_eq!((back, how), (batch.clone(), Decoded::Decompressed));
        }
    }
}
