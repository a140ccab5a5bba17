//! The MCP sessions of `bosun serve --http` (revisions before 2026-07-28): rmcp's in-memory
//! sessions, with ids of 256 bits from the kernel's CSPRNG, at most [`Limits::sessions`]
//! open at once, at most its share of them each caller's, and each bound to the caller that
//! opened it.
//!
//! This module only keeps the table; the HTTP guard ([`super`]) names the caller of a
//! handshake ([`ADMISSION`]) and refuses a request whose caller is not its session's owner. It
//! never reads a request.
//!
//! [`Limits::sessions`]: super::Limits::sessions

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

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

tokio::task_local! {
    /// Who is opening a session: set by the guard around the SDK's handling of one request,
    /// read when the SDK asks for a session. A session asked for without one is refused.
    pub(super) static ADMISSION: Admission;
}

/// The caller of a handshake, its share of the sessions, and where a refusal is told back to
/// the guard (the SDK answers a failed session `500`; the guard answers `503`).
#[derive(Debug, Clone)]
pub(super) struct Admission {
    /// The caller's id ([`crate::server::Caller::id`]).
    pub(super) caller: Arc<str>,
    /// How the refusal names the caller: `client NAME`, or `this client`.
    pub(super) named: String,
    /// Most sessions the caller may hold at once.
    pub(super) share: usize,
    /// Why its session was refused, once it was.
    pub(super) refused: Arc<OnceLock<String>>,
}

/// Why a session could not be opened or used; the text is what the client reads.
#[derive(Debug, thiserror::Error)]
pub(super) enum SessionsError {
    /// As many sessions are open as the server allows.
    #[error(
        "this Bosun server already holds its most open sessions ({0}): end one (DELETE /mcp with its Mcp-Session-Id), wait for an idle one to expire (5 minutes), or use the stateless 2026-07-28 revision, which opens none"
    )]
    Full(usize),
    /// The caller holds as many sessions as its share.
    #[error(
        "{named} already holds its most open sessions on this Bosun server ({most}): end one (DELETE /mcp with its Mcp-Session-Id), wait for an idle one to expire (5 minutes), or use the stateless 2026-07-28 revision, which opens none"
    )]
    CallerFull { named: String, most: usize },
    /// The SDK asked for a session outside a request the guard admitted.
    #[error("a session was asked for outside a request this server admitted")]
    Unadmitted,
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
    /// Each open session's caller ([`crate::server::Caller::id`]), recorded as it is created.
    owners: Mutex<HashMap<SessionId, Arc<str>>>,
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

    fn owners(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Arc<str>>> {
        self.owners
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether `caller` may use the session `id`: a session it opened, or one this server does
    /// not know (rmcp answers that one 404 itself).
    pub(super) fn may_use(&self, id: &str, caller: &str) -> bool {
        self.owners()
            .get(&SessionId::from(id))
            .is_none_or(|owner| **owner == *caller)
    }
}

impl SessionManager for Sessions {
    type Error = SessionsError;
    type Transport = WorkerTransport<LocalSessionWorker>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let admission = ADMISSION
            .try_with(Admission::clone)
            .map_err(|_| SessionsError::Unadmitted)?;
        let id =
            SessionId::from(crate::random::hex(SESSION_ID_BYTES).map_err(SessionsError::Random)?);
        let (handle, worker) = create_local_session(id.clone(), self.local.session_config.clone());
        {
            // Counted, owned and inserted under one lock: two handshakes at once cannot both
            // pass a bound, and no session is ever without its owner.
            let mut sessions = self.local.sessions.write().await;
            let mut owners = self.owners();
            let held = owners
                .values()
                .filter(|owner| **owner == admission.caller)
                .count();
            let refused = if sessions.len() >= self.max {
                Some(SessionsError::Full(self.max))
            } else if held >= admission.share {
                Some(SessionsError::CallerFull {
                    named: admission.named.clone(),
                    most: admission.share,
                })
            } else {
                None
            };
            if let Some(refused) = refused {
                let _ = admission.refused.set(refused.to_string());
                return Err(refused);
            }
            sessions.insert(id.clone(), handle);
            owners.insert(id.clone(), admission.caller);
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
