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

/// Renders a run for a person.
pub fn render(envelopes: &[Envelope]) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let Some(first) = envelopes.first() else {
        return "empty trace\n".to_owned();
    };
    let start = first.timestamp;
    let _ = writeln!(out, "run {}", first.run_id);
    if let Some(parent) = &first.parent_run_id {
        let _ = writeln!(out, "  parent run {parent}");
    }
    for envelope in envelopes {
        let at = (envelope.timestamp - start).num_milliseconds();
        let _ = match &envelope.event {
            Event::RunStarted {
                command,
                workspace,
                mode,
                sandbox,
            } => writeln!(
                out,
                "  started {} — {command}\n  workspace {workspace}, mode {mode}{}",
                envelope.timestamp.format("%Y-%m-%d %H:%M:%S UTC"),
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
            Event::ModelStarted {
                step,
                model,
                messages,
                estimated_input_tokens,
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
    out.push_str(&labels_timeline(envelopes, start));
    out
}

/// The session's labels over the run, apart: each rise of its level, the untrusted input it
/// read, a hook's label, and every decision information flow tightened — with why.
fn labels_timeline(envelopes: &[Envelope], start: chrono::DateTime<chrono::Utc>) -> String {
    use std::fmt::Write as _;
    let mut lines = String::new();
    let mut level = Classification::Public;
    let mut untrusted: Option<String> = None;
    for envelope in envelopes {
        let at = (envelope.timestamp - start).num_milliseconds();
        let state = |level: Classification, untrusted: &Option<String>| match untrusted {
            Some(_) => format!("{level}, untrusted"),
            None => level.to_string(),
        };
        match &envelope.event {
            Event::TaintRaised {
                call_id,
                tool,
                from,
                to,
            } => {
                level = level.max(*to);
                let _ = writeln!(
                    lines,
                    "  [{at:>5} ms] {call_id} {tool}: level {from} → {to}  (session: {})",
                    state(level, &untrusted)
                );
            }
            Event::UntrustedInput {
                call_id,
                tool,
                source,
            } => {
                untrusted.get_or_insert_with(|| source.clone());
                let _ = writeln!(
                    lines,
                    "  [{at:>5} ms] {call_id} {tool}: untrusted input from {}  (session: {})",
                    crate::approval::sanitize_for_terminal(source),
                    state(level, &untrusted)
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
                        state(level, &untrusted)
                    );
                }
            }
            _ => {}
        }
    }
    if lines.is_empty() {
        return String::new();
    }
    format!("labels (the session's level and integrity, and what they decided):\n{lines}")
}
