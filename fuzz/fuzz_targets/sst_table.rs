//! Fuzz target `sst_table`: see `mezz_format::fuzzing::fuzz_sst_table`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| mezz_format::fuzzing::fuzz_sst_table(data));
