//! How the terminal UI follows a running turn: each trace envelope (recorded or live) becomes
//! entries and status, and the end of a turn gives the session back and starts what was
//! queued. Nothing here runs a model or a tool.

use std::time::Instant;

use bosun_agent::run::{Budget, RunEnd};
use bosun_core::{Envelope, Event};
use bosun_host::approval::sanitize_for_terminal;

use super::app::{App, child_event};
use super::events::TurnEnd;
use super::transcript::{Entry, ToolEntry, ToolState, tool_entry};

/// Below this share of the window left, the person is told once.
const CONTEXT_WARN_PERCENT: u64 = 15;

impl App {
    pub(super) fn trace(&mut self, envelope: &Envelope) {
        // A subagent's events: its progress in the status line, nothing in the transcript.
        if envelope.parent_run_id.is_some() {
            child_event(&mut self.children, envelope);
            return;
        }
        let Some(run) = &mut self.running else {
            return;
        };
        let tool = tool_entry;
        match &envelope.event {
            Event::ModelStarted {
                step,
                estimated_input_tokens,
                ..
            } => {
                self.context_used = Some(*estimated_input_tokens);
                if let Some(left) = self.context.percent_left(*estimated_input_tokens)
                    && left < CONTEXT_WARN_PERCENT
                    && !std::mem::replace(&mut self.context_warned, true)
                {
                    self.entries.push(Entry::Warning(format!(
                        "context nearly full ({left}% left): the earlier turns are summarised automatically before it overflows, or now with /compact"
                    )));
                }
                self.steps = *step;
                run.text_entry = None;
                run.doing = ("thinking".to_owned(), Instant::now());
            }
            Event::ModelRetrying {
                delay_ms, reason, ..
            } => {
                run.retry = Some((
                    sanitize_for_terminal(reason),
                    Instant::now() + std::time::Duration::from_millis(*delay_ms),
                ));
            }
            Event::ModelCompleted {
                usage: Some(usage), ..
            } => {
                self.tokens.0 += usage.input_tokens;
                self.tokens.1 += usage.output_tokens;
            }
            Event::ModelText { text, .. } => {
                run.retry = None;
                let text = text.replace('\t', "    ");
                match run.text_entry.and_then(|i| self.entries.get_mut(i)) {
                    Some(Entry::Assistant(shown)) => shown.push_str(&text),
                    _ => {
                        run.text_entry = Some(self.entries.len());
                        self.entries.push(Entry::Assistant(text));
                    }
                }
            }
            Event::ModelReasoning { text, .. } => {
                run.retry = None;
                run.text_entry = None;
                self.entries.push(Entry::Reasoning(text.clone()));
            }
            Event::TaintRaised { to, .. } => self.labels.0 = self.labels.0.max(*to),
            Event::UntrustedInput { source, .. } => {
                self.labels.1.get_or_insert_with(|| source.clone());
            }
            Event::ContextElided { tool, bytes, .. } => self.entries.push(Entry::Notice(format!(
                "elided {bytes} bytes of an earlier {} output to fit the context window",
                sanitize_for_terminal(tool)
            ))),
            Event::ContextCompacted {
                summarised, error, ..
            } => {
                self.context_warned = false;
                self.entries.push(match error {
                    None => Entry::Notice(format!(
                        "compacted {summarised} earlier messages into a summary to fit the context window"
                    )),
                    Some(error) => Entry::Warning(format!(
                        "the conversation could not be compacted: {}",
                        sanitize_for_terminal(error)
                    )),
                });
            }
            Event::ToolProposed {
                call_id,
                tool,
                input,
            } => {
                self.tool_calls += 1;
                run.text_entry = None;
                run.doing = (sanitize_for_terminal(tool), Instant::now());
                self.entries.push(Entry::Tool(ToolEntry {
                    call_id: call_id.clone(),
                    tool: sanitize_for_terminal(tool),
                    input: super::calls::headline(tool, input),
                    json: super::calls::input_json(input),
                    outcome: None,
                    decision: None,
                    detail: Vec::new(),
                    answer: None,
                    state: ToolState::Proposed,
                }));
            }
            Event::ToolDecided {
                call_id,
                explanation,
                ..
            } => {
                if let Some(entry) = tool(&mut self.entries, call_id) {
                    entry.decision = worth_a_line(explanation)
                        .then(|| sanitize_for_terminal(&explanation.summary()));
                }
            }
            Event::ApprovalAsked { call_id, .. } => {
                run.doing = ("your answer".to_owned(), Instant::now());
                if let Some(entry) = tool(&mut self.entries, call_id) {
                    entry.state = ToolState::Asking;
                }
            }
            Event::ApprovalAnswered { call_id, answer } => {
                if let Some(entry) = tool(&mut self.entries, call_id) {
                    entry.answer = Some(*answer);
                }
            }
            Event::ToolStarted {
                call_id,
                tool: name,
            } => {
                run.doing = (sanitize_for_terminal(name), Instant::now());
                if let Some(entry) = tool(&mut self.entries, call_id) {
                    entry.state = ToolState::Running;
                }
            }
            Event::ToolOutput {
                call_id,
                stream,
                text,
            } => {
                if let Some(entry) = tool(&mut self.entries, call_id)
                    && entry.state == ToolState::Running
                {
                    super::results::push_output(
                        &mut entry.detail,
                        text,
                        *stream == bosun_core::OutputStream::Stderr,
                    );
                }
            }
            Event::ToolCompleted {
                call_id, output, ..
            } => {
                if let Some(entry) = tool(&mut self.entries, call_id) {
                    let (summary, detail) = super::results::summarize(&entry.tool, output);
                    entry.outcome = super::calls::outcome(&entry.tool, output);
                    entry.state = ToolState::Done(summary);
                    entry.detail = detail;
                }
            }
            Event::ToolFailed { call_id, error, .. } => {
                if let Some(entry) = tool(&mut self.entries, call_id) {
                    entry.state = ToolState::Failed {
                        code: error.code.to_string(),
                        message: sanitize_for_terminal(&error.message),
                    };
                }
            }
            _ => {}
        }
    }

    pub(super) fn turn_ended(&mut self, end: TurnEnd) {
        let TurnEnd {
            open,
            run_id,
            result,
        } = end;
        self.session_id.clone_from(&open.stored.id);
        let model = open.stored.model.clone();
        self.session = Some(open);
        self.running = None;
        self.deny_all();
        if run_id.is_some() {
            self.last_run = run_id;
        }
        match result {
            Err(e) => self
                .entries
                .push(Entry::Error(format!("the run could not start: {e}"))),
            Ok(done) => {
                self.entries
                    .extend(done.warnings.into_iter().map(Entry::Warning));
                match &done.report.end {
                    RunEnd::Completed => {}
                    RunEnd::LimitReached { budget, limit } => {
                        self.entries.push(Entry::Warning(format!(
                            "the run used its budget of {limit} {budget}; say \"continue\" to go on, or raise [agent] {} in {}",
                            match budget {
                                Budget::Steps => "max_steps",
                                Budget::ToolCalls => "max_tool_calls",
                            },
                            crate::env::config_path(&self.env)
                        )));
                    }
                    RunEnd::Cancelled => self.entries.push(Entry::Notice(
                        "cancelled; the session is saved and the next line continues it".to_owned(),
                    )),
                    RunEnd::Stopped { plugin, reason } => {
                        self.entries.push(Entry::Warning(format!(
                            "a hook of the plugin `{}` stopped the run: {}",
                            sanitize_for_terminal(plugin),
                            sanitize_for_terminal(reason)
                        )));
                    }
                    RunEnd::ModelFailed(e) => self.entries.push(Entry::Error(format!(
                        "model `{}`: {}{}",
                        sanitize_for_terminal(&model),
                        sanitize_for_terminal(&e.to_string()),
                        if bosun_agent::compaction::is_overflow(e) {
                            "; the conversation is over the model's context window: /compact summarises the earlier turns (or set context_window in its [models.<name>] entry so Bosun compacts in time)"
                        } else {
                            ""
                        }
                    ))),
                }
                if done.saved {
                    self.stored = true;
                } else if !done.discarded {
                    self.entries.push(Entry::Warning(
                        "the session could not be stored (see the warning above)".to_owned(),
                    ));
                }
            }
        }
        if self.quit_after_run {
            self.exit = true;
        } else if let Some(next) = self.queued.pop_front() {
            self.submit(next);
        }
    }
}

/// Whether a decision earns a line under its call: not a plain allow by the permission mode's
/// defaults (every read in the default mode), but an ask, a deny, or an allow by a rule someone
/// wrote or granted (a config rule, a session grant, a hook).
pub(super) fn worth_a_line(explanation: &bosun_core::Explanation) -> bool {
    explanation.decision != bosun_core::Decision::Allow
        || explanation
            .deciding_rule()
            .is_some_and(|rule| rule.layer != bosun_core::Layer::Mode)
}
