//! The host-side tool trait. Built-ins implement it directly; plugin and MCP hosts implement it
//! for each tool they serve. Only the [`crate::Chokepoint`] calls [`Tool::call`].

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use bosun_core::{CapabilityRequest, ErrorCode, Limits, ToolError, ToolOutput, ToolSpec};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::Workspace;
use crate::session::Session;

/// Log lines a tool produced during a call, drained by the chokepoint into the trace.
pub type LogSink = Arc<std::sync::Mutex<Vec<(String, String)>>>;

/// What a tool sees of the run it is called in.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The workspace every path is confined to.
    pub workspace: Arc<Workspace>,
    /// Cancelled when the call is cancelled or its deadline passes; long work checks it.
    pub cancel: CancellationToken,
    /// The limits in force.
    pub limits: Limits,
    /// The environment for child processes, already scrubbed of secrets.
    pub env: Arc<BTreeMap<String, String>>,
    /// The launcher every child process starts through (the OS sandbox).
    pub launcher: Arc<bosun_launch::Launcher>,
    /// The broker of the chokepoint running the call (a subagent asks through it).
    pub broker: Broker,
    /// The run the call belongs to: its id, where its trace is written, its redaction.
    pub run: Arc<crate::trace::RunInfo>,
    /// The session the call belongs to.
    pub session: Arc<Session>,
    /// The id of this call.
    pub call_id: String,
    /// Log lines the tool wants in the trace, as `(level, message)`; drained by the chokepoint.
    pub logs: LogSink,
    /// The read rules of the call, for every file a tool opens beyond the path it named.
    pub reads: ReadJudge,
    /// The files whose content reached the result beyond the paths the call named (each file
    /// a search returns lines of): the chokepoint raises the session to each one's label.
    pub read_files: ReadFiles,
    /// The label of the plugin instance the call ran in (what every session that handed it
    /// data held): the chokepoint raises the session to it, whether the call succeeded or not.
    pub instance_label: InstanceLabel,
    /// The capability requests policy (and a person, when asked) allowed for this call: what
    /// the tool is granted at the resource, exactly — a plugin's preopened directories come from
    /// these, never from a second computation. Empty until the chokepoint has decided.
    pub granted: Vec<CapabilityRequest>,
    /// Where a running call asks the chokepoint to judge a capability it needs mid-call (a
    /// plugin starting a process). `None` outside the chokepoint: such a request is refused.
    pub judge: Option<MidCallJudge>,
}

/// The approval broker of the chokepoint running a call.
#[derive(Clone)]
pub struct Broker(pub Arc<dyn crate::approval::ApprovalBroker>);

impl std::fmt::Debug for Broker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Broker")
    }
}

/// An action a running call asks to take once it has prepared what the person must read
/// first: installing a plugin it has already fetched, verified and staged (`plugin.install`),
/// where the question is only worth asking with the trust review in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionAsk {
    /// The policy action (`plugin.install`), judged with risk `process` (what it installs runs
    /// as code later): asked in the default mode, denied in `read-only` and in plan mode.
    pub action: String,
    /// Where it reaches, for rules that narrow (`host` is the registry's name).
    pub scope: bosun_core::Scope,
    /// What the person reads before deciding (the trust review), unredacted.
    pub review: String,
}

/// What a running call asks the chokepoint to judge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MidCallAsk {
    /// A capability (a JS plugin starting a program).
    Capability(CapabilityRequest),
    /// An action of its own, with the review the person reads.
    Action(ActionAsk),
}

/// A capability or action a running call needs, sent to the chokepoint that runs it.
#[derive(Debug)]
pub struct JudgeRequest {
    /// What is asked for.
    pub request: MidCallAsk,
    /// What the person is shown if policy asks (e.g. `$ python3 server.py`), unredacted.
    pub summary: String,
    /// The chokepoint's answer: `Ok` when policy (or a person) allows it.
    pub reply: tokio::sync::oneshot::Sender<Result<(), ToolError>>,
}

/// The sending side of a call's mid-call judgements.
pub type MidCallJudge = tokio::sync::mpsc::Sender<JudgeRequest>;

impl ToolContext {
    /// Asks the chokepoint running this call to judge `request` now, by the same policy,
    /// promises and approval broker as the call itself; the decision is recorded in the trace.
    ///
    /// # Errors
    /// `denied` or `needs_approval` as for a call, or `denied` outside a chokepoint.
    pub async fn judge(
        &self,
        request: CapabilityRequest,
        summary: String,
    ) -> Result<(), ToolError> {
        judge(self.judge.as_ref(), request, summary).await
    }

    /// Asks the chokepoint running this call to judge the action `ask` now, showing its review
    /// to the person when policy asks; the decision is recorded in the trace. A session or
    /// "always" answer allows this one action only: each install is its own question.
    ///
    /// # Errors
    /// `denied` or `needs_approval` as for a call, or `denied` outside a chokepoint.
    pub async fn judge_action(&self, ask: ActionAsk, summary: String) -> Result<(), ToolError> {
        ask_chokepoint(self.judge.as_ref(), MidCallAsk::Action(ask), summary).await
    }
}

/// Asks the chokepoint behind `judge` to judge `request` now (see [`ToolContext::judge`]).
///
/// # Errors
/// `denied` or `needs_approval` as for a call, or `denied` without a chokepoint.
pub async fn judge(
    judge: Option<&MidCallJudge>,
    request: CapabilityRequest,
    summary: String,
) -> Result<(), ToolError> {
    ask_chokepoint(judge, MidCallAsk::Capability(request), summary).await
}

async fn ask_chokepoint(
    judge: Option<&MidCallJudge>,
    request: MidCallAsk,
    summary: String,
) -> Result<(), ToolError> {
    let denied = || {
        ToolError::new(
            ErrorCode::Denied,
            "this call cannot ask for more capabilities here (no chokepoint is running it)",
        )
    };
    let Some(judge) = judge else {
        return Err(denied());
    };
    let (reply, answer) = tokio::sync::oneshot::channel();
    judge
        .send(JudgeRequest {
            request,
            summary,
            reply,
        })
        .await
        .map_err(|_| denied())?;
    answer.await.unwrap_or_else(|_| Err(denied()))
}

/// The workspace-relative files whose content a call put into its result beyond the paths its
/// capabilities name. A tool that reads many files under one named path (a search from `.`)
/// records each file it returns content of, so the session's level follows what was read
/// rather than the label of the place the call started from; the tool computes no level.
#[derive(Debug, Clone, Default)]
pub struct ReadFiles(Arc<std::sync::Mutex<std::collections::BTreeSet<String>>>);

impl ReadFiles {
    /// Records that content of the file at `path` (workspace-relative) reached the result.
    pub fn record(&self, path: impl Into<String>) {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(path.into());
    }

    /// Every file recorded so far, once each, and forgets them.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(
            &mut *self
                .0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
        .into_iter()
        .collect()
    }
}

pub use crate::labels::{InstanceLabel, Producer};

/// Judges the reads a tool makes beyond the path its call named — each file a search opens,
/// each entry a listing shows — by the same policy and promises the call was judged under, so
/// a rule denying `fs.read` on `secrets/**` holds whatever directory the call started from.
/// Only `allow` passes: a file whose read would be asked about or denied is left out.
#[derive(Clone)]
pub struct ReadJudge {
    policy: Option<Arc<bosun_policy::Policy>>,
    /// Whose promises bind the reads (read when judging, so nothing is copied per call).
    session: Option<Arc<Session>>,
}

impl std::fmt::Debug for ReadJudge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadJudge")
            .field("restricted", &self.policy.is_some())
            .finish_non_exhaustive()
    }
}

impl ReadJudge {
    /// Reads judged by `policy` with the promises of `session`.
    pub fn new(policy: Arc<bosun_policy::Policy>, session: Arc<Session>) -> Self {
        Self {
            policy: Some(policy),
            session: Some(session),
        }
    }

    /// No read rules: for a tool driven directly, outside any chokepoint (its own tests).
    pub fn unrestricted() -> Self {
        Self {
            policy: None,
            session: None,
        }
    }

    /// Whether the call may read the workspace-relative `path` without asking.
    pub fn allows(&self, path: &str) -> bool {
        let Some(policy) = &self.policy else {
            return true;
        };
        let request = CapabilityRequest {
            capability: bosun_core::Capability::FsRead,
            scope: bosun_core::Scope {
                path: Some(path.to_owned()),
                ..bosun_core::Scope::default()
            },
        };
        let subject = bosun_policy::Subject::capability(&request);
        let decision = match &self.session {
            Some(session) => session.with_promises(|p| policy.decide_one(&subject, p).decision),
            None => policy.decide_one(&subject, &[]).decision,
        };
        decision == bosun_core::Decision::Allow
    }
}

impl ToolContext {
    /// Adds log lines for the trace. At most [`MAX_LOG_LINES`] are kept per call.
    pub fn log_lines(&self, lines: impl IntoIterator<Item = (String, String)>) {
        let mut logs = self
            .logs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for line in lines {
            if logs.len() >= MAX_LOG_LINES {
                break;
            }
            logs.push(line);
        }
    }
}

/// Most log lines a call may add to the trace.
pub const MAX_LOG_LINES: usize = 1000;

/// A tool the chokepoint can run.
#[async_trait]
pub trait Tool: Send + Sync {
    /// The checked spec.
    fn spec(&self) -> &ToolSpec;

    /// The policy action, e.g. `builtin.tool.read_file`.
    fn action(&self) -> &str;

    /// The capabilities this call will use, with their scope (the path it touches, the host it
    /// reaches). Called after the input has passed the schema and before policy; an error here
    /// (a path outside the workspace, say) ends the call before anything runs. The default is
    /// every declared capability without a scope.
    fn capability_requests(
        &self,
        _input: &Value,
        _ctx: &ToolContext,
    ) -> Result<Vec<CapabilityRequest>, ToolError> {
        Ok(self
            .spec()
            .capabilities
            .iter()
            .cloned()
            .map(CapabilityRequest::bare)
            .collect())
    }

    /// The level of where the tool itself sends its input (an MCP server), when it sends it
    /// anywhere: a session holding data above it cannot call the tool without a person.
    fn sink_level(&self) -> Option<bosun_core::Classification> {
        None
    }

    /// What makes this tool's results untrusted input (an MCP server not marked trusted), if
    /// anything does. Results of a call granted `net.http` are untrusted whatever this says.
    fn untrusted_source(&self) -> Option<String> {
        None
    }

    /// Whether a call with `input` may ask the chokepoint for capabilities or actions while it
    /// runs (a JS plugin's tool of risk `process` starting programs, `plugin_install` asking
    /// to install what it staged). Only such calls get `ToolContext::judge`.
    fn judges_mid_call(&self, _input: &Value) -> bool {
        false
    }

    /// The risk of one call with `input`: the spec's, unless the tool's calls differ by input
    /// (`plugin_install` naming a registry only fetches and stages before the call asks for
    /// `plugin.install` itself). Never lower than what the call does before it asks mid-call.
    fn risk_of_call(&self, _input: &Value) -> bosun_core::Risk {
        self.spec().risk
    }

    /// A readable one-line summary of the call for an approval prompt.
    fn summarize(&self, input: &Value) -> String {
        let text = input.to_string();
        let mut end = text.len().min(200);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text[..end].to_owned()
    }

    /// What the call would change, as diff lines (`-` removed, `+` added), shown in the
    /// approval before it runs; `None` when the tool cannot tell from its input.
    fn preview(&self, _input: &Value) -> Option<String> {
        None
    }

    /// Runs the tool. Must honour `ctx.cancel` for work that can take long, and should bound its
    /// own output to `ctx.limits.max_output_bytes` (the chokepoint bounds it again regardless).
    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError>;

    /// Ends whatever the tool keeps running between calls (an MCP server's process), so that
    /// nothing it started outlives the command that started it. Called by [`crate::Host::shutdown`];
    /// must be harmless to call twice and for tools that share what they keep.
    async fn shutdown(&self) {}
}
