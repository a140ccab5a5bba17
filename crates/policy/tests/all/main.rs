//! bosun-policy's integration tests: one binary, a module per concern.

// Helpers outside `#[test]` functions unwrap too: a test that cannot set up should fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod files;
mod fuzzing;
mod managed;
mod matching;
mod precedence;
mod scale;
