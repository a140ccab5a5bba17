//! The run trace projected to OpenTelemetry: every event of a run (and of its subagents, whose
//! events reach the same observer) becomes part of a span, a metric or a log record. Spans
//! follow the GenAI conventions (semantic-conventions-genai, Development): `invoke_agent` for a
//! run, `chat {model}` for a model step, `execute_tool {tool}` for a call, with Bosun's
//! decisions on the same spans. Only what the trace holds is projected, already redacted;
//! content goes only when its switch is on. It never blocks and never fails a run.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use bosun_core::{Envelope, Event};

use crate::config::{ContentConfig, Signal};
use crate::context::{SpanContext, SpanId, TraceId};
use crate::export::Exporter;
use crate::metrics::{Counter, Histogram};
use crate::signal::{Attribute, LogRecord, Span, SpanEvent, SpanKind, StatusCode, Value};

/// The most bytes of one content attribute; longer is cut with `…`.
const MAX_CONTENT_BYTES: usize = 16 * 1024;

/// Projects the events of one run and its subagents into the exporter.
pub struct Projection {
    exporter: Arc<Exporter>,
    /// The caller's span (an incoming `traceparent`): the run's span becomes its child.
    remote_parent: Option<SpanContext>,
    /// Plugins' local names and their digests, for `bosun.plugin.digest`.
    plugin_digests: HashMap<String, String>,
    runs: Mutex<HashMap<String, RunState>>,
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

/// The span of each call in flight, for `traceparent` (an MCP request's `_meta`, a child
/// process's `TRACEPARENT`): the call's `execute_tool` span, else the run's.
fn in_flight() -> &'static Mutex<HashMap<(String, String), SpanContext>> {
    static IN_FLIGHT: OnceLock<Mutex<HashMap<(String, String), SpanContext>>> = OnceLock::new();
    IN_FLIGHT.get_or_init(Default::default)
}

/// Callers' spans of calls about to be proposed (a `bosun serve` request's `traceparent`).
fn remote_parents() -> &'static Mutex<HashMap<(String, String), SpanContext>> {
    static REMOTE: OnceLock<Mutex<HashMap<(String, String), SpanContext>>> = OnceLock::new();
    REMOTE.get_or_init(Default::default)
}

/// Makes the span of call `call_id` of run `run_id` (recorded next) a child of the caller's
/// span `traceparent` (an MCP request's `_meta.traceparent` or HTTP header), in the caller's
/// trace. A malformed header is ignored; nothing is kept when this process exports nothing.
pub fn adopt_parent(run_id: &str, call_id: &str, traceparent: &str) {
    if !crate::export::exporting() {
        return;
    }
    if let (Some(context), Ok(mut parents)) = (
        SpanContext::from_traceparent(traceparent),
        remote_parents().lock(),
    ) {
        // Bounded: a parent whose call never came is dropped with the oldest.
        if parents.len() >= 1024 {
            parents.clear();
        }
        parents.insert((run_id.to_owned(), call_id.to_owned()), context);
    }
}

/// The `traceparent` of call `call_id` of run `run_id` while it runs (`None` when telemetry
/// is off, or the call is not in flight): what Bosun hands to the MCP server or process the
/// call reaches, so their spans join the run's trace.
pub fn traceparent(run_id: &str, call_id: &str) -> Option<String> {
    let in_flight = in_flight().lock().ok()?;
    in_flight
        .get(&(run_id.to_owned(), call_id.to_owned()))
        .or_else(|| in_flight.get(&(run_id.to_owned(), String::new())))
        .map(SpanContext::traceparent)
}

impl Projection {
    /// A projection into `exporter`, its run a child of `remote_parent` when a caller sent a
    /// `traceparent`.
    pub fn new(exporter: Arc<Exporter>, remote_parent: Option<SpanContext>) -> Self {
        Self {
            exporter,
            remote_parent,
            plugin_digests: HashMap::new(),
            runs: Mutex::new(HashMap::new()),
        }
    }

    /// Plugins' digests by local name, recorded as `bosun.plugin.digest` on their calls.
    #[must_use]
    pub fn plugin_digests(mut self, digests: impl IntoIterator<Item = (String, String)>) -> Self {
        self.plugin_digests = digests.into_iter().collect();
        self
    }

    fn content(&self) -> ContentConfig {
        self.exporter.settings().content
    }

    /// Projects one event (already redacted by the trace).
    pub fn observe(&self, envelope: &Envelope) {
        let Ok(mut runs) = self.runs.lock() else {
            return;
        };
        let now = time_ns(envelope);
        if let Event::RunStarted {
            command,
            mode,
            sandbox,
            ..
        } = &envelope.event
        {
            let state = self.start_run(&runs, envelope, [command, mode, sandbox], now);
            if let Ok(mut in_flight) = in_flight().lock() {
                in_flight.insert(
                    (envelope.run_id.clone(), String::new()),
                    state.root.context(),
                );
            }
            runs.insert(envelope.run_id.clone(), state);
            drop(runs);
            self.log(envelope, None, now);
            return;
        }
        let Some(run) = runs.get_mut(&envelope.run_id) else {
            return;
        };
        let span_of_event = self.apply(run, envelope, now);
        let finished = matches!(envelope.event, Event::RunFinished { .. });
        if finished && let Some(run) = runs.remove(&envelope.run_id) {
            self.finish_run(&envelope.run_id, run, now);
        }
        drop(runs);
        if !envelope.event.is_live() {
            self.log(envelope, span_of_event, now);
        }
    }

    /// The run's span, from `run.started`'s command, mode and sandbox.
    fn start_run(
        &self,
        runs: &HashMap<String, RunState>,
        envelope: &Envelope,
        [command, mode, sandbox]: [&String; 3],
        now: u64,
    ) -> RunState {
        // A subagent's run hangs under the parent's call that started it (the delegate tool,
        // still in flight), else under the parent's run.
        let parent = envelope
            .parent_run_id
            .as_ref()
            .and_then(|parent| runs.get(parent))
            .map(|parent| {
                parent
                    .tools
                    .values()
                    .max_by_key(|t| t.open.span.start_ns)
                    .map(|t| t.open.context())
                    .unwrap_or_else(|| parent.root.context())
            })
            .or(self.remote_parent);
        let trace_id = parent.map(|p| p.trace_id).unwrap_or_else(TraceId::random);
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
            SpanContext {
                trace_id,
                span_id: SpanId::random(),
                sampled: true,
            },
            parent.map(|p| p.span_id),
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
        }
    }

    /// Applies one event to its run; returns the span it belongs to (for its log record).
    fn apply(&self, run: &mut RunState, envelope: &Envelope, now: u64) -> Option<SpanContext> {
        let content = self.content();
        let metrics = self.exporter.metrics();
        let root_context = run.root.context();
        match &envelope.event {
            Event::ModelStarted {
                step,
                model,
                messages,
                estimated_input_tokens,
            } => {
                if let Some(chat) = run.chat.take() {
                    self.exporter.span(chat.open.end(now));
                }
                run.model = Some(model.clone());
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
                    metrics.record(
                        Histogram::Tokens,
                        usage.input_tokens as f64,
                        &[
                            ("gen_ai.request.model", &model),
                            ("gen_ai.token.type", "input"),
                        ],
                    );
                    metrics.record(
                        Histogram::Tokens,
                        usage.output_tokens as f64,
                        &[
                            ("gen_ai.request.model", &model),
                            ("gen_ai.token.type", "output"),
                        ],
                    );
                }
                if content.model_output && !chat.text.is_empty() {
                    let message = serde_json::json!([{
                        "role": "assistant",
                        "parts": [{ "type": "text", "content": bounded(std::mem::take(&mut chat.text)) }],
                    }]);
                    chat.open
                        .set("gen_ai.output.messages", s(message.to_string()));
                }
                self.exporter.span(chat.open.end(now));
                Some(context)
            }
            Event::ModelFailed { .. } => {
                let mut chat = run.chat.take()?;
                let context = chat.open.context();
                chat.open.set("error.type", s("model_error"));
                chat.open.span.status = StatusCode::Error;
                // The provider's error names no content; it says what went wrong.
                if let Event::ModelFailed { error, .. } = &envelope.event {
                    chat.open.span.status_message = bounded(error.clone());
                }
                self.exporter.span(chat.open.end(now));
                Some(context)
            }
            Event::ToolProposed {
                call_id,
                tool,
                input,
            } => {
                let remote = remote_parents()
                    .lock()
                    .ok()
                    .and_then(|mut p| p.remove(&(envelope.run_id.clone(), call_id.clone())));
                let (trace_id, parent, kind) = match remote {
                    Some(caller) => (caller.trace_id, caller.span_id, SpanKind::Server),
                    None => (
                        root_context.trace_id,
                        root_context.span_id,
                        SpanKind::Internal,
                    ),
                };
                let mut open = OpenSpan::new(
                    SpanContext {
                        trace_id,
                        span_id: SpanId::random(),
                        sampled: true,
                    },
                    Some(parent),
                    format!("execute_tool {tool}"),
                    kind,
                    now,
                );
                if remote.is_some() {
                    // The session's own span, in Bosun's trace, for finding the rest of it.
                    open.set("bosun.run.span_id", s(root_context.span_id.to_hex()));
                    open.set("bosun.run.trace_id", s(root_context.trace_id.to_hex()));
                }
                open.set("gen_ai.operation.name", s("execute_tool"));
                open.set("gen_ai.tool.name", s(tool.clone()));
                open.set("gen_ai.tool.call.id", s(call_id.clone()));
                match mcp_server(tool) {
                    Some(server) => {
                        open.set("gen_ai.tool.type", s("extension"));
                        open.set("mcp.method.name", s("tools/call"));
                        open.set("bosun.mcp.server", s(server));
                    }
                    None => open.set("gen_ai.tool.type", s("function")),
                }
                if content.tool_inputs {
                    open.set("gen_ai.tool.call.arguments", s(bounded(input.to_string())));
                }
                let context = open.context();
                if let Ok(mut in_flight) = in_flight().lock() {
                    in_flight.insert((envelope.run_id.clone(), call_id.clone()), context);
                }
                run.tools.insert(
                    call_id.clone(),
                    ToolSpan {
                        open,
                        asked_ns: None,
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
                let decision = explanation.decision.to_string();
                call.open.set("bosun.policy.decision", s(decision.clone()));
                call.open.set("bosun.policy.action", s(action.clone()));
                let rule = explanation
                    .deciding_rule()
                    .map(|rule| format!("{} rule {}", rule.layer, rule.rule));
                if let Some(rule) = &rule {
                    call.open.set("bosun.policy.rule", s(rule.clone()));
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
                let tool = call.open.get("gen_ai.tool.name").unwrap_or("").to_owned();
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
            Event::ToolStarted { call_id, .. } => {
                let call = run.tools.get_mut(call_id)?;
                call.open.event(now, "bosun.tool.started", Vec::new());
                Some(call.open.context())
            }
            Event::ToolOutput { call_id, .. } | Event::ToolLog { call_id, .. } => {
                run.tools.get(call_id).map(|c| c.open.context())
            }
            Event::TaintRaised { call_id, to, .. } => {
                let level = to.to_string();
                run.root.set("bosun.taint", s(level.clone()));
                let call = run.tools.get_mut(call_id)?;
                call.open.set("bosun.taint", s(level));
                Some(call.open.context())
            }
            Event::UntrustedInput {
                call_id, source, ..
            } => {
                run.root.set("bosun.integrity", s("untrusted"));
                let call = run.tools.get_mut(call_id)?;
                call.open.set("bosun.integrity", s("untrusted"));
                call.open.set("bosun.integrity.source", s(source.clone()));
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
                tool,
                output,
                truncated,
                duration_us,
            } => {
                let mut call = run.tools.remove(call_id)?;
                let context = call.open.context();
                self.forget(&envelope.run_id, call_id);
                call.open
                    .set("bosun.output.truncated", Value::Bool(*truncated));
                if content.tool_outputs {
                    call.open
                        .set("gen_ai.tool.call.result", s(bounded(output.to_string())));
                }
                call.open.span.status = StatusCode::Ok;
                metrics.record(
                    Histogram::ToolDuration,
                    *duration_us as f64 / 1e6,
                    &[("gen_ai.tool.name", tool)],
                );
                self.exporter.span(call.open.end(now));
                Some(context)
            }
            Event::ToolFailed {
                call_id,
                tool,
                error,
                duration_us,
            } => {
                let mut call = run.tools.remove(call_id)?;
                let context = call.open.context();
                self.forget(&envelope.run_id, call_id);
                let code = error.code.as_str().to_owned();
                call.open.set("error.type", s(code.clone()));
                call.open.span.status = StatusCode::Error;
                // The message may quote what the tool saw: content.
                if content.tool_outputs {
                    call.open.span.status_message = bounded(error.message.clone());
                }
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
                self.exporter.span(call.open.end(now));
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

    fn forget(&self, run_id: &str, call_id: &str) {
        if let Ok(mut in_flight) = in_flight().lock() {
            in_flight.remove(&(run_id.to_owned(), call_id.to_owned()));
        }
    }

    /// Ends the run's span and whatever it left open (a call cut short ends with it).
    fn finish_run(&self, run_id: &str, mut run: RunState, now: u64) {
        if let Some(chat) = run.chat.take() {
            self.exporter.span(chat.open.end(now));
        }
        for (call_id, mut call) in run.tools.drain() {
            self.forget(run_id, &call_id);
            call.open.span.status = StatusCode::Error;
            call.open.span.status_message = "the run ended before the call did".to_owned();
            self.exporter.span(call.open.end(now));
        }
        self.forget(run_id, "");
        self.exporter.span(run.root.end(now));
    }

    /// Ends every run still open (a trace that ends without `run.finished`: a crash, a saved
    /// run cut short) at `now_ns`.
    pub fn finish(&self, now_ns: u64) {
        let runs: Vec<(String, RunState)> = match self.runs.lock() {
            Ok(mut runs) => runs.drain().collect(),
            Err(_) => return,
        };
        for (run_id, run) in runs {
            self.finish_run(&run_id, run, now_ns);
        }
    }

    /// One log record per recorded event: its type and the fields that carry no content.
    fn log(&self, envelope: &Envelope, span: Option<SpanContext>, now: u64) {
        if !self.exporter.exports(Signal::Logs) {
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
                attributes.push(("gen_ai.tool.name".to_owned(), s(tool.clone())));
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
                (n, t, format!("{tool} logged a {level} line"))
            }
            _ => (9, "INFO", kind.to_owned()),
        };
        self.exporter.log(LogRecord {
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

impl Drop for Projection {
    fn drop(&mut self) {
        self.finish(crate::export::now_ns());
    }
}
