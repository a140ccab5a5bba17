//! Why a configured MCP server could not be started, listed or offered. Each says what to do;
//! the tools of a server that fails report it as their error, with its stderr tail.

use crate::http_client::HttpClientError;
use crate::oauth::OAuthError;

/// Why a server could not be started or its tools listed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// Its command could not be started in the sandbox.
    #[error("cannot start `{command}`: cannot start it: {source}")]
    Spawn {
        /// The command.
        command: String,
        /// The launcher's reason.
        #[source]
        source: bosun_launch::LaunchError,
    },
    /// Its process had no pipes to speak over.
    #[error("cannot start `{command}`: its pipes were not made")]
    NoPipes {
        /// The command.
        command: String,
    },
    /// The stdio handshake failed.
    #[error("the handshake failed: {0}")]
    Handshake(String),
    /// The HTTP client for its URL could not be built.
    #[error(transparent)]
    Http(#[from] HttpClientError),
    /// Its kept sign-in could not be used.
    #[error(transparent)]
    OAuth(#[from] OAuthError),
    /// The server refused the sign-in kept for it.
    #[error(
        "{url} refused the sign-in kept for `{name}`; sign in again with `bosun mcp login {name}`"
    )]
    SignInRefused {
        /// Its URL.
        url: String,
        /// Its local name.
        name: String,
    },
    /// The server wants a sign-in.
    #[error("{url} needs you to sign in: run `bosun mcp login {name}`")]
    SignInNeeded {
        /// Its URL.
        url: String,
        /// Its local name.
        name: String,
    },
    /// It answered with a redirect the client refused (the message says where, and what to do).
    #[error("{0}")]
    Redirected(String),
    /// The HTTP handshake failed.
    #[error("the handshake with {url} failed: {message}")]
    HttpHandshake {
        /// Its URL.
        url: String,
        /// What failed.
        message: String,
    },
    /// The entry names neither a command nor a URL (config validation refuses this first).
    #[error("the entry names neither a command nor a url")]
    NoTransport,
    /// It did not start in time.
    #[error("it did not start within {secs} s")]
    StartTimeout {
        /// The bound.
        secs: u64,
    },
    /// `tools/list` did not answer in time.
    #[error("tools/list took longer than {ms} ms")]
    ListTimeout {
        /// The bound (`timeout_ms` in its entry).
        ms: u128,
    },
    /// `tools/list` failed.
    #[error("tools/list failed: {0}")]
    List(String),
    /// One of the above, with the end of what the server wrote on stderr.
    #[error("{error}{stderr}")]
    WithStderr {
        /// What failed.
        error: Box<ClientError>,
        /// `; its stderr ended with:\n…` (escaped), or empty.
        stderr: String,
    },
}

/// Why one approved tool of a server is not offered.
#[derive(Debug, thiserror::Error)]
pub enum OfferError {
    /// It changed since it was reviewed.
    #[error(transparent)]
    Review(#[from] crate::pins::ReviewError),
    /// Its name or description cannot make a Bosun tool.
    #[error(transparent)]
    Spec(#[from] bosun_core::SpecError),
    /// The registry refused it (its name is taken).
    #[error("{}", .0.message)]
    Register(bosun_core::ToolError),
}
