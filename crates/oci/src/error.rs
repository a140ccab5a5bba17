//! What can go wrong talking to a registry, reading an artifact or a layout, or unpacking a tar
//! layer; each variant says what to do, and [`OciError::code`] maps it to the stable tool error
//! codes Bosun reports.

use std::path::PathBuf;
use std::time::Duration;

use crate::digest::{Digest, InvalidDigest, Mismatch};

/// An OCI operation that failed.
#[derive(Debug, thiserror::Error)]
pub enum OciError {
    /// A digest that is not `sha256:` and 64 lowercase hex digits.
    #[error(transparent)]
    InvalidDigest(#[from] InvalidDigest),
    /// A registry, repository, tag or reference that breaks the distribution spec's grammar.
    #[error("`{reference}` is not a valid OCI reference: {reason}")]
    InvalidReference {
        /// The text, cut at 300 characters.
        reference: String,
        /// Why it was refused.
        reason: String,
    },
    /// Plain HTTP to a registry that is not on this machine.
    #[error(
        "{registry} would be reached over plain HTTP, which lets anyone on the path read credentials and swap tags; use https://, or allow plain HTTP for this registry explicitly"
    )]
    PlainHttp {
        /// The registry.
        registry: String,
    },
    /// The request did not complete (connection refused, TLS failure, reset).
    #[error("request to {url} failed: {message}; check the registry's address and that it is up")]
    Transport {
        /// The URL requested.
        url: String,
        /// The transport's explanation.
        message: String,
    },
    /// No byte arrived for the idle timeout.
    #[error(
        "{url} sent nothing for {after:?}; the registry is hanging or the network is down — try again later or raise the timeout"
    )]
    TimedOut {
        /// The URL requested.
        url: String,
        /// The idle time allowed.
        after: Duration,
    },
    /// A body still arriving when the body timeout ran out.
    #[error(
        "{url} was still sending after {after:?}; the registry is trickling or the network is very slow — try again later, or raise the source's `timeout_secs` if the artifact is that large"
    )]
    TooSlow {
        /// The URL requested.
        url: String,
        /// The time allowed for the whole body.
        after: Duration,
    },
    /// A redirect that was not followed.
    #[error("{from} answered HTTP {status} redirecting to {to}, which was not followed: {reason}")]
    RedirectRefused {
        /// The URL that redirected.
        from: String,
        /// Where it pointed.
        to: String,
        /// The redirect's status.
        status: u16,
        /// Why it was not followed.
        reason: String,
    },
    /// The login for a registry could not be read (a Docker config, a credential helper, an
    /// environment variable). The message never holds the secret.
    #[error("the login for {registry} could not be read: {reason}")]
    Login {
        /// The registry, `host[:port]`.
        registry: String,
        /// Why, and what to do.
        reason: String,
    },
    /// Credentials were not sent where the registry asked them to go.
    #[error("credentials were not sent to {url}: {reason}")]
    CredentialsWithheld {
        /// Where they would have gone.
        url: String,
        /// Why not.
        reason: String,
    },
    /// The registry has no such repository, manifest, tag or blob.
    #[error("{url}: not found ({detail}); check the repository, tag and digest")]
    NotFound {
        /// The URL requested.
        url: String,
        /// The registry's error code and message.
        detail: String,
    },
    /// The registry wants credentials it did not get or did not accept.
    #[error(
        "{url}: the registry refused the credentials or needs some ({detail}); configure a token or username and password for it"
    )]
    Unauthorized {
        /// The URL requested.
        url: String,
        /// The registry's error code and message.
        detail: String,
    },
    /// The registry refused the operation to these credentials.
    #[error("{url}: denied ({detail}); the credentials lack access to this repository")]
    Denied {
        /// The URL requested.
        url: String,
        /// The registry's error code and message.
        detail: String,
    },
    /// Any other unexpected status.
    #[error("{url} answered HTTP {status}: {detail}")]
    Status {
        /// The URL requested.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The registry's error code and message, or the body's start.
        detail: String,
    },
    /// More bytes than the limit (declared or received).
    #[error(
        "{what} is {size} bytes or more, over the limit of {limit} bytes; nothing was kept — raise the limit only for a source you trust"
    )]
    TooLarge {
        /// What was being read.
        what: String,
        /// The limit.
        limit: u64,
        /// The size declared or reached.
        size: u64,
    },
    /// A length other than the one a descriptor or header declared.
    #[error(
        "{what} declared {declared} bytes but {received} arrived; the registry or a proxy altered it, nothing was kept"
    )]
    LengthMismatch {
        /// What was being read.
        what: String,
        /// The declared length.
        declared: u64,
        /// How many bytes arrived (stops counting just past the declared length).
        received: u64,
    },
    /// Content whose hash is not the digest it was asked for by.
    #[error(
        "{what} should have digest {expected} but has {actual}; the content was altered, nothing was kept"
    )]
    DigestMismatch {
        /// What was being read.
        what: String,
        /// The digest asked for.
        expected: Digest,
        /// The digest of what arrived.
        actual: Digest,
    },
    /// A manifest, index, config or token response that is not what the spec says.
    #[error("{what} is malformed: {reason}")]
    Malformed {
        /// What was being read.
        what: String,
        /// What is wrong with it.
        reason: String,
    },
    /// An artifact whose layout is not the one asked for (a Wasm artifact without its one
    /// `application/wasm` layer, a tar artifact with a Wasm config).
    #[error("{reference} is not {expected}: {reason}")]
    NotAnArtifact {
        /// The artifact.
        reference: String,
        /// The kind of artifact expected.
        expected: String,
        /// What differs.
        reason: String,
    },
    /// The registry broke the upload protocol.
    #[error("upload to {url} failed: {reason}")]
    Upload {
        /// The URL of the upload session.
        url: String,
        /// What went wrong.
        reason: String,
    },
    /// A tar entry refused on pack or unpack.
    #[error("tar entry `{entry}` refused: {reason}")]
    Archive {
        /// The entry's path as written in the archive.
        entry: String,
        /// Why it was refused.
        reason: String,
    },
    /// An image layout folder that breaks the layout spec.
    #[error("{}: not a usable OCI image layout: {reason}", path.display())]
    Layout {
        /// The folder or file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A file operation failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

impl OciError {
    /// The stable tool error code: `invalid_input` for bad references and malformed content,
    /// `not_found`, `denied` for refused credentials, integrity failures and refused entries,
    /// `timed_out`, `limit_reached` for size caps, `io_error` for the network and the disk.
    pub fn code(&self) -> &'static str {
        match self {
            Self::InvalidDigest(_)
            | Self::InvalidReference { .. }
            | Self::Malformed { .. }
            | Self::NotAnArtifact { .. } => "invalid_input",
            Self::NotFound { .. } => "not_found",
            Self::PlainHttp { .. }
            | Self::RedirectRefused { .. }
            | Self::CredentialsWithheld { .. }
            | Self::Login { .. }
            | Self::Unauthorized { .. }
            | Self::Denied { .. }
            | Self::LengthMismatch { .. }
            | Self::DigestMismatch { .. }
            | Self::Archive { .. } => "denied",
            Self::TimedOut { .. } | Self::TooSlow { .. } => "timed_out",
            Self::TooLarge { .. } => "limit_reached",
            Self::Transport { .. }
            | Self::Status { .. }
            | Self::Upload { .. }
            | Self::Layout { .. }
            | Self::Io { .. } => "io_error",
        }
    }

    /// The error for content of `what` that differed from its descriptor.
    pub(crate) fn mismatch(what: &str, mismatch: Mismatch) -> Self {
        match mismatch {
            Mismatch::Length { declared, received } => Self::LengthMismatch {
                what: what.to_owned(),
                declared,
                received,
            },
            Mismatch::Content { expected, actual } => Self::DigestMismatch {
                what: what.to_owned(),
                expected,
                actual,
            },
        }
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }
}
