//! Policy files from arbitrary text: see `bosun_policy::fuzzing::rule_parser` for the invariants.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bosun_policy::fuzzing::rule_parser(data));
