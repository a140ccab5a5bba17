//! The registry's tests: the signed catalog's attack table with keys made here and a fixed
//! clock, Reef served on loopback, publishing.

// Helpers in a test binary may panic like the tests themselves: a failed unwrap is a failed
// test (clippy.toml allows it only inside `#[test]` functions).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod publish;
mod reef;
mod repo;
mod server;
mod tuf;
