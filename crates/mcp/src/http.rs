//! `bosun serve --http`: Streamable HTTP on one address, `/mcp`.
//!
//! Loopback by default. The guard in front of the SDK's service:
//! - a non-loopback address is only served with a bearer token (the caller refuses to start
//!   without one), and every request must carry `Authorization: Bearer <token>` (the scheme in
//!   any case; digests compared in constant time, so timing says nothing of the token or its
//!   length);
//! - `Host` must name the listening address (or `localhost` on loopback) and a browser's
//!   `Origin`, when sent, must be a loopback origin or one the user allowed: a web page cannot
//!   reach the server through DNS rebinding;
//! - what one client can hold is bounded ([`Limits`]): open connections (one past the bound is
//!   answered 503 and closed at once), the time to send a request's headers and then its body
//!   (slowloris), the body's size, and open sessions;
//! - a session (revisions before 2026-07-28) has a 256-bit random id and belongs to the caller
//!   that opened it: a request naming another caller's session is answered as for an unknown
//!   one (404), so its id neither resumes its stream (`Last-Event-ID`) nor ends it.
//!
//! Each MCP session gets its own [`ToolServer`](crate::ToolServer), so its own trace. Under the
//! stateless 2026-07-28 revision a "session" is one request, so any instance behind a
//! round-robin load balancer may answer any request: the state a call needs between rounds
//! travels sealed with the client ([`crate::state`]), and `allowed_hosts` names the balancer's
//! `Host`. Sessions of the older revisions live in one instance's memory and need sticky
//! routing (docs/mcp.md).

mod sessions;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited, combinators::BoxBody};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rmcp::transport::common::http_header::HEADER_SESSION_ID;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use sha2::Digest;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

use crate::server::{ServeError, Served, ToolServer, http_caller};
use sessions::Sessions;

/// The path the MCP endpoint is served at.
pub const PATH: &str = "/mcp";

/// How long a client may take to send a request's headers (from the connection, or from the
/// end of the previous response) by default: a client that trickles them (slowloris) or holds
/// an idle connection is dropped after it.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// What one `bosun serve --http` holds at most, so that no client can exhaust it for the others.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Connections open at once (each is a descriptor; kept well under the usual 1,024). One
    /// past it is answered `503` and closed without being read.
    pub connections: usize,
    /// MCP sessions open at once (revisions before 2026-07-28); an idle one expires after five
    /// minutes. A handshake past it is refused with the way out.
    pub sessions: usize,
    /// Bytes in one request body; more is answered `413`.
    pub body_bytes: usize,
    /// How long a client has to send a request's headers.
    pub header_timeout: Duration,
    /// How long a client has, once its headers are in, to send the whole body; a body
    /// trickled past it is answered `408` and the connection closed.
    pub body_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            connections: 512,
            sessions: 256,
            body_bytes: 4 * 1024 * 1024,
            header_timeout: HEADER_TIMEOUT,
            body_timeout: Duration::from_secs(30),
        }
    }
}

/// How `bosun serve --http` listens.
#[derive(Debug, Clone, Default)]
pub struct HttpOptions {
    /// The bearer token every request must carry; required for a non-loopback address.
    pub token: Option<String>,
    /// Browser origins allowed besides loopback ones, e.g. `https://app.example.com:443`.
    pub allowed_origins: Vec<String>,
    /// `Host` values served besides the listening address (a load balancer's name).
    pub allowed_hosts: Vec<String>,
    /// What the server holds at most.
    pub limits: Limits,
    /// Stops the server.
    pub cancel: CancellationToken,
}

type Body = BoxBody<Bytes, Infallible>;

fn plain(status: StatusCode, text: &str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(text.to_owned())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// `response`, after which the connection is closed (its request was not read whole).
fn closing(mut response: Response<Body>) -> Response<Body> {
    response.headers_mut().insert(
        hyper::header::CONNECTION,
        hyper::header::HeaderValue::from_static("close"),
    );
    response
}

/// Compares without stopping at the first difference, so timing says nothing about the token.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The digest a bearer token is compared by: of one length whatever the token's.
fn token_digest(token: &str) -> [u8; 32] {
    sha2::Sha256::digest(token.trim().as_bytes()).into()
}

/// Whether `headers` carry the token whose digest is `expected` (RFC 6750: `Bearer`, in any
/// case, then the token).
fn authorized(headers: &hyper::HeaderMap, expected: Option<&[u8; 32]>) -> bool {
    let Some(expected) = expected else {
        return true;
    };
    headers
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim_start().split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .is_some_and(|(_, given)| same_secret(&token_digest(given), expected))
}

/// The request's body, read whole within `limits`, or the answer refusing it.
async fn read_body(body: hyper::body::Incoming, limits: &Limits) -> Result<Bytes, Response<Body>> {
    let reading = Limited::new(body, limits.body_bytes).collect();
    match tokio::time::timeout(limits.body_timeout, reading).await {
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Err(closing(plain(
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!(
                "the request body is larger than this Bosun server takes ({} bytes)",
                limits.body_bytes
            ),
        ))),
        Ok(Err(e)) => Err(closing(plain(
            StatusCode::BAD_REQUEST,
            &format!("the request body could not be read: {e}"),
        ))),
        Err(_) => Err(closing(plain(
            StatusCode::REQUEST_TIMEOUT,
            &format!(
                "the request body did not arrive within {} s of its headers: send it whole, at once",
                limits.body_timeout.as_secs()
            ),
        ))),
    }
}

/// What every connection's requests go through before the SDK's service.
struct Guard {
    service: StreamableHttpService<ToolServer, Sessions>,
    sessions: Arc<Sessions>,
    /// The digest of the bearer token, when there is one.
    token: Option<[u8; 32]>,
    limits: Limits,
}

impl Guard {
    async fn handle(&self, request: Request<hyper::body::Incoming>) -> Response<Body> {
        if !authorized(request.headers(), self.token.as_ref()) {
            let mut response = plain(
                StatusCode::UNAUTHORIZED,
                "this Bosun server needs `Authorization: Bearer <token>`",
            );
            response.headers_mut().insert(
                hyper::header::WWW_AUTHENTICATE,
                hyper::header::HeaderValue::from_static("Bearer"),
            );
            return response;
        }
        if request.uri().path() != PATH {
            return plain(StatusCode::NOT_FOUND, "Bosun serves MCP at /mcp");
        }
        let caller = http_caller(request.headers());
        let session = request
            .headers()
            .get(HEADER_SESSION_ID)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        if let Some(id) = &session
            && !self.sessions.may_use(id, &caller)
        {
            // The very answer rmcp gives for an unknown session: nothing says it exists.
            return plain(StatusCode::NOT_FOUND, "Not Found: Session not found");
        }
        let (parts, body) = request.into_parts();
        let body = match read_body(body, &self.limits).await {
            Ok(body) => body,
            Err(refused) => return refused,
        };
        let response = self
            .service
            .handle(Request::from_parts(parts, Full::new(body)))
            .await;
        if session.is_none()
            && let Some(id) = response
                .headers()
                .get(HEADER_SESSION_ID)
                .and_then(|v| v.to_str().ok())
        {
            self.sessions.bind(id, caller);
        }
        response
    }
}

/// Answers a connection past [`Limits::connections`] `503` and closes it, without reading it
/// or waiting on it: the accept loop stays free and no descriptor is held.
fn refuse_connection(stream: TcpStream, most: usize) {
    use std::io::Write;
    let text = format!(
        "this Bosun server already has its most connections open ({most}): retry when one closes\n"
    );
    let response = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{text}",
        text.len()
    );
    // A fresh socket's send buffer takes these few bytes whole; a client that cannot take them
    // gets the close alone.
    if let Ok(mut stream) = stream.into_std() {
        let _ = stream.write_all(response.as_bytes());
        let _ = stream.shutdown(std::net::Shutdown::Write);
    }
}

/// Serves `served` on `listener` until `options.cancel` fires.
///
/// # Errors
/// [`ServeError::Http`] when serving would be unsafe (a non-loopback address without a token)
/// or the listener fails.
pub async fn serve_http(
    served: Arc<Served>,
    listener: TcpListener,
    options: HttpOptions,
) -> Result<(), ServeError> {
    let local = listener
        .local_addr()
        .map_err(|e| ServeError::Http(format!("reading the listening address: {e}")))?;
    let loopback = local.ip().is_loopback();
    if !loopback && options.token.is_none() {
        return Err(ServeError::Http(format!(
            "{local} is reachable from other machines: serve it only with a bearer token (set one with --token-env VAR), or listen on 127.0.0.1"
        )));
    }
    let mut allowed_hosts = vec![local.ip().to_string(), local.to_string()];
    if loopback {
        allowed_hosts.extend(
            ["localhost", "127.0.0.1", "::1", "[::1]"]
                .iter()
                .flat_map(|h| [(*h).to_owned(), format!("{h}:{}", local.port())]),
        );
    }
    allowed_hosts.extend(options.allowed_hosts.iter().cloned());
    let mut allowed_origins: Vec<String> = ["localhost", "127.0.0.1", "[::1]"]
        .iter()
        .flat_map(|h| [format!("http://{h}:*"), format!("https://{h}:*")])
        .collect();
    allowed_origins.extend(options.allowed_origins.iter().cloned());
    let limits = options.limits.clone();
    let mut config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(allowed_hosts)
        .with_allowed_origins(allowed_origins)
        .with_max_request_body_bytes(limits.body_bytes);
    config.cancellation_token = options.cancel.child_token();
    let factory = {
        let served = served.clone();
        move || -> Result<ToolServer, std::io::Error> { Ok(served.session()) }
    };
    let sessions = Arc::new(Sessions::new(limits.sessions));
    let guard = Arc::new(Guard {
        service: StreamableHttpService::new(factory, sessions.clone(), config),
        sessions,
        token: options.token.as_deref().map(token_digest),
        limits: limits.clone(),
    });
    let open = Arc::new(tokio::sync::Semaphore::new(limits.connections));
    loop {
        let accepted = tokio::select! {
            () = options.cancel.cancelled() => return Ok(()),
            accepted = listener.accept() => accepted,
        };
        let (stream, _peer): (_, SocketAddr) = match accepted {
            Ok(accepted) => accepted,
            // A client that went away during accept, or a passing resource limit (no descriptor
            // left): keep serving, without spinning on an error that repeats at once.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(permit) = open.clone().try_acquire_owned() else {
            refuse_connection(stream, limits.connections);
            continue;
        };
        // Small JSON-RPC messages: without this, Nagle's algorithm and delayed ACKs add ~40 ms
        // to a response written in two pieces.
        let _ = stream.set_nodelay(true);
        let guard = guard.clone();
        let cancel = options.cancel.clone();
        let header_timeout = limits.header_timeout;
        tokio::spawn(async move {
            let handler =
                hyper::service::service_fn(move |request: Request<hyper::body::Incoming>| {
                    let guard = guard.clone();
                    async move { Ok::<_, Infallible>(guard.handle(request).await) }
                });
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(header_timeout)
                .serve_connection(TokioIo::new(stream), handler);
            tokio::select! {
                _ = connection => {}
                () = cancel.cancelled() => {}
            }
            drop(permit);
        });
    }
}
