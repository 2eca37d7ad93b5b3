//! Fuzz target `keyset_block`: see `mezz_format::fuzzing::fuzz_keyset_block`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| mezz_format::fuzzing::fuzz_keyset_block(data));
