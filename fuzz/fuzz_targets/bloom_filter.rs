//! Fuzz target `bloom_filter`: see `mezz_format::fuzzing::fuzz_bloom_filter`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| mezz_format::fuzzing::fuzz_bloom_filter(data));
