//! The conversation as the screen shows it: the person's tasks, the model's text, each tool
//! call and what became of it, and Bosun's notices. The state machine writes it; the view reads it.

use bosun_core::ApprovalAnswer;

/// One item of the conversation on screen.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Entry {
    /// A task the person gave.
    User(String),
    /// A slash command the person typed.
    Command(String),
    /// The model's text (streamed into while it comes).
    Assistant(String),
    /// What the model said of its reasoning (a summary or thinking text).
    Reasoning(String),
    /// A tool call and what became of it.
    Tool(ToolEntry),
    /// Bosun's own output: help, listings, the end of a run.
    Notice(String),
    /// Something that went wrong but did not stop anything.
    Warning(String),
    /// Something that failed.
    Error(String),
}

/// A tool call as the trace tells it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ToolEntry {
    pub call_id: String,
    pub tool: String,
    /// The input, short and sanitised.
    pub input: String,
    /// Policy's decision, one line.
    pub decision: Option<String>,
    /// The lines under the result's summary: output, a diff, matches.
    pub detail: Vec<super::results::Detail>,
    /// What the person answered, if asked.
    pub answer: Option<ApprovalAnswer>,
    pub state: ToolState,
}

/// Where a tool call is.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ToolState {
    /// Proposed, being decided.
    Proposed,
    /// Waiting for the person.
    Asking,
    /// Running.
    Running,
    /// Finished, with its result summarised in one line.
    Done(String),
    /// Failed or refused.
    Failed { code: String, message: String },
    /// From an earlier run of a resumed session, result not kept.
    Earlier,
}
