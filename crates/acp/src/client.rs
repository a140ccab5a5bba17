//! The editor on the other end of the connection: what it said it can do at `initialize` and
//! the messages Bosun sends it (session updates, permission requests, file reads and writes).
//! Nothing here decides anything; every message passes through this one place.

use std::hash::{BuildHasher, Hasher};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ClientCapabilities, PermissionOptionId, ReadTextFileRequest, RequestPermissionOutcome,
    RequestPermissionRequest, RequestPermissionResponse, SessionId, SessionNotification,
    SessionUpdate, WriteTextFileRequest,
};
use agent_client_protocol::{Client, Error};

/// The connection to the editor and its capabilities.
#[derive(Clone)]
pub struct ClientLink {
    connection: ConnectionTo<Client>,
    capabilities: Arc<RwLock<ClientCapabilities>>,
    /// Questions asked so far, and the key their tags are drawn with.
    questions: Arc<(AtomicU64, std::collections::hash_map::RandomState)>,
}

/// What separates an option's id from its question's tag (`allow-once#5f0c…`).
pub const TAG_MARK: char = '#';

impl std::fmt::Debug for ClientLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientLink").finish_non_exhaustive()
    }
}

impl ClientLink {
    /// The link over `connection`, with no capabilities until `initialize` names them.
    pub fn new(connection: ConnectionTo<Client>) -> Self {
        Self {
            connection,
            capabilities: Arc::default(),
            questions: Arc::default(),
        }
    }

    /// A tag no other question of this connection carries, and which the editor cannot know
    /// before it is asked.
    fn question_tag(&self) -> String {
        let (count, key) = &*self.questions;
        let mut hasher = key.build_hasher();
        hasher.write_u64(count.fetch_add(1, Ordering::Relaxed));
        format!("{:016x}", hasher.finish())
    }

    /// Records what the editor said it can do.
    pub fn set_capabilities(&self, capabilities: ClientCapabilities) {
        *self
            .capabilities
            .write()
            .unwrap_or_else(PoisonError::into_inner) = capabilities;
    }

    /// Whether the editor reads and writes text files for Bosun (both, or neither is used: a
    /// read from the buffer and a write to the disk would disagree).
    pub fn offers_files(&self) -> bool {
        let capabilities = self
            .capabilities
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        capabilities.fs.read_text_file && capabilities.fs.write_text_file
    }

    /// Sends `update` for `session`. A closed connection is not an error here: the turn goes
    /// on and is saved, and the editor loads it again later.
    pub fn update(&self, session: &SessionId, update: SessionUpdate) {
        let _ = self
            .connection
            .send_notification(SessionNotification::new(session.clone(), update));
    }

    /// Asks the person through the editor. Each option's id carries a tag of this question
    /// alone (`allow-once#<tag>`), and an answer is taken only when it names an option with
    /// that tag: an answer meant for another question — another call, another session, an
    /// earlier question replayed — reads as no answer (`cancelled`), never as this one's. The
    /// response comes back with the tag taken off. JSON-RPC pairs the response by its id; the
    /// tag pairs it by what was asked.
    pub async fn request_permission(
        &self,
        mut request: RequestPermissionRequest,
    ) -> Result<RequestPermissionResponse, Error> {
        let tag = format!("{TAG_MARK}{}", self.question_tag());
        for option in &mut request.options {
            option.option_id = PermissionOptionId::new(format!("{}{tag}", option.option_id.0));
        }
        let mut response = self.connection.send_request(request).block_task().await?;
        if let RequestPermissionOutcome::Selected(selected) = &mut response.outcome {
            match selected.option_id.0.strip_suffix(&tag) {
                Some(option) => selected.option_id = PermissionOptionId::new(option.to_owned()),
                None => response.outcome = RequestPermissionOutcome::Cancelled,
            }
        }
        Ok(response)
    }

    /// The editor's text of `path` (an unsaved buffer included).
    pub async fn read_text(&self, session: &SessionId, path: &Path) -> Result<String, Error> {
        let response = self
            .connection
            .send_request(ReadTextFileRequest::new(session.clone(), path))
            .block_task()
            .await?;
        Ok(response.content)
    }

    /// Replaces the editor's text of `path`.
    pub async fn write_text(
        &self,
        session: &SessionId,
        path: &Path,
        text: &str,
    ) -> Result<(), Error> {
        self.connection
            .send_request(WriteTextFileRequest::new(session.clone(), path, text))
            .block_task()
            .await?;
        Ok(())
    }
}

/// An error the editor shows: its message says what went wrong and what to do.
pub fn error(code: agent_client_protocol::ErrorCode, message: impl Into<String>) -> Error {
    Error::new(code, message.into())
}

/// A response as the JSON the connection sends.
pub fn json(response: impl serde::Serialize) -> Result<serde_json::Value, Error> {
    serde_json::to_value(response).map_err(|e| {
        error(
            agent_client_protocol::ErrorCode::INTERNAL_ERROR,
            format!("serialising a response: {e}"),
        )
    })
}
