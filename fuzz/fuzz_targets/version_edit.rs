//! Fuzz target `version_edit`: see `mezzanine::fuzzing::fuzz_version_edit`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| mezzanine::fuzzing::fuzz_version_edit(data));
