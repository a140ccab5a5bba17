//! The run loop: a task in, a model and the [`Chokepoint`] taking turns until the model answers
//! without calling a tool, a budget runs out, the run is cancelled or the provider fails.
//!
//! Each step sends the system prompt, the conversation and the chokepoint's tool definitions to
//! the model, streams its answer (text deltas go to the trace's observers as they arrive), then
//! takes every tool call it made through [`Chokepoint::call`] — the only way a tool runs. A
//! denied, refused or failed call becomes an error tool result the model reads on its next step:
//! tool errors never end a run. The loop never decides what a tool may do; policy does.
//!
//! **Budgets** ([`Budgets`], defaults 24 model steps and 60 tool calls): a run that would need a
//! step more, or whose model asks for more tool calls than are left, ends with
//! [`RunEnd::LimitReached`]. Calls over the budget are not run; they get a `limit_reached` result
//! so the conversation stays whole and can be resumed.
//!
//! **Cancellation**: the token stops the model stream (the connection is dropped) and the running
//! tool (the chokepoint cancels it and returns `cancelled`); calls of that step not yet started
//! get a `cancelled` result without running. The run ends with [`RunEnd::Cancelled`].
//!
//! **Context elision and compaction**: before each step the oldest tool outputs are elided to
//! fit the model's context window (see [`crate::context`]); when that is not enough, or the
//! provider answers that the request is over the window, the earlier turns are compacted into a
//! summary (see [`crate::compaction`]).

use std::path::Path;
use std::sync::Arc;

pub use bosun_core::Budget;
use bosun_core::{ErrorCode, Event, RunOutcome, TokenUsage, ToolCall, ToolError, ToolResult};
use bosun_models::{
    Answer, Image, Message, ModelError, ModelEvent, ModelRequest, Provider, ToolDefinition,
};
use futures_util::StreamExt;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::compaction::{compact, is_overflow, needs_compaction};
pub use crate::context::{
    BYTES_PER_TOKEN, ContextBudget, DEFAULT_OUTPUT_RESERVE, ELIDE_AT_PERCENT, ELIDE_TO_PERCENT,
    Elision, elide_to_fit, elision_marker, estimate_tokens,
};
use crate::instructions::{PromptKind, SystemPrompt, SystemPromptBuilder, instruction_files};
use bosun_host::chokepoint::Chokepoint;
use bosun_host::plugin_hooks::{PromptVerdict, RunHooks, StopVerdict};
use bosun_host::session::{ModelSink, RunBudget, Session};
use bosun_host::trace::Trace;

/// Default most model steps in one run.
pub const DEFAULT_MAX_STEPS: u32 = 24;
/// Default most tool calls in one run.
pub const DEFAULT_MAX_TOOL_CALLS: u32 = 60;

/// How much one run may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Budgets {
    /// Most model requests.
    pub max_steps: u32,
    /// Most tool calls taken through the chokepoint.
    pub max_tool_calls: u32,
}

impl Default for Budgets {
    fn default() -> Self {
        Self {
            max_steps: DEFAULT_MAX_STEPS,
            max_tool_calls: DEFAULT_MAX_TOOL_CALLS,
        }
    }
}

/// Ends the text an answer had streamed when its run was cancelled, as the stored session keeps
/// it: the model reading it later knows it stopped there, not that it was done.
pub const CANCELLED_MARK: &str = "[cancelled by the person here]";

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum RunEnd {
    /// The model answered without calling a tool.
    Completed,
    /// A budget ran out.
    LimitReached {
        /// Which.
        budget: Budget,
        /// Its limit.
        limit: u32,
    },
    /// The cancellation token fired.
    Cancelled,
    /// The model provider failed (after its own retries).
    ModelFailed(ModelError),
    /// A plugin's hook stopped the run: a `UserPromptSubmit` hook blocked the prompt before
    /// any model saw it, or a hook answered `continue: false`.
    Stopped {
        /// The plugin, `name@marketplace`.
        plugin: String,
        /// Its reason.
        reason: String,
    },
}

impl RunEnd {
    /// The outcome written to the trace.
    pub fn trace_outcome(&self) -> RunOutcome {
        match self {
            Self::Completed => RunOutcome::Completed,
            Self::LimitReached { .. } => RunOutcome::LimitReached,
            Self::Cancelled => RunOutcome::Cancelled,
            Self::ModelFailed(_) => RunOutcome::Failed,
            Self::Stopped { .. } => RunOutcome::Denied,
        }
    }
}

/// What a run did.
#[derive(Debug, Clone, PartialEq)]
pub struct RunReport {
    /// How it ended.
    pub end: RunEnd,
    /// The text of the model's last answer (the final answer when completed).
    pub text: String,
    /// The whole conversation afterwards, ready to store and resume.
    pub messages: Vec<Message>,
    /// Model steps taken.
    pub steps: u32,
    /// Tool calls taken through the chokepoint.
    pub tool_calls: u32,
    /// The provider's token counts, summed over the steps.
    pub usage: TokenUsage,
    /// The text the model had streamed when the run was cancelled in the middle of an answer.
    /// `messages` ends before it (an unfinished answer is no turn of the conversation); storing
    /// the session keeps it, marked as cut off ([`crate::conversation::Conversation::keep`]).
    pub partial: Option<String>,
}

/// Builds an [`Agent`].
pub struct AgentBuilder {
    provider: Arc<dyn Provider>,
    model: String,
    chokepoint: Arc<Chokepoint>,
    system_prompt: SystemPrompt,
    budgets: Budgets,
    context: ContextBudget,
    command: String,
    pool: Option<Arc<RunBudget>>,
    hooks: Option<Arc<RunHooks>>,
    subagent: bool,
    session_start: Option<String>,
    sink: Option<ModelSink>,
}

impl AgentBuilder {
    /// The model's `[models.<name>]` entry and the most it may be sent
    /// ([`bosun_models::ModelsConfig::level_of`]): the run sets it on its session, so the
    /// chokepoint withholds from it a result above that level, and sends it no request while
    /// the session holds more. Without it nothing is judged (a model nobody configured).
    pub fn sink(mut self, sink: Option<ModelSink>) -> Self {
        self.sink = sink;
        self
    }

    /// The Claude Code plugins' run-moment hooks this agent fires (`UserPromptSubmit`,
    /// `PostToolUse`, `Stop`, `PreCompact`; `SubagentStop` for a subagent's).
    pub fn plugin_hooks(mut self, hooks: Option<Arc<RunHooks>>) -> Self {
        self.hooks = hooks;
        self
    }

    /// This agent runs a subagent: its end fires `SubagentStop`, and its task (the parent
    /// model's words, not a person's) no `UserPromptSubmit`.
    pub fn subagent(mut self) -> Self {
        self.subagent = true;
        self
    }

    /// Fires the plugins' `SessionStart` hooks (`source`: `startup` or `resume`) before the
    /// request, their context sent with it.
    pub fn session_start(mut self, source: Option<&str>) -> Self {
        self.session_start = source.map(str::to_owned);
        self
    }

    /// Draws every step and tool call from `pool` as well as from the agent's own budgets (a
    /// subagent shares its parent run's pool). Without it each run has a pool of its own.
    pub fn shared_budget(mut self, pool: Arc<RunBudget>) -> Self {
        self.pool = Some(pool);
        self
    }

    /// Sets the system prompt (default: Bosun's own instructions only).
    pub fn system_prompt(mut self, prompt: SystemPrompt) -> Self {
        self.system_prompt = prompt;
        self
    }

    /// Sets the budgets.
    pub fn budgets(mut self, budgets: Budgets) -> Self {
        self.budgets = budgets;
        self
    }

    /// Sets the model's size limits.
    pub fn context(mut self, context: ContextBudget) -> Self {
        self.context = context;
        self
    }

    /// Sets what the trace's `run.started` says started the run (default `run`).
    pub fn command(mut self, command: impl Into<String>) -> Self {
        self.command = command.into();
        self
    }

    /// The agent.
    pub fn build(self) -> Agent {
        let tools = self
            .chokepoint
            .specs()
            .iter()
            .map(ToolDefinition::from)
            .collect();
        Agent {
            provider: self.provider,
            model: self.model,
            chokepoint: self.chokepoint,
            system_prompt: self.system_prompt,
            budgets: self.budgets,
            context: self.context,
            command: self.command,
            tools,
            pool: self.pool,
            hooks: self.hooks,
            subagent: self.subagent,
            session_start: self.session_start,
            sink: self.sink,
        }
    }
}

/// A model, the chokepoint and what bounds them: runs tasks.
pub struct Agent {
    provider: Arc<dyn Provider>,
    model: String,
    chokepoint: Arc<Chokepoint>,
    system_prompt: SystemPrompt,
    budgets: Budgets,
    context: ContextBudget,
    command: String,
    tools: Vec<ToolDefinition>,
    pool: Option<Arc<RunBudget>>,
    hooks: Option<Arc<RunHooks>>,
    subagent: bool,
    session_start: Option<String>,
    sink: Option<ModelSink>,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("provider", &self.provider.name())
            .field("model", &self.model)
            .field("budgets", &self.budgets)
            .field("context", &self.context)
            .finish_non_exhaustive()
    }
}

/// Assembles the system prompt: Bosun's instructions, `AGENTS.md` in `home` and at the
/// workspace root (not in a folder the person refused to trust, `project_instructions` false),
/// then each plugin's contribution as `(local_name, text)`. An instructions file that exists but
/// cannot be read is left out and named in the returned warnings.
pub fn system_prompt(
    home: &Path,
    workspace_root: &Path,
    project_instructions: bool,
    contributions: &[(String, String)],
) -> (SystemPrompt, Vec<String>) {
    let mut builder = SystemPromptBuilder::new();
    builder.environment(workspace_root);
    let mut warnings = Vec::new();
    for (kind, path) in instruction_files(home, workspace_root) {
        if kind == PromptKind::ProjectInstructions && !project_instructions {
            continue;
        }
        if let Err(e) = builder.instructions_file(kind, &path) {
            warnings.push(format!(
                "instructions file {} left out: {e}",
                path.display()
            ));
        }
    }
    for (local_name, text) in contributions {
        builder.plugin(local_name, text);
    }
    (builder.build(), warnings)
}

fn error_content(error: ToolError) -> String {
    serde_json::to_string(&ToolResult::err(error)).unwrap_or_else(|_| "{\"ok\":false}".to_owned())
}

/// One call's result as the model reads it, and whether a plugin's hook stops the run after it.
struct Ran {
    content: String,
    is_error: bool,
    halt: Option<(String, String)>,
}

enum StepEnd {
    Answer(Answer),
    /// Cancelled, with the text the model had streamed before (empty when none).
    Cancelled(String),
    Failed(ModelError),
}

impl Agent {
    /// Starts an agent over `provider` (asking for the provider's model id `model`) and
    /// `chokepoint`.
    pub fn builder(
        provider: Arc<dyn Provider>,
        model: impl Into<String>,
        chokepoint: Arc<Chokepoint>,
    ) -> AgentBuilder {
        AgentBuilder {
            provider,
            model: model.into(),
            chokepoint,
            system_prompt: SystemPromptBuilder::new().build(),
            budgets: Budgets::default(),
            context: ContextBudget::default(),
            command: "run".to_owned(),
            pool: None,
            hooks: None,
            subagent: false,
            session_start: None,
            sink: None,
        }
    }

    /// The tools offered to the model when the agent was built.
    pub fn tools(&self) -> &[ToolDefinition] {
        &self.tools
    }

    /// The conversation as this model may be sent it: for a model that takes no images, the
    /// images of earlier turns (attached while another model was chosen) become text notes. The
    /// request's own images stay, so the provider refuses them rather than dropping them.
    fn sendable(&self, messages: &[Message], turn_start: usize) -> Vec<Message> {
        if self.provider.takes_images() {
            return messages.to_vec();
        }
        messages
            .iter()
            .enumerate()
            .map(|(i, message)| match message {
                Message::User { text, images } if i < turn_start && !images.is_empty() => {
                    let mut notes: Vec<String> = images
                        .iter()
                        .map(|image| image.placeholder("this model takes no images"))
                        .collect();
                    notes.push(text.clone());
                    Message::user(notes.join("\n"))
                }
                other => other.clone(),
            })
            .collect()
    }

    /// The tools the chokepoint holds now.
    fn current_tools(&self) -> Vec<ToolDefinition> {
        self.chokepoint
            .specs()
            .iter()
            .map(ToolDefinition::from)
            .collect()
    }

    /// Runs `task` after the earlier `conversation` (empty for a new session), recording
    /// `run.started`, every tool call and `run.finished` in `trace`. Never panics on what the
    /// model or a tool sends; every way it ends is a [`RunEnd`].
    pub async fn run(
        &self,
        conversation: Vec<Message>,
        task: &str,
        session: &Arc<Session>,
        trace: &Trace,
        cancel: &CancellationToken,
    ) -> RunReport {
        self.run_with_images(conversation, task, Vec::new(), session, trace, cancel)
            .await
    }

    /// [`Agent::run`] with `images` attached to the request, sent before its text. The trace
    /// records each image's digest, media type and size (`input.image`), never its bytes. A
    /// model that takes no images refuses them before anything is sent, and the run ends with
    /// [`RunEnd::ModelFailed`] naming the `images` key.
    pub async fn run_with_images(
        &self,
        conversation: Vec<Message>,
        task: &str,
        images: Vec<Image>,
        session: &Arc<Session>,
        trace: &Trace,
        cancel: &CancellationToken,
    ) -> RunReport {
        if let Some(sink) = &self.sink {
            session.set_model(&sink.name, sink.allowed);
        }
        trace.record(bosun_host::run_trace::run_started(
            &self.chokepoint,
            &self.command,
            session.taint(),
        ));
        trace.record(Event::PromptAssembled {
            sources: self.system_prompt.sources.clone(),
        });
        let mut report = RunReport {
            end: RunEnd::Completed,
            text: String::new(),
            messages: conversation,
            steps: 0,
            tool_calls: 0,
            usage: TokenUsage::default(),
            partial: None,
        };
        let turn_start = report.messages.len();
        for image in &images {
            trace.record(Event::InputImage {
                sha256: image.sha256.clone(),
                media_type: image.media_type.media_type().to_owned(),
                bytes: image.size,
            });
        }
        // The plugins' hooks of the request's moment: what they add is sent after the task,
        // each part naming its plugin; a block ends the run before any model sees the task.
        let mut added = Vec::new();
        if let Some(hooks) = &self.hooks {
            hooks.drain(trace);
            if let Some(source) = &self.session_start
                && hooks.has("SessionStart")
            {
                added.extend(
                    hooks
                        .session_start(source, session.as_ref(), trace, cancel)
                        .await,
                );
            }
            if !self.subagent && hooks.has("UserPromptSubmit") {
                match hooks
                    .user_prompt_submit(task, session.as_ref(), trace, cancel)
                    .await
                {
                    PromptVerdict::Send { context } => added.extend(context),
                    PromptVerdict::Block { plugin, reason } => {
                        report.end = RunEnd::Stopped { plugin, reason };
                        trace.record(Event::RunFinished {
                            outcome: report.end.trace_outcome(),
                        });
                        trace.flush();
                        return report;
                    }
                }
            }
        }
        let sent = if added.is_empty() {
            task.to_owned()
        } else {
            format!("{task}\n\n{}", added.join("\n\n"))
        };
        report
            .messages
            .push(Message::user_with_images(sent, images));
        // A reviewer weighs each call against what the person asked.
        session.set_request(task);
        // The run's pool, which the subagents it starts draw from too.
        let pool = self.pool.clone().unwrap_or_else(|| {
            Arc::new(RunBudget::new(
                self.budgets.max_steps,
                self.budgets.max_tool_calls,
            ))
        });
        session.set_run_budget(pool.clone());
        report.end = self
            .steps(&mut report, turn_start, session, trace, cancel, &pool)
            .await;
        trace.record(Event::RunFinished {
            outcome: report.end.trace_outcome(),
        });
        trace.flush();
        report
    }

    async fn steps(
        &self,
        report: &mut RunReport,
        mut turn_start: usize,
        session: &Arc<Session>,
        trace: &Trace,
        cancel: &CancellationToken,
        pool: &RunBudget,
    ) -> RunEnd {
        let mut stop_continues = 0;
        loop {
            if cancel.is_cancelled() {
                return RunEnd::Cancelled;
            }
            if report.steps >= self.budgets.max_steps || !pool.take_step() {
                return self.exhausted(trace, Budget::Steps, self.budgets.max_steps);
            }
            report.steps += 1;
            let step = report.steps;
            // The conversation holds what the session holds: above what the model may be sent,
            // nothing is sent (no request, no compaction).
            if let Some(error) = self.above_level(session, "request", None, trace) {
                trace.record(Event::ModelFailed {
                    step,
                    error: error.to_string(),
                });
                return RunEnd::ModelFailed(error);
            }
            // The tool set can grow during a run (a plugin the model installed): offer what
            // exists now.
            let tools = self.current_tools();
            for elision in elide_to_fit(
                &self.context,
                &self.system_prompt.text,
                &tools,
                &mut report.messages,
            ) {
                trace.record(Event::ContextElided {
                    call_id: elision.call_id,
                    tool: elision.tool,
                    bytes: elision.bytes as u64,
                });
            }
            if needs_compaction(
                &self.context,
                &self.system_prompt.text,
                &tools,
                &report.messages,
            ) {
                self.compact(report, &mut turn_start, trace, cancel).await;
            }
            let mut compacted_on_overflow = false;
            let answer = loop {
                let request = ModelRequest {
                    model: self.model.clone(),
                    system: Some(self.system_prompt.text.clone()),
                    messages: self.sendable(&report.messages, turn_start),
                    tools: tools.clone(),
                    max_output_tokens: self.context.max_output_tokens,
                };
                trace.record(Event::ModelStarted {
                    step,
                    model: self.model.clone(),
                    provider: self.provider.name().to_owned(),
                    messages: request.messages.len() as u64,
                    estimated_input_tokens: estimate_tokens(
                        &self.system_prompt.text,
                        &tools,
                        &request.messages,
                    ),
                });
                match self.model_step(step, &request, trace, cancel).await {
                    StepEnd::Answer(answer) => break answer,
                    StepEnd::Cancelled(partial) => {
                        // What the person saw stream is handed on, for the stored session.
                        if !partial.trim().is_empty() {
                            report.text.clone_from(&partial);
                            report.partial = Some(partial);
                        }
                        return RunEnd::Cancelled;
                    }
                    StepEnd::Failed(error) => {
                        trace.record(Event::ModelFailed {
                            step,
                            error: error.to_string(),
                        });
                        // Over the window: compact once and send the step again.
                        if is_overflow(&error)
                            && !compacted_on_overflow
                            && self.compact(report, &mut turn_start, trace, cancel).await
                        {
                            compacted_on_overflow = true;
                            continue;
                        }
                        return RunEnd::ModelFailed(error);
                    }
                }
            };
            if let Some(usage) = answer.usage {
                report.usage.add(usage);
            }
            let calls: Vec<ToolCall> = answer.tool_calls().cloned().collect();
            trace.record(Event::ModelCompleted {
                step,
                finish: answer.finish.clone(),
                tool_calls: calls.len() as u64,
                usage: answer.usage,
            });
            report.text = answer.text();
            session.set_model_text(&report.text);
            report.messages.push(answer.into_message());
            if calls.is_empty() {
                let event = if self.subagent {
                    "SubagentStop"
                } else {
                    "Stop"
                };
                if let Some(hooks) = self.hooks.as_ref().filter(|h| h.has(event))
                    && !cancel.is_cancelled()
                    && let StopVerdict::Continue { plugin, reason } = hooks
                        .stop(
                            self.subagent,
                            stop_continues,
                            session.as_ref(),
                            trace,
                            cancel,
                        )
                        .await
                {
                    // Bounded by `MAX_STOP_CONTINUES` and by the run's budgets.
                    stop_continues += 1;
                    report.messages.push(Message::user(
                        bosun_host::plugin_hooks::framed(
                            &format!(
                                "the {event} hook of the plugin `{plugin}` asks you to go on before you finish"
                            ),
                            &reason,
                        ),
                    ));
                    continue;
                }
                return RunEnd::Completed;
            }
            let mut over_budget = false;
            // Each call is admitted in order against the budgets; subagent calls asked for in
            // the same step then run concurrently, every other call one after another.
            let mut admitted: Vec<(ToolCall, Option<(String, bool)>)> = Vec::new();
            for call in calls {
                let refused = if cancel.is_cancelled() {
                    Some(error_content(ToolError::new(
                        ErrorCode::Cancelled,
                        format!("{} was not run: the run was cancelled", call.name),
                    )))
                } else if report.tool_calls >= self.budgets.max_tool_calls || !pool.take_tool_call()
                {
                    over_budget = true;
                    Some(error_content(ToolError::new(
                        ErrorCode::LimitReached,
                        format!(
                            "{} was not run: this run's budget of {} tool calls is spent",
                            call.name, self.budgets.max_tool_calls
                        ),
                    )))
                } else {
                    report.tool_calls += 1;
                    None
                };
                admitted.push((call, refused.map(|content| (content, true))));
            }
            let all_subagents = admitted.len() > 1
                && admitted.iter().all(|(call, refused)| {
                    refused.is_none()
                        && self
                            .chokepoint
                            .action_of(&call.name)
                            .is_some_and(|a| a.starts_with("subagent."))
                });
            let results: Vec<Ran> = if all_subagents {
                futures_util::future::join_all(
                    admitted
                        .iter()
                        .map(|(call, _)| self.run_call(call, session, trace, cancel)),
                )
                .await
            } else {
                let mut results = Vec::new();
                for (call, refused) in &admitted {
                    results.push(match refused {
                        Some((content, is_error)) => Ran {
                            content: content.clone(),
                            is_error: *is_error,
                            halt: None,
                        },
                        None => self.run_call(call, session, trace, cancel).await,
                    });
                }
                results
            };
            let mut halt = None;
            for ((call, _), ran) in admitted.into_iter().zip(results) {
                report
                    .messages
                    .push(Message::tool_result(call.id, ran.content, ran.is_error));
                halt = halt.or(ran.halt);
            }
            // The step's calls reach the trace file before their results go anywhere (the
            // next request, a compaction, the caller): the trace's durability contract.
            trace.flush();
            if cancel.is_cancelled() {
                return RunEnd::Cancelled;
            }
            if let Some((plugin, reason)) = halt {
                return RunEnd::Stopped { plugin, reason };
            }
            if over_budget {
                return self.exhausted(trace, Budget::ToolCalls, self.budgets.max_tool_calls);
            }
        }
    }

    /// One admitted call through the chokepoint; its result as the model reads it, with what
    /// the plugins' `PostToolUse` hooks said after it (a call that did not succeed has none:
    /// a hook never turns a denial or a failure into a result).
    async fn run_call(
        &self,
        call: &ToolCall,
        session: &Arc<Session>,
        trace: &Trace,
        cancel: &CancellationToken,
    ) -> Ran {
        let outcome = self
            .chokepoint
            .call(
                ToolCall {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    input: call.input.clone(),
                },
                session,
                trace,
                cancel,
            )
            .await;
        let is_error = outcome.result.error().is_some();
        let mut content = serde_json::to_string(&outcome.result).unwrap_or_else(|e| {
            error_content(ToolError::new(
                ErrorCode::IoError,
                format!("the result could not be serialised: {e}"),
            ))
        });
        let mut halt = None;
        if let Some(hooks) = &self.hooks {
            // What ran while the call waited (a notification of an approval asked).
            hooks.drain(trace);
            if !is_error && !cancel.is_cancelled() && hooks.has("PostToolUse") {
                let response = serde_json::to_value(&outcome.result).unwrap_or_default();
                let feedback = hooks
                    .post_tool_use(call, &response, session.as_ref(), trace, cancel)
                    .await;
                for note in feedback.notes {
                    content.push_str("\n\n");
                    content.push_str(&note);
                }
                halt = feedback.halt;
            }
        }
        Ran {
            content,
            is_error,
            halt,
        }
    }

    /// Compacts the turns before this run's own (which starts at `turn_start`, moved to where
    /// it is afterwards); true when it did. A compaction that cannot be done is recorded and
    /// the run goes on (the step may then fail over the window, saying to compact).
    async fn compact(
        &self,
        report: &mut RunReport,
        turn_start: &mut usize,
        trace: &Trace,
        cancel: &CancellationToken,
    ) -> bool {
        if let Some(hooks) = self.hooks.as_ref().filter(|h| h.has("PreCompact"))
            && let Some((plugin, reason)) = hooks.pre_compact("auto", Some(trace), cancel).await
        {
            trace.record(Event::ContextCompacted {
                summarised: 0,
                kept: report.messages.len() as u64,
                summary_bytes: 0,
                error: Some(
                    crate::compaction::CompactError::Blocked { plugin, reason }.to_string(),
                ),
            });
            return false;
        }
        match compact(
            self.provider.as_ref(),
            &self.model,
            &self.context,
            &report.messages,
            *turn_start,
            cancel,
        )
        .await
        {
            Ok((messages, done)) => {
                let own = report.messages.len() - *turn_start;
                report.messages = messages;
                *turn_start = report.messages.len() - own;
                trace.record(Event::ContextCompacted {
                    summarised: done.summarised as u64,
                    kept: done.kept as u64,
                    summary_bytes: done.summary.len() as u64,
                    error: None,
                });
                true
            }
            Err(crate::compaction::CompactError::NothingToCompact) => false,
            Err(error) => {
                trace.record(Event::ContextCompacted {
                    summarised: 0,
                    kept: report.messages.len() as u64,
                    summary_bytes: 0,
                    error: Some(error.to_string()),
                });
                false
            }
        }
    }

    /// Why the model may not be sent what `session` holds, recorded as `model.withheld`
    /// (`what` was withheld); `None` when it may, or when no level was set.
    pub(crate) fn above_level(
        &self,
        session: &Session,
        what: &str,
        call_id: Option<&str>,
        trace: &Trace,
    ) -> Option<ModelError> {
        self.sink.as_ref()?;
        let model = session.model()?;
        let error = above_level(session, &model)?;
        trace.record(Event::ModelWithheld {
            call_id: call_id.map(str::to_owned),
            model: model.name,
            what: what.to_owned(),
            level: session.taint(),
            allowed: model.allowed,
        });
        Some(error)
    }

    fn exhausted(&self, trace: &Trace, budget: Budget, limit: u32) -> RunEnd {
        trace.record(Event::BudgetExhausted { budget, limit });
        RunEnd::LimitReached { budget, limit }
    }

    /// One model request, streamed; text deltas go to the trace's observers as they come.
    async fn model_step(
        &self,
        step: u32,
        request: &ModelRequest,
        trace: &Trace,
        cancel: &CancellationToken,
    ) -> StepEnd {
        // Retries before the answer starts are recorded as they happen, so a person sees
        // "retrying in 3 s (HTTP 429)" instead of a silent wait.
        let (retries, mut retried) = tokio::sync::mpsc::unbounded_channel();
        let on_retry: Arc<dyn Fn(bosun_models::RetryNotice) + Send + Sync> =
            Arc::new(move |notice| {
                let _ = retries.send(notice);
            });
        let record = |notice: bosun_models::RetryNotice| {
            trace.record(Event::ModelRetrying {
                step,
                attempt: notice.failed_attempt,
                attempts: notice.attempts,
                delay_ms: u64::try_from(notice.delay.as_millis()).unwrap_or(u64::MAX),
                reason: notice.reason,
            });
        };
        let opening =
            bosun_models::notify_retries(on_retry, self.provider.stream(request, cancel.clone()));
        tokio::pin!(opening);
        let stream = loop {
            tokio::select! {
                biased;
                () = cancel.cancelled() => return StepEnd::Cancelled(String::new()),
                Some(notice) = retried.recv() => record(notice),
                stream = &mut opening => break stream,
            }
        };
        while let Ok(notice) = retried.try_recv() {
            record(notice);
        }
        let mut stream = match stream {
            Ok(stream) => stream,
            Err(ModelError::Cancelled) => return StepEnd::Cancelled(String::new()),
            Err(error) => return StepEnd::Failed(error),
        };
        let mut answer = Answer::default();
        loop {
            // The stream watches the token itself; this select also covers a provider that
            // does not.
            let next = tokio::select! {
                biased;
                () = cancel.cancelled() => return StepEnd::Cancelled(answer.text()),
                next = stream.next() => next,
            };
            match next {
                None => break,
                Some(Ok(event)) => {
                    match &event {
                        ModelEvent::TextDelta(text) => trace.record(Event::ModelText {
                            step,
                            text: text.clone(),
                        }),
                        ModelEvent::Reasoning(item) => {
                            let text = item.summary_text();
                            let text = text.trim();
                            if !text.is_empty() {
                                trace.record(Event::ModelReasoning {
                                    step,
                                    text: bounded_reasoning(text),
                                });
                            }
                        }
                        _ => {}
                    }
                    answer.push(event);
                }
                Some(Err(ModelError::Cancelled)) => return StepEnd::Cancelled(answer.text()),
                Some(Err(error)) => return StepEnd::Failed(error),
            }
        }
        StepEnd::Answer(answer)
    }
}

/// Why `model` may not be sent what `session` holds (its level is above what the model may be
/// sent), naming both levels, what raised the session and the fix; `None` when it may.
pub(crate) fn above_level(session: &Session, model: &ModelSink) -> Option<ModelError> {
    let held = session.taint();
    (held > model.allowed).then(|| ModelError::AboveLevel {
        model: model.name.clone(),
        held,
        allowed: model.allowed,
        from: session
            .taint_source()
            .map(|s| format!(" (from {s})"))
            .unwrap_or_default(),
    })
}

/// `text` cut to [`bosun_core::MAX_REASONING_CHARS`] characters.
fn bounded_reasoning(text: &str) -> String {
    match text.char_indices().nth(bosun_core::MAX_REASONING_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}
