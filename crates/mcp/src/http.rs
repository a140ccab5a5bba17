//! `bosun serve --http`: Streamable HTTP on one address, `/mcp`.
//!
//! Loopback by default. The guard in front of the SDK's service:
//! - a non-loopback address is only served with bearer tokens (the caller refuses to start
//!   without one): one token, or named [`Client`]s each with its own. Every request must carry
//!   `Authorization: Bearer <token>` of one of them (the scheme in any case; digests compared
//!   in constant time, so timing says nothing of a token or its length), or is answered 401
//!   and its connection closed;
//! - `Host` must name the listening address (or `localhost` on loopback), and a request
//!   carrying an `Origin` (a web page's) is refused unless it is the server's own or one the
//!   operator allowed: no page — not even one of another local web server — reaches the server, through DNS
//!   rebinding or otherwise, and no preflight is ever answered with CORS headers;
//! - what the server holds is bounded ([`Limits`]): connections that have not yet sent a
//!   request the server could attribute sit in a small pool of their own, the oldest closed to
//!   make room for the next, so connections opened and left silent never hold a place an
//!   identified client needs; connections that carried a request count in their client's share
//!   (one past it is answered 503 and closed); the time to send a request's headers and then its
//!   body (slowloris), the body's size, and open sessions (a handshake past the bound is
//!   answered 503 with `Retry-After`); each named client holds at most its share of the
//!   connections, sessions and `subscriptions/listen` streams, so no client can take them all;
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

mod clients;
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
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::server::{ServeError, Served, ToolServer};
use clients::Clients;
pub use clients::{Client, token_digest};
use sessions::{ADMISSION, Admission, Sessions};

/// The path the MCP endpoint is served at.
pub const PATH: &str = "/mcp";

/// How long a client may take to send a request's headers (from the connection, or from the
/// end of the previous response) by default: a client that trickles them (slowloris) or holds
/// an idle connection is dropped after it.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// What one `bosun serve --http` holds at most, so that no client can exhaust it for the others.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Connections that carried a request open at once (each is a descriptor; with
    /// `unidentified`, kept well under the usual 1,024). A request on one past it is answered
    /// `503` and its connection closed.
    pub connections: usize,
    /// Connections accepted that have not yet sent a request the server could attribute to a
    /// client (silent, trickling their headers, or sending no token it knows). One past it
    /// closes the oldest of them: whoever opens connections and says nothing only ever pushes
    /// out its own, and a client's connection, which speaks at once, is served.
    pub unidentified: usize,
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
            unidentified: 64,
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
    /// The one bearer token every request must carry: one client, named `token`, whoever
    /// holds it. Either this or `clients` is required for a non-loopback address.
    pub token: Option<String>,
    /// The clients the server serves, each known by its own token and holding its own share.
    pub clients: Vec<Client>,
    /// Browser origins allowed, e.g. `https://app.example.com:443`; a request from any other
    /// (a web page's, loopback ones included) is refused. Clients that are not browsers send
    /// no `Origin`.
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

/// `response`, saying when to try again.
fn retry_after(mut response: Response<Body>, seconds: u32) -> Response<Body> {
    response.headers_mut().insert(
        hyper::header::RETRY_AFTER,
        hyper::header::HeaderValue::from(seconds),
    );
    response
}

/// How long a client refused a session is told to wait: idle sessions expire after five
/// minutes, ended ones free their place at once.
const SESSION_RETRY_SECS: u32 = 30;

/// What one connection holds: the connection share of the client whose request it carried
/// last. A connection a proxy shares between clients moves from one share to the next.
struct Connection {
    /// Its place among the connections not yet identified ([`Unidentified`]).
    number: u64,
    owner: std::sync::Mutex<Option<(Arc<str>, tokio::sync::OwnedSemaphorePermit)>>,
}

impl Connection {
    /// Counts this connection in `share`, unless it already is; the refusal (`503`, the
    /// connection closed) when the share is full.
    fn hold(&self, share: &clients::Share<'_>) -> Option<Response<Body>> {
        let mut owner = self
            .owner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if owner.as_ref().is_some_and(|(id, _)| id == share.id) {
            return None;
        }
        *owner = None;
        match share.connections.clone().try_acquire_owned() {
            Ok(permit) => {
                *owner = Some((share.id.clone(), permit));
                None
            }
            Err(_) => Some(retry_after(
                closing(plain(StatusCode::SERVICE_UNAVAILABLE, &share.full())),
                1,
            )),
        }
    }
}

/// The connections accepted that have not yet sent a request the server could attribute, oldest
/// first. At most [`Limits::unidentified`]: admitting one more closes the oldest, so silent
/// connections (anyone's who can reach the port) take nothing from the clients' shares and
/// cannot keep a client that speaks at once from being heard.
struct Unidentified {
    most: usize,
    waiting: std::sync::Mutex<std::collections::BTreeMap<u64, CancellationToken>>,
    numbered: std::sync::atomic::AtomicU64,
}

impl Unidentified {
    fn new(most: usize) -> Self {
        Self {
            most: most.max(1),
            waiting: std::sync::Mutex::default(),
            numbered: std::sync::atomic::AtomicU64::new(0),
        }
    }

    fn waiting(
        &self,
    ) -> std::sync::MutexGuard<'_, std::collections::BTreeMap<u64, CancellationToken>> {
        self.waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Admits a new connection: its number, and what closes it if it is still unidentified
    /// when the pool needs its place.
    fn admit(&self) -> (u64, CancellationToken) {
        let number = self
            .numbered
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let evict = CancellationToken::new();
        let mut waiting = self.waiting();
        while waiting.len() >= self.most {
            match waiting.pop_first() {
                Some((_, oldest)) => oldest.cancel(),
                None => break,
            }
        }
        waiting.insert(number, evict.clone());
        (number, evict)
    }

    /// Connection `number` carried a request the server attributed (or ended): it leaves the
    /// pool and can no longer be pushed out of it.
    fn leave(&self, number: u64) {
        self.waiting().remove(&number);
    }
}
/// What every connection's requests go through before the SDK's service.
struct Guard {
    service: StreamableHttpService<ToolServer, Sessions>,
    sessions: Arc<Sessions>,
    clients: Clients,
    unidentified: Unidentified,
    limits: Limits,
}

impl Guard {
    async fn handle(
        &self,
        request: Request<hyper::body::Incoming>,
        connection: &Connection,
    ) -> Response<Body> {
        let Some(identified) = self.clients.identify(request.headers()) else {
            let mut response = closing(plain(
                StatusCode::UNAUTHORIZED,
                "this Bosun server needs `Authorization: Bearer <token>` with a token it was given",
            ));
            response.headers_mut().insert(
                hyper::header::WWW_AUTHENTICATE,
                hyper::header::HeaderValue::from_static("Bearer"),
            );
            return response;
        };
        // Attributed: from now on the connection counts in its client's share, not among the
        // silent ones that may be pushed out.
        self.unidentified.leave(connection.number);
        if let Some(refused) = connection.hold(&self.clients.connection_share(&identified)) {
            return refused;
        }
        if request.uri().path() != PATH {
            return plain(StatusCode::NOT_FOUND, "Bosun serves MCP at /mcp");
        }
        let caller = identified.caller();
        if let Some(id) = request
            .headers()
            .get(HEADER_SESSION_ID)
            .and_then(|v| v.to_str().ok())
            && !self.sessions.may_use(id, &caller.id)
        {
            // The very answer rmcp gives for an unknown session: nothing says it exists.
            return plain(StatusCode::NOT_FOUND, "Not Found: Session not found");
        }
        let (share, named) = self.clients.session_share(&identified);
        let admission = Admission {
            caller: Arc::from(caller.id.as_str()),
            named,
            share,
            refused: Arc::default(),
        };
        let (mut parts, body) = request.into_parts();
        let body = match read_body(body, &self.limits).await {
            Ok(body) => body,
            Err(refused) => return refused,
        };
        parts.extensions.insert(caller);
        let refused = admission.refused.clone();
        let response = ADMISSION
            .scope(
                admission,
                self.service
                    .handle(Request::from_parts(parts, Full::new(body))),
            )
            .await;
        match refused.get() {
            // The SDK answers a session it could not open `500`; this is no fault of the
            // server's but a bound, which the client may wait out.
            Some(why) => retry_after(
                plain(StatusCode::SERVICE_UNAVAILABLE, why),
                SESSION_RETRY_SECS,
            ),
            None => response,
        }
    }
}

/// Refuses an `--allow-origin` entry that would match nothing (the SDK skips those silently)
/// or every port of a host without saying so.
fn check_origin(origin: &str) -> Result<(), ServeError> {
    let refuse = |why: &str| {
        Err(ServeError::Http(format!(
            "--allow-origin {}: {why}; write it as a browser sends it, scheme, host and port, e.g. https://app.example.com:443",
            bosun_core::escape_hidden(origin)
        )))
    };
    let Some((scheme, authority)) = origin.split_once("://") else {
        return refuse("it has no scheme");
    };
    if !["http", "https"].contains(&scheme) {
        return refuse("only http and https pages send requests");
    }
    let port = authority
        .rsplit_once(':')
        .map(|(_, port)| port)
        .filter(|port| !port.contains(']'));
    match port {
        Some(port) if port == "*" || port.parse::<u16>().is_ok() => Ok(()),
        Some(_) => refuse("its port is not a number"),
        None => refuse("it names no port"),
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
    let clients = match (&options.token, options.clients.as_slice()) {
        (Some(_), [_, ..]) => {
            return Err(ServeError::Http(
                "serve either one token or named clients, not both: give the token's holder a client of its own".to_owned(),
            ));
        }
        (Some(token), []) => vec![Client::with_token("token", token)],
        (None, clients) => clients.to_vec(),
    };
    let clients = Clients::new(&clients, &options.limits)?;
    if !loopback && !clients.named() {
        return Err(ServeError::Http(format!(
            "{local} is reachable from other machines: serve it only with bearer tokens (one with --token-env VAR, or a client each in [serve.clients]), or listen on 127.0.0.1"
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
    for origin in &options.allowed_origins {
        check_origin(origin)?;
    }
    // The server's own origin — a page at this very address and port — is served: Bosun
    // serves no pages, so only a client speaking for this server sends it (the MCP
    // conformance suite's DNS-rebinding check expects it accepted). A page of any other local
    // server has another port, so another origin, and stays refused.
    let mut allowed_origins = options.allowed_origins.clone();
    allowed_origins.push(format!("http://{local}"));
    if loopback {
        allowed_origins.extend(
            ["localhost", "127.0.0.1", "[::1]"]
                .iter()
                .map(|h| format!("http://{h}:{}", local.port())),
        );
    }
    let limits = options.limits.clone();
    // Enforced for every request carrying an `Origin`: only the server's own and those the
    // operator listed are served. A loopback origin is no proof of the person's intent — any
    // local web server's page has one.
    let mut config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(allowed_hosts)
        .with_allowed_origins(allowed_origins)
        .enforce_origin_validation()
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
        clients,
        unidentified: Unidentified::new(limits.unidentified),
        limits: limits.clone(),
    });
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
        // Every connection is admitted; one past the pool of unidentified connections pushes
        // out the oldest of them. Its client's share is taken at its first request.
        let (number, evicted) = guard.unidentified.admit();
        // Small JSON-RPC messages: without this, Nagle's algorithm and delayed ACKs add ~40 ms
        // to a response written in two pieces.
        let _ = stream.set_nodelay(true);
        let guard = guard.clone();
        let cancel = options.cancel.clone();
        let header_timeout = limits.header_timeout;
        tokio::spawn(async move {
            let connection = Arc::new(Connection {
                number,
                owner: std::sync::Mutex::default(),
            });
            let pool = guard.clone();
            let handler =
                hyper::service::service_fn(move |request: Request<hyper::body::Incoming>| {
                    let guard = guard.clone();
                    let connection = connection.clone();
                    async move { Ok::<_, Infallible>(guard.handle(request, &connection).await) }
                });
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(header_timeout)
                .serve_connection(TokioIo::new(stream), handler);
            tokio::select! {
                _ = connection => {}
                () = evicted.cancelled() => {}
                () = cancel.cancelled() => {}
            }
            pool.unidentified.leave(number);
        });
    }
}
