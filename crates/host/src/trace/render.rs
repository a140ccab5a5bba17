//! Rendering a recorded run for a person: the timeline of its events and of the labels the
//! session took on. Text only; it reads no file.

use bosun_core::{Classification, Envelope, Event};

fn short(value: &serde_json::Value, max: usize) -> String {
    let text = crate::approval::sanitize_for_terminal(&value.to_string());
    if text.chars().count() <= max {
        text
    } else {
        let cut: String = text.chars().take(max).collect();
        format!("{cut}…")
    }
}

/// Renders a run for a person: its events, then the labels the session took on.
pub fn render(envelopes: &[Envelope]) -> String {
    let mut out = String::new();
    let mut timeline = Timeline::default();
    for envelope in envelopes {
        timeline.write(envelope, &mut out);
    }
    if timeline.is_empty() {
        return EMPTY.to_owned();
    }
    let mut labels = Labels::default();
    for envelope in envelopes {
        labels.write(envelope, &mut out);
    }
    out
}

/// What a run with no event renders as.
pub const EMPTY: &str = "empty trace\n";

/// The timeline of a run's events, rendered one envelope at a time so that a reader can
/// stream a trace of any length: it keeps only the run's start time.
#[derive(Debug, Default)]
pub struct Timeline {
    start: Option<chrono::DateTime<chrono::Utc>>,
}

impl Timeline {
    /// Whether no envelope was written yet.
    pub fn is_empty(&self) -> bool {
        self.start.is_none()
    }

    /// Appends the lines of `envelope` to `out`; the first envelope also writes the run's
    /// heading and sets the time the others are counted from.
    pub fn write(&mut self, envelope: &Envelope, out: &mut String) {
        use std::fmt::Write as _;
        let start = match self.start {
            Some(start) => start,
            None => {
                let _ = writeln!(out, "run {}", envelope.run_id);
                if let Some(parent) = &envelope.parent_run_id {
                    let _ = writeln!(out, "  parent run {parent}");
                }
                self.start = Some(envelope.timestamp);
                envelope.timestamp
            }
        };
        let at = (envelope.timestamp - start).num_milliseconds();
        let _ = match &envelope.event {
            Event::RunStarted {
                command,
                workspace,
                mode,
                sandbox,
                level,
            } => writeln!(
                out,
                "  started {} — {command}\n  workspace {workspace}, mode {mode}{}{}",
                envelope.timestamp.format("%Y-%m-%d %H:%M:%S UTC"),
                if level.is_public() {
                    String::new()
                } else {
                    format!(", session holds {level} data")
                },
                if sandbox.is_empty() {
                    String::new()
                } else {
                    format!("\n  {sandbox}")
                }
            ),
            Event::RunFinished { outcome } => writeln!(
                out,
                "  [{at:>5} ms] finished: {}",
                serde_json::to_string(outcome)
                    .unwrap_or_default()
                    .trim_matches('"')
            ),
            Event::ToolProposed {
                call_id,
                tool,
                input,
            } => {
                writeln!(
                    out,
                    "  [{at:>5} ms] {call_id} proposed {tool} {}",
                    short(input, 160)
                )
            }
            Event::ToolDecided {
                call_id,
                explanation,
                ..
            } => {
                writeln!(
                    out,
                    "  [{at:>5} ms] {call_id} decided {}",
                    explanation.summary()
                )
            }
            Event::CapabilityDecided {
                call_id,
                capability,
                explanation,
                ..
            } => writeln!(
                out,
                "  [{at:>5} ms] {call_id} asked mid-call for {} — decided {}",
                capability.capability.as_action(),
                explanation.summary()
            ),
            Event::ActionDecided {
                call_id,
                action,
                explanation,
                ..
            } => writeln!(
                out,
                "  [{at:>5} ms] {call_id} asked mid-call for {action} — decided {}",
                explanation.summary()
            ),
            Event::ReviewAnswered {
                call_id,
                reviewer,
                verdict,
                reason,
            } => writeln!(
                out,
                "  [{at:>5} ms] {call_id} reviewed by {reviewer}: {verdict} — {reason}"
            ),
            Event::ApprovalAsked {
                call_id, reason, ..
            } => writeln!(out, "  [{at:>5} ms] {call_id} asked a person: {reason}"),
            Event::ApprovalAnswered { call_id, answer } => writeln!(
                out,
                "  [{at:>5} ms] {call_id} answer: {}",
                serde_json::to_string(answer)
                    .unwrap_or_default()
                    .trim_matches('"')
            ),
            Event::PromptAssembled { sources } => {
                let parts: Vec<String> = sources
                    .iter()
                    .map(|p| {
                        format!(
                            "{} {} ({} B{})",
                            p.kind,
                            p.label,
                            p.bytes,
                            if p.truncated { ", cut" } else { "" }
                        )
                    })
                    .collect();
                writeln!(
                    out,
                    "  [{at:>5} ms] system prompt: {}",
                    crate::approval::sanitize_for_terminal(&parts.join("; "))
                )
            }
            Event::InputImage {
                sha256,
                media_type,
                bytes,
            } => writeln!(
                out,
                "  [{at:>5} ms] image attached: {} {bytes} B sha256:{}",
                crate::approval::sanitize_for_terminal(media_type),
                crate::approval::sanitize_for_terminal(sha256)
            ),
            Event::ModelStarted {
                step,
                model,
                messages,
                estimated_input_tokens,
                ..
            } => writeln!(
                out,
                "  [{at:>5} ms] model step {step}: {model}, {messages} messages, ~{estimated_input_tokens} tokens in"
            ),
            Event::ModelCompleted {
                step,
                finish,
                tool_calls,
                usage,
            } => writeln!(
                out,
                "  [{at:>5} ms] model step {step} done: {}, {tool_calls} tool call(s){}",
                finish.as_ref().map_or("?", |f| f.as_str()),
                usage
                    .map(|u| format!(", {} tokens in / {} out", u.input_tokens, u.output_tokens))
                    .unwrap_or_default()
            ),
            Event::ModelRetrying {
                step,
                attempt,
                attempts,
                delay_ms,
                reason,
            } => writeln!(
                out,
                "  [{at:>5} ms] model step {step}: attempt {attempt} of {attempts} failed ({}); retrying in {:.1} s",
                crate::approval::sanitize_for_terminal(reason),
                *delay_ms as f64 / 1000.0
            ),
            Event::ModelReasoning { step, text } => writeln!(
                out,
                "  [{at:>5} ms] model step {step} reasoning: {}",
                crate::approval::sanitize_for_terminal(text).replace('\n', "\n      ")
            ),
            Event::ModelFailed { step, error } => writeln!(
                out,
                "  [{at:>5} ms] model step {step} failed: {}",
                crate::approval::sanitize_for_terminal(error)
            ),
            // Never written to a trace file; a trace built by hand may hold it.
            Event::ModelText { step, text } => writeln!(
                out,
                "  [{at:>5} ms] model step {step} text: {}",
                short(&serde_json::Value::String(text.clone()), 120)
            ),
            Event::ToolOutput {
                call_id,
                stream,
                text,
            } => writeln!(
                out,
                "  [{at:>5} ms] tool {call_id} {stream:?} output: {}",
                short(&serde_json::Value::String(text.clone()), 120)
            ),
            Event::ContextElided {
                call_id,
                tool,
                bytes,
            } => {
                writeln!(
                    out,
                    "  [{at:>5} ms] {call_id} elided {bytes} bytes of {tool} output to fit the context window"
                )
            }
            Event::ContextCompacted {
                summarised,
                kept,
                summary_bytes,
                error,
            } => match error {
                None => writeln!(
                    out,
                    "  [{at:>5} ms] compacted {summarised} messages into a summary of {summary_bytes} bytes; {kept} kept"
                ),
                Some(error) => writeln!(
                    out,
                    "  [{at:>5} ms] compaction failed: {}",
                    crate::approval::sanitize_for_terminal(error)
                ),
            },
            Event::BudgetExhausted { budget, limit } => writeln!(
                out,
                "  [{at:>5} ms] budget exhausted: {budget} (limit {limit})"
            ),
            Event::ToolLog {
                call_id,
                level,
                message,
                ..
            } => writeln!(
                out,
                "  [{at:>5} ms] {call_id} log {level}: {}",
                crate::approval::sanitize_for_terminal(message)
            ),
            Event::ToolStarted { call_id, tool } => {
                writeln!(out, "  [{at:>5} ms] {call_id} started {tool}")
            }
            Event::ToolCompleted {
                call_id,
                output,
                truncated,
                duration_us,
                ..
            } => writeln!(
                out,
                "  [{at:>5} ms] {call_id} completed in {:.1} ms{}: {}",
                *duration_us as f64 / 1000.0,
                if *truncated { " (truncated)" } else { "" },
                short(output, 160)
            ),
            Event::TaintRaised {
                call_id, from, to, ..
            } => writeln!(
                out,
                "  [{at:>5} ms] {call_id} raised the session's taint {from} → {to}"
            ),
            Event::ModelWithheld {
                call_id,
                model,
                what,
                level,
                allowed,
            } => writeln!(
                out,
                "  [{at:>5} ms] {}{what} withheld from the model {model}: it holds {level} data and [models.{model}] may be sent {allowed} at most",
                call_id
                    .as_deref()
                    .map(|id| format!("{id} "))
                    .unwrap_or_default()
            ),
            Event::HookApplied {
                call_id,
                hooks,
                redactions,
                level,
                untrusted,
                ..
            } => writeln!(
                out,
                "  [{at:>5} ms] {call_id} {}: {redactions} redacted{}{}",
                hooks.join(", "),
                level.map(|l| format!(", level {l}")).unwrap_or_default(),
                if *untrusted { ", untrusted input" } else { "" }
            ),
            Event::UntrustedInput {
                call_id, source, ..
            } => writeln!(
                out,
                "  [{at:>5} ms] {call_id} brought untrusted input into the session: {source}"
            ),
            Event::PluginHookRan {
                event,
                plugin,
                outcome,
                detail,
                call_id,
                duration_ms,
            } => writeln!(
                out,
                "  [{at:>5} ms] {}{event} hook of {plugin}: {outcome} in {duration_ms} ms{}",
                call_id
                    .as_ref()
                    .map(|c| format!("{c} "))
                    .unwrap_or_default(),
                detail
                    .as_ref()
                    .map(|d| format!(": {}", d.chars().take(160).collect::<String>()))
                    .unwrap_or_default()
            ),
            Event::ApprovalRemembered {
                call_id,
                file,
                rules,
                error,
            } => match error {
                None => writeln!(
                    out,
                    "  [{at:>5} ms] {call_id} remembered {} rule(s) in {}",
                    rules.len(),
                    crate::approval::sanitize_for_terminal(file)
                ),
                Some(error) => writeln!(
                    out,
                    "  [{at:>5} ms] {call_id} could not remember the approval in {}: {}",
                    crate::approval::sanitize_for_terminal(file),
                    crate::approval::sanitize_for_terminal(error)
                ),
            },
            Event::ToolFailed { call_id, error, .. } => {
                writeln!(
                    out,
                    "  [{at:>5} ms] {call_id} failed: {} — {}",
                    error.code,
                    crate::approval::sanitize_for_terminal(&error.message)
                )
            }
        };
    }
}

/// The session's labels over the run, apart: each rise of its level, the untrusted input it
/// read, a hook's label, and every decision information flow tightened — with why. Written
/// one envelope at a time, after the [`Timeline`] (a second pass over the same envelopes); it
/// keeps only the session's state, not the lines it wrote.
#[derive(Debug, Default)]
pub struct Labels {
    start: Option<chrono::DateTime<chrono::Utc>>,
    level: Classification,
    untrusted: bool,
    /// Whether the heading was written.
    headed: bool,
    /// One envelope's lines, before the heading is known to be needed.
    lines: String,
}

impl Labels {
    /// Appends the label lines of `envelope` to `out`, under the heading written before the
    /// first of them.
    pub fn write(&mut self, envelope: &Envelope, out: &mut String) {
        use std::fmt::Write as _;
        let start = *self.start.get_or_insert(envelope.timestamp);
        let at = (envelope.timestamp - start).num_milliseconds();
        let state = |level: Classification, untrusted: bool| {
            if untrusted {
                format!("{level}, untrusted")
            } else {
                level.to_string()
            }
        };
        let lines = &mut self.lines;
        lines.clear();
        match &envelope.event {
            Event::TaintRaised {
                call_id,
                tool,
                from,
                to,
            } => {
                self.level = self.level.max(*to);
                let _ = writeln!(
                    lines,
                    "  [{at:>5} ms] {call_id} {tool}: level {from} → {to}  (session: {})",
                    state(self.level, self.untrusted)
                );
            }
            Event::UntrustedInput {
                call_id,
                tool,
                source,
            } => {
                self.untrusted = true;
                let _ = writeln!(
                    lines,
                    "  [{at:>5} ms] {call_id} {tool}: untrusted input from {}  (session: {})",
                    crate::approval::sanitize_for_terminal(source),
                    state(self.level, self.untrusted)
                );
            }
            Event::HookApplied {
                call_id,
                tool,
                hooks,
                level: Some(hooked),
                ..
            } => {
                let _ = writeln!(
                    lines,
                    "  [{at:>5} ms] {call_id} {tool}: labelled {hooked} by {}",
                    hooks.join(", ")
                );
            }
            Event::ToolDecided {
                call_id,
                tool,
                explanation,
                ..
            }
            | Event::CapabilityDecided {
                call_id,
                tool,
                explanation,
                ..
            }
            | Event::ActionDecided {
                call_id,
                tool,
                explanation,
                ..
            } => {
                for check in explanation
                    .checks
                    .iter()
                    .filter(|c| c.layer == bosun_core::Layer::Flow)
                {
                    let _ = writeln!(
                        lines,
                        "  [{at:>5} ms] {call_id} {tool}: {} {} — {}  (session: {})",
                        check.decision,
                        crate::approval::sanitize_for_terminal(&check.subject),
                        crate::approval::sanitize_for_terminal(&check.rule),
                        state(self.level, self.untrusted)
                    );
                }
            }
            _ => {}
        }
        if lines.is_empty() {
            return;
        }
        if !self.headed {
            out.push_str("labels (the session's level and integrity, and what they decided):\n");
            self.headed = true;
        }
        out.push_str(lines);
    }
}
