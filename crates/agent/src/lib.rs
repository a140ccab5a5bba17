//! Bosun's agent: the one path every tool call takes, the built-in workspace tools, approvals,
//! configuration and run traces.
//!
//! The [`Chokepoint`] is the only way to run a tool. It resolves the tool by exact name,
//! validates the input against the tool's schema, asks policy about the tool's action and every
//! capability the call uses, asks a person when policy says so, runs the tool under a deadline,
//! cancellation and the output bound, and records every step in the run's trace.

pub mod approval;
pub mod builtin;
pub mod chokepoint;
pub mod config;
pub mod instructions;
pub mod js_host;
pub mod plugin_host;
pub mod plugin_manager;
pub mod run;
pub mod scripted;
pub mod session;
pub mod session_store;
pub mod tool;
pub mod trace;
pub mod workspace;

pub use approval::{ApprovalBroker, ApprovalRequest, AutoApprove, NonInteractive, TerminalBroker};
pub use chokepoint::{
    CallOutcome, Chokepoint, ChokepointBuilder, PolicyHook, ToolCall, ToolRegistry,
};
pub use config::{Config, ConfigError, LoadedConfig};
pub use session::Session;
pub use tool::{Tool, ToolContext};
pub use trace::{Trace, TraceError};
pub use workspace::Workspace;
