//! Fuzz target `write_batch`: see `mezzanine::fuzzing::fuzz_write_batch`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| mezzanine::fuzzing::fuzz_write_batch(data));
