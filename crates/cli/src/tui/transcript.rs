//! The conversation as the screen shows it: the person's tasks, the model's text, each tool
//! call and what became of it, and Bosun's notices. The state machine writes it; the view reads it.

use bosun_core::ApprovalAnswer;
use bosun_host::approval::sanitize_for_terminal;
use bosun_models::{AssistantPart, Message};
use serde_json::Value;

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
    /// What the call does, as a person reads it (`Read src/main.rs`), sanitised.
    pub input: String,
    /// The input's JSON, one sanitised row per line, shown with Ctrl-O.
    pub json: Vec<String>,
    /// What the result adds to the headline (`(+2 −1)`, `(12 matches)`).
    pub outcome: Option<String>,
    /// Policy's decision, one line — only when it is worth a line: an ask, a deny, or an allow
    /// by a rule other than the permission mode's defaults.
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

/// The latest entry of the call `id`.
pub(crate) fn tool_entry<'a>(entries: &'a mut [Entry], id: &str) -> Option<&'a mut ToolEntry> {
    entries.iter_mut().rev().find_map(|entry| match entry {
        Entry::Tool(tool) if tool.call_id == id => Some(tool),
        _ => None,
    })
}

/// Sanitises each line of `text`, keeping the line breaks.
pub(crate) fn sanitize_for_terminal_lines(text: &str) -> String {
    text.split_inclusive('\n')
        .map(|line| match line.strip_suffix('\n') {
            Some(body) => format!("{}\n", sanitize_for_terminal(body)),
            None => sanitize_for_terminal(line),
        })
        .collect()
}

/// A person's message as the transcript shows it: a label for each image, then the text.
pub(crate) fn with_image_labels(text: &str, images: &[bosun_models::Image]) -> String {
    let mut shown: String = images.iter().map(|i| format!("{}\n", i.label())).collect();
    shown.push_str(text);
    shown
}

/// The entries of a resumed session's conversation.
pub(crate) fn earlier_entries(messages: &[Message]) -> Vec<Entry> {
    let mut entries = Vec::new();
    for message in messages {
        match message {
            Message::User { text, images } => {
                entries.push(Entry::User(with_image_labels(text, images)))
            }
            Message::Assistant { parts } => {
                for part in parts {
                    match part {
                        AssistantPart::Text { text } if !text.trim().is_empty() => {
                            entries.push(Entry::Assistant(text.replace('\t', "    ")));
                        }
                        AssistantPart::ToolCall(call) => entries.push(Entry::Tool(ToolEntry {
                            call_id: call.id.clone(),
                            tool: sanitize_for_terminal(&call.name),
                            input: super::calls::headline(&call.name, &call.input),
                            json: super::calls::input_json(&call.input),
                            outcome: None,
                            decision: None,
                            detail: Vec::new(),
                            answer: None,
                            state: ToolState::Earlier,
                        })),
                        _ => {}
                    }
                }
            }
            Message::Tool(result) => {
                if let Some(tool) = tool_entry(&mut entries, &result.call_id) {
                    let (state, detail, outcome) = earlier_result(&tool.tool, &result.content);
                    tool.state = state;
                    tool.detail = detail;
                    tool.outcome = outcome;
                }
            }
        }
    }
    entries
}

/// A stored tool result (Bosun's result JSON) as a state and its detail lines.
fn earlier_result(
    tool: &str,
    content: &str,
) -> (ToolState, Vec<super::results::Detail>, Option<String>) {
    let Ok(value) = serde_json::from_str::<Value>(content) else {
        return (ToolState::Earlier, Vec::new(), None);
    };
    if value.get("ok") == Some(&Value::Bool(false)) {
        let error = value.get("error");
        let field = |key: &str| {
            error
                .and_then(|e| e.get(key))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        return (
            ToolState::Failed {
                code: field("code"),
                message: sanitize_for_terminal(&field("message")),
            },
            Vec::new(),
            None,
        );
    }
    match value.get("output") {
        Some(output) => {
            let (summary, detail) = super::results::summarize(tool, output);
            (
                ToolState::Done(summary),
                detail,
                super::calls::outcome(tool, output),
            )
        }
        None => (ToolState::Earlier, Vec::new(), None),
    }
}
