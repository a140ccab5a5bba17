//! bosun-agent's integration tests: one binary, a module per concern.

// Helpers in a test binary may panic like the tests themselves: a failed unwrap is a failed
// test (clippy.toml allows it only inside `#[test]` functions).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod hostile_files;
mod run;
mod subagent;
mod turn;
