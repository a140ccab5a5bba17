//! One ACP session: a Bosun conversation in the workspace the editor named, with its permission
//! mode, its model entry, the editor's MCP servers and the turn that may be running. Each prompt
//! is one turn built by [`TurnBuilder`] (a fresh host, chokepoint, trace and system prompt, as
//! for `bosun run`); the editor answers its approvals and sees its events, and the conversation
//! is stored after it whatever the ending, so `session/load` and `bosun run --resume` continue
//! it. This module never prints and never runs a command itself.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, ContentBlock,
    EmbeddedResourceResource, SessionConfigOption, SessionId, SessionModeState, SessionUpdate,
    StopReason, UnstructuredCommandInput,
};
use agent_client_protocol::{Error, ErrorCode};
use bosun_agent::assembly::{TurnError, open_model};
use bosun_agent::conversation::Conversation;
use bosun_agent::run::RunEnd;
use bosun_agent::turn::{TurnBuilder, compact_conversation};
use bosun_host::Workspace;
use bosun_host::config::LoadedConfig;
use bosun_host::mcp_config::McpServerConfig;
use bosun_models::Image;
use bosun_policy::Mode;
use tokio_util::sync::CancellationToken;

use crate::broker::EditorBroker;
use crate::client::{ClientLink, error};
use crate::files::EditorFiles;
use crate::modes::{mode_state, model_option};
use crate::updates::{Updates, UrlGuard, message_chunk, thought_chunk};

/// One session of the editor.
pub struct AcpSession {
    /// The session's id: the stored Bosun session's id.
    pub id: SessionId,
    workspace: Arc<Workspace>,
    home: PathBuf,
    link: ClientLink,
    /// The conversation; taken by the turn that runs.
    conversation: tokio::sync::Mutex<Conversation>,
    mode: Mutex<Mode>,
    /// The `[models.<name>]` entry the next turn uses.
    model: Mutex<String>,
    /// The editor's MCP servers, and whether each was approved in this session.
    mcp: Mutex<Vec<(String, McpServerConfig, bool)>>,
    /// The running turn's cancellation.
    running: Mutex<Option<CancellationToken>>,
    /// Whether the editor cancelled the running turn (else a turn that stopped itself, to hear
    /// why a call was rejected, ended its turn normally).
    cancelled_by_editor: AtomicBool,
    /// When URLs are withheld from what the editor is sent: the session's labels (restored
    /// from the stored session on `session/load`), read at each send.
    guard: UrlGuard,
}

/// Why a session could not be opened or continued, as a JSON-RPC error the editor shows.
pub fn turn_error(failure: &TurnError) -> Error {
    let message = chain(failure);
    if let TurnError::Model { source, .. } = failure
        && let bosun_models::ConfigError::MissingKey { .. } = source
    {
        return error(ErrorCode::AUTH_REQUIRED, message);
    }
    error(ErrorCode::INTERNAL_ERROR, message)
}

/// `error` and its causes on one line.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// An invalid-params error that says what to do.
pub fn invalid(message: impl Into<String>) -> Error {
    error(ErrorCode::INVALID_PARAMS, message)
}

/// The workspace at the editor's working directory: absolute, an existing directory.
fn workspace_at(cwd: &Path) -> Result<Workspace, Error> {
    let shown = bosun_core::escape_hidden(&cwd.display().to_string());
    if !cwd.is_absolute() {
        return Err(invalid(format!(
            "cwd `{shown}` is not an absolute path: the editor must name the project's directory"
        )));
    }
    // A file is no workspace (the workspace check would otherwise accept it and fail later,
    // deep in loading the config).
    if !cwd.is_dir() {
        return Err(invalid(format!(
            "cwd `{shown}` is not an existing directory: the editor must name the project's directory"
        )));
    }
    Workspace::new(cwd, cwd).map_err(|e| {
        invalid(format!(
            "cwd `{shown}` cannot be the workspace: {}",
            bosun_core::escape_hidden(&e.to_string())
        ))
    })
}

fn load_config(home: &Path, workspace: &Workspace) -> Result<LoadedConfig, Error> {
    LoadedConfig::load(home, workspace).map_err(|e| error(ErrorCode::INTERNAL_ERROR, chain(&e)))
}

/// Why `config` does not allow `mode` for a session: the folder was refused at the trust
/// question (read-only only), or the managed policy's `allowed_modes` leave it out.
fn refused_mode(config: &LoadedConfig, root: &Path, mode: Mode) -> Result<(), String> {
    if config.workspace_trust == bosun_host::workspace_trust::WorkspaceTrust::Refused
        && mode != Mode::ReadOnly
    {
        return Err(format!(
            "this folder is not trusted, so Bosun stays read-only here; to trust it, run `bosun --trust-workspace` in {} from a terminal",
            root.display()
        ));
    }
    if let Some(managed) = &config.managed {
        managed
            .check_mode(mode)
            .map_err(|refusal| format!("{} ({})", refusal.message, refusal.rule))?;
    }
    Ok(())
}

/// Bosun's slash commands, as the editor offers them, then the commands of the Claude Code
/// plugins installed under `home` (a prompt naming one is expanded by the turn). A plugin's
/// description and argument hint are its own words, drawn by the editor: they pass
/// [`crate::updates::safe`].
pub fn commands(home: &Path) -> Vec<AvailableCommand> {
    let mut commands = builtin_commands();
    let plugins = bosun_host::plugin_commands::PluginCommands::load(home);
    for command in plugins.all() {
        let name = plugins.shown_name(command);
        let mut offered = AvailableCommand::new(
            name.trim_start_matches('/'),
            crate::updates::safe(
                &format!("{} (plugin {})", command.description, command.plugin),
                None,
            ),
        );
        if let Some(hint) = &command.argument_hint {
            offered = offered.input(AvailableCommandInput::Unstructured(
                UnstructuredCommandInput::new(crate::updates::safe(hint, None)),
            ));
        }
        commands.push(offered);
    }
    commands
}

fn builtin_commands() -> Vec<AvailableCommand> {
    vec![
        AvailableCommand::new(
            "compact",
            "Summarise the earlier turns with the model (no tools) to free context",
        ),
        AvailableCommand::new(
            "status",
            "This session's id, model, mode, runs, and how to inspect their traces",
        ),
        AvailableCommand::new("mode", "Switch the permission mode").input(
            AvailableCommandInput::Unstructured(UnstructuredCommandInput::new(
                "read-only, workspace-write or full",
            )),
        ),
    ]
}

/// What an editor's prompt asks: the task's text and the images attached to it.
#[derive(Debug, Clone, PartialEq)]
pub struct Prompt {
    /// The task.
    pub text: String,
    /// The images, in the prompt's order.
    pub images: Vec<Image>,
}

/// The task of a prompt: text as it is, a linked resource as its URI, an embedded text resource
/// as a fenced block under its URI, and images (their type read from their bytes, each under
/// the size cap) as image parts. Audio and binary resources are refused with a reason.
pub fn prompt_content(prompt: &[ContentBlock]) -> Result<Prompt, Error> {
    let mut parts: Vec<String> = Vec::new();
    let mut images = Vec::new();
    for block in prompt {
        match block {
            ContentBlock::Text(text) => parts.push(text.text.clone()),
            ContentBlock::Image(image) => {
                let what = format!("image {} of the prompt", images.len() + 1);
                images.push(
                    Image::from_base64(&what, &image.data).map_err(|e| invalid(e.to_string()))?,
                );
            }
            ContentBlock::ResourceLink(link) => parts.push(format!("@{}", link.uri)),
            ContentBlock::Resource(embedded) => match &embedded.resource {
                EmbeddedResourceResource::TextResourceContents(resource) => parts.push(format!(
                    "<resource uri=\"{}\">\n{}\n</resource>",
                    resource.uri, resource.text
                )),
                _ => {
                    return Err(invalid(
                        "a binary embedded resource cannot be sent to the model: attach it as a file in the workspace and name its path",
                    ));
                }
            },
            _ => {
                return Err(invalid(
                    "Bosun accepts text, images, resource links and embedded text resources (audio is not sent to models)",
                ));
            }
        }
    }
    let text = parts.join("\n\n");
    if text.trim().is_empty() && images.is_empty() {
        return Err(invalid("the prompt is empty: type a task"));
    }
    if images.len() > bosun_models::MAX_IMAGES_PER_MESSAGE {
        return Err(invalid(
            bosun_models::ImageError::TooMany {
                count: images.len(),
            }
            .to_string(),
        ));
    }
    Ok(Prompt { text, images })
}

impl AcpSession {
    /// A new conversation in `cwd` (`resume`: none) or the stored session `resume`, which must
    /// belong to `cwd`.
    pub fn open(
        home: &Path,
        link: ClientLink,
        cwd: &Path,
        resume: Option<&str>,
        mcp: Vec<(String, McpServerConfig)>,
    ) -> Result<Self, Error> {
        let workspace = workspace_at(cwd)?;
        let config = load_config(home, &workspace)?;
        let conversation =
            Conversation::open(&config, workspace.root(), resume, None).map_err(|e| match &e {
                TurnError::Session(bosun_agent::session_store::SessionError::NotFound {
                    ..
                }) => error(ErrorCode::RESOURCE_NOT_FOUND, chain(&e)),
                // Never a path: the store refuses any id but lowercase hex and dashes before
                // one is built. The editor hears it back escaped and cut short.
                TurnError::Session(bosun_agent::session_store::SessionError::InvalidId(id)) => {
                    let id = bosun_core::escape_hidden(&id.chars().take(80).collect::<String>());
                    invalid(format!(
                        "`{id}` is not a session id: ids are lowercase hex and dashes, as session/new answered"
                    ))
                }
                _ => turn_error(&e),
            })?;
        let id = SessionId::new(conversation.stored.id.clone());
        let guard = UrlGuard::of(conversation.grants.clone());
        if link.offers_files() {
            conversation
                .grants
                .set_file_access(Some(Arc::new(EditorFiles::new(link.clone(), id.clone()))));
        }
        let home = home.to_owned();
        let mcp = mcp
            .into_iter()
            .map(|(name, config)| {
                let approved = crate::mcp_servers::approved(&home, &name, &config);
                (name, config, approved)
            })
            .collect();
        Ok(Self {
            id,
            model: Mutex::new(conversation.stored.model.clone()),
            mode: Mutex::new(config.user.mode),
            workspace: Arc::new(workspace),
            home,
            link,
            conversation: tokio::sync::Mutex::new(conversation),
            mcp: Mutex::new(mcp),
            running: Mutex::default(),
            cancelled_by_editor: AtomicBool::new(false),
            guard,
        })
    }

    /// Why URLs are withheld from what the editor is sent now (the session's labels), or
    /// `None`.
    pub fn url_guard(&self) -> Option<String> {
        self.guard.reason()
    }

    /// Tells the editor `text` as a thought (Bosun's notes, which may quote a plugin, a server
    /// or an error): drawn safe, under the session's URL guard.
    pub fn think(&self, text: &str) {
        self.link
            .update(&self.id, thought_chunk(text, self.url_guard().as_deref()));
    }

    /// The workspace root.
    pub fn root(&self) -> &Path {
        self.workspace.root()
    }

    /// The modes, with the session's chosen.
    pub fn modes(&self) -> SessionModeState {
        mode_state(*self.mode.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// The config options (the model).
    pub fn config_options(&self) -> Result<Vec<SessionConfigOption>, Error> {
        let config = load_config(&self.home, &self.workspace)?;
        let names: Vec<String> = config.user.models.keys().cloned().collect();
        let current = self
            .model
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        Ok(vec![model_option(&names, &current)])
    }

    /// The stored conversation's messages (for a replay).
    pub async fn messages(&self) -> Vec<bosun_models::Message> {
        self.conversation.lock().await.stored.messages.clone()
    }

    /// Switches the permission mode for the next turn, if this folder and this machine allow
    /// it: a folder the person refused to trust stays read-only whatever the editor chooses,
    /// and the managed policy's `allowed_modes` bind the editor as they bind the terminal.
    ///
    /// # Errors
    /// Why the mode is refused, and what to do.
    pub fn set_mode(&self, mode: Mode) -> Result<(), String> {
        let config = load_config(&self.home, &self.workspace).map_err(|e| e.message)?;
        refused_mode(&config, self.workspace.root(), mode)?;
        *self.mode.lock().unwrap_or_else(PoisonError::into_inner) = mode;
        Ok(())
    }

    /// Switches the model entry for the next turn; it must be configured and open now.
    pub fn set_model(&self, name: &str) -> Result<(), Error> {
        let config = load_config(&self.home, &self.workspace)?;
        if !config.user.models.contains_key(name) {
            let known: Vec<&String> = config.user.models.keys().collect();
            return Err(invalid(format!(
                "no [models.{name}] in {}; configured: {known:?}",
                config.home.join("config.toml").display()
            )));
        }
        open_model(&config, name).map_err(|e| turn_error(&e))?;
        name.clone_into(&mut self.model.lock().unwrap_or_else(PoisonError::into_inner));
        Ok(())
    }

    /// Cancels the running turn, if any: the running tool sees `cancelled`, every open
    /// permission request is answered as refused, and the session is saved.
    pub fn cancel(&self) {
        if let Some(cancel) = &*self.running.lock().unwrap_or_else(PoisonError::into_inner) {
            self.cancelled_by_editor.store(true, Ordering::SeqCst);
            cancel.cancel();
        }
    }

    /// The editor closes the session (`session/close`) or the connection: the running turn is
    /// cancelled and waited for (it holds the conversation until it is saved), then the
    /// plugins' `SessionEnd` hooks run with `reason: "other"`. What failed is returned, for
    /// the editor when it is still there to hear it.
    pub async fn close(&self) -> Vec<String> {
        self.cancel();
        let conversation = self.conversation.lock().await;
        conversation.end("other").await
    }

    /// The configuration of the next turn: read again (rules remembered "always" meanwhile
    /// included), with the session's mode and the approved editor MCP servers.
    fn turn_config(&self) -> Result<LoadedConfig, Error> {
        let mut config = load_config(&self.home, &self.workspace)?;
        let mode = *self.mode.lock().unwrap_or_else(PoisonError::into_inner);
        // Checked again for every turn: the folder may have been refused since the mode was set.
        if refused_mode(&config, self.workspace.root(), mode).is_ok() {
            config.user.mode = mode;
        }
        for (name, server, approved) in self
            .mcp
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
        {
            if *approved {
                config.user.mcp.insert(name.clone(), server.clone());
            }
        }
        Ok(config)
    }

    /// Asks about the editor's MCP servers not approved yet, before a turn would offer them;
    /// says whether there were any (the turn's configuration then changed).
    async fn approve_servers(&self, config: &LoadedConfig) -> bool {
        let pending: Vec<(String, McpServerConfig)> = self
            .mcp
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|(_, _, approved)| !approved)
            .map(|(name, server, _)| (name.clone(), server.clone()))
            .collect();
        let asked = !pending.is_empty();
        for (name, server) in pending {
            let said = crate::mcp_servers::ask_and_pin(
                &self.link,
                &self.id,
                config,
                self.workspace.root(),
                &name,
                &server,
                self.url_guard().as_deref(),
            )
            .await;
            let (approved, note) = match said {
                Ok(note) => (true, note),
                Err(note) => (false, note),
            };
            self.think(&format!("{note}\n"));
            let mut mcp = self.mcp.lock().unwrap_or_else(PoisonError::into_inner);
            for entry in mcp.iter_mut().filter(|(n, _, _)| *n == name) {
                // Declined servers are not asked again in this session.
                if approved {
                    entry.2 = true;
                } else {
                    entry.1.enabled = false;
                    entry.2 = true;
                }
            }
        }
        asked
    }

    /// Runs one prompt to its end and says why it stopped.
    pub async fn prompt(&self, prompt: &[ContentBlock]) -> Result<StopReason, Error> {
        let prompt = prompt_content(prompt)?;
        let cancel = CancellationToken::new();
        {
            let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
            if running.is_some() {
                return Err(error(
                    ErrorCode::INVALID_REQUEST,
                    "a turn is already running in this session: wait for it or cancel it (session/cancel)",
                ));
            }
            *running = Some(cancel.clone());
        }
        self.cancelled_by_editor.store(false, Ordering::SeqCst);
        let result = self.run(prompt, &cancel).await;
        *self.running.lock().unwrap_or_else(PoisonError::into_inner) = None;
        result
    }

    async fn run(&self, prompt: Prompt, cancel: &CancellationToken) -> Result<StopReason, Error> {
        let task = prompt.text.as_str();
        if prompt.images.is_empty()
            && let Some(stop) = self.command(task, cancel).await?
        {
            return Ok(stop);
        }
        let mut config = self.turn_config()?;
        // Read again only when a server was just approved or declined: the config is read
        // once per prompt otherwise.
        if self.approve_servers(&config).await {
            config = self.turn_config()?;
        }
        let config = Arc::new(config);
        let mut conversation = self.conversation.lock().await;
        let model = self
            .model
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        conversation.stored.model = model;
        // The session's labels live across its turns: URLs are withheld by them.
        let guard = self.guard.clone();
        let updates = Arc::new(Updates::new(
            self.link.clone(),
            self.id.clone(),
            self.workspace.root().to_owned(),
            guard.clone(),
        ));
        let builder = TurnBuilder::new(self.workspace.clone(), config)
            .broker(Arc::new(EditorBroker::new(
                self.link.clone(),
                self.id.clone(),
                cancel.clone(),
                guard.clone(),
            )))
            .observe(updates.clone())
            .command("acp")
            .images(prompt.images.clone());
        // Assembling a host reads plugins and may compile; keep it off the async workers.
        let owned = std::mem::replace(&mut *conversation, placeholder(&self.home, self.root()));
        let task_owned = task.to_owned();
        let (owned, built) = tokio::task::spawn_blocking(move || {
            let built = builder.build(&owned, &task_owned);
            (owned, built)
        })
        .await
        .map_err(|e| {
            error(
                ErrorCode::INTERNAL_ERROR,
                format!("assembling the turn: {e}"),
            )
        })?;
        *conversation = owned;
        let turn = built.map_err(|e| turn_error(&e))?;
        for warning in &turn.warnings {
            self.think(&format!("warning: {warning}\n"));
        }
        let done = turn.run(&mut conversation, task, cancel).await;
        updates.finish();
        for warning in &done.warnings {
            self.think(&format!("warning: {warning}\n"));
        }
        match &done.report.end {
            RunEnd::Completed => Ok(StopReason::EndTurn),
            RunEnd::LimitReached { .. } => Ok(StopReason::MaxTurnRequests),
            RunEnd::Cancelled if self.cancelled_by_editor.load(Ordering::SeqCst) => {
                Ok(StopReason::Cancelled)
            }
            RunEnd::Cancelled => Ok(StopReason::EndTurn),
            // A plugin's hook refused the prompt or stopped the run; its reason went out as a
            // warning above the stop.
            RunEnd::Stopped { plugin, reason } => {
                self.think(&format!(
                    "a hook of the plugin `{plugin}` stopped the run: {reason}\n"
                ));
                Ok(StopReason::Refusal)
            }
            RunEnd::ModelFailed(e) => Err(error(
                ErrorCode::INTERNAL_ERROR,
                format!(
                    "model `{}`: {e} (the session is saved; prompt again to continue)",
                    conversation.stored.model
                ),
            )),
        }
    }

    /// A slash command typed as the prompt (`/compact`, `/status`, `/mode NAME`); `None` when
    /// the prompt is a task.
    async fn command(
        &self,
        task: &str,
        cancel: &CancellationToken,
    ) -> Result<Option<StopReason>, Error> {
        let Some(command) = task.trim().strip_prefix('/') else {
            return Ok(None);
        };
        let (name, argument) = command
            .split_once(char::is_whitespace)
            .map_or((command, ""), |(n, a)| (n, a.trim()));
        let say = |text: String| {
            let guard = self.url_guard();
            self.link
                .update(&self.id, message_chunk(text, guard.as_deref()));
        };
        match name {
            "compact" => {
                let config = self.turn_config()?;
                let mut conversation = self.conversation.lock().await;
                // The model the editor chose last summarises, at its own level: not the one
                // the last turn used.
                let model = self
                    .model
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clone();
                match compact_conversation(&config, &mut conversation, &model, cancel).await {
                    Ok(done) => say(format!(
                        "Compacted: {} earlier messages summarised, {} kept.",
                        done.summarised, done.kept
                    )),
                    Err(e) => say(format!("Not compacted: {}", chain(&e))),
                }
            }
            "status" => {
                let conversation = self.conversation.lock().await;
                let stored = &conversation.stored;
                let mode = *self.mode.lock().unwrap_or_else(PoisonError::into_inner);
                let mut text = format!(
                    "Session {} in {}\nmodel: {}\nmode: {mode}\nruns: {}\n",
                    stored.id,
                    stored.workspace.display(),
                    self.model.lock().unwrap_or_else(PoisonError::into_inner),
                    stored.run_ids.len()
                );
                if let Some(last) = stored.run_ids.last() {
                    text.push_str(&format!("last run's trace: `bosun inspect {last}`\n"));
                }
                text.push_str(&format!(
                    "continue in a terminal: `bosun run --resume {} \"…\"`",
                    stored.id
                ));
                say(text);
            }
            "mode" => match crate::modes::parse_mode(argument) {
                Some(mode) => match self.set_mode(mode) {
                    Ok(()) => {
                        self.link.update(
                            &self.id,
                            SessionUpdate::CurrentModeUpdate(
                                agent_client_protocol::v1::schema::CurrentModeUpdate::new(
                                    mode.as_str(),
                                ),
                            ),
                        );
                        say(format!("Mode: {mode}"));
                    }
                    Err(why) => say(format!("Mode not changed: {why}")),
                },
                None => {
                    say("Modes: read-only, workspace-write, full (`/mode read-only`)".to_owned())
                }
            },
            _ => return Ok(None),
        }
        Ok(Some(StopReason::EndTurn))
    }

    /// Tells the editor which slash commands Bosun has.
    pub fn announce_commands(&self) {
        self.link.update(
            &self.id,
            SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(commands(
                &self.home,
            ))),
        );
    }
}

/// A conversation that stands in while the real one is lent to the thread assembling the turn
/// (nothing reads it: the session's lock is held).
fn placeholder(home: &Path, root: &Path) -> Conversation {
    let store = bosun_agent::session_store::SessionStore::in_home(home);
    let stored = store.create("", root);
    Conversation {
        grants: Arc::new(bosun_host::Session::new(stored.id.clone())),
        store,
        stored,
    }
}
