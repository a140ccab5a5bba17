//! Run events and the trace envelope. Trace schema version 1: one JSON object per line,
//! `{schema_version, run_id, parent_run_id?, sequence, timestamp, event}`, where `event` carries
//! a `type` such as `tool.proposed`. New event types may be added within a version; a field is
//! never removed or renamed without a new version.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{CapabilityRequest, Classification, Explanation, Scope, ToolError};

/// The trace schema this build writes.
pub const TRACE_SCHEMA_VERSION: u32 = 1;

/// The most characters of reasoning a `model.reasoning` event keeps; more is cut with `…`.
pub const MAX_REASONING_CHARS: usize = 8_000;

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

/// Which budget of a run ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Budget {
    /// Model steps.
    Steps,
    /// Tool calls.
    ToolCalls,
}

impl std::fmt::Display for Budget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Steps => "model steps",
            Self::ToolCalls => "tool calls",
        })
    }
}

/// Why a model stopped. Written as the provider-neutral name (`stop`, `length`, `tool_calls`,
/// `content_filter`) or, for anything else, the provider's own word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FinishReason {
    /// It finished its answer.
    Stop,
    /// It hit the output token cap or the context window.
    Length,
    /// It wants the tool calls it made to be run.
    ToolCalls,
    /// The provider's filter stopped it.
    ContentFilter,
    /// Something else, as the provider named it.
    Other(String),
}

impl FinishReason {
    /// The name written in traces and scripts.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Stop => "stop",
            Self::Length => "length",
            Self::ToolCalls => "tool_calls",
            Self::ContentFilter => "content_filter",
            Self::Other(other) => other,
        }
    }

    /// The reason a name stands for; an unknown name is kept as [`FinishReason::Other`].
    pub fn from_name(name: &str) -> Self {
        match name {
            "stop" => Self::Stop,
            "length" => Self::Length,
            "tool_calls" => Self::ToolCalls,
            "content_filter" => Self::ContentFilter,
            other => Self::Other(other.to_owned()),
        }
    }
}

impl Serialize for FinishReason {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for FinishReason {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        /// Older writers spelled an unknown reason as `{"other": "..."}`.
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Wire {
            Name(String),
            Other { other: String },
        }
        Ok(match Wire::deserialize(deserializer)? {
            Wire::Name(name) => Self::from_name(&name),
            Wire::Other { other } => Self::Other(other),
        })
    }
}

/// A tool call as proposed: by a model, an MCP client or a program embedding Bosun.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call's id, unique within the run (a provider's `call_…`, `toolu_…`); the result
    /// quotes it.
    pub id: String,
    /// The tool's name as proposed.
    pub name: String,
    /// The input as proposed (a model's arguments, parsed once the last fragment arrived).
    #[serde(alias = "arguments")]
    pub input: Value,
}

/// Something that happened during a run.
///
/// Every event is written to the trace and handed to observers, except the *live* ones
/// ([`Event::is_live`]): those go to observers only, because the trace already keeps what they
/// add up to.
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
        /// What the OS sandbox enforces for child processes: `sandbox: full`,
        /// `sandbox: degraded — …` or `sandbox: off — …`.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        sandbox: String,
        /// The session's level as the run began: a conversation's later turn, or a subagent
        /// (which starts at its parent's), may start above `PUBLIC` without a `taint.raised` of
        /// its own. What the run's events carry is at least this level (the export judges its
        /// content by it).
        #[serde(default, skip_serializing_if = "Classification::is_public")]
        level: Classification,
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
    /// A capability a running call asked for mid-call (a JavaScript plugin starting a process)
    /// was judged: allowed, or why not.
    #[serde(rename = "capability.decided")]
    CapabilityDecided {
        /// Call id.
        call_id: String,
        /// Tool name.
        tool: String,
        /// What it asked for.
        capability: CapabilityRequest,
        /// The decision and the rules behind it.
        explanation: Explanation,
    },
    /// An action of its own a running call asked for mid-call (a registry install's
    /// `plugin.install`, asked with the trust review the person reads) was judged: the call's
    /// one `tool.decided` stays the decision on the call, this one is the decision on the
    /// action.
    #[serde(rename = "action.decided")]
    ActionDecided {
        /// Call id.
        call_id: String,
        /// Tool name.
        tool: String,
        /// The policy action asked for (`plugin.install`).
        action: String,
        /// Where it reaches (`host` is the registry's name).
        #[serde(default, skip_serializing_if = "Scope::is_empty")]
        scope: Scope,
        /// The decision and the rules behind it.
        explanation: Explanation,
    },
    /// A reviewer answered a `review` decision.
    #[serde(rename = "review.answered")]
    ReviewAnswered {
        /// Call id.
        call_id: String,
        /// Who reviewed (a configured model's name).
        reviewer: String,
        /// `allow`, `deny`, `unsure`, or `failed` when no verdict came.
        verdict: String,
        /// The reviewer's reason, or why no verdict came.
        reason: String,
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
    /// The person attached an image to the run's request. The trace names it — digest, media
    /// type and size — and never holds its bytes.
    #[serde(rename = "input.image")]
    InputImage {
        /// Lowercase hex SHA-256 of the bytes.
        sha256: String,
        /// Its media type, read from the bytes (`image/png`, …).
        media_type: String,
        /// Its size in bytes.
        bytes: u64,
    },
    /// A model request is about to be sent.
    #[serde(rename = "model.started")]
    ModelStarted {
        /// 1-based step.
        step: u32,
        /// The provider's model id.
        model: String,
        /// The adapter that speaks to it (`openai-chat`, `openai-responses`, `anthropic`);
        /// empty in traces written before it was recorded.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        provider: String,
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
        /// Why it stopped, when the provider said.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        finish: Option<FinishReason>,
        /// Tool calls it made.
        tool_calls: u64,
        /// The provider's token counts.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<TokenUsage>,
    },
    /// A model request failed in a way worth retrying, and is sent again after a wait.
    #[serde(rename = "model.retrying")]
    ModelRetrying {
        /// 1-based step.
        step: u32,
        /// The attempt that failed (1 for the first).
        attempt: u32,
        /// How many attempts there may be in all.
        attempts: u32,
        /// The wait before the next attempt, in milliseconds.
        delay_ms: u64,
        /// Why it failed, in a few words (`HTTP 429`).
        reason: String,
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
    /// The earlier turns of the conversation were replaced by the model's summary of them
    /// (before a step that would not fit the context window, or after the provider said it did
    /// not), or that was tried and failed.
    #[serde(rename = "context.compacted")]
    ContextCompacted {
        /// Messages replaced by the summary.
        summarised: u64,
        /// Messages kept after it.
        kept: u64,
        /// Bytes of the summary.
        summary_bytes: u64,
        /// Why the compaction failed (the conversation was kept as it was).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// A piece of the model's visible text, as it streams. Live only: the whole text is in the
    /// conversation.
    #[serde(rename = "model.text")]
    ModelText {
        /// 1-based step.
        step: u32,
        /// The text.
        text: String,
    },
    /// A piece of a running call's output (a command's stdout or stderr) as it comes, whole
    /// lines where it can. Live only: the call's result holds the output the trace keeps.
    /// Bounded by the call's output budget and redacted like every event.
    #[serde(rename = "tool.output")]
    ToolOutput {
        /// Call id.
        call_id: String,
        /// Which of the call's streams it came on.
        stream: OutputStream,
        /// The text.
        text: String,
    },
    /// What the model says of its reasoning: an OpenAI reasoning summary or Anthropic thinking
    /// text, as the provider returned it (opaque or encrypted reasoning is not shown). Bounded
    /// to [`MAX_REASONING_CHARS`].
    #[serde(rename = "model.reasoning")]
    ModelReasoning {
        /// 1-based step.
        step: u32,
        /// The summary.
        text: String,
    },
    /// A budget ran out.
    #[serde(rename = "budget.exhausted")]
    BudgetExhausted {
        /// Which.
        budget: Budget,
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
    /// Something the session holds was not sent to a model whose level is below it: a tool's
    /// result (withheld from the model; the session did not rise), a model request (the run
    /// ended), a subagent's task or findings, or a conversation to compact.
    #[serde(rename = "model.withheld")]
    ModelWithheld {
        /// Call id of the result or of the subagent's call, when a call was withheld.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call_id: Option<String>,
        /// The `[models.<name>]` entry that was not sent it.
        model: String,
        /// What was withheld: `result`, `request`, `subagent task`, `subagent findings` or
        /// `compaction`.
        what: String,
        /// The level of what was withheld.
        level: Classification,
        /// The most the model may be sent.
        allowed: Classification,
    },
    /// A result brought untrusted input into the session (the network, an MCP server not marked
    /// trusted, a file labelled untrusted): from now on what acts in the world needs a person.
    #[serde(rename = "integrity.untrusted")]
    UntrustedInput {
        /// Call id of the result.
        call_id: String,
        /// Tool name.
        tool: String,
        /// Where the input came from.
        source: String,
    },
    /// Post-response hooks (`[[hooks.post_tool_response]]`) acted on a result before anyone
    /// saw it.
    #[serde(rename = "hook.applied")]
    HookApplied {
        /// Call id of the result.
        call_id: String,
        /// Tool name.
        tool: String,
        /// The hooks that matched.
        hooks: Vec<String>,
        /// How many matches were redacted.
        redactions: usize,
        /// The level the hooks raised the result to.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        level: Option<Classification>,
        /// Whether the hooks made the result untrusted input.
        #[serde(default)]
        untrusted: bool,
    },
    /// A Claude Code plugin's hook ran at one of the run's moments (`PostToolUse`,
    /// `UserPromptSubmit`, `Stop`, `SubagentStop`, `SessionStart`, `SessionEnd`, `PreCompact`,
    /// `Notification`), in the OS sandbox; what it said and what Bosun did with it.
    #[serde(rename = "hook.ran")]
    PluginHookRan {
        /// The event.
        event: String,
        /// The plugin's id, `name@marketplace`.
        plugin: String,
        /// `continue`, `context`, `block`, `continue_run` (a Stop hook's), `halt`, `ignored`
        /// (past a bound) or `error` (a failure that blocks nothing).
        outcome: String,
        /// Its reason or its error, cut to a bound.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
        /// The tool call it was about, when it was about one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call_id: Option<String>,
        /// How long it took.
        duration_ms: u64,
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
            Self::CapabilityDecided { .. } => "capability.decided",
            Self::ActionDecided { .. } => "action.decided",
            Self::ReviewAnswered { .. } => "review.answered",
            Self::ApprovalAsked { .. } => "approval.asked",
            Self::ApprovalAnswered { .. } => "approval.answered",
            Self::PromptAssembled { .. } => "prompt.assembled",
            Self::InputImage { .. } => "input.image",
            Self::ModelStarted { .. } => "model.started",
            Self::ModelCompleted { .. } => "model.completed",
            Self::ModelFailed { .. } => "model.failed",
            Self::ModelRetrying { .. } => "model.retrying",
            Self::ModelText { .. } => "model.text",
            Self::ToolOutput { .. } => "tool.output",
            Self::ModelReasoning { .. } => "model.reasoning",
            Self::ContextElided { .. } => "context.elided",
            Self::ContextCompacted { .. } => "context.compacted",
            Self::BudgetExhausted { .. } => "budget.exhausted",
            Self::ToolLog { .. } => "tool.log",
            Self::ToolStarted { .. } => "tool.started",
            Self::ToolCompleted { .. } => "tool.completed",
            Self::TaintRaised { .. } => "taint.raised",
            Self::ModelWithheld { .. } => "model.withheld",
            Self::UntrustedInput { .. } => "integrity.untrusted",
            Self::HookApplied { .. } => "hook.applied",
            Self::PluginHookRan { .. } => "hook.ran",
            Self::ApprovalRemembered { .. } => "approval.remembered",
            Self::ToolFailed { .. } => "tool.failed",
        }
    }

    /// Whether the event goes to observers only and is not written to the trace.
    pub fn is_live(&self) -> bool {
        matches!(self, Self::ModelText { .. } | Self::ToolOutput { .. })
    }
}

/// Which of a running call's output streams a piece came on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputStream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

/// What kind of source a part of the system prompt came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PromptKind {
    /// Bosun's own instructions.
    Bosun,
    /// `$BOSUN_HOME/AGENTS.md`.
    UserInstructions,
    /// `<workspace>/AGENTS.md`.
    ProjectInstructions,
    /// A plugin's prompt contribution, or a plugin's subagent's instructions.
    Plugin,
    /// The skills' catalogue or the person's selection of skills: Bosun's lines, each skill's
    /// description framed as its author's.
    Skills,
    /// Bosun's own section added to a turn (plan mode).
    BosunSection,
}

impl std::fmt::Display for PromptKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Bosun => "bosun",
            Self::UserInstructions => "user_instructions",
            Self::ProjectInstructions => "project_instructions",
            Self::Plugin => "plugin",
            Self::Skills => "skills",
            Self::BosunSection => "bosun_section",
        })
    }
}

/// One part of a system prompt, as a trace lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptPart {
    /// Where it came from.
    pub kind: PromptKind,
    /// Who: a path or a plugin's local name.
    pub label: String,
    /// Bytes included.
    pub bytes: u64,
    /// Whether the part was cut to fit.
    pub truncated: bool,
}

/// Token counts a provider reported for one request (or, added up, for a run).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    /// Every input token, cached or not (Anthropic's cache reads and writes are added in).
    pub input_tokens: u64,
    /// Generated tokens, reasoning included.
    pub output_tokens: u64,
    /// Input tokens served from the provider's prompt cache, when it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input_tokens: Option<u64>,
    /// Output tokens spent on hidden reasoning, when it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
}

impl TokenUsage {
    /// Adds another request's counts; a count stays `None` until some request reports it.
    pub fn add(&mut self, other: TokenUsage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        if let Some(cached) = other.cached_input_tokens {
            *self.cached_input_tokens.get_or_insert(0) += cached;
        }
        if let Some(reasoning) = other.reasoning_tokens {
            *self.reasoning_tokens.get_or_insert(0) += reasoning;
        }
    }
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
