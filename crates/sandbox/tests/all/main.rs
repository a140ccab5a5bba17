//! bosun-sandbox's integration tests: a real wasmtime running real components.

// Helpers outside `#[test]` functions panic on setup failures, as the tests themselves do.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cache;
mod http;
mod limits;
mod programs;
mod support;
mod unpooled;
mod wasi;
