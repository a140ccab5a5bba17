//! Action patterns and matching: see `bosun_policy::fuzzing::matcher` for the invariants.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bosun_policy::fuzzing::matcher(data));
