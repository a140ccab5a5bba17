//! The chokepoint: the one path every tool call takes.
//!
//! ```text
//! proposal → resolve (exact name) → validate input (JSON Schema) → capability scopes
//!   → policy (the tool's action and every capability, with promises) → approval for ask/review
//!   → execute (deadline, cancellation) → bound the result → events and trace → result
//! ```
//!
//! Every failure at any step is a [`ToolResult`] error the caller can react to; nothing here ends
//! a run. Nothing else in Bosun calls [`Tool::call`].

mod builder;
mod gate;
mod registry;
mod result;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bosun_core::{
    Capability, CapabilityRequest, Decision, ErrorCode, Event, Explanation, Limits, Risk,
    ToolError, ToolOutput, ToolResult, ToolSpec, bound_result,
};
use bosun_launch::Launcher;
use bosun_policy::{HookVerdict, Policy, Subject};
use tokio_util::sync::CancellationToken;

use crate::approval::ApprovalBroker;
use crate::flow::Flow;
use crate::review::Reviewer;
use crate::session::Session;
use crate::trace::{CallEvent, Trace};
use crate::{Tool, ToolContext, Workspace};

pub use builder::ChokepointBuilder;
use registry::Registered;
pub use registry::ToolRegistry;

/// How long a tool gets to clean up (kill its children, remove temp files) after its deadline
/// or a cancellation, before it is abandoned.
const CLEANUP_GRACE: Duration = Duration::from_secs(2);

pub use bosun_core::ToolCall;

/// What came of a call.
#[derive(Debug, Clone, PartialEq)]
pub struct CallOutcome {
    /// The bounded result the caller (the model) sees.
    pub result: ToolResult,
    /// Policy's explanation, when the call got that far.
    pub explanation: Option<Explanation>,
}

pub use crate::hooks::{PolicyHook, SessionLabels};

/// The one path for every tool call.
pub struct Chokepoint {
    tools: Arc<ToolRegistry>,
    hooks: Vec<Arc<dyn PolicyHook>>,
    policy: Arc<Policy>,
    broker: Arc<dyn ApprovalBroker>,
    workspace: Arc<Workspace>,
    limits: Limits,
    env: Arc<BTreeMap<String, String>>,
    launcher: Arc<Launcher>,
    flow: Arc<Flow>,
    result_hooks: Arc<crate::hooks::Hooks>,
    reviewer: Option<Arc<dyn Reviewer>>,
    review_asks: bool,
    remember_in: Option<std::path::PathBuf>,
}

impl std::fmt::Debug for Chokepoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chokepoint")
            .field("tools", &self.tools)
            .finish_non_exhaustive()
    }
}

impl Chokepoint {
    /// Every tool's spec, sorted by name (a snapshot: plugins installed later add to it).
    pub fn specs(&self) -> Vec<ToolSpec> {
        let mut specs: Vec<ToolSpec> = self
            .tools
            .read()
            .values()
            .map(|r| r.tool.spec().clone())
            .collect();
        specs.sort_by(|a, b| a.name.cmp(&b.name));
        specs
    }

    /// The policy action of a tool, by exact name.
    pub fn action_of(&self, name: &str) -> Option<String> {
        self.tools.get(name).map(|r| r.tool.action().to_owned())
    }

    /// The tool set, shared with tools that change it during a run.
    pub fn registry(&self) -> &Arc<ToolRegistry> {
        &self.tools
    }

    /// The policy in force.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The launcher every child process starts through.
    pub fn launcher(&self) -> &Arc<Launcher> {
        &self.launcher
    }

    /// The workspace.
    pub fn workspace(&self) -> &Arc<Workspace> {
        &self.workspace
    }

    /// Takes one call through every step. Never panics on what the call contains.
    pub async fn call(
        &self,
        call: ToolCall,
        session: &Arc<Session>,
        trace: &Trace,
        cancel: &CancellationToken,
    ) -> CallOutcome {
        let started = Instant::now();
        trace.record_call(CallEvent::Proposed {
            call_id: &call.id,
            tool: &call.name,
            input: &call.input,
        });
        let (result, explanation) = match self
            .decide_and_run(&call, session, trace, cancel, started)
            .await
        {
            Ok((result, explanation)) => (result, Some(explanation)),
            Err((error, explanation)) => (ToolResult::err(error), explanation),
        };
        let result = bound_result(result, self.limits.max_output_bytes);
        let took = started.elapsed();
        let duration_us = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        match &result {
            ToolResult::Ok {
                output, truncated, ..
            } => trace.record_call(CallEvent::Completed {
                call_id: &call.id,
                tool: &call.name,
                output,
                truncated: *truncated,
                duration_us,
            }),
            ToolResult::Err { error, .. } => trace.record(Event::ToolFailed {
                call_id: call.id.clone(),
                tool: call.name.clone(),
                error: error.clone(),
                duration_us,
            }),
        }
        // Written now if the call was slow or lines have waited; otherwise with the calls after
        // it, and in any case before its result is handed out (`Trace::flush`).
        trace.call_ended(took);
        CallOutcome {
            result,
            explanation,
        }
    }

    /// The steps of one call, in order; each failure is the call's result.
    async fn decide_and_run(
        &self,
        call: &ToolCall,
        session: &Arc<Session>,
        trace: &Trace,
        cancel: &CancellationToken,
        started: Instant,
    ) -> Result<(ToolResult, Explanation), (ToolError, Option<Explanation>)> {
        // 1. Resolve by exact name: never a prefix, a case fold or a guess.
        let registered = self.resolve(call).map_err(|e| (e, None))?;
        let tool = &registered.tool;
        // 2. Validate the input against the tool's schema.
        validate(&registered, call).map_err(|e| (e, None))?;
        let mut ctx = self.context(call, session, trace);
        // 3. The concrete capabilities this call uses (paths resolved, hosts named).
        let capabilities = tool
            .capability_requests(&call.input, &ctx)
            .map_err(|e| (e, None))?;
        // 4. Policy on the action and every capability, with the session's promises, the
        //    plugins' hooks and the information-flow rules (both of which can only tighten).
        let explanation = self
            .decide(
                call,
                tool.as_ref(),
                &capabilities,
                session,
                trace,
                &ctx.instance_label,
                cancel,
            )
            .await;
        // A plugin hook's reason reaches the session in the decision (the denial it reads, the
        // question a person sees): it carries the label of the instance that wrote it.
        self.carry_instance_label(call, &ctx, session, trace);
        // 5. Deny stops here; ask and review go to a person (or the reviewer).
        if let Err(error) = self
            .gate(
                call,
                tool.as_ref(),
                &capabilities,
                &explanation,
                session,
                trace,
            )
            .await
        {
            return Err((error, Some(explanation)));
        }
        // A person who let the call bring more to the session's model than it may be sent
        // lets the model be sent that much from now on in this session.
        let model_asked = explanation.checks.iter().any(|c| {
            c.source
                .as_deref()
                .is_some_and(|s| s.starts_with("[models."))
        });
        if model_asked && let Some(model) = session.model() {
            let lifted = self
                .flow
                .model_write_down(Some(self.workspace.root()), &capabilities, &model)
                .into_iter()
                .map(|(_, level)| level)
                .max();
            if let Some(level) = lifted {
                session.allow_model(level);
            }
        }
        // The one capability granter: the tool gets exactly what was just judged.
        ctx.granted = capabilities;
        if cancel.is_cancelled() {
            return Err((
                ToolError::new(
                    ErrorCode::Cancelled,
                    "the call was cancelled before it started",
                ),
                Some(explanation),
            ));
        }
        // 6. Execute under the deadline and cancellation.
        let level_at_start = session.taint();
        let outcome = self
            .execute(
                call,
                tool.as_ref(),
                &mut ctx,
                session,
                trace,
                cancel,
                started,
            )
            .await;
        drain_logs(call, &ctx, trace);
        // A kept plugin instance hands back what its module state holds, in an error's message
        // as much as in a result: the session takes on the labels of every session whose data
        // reached the instance, whatever came of the call.
        self.carry_instance_label(call, &ctx, session, trace);
        // A rise the call made while it ran (a plugin's escalation) is in the session already;
        // a result carries it to step 8, a failure records it here, so the trace (and the
        // export read from it) knows the session's level either way.
        let rise = session.take_rise_in_call(&call.id);
        let mut output = match outcome {
            Ok(output) => output,
            Err(error) => {
                if let Some((from, to)) = rise {
                    trace.record(Event::TaintRaised {
                        call_id: call.id.clone(),
                        tool: call.name.clone(),
                        from,
                        to,
                    });
                }
                return Err((error, Some(explanation)));
            }
        };
        // 7. Post-response hooks act on the result before anyone sees it: redact, raise its
        //    level, mark it untrusted.
        let effect = self.post_hooks(call, &mut output.value, trace);
        // 8. Raise the session's taint to the result's level; mark the session when the
        //    result is untrusted input.
        //    A result above what the session's model may be sent is withheld from it, and the
        //    session does not rise.
        let read_untrusted = match self.raise_taint(
            call,
            tool.as_ref(),
            &ctx,
            (output.classification, level_at_start),
            &effect,
            session,
            trace,
        ) {
            Ok(read_untrusted) => read_untrusted,
            Err(withheld) => return Err((withheld, Some(explanation))),
        };
        self.mark_untrusted(
            call,
            tool.as_ref(),
            &ctx,
            read_untrusted,
            effect.untrusted,
            session,
            trace,
        );
        Ok((ToolResult::ok(output.value, output.truncated), explanation))
    }

    /// Step 1: the tool registered under exactly `call.name`, or why there is none.
    fn resolve(&self, call: &ToolCall) -> Result<Arc<Registered>, ToolError> {
        self.tools.get(call.name.as_str()).ok_or_else(|| {
            let message = match self.tools.withheld(call.name.as_str()) {
                Some(why) => format!("`{}` is not offered: {why}", call.name),
                None => format!(
                    "there is no tool named `{}`; use one of the tools offered",
                    call.name
                ),
            };
            ToolError::new(ErrorCode::UnknownTool, message)
        })
    }

    /// The context the call's tool sees, granted nothing yet.
    fn context(&self, call: &ToolCall, session: &Arc<Session>, trace: &Trace) -> ToolContext {
        ToolContext {
            workspace: self.workspace.clone(),
            // Its own token, not a child of the run's: `execute` cancels it when the run's is
            // cancelled (and at the deadline), so the call does not lock the run's token to
            // register and again to unregister a child.
            cancel: CancellationToken::new(),
            limits: self.limits,
            env: self.env.clone(),
            launcher: self.launcher.clone(),
            broker: crate::tool::Broker(self.broker.clone()),
            run: trace.info().clone(),
            session: session.clone(),
            call_id: call.id.clone(),
            logs: Default::default(),
            reads: crate::tool::ReadJudge::new(self.policy.clone(), session.clone()),
            read_files: Default::default(),
            instance_label: Default::default(),
            granted: Vec::new(),
            judge: None,
        }
    }

    /// Step 4: policy on the action and every capability, then information flow
    /// (write-downs, what untrusted input may not do without a person); recorded. A plugin
    /// hook whose words the decision carries records its producer's label in `said_by`.
    #[allow(clippy::too_many_arguments)]
    async fn decide(
        &self,
        call: &ToolCall,
        tool: &dyn Tool,
        capabilities: &[CapabilityRequest],
        session: &Arc<Session>,
        trace: &Trace,
        said_by: &crate::tool::InstanceLabel,
        cancel: &CancellationToken,
    ) -> Explanation {
        // Most hosts have no hook: the labels are read only for one.
        let mut verdicts = if self.hooks.is_empty() {
            Vec::new()
        } else {
            self.hook_verdicts(call, tool, &SessionLabels::of(session), said_by, cancel)
                .await
        };
        // Plan mode is a layer like a hook: it can only tighten, and denies all but reading.
        let risk = tool.risk_of_call(&call.input);
        verdicts.extend(plan_verdict(session, Some(risk), capabilities));
        let mut explanation = self.explain_with(tool, risk, capabilities, session, &verdicts);
        // A tool is judged by what it can do, not only by what it declares: one of risk
        // `process` runs a program of its own (a stdio MCP server's tool), unless it names
        // each program it starts (`process.spawn`, now or judged mid-call).
        let own_process = risk == Risk::Process
            && !tool.judges_mid_call(&call.input)
            && !capabilities
                .iter()
                .any(|r| r.capability == Capability::ProcessSpawn);
        let reach = crate::flow::Reach {
            capabilities,
            sink: tool.sink_level(),
            own_process,
            root: Some(self.workspace.root()),
        };
        for check in self.flow.judge(&reach, session) {
            crate::flow::tighten(&mut explanation, check);
        }
        // The model the result goes to is a sink too: a path the call names to read whose
        // label is above it.
        if let Some(model) = session.model() {
            for (check, _) in
                self.flow
                    .model_write_down(Some(self.workspace.root()), capabilities, &model)
            {
                crate::flow::tighten(&mut explanation, check);
            }
        }
        trace.record_call(CallEvent::Decided {
            call_id: &call.id,
            tool: &call.name,
            action: tool.action(),
            capabilities,
            explanation: &explanation,
        });
        explanation
    }

    /// Step 6: runs the tool until it finishes, its deadline passes or the call is cancelled,
    /// judging what it asks for while it runs.
    #[allow(clippy::too_many_arguments)]
    async fn execute(
        &self,
        call: &ToolCall,
        tool: &dyn Tool,
        ctx: &mut ToolContext,
        session: &Session,
        trace: &Trace,
        cancel: &CancellationToken,
        started: Instant,
    ) -> Result<ToolOutput, ToolError> {
        trace.record_call(CallEvent::Started {
            call_id: &call.id,
            tool: &call.name,
        });
        // A call that can change something starts only once its decision is in the file: a
        // crash while it runs cannot leave an effect without the decision that allowed it.
        // Plain reads keep waiting for the calls after them (docs/security.md).
        if tool.risk_of_call(&call.input) != Risk::Read {
            trace.flush();
        }
        let deadline = Duration::from_millis(self.limits.tool_timeout_ms);
        let remaining = deadline.saturating_sub(started.elapsed());
        // Only a tool that may ask for capabilities while it runs gets a channel for it.
        let mut asked = if tool.judges_mid_call(&call.input) {
            let (judge, asked) = tokio::sync::mpsc::channel(1);
            ctx.judge = Some(judge);
            Some(asked)
        } else {
            None
        };
        let ctx = &*ctx;
        let call_cancel = &ctx.cancel;
        let run = tool.call(call.input.clone(), ctx);
        tokio::pin!(run);
        let sleep = tokio::time::sleep(remaining);
        tokio::pin!(sleep);
        loop {
            tokio::select! {
                biased;
                result = &mut run => break result,
                Some(ask) = async {
                    match asked.as_mut() {
                        Some(rx) => rx.recv().await,
                        None => std::future::pending().await,
                    }
                } => {
                    // A capability the running call needs now, judged here like the call
                    // itself. Time spent waiting for a person does not count against the
                    // call's deadline.
                    let waiting = Instant::now();
                    let verdict = self
                        .judge_mid_call(call, tool.action(), ask.request, &ask.summary, session, trace)
                        .await;
                    let deadline_now = sleep.deadline() + waiting.elapsed();
                    sleep.as_mut().reset(deadline_now);
                    let _ = ask.reply.send(verdict);
                }
                () = &mut sleep => {
                    call_cancel.cancel();
                    let _ = tokio::time::timeout(CLEANUP_GRACE, &mut run).await;
                    break Err(ToolError::new(
                        ErrorCode::TimedOut,
                        format!("{} did not finish within {} ms; narrow the request or raise limits.tool_timeout_ms", call.name, deadline.as_millis()),
                    ).retryable());
                }
                () = cancel.cancelled() => {
                    call_cancel.cancel();
                    let stopped = tokio::time::timeout(CLEANUP_GRACE, &mut run).await;
                    break Err(match stopped {
                        // The tool's own account of how far it got (a command's output so
                        // far) is what the model and the stored session should read.
                        Ok(Err(e)) if e.code == ErrorCode::Cancelled => e,
                        _ => ToolError::new(ErrorCode::Cancelled, format!("{} was cancelled", call.name)),
                    });
                }
            }
        }
    }

    /// The policy decision for one call of `tool` with `capabilities` (without plugin hooks).
    pub fn explain(
        &self,
        tool: &dyn Tool,
        capabilities: &[CapabilityRequest],
        session: &Session,
    ) -> Explanation {
        self.explain_with(tool, tool.spec().risk, capabilities, session, &[])
    }

    fn explain_with(
        &self,
        tool: &dyn Tool,
        risk: Risk,
        capabilities: &[CapabilityRequest],
        session: &Session,
        hooks: &[HookVerdict],
    ) -> Explanation {
        let mut subjects = Vec::with_capacity(1 + capabilities.len());
        subjects.push(Subject::tool(tool.action(), risk));
        subjects.extend(capabilities.iter().map(Subject::capability));
        session.with_promises(|promises| self.policy.decide(&subjects, promises, hooks))
    }

    /// Every hook's verdict on this call; a hook that fails denies (fail closed).
    async fn hook_verdicts(
        &self,
        call: &ToolCall,
        tool: &dyn Tool,
        labels: &SessionLabels,
        said_by: &crate::tool::InstanceLabel,
        cancel: &CancellationToken,
    ) -> Vec<HookVerdict> {
        let mut verdicts = Vec::new();
        for hook in &self.hooks {
            match hook.verdict(call, tool, labels, said_by, cancel).await {
                Ok(Some(verdict)) => verdicts.push(verdict),
                Ok(None) => {}
                // A failure's message is what the plugin's call reported (a thrown error's
                // text): the plugin's words, framed like a reason.
                Err(failure) => verdicts.push(HookVerdict {
                    reason: format!(
                        "the policy hook of the plugin `{}` failed, so the call is denied:\n{}",
                        failure.hook,
                        bosun_core::text::framed(
                            &format!("the failure as the plugin `{}` reported it", failure.hook),
                            &failure.cause.message,
                        )
                    ),
                    plugin: failure.hook,
                    decision: Decision::Deny,
                }),
            }
        }
        verdicts
    }
}

/// Step 2: the input matches the tool's schema, or the first problems with it.
/// Plan mode's verdict: a call that does more than read (a tool whose risk is not `read`, or
/// a capability other than `fs.read`) is denied while the session plans.
pub(crate) fn plan_verdict(
    session: &Session,
    risk: Option<Risk>,
    capabilities: &[CapabilityRequest],
) -> Option<HookVerdict> {
    let reads_only = risk.is_none_or(|r| r == Risk::Read)
        && capabilities
            .iter()
            .all(|r| r.capability == Capability::FsRead);
    (session.is_plan() && !reads_only).then(|| HookVerdict {
        plugin: "plan mode".to_owned(),
        decision: Decision::Deny,
        reason: "plan mode: only reading is allowed; propose the plan and wait for the person to \
                 leave plan mode (Shift-Tab) before changing anything"
            .to_owned(),
    })
}

fn validate(registered: &Registered, call: &ToolCall) -> Result<(), ToolError> {
    let validator = registered.validator().map_err(ToolError::clone)?;
    if validator.is_valid(&call.input) {
        return Ok(());
    }
    let problems: Vec<String> = validator
        .iter_errors(&call.input)
        .take(5)
        .map(|e| {
            let at = e.instance_path().to_string();
            if at.is_empty() {
                e.to_string()
            } else {
                format!("{at}: {e}")
            }
        })
        .collect();
    Err(ToolError::new(
        ErrorCode::InvalidInput,
        format!(
            "the input does not match {}'s schema: {}",
            call.name,
            problems.join("; ")
        ),
    ))
}

/// Moves the log lines the tool wrote into the trace.
fn drain_logs(call: &ToolCall, ctx: &ToolContext, trace: &Trace) {
    let logs = std::mem::take(
        &mut *ctx
            .logs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
    for (level, message) in logs {
        trace.record(Event::ToolLog {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            level,
            message,
        });
    }
}
