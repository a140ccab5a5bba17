//! Bosun's shared vocabulary: what a tool is, what it may touch, what a call returns, and what a
//! run records.
//!
//! This crate does no I/O. Everything else in Bosun — the policy engine, the chokepoint, plugin
//! hosts, model adapters — speaks in these types, so a tool spec checked here is checked the same
//! way for a built-in, a WebAssembly plugin or an MCP server's tool.
//!
//! ```
//! use bosun_core::{Risk, ToolName, ToolSpec};
//! use serde_json::json;
//!
//! let spec = ToolSpec::builder(ToolName::new("count_text").unwrap(), "Count words in a text.")
//!     .risk(Risk::Read)
//!     .input_schema(json!({"type": "object", "properties": {"text": {"type": "string"}}}))
//!     .build()
//!     .unwrap();
//! assert_eq!(spec.name.as_str(), "count_text");
//! ```

mod authority;
mod capability;
mod classification;
mod decision;
mod event;
pub mod hidden;
mod limits;
pub mod markdown;
pub mod redact;
mod result;
pub mod text;
mod tool;

pub use authority::{Authority, AuthorityError, is_host_name};
pub use capability::{Capability, CapabilityError, CapabilityRequest, Scope};
pub use classification::{Classification, ClassificationError};
pub use decision::{Decision, DecisionError, Explanation, Layer, MatchedRule};
pub use event::{
    ApprovalAnswer, Budget, Envelope, Event, FinishReason, MAX_REASONING_CHARS, OutputStream,
    PromptKind, PromptPart, RunOutcome, TRACE_SCHEMA_VERSION, TokenUsage, ToolCall,
};
pub use hidden::{escape_hidden, find_hidden, is_hidden_char};
pub use limits::Limits;
pub use redact::Redactor;
pub use result::{ErrorCode, ToolError, ToolOutput, ToolResult, bound_result};
pub use tool::{
    MAX_DESCRIPTION_CHARS, Risk, SpecError, ToolName, ToolSpec, ToolSpecBuilder, check_description,
    check_schema,
};
