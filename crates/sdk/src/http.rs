//! Outgoing HTTP from inside the sandbox, over `wasi:http/outgoing-handler` (WASI 0.2).
//!
//! [`Request::send`] makes exactly one request and never follows a redirect; [`Request::fetch`]
//! follows up to a given number of them itself, each hop a new request that the host checks
//! again (capability, DNS, private addresses). Every exchange is bounded: a deadline for the
//! whole exchange and a cap on the body, beyond which the rest is dropped and the response marked
//! `truncated`. A cancelled call stops waiting at once.
//!
//! Outside wasm there is no network: `send` answers [`HttpError::Unavailable`].
//!
//! ```no_run
//! use bosun_sdk::http::{Request, Url};
//! # fn f() -> Result<(), bosun_sdk::http::HttpError> {
//! let response = Request::get(Url::parse("https://example.com/")?)
//!     .max_body_bytes(64 * 1024)
//!     .fetch(5)?;
//! println!("{} {}", response.status, response.text());
//! # Ok(()) }
//! ```

mod url;

use std::fmt;
use std::time::Duration;

pub use url::{Scheme, Url, encode_query_component};

use crate::ToolError;

/// Why an exchange failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HttpError {
    /// The URL cannot be sent.
    #[error("invalid URL: {0}")]
    InvalidUrl(String),
    /// Only `http` and `https` are supported.
    #[error("unsupported URL scheme `{0}`: use http or https")]
    UnsupportedScheme(String),
    /// A header or method the host would not take.
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// The host refused the request: its authority is not granted, or it resolves to an
    /// address the sandbox never reaches.
    #[error("the host refused the request: {0}")]
    Denied(String),
    /// The deadline passed.
    #[error("the request timed out")]
    TimedOut,
    /// The call was cancelled.
    #[error("the call was cancelled")]
    Cancelled,
    /// More redirects than allowed.
    #[error("more than {0} redirects")]
    TooManyRedirects(usize),
    /// Connection, TLS or protocol failure.
    #[error("transport error: {0}")]
    Transport(String),
    /// Not inside the sandbox (the plugin runs natively, e.g. in its tests).
    #[error("HTTP is only available inside the Bosun sandbox")]
    Unavailable,
}

impl From<HttpError> for ToolError {
    fn from(error: HttpError) -> Self {
        let message = error.to_string();
        match error {
            HttpError::InvalidUrl(_)
            | HttpError::UnsupportedScheme(_)
            | HttpError::InvalidRequest(_) => ToolError::invalid_input(message),
            HttpError::Denied(_) => ToolError::denied(message),
            HttpError::TimedOut => ToolError::timed_out(message),
            HttpError::Cancelled => ToolError::cancelled(),
            HttpError::TooManyRedirects(_) => ToolError::limit_reached(message),
            HttpError::Transport(_) => ToolError::io_error(message).retryable(),
            HttpError::Unavailable => ToolError::plugin_error(message),
        }
    }
}

/// An HTTP method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// GET.
    Get,
    /// HEAD.
    Head,
    /// POST.
    Post,
    /// PUT.
    Put,
    /// DELETE.
    Delete,
    /// PATCH.
    Patch,
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Get => "GET",
            Self::Head => "HEAD",
            Self::Post => "POST",
            Self::Put => "PUT",
            Self::Delete => "DELETE",
            Self::Patch => "PATCH",
        })
    }
}

/// The default deadline of a whole exchange, redirects included.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// The default cap on a response body.
pub const DEFAULT_MAX_BODY_BYTES: usize = 1024 * 1024;

/// An outgoing request.
#[derive(Debug, Clone)]
pub struct Request {
    method: Method,
    url: Url,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    timeout: Duration,
    max_body_bytes: usize,
}

impl Request {
    /// A request with no headers and no body, the default deadline and body cap.
    pub fn new(method: Method, url: Url) -> Self {
        Self {
            method,
            url,
            headers: Vec::new(),
            body: Vec::new(),
            timeout: DEFAULT_TIMEOUT,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
        }
    }

    /// A GET.
    pub fn get(url: Url) -> Self {
        Self::new(Method::Get, url)
    }

    /// A POST with a body.
    pub fn post(url: Url, body: impl Into<Vec<u8>>) -> Self {
        Self::new(Method::Post, url).body(body)
    }

    /// Adds a header.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sets the body.
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = body.into();
        self
    }

    /// Sets the deadline of the whole exchange (connect, headers, body; every redirect hop).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Caps the response body; the rest is dropped and the response marked truncated.
    pub fn max_body_bytes(mut self, max: usize) -> Self {
        self.max_body_bytes = max;
        self
    }

    /// The URL.
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// Makes exactly this request; a redirect comes back as a 3xx response.
    pub fn send(&self) -> Result<Response, HttpError> {
        let deadline = imp::deadline_after(self.timeout);
        imp::send(self, deadline)
    }

    /// Makes the request and follows up to `max_redirects` redirects, each a new request the
    /// host checks again. 303 (and 301/302 after a POST) continue as GET without the body;
    /// `Authorization` and `Cookie` headers are dropped when the authority changes.
    pub fn fetch(self, max_redirects: usize) -> Result<Response, HttpError> {
        let deadline = imp::deadline_after(self.timeout);
        let mut request = self;
        let mut visited = Vec::new();
        loop {
            let sent = imp::send(&request, deadline);
            let mut response = match (sent, visited.last()) {
                (Ok(response), _) => response,
                // Name the hop: the model can then ask for that URL in a call of its own.
                (Err(HttpError::Denied(reason)), Some(from)) => {
                    return Err(HttpError::Denied(format!(
                        "the redirect from {from} to {}: {reason}",
                        request.url
                    )));
                }
                (Err(error), _) => return Err(error),
            };
            let Some(location) = response.location() else {
                response.redirects = visited;
                return Ok(response);
            };
            if visited.len() == max_redirects {
                return Err(HttpError::TooManyRedirects(max_redirects));
            }
            let next = location?;
            visited.push(request.url.to_string());
            request = request.redirected(response.status, next);
        }
    }

    fn redirected(mut self, status: u16, url: Url) -> Self {
        let to_get = status == 303 || (matches!(status, 301 | 302) && self.method == Method::Post);
        if to_get && self.method != Method::Head {
            self.method = Method::Get;
            self.body.clear();
        }
        if url.authority() != self.url.authority() {
            self.headers.retain(|(name, _)| {
                !name.eq_ignore_ascii_case("authorization") && !name.eq_ignore_ascii_case("cookie")
            });
        }
        self.url = url;
        self
    }
}

/// A response, its body read up to the request's cap.
#[derive(Debug, Clone)]
pub struct Response {
    /// The URL that answered (after any redirects).
    pub url: Url,
    /// The status code.
    pub status: u16,
    /// The headers, names in lower case.
    pub headers: Vec<(String, String)>,
    /// The body, up to the cap.
    pub body: Vec<u8>,
    /// Whether the body was cut at the cap.
    pub truncated: bool,
    /// The URLs that redirected here, in order ([`Request::fetch`] only).
    pub redirects: Vec<String>,
}

impl Response {
    /// The first header of that name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The media type without parameters, in lower case (`text/html`).
    pub fn content_type(&self) -> Option<String> {
        self.header("content-type").map(|v| {
            v.split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase()
        })
    }

    /// Whether the status is a redirect that carries a `Location`.
    pub fn is_redirect(&self) -> bool {
        matches!(self.status, 301 | 302 | 303 | 307 | 308) && self.header("location").is_some()
    }

    /// Where a redirect points, resolved against this response's URL.
    pub fn location(&self) -> Option<Result<Url, HttpError>> {
        if !self.is_redirect() {
            return None;
        }
        self.header("location").map(|l| self.url.join(l))
    }

    /// The body as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod imp {
    use std::time::Duration;

    use super::{HttpError, Request, Response};

    pub fn deadline_after(_timeout: Duration) -> u64 {
        0
    }

    pub fn send(_request: &Request, _deadline: u64) -> Result<Response, HttpError> {
        Err(HttpError::Unavailable)
    }
}

#[cfg(target_arch = "wasm32")]
mod imp {
    use std::time::Duration;

    use wasip2::clocks::monotonic_clock;
    use wasip2::http::outgoing_handler;
    use wasip2::http::types::{
        ErrorCode, Fields, FutureIncomingResponse, IncomingResponse, Method as WasiMethod,
        OutgoingBody, OutgoingRequest, RequestOptions, Scheme as WasiScheme,
    };
    use wasip2::io::poll::{Pollable, poll};
    use wasip2::io::streams::StreamError;

    use super::{HttpError, Method, Request, Response, Scheme};
    use crate::host;

    /// How often a wait wakes to look at cancellation.
    const TICK_NS: u64 = 50_000_000;
    const CHUNK: u64 = 64 * 1024;

    pub fn deadline_after(timeout: Duration) -> u64 {
        let nanos = u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX);
        monotonic_clock::now().saturating_add(nanos)
    }

    pub fn send(request: &Request, deadline: u64) -> Result<Response, HttpError> {
        let entries: Vec<(String, Vec<u8>)> = request
            .headers
            .iter()
            .map(|(n, v)| (n.to_ascii_lowercase(), v.as_bytes().to_vec()))
            .collect();
        let headers = Fields::from_list(&entries)
            .map_err(|e| HttpError::InvalidRequest(format!("headers: {e:?}")))?;
        let outgoing = OutgoingRequest::new(headers);
        let method = match request.method {
            Method::Get => WasiMethod::Get,
            Method::Head => WasiMethod::Head,
            Method::Post => WasiMethod::Post,
            Method::Put => WasiMethod::Put,
            Method::Delete => WasiMethod::Delete,
            Method::Patch => WasiMethod::Patch,
        };
        let scheme = match request.url.scheme() {
            Scheme::Http => WasiScheme::Http,
            Scheme::Https => WasiScheme::Https,
            Scheme::Other(other) => WasiScheme::Other(other.clone()),
        };
        let invalid =
            |what: &str| HttpError::InvalidRequest(format!("the host refused the {what}"));
        outgoing
            .set_method(&method)
            .map_err(|()| invalid("method"))?;
        outgoing
            .set_scheme(Some(&scheme))
            .map_err(|()| invalid("scheme"))?;
        outgoing
            .set_authority(Some(request.url.authority()))
            .map_err(|()| invalid("authority"))?;
        outgoing
            .set_path_with_query(Some(request.url.path_and_query()))
            .map_err(|()| invalid("path"))?;

        // Per-phase timeouts for the host; the overall deadline is kept here.
        let options = RequestOptions::new();
        let remaining = deadline.saturating_sub(monotonic_clock::now());
        // A host may not support a timeout: the deadline below still holds.
        let _ = options.set_connect_timeout(Some(remaining));
        let _ = options.set_first_byte_timeout(Some(remaining));
        let _ = options.set_between_bytes_timeout(Some(remaining));

        let body = outgoing.body().map_err(|()| invalid("body"))?;
        let future = outgoing_handler::handle(outgoing, Some(options)).map_err(error_code)?;
        if !request.body.is_empty() {
            let stream = body.write().map_err(|()| invalid("body"))?;
            for chunk in request.body.chunks(4096) {
                stream
                    .blocking_write_and_flush(chunk)
                    .map_err(|e| HttpError::Transport(format!("writing the body: {e:?}")))?;
            }
        }
        OutgoingBody::finish(body, None).map_err(error_code)?;

        let incoming = wait_for_response(&future, deadline)?;
        read_response(request, incoming, deadline)
    }

    fn wait_for_response(
        future: &FutureIncomingResponse,
        deadline: u64,
    ) -> Result<IncomingResponse, HttpError> {
        loop {
            if let Some(result) = future.get() {
                return match result {
                    Ok(Ok(response)) => Ok(response),
                    Ok(Err(code)) => Err(error_code(code)),
                    Err(()) => Err(HttpError::Transport("response already taken".into())),
                };
            }
            let ready = future.subscribe();
            wait(&ready, deadline)?;
        }
    }

    fn read_response(
        request: &Request,
        incoming: IncomingResponse,
        deadline: u64,
    ) -> Result<Response, HttpError> {
        let status = incoming.status();
        let headers = incoming
            .headers()
            .entries()
            .into_iter()
            .map(|(name, value)| {
                (
                    name.to_ascii_lowercase(),
                    String::from_utf8_lossy(&value).into_owned(),
                )
            })
            .collect();
        let mut response = Response {
            url: request.url.clone(),
            status,
            headers,
            body: Vec::new(),
            truncated: false,
            redirects: Vec::new(),
        };
        if request.method == Method::Head {
            return Ok(response);
        }
        let body = incoming
            .consume()
            .map_err(|()| HttpError::Transport("the body was already taken".into()))?;
        let stream = body
            .stream()
            .map_err(|()| HttpError::Transport("the body stream was already taken".into()))?;
        let max = request.max_body_bytes;
        loop {
            // One byte past the cap tells a body that is exactly the cap from a longer one.
            let want = (max + 1 - response.body.len()) as u64;
            match stream.read(want.min(CHUNK)) {
                Ok(chunk) if chunk.is_empty() => {
                    let ready = stream.subscribe();
                    wait(&ready, deadline)?;
                }
                Ok(chunk) => {
                    response.body.extend_from_slice(&chunk);
                    if response.body.len() > max {
                        response.body.truncate(max);
                        response.truncated = true;
                        break;
                    }
                }
                Err(StreamError::Closed) => break,
                Err(StreamError::LastOperationFailed(e)) => {
                    return Err(HttpError::Transport(e.to_debug_string()));
                }
            }
        }
        // Children before parents: the stream, then the body, then the response.
        drop(stream);
        drop(body);
        drop(incoming);
        Ok(response)
    }

    /// Waits for `ready`, waking every tick to honour cancellation and the deadline.
    fn wait(ready: &Pollable, deadline: u64) -> Result<(), HttpError> {
        loop {
            if host::is_cancelled() {
                return Err(HttpError::Cancelled);
            }
            let now = monotonic_clock::now();
            if now >= deadline {
                return Err(HttpError::TimedOut);
            }
            let timer = monotonic_clock::subscribe_duration((deadline - now).min(TICK_NS));
            if poll(&[ready, &timer]).contains(&0) {
                return Ok(());
            }
        }
    }

    fn error_code(code: ErrorCode) -> HttpError {
        match code {
            ErrorCode::HttpRequestDenied => {
                HttpError::Denied("the authority is not granted to this call".into())
            }
            ErrorCode::DestinationIpProhibited => HttpError::Denied(
                "the address is loopback, private, link-local or otherwise off limits".into(),
            ),
            ErrorCode::DnsTimeout
            | ErrorCode::ConnectionTimeout
            | ErrorCode::ConnectionReadTimeout
            | ErrorCode::ConnectionWriteTimeout
            | ErrorCode::HttpResponseTimeout => HttpError::TimedOut,
            ErrorCode::HttpRequestUriInvalid | ErrorCode::HttpRequestMethodInvalid => {
                HttpError::InvalidRequest(format!("{code:?}"))
            }
            other => HttpError::Transport(format!("{other:?}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(status: u16, location: Option<&str>) -> Response {
        Response {
            url: Url::parse("https://a.example/x/y").unwrap(),
            status,
            headers: location
                .map(|l| vec![("location".to_owned(), l.to_owned())])
                .unwrap_or_default(),
            body: Vec::new(),
            truncated: false,
            redirects: Vec::new(),
        }
    }

    #[test]
    fn redirects_resolve_and_change_method_as_browsers_do() {
        let r = response(302, Some("/z"));
        assert_eq!(
            r.location().unwrap().unwrap().to_string(),
            "https://a.example/z"
        );
        assert!(response(200, Some("/z")).location().is_none());
        assert!(response(301, None).location().is_none());

        let post = Request::post(Url::parse("https://a.example/").unwrap(), "data")
            .header("Authorization", "secret");
        let next = post
            .clone()
            .redirected(302, Url::parse("https://b.example/").unwrap());
        assert_eq!((next.method, next.body.is_empty()), (Method::Get, true));
        assert!(next.headers.is_empty(), "credentials leaked across hosts");
        let kept = post.redirected(307, Url::parse("https://a.example/b").unwrap());
        assert_eq!((kept.method, kept.headers.len()), (Method::Post, 1));
    }

    #[test]
    fn without_a_sandbox_there_is_no_network() {
        let request = Request::get(Url::parse("https://example.com/").unwrap());
        assert_eq!(request.send().unwrap_err(), HttpError::Unavailable);
    }
}
