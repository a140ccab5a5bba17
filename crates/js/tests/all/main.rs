//! bosun-js's integration tests: the real engine component, pre-initialised by a real sandbox,
//! running Forge and Triggerfish plugins unmodified.
//!
//! - `builtins`: the built-in modules and the prelude as the engine embeds them (bytecode without
//!   source text).
//! - `fixtures`: the plugins of `crates/js/engine/js/test/fixtures/` (the guides' examples and
//!   plugins written in their style) with real outputs, HTTP to loopback servers, taint.
//! - `hostile`: plugins that attack the sandbox from JavaScript; each test names the
//!   enforcement it pins and fails if that enforcement goes.

// Helpers outside `#[test]` functions panic on setup failures, as the tests themselves do.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod builtins;
mod fixtures;
mod hostile;
mod intl;
mod support;
