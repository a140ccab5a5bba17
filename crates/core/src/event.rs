//! Run events and the trace envelope. Trace schema version 1: one JSON object per line,
//! `{schema_version, run_id, parent_run_id?, sequence, timestamp, event}`, where `event` carries
//! a `type` such as `tool.proposed`. New event types may be added within a version; a field is
//! never removed or renamed without a new version.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{CapabilityRequest, Classification, Explanation, ToolError};

/// The trace schema this build writes.
pub const TRACE_SCHEMA_VERSION: u32 = 1;

/// How a person (or the lack of one) answered an approval request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalAnswer {
    /// Run this call.
    AllowOnce,
    /// Run this call and later calls of the same tool in this session.
    AllowSession,
    /// Run this call, and remember the approval as narrow policy rules for this workspace (the
    /// person saw the rules and confirmed them).
    AllowAlways,
    /// Do not run it.
    Deny,
    /// Nobody could be asked; treated as a refusal.
    Unavailable,
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunOutcome {
    /// Everything asked for was done.
    Completed,
    /// A tool returned an error.
    ToolError,
    /// Policy denied a call.
    Denied,
    /// A call needed approval and nobody could give it.
    NeedsApproval,
    /// The run could not proceed (bad configuration, internal error).
    Failed,
    /// The run was cancelled.
    Cancelled,
    /// A budget ran out.
    LimitReached,
}

/// Something that happened during a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum Event {
    /// A run began.
    #[serde(rename = "run.started")]
    RunStarted {
        /// What started it, e.g. `tools call read_file`.
        command: String,
        /// The workspace root.
        workspace: String,
        /// The permission mode.
        mode: String,
    },
    /// A run ended.
    #[serde(rename = "run.finished")]
    RunFinished {
        /// How.
        outcome: RunOutcome,
    },
    /// A tool call was proposed.
    #[serde(rename = "tool.proposed")]
    ToolProposed {
        /// Call id.
        call_id: String,
        /// Tool name as proposed.
        tool: String,
        /// Input as proposed.
        input: Value,
    },
    /// Policy decided a call.
    #[serde(rename = "tool.decided")]
    ToolDecided {
        /// Call id.
        call_id: String,
        /// Tool name.
        tool: String,
        /// The tool's policy action.
        action: String,
        /// Capabilities judged with it.
        capabilities: Vec<CapabilityRequest>,
        /// The decision and the rules behind it.
        explanation: Explanation,
    },
    /// A person was asked to approve a call.
    #[serde(rename = "approval.asked")]
    ApprovalAsked {
        /// Call id.
        call_id: String,
        /// Tool name.
        tool: String,
        /// Why policy asks.
        reason: String,
    },
    /// The approval was answered.
    #[serde(rename = "approval.answered")]
    ApprovalAnswered {
        /// Call id.
        call_id: String,
        /// The answer.
        answer: ApprovalAnswer,
    },
    /// The system prompt was assembled from these parts.
    #[serde(rename = "prompt.assembled")]
    PromptAssembled {
        /// Each part, in order.
        sources: Vec<PromptPart>,
    },
    /// A model request is about to be sent.
    #[serde(rename = "model.started")]
    ModelStarted {
        /// 1-based step.
        step: u32,
        /// The provider's model id.
        model: String,
        /// Messages in the request.
        messages: u64,
        /// Estimated input tokens (UTF-8 bytes / 4).
        estimated_input_tokens: u64,
    },
    /// The model finished a step.
    #[serde(rename = "model.completed")]
    ModelCompleted {
        /// 1-based step.
        step: u32,
        /// Why it stopped (`stop`, `length`, `tool_calls`, ...), when the provider said.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        finish: Option<String>,
        /// Tool calls it made.
        tool_calls: u64,
        /// The provider's token counts.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<TokenUsage>,
    },
    /// The model request failed.
    #[serde(rename = "model.failed")]
    ModelFailed {
        /// 1-based step.
        step: u32,
        /// The provider's error, saying what to do.
        error: String,
    },
    /// A tool output was replaced by a marker to fit the context window.
    #[serde(rename = "context.elided")]
    ContextElided {
        /// The call whose output went.
        call_id: String,
        /// Its tool.
        tool: String,
        /// Bytes removed.
        bytes: u64,
    },
    /// A budget ran out.
    #[serde(rename = "budget.exhausted")]
    BudgetExhausted {
        /// `steps` or `tool_calls`.
        budget: String,
        /// Its limit.
        limit: u32,
    },
    /// A tool logged a line while running.
    #[serde(rename = "tool.log")]
    ToolLog {
        /// Call id.
        call_id: String,
        /// Tool name.
        tool: String,
        /// `trace`, `debug`, `info`, `warn` or `error`.
        level: String,
        /// The line, as bounded by the tool's host.
        message: String,
    },
    /// A tool began executing.
    #[serde(rename = "tool.started")]
    ToolStarted {
        /// Call id.
        call_id: String,
        /// Tool name.
        tool: String,
    },
    /// A tool finished successfully.
    #[serde(rename = "tool.completed")]
    ToolCompleted {
        /// Call id.
        call_id: String,
        /// Tool name.
        tool: String,
        /// The bounded output.
        output: Value,
        /// Whether anything was left out.
        truncated: bool,
        /// Wall time of the execution, in microseconds.
        duration_us: u64,
    },
    /// A result raised the session's taint: everything the session sends from now on is
    /// treated as data of level `to`.
    #[serde(rename = "taint.raised")]
    TaintRaised {
        /// Call id of the result.
        call_id: String,
        /// Tool name.
        tool: String,
        /// The session's level before.
        from: Classification,
        /// Its level now.
        to: Classification,
    },
    /// An "always in this workspace" answer was written as policy rules (or could not be).
    #[serde(rename = "approval.remembered")]
    ApprovalRemembered {
        /// Call id.
        call_id: String,
        /// The file the rules were written to.
        file: String,
        /// The rules, as written.
        rules: Vec<String>,
        /// Why nothing was written, when writing failed (the call still ran once).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// A call ended in an error, at any stage.
    #[serde(rename = "tool.failed")]
    ToolFailed {
        /// Call id.
        call_id: String,
        /// Tool name as proposed.
        tool: String,
        /// The error the caller saw.
        error: ToolError,
        /// Wall time since the call was proposed, in microseconds.
        duration_us: u64,
    },
}

impl Event {
    /// The event's type as written in the trace.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::RunStarted { .. } => "run.started",
            Self::RunFinished { .. } => "run.finished",
            Self::ToolProposed { .. } => "tool.proposed",
            Self::ToolDecided { .. } => "tool.decided",
            Self::ApprovalAsked { .. } => "approval.asked",
            Self::ApprovalAnswered { .. } => "approval.answered",
            Self::PromptAssembled { .. } => "prompt.assembled",
            Self::ModelStarted { .. } => "model.started",
            Self::ModelCompleted { .. } => "model.completed",
            Self::ModelFailed { .. } => "model.failed",
            Self::ContextElided { .. } => "context.elided",
            Self::BudgetExhausted { .. } => "budget.exhausted",
            Self::ToolLog { .. } => "tool.log",
            Self::ToolStarted { .. } => "tool.started",
            Self::ToolCompleted { .. } => "tool.completed",
            Self::TaintRaised { .. } => "taint.raised",
            Self::ApprovalRemembered { .. } => "approval.remembered",
            Self::ToolFailed { .. } => "tool.failed",
        }
    }
}

/// One part of a system prompt, as a trace lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptPart {
    /// `bosun`, `user_instructions`, `project_instructions` or `plugin`.
    pub kind: String,
    /// Who: a path or a plugin's local name.
    pub label: String,
    /// Bytes included.
    pub bytes: u64,
    /// Whether the part was cut to fit.
    pub truncated: bool,
}

/// Token counts a provider reported for one step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    /// Input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Input tokens served from a cache, when reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input_tokens: Option<u64>,
    /// Reasoning tokens, when reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
}

/// One line of a trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    /// [`TRACE_SCHEMA_VERSION`] when written.
    pub schema_version: u32,
    /// The run.
    pub run_id: String,
    /// The run that started this one, for subagents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_run_id: Option<String>,
    /// 0, 1, 2… within the run.
    pub sequence: u64,
    /// When it happened.
    pub timestamp: DateTime<Utc>,
    /// What happened.
    pub event: Event,
}
