//! Bosun and the Model Context Protocol.
//!
//! [`server`] is `bosun serve`: it offers the host's tools — built-ins, every enabled plugin of
//! every format — to any MCP client over stdio or Streamable HTTP, and the host's Agent Skills
//! as prompts. Each call goes through the host's chokepoint exactly as a model's would (policy,
//! approval, deadline, output bound, trace), and each client session gets a trace of its own in
//! `$BOSUN_HOME/runs`.
//!
//! [`client`] is the other way: the approved tools of `[mcp.<name>]` servers (stdio, Streamable
//! HTTP, or the older HTTP+SSE transport in [`sse_client`]) offered as tools in the host's
//! registry ([`attach`]), pinned against changes ([`pins`]), with OAuth sign-in ([`oauth`]).
//!
//! The protocol itself is the official Rust SDK's (`rmcp`): both the 2026-07-28 revision
//! (`server/discover`, stateless HTTP) and the `initialize` handshake of 2025-11-25 and older.

pub mod approval;
pub mod client;
pub mod http;
mod http_client;
pub mod idempotency;
#[cfg(test)]
mod loopback;
pub mod oauth;
pub mod pins;
mod random;
pub mod server;
pub mod sse_client;
pub mod state;

pub use client::{ServerState, attach, server_state};
pub use http::{HttpOptions, serve_http};
pub use http_client::HttpClientError;
pub use server::{ServeError, ServeOptions, Served, ToolServer, serve_stdio};
