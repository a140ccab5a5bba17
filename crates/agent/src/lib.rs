//! Bosun's agent: the run loop that puts a model to work over the host's chokepoint, with the
//! context it keeps within the model's window, stored sessions, instructions files and the
//! scripted stand-in model used by tests and the demo. [`turn::TurnBuilder`] assembles a turn
//! — model, host with MCP tools, prompt, skills, subagents, trace and budgets — once, for every
//! face that runs one.
//!
//! The agent decides nothing about tools: every call the model proposes goes to
//! [`bosun_host::Chokepoint`], which judges, runs and records it.

pub mod assembly;
pub mod attach;
pub mod compaction;
pub mod context;
pub mod conversation;
pub mod doctor;
pub mod instructions;
pub mod review;
pub mod run;
pub mod scripted;
pub mod session_store;
pub mod subagent;
pub mod turn;
