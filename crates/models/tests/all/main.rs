//! Integration tests: every adapter against a loopback server speaking its exact wire format.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod anthropic;
mod config;
mod images;
mod openai_chat;
mod openai_responses;
mod redirect;
mod server;
mod support;
