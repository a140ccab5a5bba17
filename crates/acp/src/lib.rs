//! Bosun in the editor: the Agent Client Protocol (ACP, protocol version 1: JSON-RPC 2.0 over
//! the agent's stdio) on the host and agent libraries, with the official `agent-client-protocol`
//! crate speaking the wire. Zed, the JetBrains IDEs, Neovim and Emacs start `bosun acp` and talk
//! to it; everything that makes Bosun Bosun holds: every tool call passes the one chokepoint,
//! policy and approvals decide (an `ask` becomes `session/request_permission`), commands run in
//! Bosun's OS sandbox (never in an editor terminal), every session's runs are traced and
//! stored, and `bosun inspect` shows them.
//!
//! What the editor may call: `initialize`, `authenticate` (names the missing key's variable),
//! `session/new`, `session/load` (replays a stored session), `session/prompt`,
//! `session/cancel`, `session/close` (the session ends: its plugins' `SessionEnd` hooks run, as
//! they do for every session still open when the connection closes), `session/set_mode`
//! (`read-only`, `workspace-write`, `full`) and `session/set_config_option` (`model`, from
//! `[models]`). Where the editor offers
//! `fs/read_text_file` and `fs/write_text_file`, the built-in file tools read and write its
//! buffers (through `bosun_host::file_access`, still confined and judged). No unstable protocol
//! feature is used.
//!
//! This crate never prints to stdout, the connection; stderr (the editor's agent log) gets a
//! line only when an editor that stopped reading is cut off, and when an answer comes to no
//! request that waits for one (the first few, then a count). Its boundary: it translates
//! between the protocol and Bosun's turn (`bosun_agent::turn::TurnBuilder`) and decides nothing
//! itself.
//!
//! ```no_run
//! # async fn serve() -> Result<(), bosun_acp::AcpError> {
//! let home = bosun_host::config::bosun_home().map_err(|e| bosun_acp::AcpError::Home(e.to_string()))?;
//! bosun_acp::serve_stdio(home).await
//! # }
//! ```

use std::path::PathBuf;
use std::sync::Arc;

use agent_client_protocol::v1::schema::{ClientNotification, ClientRequest};
use agent_client_protocol::{Agent as AgentRole, ByteStreams};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

mod agent;
pub mod broker;
mod client;
mod files;
mod mcp_servers;
pub mod modes;
mod replay;
mod session;
pub mod updates;
mod wire;

pub use agent::ENV_METHOD;
pub use session::{Prompt, commands, prompt_content};

/// Why serving ended badly.
#[derive(Debug, thiserror::Error)]
pub enum AcpError {
    /// `$BOSUN_HOME` could not be found.
    #[error("finding Bosun's home: {0}")]
    Home(String),
    /// The connection failed (the transport broke, or the editor sent something the protocol
    /// layer could not survive).
    #[error("the ACP connection failed: {0}; the editor's log shows what it sent")]
    Connection(String),
}

/// Serves one editor that reads `output` and writes `input` (newline-delimited JSON-RPC, the
/// ACP stdio transport) until it closes the connection, then cancels every running turn and
/// waits until each is saved. Every transport passes the same wire as [`serve_stdio`]'s
/// (`wire`): a line too long or malformed is answered, an answer is taken only for a request
/// still open, and an editor that leaves more than 16 MiB unread is cut off (the turns are
/// saved). What is still queued for the editor is written before this returns, for at most
/// five seconds (an editor that stopped reading does not hold it).
///
/// # Errors
/// The connection failed.
pub async fn serve(
    input: impl AsyncRead + Unpin + Send + 'static,
    output: impl AsyncWrite + Unpin + Send + 'static,
    home: PathBuf,
) -> Result<(), AcpError> {
    // Lines the protocol crate would drop without an answer are answered first (`wire`).
    let (to_editor, from_editor, written) = wire::filtered(input, output);
    let transport = ByteStreams::new(to_editor.compat_write(), from_editor.compat());
    let agent = Arc::new(agent::Agent::new(home));
    let requests = agent.clone();
    let notifications = agent.clone();
    let served = AgentRole
        .v1()
        .name("bosun")
        .on_receive_request(
            async move |request: ClientRequest, responder, connection| {
                requests.request(request, responder, connection).await
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |notification: ClientNotification, _connection| {
                notifications.notification(notification);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(transport)
        .await;
    agent.finish().await;
    // What is still queued for the editor reaches it before serving ends (bounded: an editor
    // that stopped reading does not hold the end).
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), written).await;
    served.map_err(|e| AcpError::Connection(e.to_string()))
}

/// Serves the editor that started this process, over its stdin and stdout ([`serve`]).
///
/// # Errors
/// The connection failed.
pub async fn serve_stdio(home: PathBuf) -> Result<(), AcpError> {
    serve(tokio::io::stdin(), tokio::io::stdout(), home).await
}
