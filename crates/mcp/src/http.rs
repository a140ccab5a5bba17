//! `bosun serve --http`: Streamable HTTP on one address, `/mcp`.
//!
//! Loopback by default. The guard in front of the SDK's service:
//! - a non-loopback address is only served with a bearer token (the caller refuses to start
//!   without one), and every request must carry `Authorization: Bearer <token>` (compared in
//!   constant time);
//! - `Host` must name the listening address (or `localhost` on loopback) and a browser's
//!   `Origin`, when sent, must be a loopback origin or one the user allowed: a web page cannot
//!   reach the server through DNS rebinding;
//! - request bodies are bounded by the SDK (4 MiB by default), and a client has
//!   [`HEADER_TIMEOUT`] to send a request's headers (slowloris, idle connections).
//!
//! Each MCP session gets its own [`ToolServer`](crate::ToolServer), so its own trace. Under the
//! stateless 2026-07-28 revision a "session" is one request, so any instance behind a
//! round-robin load balancer may answer any request: the state a call needs between rounds
//! travels sealed with the client ([`crate::state`]), and `allowed_hosts` names the balancer's
//! `Host`. Sessions of the older revisions live in one instance's memory and need sticky
//! routing (docs/mcp.md).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::server::{ServeError, Served, ToolServer};

/// The path the MCP endpoint is served at.
pub const PATH: &str = "/mcp";

/// How long a client may take to send a request's headers (from the connection, or from the
/// end of the previous response): a client that trickles them (slowloris) or holds an idle
/// connection is dropped after it.
pub const HEADER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// How `bosun serve --http` listens.
#[derive(Debug, Clone, Default)]
pub struct HttpOptions {
    /// The bearer token every request must carry; required for a non-loopback address.
    pub token: Option<String>,
    /// Browser origins allowed besides loopback ones, e.g. `https://app.example.com:443`.
    pub allowed_origins: Vec<String>,
    /// `Host` values served besides the listening address (a load balancer's name).
    pub allowed_hosts: Vec<String>,
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

/// Compares without stopping at the first difference, so timing says nothing about the token.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn authorized(request: &Request<hyper::body::Incoming>, token: Option<&str>) -> bool {
    let Some(token) = token else {
        return true;
    };
    request
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|given| same_secret(given.trim().as_bytes(), token.as_bytes()))
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
    let mut config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(allowed_hosts)
        .with_allowed_origins(allowed_origins);
    config.cancellation_token = options.cancel.child_token();
    let factory = {
        let served = served.clone();
        move || -> Result<ToolServer, std::io::Error> { Ok(served.session()) }
    };
    let service =
        StreamableHttpService::new(factory, Arc::new(LocalSessionManager::default()), config);
    let token: Option<Arc<str>> = options.token.as_deref().map(Arc::from);
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
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        // Small JSON-RPC messages: without this, Nagle's algorithm and delayed ACKs add ~40 ms
        // to a response written in two pieces.
        let _ = stream.set_nodelay(true);
        let service = service.clone();
        let token = token.clone();
        let cancel = options.cancel.clone();
        tokio::spawn(async move {
            let handler =
                hyper::service::service_fn(move |request: Request<hyper::body::Incoming>| {
                    let service = service.clone();
                    let token = token.clone();
                    async move {
                        if !authorized(&request, token.as_deref()) {
                            let mut response = plain(
                                StatusCode::UNAUTHORIZED,
                                "this Bosun server needs `Authorization: Bearer <token>`",
                            );
                            response.headers_mut().insert(
                                hyper::header::WWW_AUTHENTICATE,
                                hyper::header::HeaderValue::from_static("Bearer"),
                            );
                            return Ok::<_, Infallible>(response);
                        }
                        if request.uri().path() != PATH {
                            return Ok(plain(StatusCode::NOT_FOUND, "Bosun serves MCP at /mcp"));
                        }
                        Ok(service.handle(request).await)
                    }
                });
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .serve_connection(TokioIo::new(stream), handler);
            tokio::select! {
                _ = connection => {}
                () = cancel.cancelled() => {}
            }
        });
    }
}
