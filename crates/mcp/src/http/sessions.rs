//! The MCP sessions of `bosun serve --http` (revisions before 2026-07-28): rmcp's in-memory
//! sessions, with ids of 256 bits from the kernel's CSPRNG, at most [`Limits::sessions`]
//! open at once, and each bound to the caller that opened it.
//!
//! This module only keeps the table; the HTTP guard ([`super`]) refuses a request whose caller
//! is not its session's owner. It never reads a request.
//!
//! [`Limits::sessions`]: super::Limits::sessions

use std::collections::HashMap;
use std::sync::Mutex;

use futures_util::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::WorkerTransport;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, LocalSessionWorker, create_local_session,
};
use rmcp::transport::streamable_http_server::session::{
    ServerSseMessage, SessionId, SessionManager,
};

/// Random bytes in a session id: far past guessing, whatever the number of sessions.
pub(super) const SESSION_ID_BYTES: usize = 32;

/// Why a session could not be opened or used; the text is what the client reads.
#[derive(Debug, thiserror::Error)]
pub(super) enum SessionsError {
    /// As many sessions are open as the server allows.
    #[error(
        "this Bosun server already holds its most open sessions ({0}): end one (DELETE /mcp with its Mcp-Session-Id), wait for an idle one to expire, or use the stateless 2026-07-28 revision, which opens none"
    )]
    Full(usize),
    /// No random id could be made.
    #[error("no session id could be made: reading /dev/urandom: {0}")]
    Random(std::io::Error),
    /// The session itself failed (rmcp's error).
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
}

/// rmcp's local sessions, their bound and their owners.
#[derive(Debug)]
pub(super) struct Sessions {
    local: LocalSessionManager,
    max: usize,
    /// Each open session's caller ([`crate::server::http_caller`]), recorded when its
    /// `initialize` is answered.
    owners: Mutex<HashMap<SessionId, String>>,
}

impl Sessions {
    /// At most `max` sessions open at once.
    pub(super) fn new(max: usize) -> Self {
        Self {
            local: LocalSessionManager::default(),
            max,
            owners: Mutex::new(HashMap::new()),
        }
    }

    fn owners(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, String>> {
        self.owners
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records `caller` as the owner of the session `id` just opened for it.
    pub(super) fn bind(&self, id: &str, caller: String) {
        self.owners().insert(SessionId::from(id), caller);
    }

    /// Whether `caller` may use the session `id`: a session it opened, or one this server does
    /// not know (rmcp answers that one 404 itself).
    pub(super) fn may_use(&self, id: &str, caller: &str) -> bool {
        self.owners()
            .get(&SessionId::from(id))
            .is_none_or(|owner| owner == caller)
    }
}

impl SessionManager for Sessions {
    type Error = SessionsError;
    type Transport = WorkerTransport<LocalSessionWorker>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let id =
            SessionId::from(crate::random::hex(SESSION_ID_BYTES).map_err(SessionsError::Random)?);
        let (handle, worker) = create_local_session(id.clone(), self.local.session_config.clone());
        {
            // Counted and inserted under one lock: two handshakes at once cannot both pass
            // the bound.
            let mut sessions = self.local.sessions.write().await;
            if sessions.len() >= self.max {
                return Err(SessionsError::Full(self.max));
            }
            sessions.insert(id.clone(), handle);
        }
        Ok((id, WorkerTransport::spawn(worker)))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        Ok(self.local.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.local.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.owners().remove(id);
        Ok(self.local.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.local.create_stream(id, message).await?)
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        Ok(self.local.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.local.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.local.resume(id, last_event_id).await?)
    }
}
