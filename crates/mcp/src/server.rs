//! The MCP server: the host's tools for any MCP client, each call through the chokepoint.
//!
//! One [`Served`] is built per `bosun serve` process from the assembled host. Every client
//! session gets a [`ToolServer`] of its own: its own [`Session`] (approvals given "for the
//! session" and taint stay within it) and its own trace, created at its first tool call, with
//! `run.started` naming the transport and `run.finished` written when the session ends.
//!
//! What a client sees:
//! - `tools/list`: the chokepoint's tools in registration order (built-ins, then plugins in
//!   catalog order), with annotations derived from each tool's risk. Listing runs no plugin code.
//!   When a call changes the set (a plugin installed or reloaded through the plugin tools), the
//!   client gets `notifications/tools/list_changed`: unasked under the handshake revisions, on
//!   every `subscriptions/listen` stream a 2026-07-28 client opened for it.
//! - `tools/call`: the chokepoint's result. Success is the output as text (JSON unless it is a
//!   string) and, when it is an object, as `structuredContent`; an error is `isError: true` with
//!   `code: message`, so a denied call, a call that needs approval and a plugin's failure all
//!   reach the client's model as readable text. Cancelling the request cancels the call. A name
//!   that is no tool is the specification's JSON-RPC error instead (-32602, "Unknown tool").
//! - A call policy would `ask` about is put to the client's user when the client declared
//!   elicitation ([`crate::approval`]); otherwise it fails at once with `needs_approval` and says
//!   how to pre-approve it. Never a silent allow.
//! - Under 2026-07-28 the state of a call that asked (`input_required`) is sealed to the caller
//!   and the call ([`crate::state`]), so its retry may reach any instance holding the key
//!   (`[serve] state_key_env`); a forged, expired or replayed state is refused with an
//!   invalid-params error. A call with an idempotency key (`Idempotency-Key` header or `_meta`
//!   `io.bosun/idempotencyKey`) runs once per key in its session (under 2026-07-28, which has
//!   none, per caller): on an instance, or across every instance sharing `[serve]
//!   idempotency_dir` ([`crate::idempotency`]).
//! - A connection's revision is the connection's, never a request's claim: every request of a
//!   session opened with `initialize` runs in that session (its labels, its approvals, its
//!   trace), whatever revision its `_meta` names.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use bosun_core::{
    ErrorCode, Event, Redactor, Risk, RunOutcome, ToolCall, ToolResult, ToolSpec, escape_hidden,
};
use bosun_host::approval::ApprovalBroker;
use bosun_host::trace::{self, Trace};
use bosun_host::{Chokepoint, Host, Session, TraceBuilder};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, Implementation, InputRequiredResult, ListPromptsResult,
    ListToolsResult, PaginatedRequestParams, Prompt, PromptArgument, PromptMessage,
    ProtocolVersion, Role, ServerCapabilities, ServerConfig, SubscriptionFilter, Tool,
    ToolAnnotations,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Map, Value};
use sha2::Digest;

use crate::approval::{ElicitingBroker, ROUND, Round, RoundTrip, call_digest, can_elicit_form};
use crate::idempotency::{
    DEFAULT_CLAIM_TTL, DEFAULT_CLAIM_WAIT, DEFAULT_KEY_TTL, Idempotency, Kept, KeyRefused,
    MAX_KEYS, SharedResults,
};
use crate::state::{DEFAULT_STATE_TTL, StateSeal};

/// The `_meta` key carrying an idempotency key where there are no HTTP headers (stdio).
pub const IDEMPOTENCY_META_KEY: &str = "io.bosun/idempotencyKey";

/// The HTTP header carrying an idempotency key.
pub const IDEMPOTENCY_HEADER: &str = "idempotency-key";

/// How the calls of one `bosun serve` are sealed and kept.
#[derive(Debug, Clone, Default)]
pub struct ServeOptions {
    /// The key sealing request states, shared by every instance behind one load balancer; a
    /// random key of this process when `None` (states then open only here).
    pub state_key: Option<Vec<u8>>,
    /// How long a request state may be answered (default five minutes).
    pub state_ttl: Option<std::time::Duration>,
    /// A directory every instance shares, where each redeemed request state is recorded so
    /// that it opens once across the fleet ([`crate::state`]).
    pub state_redemptions: Option<PathBuf>,
    /// A directory every instance shares, where keyed calls are claimed and their results
    /// kept, so a retry on any instance gets the first attempt's result
    /// ([`crate::idempotency`]). Needs `state_key`.
    pub idempotency_dir: Option<PathBuf>,
    /// How long a claim there holds before it is taken for a dead instance (default ten
    /// minutes).
    pub idempotency_claim_ttl: Option<std::time::Duration>,
    /// Most keyed results kept in memory without `idempotency_dir` (default
    /// [`crate::idempotency::MAX_KEYS`]), shared fairly between callers.
    pub idempotency_keys: Option<usize>,
}

/// Why serving stopped or could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The MCP session could not be established (the client sent no valid handshake).
    #[error("the MCP client did not complete the handshake: {0}")]
    Handshake(String),
    /// The session ended abnormally.
    #[error("the MCP session failed: {0}")]
    Session(String),
    /// The HTTP listener failed.
    #[error("{0}")]
    Http(String),
    /// The request-state key cannot be used.
    #[error("[serve] state_key_env: {0}")]
    State(String),
    /// The shared redemption directory cannot be used.
    #[error("{0}")]
    Redemptions(String),
    /// The shared idempotency directory cannot be used.
    #[error("{0}")]
    Idempotency(String),
}

/// What every session of one `bosun serve` shares: the host and where traces go.
pub struct Served {
    host: Arc<Host>,
    runs_dir: PathBuf,
    redactor: Arc<Redactor>,
    /// What `run.started` says started each session, e.g. `serve --stdio`.
    command: String,
    /// The one session of every 2026-07-28 request (that revision has none of its own) of
    /// each caller ([`Caller::id`]): one caller's labels never reach another's calls.
    stateless: Mutex<HashMap<String, Arc<Stateless>>>,
    /// Numbers the uses of stateless sessions, so the least recently used is known.
    stateless_uses: AtomicU64,
    /// The open `subscriptions/listen` streams (2026-07-28 clients), each woken when tools
    /// change, by a number of the server's own (a request id is the client's, and two clients
    /// may both use `1`).
    listeners: Mutex<HashMap<u64, Listener>>,
    /// Numbers the listeners.
    listened: AtomicU64,
    /// Seals the request state of 2026-07-28 calls that ask.
    seal: Arc<StateSeal>,
    /// The results of calls made with an idempotency key.
    keyed: Idempotency<Result<CallToolResponse, McpError>>,
}

impl std::fmt::Debug for Served {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Served")
            .field("command", &self.command)
            .finish_non_exhaustive()
    }
}

impl Served {
    /// Serves `host`'s tools with a request-state key of this process alone; `command` is
    /// what each session's trace says started it.
    ///
    /// # Errors
    /// [`ServeError::State`] when no random key can be made.
    pub fn new(host: Arc<Host>, command: impl Into<String>) -> Result<Arc<Self>, ServeError> {
        Self::with_options(host, command, ServeOptions::default())
    }

    /// Serves `host`'s tools as `options` say.
    ///
    /// # Errors
    /// [`ServeError::State`] for a key shorter than 32 bytes, or when no random key or nonce
    /// can be made.
    pub fn with_options(
        host: Arc<Host>,
        command: impl Into<String>,
        options: ServeOptions,
    ) -> Result<Arc<Self>, ServeError> {
        let ttl = options.state_ttl.unwrap_or(DEFAULT_STATE_TTL);
        let seal = match &options.state_key {
            Some(key) => StateSeal::new(key, ttl),
            None => StateSeal::ephemeral(ttl),
        }
        .map_err(ServeError::State)?;
        let seal = match &options.state_redemptions {
            Some(dir) => seal
                .with_shared_redemptions(dir)
                .map_err(ServeError::Redemptions)?,
            None => seal,
        };
        let config = host.config();
        let runs_dir = config.runs_dir();
        let redactor = Arc::new(config.redactor());
        let keyed = Idempotency::new(DEFAULT_KEY_TTL)
            .with_most_keys(options.idempotency_keys.unwrap_or(MAX_KEYS));
        let keyed = match (&options.idempotency_dir, &options.state_key) {
            (None, _) => keyed,
            (Some(dir), Some(key)) => keyed.with_shared(
                SharedResults::new(
                    dir,
                    key,
                    options.idempotency_claim_ttl.unwrap_or(DEFAULT_CLAIM_TTL),
                    DEFAULT_CLAIM_WAIT,
                    redactor.clone(),
                )
                .map_err(ServeError::Idempotency)?,
            ),
            (Some(_), None) => {
                return Err(ServeError::Idempotency(
                    "[serve] idempotency_dir needs [serve] state_key_env: results are named and authenticated with the instances' shared key".to_owned(),
                ));
            }
        };
        Ok(Arc::new(Self {
            host,
            runs_dir,
            redactor,
            command: command.into(),
            stateless: Mutex::new(HashMap::new()),
            stateless_uses: AtomicU64::new(0),
            listeners: Mutex::new(HashMap::new()),
            listened: AtomicU64::new(0),
            seal: Arc::new(seal),
            keyed,
        }))
    }

    /// The host's skills, discovered now.
    fn skills(&self) -> bosun_host::skills::Skills {
        bosun_host::skills::Skills::of(self.host.config(), self.host.workspace().root())
    }

    /// The host's tools as MCP lists them, now.
    fn tools(&self) -> Vec<Tool> {
        self.host
            .tools()
            .iter()
            .map(|t| mcp_tool(t.spec()))
            .collect()
    }

    /// A handler for one client session.
    pub fn session(self: &Arc<Self>) -> ToolServer {
        ToolServer {
            served: self.clone(),
            run_id: trace::new_run_id(),
            state: Mutex::new(None),
            modern: OnceLock::new(),
        }
    }
}

/// What a session builds at its first call.
struct Live {
    chokepoint: Arc<Chokepoint>,
    session: Arc<Session>,
    trace: Arc<Trace>,
    /// Calls so far: numbers the call ids, unique within the trace.
    calls: AtomicU64,
}

/// One client session: the MCP handler `rmcp` drives.
pub struct ToolServer {
    served: Arc<Served>,
    run_id: String,
    state: Slot,
    /// Whether this connection speaks 2026-07-28, fixed at its first call when it had no
    /// handshake ([`ToolServer::is_modern`]).
    modern: OnceLock<bool>,
}

impl std::fmt::Debug for ToolServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolServer")
            .field("run_id", &self.run_id)
            .finish_non_exhaustive()
    }
}

/// A session's state, made at its first call; kept as the error when making it failed.
type Slot = Mutex<Option<Result<Arc<Live>, String>>>;

fn slot_or_make(
    slot: &Slot,
    make: impl FnOnce() -> Result<Arc<Live>, String>,
) -> Result<Arc<Live>, String> {
    let mut state = slot
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(made) = state.as_ref() {
        return made.clone();
    }
    let made = make();
    *state = Some(made.clone());
    made
}

fn finish(slot: &Slot) {
    let mut state = slot
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(Ok(live)) = state.take() {
        live.trace.record(Event::RunFinished {
            outcome: RunOutcome::Completed,
        });
        // Nowhere to report a failed write when a session ends; the trace says what it can.
        let _ = live.trace.finish();
    }
}

impl Served {
    /// A chokepoint asking `broker`, a session and a trace `run_id` that has recorded
    /// `run.started`, naming `client` when the server knows it by name.
    fn make_live(
        &self,
        run_id: &str,
        broker: Arc<dyn ApprovalBroker>,
        client: Option<&str>,
    ) -> Result<Arc<Live>, String> {
        let chokepoint = self
            .host
            .chokepoint(broker)
            .map_err(|e| format!("bosun cannot serve this call: {e}"))?;
        let command = match client {
            Some(name) => format!("{} (client {name})", self.command),
            None => self.command.clone(),
        };
        let mut trace = TraceBuilder::new(run_id, self.redactor.clone())
            .runs_dir(self.runs_dir.clone())
            .telemetry(self.host.config(), None);
        let session = Arc::new(Session::new(run_id));
        if let Some(observer) = self.host.js_observer(&session) {
            trace = trace.observe(observer);
        }
        let trace = trace
            .start(&chokepoint, &command, session.taint())
            .map_err(|e| e.to_string())?;
        Ok(Arc::new(Live {
            chokepoint: Arc::new(chokepoint),
            session,
            trace: Arc::new(trace),
            calls: AtomicU64::new(0),
        }))
    }
}

/// The stateless session of one caller: a trace of its own, made at its first call.
struct Stateless {
    run_id: String,
    slot: Slot,
    /// Whether the operator named its client (such sessions are never let go).
    named: bool,
    /// When it was last used, in [`Served::stateless_uses`]' count.
    used: AtomicU64,
}

impl Stateless {
    /// Whether no call is using its session now.
    fn idle(&self) -> bool {
        let slot = self
            .slot
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match slot.as_ref() {
            Some(Ok(live)) => Arc::strong_count(live) == 1,
            _ => true,
        }
    }
}

/// Most stateless sessions of callers the operator did not name (each a distinct
/// `Authorization` on a loopback server without tokens) kept at once; past it the least
/// recently used idle one is finished. Named clients are the operator's few and always kept.
pub const MAX_UNNAMED_CALLERS: usize = 256;

impl Served {
    /// The stateless session of `caller`: its own, whoever else calls. A caller not named by
    /// the operator is whatever `Authorization` it sent (every one without any is one caller),
    /// so their sessions are bounded ([`MAX_UNNAMED_CALLERS`]).
    fn stateless_of(&self, caller: &Caller) -> Result<Arc<Stateless>, String> {
        let used = self.stateless_uses.fetch_add(1, Ordering::Relaxed);
        let mut stateless = self
            .stateless
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(found) = stateless.get(&caller.id) {
            found.used.store(used, Ordering::Relaxed);
            return Ok(found.clone());
        }
        let named = caller.client.is_some();
        if !named && stateless.values().filter(|s| !s.named).count() >= MAX_UNNAMED_CALLERS {
            let oldest = stateless
                .iter()
                .filter(|(_, s)| !s.named && s.idle())
                .min_by_key(|(_, s)| s.used.load(Ordering::Relaxed))
                .map(|(id, _)| id.clone());
            let Some(oldest) = oldest.and_then(|id| stateless.remove(&id)) else {
                return Err(format!(
                    "this Bosun server is already calling for its most callers at once ({MAX_UNNAMED_CALLERS}): retry when a call ends, or serve with named clients ([serve.clients])"
                ));
            };
            finish(&oldest.slot);
        }
        let made = Arc::new(Stateless {
            run_id: trace::new_run_id(),
            slot: Mutex::new(None),
            named,
            used: AtomicU64::new(used),
        });
        stateless.insert(caller.id.clone(), made.clone());
        Ok(made)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let stateless = std::mem::take(
            self.stateless
                .get_mut()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        for one in stateless.values() {
            finish(&one.slot);
        }
    }
}

impl ToolServer {
    /// The chokepoint, session and trace of this call. A session of the handshake revisions
    /// gets its own, made at its first call, whose broker can ask this client's user. The
    /// 2026-07-28 revision has no sessions (over HTTP every request stands alone) and no
    /// server-to-client requests, so each caller's calls share one of the server's, whose
    /// broker asks by ending the call with `input_required` ([`RoundTrip`]): one trace and one
    /// set of labels for all of that caller's calls rather than one per request, and never
    /// another caller's.
    fn live(
        &self,
        modern: bool,
        context: &RequestContext<RoleServer>,
    ) -> Result<Arc<Live>, String> {
        let caller = caller(context);
        let client = caller.client.clone();
        if modern {
            let stateless = self.served.stateless_of(&caller)?;
            return slot_or_make(&stateless.slot, || {
                self.served
                    .make_live(&stateless.run_id, Arc::new(RoundTrip), client.as_deref())
            });
        }
        slot_or_make(&self.state, || {
            self.served.make_live(
                &self.run_id,
                Arc::new(ElicitingBroker::new(context.peer.clone())),
                client.as_deref(),
            )
        })
    }
}

impl ToolServer {
    /// Whether this connection speaks 2026-07-28 (no sessions, no requests back to the client
    /// during a call). The connection decides, not the request: a session opened with
    /// `initialize` is a session for every request in it, so a request whose `_meta` claims
    /// 2026-07-28 still runs with the session's labels and approvals; a connection without a
    /// handshake keeps the revision of its first call. A handshake never negotiates 2026-07-28
    /// (that revision has none): over Streamable HTTP rmcp gives each request without a session
    /// peer info made from its `MCP-Protocol-Version` header, which is no handshake.
    fn is_modern(&self, context: &RequestContext<RoleServer>) -> bool {
        if context
            .peer
            .peer_info()
            .is_some_and(|info| info.protocol_version < ProtocolVersion::V_2026_07_28)
        {
            return false;
        }
        *self.modern.get_or_init(|| {
            context
                .protocol_version()
                .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28)
        })
    }
}

impl Drop for ToolServer {
    fn drop(&mut self) {
        finish(&self.state);
    }
}

impl Served {
    fn listeners(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Listener>> {
        self.listeners
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Wakes every open `subscriptions/listen` stream to say the tool set changed. Never
    /// waits: a stream whose client does not read holds one pending wake-up, however many
    /// changes come, and delays no one else's call.
    fn tools_changed(&self) {
        for listener in self.listeners().values() {
            listener.wake.notify_one();
        }
    }
}

/// Most `subscriptions/listen` streams open at once; each holds a connection.
pub const MAX_LISTENERS: usize = 256;

/// An open `subscriptions/listen` stream: whose it is, and what wakes it.
struct Listener {
    caller: String,
    wake: Arc<tokio::sync::Notify>,
}

/// A listener's place in [`Served::listeners`], given up when its stream ends however it ends.
struct Listening<'a> {
    served: &'a Served,
    number: u64,
}

impl Drop for Listening<'_> {
    fn drop(&mut self) {
        self.served.listeners().remove(&self.number);
    }
}

impl ServerHandler for ToolServer {
    /// `subscriptions/listen` (2026-07-28): the only change Bosun announces is its tool set's.
    fn accepted_subscription_filter(
        &self,
        _requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(SubscriptionFilter::builder().tools_list_changed().build())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        let served = &self.served;
        let wake = Arc::new(tokio::sync::Notify::new());
        let number = served.listened.fetch_add(1, Ordering::Relaxed);
        let caller = caller(context.request_context());
        {
            // Counted and inserted under one lock; each caller within its share, so one
            // client's streams leave the others theirs.
            let mut listeners = served.listeners();
            if listeners.len() >= MAX_LISTENERS {
                return Err(McpError::internal_error(
                    format!(
                        "this Bosun server already has its most subscriptions/listen streams open ({MAX_LISTENERS}): close one, or list the tools again instead"
                    ),
                    None,
                ));
            }
            let own = listeners
                .values()
                .filter(|listener| listener.caller == caller.id)
                .count();
            if own >= caller.listeners {
                return Err(McpError::internal_error(
                    format!(
                        "this client already has its most subscriptions/listen streams open ({}): close one, or list the tools again instead",
                        caller.listeners
                    ),
                    None,
                ));
            }
            listeners.insert(
                number,
                Listener {
                    caller: caller.id,
                    wake: wake.clone(),
                },
            );
        }
        let _listening = Listening { served, number };
        let sink = context.sink().clone();
        // One notification at a time: changes made while one is on its way are told by the
        // next (`Notify` keeps one wake-up), so a client that never reads holds no more.
        loop {
            tokio::select! {
                () = context.cancelled() => return Ok(()),
                () = wake.notified() => {}
            }
            tokio::select! {
                () = context.cancelled() => return Ok(()),
                sent = sink.notify_tool_list_changed() => {
                    if sent.is_err() {
                        return Ok(());
                    }
                }
            }
        }
    }

    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_prompts()
                .build(),
        )
        .with_server_info(
            Implementation::new("bosun", env!("CARGO_PKG_VERSION"))
                .with_title("Bosun")
                .with_description(
                    "Sandboxed, policy-gated tools: every call is judged, run and traced by Bosun.",
                ),
        )
        .with_instructions(
            "Every call goes through Bosun's policy. A call that needs approval is put to your \
                 user when the client supports elicitation, and otherwise fails with \
                 needs_approval; a denied call fails with denied. Both say why.",
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.served.tools()))
    }

    /// The host's skills (built-in, user, trusted project) as prompts: a person picking one in
    /// the client is selecting it, so explicit-only skills are listed too.
    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        let prompts = self
            .served
            .skills()
            .all()
            .iter()
            .map(|skill| {
                Prompt::new(
                    skill.name.clone(),
                    Some(skill.description.clone()),
                    Some(vec![
                        PromptArgument::new("task")
                            .with_description("What to do with the skill (optional).")
                            .with_required(false),
                    ]),
                )
            })
            .collect();
        Ok(ListPromptsResult::with_all_items(prompts))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let skills = self.served.skills();
        let Some(skill) = skills.all().iter().find(|s| s.name == request.name) else {
            return Err(McpError::invalid_params(
                format!(
                    "there is no skill `{}`; prompts/list names them",
                    escape_hidden(&request.name)
                ),
                None,
            ));
        };
        let content = skills
            .content(skill)
            .map_err(|e| McpError::internal_error(e.message, None))?;
        let task = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("task"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        let mut text = format!(
            "<skill_content name=\"{}\">\n{content}\n</skill_content>",
            skill.name
        );
        if !task.trim().is_empty() {
            text.push_str("\n\n");
            text.push_str(task);
        }
        Ok(
            GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
                .with_description(skill.description.clone())
                .into(),
        )
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let arguments = request
            .arguments
            .clone()
            .map_or_else(|| Value::Object(Map::new()), Value::Object);
        let Some(key) = idempotency_key(&request, &context) else {
            return self.call_once(request, arguments, &context).await;
        };
        // A session's keys are its own: another session of the same caller — with its own
        // approvals and labels — runs its own call rather than being handed this one's result.
        // Under 2026-07-28 there are no sessions, and a retry after a reconnect must find the
        // first attempt's result: the caller is the scope.
        // In memory the key counts in its caller's share of the table, so another caller's
        // keys cannot push it out.
        let caller = caller(&context).id;
        let scope = if self.is_modern(&context) {
            caller.clone()
        } else {
            format!("{caller} session:{}", self.run_id)
        };
        let call = call_digest(&request.name, &arguments);
        let outcome = self
            .served
            .keyed
            .run_held(&caller, &scope, &key, &call, || async {
                match self.call_once(request, arguments, &context).await {
                    // A finished call answers retries; a question, a cancelled call or a
                    // refused request does not, so a retry runs.
                    Ok(CallToolResponse::Complete(result)) if !context.ct.is_cancelled() => {
                        Ok(Ok(CallToolResponse::Complete(result)))
                    }
                    other => Err(other),
                }
            })
            .await;
        match outcome {
            Ok(response) => response,
            // Nothing ran: a client may retry these with the same key.
            Err(refused @ (KeyRefused::InProgress | KeyRefused::Unavailable)) => {
                Err(McpError::internal_error(refused.to_string(), None))
            }
            Err(refused) => Err(McpError::invalid_params(refused.to_string(), None)),
        }
    }
}

/// A keyed call's answer as the shared directory keeps it: only a finished call's result (the
/// others are never kept, see [`Idempotency::run`]).
impl Kept for Result<CallToolResponse, McpError> {
    fn to_kept(&self) -> Option<Value> {
        match self {
            Ok(CallToolResponse::Complete(result)) => serde_json::to_value(result).ok(),
            _ => None,
        }
    }

    fn from_kept(value: Value) -> Option<Self> {
        serde_json::from_value::<CallToolResult>(value)
            .ok()
            .map(|result| Ok(CallToolResponse::Complete(result)))
    }
}

/// The idempotency key a call carries: the `Idempotency-Key` header, else `_meta`'s.
fn idempotency_key(
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
) -> Option<String> {
    let header = context
        .extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.headers.get(IDEMPOTENCY_HEADER))
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    header.or_else(|| {
        request
            .meta
            .as_ref()
            .and_then(|m| m.get(IDEMPOTENCY_META_KEY))
            .or_else(|| context.meta.get(IDEMPOTENCY_META_KEY))
            .and_then(Value::as_str)
            .map(str::to_owned)
    })
}

/// Who sent a request, as the HTTP guard ([`crate::http`]) established it and put in the
/// request's extensions: what sessions, request states, idempotency keys and
/// `subscriptions/listen` streams are scoped and counted by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Caller {
    /// `client:NAME` for a client the server knows by its token; otherwise the digest of the
    /// `Authorization` sent (`bearer:…`), or `http:anonymous`, or `stdio`.
    pub(crate) id: String,
    /// The name of a client the server knows by its token: traces name it.
    pub(crate) client: Option<String>,
    /// Most `subscriptions/listen` streams this caller may hold open at once.
    pub(crate) listeners: usize,
}

/// Who is calling: the caller the HTTP guard named, or the one stdio client.
fn caller(context: &RequestContext<RoleServer>) -> Caller {
    match context.extensions.get::<http::request::Parts>() {
        Some(parts) => parts
            .extensions
            .get::<Caller>()
            .cloned()
            .unwrap_or_else(|| Caller {
                id: http_caller(&parts.headers),
                client: None,
                listeners: MAX_LISTENERS,
            }),
        None => Caller {
            id: "stdio".to_owned(),
            client: None,
            listeners: MAX_LISTENERS,
        },
    }
}

/// The caller of an HTTP request of a server that knows no clients by name: the digest of its
/// `Authorization`, so the token is never kept or shown.
pub(crate) fn http_caller(headers: &http::HeaderMap) -> String {
    match headers.get(http::header::AUTHORIZATION) {
        Some(value) => {
            let digest = sha2::Sha256::digest(value.as_bytes());
            format!("bearer:{}", bosun_core::text::hex(&digest[..16]))
        }
        None => "http:anonymous".to_owned(),
    }
}

impl ToolServer {
    /// One attempt of a call: judged, asked, run and traced by the chokepoint.
    async fn call_once(
        &self,
        request: CallToolRequestParams,
        arguments: Value,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let modern = self.is_modern(context);
        let live = match self.live(modern, context) {
            Ok(live) => live,
            Err(message) => {
                return Ok(CallToolResult::error(vec![ContentBlock::text(message)]).into());
            }
        };
        let call = ToolCall {
            id: String::new(),
            name: request.name.into_owned(),
            input: arguments,
        };
        // Under 2026-07-28 a question ends the call; the retry carries the answers. The
        // handshake revisions ask during the call instead, and need no round.
        let round = if modern {
            let can_elicit = can_elicit_form(context.client_capabilities().as_ref());
            let round = Round::new(
                    can_elicit,
                    &self.served.seal,
                    &caller(context).id,
                    &call.name,
                    &call.input,
                    request.request_state.as_deref(),
                    request.input_responses.as_ref(),
                )
                .map_err(|refused| {
                    // One answer for every failure to open (SEP-2322); the kind is in the text
                    // for whoever reads the client's log.
                    McpError::invalid_params(
                        format!(
                            "requestState refused ({refused}): call again without requestState and inputResponses to be asked anew"
                        ),
                        None,
                    )
                })?;
            Some(Arc::new(round))
        } else {
            None
        };
        let number = live.calls.fetch_add(1, Ordering::Relaxed) + 1;
        let call = ToolCall {
            id: format!("mcp-{number}"),
            ..call
        };
        // The caller's span (SEP-414 `_meta.traceparent`, else the HTTP header) parents the
        // call's, so one trace crosses the client, Bosun and the servers the call reaches. It
        // is adopted under the call's id, which the call's span is found by.
        let traceparent = request
            .meta
            .as_ref()
            .and_then(|meta| meta.get_traceparent())
            .or_else(|| context.meta.get_traceparent())
            .map(str::to_owned)
            .or_else(|| {
                context
                    .extensions
                    .get::<http::request::Parts>()
                    .and_then(|parts| parts.headers.get("traceparent"))
                    .and_then(|value| value.to_str().ok())
                    .map(str::to_owned)
            });
        if let Some(traceparent) = traceparent {
            bosun_host::telemetry::adopt_parent(live.trace.run_id(), &call.id, &traceparent);
        }
        let generation = self.served.host.tools_generation();
        let calling = live
            .chokepoint
            .call(call, &live.session, &live.trace, &context.ct);
        let outcome = match &round {
            Some(round) => ROUND.scope(round.clone(), calling).await,
            None => calling.await,
        };
        live.trace.flush();
        // A question nobody could answer yet — before the call, or while it ran (a plugin
        // starting a program) — goes to the client's user; this attempt's result is dropped and
        // the retry runs the call again from the start.
        if let Some((requests, state)) = round.and_then(|round| round.input_required()) {
            return Ok(InputRequiredResult::new(Some(requests), Some(state)).into());
        }
        if self.served.host.tools_generation() != generation {
            // A client that cannot take the notification still sees the new set when it lists.
            // Handshake revisions get it unasked; 2026-07-28 clients on the streams they opened.
            let _ = context.peer.notify_tool_list_changed().await;
            self.served.tools_changed();
        }
        // A name that is no tool is a protocol error in the specification ("Unknown tool",
        // -32602), not a tool's failed result; the chokepoint has judged and traced it first.
        if let ToolResult::Err { error, .. } = &outcome.result
            && error.code == ErrorCode::UnknownTool
        {
            return Err(McpError::invalid_params(
                format!("Unknown tool: {}", error.message),
                None,
            ));
        }
        Ok(call_result(outcome.result).into())
    }
}

/// A tool as MCP lists it. The annotations are hints derived from the risk Bosun judges the tool
/// by; they loosen nothing.
fn mcp_tool(spec: &ToolSpec) -> Tool {
    let schema = match &spec.input_schema {
        Value::Object(schema) => schema.clone(),
        _ => Map::from_iter([("type".to_owned(), Value::String("object".to_owned()))]),
    };
    let annotations = match spec.risk {
        Risk::Read => ToolAnnotations::new().read_only(true).open_world(false),
        Risk::Write => ToolAnnotations::new()
            .read_only(false)
            .destructive(true)
            .open_world(false),
        Risk::Process => ToolAnnotations::new()
            .read_only(false)
            .destructive(true)
            .open_world(true),
        Risk::Network => ToolAnnotations::new().read_only(false).open_world(true),
        Risk::Model => ToolAnnotations::new().open_world(true),
    };
    Tool::new(
        Cow::Owned(spec.name.to_string()),
        Cow::Owned(spec.description.clone()),
        Arc::new(schema),
    )
    .with_annotations(annotations)
}

/// The chokepoint's result as MCP carries it.
fn call_result(result: ToolResult) -> CallToolResult {
    match result {
        ToolResult::Ok {
            output, truncated, ..
        } => {
            let text = match &output {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            let mut content = vec![ContentBlock::text(text)];
            if truncated {
                content.push(ContentBlock::text(
                    "(Bosun cut this output to its bound; ask for less to see the rest)",
                ));
            }
            let mut result = CallToolResult::success(content);
            if let Value::Object(_) = output {
                result.structured_content = Some(output);
            }
            result
        }
        ToolResult::Err { error, .. } => CallToolResult::error(vec![ContentBlock::text(format!(
            "{}: {}",
            error.code, error.message
        ))]),
    }
}

/// Serves one client over this process's stdin and stdout until it disconnects.
///
/// # Errors
/// [`ServeError`] when the handshake fails or the session ends abnormally.
pub async fn serve_stdio(served: Arc<Served>) -> Result<(), ServeError> {
    let running = served
        .session()
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| ServeError::Handshake(e.to_string()))?;
    running
        .waiting()
        .await
        .map_err(|e| ServeError::Session(e.to_string()))?;
    Ok(())
}
