//! The agent side of one ACP connection: the methods an editor calls, each answered from the
//! sessions it opened. Quick requests are answered in the connection's dispatch loop; a prompt
//! runs as a task of its own so that `session/cancel`, permission answers and file replies keep
//! flowing while it runs. When the connection ends, every running turn is cancelled and waited
//! for, so each is saved.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::Responder;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, AuthMethod, AuthMethodAgent, AuthenticateResponse, ClientNotification,
    ClientRequest, CloseSessionResponse, Implementation, InitializeResponse, LoadSessionResponse,
    McpCapabilities, NewSessionResponse, PromptCapabilities, PromptResponse, SessionCapabilities,
    SessionCloseCapabilities, SessionId, SetSessionConfigOptionResponse, SetSessionModeResponse,
};
use agent_client_protocol::{Client, Error, ErrorCode};
use bosun_host::config::LoadedConfig;
use tokio::task::JoinSet;

use crate::client::{ClientLink, error, json};
use crate::modes::{MODEL_OPTION, parse_mode};
use crate::session::{AcpSession, invalid};

/// The prefix of the authentication method that names a missing key's variable.
pub const ENV_METHOD: &str = "env:";

/// Every session and running turn of one connection.
pub struct Agent {
    home: PathBuf,
    link: OnceLock<ClientLink>,
    sessions: Mutex<HashMap<String, Arc<AcpSession>>>,
    turns: tokio::sync::Mutex<JoinSet<()>>,
}

impl Agent {
    /// The agent for `$BOSUN_HOME` at `home`.
    pub fn new(home: PathBuf) -> Self {
        Self {
            home,
            link: OnceLock::new(),
            sessions: Mutex::default(),
            turns: tokio::sync::Mutex::new(JoinSet::new()),
        }
    }

    fn link(&self, connection: &ConnectionTo<Client>) -> ClientLink {
        self.link
            .get_or_init(|| ClientLink::new(connection.clone()))
            .clone()
    }

    fn session(&self, id: &SessionId) -> Result<Arc<AcpSession>, Error> {
        self.sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&*id.0)
            .cloned()
            .ok_or_else(|| {
                error(
                    ErrorCode::RESOURCE_NOT_FOUND,
                    format!(
                        "no session `{}` on this connection: create one with session/new or load it with session/load",
                        bosun_core::escape_hidden(&id.0)
                    ),
                )
            })
    }

    /// The authentication methods: one per missing key of the configured models, named after
    /// its variable.
    fn auth_methods(&self) -> Vec<AuthMethod> {
        let Ok(workspace) =
            std::env::current_dir().and_then(|cwd| bosun_host::Workspace::new(&cwd, &cwd))
        else {
            return Vec::new();
        };
        let Ok(config) = LoadedConfig::load(&self.home, &workspace) else {
            return Vec::new();
        };
        let mut methods = Vec::new();
        for (name, model) in &config.user.models {
            let Some(var) = &model.api_key_env else {
                continue;
            };
            if bosun_models::process_env(var).is_some() {
                continue;
            }
            let id = format!("{ENV_METHOD}{var}");
            if methods
                .iter()
                .any(|m: &AuthMethod| matches!(m, AuthMethod::Agent(a) if *a.id.0 == *id))
            {
                continue;
            }
            methods.push(AuthMethod::Agent(
                AuthMethodAgent::new(id, format!("Set {var}")).description(format!(
                    "[models.{name}] reads its API key from {var}: set it in the environment the editor starts `bosun acp` with (its agent_servers env), then restart the agent"
                )),
            ));
        }
        methods
    }

    /// Whether the model a new session would use (the `default_model`, or the only entry)
    /// reads images: what `initialize` advertises as the `image` prompt capability. A model
    /// chosen later that takes none refuses an image with an error naming its `images` key.
    fn model_takes_images(&self) -> bool {
        let Ok(workspace) =
            std::env::current_dir().and_then(|cwd| bosun_host::Workspace::new(&cwd, &cwd))
        else {
            return false;
        };
        let Ok(config) = LoadedConfig::load(&self.home, &workspace) else {
            return false;
        };
        let models = &config.user.models;
        let chosen =
            config.user.default_model.as_deref().or_else(|| {
                (models.len() == 1).then(|| models.keys().next().map(String::as_str))?
            });
        chosen
            .and_then(|name| models.get(name))
            .is_some_and(bosun_models::ModelConfig::takes_images)
    }

    /// Answers one request.
    pub async fn request(
        self: &Arc<Self>,
        request: ClientRequest,
        responder: Responder,
        connection: ConnectionTo<Client>,
    ) -> Result<(), Error> {
        let link = self.link(&connection);
        match request {
            ClientRequest::InitializeRequest(initialize) => {
                link.set_capabilities(initialize.client_capabilities.clone());
                let capabilities = AgentCapabilities::new()
                    .load_session(true)
                    .session_capabilities(
                        SessionCapabilities::new().close(SessionCloseCapabilities::new()),
                    )
                    .prompt_capabilities(
                        PromptCapabilities::new()
                            .embedded_context(true)
                            .image(self.model_takes_images()),
                    )
                    .mcp_capabilities(McpCapabilities::new().http(true).sse(true));
                responder.respond(json(
                    InitializeResponse::new(agent_client_protocol::schema::ProtocolVersion::V1)
                        .agent_capabilities(capabilities)
                        .auth_methods(self.auth_methods())
                        .agent_info(
                            Implementation::new("bosun", env!("CARGO_PKG_VERSION")).title("Bosun"),
                        ),
                )?)
            }
            ClientRequest::AuthenticateRequest(authenticate) => {
                let id = authenticate.method_id.0.to_string();
                let Some(var) = id.strip_prefix(ENV_METHOD) else {
                    return responder.respond_with_error(invalid(format!(
                        "unknown authentication method `{}`: use one initialize listed",
                        bosun_core::escape_hidden(&id)
                    )));
                };
                if bosun_models::process_env(var).is_some() {
                    responder.respond(json(AuthenticateResponse::new())?)
                } else {
                    responder.respond_with_error(error(
                        ErrorCode::AUTH_REQUIRED,
                        format!(
                            "{var} is not set: set it in the environment the editor starts `bosun acp` with, then restart the agent"
                        ),
                    ))
                }
            }
            ClientRequest::NewSessionRequest(new) => {
                let (servers, notes) = crate::mcp_servers::from_editor(
                    &new.mcp_servers,
                    &config_for_notes(&self.home, &new.cwd),
                );
                let session = match AcpSession::open(&self.home, link, &new.cwd, None, servers) {
                    Ok(session) => Arc::new(session),
                    Err(e) => return responder.respond_with_error(e),
                };
                let response = NewSessionResponse::new(session.id.clone())
                    .modes(session.modes())
                    .config_options(session.config_options()?);
                if let Err(e) = self.claim(&session) {
                    return responder.respond_with_error(e);
                }
                responder.respond(json(response)?)?;
                self.announce(&session, &notes);
                Ok(())
            }
            ClientRequest::LoadSessionRequest(load) => {
                let (servers, notes) = crate::mcp_servers::from_editor(
                    &load.mcp_servers,
                    &config_for_notes(&self.home, &load.cwd),
                );
                let session = match AcpSession::open(
                    &self.home,
                    link.clone(),
                    &load.cwd,
                    Some(&load.session_id.0),
                    servers,
                ) {
                    Ok(session) => Arc::new(session),
                    Err(e) => return responder.respond_with_error(e),
                };
                let response = LoadSessionResponse::new()
                    .modes(session.modes())
                    .config_options(session.config_options()?);
                // A second copy of an open session would store over the first's turns.
                if let Err(e) = self.claim(&session) {
                    return responder.respond_with_error(e);
                }
                // The conversation is told before the response, as the protocol asks, under the
                // URL guard of the labels its history holds.
                crate::replay::send(
                    &link,
                    &session.id,
                    session.root(),
                    &session.messages().await,
                    session.url_guard().as_deref(),
                );
                responder.respond(json(response)?)?;
                self.announce(&session, &notes);
                Ok(())
            }
            ClientRequest::PromptRequest(prompt) => {
                let session = match self.session(&prompt.session_id) {
                    Ok(session) => session,
                    Err(e) => return responder.respond_with_error(e),
                };
                let mut turns = self.turns.lock().await;
                // Turns that ended are forgotten; the running ones are awaited at the end.
                while turns.try_join_next().is_some() {}
                turns.spawn(async move {
                    let answer = session.prompt(&prompt.prompt).await;
                    // The editor may be gone; the turn was saved either way.
                    let _ = match answer.and_then(|stop| json(PromptResponse::new(stop))) {
                        Ok(response) => responder.respond(response),
                        Err(e) => responder.respond_with_error(e),
                    };
                });
                Ok(())
            }
            ClientRequest::CloseSessionRequest(close) => {
                let session = match self.session(&close.session_id) {
                    Ok(session) => session,
                    Err(e) => return responder.respond_with_error(e),
                };
                self.sessions
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(&*close.session_id.0);
                for warning in session.close().await {
                    session.think(&format!("{warning}\n"));
                }
                responder.respond(json(CloseSessionResponse::new())?)
            }
            ClientRequest::SetSessionModeRequest(set) => {
                let session = match self.session(&set.session_id) {
                    Ok(session) => session,
                    Err(e) => return responder.respond_with_error(e),
                };
                match parse_mode(&set.mode_id.0) {
                    Some(mode) => match session.set_mode(mode) {
                        Ok(()) => responder.respond(json(SetSessionModeResponse::new())?),
                        Err(why) => responder.respond_with_error(invalid(format!(
                            "mode `{}` is refused: {why}",
                            mode.as_str()
                        ))),
                    },
                    None => responder.respond_with_error(invalid(format!(
                        "unknown mode `{}`: read-only, workspace-write or full",
                        bosun_core::escape_hidden(&set.mode_id.0)
                    ))),
                }
            }
            ClientRequest::SetSessionConfigOptionRequest(set) => {
                let session = match self.session(&set.session_id) {
                    Ok(session) => session,
                    Err(e) => return responder.respond_with_error(e),
                };
                if *set.config_id.0 != *MODEL_OPTION {
                    return responder.respond_with_error(invalid(format!(
                        "unknown config option `{}`: Bosun offers `{MODEL_OPTION}`",
                        bosun_core::escape_hidden(&set.config_id.0)
                    )));
                }
                let value = serde_json::to_value(&set.value).unwrap_or_default();
                let Some(name) = value
                    .as_str()
                    .or_else(|| value.get("value").and_then(serde_json::Value::as_str))
                else {
                    return responder.respond_with_error(invalid(
                        "the model option takes a model entry's name",
                    ));
                };
                if let Err(e) = session.set_model(name) {
                    return responder.respond_with_error(e);
                }
                responder.respond(json(SetSessionConfigOptionResponse::new(
                    session.config_options()?,
                ))?)
            }
            _ => responder.respond_with_error(Error::method_not_found()),
        }
    }

    /// Handles one notification.
    pub fn notification(&self, notification: ClientNotification) {
        if let ClientNotification::CancelNotification(cancel) = notification
            && let Ok(session) = self.session(&cancel.session_id)
        {
            session.cancel();
        }
    }

    /// Makes `session` this connection's copy of its id; refused when one is open already (a
    /// `session/load` of a session this connection has open, by its id, a prefix or `last`):
    /// two copies would each store their own turns over the other's.
    fn claim(&self, session: &Arc<AcpSession>) -> Result<(), Error> {
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        let id = session.id.0.to_string();
        if sessions.contains_key(&id) {
            return Err(invalid(format!(
                "session `{id}` is already open on this connection: send its prompts to it as it is, or close it (session/close) before loading it again"
            )));
        }
        sessions.insert(id, session.clone());
        Ok(())
    }

    fn announce(&self, session: &AcpSession, notes: &[String]) {
        session.announce_commands();
        for note in notes {
            session.think(&format!("{note}\n"));
        }
    }

    /// Cancels every running turn and waits until each is saved; then each session still open
    /// ends (the plugins' `SessionEnd` hooks run).
    pub async fn finish(&self) {
        let sessions: Vec<Arc<AcpSession>> = self
            .sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .cloned()
            .collect();
        for session in sessions {
            session.cancel();
        }
        let mut turns = self.turns.lock().await;
        while turns.join_next().await.is_some() {}
        let open: Vec<Arc<AcpSession>> = self
            .sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain()
            .map(|(_, session)| session)
            .collect();
        // No editor is left to tell what failed.
        for session in open {
            let _ = session.close().await;
        }
    }
}

/// The configuration the editor's MCP servers are checked against (names the user's config
/// already uses); an unreadable one checks nothing, and opening the session says why.
fn config_for_notes(home: &std::path::Path, cwd: &std::path::Path) -> LoadedConfig {
    bosun_host::Workspace::new(cwd, cwd)
        .ok()
        .and_then(|workspace| LoadedConfig::load(home, &workspace).ok())
        .unwrap_or_else(|| LoadedConfig {
            home: home.to_owned(),
            user: bosun_host::Config::default(),
            user_file: None,
            project: None,
            trusted: false,
            workspace_trust: bosun_host::workspace_trust::WorkspaceTrust::Unasked,
            remembered: None,
            managed: None,
        })
}
