//! Who may call `bosun serve --http`, and what each may hold: the clients the operator named,
//! each known by the SHA-256 of its bearer token, with its own share of the server's
//! connections, sessions and `subscriptions/listen` streams.
//!
//! This module only identifies a request's caller from its headers and keeps the shares; it
//! never keeps a token, only digests, and compares them in constant time.

use std::sync::Arc;

use sha2::Digest;
use tokio::sync::Semaphore;

use super::Limits;
use crate::server::{Caller, MAX_LISTENERS, ServeError, http_caller};

/// A client of `bosun serve --http` the operator named: known by the digest of its bearer
/// token, traced by its name, and holding at most its share of what the server holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Client {
    /// How traces and refusals name it: letters, digits, `-` and `_`.
    pub name: String,
    /// SHA-256 of its bearer token (the token as sent, without surrounding spaces).
    pub token_sha256: [u8; 32],
    /// Connections it may hold open at once; its even share of [`Limits::connections`] when
    /// `None`.
    pub connections: Option<usize>,
    /// Sessions it may hold open at once; its even share of [`Limits::sessions`] when `None`.
    pub sessions: Option<usize>,
}

impl Client {
    /// A client known by `token`, with even shares.
    pub fn with_token(name: impl Into<String>, token: &str) -> Self {
        Self {
            name: name.into(),
            token_sha256: token_digest(token),
            connections: None,
            sessions: None,
        }
    }
}

impl Client {
    /// A client known by the SHA-256 of its token in hex (as `sha256sum` prints it), with the
    /// shares given; `None` when `hex` is not 64 hex digits.
    pub fn with_digest_hex(
        name: impl Into<String>,
        hex: &str,
        connections: Option<usize>,
        sessions: Option<usize>,
    ) -> Option<Self> {
        let hex = hex.as_bytes();
        if hex.len() != 64 {
            return None;
        }
        let mut token_sha256 = [0u8; 32];
        for (byte, pair) in token_sha256.iter_mut().zip(hex.chunks(2)) {
            let pair = std::str::from_utf8(pair).ok()?;
            *byte = u8::from_str_radix(pair, 16).ok()?;
        }
        Some(Self {
            name: name.into(),
            token_sha256,
            connections,
            sessions,
        })
    }
}

/// The digest a bearer token is compared by: of one length whatever the token's.
pub fn token_digest(token: &str) -> [u8; 32] {
    sha2::Sha256::digest(token.trim().as_bytes()).into()
}

/// Compares without stopping at the first difference, so timing says nothing about the token.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The digest of the bearer token `headers` carry (RFC 6750: `Bearer`, in any case, then the
/// token), if they carry one.
fn bearer_digest(headers: &hyper::HeaderMap) -> Option<[u8; 32]> {
    headers
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim_start().split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, given)| token_digest(given))
}

/// One named client as the server holds it.
#[derive(Debug)]
pub(super) struct Known {
    pub(super) name: String,
    /// `client:NAME`.
    pub(super) id: Arc<str>,
    digest: [u8; 32],
    /// Its connections; one is held by each connection whose latest request was its.
    pub(super) connections: Arc<Semaphore>,
    pub(super) most_connections: usize,
    pub(super) sessions: usize,
    pub(super) listeners: usize,
}

/// Who a request is from, as far as the server is concerned.
pub(super) enum Identified<'a> {
    /// A named client.
    Known(&'a Known),
    /// A server that names no clients (loopback without a token): the caller is whatever
    /// `Authorization` it chose to send, so it gets no share of its own.
    Unnamed(Caller),
}

impl Identified<'_> {
    /// The caller as the MCP handler sees it.
    pub(super) fn caller(&self) -> Caller {
        match self {
            Identified::Known(known) => Caller {
                id: known.id.to_string(),
                client: Some(known.name.clone()),
                listeners: known.listeners,
            },
            Identified::Unnamed(caller) => caller.clone(),
        }
    }
}

/// The connections one client may hold (every caller's, on a server that names none), as the
/// guard counts a connection in them.
pub(super) struct Share<'a> {
    /// Whose share: a connection already counted in it is not counted again.
    pub(super) id: &'a Arc<str>,
    pub(super) connections: &'a Arc<Semaphore>,
    most: usize,
    /// The named client, or `None` for the server's own bound.
    name: Option<&'a str>,
}

impl Share<'_> {
    /// What a connection past the share is told.
    pub(super) fn full(&self) -> String {
        match self.name {
            Some(name) => format!(
                "client `{name}` already has its most connections open on this Bosun server ({}): reuse one (keep-alive), or retry when one closes",
                self.most
            ),
            None => format!(
                "this Bosun server already has its most connections open ({}): retry when one closes",
                self.most
            ),
        }
    }
}

/// The named clients of one server, or none.
#[derive(Debug)]
pub(super) struct Clients {
    known: Vec<Known>,
    /// The connections of a server that names no clients: everyone's, up to the server's bound.
    anyone: Arc<Semaphore>,
    anyone_id: Arc<str>,
    limits: Limits,
}

impl Clients {
    /// The clients of a server with `limits`: each gets what its entry says, or an even share.
    ///
    /// # Errors
    /// [`ServeError::Http`] for a name that is not a plain word, two clients of one name or one
    /// token, or shares that add up to more than the server holds (a client could then be
    /// refused what it was promised).
    pub(super) fn new(clients: &[Client], limits: &Limits) -> Result<Self, ServeError> {
        let count = clients.len().max(1);
        let even = |total: usize| (total / count).max(1);
        let mut known: Vec<Known> = Vec::with_capacity(clients.len());
        for client in clients {
            let name = &client.name;
            if name.is_empty()
                || !name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            {
                return Err(ServeError::Http(format!(
                    "client `{}`: name clients with letters, digits, `-` and `_`",
                    bosun_core::escape_hidden(name)
                )));
            }
            if let Some(other) = known.iter().find(|k| &k.name == name) {
                return Err(ServeError::Http(format!(
                    "client `{}` is named twice: give each client its own name",
                    other.name
                )));
            }
            if let Some(other) = known
                .iter()
                .find(|k| same_secret(&k.digest, &client.token_sha256))
            {
                return Err(ServeError::Http(format!(
                    "clients `{}` and `{name}` have the same token: give each client its own (e.g. `openssl rand -hex 32`)",
                    other.name
                )));
            }
            let most_connections = client.connections.unwrap_or(even(limits.connections));
            let sessions = client.sessions.unwrap_or(even(limits.sessions));
            if most_connections == 0 || sessions == 0 {
                return Err(ServeError::Http(format!(
                    "client `{name}`: give it at least one connection and one session"
                )));
            }
            known.push(Known {
                name: name.clone(),
                id: Arc::from(format!("client:{name}")),
                digest: client.token_sha256,
                connections: Arc::new(Semaphore::new(most_connections)),
                most_connections,
                sessions,
                listeners: even(MAX_LISTENERS),
            });
        }
        let connections: usize = known.iter().map(|k| k.most_connections).sum();
        if connections > limits.connections {
            return Err(ServeError::Http(format!(
                "the clients' connections add up to {connections}, more than this server holds ({}): lower them so that each client can have what it is given",
                limits.connections
            )));
        }
        let sessions: usize = known.iter().map(|k| k.sessions).sum();
        if sessions > limits.sessions {
            return Err(ServeError::Http(format!(
                "the clients' sessions add up to {sessions}, more than this server holds ({}): lower them so that each client can have what it is given",
                limits.sessions
            )));
        }
        Ok(Self {
            known,
            anyone: Arc::new(Semaphore::new(limits.connections)),
            anyone_id: Arc::from("anyone"),
            limits: limits.clone(),
        })
    }

    /// Whether the server knows its clients by name (and so needs a token on every request).
    pub(super) fn named(&self) -> bool {
        !self.known.is_empty()
    }

    /// Who sent a request with `headers`; `None` when the server names its clients and the
    /// request carries none of their tokens.
    pub(super) fn identify(&self, headers: &hyper::HeaderMap) -> Option<Identified<'_>> {
        if self.known.is_empty() {
            return Some(Identified::Unnamed(Caller {
                id: http_caller(headers),
                client: None,
                listeners: MAX_LISTENERS,
            }));
        }
        let given = bearer_digest(headers)?;
        // Every digest is compared, so timing says nothing of which client's token is near.
        let mut found = None;
        for known in &self.known {
            if same_secret(&known.digest, &given) && found.is_none() {
                found = Some(known);
            }
        }
        found.map(Identified::Known)
    }

    /// The connections `identified` may hold: a named client's share, or the server's bound.
    pub(super) fn connection_share<'a>(&'a self, identified: &Identified<'a>) -> Share<'a> {
        match *identified {
            Identified::Known(known) => Share {
                id: &known.id,
                connections: &known.connections,
                most: known.most_connections,
                name: Some(&known.name),
            },
            Identified::Unnamed(_) => Share {
                id: &self.anyone_id,
                connections: &self.anyone,
                most: self.limits.connections,
                name: None,
            },
        }
    }

    /// Most sessions `identified` may hold, and how a refusal names it.
    pub(super) fn session_share(&self, identified: &Identified<'_>) -> (usize, String) {
        match identified {
            Identified::Known(known) => (known.sessions, format!("client `{}`", known.name)),
            Identified::Unnamed(_) => (self.limits.sessions, "this client".to_owned()),
        }
    }
}
