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

//! The C ABI: `source_connector!` exports the five `iggy_source_*` symbols of contract
//! §1.1 for one [`Source`](crate::Source) type, each body inside [`ffi_guard`].

use std::panic::{AssertUnwindSafe, catch_unwind};
use tracing::error;

use crate::error::panic_message;

/// Runs an FFI body, turning a panic into a logged `-1`: unwinding across `extern "C"`
/// would abort the runtime process.
pub fn ffi_guard(id: u32, op: &str, body: impl FnOnce() -> i32) -> i32 {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(code) => code,
        Err(payload) => {
            let message = panic_message(payload.as_ref());
            // Logging itself must not unwind out of here either.
            let _ = catch_unwind(AssertUnwindSafe(|| {
                error!("plugin {id}: panic in {op}: {message}");
            }));
            -1
        }
    }
}

/// Copies nothing: views a runtime buffer, treating NULL or length 0 as absent.
///
/// # Safety
/// `ptr` must be NULL or valid for reads of `len` bytes for the returned lifetime.
pub unsafe fn bytes<'a>(ptr: *const u8, len: usize) -> Option<&'a [u8]> {
    if ptr.is_null() || len == 0 {
        None
    } else {
        // SAFETY: non-null and valid for `len` bytes per this function's contract.
        Some(unsafe { std::slice::from_raw_parts(ptr, len) })
    }
}

/// Exports the source ABI for `$source` (a [`Source`](crate::Source)):
/// `iggy_source_open`, `iggy_source_handle_v2`, `iggy_source_batch_result`,
/// `iggy_source_close` and `iggy_source_version` (the crate's `CARGO_PKG_VERSION`).
/// Use once per `cdylib`.
#[macro_export]
macro_rules! source_connector {
    ($source:ty) => {
        const _: fn() = || {
            fn is_source<T: $crate::Source>() {}
            is_source::<$source>();
        };

        static __IGGY_SOURCE_CONTAINER: $crate::container::Container<$source> =
            $crate::container::Container::new();

        /// Opens instance `id` with the runtime's JSON config and saved state.
        ///
        /// # Safety
        /// `config_ptr`/`state_ptr` must be NULL or valid for their lengths during the call.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn iggy_source_open(
            id: u32,
            config_ptr: *const u8,
            config_len: usize,
            state_ptr: *const u8,
            state_len: usize,
            log_callback: $crate::log::LogCallback,
        ) -> i32 {
            $crate::ffi::ffi_guard(id, "open", || {
                // First, so that even a failure below reaches the runtime's log.
                $crate::log::install(log_callback);
                // SAFETY: the runtime keeps both buffers alive for the whole call.
                let config = unsafe { $crate::ffi::bytes(config_ptr, config_len) };
                let state = unsafe { $crate::ffi::bytes(state_ptr, state_len) };
                __IGGY_SOURCE_CONTAINER.open(id, config.unwrap_or(&[]), state)
            })
        }

        /// Starts polling instance `id`; batches go to `send_callback`.
        #[unsafe(no_mangle)]
        pub extern "C" fn iggy_source_handle_v2(
            id: u32,
            send_callback: $crate::container::SendCallback,
        ) -> i32 {
            $crate::ffi::ffi_guard(id, "handle", || {
                __IGGY_SOURCE_CONTAINER.handle(id, send_callback)
            })
        }

        /// Delivers the runtime's result (0 Ack, 1 Nack) for batch `batch_id`.
        #[unsafe(no_mangle)]
        pub extern "C" fn iggy_source_batch_result(id: u32, batch_id: u64, result: u8) -> i32 {
            $crate::ffi::ffi_guard(id, "batch_result", || {
                __IGGY_SOURCE_CONTAINER.batch_result(id, batch_id, result)
            })
        }

        /// Stops and removes instance `id`.
        #[unsafe(no_mangle)]
        pub extern "C" fn iggy_source_close(id: u32) -> i32 {
            $crate::ffi::ffi_guard(id, "close", || __IGGY_SOURCE_CONTAINER.close(id))
        }

        /// The plugin crate's version, NUL-terminated, static.
        #[unsafe(no_mangle)]
        pub extern "C" fn iggy_source_version() -> *const ::std::os::raw::c_char {
            static VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");
            VERSION.as_ptr().cast()
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guard_passes_the_code_through() {
        assert_eq!(ffi_guard(1, "open", || 7), 7);
    }

    #[test]
    fn guard_turns_a_panic_into_minus_one() {
        assert_eq!(ffi_guard(1, "open", || panic!("boom")), -1);
    }

    #[test]
    fn empty_or_null_buffers_are_absent() {
        // SAFETY: null and zero-length inputs are never read.
        unsafe {
            assert!(bytes(std::ptr::null(), 4).is_none());
            assert!(bytes([1_u8].as_ptr(), 0).is_none());
            assert_eq!(bytes([1_u8, 2].as_ptr(), 2), Some(&[1_u8, 2][..]));
        }
    }
}
