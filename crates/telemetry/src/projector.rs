//! The run trace's events projected to OpenTelemetry, on the exporter's thread: every event of
//! a run (and of its subagents, whose events reach the same observer) becomes part of a span, a
//! metric or a log record. Spans follow the GenAI conventions (semantic-conventions-genai,
//! Development): `invoke_agent` for a run, `chat {model}` for a model step, `execute_tool
//! {tool}` for a call, with Bosun's decisions on the same spans. Only what the trace holds is
//! projected, already redacted; content goes only when its switch is on, and only while the
//! run's session holds no data above the collector's level (else a marker naming the level
//! goes instead). What the model chose — a tool name no tool answers to, a path — is content
//! too, never a span's name or a metric's attribute. A run's events reach
//! it as the trace's own lines ([`Feed`]), so the run's thread only copies bytes; the ids of
//! spans others may be told about come from [`crate::ids`], known on the run's thread.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bosun_core::{Classification, Envelope, ErrorCode, Event, Layer};

use crate::config::ContentConfig;
use crate::context::{SpanContext, SpanId};
use crate::ids;
use crate::metrics::{Counter, Histogram, Metrics};
use crate::signal::{Attribute, LogRecord, Span, SpanEvent, SpanKind, StatusCode, Value};

/// The most bytes of one content attribute; longer is cut with `…`.
const MAX_CONTENT_BYTES: usize = 16 * 1024;

/// `gen_ai.tool.name` of a call whose name answers to no tool: the name is the model's text,
/// content, so it is never a span's name or a metric's attribute (`_OTHER`, as the conventions
/// name a value outside the known set).
const UNKNOWN_TOOL: &str = "_OTHER";

/// What a projection produced, for the exporter to send.
#[derive(Default)]
pub(crate) struct Out {
    /// Ended spans.
    pub spans: Vec<Span>,
    /// Log records.
    pub logs: Vec<LogRecord>,
}

/// A run's events on their way to the exporter's thread: the trace lines the run's thread
/// appended (newline-separated JSON envelopes), and the projection they feed.
pub(crate) struct Feed {
    pub(crate) pending: Mutex<Pending>,
    projector: Mutex<Projector>,
}

/// What a feed holds until the exporter's thread takes it.
#[derive(Default)]
pub(crate) struct Pending {
    /// Envelopes as JSON, one a line.
    pub lines: Vec<u8>,
    /// Lines refused because the feed was full.
    pub dropped: u64,
    /// End the runs still open, at this time, after the lines.
    pub finish_at: Option<u64>,
    /// The projection's handle is gone: finish and forget the feed.
    pub closed: bool,
}

impl Feed {
    pub(crate) fn new(projector: Projector) -> Self {
        Self {
            pending: Mutex::new(Pending::default()),
            projector: Mutex::new(projector),
        }
    }

    /// Plugins' digests by local name, for `bosun.plugin.digest`.
    pub(crate) fn set_plugin_digests(&self, digests: HashMap<String, String>) {
        if let Ok(mut projector) = self.projector.lock() {
            projector.plugin_digests = digests;
        }
    }

    /// Projects what is pending into `out`; whether the feed is closed (and so finished).
    pub(crate) fn drain(&self, out: &mut Out, now_ns: u64) -> bool {
        let (lines, finish_at, closed) = match self.pending.lock() {
            Ok(mut pending) => (
                std::mem::take(&mut pending.lines),
                pending.finish_at.take(),
                pending.closed,
            ),
            Err(_) => return true,
        };
        let Ok(mut projector) = self.projector.lock() else {
            return true;
        };
        for line in lines.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            // A line whose count the redactor replaced (a number equal to a secret's digits)
            // is no envelope any more: its event is skipped, as the trace file keeps it.
            if let Ok(envelope) = serde_json::from_slice::<Envelope>(line) {
                projector.observe(&envelope, out);
            }
        }
        if let Some(at) = finish_at {
            projector.finish(at, out);
        }
        if closed {
            projector.finish(now_ns, out);
        }
        closed
    }
}

/// Projects the events of one run and its subagents.
pub(crate) struct Projector {
    /// The caller's span (an incoming `traceparent`): the run's span becomes its child.
    remote_parent: Option<SpanContext>,
    /// Plugins' local names and their digests, for `bosun.plugin.digest`.
    plugin_digests: HashMap<String, String>,
    content: ContentConfig,
    /// The collector's level: content of a session holding more is withheld.
    sink: Classification,
    logs: bool,
    metrics: Arc<Metrics>,
    runs: HashMap<String, RunState>,
}

struct OpenSpan {
    span: Span,
}

impl OpenSpan {
    fn new(
        context: SpanContext,
        parent: Option<SpanId>,
        name: String,
        kind: SpanKind,
        start_ns: u64,
    ) -> Self {
        Self {
            span: Span {
                trace_id: context.trace_id,
                span_id: context.span_id,
                parent_span_id: parent,
                name,
                kind,
                start_ns,
                end_ns: start_ns,
                attributes: Vec::new(),
                events: Vec::new(),
                status: StatusCode::Unset,
                status_message: String::new(),
            },
        }
    }

    fn set(&mut self, key: &str, value: Value) {
        match self.span.attributes.iter_mut().find(|(k, _)| k == key) {
            Some((_, v)) => *v = value,
            None => self.span.attributes.push((key.to_owned(), value)),
        }
    }

    fn get(&self, key: &str) -> Option<&str> {
        self.span.attributes.iter().find_map(|(k, v)| match v {
            Value::Str(s) if k == key => Some(s.as_str()),
            _ => None,
        })
    }

    fn event(&mut self, time_ns: u64, name: &str, attributes: Vec<Attribute>) {
        self.span.events.push(SpanEvent {
            time_ns,
            name: name.to_owned(),
            attributes,
        });
    }

    fn context(&self) -> SpanContext {
        SpanContext {
            trace_id: self.span.trace_id,
            span_id: self.span.span_id,
            sampled: true,
        }
    }

    fn end(mut self, end_ns: u64) -> Span {
        self.span.end_ns = end_ns.max(self.span.start_ns);
        self.span
    }
}

struct ToolSpan {
    open: OpenSpan,
    asked_ns: Option<u64>,
    /// The name the model gave, until an event shows a tool answers to it (only then is it
    /// the span's name).
    proposed: Option<String>,
}

impl ToolSpan {
    /// Names the span after its tool, now that the tool is known to exist (a decision, a
    /// result or a failure other than `unknown_tool`): the name is Bosun's, not the model's.
    fn resolved(&mut self) {
        let Some(tool) = self.proposed.take() else {
            return;
        };
        self.open.span.name = format!("execute_tool {tool}");
        match mcp_server(&tool) {
            Some(server) => {
                self.open.set("gen_ai.tool.type", s("extension"));
                self.open.set("mcp.method.name", s("tools/call"));
                self.open.set("bosun.mcp.server", s(server));
            }
            None => self.open.set("gen_ai.tool.type", s("function")),
        }
        self.open.set("gen_ai.tool.name", s(tool));
    }

    /// The tool's name for a metric or a log record: `_OTHER` until it is known to exist.
    fn tool_name(&self) -> &str {
        match &self.proposed {
            Some(_) => UNKNOWN_TOOL,
            None => self.open.get("gen_ai.tool.name").unwrap_or(UNKNOWN_TOOL),
        }
    }
}

struct ChatSpan {
    open: OpenSpan,
    text: String,
}

struct RunState {
    root: OpenSpan,
    chat: Option<ChatSpan>,
    tools: HashMap<String, ToolSpan>,
    model: Option<String>,
    /// `gen_ai.provider.name` of the run's model, once a step named it.
    provider: Option<&'static str>,
    /// The level of the data the run's session holds: what it started with (`run.started`,
    /// its parent's for a subagent) raised by every `taint.raised`. It never falls.
    level: Classification,
}

/// `gen_ai.provider.name` for the adapter a trace names: the conventions name the provider as
/// the client knows it, so both OpenAI wire formats are `openai` (an OpenAI-compatible server
/// elsewhere included, as the conventions say of OpenAI client libraries); `None` for a trace
/// written before the adapter was recorded.
fn genai_provider(adapter: &str) -> Option<&'static str> {
    match adapter {
        "" => None,
        "anthropic" => Some("anthropic"),
        a if a.starts_with("openai") => Some("openai"),
        _ => Some("bosun.other"),
    }
}

fn s(value: impl Into<String>) -> Value {
    Value::Str(value.into())
}

fn time_ns(envelope: &Envelope) -> u64 {
    envelope
        .timestamp
        .timestamp_nanos_opt()
        .and_then(|n| u64::try_from(n).ok())
        .unwrap_or(0)
}

fn bounded(mut text: String) -> String {
    if text.len() > MAX_CONTENT_BYTES {
        let mut cut = MAX_CONTENT_BYTES;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push('…');
    }
    text
}

/// What the name of a tool says of where it comes from: an MCP server's (`mcp__<server>__<t>`)
/// or Bosun's and its plugins'.
fn mcp_server(tool: &str) -> Option<&str> {
    tool.strip_prefix("mcp__")?
        .split_once("__")
        .map(|(server, _)| server)
}

/// A plugin's local name from its tool's policy action (`plugin.<name>.<tool>`).
fn plugin_of(action: &str) -> Option<&str> {
    action
        .strip_prefix("plugin.")?
        .split_once('.')
        .map(|(name, _)| name)
}

impl Projector {
    pub(crate) fn new(
        remote_parent: Option<SpanContext>,
        content: ContentConfig,
        sink: Classification,
        logs: bool,
        metrics: Arc<Metrics>,
    ) -> Self {
        Self {
            remote_parent,
            plugin_digests: HashMap::new(),
            content,
            sink,
            logs,
            metrics,
            runs: HashMap::new(),
        }
    }

    /// Projects one event (already redacted by the trace).
    pub(crate) fn observe(&mut self, envelope: &Envelope, out: &mut Out) {
        let now = time_ns(envelope);
        if let Event::RunStarted {
            command,
            mode,
            sandbox,
            level,
            ..
        } = &envelope.event
        {
            let mut state = self.start_run(envelope, [command, mode, sandbox], now);
            // A subagent starts at its parent's level (a trace written before `run.started`
            // carried the level says nothing of it).
            let parent = envelope.parent_run_id.as_deref();
            state.level = (*level).max(
                parent
                    .and_then(|p| self.runs.get(p))
                    .map_or(Classification::Public, |p| p.level),
            );
            self.runs.insert(envelope.run_id.clone(), state);
            self.log(envelope, None, now, out);
            return;
        }
        let Some(mut run) = self.runs.remove(&envelope.run_id) else {
            return;
        };
        let span_of_event = self.apply(&mut run, envelope, now, out);
        if matches!(envelope.event, Event::RunFinished { .. }) {
            self.finish_run(&envelope.run_id, run, now, out);
        } else {
            self.runs.insert(envelope.run_id.clone(), run);
        }
        if !envelope.event.is_live() {
            self.log(envelope, span_of_event, now, out);
        }
    }

    /// The run's span, from `run.started`'s command, mode and sandbox.
    fn start_run(
        &self,
        envelope: &Envelope,
        [command, mode, sandbox]: [&String; 3],
        now: u64,
    ) -> RunState {
        let parent_run = envelope.parent_run_id.as_deref();
        // The ids were fixed on the run's thread when its trace opened (or a call asked for
        // its `traceparent`): a subagent's run is in its parent's trace.
        let context = ids::run_root(&envelope.run_id, parent_run, self.remote_parent);
        // A subagent's run hangs under the parent's call that started it (the delegate tool,
        // still in flight), else under the parent's run.
        let parent = match parent_run.and_then(|parent| self.runs.get(parent)) {
            Some(parent) => Some(
                parent
                    .tools
                    .values()
                    .filter(|t| t.open.span.trace_id == context.trace_id)
                    .max_by_key(|t| t.open.span.start_ns)
                    .map(|t| t.open.context())
                    .unwrap_or_else(|| parent.root.context()),
            ),
            None if parent_run.is_none() => self.remote_parent,
            None => None,
        };
        let agent = command
            .strip_prefix("subagent ")
            .unwrap_or("bosun")
            .to_owned();
        let kind = if self.remote_parent.is_some() && envelope.parent_run_id.is_none() {
            SpanKind::Server
        } else {
            SpanKind::Internal
        };
        let mut root = OpenSpan::new(
            context,
            parent
                .filter(|p| p.trace_id == context.trace_id)
                .map(|p| p.span_id),
            format!("invoke_agent {agent}"),
            kind,
            now,
        );
        root.set("gen_ai.operation.name", s("invoke_agent"));
        root.set("gen_ai.agent.name", s(agent));
        root.set("gen_ai.conversation.id", s(envelope.run_id.clone()));
        root.set("bosun.run.id", s(envelope.run_id.clone()));
        if let Some(parent) = &envelope.parent_run_id {
            root.set("bosun.run.parent_id", s(parent.clone()));
        }
        root.set("bosun.command", s(command.clone()));
        root.set("bosun.mode", s(mode.clone()));
        if !sandbox.is_empty() {
            root.set("bosun.sandbox", s(sandbox.clone()));
        }
        RunState {
            root,
            chat: None,
            tools: HashMap::new(),
            model: None,
            provider: None,
            level: Classification::Public,
        }
    }

    /// Content for an attribute when its switch is on: the text while the run's session holds
    /// nothing above the collector's level, else a marker naming the level, never the data.
    fn content_at(
        &self,
        level: Classification,
        on: bool,
        text: impl FnOnce() -> String,
    ) -> Option<String> {
        on.then(|| self.judged(level, text))
    }

    /// Text that may quote what the session holds (a provider's error, where untrusted input
    /// came from): itself while the session holds nothing above the collector's level, else a
    /// marker naming the level.
    fn judged(&self, level: Classification, text: impl FnOnce() -> String) -> String {
        if level > self.sink {
            format!(
                "[withheld: the session holds {level} data and this collector is {}]",
                self.sink
            )
        } else {
            bounded(text())
        }
    }

    /// Applies one event to its run; returns the span it belongs to (for its log record).
    fn apply(
        &self,
        run: &mut RunState,
        envelope: &Envelope,
        now: u64,
        out: &mut Out,
    ) -> Option<SpanContext> {
        let content = self.content;
        let metrics = &*self.metrics;
        let root_context = run.root.context();
        match &envelope.event {
            Event::ModelStarted {
                step,
                model,
                provider,
                messages,
                estimated_input_tokens,
            } => {
                if let Some(chat) = run.chat.take() {
                    out.spans.push(chat.open.end(now));
                }
                run.model = Some(model.clone());
                let provider_name = genai_provider(provider);
                if let Some(name) = provider_name
                    && run.provider.is_none()
                {
                    // The agent's span names the provider of its first model step.
                    run.provider = Some(name);
                    run.root.set("gen_ai.provider.name", s(name));
                }
                let mut open = OpenSpan::new(
                    SpanContext {
                        trace_id: root_context.trace_id,
                        span_id: SpanId::random(),
                        sampled: true,
                    },
                    Some(root_context.span_id),
                    format!("chat {model}"),
                    SpanKind::Client,
                    now,
                );
                open.set("gen_ai.operation.name", s("chat"));
                if let Some(name) = provider_name {
                    open.set("gen_ai.provider.name", s(name));
                    open.set("bosun.model.api", s(provider.clone()));
                }
                open.set("gen_ai.request.model", s(model.clone()));
                open.set("bosun.step", Value::Int(i64::from(*step)));
                open.set("bosun.messages", Value::Int(*messages as i64));
                open.set(
                    "bosun.estimated_input_tokens",
                    Value::Int(*estimated_input_tokens as i64),
                );
                let context = open.context();
                run.chat = Some(ChatSpan {
                    open,
                    text: String::new(),
                });
                Some(context)
            }
            Event::ModelText { text, .. } | Event::ModelReasoning { text, .. } => {
                let chat = run.chat.as_mut()?;
                if content.model_output && chat.text.len() < MAX_CONTENT_BYTES {
                    chat.text.push_str(text);
                }
                Some(chat.open.context())
            }
            Event::ModelRetrying {
                attempt,
                reason,
                delay_ms,
                ..
            } => {
                let chat = run.chat.as_mut()?;
                chat.open.event(
                    now,
                    "bosun.model.retrying",
                    vec![
                        ("bosun.attempt".to_owned(), Value::Int(i64::from(*attempt))),
                        ("bosun.delay_ms".to_owned(), Value::Int(*delay_ms as i64)),
                        ("error.type".to_owned(), s(reason.clone())),
                    ],
                );
                Some(chat.open.context())
            }
            Event::ModelCompleted {
                finish,
                tool_calls,
                usage,
                ..
            } => {
                let mut chat = run.chat.take()?;
                let context = chat.open.context();
                let model = run.model.clone().unwrap_or_default();
                chat.open.set("gen_ai.response.model", s(model.clone()));
                if let Some(finish) = finish {
                    chat.open.set(
                        "gen_ai.response.finish_reasons",
                        Value::StrArray(vec![finish.as_str().to_owned()]),
                    );
                }
                chat.open
                    .set("bosun.tool_calls", Value::Int(*tool_calls as i64));
                if let Some(usage) = usage {
                    chat.open.set(
                        "gen_ai.usage.input_tokens",
                        Value::Int(usage.input_tokens as i64),
                    );
                    chat.open.set(
                        "gen_ai.usage.output_tokens",
                        Value::Int(usage.output_tokens as i64),
                    );
                    if let Some(cached) = usage.cached_input_tokens {
                        chat.open.set(
                            "gen_ai.usage.cache_read.input_tokens",
                            Value::Int(cached as i64),
                        );
                    }
                    if let Some(reasoning) = usage.reasoning_tokens {
                        chat.open.set(
                            "gen_ai.usage.reasoning.output_tokens",
                            Value::Int(reasoning as i64),
                        );
                    }
                    let provider = run.provider.unwrap_or("bosun.other");
                    for (tokens, kind) in [
                        (usage.input_tokens, "input"),
                        (usage.output_tokens, "output"),
                    ] {
                        metrics.record(
                            Histogram::Tokens,
                            tokens as f64,
                            &[
                                ("gen_ai.operation.name", "chat"),
                                ("gen_ai.provider.name", provider),
                                ("gen_ai.request.model", &model),
                                ("gen_ai.token.type", kind),
                            ],
                        );
                    }
                }
                if let Some(text) = self.content_at(
                    run.level,
                    content.model_output && !chat.text.is_empty(),
                    || std::mem::take(&mut chat.text),
                ) {
                    let message = serde_json::json!([{
                        "role": "assistant",
                        "parts": [{ "type": "text", "content": text }],
                    }]);
                    chat.open
                        .set("gen_ai.output.messages", s(message.to_string()));
                }
                out.spans.push(chat.open.end(now));
                Some(context)
            }
            Event::ModelFailed { .. } => {
                let mut chat = run.chat.take()?;
                let context = chat.open.context();
                chat.open.set("error.type", s("model_error"));
                chat.open.span.status = StatusCode::Error;
                // The provider's error says what went wrong, and may quote what it was sent.
                if let Event::ModelFailed { error, .. } = &envelope.event {
                    chat.open.span.status_message = self.judged(run.level, || error.clone());
                }
                out.spans.push(chat.open.end(now));
                Some(context)
            }
            Event::ToolProposed {
                call_id,
                tool,
                input,
            } => {
                let remote = ids::caller_of(&envelope.run_id, call_id);
                let context = ids::call_context(&root_context, remote.as_ref(), call_id);
                let (parent, kind) = match remote {
                    Some(caller) => (caller.span_id, SpanKind::Server),
                    None => (root_context.span_id, SpanKind::Internal),
                };
                // Named after its tool once a tool is known to answer to the name.
                let mut open =
                    OpenSpan::new(context, Some(parent), "execute_tool".to_owned(), kind, now);
                if remote.is_some() {
                    // The session's own span, in Bosun's trace, for finding the rest of it.
                    open.set("bosun.run.span_id", s(root_context.span_id.to_hex()));
                    open.set("bosun.run.trace_id", s(root_context.trace_id.to_hex()));
                }
                open.set("gen_ai.operation.name", s("execute_tool"));
                open.set("gen_ai.tool.call.id", s(call_id.clone()));
                if let Some(arguments) =
                    self.content_at(run.level, content.tool_inputs, || input.to_string())
                {
                    open.set("gen_ai.tool.call.arguments", s(arguments));
                }
                run.tools.insert(
                    call_id.clone(),
                    ToolSpan {
                        open,
                        asked_ns: None,
                        proposed: Some(tool.clone()),
                    },
                );
                Some(context)
            }
            Event::ToolDecided {
                call_id,
                tool,
                action,
                explanation,
                ..
            } => {
                let call = run.tools.get_mut(call_id)?;
                call.resolved();
                let decision = explanation.decision.to_string();
                call.open.set("bosun.policy.decision", s(decision.clone()));
                call.open.set("bosun.policy.action", s(action.clone()));
                let deciding = explanation.deciding_rule();
                let rule = deciding.map(|rule| match rule.layer {
                    // A hook's reason is words its plugin (or a project's hook) wrote, which may
                    // quote the call and so the session's data: the rule names only its author,
                    // and the words go as the call's input does (`bosun.policy.reason`).
                    Layer::Hook => format!(
                        "hook rule of {}",
                        rule.source.as_deref().unwrap_or("a hook")
                    ),
                    _ => format!("{} rule {}", rule.layer, rule.rule),
                });
                if let Some(rule) = &rule {
                    call.open.set("bosun.policy.rule", s(rule.clone()));
                }
                if let Some(words) = deciding.filter(|rule| rule.layer == Layer::Hook)
                    && let Some(reason) =
                        self.content_at(run.level, content.tool_inputs, || words.rule.clone())
                {
                    call.open.set("bosun.policy.reason", s(reason));
                }
                if let Some(source) = explanation.deciding_rule().and_then(|r| r.source.clone()) {
                    call.open.set("bosun.policy.source", s(source));
                }
                if let Some(plugin) = plugin_of(action) {
                    call.open.set("gen_ai.tool.type", s("extension"));
                    call.open.set("bosun.plugin.id", s(plugin));
                    if let Some(digest) = self.plugin_digests.get(plugin) {
                        call.open.set("bosun.plugin.digest", s(digest.clone()));
                    }
                }
                metrics.add(
                    Counter::ToolCalls,
                    &[
                        ("gen_ai.tool.name", tool),
                        ("bosun.policy.decision", &decision),
                    ],
                );
                if decision == "deny" {
                    metrics.add(
                        Counter::Denials,
                        &[
                            ("gen_ai.tool.name", tool),
                            ("bosun.policy.rule", rule.as_deref().unwrap_or("")),
                        ],
                    );
                }
                Some(call.open.context())
            }
            Event::ReviewAnswered {
                call_id,
                reviewer,
                verdict,
                ..
            } => {
                let call = run.tools.get_mut(call_id)?;
                call.open.set("bosun.review.verdict", s(verdict.clone()));
                call.open.set("bosun.review.by", s(reviewer.clone()));
                if verdict == "allow" {
                    call.open
                        .set("bosun.approval.by", s(format!("reviewer:{reviewer}")));
                }
                Some(call.open.context())
            }
            Event::ApprovalAsked { call_id, .. } => {
                let call = run.tools.get_mut(call_id)?;
                call.asked_ns = Some(now);
                call.open.event(now, "bosun.approval.asked", Vec::new());
                Some(call.open.context())
            }
            Event::ApprovalAnswered { call_id, answer } => {
                let call = run.tools.get_mut(call_id)?;
                let answer = serde_json::to_value(answer)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default();
                call.open.set("bosun.approval.answer", s(answer.clone()));
                if answer.starts_with("allow") {
                    call.open.set("bosun.approval.by", s("person"));
                }
                let tool = call.tool_name().to_owned();
                metrics.add(
                    Counter::Approvals,
                    &[
                        ("gen_ai.tool.name", &tool),
                        ("bosun.approval.answer", &answer),
                    ],
                );
                if let Some(asked) = call.asked_ns {
                    metrics.record(
                        Histogram::ApprovalWait,
                        now.saturating_sub(asked) as f64 / 1e9,
                        &[("gen_ai.tool.name", &tool)],
                    );
                }
                Some(call.open.context())
            }
            Event::CapabilityDecided {
                call_id,
                capability,
                explanation,
                ..
            } => {
                let call = run.tools.get_mut(call_id)?;
                call.open.event(
                    now,
                    "bosun.capability.decided",
                    vec![
                        (
                            "bosun.capability".to_owned(),
                            s(capability.capability.to_string()),
                        ),
                        (
                            "bosun.policy.decision".to_owned(),
                            s(explanation.decision.to_string()),
                        ),
                    ],
                );
                Some(call.open.context())
            }
            Event::ActionDecided {
                call_id,
                action,
                explanation,
                ..
            } => {
                let call = run.tools.get_mut(call_id)?;
                call.open.event(
                    now,
                    "bosun.action.decided",
                    vec![
                        ("bosun.action".to_owned(), s(action.clone())),
                        (
                            "bosun.policy.decision".to_owned(),
                            s(explanation.decision.to_string()),
                        ),
                    ],
                );
                Some(call.open.context())
            }
            Event::ToolStarted { call_id, .. } => {
                let call = run.tools.get_mut(call_id)?;
                call.open.event(now, "bosun.tool.started", Vec::new());
                Some(call.open.context())
            }
            Event::ToolOutput { call_id, .. } | Event::ToolLog { call_id, .. } => {
                run.tools.get(call_id).map(|c| c.open.context())
            }
            Event::TaintRaised { call_id, to, .. } => {
                run.level = run.level.max(*to);
                let level = to.to_string();
                run.root.set("bosun.taint", s(level.clone()));
                let call = run.tools.get_mut(call_id)?;
                call.open.set("bosun.taint", s(level));
                Some(call.open.context())
            }
            // Names and levels only: what was withheld is never part of the event.
            Event::ModelWithheld {
                call_id,
                what,
                level,
                ..
            } => {
                let withheld = s(format!("{what}: {level}"));
                run.root.set("bosun.model.withheld", withheld.clone());
                let call = run.tools.get_mut(call_id.as_deref()?)?;
                call.open.set("bosun.model.withheld", withheld);
                Some(call.open.context())
            }
            Event::UntrustedInput {
                call_id, source, ..
            } => {
                run.root.set("bosun.integrity", s("untrusted"));
                // It names the paths and hosts the call reached: the model's choice.
                let source = self.judged(run.level, || source.clone());
                let call = run.tools.get_mut(call_id)?;
                call.open.set("bosun.integrity", s("untrusted"));
                call.open.set("bosun.integrity.source", s(source));
                Some(call.open.context())
            }
            Event::HookApplied {
                call_id,
                hooks,
                redactions,
                level,
                ..
            } => {
                let call = run.tools.get_mut(call_id)?;
                call.open.set("bosun.hooks", Value::StrArray(hooks.clone()));
                call.open
                    .set("bosun.hooks.redactions", Value::Int(*redactions as i64));
                if let Some(level) = level {
                    call.open.set("bosun.label", s(level.to_string()));
                }
                Some(call.open.context())
            }
            Event::ToolCompleted {
                call_id,
                output,
                truncated,
                duration_us,
                ..
            } => {
                let mut call = run.tools.remove(call_id)?;
                call.resolved();
                let context = call.open.context();
                ids::forget_call(&envelope.run_id, call_id);
                call.open
                    .set("bosun.output.truncated", Value::Bool(*truncated));
                if let Some(result) =
                    self.content_at(run.level, content.tool_outputs, || output.to_string())
                {
                    call.open.set("gen_ai.tool.call.result", s(result));
                }
                call.open.span.status = StatusCode::Ok;
                metrics.record(
                    Histogram::ToolDuration,
                    *duration_us as f64 / 1e6,
                    &[("gen_ai.tool.name", call.tool_name())],
                );
                out.spans.push(call.open.end(now));
                Some(context)
            }
            Event::ToolFailed {
                call_id,
                error,
                duration_us,
                ..
            } => {
                let mut call = run.tools.remove(call_id)?;
                if error.code != ErrorCode::UnknownTool {
                    call.resolved();
                } else if let Some(name) = call.proposed.clone() {
                    // The name the model gave is content, like its arguments.
                    if let Some(name) = self.content_at(run.level, content.tool_inputs, || name) {
                        call.open.set("bosun.tool.proposed_name", s(name));
                    }
                    call.open.set("gen_ai.tool.name", s(UNKNOWN_TOOL));
                }
                let context = call.open.context();
                ids::forget_call(&envelope.run_id, call_id);
                let code = error.code.as_str().to_owned();
                call.open.set("error.type", s(code.clone()));
                call.open.span.status = StatusCode::Error;
                // The message may quote what the tool saw (and an unknown tool's, its name):
                // content.
                if let Some(message) =
                    self.content_at(run.level, content.tool_outputs, || error.message.clone())
                {
                    call.open.span.status_message = message;
                }
                let tool = call.tool_name().to_owned();
                let tool = tool.as_str();
                metrics.record(
                    Histogram::ToolDuration,
                    *duration_us as f64 / 1e6,
                    &[("gen_ai.tool.name", tool), ("error.type", &code)],
                );
                if matches!(
                    error.code,
                    bosun_core::ErrorCode::PluginError | bosun_core::ErrorCode::ProcessError
                ) {
                    metrics.add(
                        Counter::SandboxFailures,
                        &[("gen_ai.tool.name", tool), ("error.type", &code)],
                    );
                }
                out.spans.push(call.open.end(now));
                Some(context)
            }
            Event::BudgetExhausted { budget, limit } => {
                run.root.event(
                    now,
                    "bosun.budget.exhausted",
                    vec![
                        ("bosun.budget".to_owned(), s(budget.to_string())),
                        ("bosun.limit".to_owned(), Value::Int(i64::from(*limit))),
                    ],
                );
                Some(root_context)
            }
            Event::ContextCompacted {
                summarised, kept, ..
            } => {
                run.root.event(
                    now,
                    "bosun.context.compacted",
                    vec![
                        (
                            "bosun.summarised".to_owned(),
                            Value::Int(*summarised as i64),
                        ),
                        ("bosun.kept".to_owned(), Value::Int(*kept as i64)),
                    ],
                );
                Some(root_context)
            }
            Event::RunFinished { outcome } => {
                let outcome = serde_json::to_value(outcome)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default();
                run.root.set("bosun.run.outcome", s(outcome.clone()));
                if outcome == "completed" {
                    run.root.span.status = StatusCode::Ok;
                } else {
                    run.root.span.status = StatusCode::Error;
                    run.root.span.status_message = outcome.clone();
                    run.root.set("error.type", s(outcome));
                }
                Some(root_context)
            }
            _ => Some(root_context),
        }
    }

    /// Ends the run's span and whatever it left open (a call cut short ends with it).
    fn finish_run(&self, run_id: &str, mut run: RunState, now: u64, out: &mut Out) {
        if let Some(chat) = run.chat.take() {
            out.spans.push(chat.open.end(now));
        }
        for (_, mut call) in run.tools.drain() {
            if call.proposed.is_some() {
                call.open.set("gen_ai.tool.name", s(UNKNOWN_TOOL));
            }
            call.open.span.status = StatusCode::Error;
            call.open.span.status_message = "the run ended before the call did".to_owned();
            out.spans.push(call.open.end(now));
        }
        ids::forget_run(run_id);
        out.spans.push(run.root.end(now));
    }

    /// Ends every run still open (a trace that ends without `run.finished`: a crash, a saved
    /// run cut short) at `now_ns`.
    pub(crate) fn finish(&mut self, now_ns: u64, out: &mut Out) {
        let runs: Vec<(String, RunState)> = self.runs.drain().collect();
        for (run_id, run) in runs {
            self.finish_run(&run_id, run, now_ns, out);
        }
    }

    /// One log record per recorded event: its type and the fields that carry no content.
    fn log(&self, envelope: &Envelope, span: Option<SpanContext>, now: u64, out: &mut Out) {
        if !self.logs {
            return;
        }
        let kind = envelope.event.kind();
        let mut attributes: Vec<Attribute> =
            vec![("bosun.run.id".to_owned(), s(envelope.run_id.clone()))];
        let (severity, severity_text, body) = match &envelope.event {
            Event::ToolDecided {
                call_id,
                tool,
                explanation,
                ..
            } => {
                attributes.push(("gen_ai.tool.name".to_owned(), s(tool.clone())));
                attributes.push(("gen_ai.tool.call.id".to_owned(), s(call_id.clone())));
                attributes.push((
                    "bosun.policy.decision".to_owned(),
                    s(explanation.decision.to_string()),
                ));
                (9, "INFO", format!("{tool}: {}", explanation.decision))
            }
            Event::ToolFailed {
                call_id,
                tool,
                error,
                ..
            } => {
                // A name no tool answers to is the model's text.
                let tool = if error.code == ErrorCode::UnknownTool {
                    UNKNOWN_TOOL
                } else {
                    tool.as_str()
                };
                attributes.push(("gen_ai.tool.name".to_owned(), s(tool)));
                attributes.push(("gen_ai.tool.call.id".to_owned(), s(call_id.clone())));
                attributes.push(("error.type".to_owned(), s(error.code.as_str())));
                (
                    13,
                    "WARN",
                    format!("{tool} failed: {}", error.code.as_str()),
                )
            }
            Event::ModelFailed { step, .. } => (17, "ERROR", format!("model step {step} failed")),
            Event::ToolLog {
                call_id,
                tool,
                level,
                ..
            } => {
                attributes.push(("gen_ai.tool.name".to_owned(), s(tool.clone())));
                attributes.push(("gen_ai.tool.call.id".to_owned(), s(call_id.clone())));
                let (n, t) = match level.as_str() {
                    "error" => (17, "ERROR"),
                    "warn" => (13, "WARN"),
                    "debug" | "trace" => (5, "DEBUG"),
                    _ => (9, "INFO"),
                };
                // The level as Bosun names it: the word a plugin gave may be anything.
                (
                    n,
                    t,
                    format!("{tool} logged a {} line", t.to_ascii_lowercase()),
                )
            }
            _ => (9, "INFO", kind.to_owned()),
        };
        out.logs.push(LogRecord {
            time_ns: now,
            severity,
            severity_text,
            event_name: format!("bosun.{kind}"),
            body,
            attributes,
            span: span.map(|c| (c.trace_id, c.span_id)),
        });
    }
}
