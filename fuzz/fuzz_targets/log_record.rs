//! Fuzz target `log_record`: see `mezz_format::fuzzing::fuzz_log_record`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| mezz_format::fuzzing::fuzz_log_record(data));
