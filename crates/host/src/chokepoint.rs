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

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

use bosun_core::{
    ApprovalAnswer, Capability, CapabilityRequest, Decision, ErrorCode, Event, Explanation, Limits,
    Risk, ToolError, ToolResult, ToolSpec, bound_result,
};
use bosun_launch::{Launcher, SandboxConfig};
use bosun_policy::{HookVerdict, Policy, Subject};
use tokio_util::sync::CancellationToken;

use crate::approval::{ApprovalBroker, ApprovalRequest, NonInteractive};
use crate::flow::Flow;
use crate::review::{ReviewContext, ReviewRequest, Reviewer, Verdict};
use crate::session::Session;
use crate::trace::{CallEvent, Trace};
use crate::{Tool, ToolContext, Workspace};

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

struct Registered {
    tool: Arc<dyn Tool>,
    /// Compiled at the tool's first call (most tools of a process are never called; every
    /// spec built with [`bosun_core::ToolSpec::builder`] has a schema that compiles), or at
    /// registration for tools installed during a run, whose set is refused whole otherwise.
    validator: std::sync::OnceLock<Result<jsonschema::Validator, ToolError>>,
    /// Who registered the tool at run time (`None` for the tools the chokepoint was built with).
    owner: Option<String>,
    /// Registration order: tools are listed in the order they were added.
    seq: u64,
}

pub use crate::hooks::{PolicyHook, SessionLabels};

/// The tools a chokepoint resolves names against. Shared with whatever may add tools during a
/// run (plugins the model installs): a change is one swap under a lock, so a call sees either the
/// old set or the new one, never a mixture.
#[derive(Default)]
pub struct ToolRegistry {
    tools: RwLock<HashMap<String, Arc<Registered>>>,
    next_seq: std::sync::atomic::AtomicU64,
    /// Bumped by every change to the set of tools.
    generation: std::sync::atomic::AtomicU64,
    /// Names of tools that exist but are not offered, with why (a plugin that changed since
    /// it was trusted, or was never trusted): a call to one says so instead of "no such tool".
    withheld: RwLock<HashMap<String, String>>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRegistry")
            .field("tools", &self.read().len())
            .finish()
    }
}

impl Registered {
    fn new(tool: Arc<dyn Tool>, owner: Option<String>, seq: u64) -> Self {
        Self {
            tool,
            validator: std::sync::OnceLock::new(),
            owner,
            seq,
        }
    }

    /// The tool's input validator, compiled now if it was not yet.
    fn validator(&self) -> Result<&jsonschema::Validator, &ToolError> {
        self.validator.get_or_init(|| compile(&self.tool)).as_ref()
    }
}

fn compile(tool: &Arc<dyn Tool>) -> Result<jsonschema::Validator, ToolError> {
    jsonschema::validator_for(&tool.spec().input_schema).map_err(|e| {
        ToolError::new(
            ErrorCode::InvalidInput,
            format!(
                "tool `{}` has an invalid input schema: {e}",
                tool.spec().name
            ),
        )
    })
}

impl ToolRegistry {
    fn seq(&self) -> u64 {
        self.next_seq
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<String, Arc<Registered>>> {
        self.tools.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn get(&self, name: &str) -> Option<Arc<Registered>> {
        self.read().get(name).cloned()
    }

    /// Replaces every tool `owner` registered with `tools`, all at once. Refused whole (nothing
    /// changes) when a schema does not compile or a name is taken by a tool of another owner.
    ///
    /// # Errors
    /// A [`ToolError`] naming the tool.
    pub fn replace_owned(&self, owner: &str, tools: Vec<Arc<dyn Tool>>) -> Result<(), ToolError> {
        let mut compiled = Vec::with_capacity(tools.len());
        for tool in tools {
            let validator = compile(&tool)?;
            let registered = Registered::new(tool, Some(owner.to_owned()), self.seq());
            let _ = registered.validator.set(Ok(validator));
            compiled.push(registered);
        }
        let mut map = self.tools.write().unwrap_or_else(PoisonError::into_inner);
        for registered in &compiled {
            let name = registered.tool.spec().name.as_str();
            if let Some(existing) = map.get(name)
                && existing.owner.as_deref() != Some(owner)
            {
                return Err(ToolError::new(
                    ErrorCode::InvalidInput,
                    format!("a tool named `{name}` already exists; rename the plugin's tool"),
                ));
            }
        }
        map.retain(|_, r| r.owner.as_deref() != Some(owner));
        for registered in compiled {
            map.insert(
                registered.tool.spec().name.to_string(),
                Arc::new(registered),
            );
        }
        self.changed();
        Ok(())
    }

    fn changed(&self) {
        self.generation
            .fetch_add(1, std::sync::atomic::Ordering::Release);
    }

    /// Records that a tool named `name` exists but is held back, and why.
    pub fn withhold(&self, name: impl Into<String>, why: impl Into<String>) {
        self.withheld
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(name.into(), why.into());
    }

    /// Why `name` is not offered, when it is a known tool held back.
    pub fn withheld(&self, name: &str) -> Option<String> {
        self.withheld
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(name)
            .cloned()
    }

    /// A number that changes whenever a tool is added, replaced or removed: a caller that
    /// listed the tools can tell whether its list is still current (an MCP client is told).
    pub fn generation(&self) -> u64 {
        self.generation.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Adds one tool owned by the host (a built-in, a configured plugin's tool). Refused when
    /// its name is taken; nothing else changes. Its schema was checked when its spec was built
    /// ([`bosun_core::ToolSpec::builder`] compiles it) and is compiled again at its first call;
    /// a schema that does not compile then refuses the call, never runs it.
    ///
    /// # Errors
    /// A [`ToolError`] naming the tool.
    pub fn register(&self, tool: Arc<dyn Tool>) -> Result<(), ToolError> {
        let name = tool.spec().name.to_string();
        let mut map = self.tools.write().unwrap_or_else(PoisonError::into_inner);
        if map.contains_key(&name) {
            return Err(ToolError::new(
                ErrorCode::InvalidInput,
                format!("a tool named `{name}` already exists"),
            ));
        }
        map.insert(name, Arc::new(Registered::new(tool, None, self.seq())));
        drop(map);
        self.changed();
        Ok(())
    }

    /// Every tool, in the order it was registered.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let mut tools: Vec<(u64, Arc<dyn Tool>)> = self
            .read()
            .values()
            .map(|r| (r.seq, r.tool.clone()))
            .collect();
        tools.sort_by_key(|(seq, _)| *seq);
        tools.into_iter().map(|(_, tool)| tool).collect()
    }

    /// Names of the tools `owner` registered, sorted.
    pub fn owned_by(&self, owner: &str) -> Vec<String> {
        let mut names: Vec<String> = self
            .read()
            .iter()
            .filter(|(_, r)| r.owner.as_deref() == Some(owner))
            .map(|(name, _)| name.clone())
            .collect();
        names.sort();
        names
    }

    /// Whether a tool of this name exists.
    pub fn contains(&self, name: &str) -> bool {
        self.read().contains_key(name)
    }
}

/// Builds a [`Chokepoint`].
pub struct ChokepointBuilder {
    tools: Vec<Arc<dyn Tool>>,
    hooks: Vec<Arc<dyn PolicyHook>>,
    registry: Option<Arc<ToolRegistry>>,
    policy: Arc<Policy>,
    broker: Arc<dyn ApprovalBroker>,
    workspace: Arc<Workspace>,
    limits: Limits,
    env: Arc<BTreeMap<String, String>>,
    launcher: Option<Arc<Launcher>>,
    flow: Arc<Flow>,
    result_hooks: Arc<crate::hooks::Hooks>,
    reviewer: Option<Arc<dyn Reviewer>>,
    review_asks: bool,
    remember_in: Option<std::path::PathBuf>,
}

impl ChokepointBuilder {
    /// Sets who decides `review` decisions before a person (default: nobody; a person is asked).
    pub fn reviewer(mut self, reviewer: Arc<dyn Reviewer>) -> Self {
        self.reviewer = Some(reviewer);
        self
    }

    /// Sends an `ask` to the reviewer too when the broker has nobody to ask (`[policy]
    /// review_asks`). Without a reviewer it changes nothing.
    pub fn review_asks(mut self, yes: bool) -> Self {
        self.review_asks = yes;
        self
    }

    /// Sets the information-flow rules checked after policy (default: every host `PUBLIC`,
    /// no labelled paths, write-downs asked about).
    pub fn flow(mut self, flow: Arc<Flow>) -> Self {
        self.flow = flow;
        self
    }

    /// Sets the configured hooks (`[hooks]`): the pre-call ones join the policy hooks, the
    /// post-response ones act on every result.
    pub fn config_hooks(mut self, hooks: Arc<crate::hooks::Hooks>) -> Self {
        if hooks.has_pre() {
            self.hooks.push(hooks.clone());
        }
        self.result_hooks = hooks;
        self
    }

    /// Adds tools.
    pub fn tools(mut self, tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Self {
        self.tools.extend(tools);
        self
    }

    /// Adds plugin policy hooks, asked in order about every call.
    pub fn hooks(mut self, hooks: impl IntoIterator<Item = Arc<dyn PolicyHook>>) -> Self {
        self.hooks.extend(hooks);
        self
    }

    /// Uses `registry` (shared with tools that add tools during the run) for the tool set; the
    /// builder's tools are added to it.
    pub fn registry(mut self, registry: Arc<ToolRegistry>) -> Self {
        self.registry = Some(registry);
        self
    }

    /// Sets the approval broker (default: non-interactive refusal).
    pub fn broker(mut self, broker: Arc<dyn ApprovalBroker>) -> Self {
        self.broker = broker;
        self
    }

    /// Sets the limits.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Sets the (already scrubbed) environment for child processes.
    pub fn env(mut self, env: BTreeMap<String, String>) -> Self {
        self.env = Arc::new(env);
        self
    }

    /// Sets the launcher every child process starts through (default: the full sandbox with
    /// the default `[sandbox]` settings).
    pub fn launcher(mut self, launcher: Arc<Launcher>) -> Self {
        self.launcher = Some(launcher);
        self
    }

    /// Where "always in this workspace" answers are written (`$BOSUN_HOME`; see
    /// [`crate::remembered`]). Without it such an answer allows for the session only, and the
    /// trace says nothing was written.
    pub fn remember_in(mut self, home: impl Into<std::path::PathBuf>) -> Self {
        self.remember_in = Some(home.into());
        self
    }

    /// Registers every tool; a duplicate name is refused with the tool named. Schemas are
    /// compiled at each tool's first call (see [`ToolRegistry::register`]).
    pub fn build(self) -> Result<Chokepoint, ToolError> {
        let registry = self.registry.unwrap_or_default();
        {
            let mut tools = registry
                .tools
                .write()
                .unwrap_or_else(PoisonError::into_inner);
            for tool in self.tools {
                let name = tool.spec().name.to_string();
                let registered = Registered::new(tool, None, registry.seq());
                if tools.insert(name.clone(), Arc::new(registered)).is_some() {
                    return Err(ToolError::new(
                        ErrorCode::InvalidInput,
                        format!("two tools are named `{name}`"),
                    ));
                }
            }
        }
        Ok(Chokepoint {
            tools: registry,
            hooks: self.hooks,
            policy: self.policy,
            broker: self.broker,
            workspace: self.workspace,
            limits: self.limits,
            remember_in: self.remember_in,
            env: self.env,
            launcher: self
                .launcher
                .unwrap_or_else(|| Arc::new(Launcher::new(SandboxConfig::default()))),
            flow: self.flow,
            result_hooks: self.result_hooks,
            reviewer: self.reviewer,
            review_asks: self.review_asks,
        })
    }
}

/// What a person is asked to approve.
struct Asking<'a> {
    call: &'a ToolCall,
    action: &'a str,
    /// The call (or what it asks for mid-call) as the person sees it, redacted.
    summary: String,
    /// What the call would change, redacted, when the tool can say.
    preview: Option<String>,
    capabilities: &'a [CapabilityRequest],
    explanation: &'a Explanation,
    /// Whether "always" may be written as policy rules.
    rememberable: bool,
}

impl<'a> Asking<'a> {
    /// A person asked about a whole call (rememberable), with the change it would make shown
    /// through the trace's redaction.
    fn call(
        call: &'a ToolCall,
        tool: &'a dyn Tool,
        summary: String,
        capabilities: &'a [CapabilityRequest],
        explanation: &'a Explanation,
        trace: &Trace,
    ) -> Asking<'a> {
        Asking {
            call,
            action: tool.action(),
            summary,
            preview: tool.preview(&call.input).map(|p| trace.redact_text(&p)),
            capabilities,
            explanation,
            rememberable: true,
        }
    }
}

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
    /// Starts a chokepoint over `policy` for `workspace`.
    pub fn builder(policy: Arc<Policy>, workspace: Arc<Workspace>) -> ChokepointBuilder {
        ChokepointBuilder {
            tools: Vec::new(),
            hooks: Vec::new(),
            registry: None,
            policy,
            broker: Arc::new(NonInteractive),
            workspace,
            limits: Limits::default(),
            env: Arc::new(BTreeMap::new()),
            launcher: None,
            flow: Arc::default(),
            result_hooks: Arc::default(),
            reviewer: None,
            review_asks: false,
            remember_in: None,
        }
    }

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
        let duration_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
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
        trace.flush();
        CallOutcome {
            result,
            explanation,
        }
    }

    async fn decide_and_run(
        &self,
        call: &ToolCall,
        session: &Arc<Session>,
        trace: &Trace,
        cancel: &CancellationToken,
        started: Instant,
    ) -> Result<(ToolResult, Explanation), (ToolError, Option<Explanation>)> {
        // 1. Resolve by exact name: never a prefix, a case fold or a guess.
        let Some(registered) = self.tools.get(call.name.as_str()) else {
            let message = match self.tools.withheld(call.name.as_str()) {
                Some(why) => format!("`{}` is not offered: {why}", call.name),
                None => format!(
                    "there is no tool named `{}`; use one of the tools offered",
                    call.name
                ),
            };
            return Err((ToolError::new(ErrorCode::UnknownTool, message), None));
        };
        let tool = &registered.tool;

        // 2. Validate the input against the tool's schema.
        let validator = registered.validator().map_err(|e| (e.clone(), None))?;
        if !validator.is_valid(&call.input) {
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
            return Err((
                ToolError::new(
                    ErrorCode::InvalidInput,
                    format!(
                        "the input does not match {}'s schema: {}",
                        call.name,
                        problems.join("; ")
                    ),
                ),
                None,
            ));
        }

        let call_cancel = cancel.child_token();
        let mut ctx = ToolContext {
            workspace: self.workspace.clone(),
            cancel: call_cancel.clone(),
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
            granted: Vec::new(),
            judge: None,
        };

        // 3. The concrete capabilities this call uses (paths resolved, hosts named).
        let capabilities = tool
            .capability_requests(&call.input, &ctx)
            .map_err(|e| (e, None))?;

        // 4. Policy on the action and every capability, with the session's promises and the
        //    plugins' hooks (which can only tighten).
        // Most hosts have no hook: the labels are read only for one.
        let verdicts = if self.hooks.is_empty() {
            Vec::new()
        } else {
            self.hook_verdicts(call, tool.as_ref(), &SessionLabels::of(session), cancel)
                .await
        };
        let mut explanation = self.explain_with(tool.as_ref(), &capabilities, session, &verdicts);
        // 4b. Information flow, after policy: write-downs and what untrusted input may not do
        //     without a person. It can only tighten.
        //     A tool is judged by what it can do, not only by what it declares: one of risk
        //     `process` runs a program of its own (a stdio MCP server's tool), unless it names
        //     each program it starts (`process.spawn`, now or judged mid-call).
        let own_process = tool.spec().risk == Risk::Process
            && !tool.judges_mid_call()
            && !capabilities
                .iter()
                .any(|r| r.capability == Capability::ProcessSpawn);
        let reach = crate::flow::Reach {
            capabilities: &capabilities,
            sink: tool.sink_level(),
            own_process,
            root: Some(self.workspace.root()),
        };
        for check in self.flow.judge(&reach, session) {
            crate::flow::tighten(&mut explanation, check);
        }
        trace.record_call(CallEvent::Decided {
            call_id: &call.id,
            tool: &call.name,
            action: tool.action(),
            capabilities: &capabilities,
            explanation: &explanation,
        });

        // 5. Deny stops here; ask and review go to a person.
        match explanation.decision {
            Decision::Allow => {}
            Decision::Deny => {
                return Err((
                    ToolError::new(
                        ErrorCode::Denied,
                        format!("policy denies this call: {}", explanation.summary()),
                    ),
                    Some(explanation),
                ));
            }
            // `review` goes to the reviewer; so does `ask` when nobody could answer it and the
            // user opted in.
            Decision::Review | Decision::Ask
                if self.reviewer.is_some()
                    && (explanation.decision == Decision::Review
                        || (self.review_asks && !self.broker.has_person())) =>
            {
                let summary = trace.redact_text(&tool.summarize(&call.input));
                match self
                    .review(
                        call,
                        tool.action(),
                        &summary,
                        &capabilities,
                        &explanation,
                        session,
                        trace,
                    )
                    .await
                {
                    Some(Verdict::Allow) => {}
                    Some(Verdict::Deny) => {
                        return Err((
                            ToolError::new(
                                ErrorCode::Denied,
                                format!(
                                    "the reviewer denied {}; do something else or ask the person how to proceed",
                                    call.name
                                ),
                            ),
                            Some(explanation),
                        ));
                    }
                    // Unsure, unanswered, unparsed or failed: a person decides, never a silent
                    // allow.
                    Some(Verdict::Unsure) | None => {
                        let asking = Asking::call(
                            call,
                            tool.as_ref(),
                            summary,
                            &capabilities,
                            &explanation,
                            trace,
                        );
                        if let Err(error) = self.approve(asking, session, trace).await {
                            return Err((error, Some(explanation)));
                        }
                    }
                }
            }
            Decision::Ask | Decision::Review => {
                // The prompt shows the input through the same redaction as the trace.
                let summary = trace.redact_text(&tool.summarize(&call.input));
                let asking = Asking::call(
                    call,
                    tool.as_ref(),
                    summary,
                    &capabilities,
                    &explanation,
                    trace,
                );
                if let Err(error) = self.approve(asking, session, trace).await {
                    return Err((error, Some(explanation)));
                }
            }
        }
        // The one capability granter: the tool gets exactly what was just judged.
        ctx.granted = capabilities.clone();
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
        trace.record_call(CallEvent::Started {
            call_id: &call.id,
            tool: &call.name,
        });
        let deadline = Duration::from_millis(self.limits.tool_timeout_ms);
        let remaining = deadline.saturating_sub(started.elapsed());
        // Only a tool that may ask for capabilities while it runs gets a channel for it.
        let mut asked = if tool.judges_mid_call() {
            let (judge, asked) = tokio::sync::mpsc::channel(1);
            ctx.judge = Some(judge);
            Some(asked)
        } else {
            None
        };
        let run = tool.call(call.input.clone(), &ctx);
        tokio::pin!(run);
        let sleep = tokio::time::sleep(remaining);
        tokio::pin!(sleep);
        let outcome = loop {
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
                    let _ = tokio::time::timeout(CLEANUP_GRACE, &mut run).await;
                    break Err(ToolError::new(ErrorCode::Cancelled, format!("{} was cancelled", call.name)));
                }
            }
        };
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
        match outcome {
            Ok(mut output) => {
                // 7. Post-response hooks act on the result before anyone sees it: redact,
                //    raise its level, mark it untrusted.
                let effect = self.result_hooks.post(&call.name, &mut output.value);
                if !effect.hooks.is_empty() {
                    trace.record(Event::HookApplied {
                        call_id: call.id.clone(),
                        tool: call.name.clone(),
                        hooks: effect.hooks.clone(),
                        redactions: effect.redactions,
                        level: effect.level,
                        untrusted: effect.untrusted.is_some(),
                    });
                }
                // 8. Raise the session's taint to the result's level (the highest of the
                //    tool's, the result's, the hooks' and the labels of what it read: the
                //    paths it named, each file it returned content of beneath them — a
                //    search's matches —, and every file they share an inode with); it never
                //    falls. A program could read the whole workspace: what it returns carries
                //    the highest label of the workspace's labelled files. Mark the session
                //    when the result is untrusted input.
                let root = self.workspace.root();
                let crate::flow::Read {
                    level: read_level,
                    untrusted: read_untrusted,
                    file: read_file,
                } = self
                    .flow
                    .read_levels(Some(root), &ctx.granted, &ctx.read_files.take());
                let mut level = output
                    .classification
                    .unwrap_or(tool.spec().classification)
                    .max(tool.spec().classification)
                    .max(read_level.unwrap_or_default())
                    .max(effect.level.unwrap_or_default());
                let ran_program = tool.spec().risk == Risk::Process
                    || ctx
                        .granted
                        .iter()
                        .any(|r| r.capability == Capability::ProcessSpawn);
                let mut readable = None;
                if ran_program
                    && let Some((at, path)) =
                        self.flow.workspace_level(root, level.max(session.taint()))
                {
                    level = level.max(at);
                    readable = Some(path);
                }
                let before = session.taint();
                let after = session.raise_taint(level);
                if after > before {
                    session.set_taint_source(match (readable, read_file) {
                        (Some(path), _) => format!(
                            "{} ({}), a program that could read {path}",
                            call.name, call.id
                        ),
                        (None, Some(path)) => {
                            format!("{} ({}), which read {path}", call.name, call.id)
                        }
                        (None, None) => format!("{} ({})", call.name, call.id),
                    });
                    trace.record(Event::TaintRaised {
                        call_id: call.id.clone(),
                        tool: call.name.clone(),
                        from: before,
                        to: after,
                    });
                }
                let network: Vec<String> = ctx
                    .granted
                    .iter()
                    .filter(|r| r.capability == Capability::NetHttp)
                    .filter_map(|r| r.scope.as_authority().map(|a| a.host))
                    .collect();
                let untrusted = if network.is_empty() {
                    tool.untrusted_source().or(read_untrusted).or(effect
                        .untrusted
                        .map(|hook| format!("a result {hook} marks")))
                } else {
                    Some(format!("the network ({})", network.join(", ")))
                };
                if let Some(source) = untrusted {
                    let source = format!("{source}, read by {} ({})", call.name, call.id);
                    if session.mark_untrusted(source.clone()) {
                        trace.record(Event::UntrustedInput {
                            call_id: call.id.clone(),
                            tool: call.name.clone(),
                            source,
                        });
                    }
                }
                Ok((ToolResult::ok(output.value, output.truncated), explanation))
            }
            Err(error) => Err((error, Some(explanation))),
        }
    }

    /// Asks the reviewer about a `review` decision, within the call's deadline (at most 30 s),
    /// recording its answer; `None` when no verdict came.
    #[allow(clippy::too_many_arguments)]
    async fn review(
        &self,
        call: &ToolCall,
        action: &str,
        summary: &str,
        capabilities: &[CapabilityRequest],
        explanation: &Explanation,
        session: &Session,
        trace: &Trace,
    ) -> Option<Verdict> {
        let reviewer = self.reviewer.as_ref()?;
        let request = ReviewRequest {
            tool: call.name.clone(),
            action: action.to_owned(),
            summary: summary.to_owned(),
            capabilities: capabilities.to_vec(),
            reason: explanation.summary(),
            taint: session.taint(),
            untrusted: session.untrusted_source(),
            context: {
                let context = session.review_context();
                ReviewContext {
                    asked: context.asked.map(|text| trace.redact_text(&text)),
                    said: context.said.map(|text| trace.redact_text(&text)),
                }
            },
        };
        let limit = Duration::from_millis(self.limits.tool_timeout_ms.min(30_000));
        let answer = match tokio::time::timeout(limit, reviewer.review(&request)).await {
            Ok(answer) => answer,
            Err(_) => Err(format!("no answer within {} ms", limit.as_millis())),
        };
        let (verdict, reason) = match &answer {
            Ok(review) => (review.verdict.as_str().to_owned(), review.reason.clone()),
            Err(why) => ("failed".to_owned(), why.clone()),
        };
        trace.record(Event::ReviewAnswered {
            call_id: call.id.clone(),
            reviewer: reviewer.name().to_owned(),
            verdict,
            reason: trace.redact_text(&reason),
        });
        answer.ok().map(|review| review.verdict)
    }

    /// Judges a capability a running call asks for: policy on the capability alone (the call
    /// itself was already allowed), a person when policy asks, the decision in the trace.
    async fn judge_mid_call(
        &self,
        call: &ToolCall,
        action: &str,
        request: CapabilityRequest,
        summary: &str,
        session: &Session,
        trace: &Trace,
    ) -> Result<(), ToolError> {
        let subjects = [Subject::capability(&request)];
        let mut explanation =
            session.with_promises(|promises| self.policy.decide(&subjects, promises, &[]));
        let reach = crate::flow::Reach {
            capabilities: std::slice::from_ref(&request),
            sink: None,
            own_process: false,
            root: Some(self.workspace.root()),
        };
        for check in self.flow.judge(&reach, session) {
            crate::flow::tighten(&mut explanation, check);
        }
        trace.record(Event::CapabilityDecided {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            capability: request.clone(),
            explanation: explanation.clone(),
        });
        let summary = trace.redact_text(summary);
        match explanation.decision {
            Decision::Allow => Ok(()),
            Decision::Deny => Err(ToolError::new(
                ErrorCode::Denied,
                format!(
                    "policy denies {} for {}: {}",
                    summary,
                    call.name,
                    explanation.summary()
                ),
            )),
            Decision::Ask | Decision::Review => {
                let capabilities = [request];
                let asking = Asking {
                    call,
                    action,
                    summary,
                    preview: None,
                    capabilities: &capabilities,
                    explanation: &explanation,
                    rememberable: false,
                };
                self.approve(asking, session, trace).await
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
        self.explain_with(tool, capabilities, session, &[])
    }

    fn explain_with(
        &self,
        tool: &dyn Tool,
        capabilities: &[CapabilityRequest],
        session: &Session,
        hooks: &[HookVerdict],
    ) -> Explanation {
        let mut subjects = Vec::with_capacity(1 + capabilities.len());
        subjects.push(Subject::tool(tool.action(), tool.spec().risk));
        subjects.extend(capabilities.iter().map(Subject::capability));
        session.with_promises(|promises| self.policy.decide(&subjects, promises, hooks))
    }

    /// Every hook's verdict on this call; a hook that fails denies (fail closed).
    async fn hook_verdicts(
        &self,
        call: &ToolCall,
        tool: &dyn Tool,
        labels: &SessionLabels,
        cancel: &CancellationToken,
    ) -> Vec<HookVerdict> {
        let mut verdicts = Vec::new();
        for hook in &self.hooks {
            match hook.verdict(call, tool, labels, cancel).await {
                Ok(Some(verdict)) => verdicts.push(verdict),
                Ok(None) => {}
                Err(message) => verdicts.push(HookVerdict {
                    plugin: "policy hook".to_owned(),
                    decision: Decision::Deny,
                    reason: format!("a policy hook failed, so the call is denied: {message}"),
                }),
            }
        }
        verdicts
    }

    /// Writes an "always in this workspace" answer as policy rules and records what happened;
    /// the call runs whether or not the write succeeds (the person allowed it).
    fn remember(
        &self,
        call: &ToolCall,
        action: &str,
        capabilities: &[CapabilityRequest],
        trace: &Trace,
    ) {
        let rules = crate::remembered::rules_for(action, capabilities, &call.name);
        let (file, rules, error) = match (&self.remember_in, rules) {
            (None, _) => (
                String::new(),
                Vec::new(),
                Some("this host has no $BOSUN_HOME to remember approvals in".to_owned()),
            ),
            (Some(home), Err(e)) => (
                crate::remembered::file_for(home, self.workspace.root())
                    .display()
                    .to_string(),
                Vec::new(),
                Some(e),
            ),
            (Some(home), Ok(rules)) => {
                let described = crate::remembered::describe(&rules);
                match crate::remembered::remember(home, self.workspace.root(), &rules) {
                    Ok(path) => (path.display().to_string(), described, None),
                    Err(e) => (
                        crate::remembered::file_for(home, self.workspace.root())
                            .display()
                            .to_string(),
                        described,
                        Some(e),
                    ),
                }
            }
        };
        trace.record(Event::ApprovalRemembered {
            call_id: call.id.clone(),
            file,
            rules,
            error,
        });
    }

    async fn approve(
        &self,
        asking: Asking<'_>,
        session: &Session,
        trace: &Trace,
    ) -> Result<(), ToolError> {
        let Asking {
            call,
            action,
            summary,
            preview,
            capabilities,
            explanation,
            rememberable,
        } = asking;
        // A session grant covers this action with exactly the capabilities it was given for.
        let grant_key = crate::approval::session_grant_key(action, capabilities);
        if session.is_granted(&grant_key) {
            trace.record(Event::ApprovalAnswered {
                call_id: call.id.clone(),
                answer: ApprovalAnswer::AllowSession,
            });
            return Ok(());
        }
        let reason = explanation.summary();
        trace.record(Event::ApprovalAsked {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            reason: reason.clone(),
        });
        let request = ApprovalRequest {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            action: action.to_owned(),
            summary,
            preview,
            capabilities: capabilities.to_vec(),
            decision: explanation.decision,
            reason,
        };
        let answer = self.broker.ask(&request).await;
        trace.record(Event::ApprovalAnswered {
            call_id: call.id.clone(),
            answer,
        });
        match answer {
            ApprovalAnswer::AllowOnce => Ok(()),
            ApprovalAnswer::AllowSession => {
                session.grant(&grant_key);
                Ok(())
            }
            ApprovalAnswer::AllowAlways => {
                session.grant(&grant_key);
                // A mid-call capability is remembered for the session only: a rule written
                // for it alone could say more than the person saw.
                if rememberable {
                    self.remember(call, action, capabilities, trace);
                }
                Ok(())
            }
            ApprovalAnswer::Deny => Err(ToolError::new(
                ErrorCode::Denied,
                match self.broker.take_feedback(&call.id) {
                    // The person's own words, for the model to act on.
                    Some(feedback) => format!(
                        "the person declined {} and said: {}",
                        call.name,
                        feedback.trim()
                    ),
                    None => format!(
                        "the person declined {}; do something else or ask them how to proceed",
                        call.name
                    ),
                },
            )),
            ApprovalAnswer::Unavailable => {
                let subject = explanation
                    .deciding_rule()
                    .map_or(action, |rule| rule.subject.as_str());
                Err(ToolError::new(
                    ErrorCode::NeedsApproval,
                    format!(
                        "policy asks before {} ({}) and nobody can answer here: {} add a policy rule that allows `{subject}`",
                        call.name,
                        explanation.summary(),
                        self.broker.unanswered_hint()
                    ),
                ))
            }
        }
    }
}
