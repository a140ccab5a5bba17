//! Bosun's host: everything a caller needs to decide and run tool calls, assembled in one place
//! for the CLI, the terminal UI, the agent's run loop and any Rust program that embeds Bosun.
//!
//! [`Host::builder`] takes the workspace, `$BOSUN_HOME` and the loaded configuration and builds
//! the policy, the built-in tools (once), the plugin runtimes (native WebAssembly components,
//! Chock modules, Forge and Triggerfish JavaScript plugins, installed Claude Code plugins, and
//! the tools with which a model installs a plugin it wrote) and the tool registry they share. [`Host::chokepoint`] then gives the one path every
//! call takes: exact lookup, input validation, policy on the tool's action and every capability,
//! approval, execution under a deadline, cancellation and the output bound, and a trace.
//!
//! ```no_run
//! use std::sync::Arc;
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let host = bosun_host::Host::builder()
//!     .workspace_of(&std::env::current_dir()?)
//!     .build()?;
//! let chokepoint = host.chokepoint(Arc::new(bosun_host::NonInteractive))?;
//! for tool in chokepoint.registry().tools() {
//!     println!("{}", tool.spec().name);
//! }
//! # Ok(()) }
//! ```
//!
//! The host never talks to a model and never prints: the agent crate runs the model loop over
//! its chokepoint, and the CLI shows what the host warned about.

pub mod allowed_tools;
pub mod approval;
pub use bosun_fsio::beneath;
pub mod builtin;
pub mod checkpoint;
mod child;
pub mod chokepoint;
pub mod claude_config;
pub mod config;
pub mod config_edit;
pub mod data_folder;
pub mod file_access;
pub mod flow;
pub mod front_matter;
pub mod hooks;
mod host;
pub mod labels;
pub mod layers;
pub mod managed;
pub mod mcp_config;
pub mod model_setup;
pub mod permission;
pub mod plugin_agents;
pub mod plugin_commands;
pub mod plugin_hooks;
pub mod plugin_runtime;
mod process;
pub mod remembered;
pub mod review;
pub mod run_trace;
pub mod session;
pub mod skills;
pub mod telemetry;
pub mod tool;
pub mod trace;
pub mod user_plugins;
pub mod workspace;
pub mod workspace_trust;

pub use approval::{ApprovalBroker, ApprovalRequest, AutoApprove, NonInteractive, TerminalBroker};
/// The lock under which a state file of the home is read, changed and written.
pub use bosun_plugins::state_lock;
/// Bosun's one atomic file write (temporary file 0600, synced, renamed, directory synced).
pub use bosun_plugins::write_atomic;
pub use child::ChildChokepoint;
pub use chokepoint::{
    CallOutcome, Chokepoint, ChokepointBuilder, PolicyHook, SessionLabels, ToolCall, ToolRegistry,
};
pub use config::{Config, ConfigError, LoadedConfig};
pub use host::{
    Host, HostBuilder, HostError, Prompts, js_engine_notice, js_engine_ready, prepare_js_engine,
};
pub use plugin_runtime::js::{EngineNotice, JS_ENGINE_NOTICE};
pub use run_trace::TraceBuilder;
pub use session::Session;
pub use tool::{Tool, ToolContext};
pub use trace::{Trace, TraceError};
pub use workspace::{Workspace, protected_paths};
