//! Fuzz target `resp_request`: see `mezz_serve::fuzzing::fuzz_resp_request`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| mezz_serve::fuzzing::fuzz_resp_request(data));
