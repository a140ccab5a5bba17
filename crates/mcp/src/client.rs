//! Bosun as an MCP client: the tools of the servers in `[mcp.<name>]`, offered to the model and
//! judged by the same chokepoint as every other tool.
//!
//! - **Names.** A server's tool `t` is offered as `mcp__<server>__<t>` (a name no built-in or
//!   plugin tool can take: the registry refuses a duplicate) with the policy action
//!   `mcp.<server>.tool.<t>`.
//! - **Approval first.** Only tools the user approved with `bosun mcp trust <server>` are
//!   offered, from the pin ([`crate::pins`]): listing starts no server. A server whose identity
//!   changed offers nothing until approved again; a tool whose description, schema or
//!   annotations changed is withheld at call time, with the way to review it.
//! - **Risk.** Every tool of an untrusted server is judged as `process` (it runs a program of
//!   its own); annotations set the risk only when the user marked the server `trusted = true`.
//! - **Lifecycle.** A server starts at the first call of one of its tools, is reused, and stops
//!   with Bosun. A server that dies is started again once; after that its tools fail with the
//!   tail of what it wrote on stderr. Every request has a deadline (`timeout_ms`, default 60 s).
//! - **Labels.** One running server serves every session of the process (`bosun serve`'s
//!   clients, sibling subagents), and may keep what one session sent it: it carries the labels
//!   of every session whose call reached it, and every answer carries them to the session that
//!   reads it. A server started again starts without.
//! - **Results.** `isError` is a tool error; content blocks are kept as typed JSON;
//!   `structuredContent` is checked against the tool's approved `outputSchema`. The chokepoint
//!   bounds the output after that.
//! - **Environment.** A stdio server gets `PATH`, `HOME`, `LANG`, `TMPDIR` and the variables its
//!   entry names — never the whole environment.

mod error;
mod review;
mod tool;

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use bosun_core::{ErrorCode, ToolError, ToolName};
use bosun_host::Host;
use bosun_host::mcp_config::{DEFAULT_MCP_TIMEOUT_MS, McpServerConfig, UrlTransport};
use bosun_launch::{Confinement, Jail, Launcher, Network};
use rmcp::model::{
    ClientConfig, Implementation, ProtocolVersion, ServerNotification, SubscriptionFilter,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, NotificationContext, RunningService};
use rmcp::{ClientHandler, RoleClient};
use serde_json::Value;
use tokio::io::AsyncReadExt;

use crate::pins::{Pin, PinStore, identity, tool_hash};
pub use error::{ClientError, OfferError};
pub use review::{Change, ReviewError, ReviewedTool, ServerReview};
pub use tool::McpTool;

/// Bytes of a server's stderr kept for error messages.
const STDERR_TAIL: usize = 4096;
/// How long starting a server (spawn and handshake) may take.
const START_TIMEOUT: Duration = Duration::from_secs(20);
/// How many times a server that died is started again in one process.
const RESTARTS: u32 = 1;
/// How long a server is given to leave once its session is closed, before it is killed.
const SHUTDOWN_GRACE: Duration = Duration::from_millis(500);
/// Variables every stdio server gets, when set.
const BASE_ENV: [&str; 4] = ["PATH", "HOME", "LANG", "TMPDIR"];

/// A tool a server listed, checked for being offered.
#[derive(Debug, Clone)]
pub struct ListedTool {
    /// The server's name for it.
    pub name: String,
    /// Its JSON as the server sent it.
    pub raw: Value,
    /// Its hash ([`tool_hash`]).
    pub hash: String,
    /// Why Bosun will not offer it, if it will not.
    pub refused: Option<String>,
}

/// The model-facing name of `tool` of `server`: `mcp__<server>__<tool>`, and for a plugin's
/// server `<plugin>:<server>` the name Claude Code gives it, `mcp__plugin_<plugin>_<server>__<tool>`
/// (so a plugin's hook matchers and tool lists name it as written; no `[mcp.<name>]` entry can
/// take it, since their names hold no `_`).
pub fn model_name(server: &str, tool: &str) -> String {
    match server.split_once(':') {
        Some((plugin, server)) => format!("mcp__plugin_{plugin}_{server}__{tool}"),
        None => format!("mcp__{server}__{tool}"),
    }
}

/// The policy action of `tool` of `server`: `mcp.<server>.tool.<tool>`, and for a plugin's
/// server `<plugin>:<server>` `mcp.<plugin>.<server>.tool.<tool>` (a rule's action holds no
/// `:`; the extra segment keeps it apart from any `[mcp.<name>]` server's).
pub fn action(server: &str, tool: &str) -> String {
    format!("mcp.{}.tool.{tool}", server.replace(':', "."))
}

/// Why a listed tool cannot be offered, if it cannot.
fn refusal(server: &str, raw: &Value) -> Option<String> {
    let name = tool_name(raw);
    if ToolName::namespaced(model_name(server, name)).is_err() {
        return Some(format!(
            "its name `{}` does not fit a model-safe tool name (a-z, A-Z, 0-9, _ and -, at most {} characters here)",
            bosun_core::escape_hidden(name),
            64usize.saturating_sub(model_name(server, "").len())
        ));
    }
    let description = raw["description"].as_str().unwrap_or_default();
    if let Some(hidden) = bosun_core::find_hidden(description) {
        return Some(format!(
            "its description hides U+{:04X} at byte {}: text a person would not see",
            hidden.c as u32, hidden.at
        ));
    }
    for key in ["inputSchema", "outputSchema", "annotations"] {
        if let Some(hidden) = bosun_core::find_hidden(&raw[key].to_string()) {
            return Some(format!(
                "its {key} hides U+{:04X}: text a person would not see",
                hidden.c as u32
            ));
        }
    }
    bosun_core::check_schema(&raw["inputSchema"])
        .err()
        .map(|e| format!("its input schema cannot be used: {e}"))
}

/// Ends a session: closed within [`SHUTDOWN_GRACE`], then its process given as long again to
/// leave before what is left of its tree is killed and its TMPDIR removed.
async fn end(client: RunningService<RoleClient, Handler>, jail: Jail) {
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, client.cancel()).await;
    jail.end(SHUTDOWN_GRACE).await;
}

/// Why a server could not be reached or used.
fn server_error(server: &str, message: impl std::fmt::Display) -> ToolError {
    ToolError::new(
        ErrorCode::PluginError,
        format!("MCP server `{server}`: {message}"),
    )
}

/// Bosun's side of a session: who it is, and a flag the server raises with
/// `notifications/tools/list_changed`, so the next call lists the tools again before trusting
/// their hashes.
struct Handler {
    config: ClientConfig,
    stale: Arc<AtomicBool>,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        self.config.clone()
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.stale.store(true, Ordering::Release);
    }
}

/// A running server: the client side of its session.
struct Up {
    client: RunningService<RoleClient, Handler>,
    /// The current hash of each tool it lists.
    hashes: HashMap<String, String>,
    /// The labels of every session whose data reached this process (or this connection to a
    /// remote server): what its answers may carry. Only rises; a server started again starts
    /// with none.
    label: ServerLabel,
    /// The sandbox of a command server's process, which keeps the process: dropped last, it
    /// kills what is left of the process tree and removes its TMPDIR.
    jail: Box<Jail>,
}

/// The label of one running server ([`Up::label`]), shared with the calls that use it.
type ServerLabel = Arc<StdMutex<bosun_host::SessionLabels>>;

enum Conn {
    Down,
    Up(Up),
    Failed(String),
}

/// The connection and how many times it was started in this process.
struct State {
    conn: Conn,
    starts: u32,
}

/// One configured server, shared by its tools.
pub struct Server {
    name: String,
    config: McpServerConfig,
    workspace_root: PathBuf,
    /// `$BOSUN_HOME`, where an OAuth sign-in's tokens are kept.
    home: PathBuf,
    launcher: Arc<Launcher>,
    timeout: Duration,
    state: tokio::sync::Mutex<State>,
    stderr: Arc<StdMutex<VecDeque<u8>>>,
    /// Set when the server's stderr reached its end (the process is gone).
    stderr_closed: Arc<tokio::sync::Notify>,
    /// Raised when the server says its tools changed.
    stale: Arc<AtomicBool>,
    /// A redirect its HTTP client refused, to name in the error.
    redirects: bosun_models::RefusedNote,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// A server not started yet; a command server will start through `launcher`, a URL
    /// server with the OAuth sign-in kept in `home` if there is one.
    pub fn new(
        name: &str,
        config: McpServerConfig,
        workspace_root: &Path,
        home: &Path,
        launcher: Arc<Launcher>,
    ) -> Arc<Self> {
        let timeout = Duration::from_millis(config.timeout_ms.unwrap_or(DEFAULT_MCP_TIMEOUT_MS));
        Arc::new(Self {
            name: name.to_owned(),
            config,
            workspace_root: workspace_root.to_owned(),
            home: home.to_owned(),
            launcher,
            timeout,
            state: tokio::sync::Mutex::new(State {
                conn: Conn::Down,
                starts: 0,
            }),
            stderr: Arc::default(),
            stderr_closed: Arc::default(),
            stale: Arc::default(),
            redirects: Arc::default(),
        })
    }

    fn stderr_tail(&self) -> String {
        let tail = self
            .stderr
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let bytes: Vec<u8> = tail.iter().copied().collect();
        let text = String::from_utf8_lossy(&bytes);
        let text = bosun_core::escape_hidden(text.trim());
        if text.is_empty() {
            String::new()
        } else {
            format!("; its stderr ended with:\n{text}")
        }
    }

    /// Starts a command server's process confined: the workspace (its protected paths read-only),
    /// its `[mcp.<name>.sandbox]` paths, and network only to the hosts named there.
    fn spawn(
        &self,
        command: &str,
        cmd: tokio::process::Command,
    ) -> Result<(tokio::process::Child, Jail), ClientError> {
        let sandbox = &self.config.sandbox;
        let network = if sandbox.network.is_empty() {
            Network::Off
        } else {
            Network::TcpPorts(sandbox.ports())
        };
        let confinement = match &self.config.provided {
            // A plugin's server: its data folder is all it writes; it reads its own folder
            // and the workspace, and its command line opens nothing more.
            Some(provided) => {
                std::fs::create_dir_all(&provided.data).map_err(|source| ClientError::Spawn {
                    command: command.to_owned(),
                    source: bosun_launch::LaunchError::Spawn(source),
                })?;
                let mut confinement = Confinement::new(provided.data.clone(), network);
                confinement.read = vec![provided.root.clone(), self.workspace_root.clone()];
                confinement
            }
            None => {
                let mut confinement = Confinement::new(self.workspace_root.clone(), network);
                confinement.read = sandbox.read.clone();
                confinement.write = sandbox.write.clone();
                confinement.protected = bosun_host::protected_paths(&self.workspace_root);
                // The files its approved command line names are its to read (its script, say).
                confinement.name_arguments(self.config.command.iter().chain(&self.config.args));
                confinement
            }
        };
        // A session of its own, killed with Bosun by the kernel if Bosun dies first.
        self.launcher
            .spawn(cmd, &confinement)
            .map_err(|source| ClientError::Spawn {
                command: command.to_owned(),
                source,
            })
    }

    async fn connect(&self) -> Result<(RunningService<RoleClient, Handler>, Jail), ClientError> {
        // A refusal noted by an earlier connection (its listening stream, say) is not this one's.
        *self
            .redirects
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
        let info = Handler {
            config: ClientConfig::new(
                Default::default(),
                Implementation::new("bosun", env!("CARGO_PKG_VERSION")),
            ),
            stale: self.stale.clone(),
        };
        // `server/discover` first; a server that does not know it gets `initialize` with the
        // newest revision that has that handshake (left `None`, rmcp would send the client's
        // own, 2026-07-28, which has none).
        let lifecycle = ClientLifecycleMode::Auto {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
        };
        match (&self.config.command, &self.config.url) {
            (Some(command), _) => {
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(&self.config.args).env_clear();
                for var in BASE_ENV
                    .iter()
                    .copied()
                    .chain(self.config.env.iter().map(String::as_str))
                {
                    if let Some(value) = std::env::var_os(var) {
                        cmd.env(var, value);
                    }
                }
                if let Some(provided) = &self.config.provided {
                    // Claude Code's variables, its data folder as its home, then the values
                    // the plugin declares (expanded; they may hold its secrets).
                    cmd.env("HOME", &provided.data)
                        .env("CLAUDE_PLUGIN_ROOT", &provided.root)
                        .env("CLAUDE_PLUGIN_DATA", &provided.data)
                        .env("CLAUDE_PROJECT_DIR", &self.workspace_root)
                        .envs(&provided.env);
                }
                let cwd = match &self.config.cwd {
                    Some(dir) if dir.is_absolute() => dir.clone(),
                    Some(dir) => self.workspace_root.join(dir),
                    None => self.workspace_root.clone(),
                };
                cmd.current_dir(cwd)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .kill_on_drop(true);
                let (mut child, mut jail) = self.spawn(command, cmd)?;
                let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
                    return Err(ClientError::NoPipes {
                        command: command.clone(),
                    });
                };
                let stderr = child.stderr.take();
                jail.keep(child);
                let transport = (stdout, stdin);
                if let Some(mut stderr) = stderr {
                    let tail = self.stderr.clone();
                    let closed = self.stderr_closed.clone();
                    tokio::spawn(async move {
                        let mut buffer = [0u8; 1024];
                        while let Ok(n) = stderr.read(&mut buffer).await {
                            if n == 0 {
                                break;
                            }
                            let mut tail = tail
                                .lock()
                                .unwrap_or_else(std::sync::PoisonError::into_inner);
                            tail.extend(&buffer[..n]);
                            while tail.len() > STDERR_TAIL {
                                tail.pop_front();
                            }
                        }
                        closed.notify_one();
                    });
                }
                let client = info
                    .serve_with_lifecycle(transport, lifecycle)
                    .await
                    .map_err(|e| ClientError::Handshake(e.to_string()))?;
                Ok((client, jail))
            }
            (None, Some(url)) if self.config.transport == UrlTransport::Sse => {
                let transport = crate::sse_client::SseClientTransport::connect(
                    url,
                    &self.config,
                    &self.redirects,
                )
                .await
                .map_err(|e| {
                    crate::http_client::redirect_refused(&self.name, &e, &self.redirects)
                        .map_or_else(
                            || ClientError::HttpHandshake {
                                url: url.clone(),
                                message: e.to_string(),
                            },
                            ClientError::Redirected,
                        )
                })?;
                let client = info
                    .serve_with_lifecycle(transport, lifecycle)
                    .await
                    .map_err(|e| ClientError::HttpHandshake {
                        url: url.clone(),
                        message: e.to_string(),
                    })?;
                Ok((client, Jail::default()))
            }
            (None, Some(url)) => {
                let signed_in = crate::oauth::signed_in(&self.home, &self.name, url);
                let connected = if signed_in {
                    let (http, settings) =
                        crate::http_client::parts(url, &self.config, &self.redirects)?;
                    let transport = crate::oauth::authorized_transport(
                        &self.home, &self.name, url, http, settings,
                    )
                    .await?;
                    info.serve_with_lifecycle(transport, lifecycle).await
                } else {
                    let transport =
                        crate::http_client::transport(url, &self.config, &self.redirects)?;
                    info.serve_with_lifecycle(transport, lifecycle).await
                };
                let client = connected.map_err(|e| {
                    let (url, name) = (url.clone(), self.name.clone());
                    if e.is_authorization_required() {
                        if signed_in {
                            ClientError::SignInRefused { url, name }
                        } else {
                            ClientError::SignInNeeded { url, name }
                        }
                    } else if let Some(message) =
                        crate::http_client::redirect_refused(&self.name, &e, &self.redirects)
                    {
                        ClientError::Redirected(message)
                    } else {
                        ClientError::HttpHandshake {
                            url,
                            message: e.to_string(),
                        }
                    }
                })?;
                Ok((client, Jail::default()))
            }
            (None, None) => Err(ClientError::NoTransport),
        }
    }

    /// Starts the server and lists its tools, bounded in time.
    async fn start(&self) -> Result<Up, ClientError> {
        let (client, jail) = self.connect_bounded().await?;
        self.listen_for_changes(&client).await;
        let hashes = hashes(&self.tools(&client).await?);
        Ok(Up {
            client,
            hashes,
            label: ServerLabel::default(),
            jail: Box::new(jail),
        })
    }

    /// Starts the server (spawn or connect, and the handshake) within [`START_TIMEOUT`].
    async fn connect_bounded(
        &self,
    ) -> Result<(RunningService<RoleClient, Handler>, Jail), ClientError> {
        let connected = tokio::time::timeout(START_TIMEOUT, self.connect())
            .await
            .map_err(|_| ClientError::StartTimeout {
                secs: START_TIMEOUT.as_secs(),
            })??;
        self.stale.store(false, Ordering::Release);
        Ok(connected)
    }

    /// On a `2026-07-28` connection a server says its tools changed only on a stream the
    /// client opened for it (`subscriptions/listen`): open one, and raise [`Self::stale`] for
    /// each `tools/list_changed` on it. Earlier revisions send the notification unasked, to
    /// [`Handler`]. A server that refuses the subscription is used as it is: its changes are
    /// then seen when it is next started.
    async fn listen_for_changes(&self, client: &RunningService<RoleClient, Handler>) {
        let modern = client
            .peer()
            .peer_info()
            .is_some_and(|info| info.protocol_version >= ProtocolVersion::V_2026_07_28);
        if !modern {
            return;
        }
        let filter = SubscriptionFilter::builder().tools_list_changed().build();
        let Ok(Ok(mut subscription)) =
            tokio::time::timeout(self.timeout, client.peer().listen(filter)).await
        else {
            return;
        };
        let stale = self.stale.clone();
        tokio::spawn(async move {
            // Ends with the connection (or the server ending the stream).
            while let Ok(Some(notification)) = subscription.next().await {
                if matches!(
                    notification,
                    ServerNotification::ToolListChangedNotification(_)
                ) {
                    stale.store(true, Ordering::Release);
                }
            }
        });
    }

    /// Every tool the server lists now, as the JSON it sent, within the request deadline.
    async fn tools(
        &self,
        client: &RunningService<RoleClient, Handler>,
    ) -> Result<Vec<Value>, ClientError> {
        let tools = tokio::time::timeout(self.timeout, client.peer().list_all_tools())
            .await
            .map_err(|_| ClientError::ListTimeout {
                ms: self.timeout.as_millis(),
            })?
            .map_err(|e| ClientError::List(e.to_string()))?;
        Ok(tools
            .iter()
            .filter_map(|t| serde_json::to_value(t).ok())
            .collect())
    }

    /// The peer to call, starting the server when it is down, the tool's current hash, and the
    /// label of the running server.
    async fn peer_for(
        &self,
        tool: &str,
    ) -> Result<(rmcp::service::Peer<RoleClient>, Option<String>, ServerLabel), ToolError> {
        let mut state = self.state.lock().await;
        if let Conn::Up(up) = &state.conn
            && up.client.is_closed()
        {
            state.conn = Conn::Down;
        }
        if let Conn::Down = state.conn {
            if state.starts > RESTARTS {
                state.conn = Conn::Failed(format!(
                    "it stopped after being started {} times; it is marked failed until Bosun restarts{}",
                    state.starts,
                    self.stderr_tail()
                ));
            } else {
                state.starts += 1;
                match self.start().await {
                    Ok(up) => state.conn = Conn::Up(up),
                    Err(message) => {
                        let message = format!("{message}{}", self.stderr_tail());
                        if state.starts > RESTARTS {
                            state.conn = Conn::Failed(message.clone());
                        }
                        return Err(server_error(&self.name, message));
                    }
                }
            }
        }
        if let Conn::Up(up) = &mut state.conn
            && self.stale.swap(false, Ordering::AcqRel)
        {
            // The server said its tools changed: judge this call by what it offers now.
            up.hashes = hashes(
                &self
                    .tools(&up.client)
                    .await
                    .map_err(|m| server_error(&self.name, m))?,
            );
        }
        match &state.conn {
            Conn::Up(up) => Ok((
                up.client.peer().clone(),
                up.hashes.get(tool).cloned(),
                up.label.clone(),
            )),
            Conn::Failed(message) => Err(server_error(&self.name, message)),
            Conn::Down => Err(server_error(&self.name, "it is not running")),
        }
    }

    /// Marks the server as having stopped, so the next call starts it again (once).
    async fn stopped(&self) {
        let mut state = self.state.lock().await;
        if let Conn::Up(_) = &state.conn {
            state.conn = Conn::Down;
        }
    }

    /// Ends the server if it runs: its session is closed, its process gets [`SHUTDOWN_GRACE`]
    /// to leave, then what is left of its tree is killed and its TMPDIR removed.
    pub async fn shutdown(&self) {
        let conn = std::mem::replace(&mut self.state.lock().await.conn, Conn::Down);
        if let Conn::Up(Up { client, jail, .. }) = conn {
            end(client, *jail).await;
        }
    }

    /// Lists the server's tools now (for `bosun mcp trust`), starting it if needed.
    ///
    /// # Errors
    /// Why the server could not be started or listed, with its stderr tail.
    pub async fn list(&self) -> Result<Vec<ListedTool>, ClientError> {
        let (client, jail) =
            self.connect_bounded()
                .await
                .map_err(|error| ClientError::WithStderr {
                    error: Box::new(error),
                    stderr: self.stderr_tail(),
                })?;
        let tools = self.tools(&client).await;
        end(client, jail).await;
        Ok(tools?
            .into_iter()
            .map(|raw| ListedTool {
                name: tool_name(&raw).to_owned(),
                hash: tool_hash(&raw),
                refused: refusal(&self.name, &raw),
                raw,
            })
            .collect())
    }
}

/// The name a listed tool gives itself.
fn tool_name(raw: &Value) -> &str {
    raw["name"].as_str().unwrap_or_default()
}

/// The current hash of each listed tool, by name.
fn hashes(tools: &[Value]) -> HashMap<String, String> {
    tools
        .iter()
        .map(|raw| (tool_name(raw).to_owned(), tool_hash(raw)))
        .collect()
}

/// The state of a configured server, for `bosun mcp list`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerState {
    /// `enabled = false`.
    Disabled,
    /// Never approved.
    NotApproved,
    /// Approved, with this many tools.
    Approved(usize),
    /// Its identity changed since it was approved.
    Changed,
}

/// The state of `name` with `config` given the pins.
pub fn server_state(name: &str, config: &McpServerConfig, pins: &PinStore) -> ServerState {
    if !config.enabled {
        return ServerState::Disabled;
    }
    match pins.servers.get(name) {
        None => ServerState::NotApproved,
        Some(pin) if pin.identity != identity(config) => ServerState::Changed,
        Some(pin) => ServerState::Approved(pin.tools.len()),
    }
}

/// Registers the approved tools of every enabled server in `host`'s registry. Returns warnings:
/// servers not approved or changed, tools that could not be registered.
///
/// # Errors
/// The pin file cannot be read.
pub fn attach(host: &Host) -> Result<Vec<String>, crate::pins::PinError> {
    let config = host.config();
    let mut warnings = Vec::new();
    let plugin_servers = host.plugin_mcp_servers();
    if config.user.mcp.is_empty() && plugin_servers.is_empty() {
        return Ok(warnings);
    }
    let pins = PinStore::load(&config.home)?;
    let servers = config
        .user
        .mcp
        .iter()
        .chain(plugin_servers.iter().map(|(name, config)| (name, config)));
    for (name, server_config) in servers {
        match server_state(name, server_config, &pins) {
            ServerState::Disabled => continue,
            ServerState::NotApproved => {
                warnings.push(format!(
                    "MCP server `{name}` is not approved yet: its tools are not offered; review them with `bosun mcp trust {name}`"
                ));
                continue;
            }
            ServerState::Changed => {
                warnings.push(format!(
                    "MCP server `{name}` changed since you approved it (command, arguments, url or what it is given): its tools are withheld; review it with `bosun mcp trust {name}`"
                ));
                continue;
            }
            ServerState::Approved(_) => {}
        }
        let Some(pin) = pins.servers.get(name) else {
            continue;
        };
        let server = Server::new(
            name,
            server_config.clone(),
            host.workspace().root(),
            &config.home,
            host.launcher().clone(),
        );
        register(host, &server, pin, &mut warnings);
    }
    Ok(warnings)
}

fn register(host: &Host, server: &Arc<Server>, pin: &Pin, warnings: &mut Vec<String>) {
    for (tool, pinned) in &pin.tools {
        let registered = pinned
            .check_reviewed(&model_name(&server.name, tool), &server.name)
            .map_err(OfferError::from)
            .and_then(|()| McpTool::new(server, tool, pinned))
            .and_then(|t| {
                host.register_tool(Arc::new(t))
                    .map_err(OfferError::Register)
            });
        if let Err(message) = registered {
            warnings.push(format!(
                "MCP server `{}`: tool `{tool}` is not offered: {message}",
                server.name
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::loopback::{Answer, Loopback};

    /// A server of 2025-11-25 and older over Streamable HTTP, strict as some are: it knows no
    /// `server/discover` (method not found), and refuses an `initialize` naming a revision
    /// it does not know.
    async fn legacy_server() -> Loopback {
        Loopback::start(|seen, _| {
            let message: Value = serde_json::from_str(&seen.body).unwrap_or_default();
            let id = message["id"].clone();
            let reply = |body: Value| Answer::json(body).header("mcp-session-id", "legacy-session");
            match (seen.method.as_str(), message["method"].as_str()) {
                ("POST", Some("server/discover")) => reply(json!({
                    "jsonrpc": "2.0", "id": id,
                    "error": {"code": -32601, "message": "Method not found"},
                })),
                ("POST", Some("initialize")) => {
                    let asked = message["params"]["protocolVersion"]
                        .as_str()
                        .unwrap_or_default();
                    if ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"].contains(&asked) {
                        reply(json!({"jsonrpc": "2.0", "id": id, "result": {
                            "protocolVersion": asked,
                            "capabilities": {"tools": {}},
                            "serverInfo": {"name": "legacy", "version": "1"},
                        }}))
                    } else {
                        reply(json!({"jsonrpc": "2.0", "id": id, "error": {
                            "code": -32602,
                            "message": format!("Unsupported protocol version: {asked}"),
                        }}))
                    }
                }
                ("POST", Some("tools/list")) => {
                    reply(json!({"jsonrpc": "2.0", "id": id, "result": {
                        "tools": [{"name": "echo", "inputSchema": {"type": "object"}}],
                    }}))
                }
                ("POST", _) => Answer::new(202),
                ("DELETE", _) => Answer::new(200),
                _ => Answer::new(405),
            }
        })
        .await
    }

    /// Enforcement: `legacy_version` in `Server::connect`'s lifecycle. Left `None`, rmcp's
    /// fallback `initialize` names 2026-07-28 — a revision without that handshake — and a
    /// strict server refuses it.
    #[tokio::test]
    async fn the_fallback_handshake_names_a_revision_that_has_one() {
        let server = legacy_server().await;
        let dir = tempfile::tempdir().unwrap();
        let config: McpServerConfig =
            toml::from_str(&format!("url = \"{}/mcp\"\n", server.base())).unwrap();
        let client = Server::new(
            "legacy",
            config,
            dir.path(),
            dir.path(),
            Arc::new(Launcher::unconfined()),
        );
        let tools = client.list().await.unwrap();
        assert_eq!(tools.len(), 1);
        assert_eq!(tools[0].name, "echo");
        let asked: Vec<String> = server
            .seen()
            .iter()
            .filter_map(|seen| serde_json::from_str::<Value>(&seen.body).ok())
            .filter(|message| message["method"] == "initialize")
            .map(|message| message["params"]["protocolVersion"].to_string())
            .collect();
        assert_eq!(asked, vec!["\"2025-11-25\"".to_owned()]);
    }
}
