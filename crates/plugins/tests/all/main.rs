//! bosun-plugins integration tests: one binary, a module per part of the crate. Test
//! components are built with `wasm-encoder`, so no guest toolchain is needed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod catalog;
mod discovery;
mod js_plugins;
mod metadata;
mod scaffold;
mod scale;
mod support;
mod trust;
