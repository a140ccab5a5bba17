//! The HTTP side shared by every adapter: one POST of a JSON body that answers with an event
//! stream, retried under a [`RetryPolicy`] until the first byte of the stream arrives, with
//! connect and read-idle timeouts and cancellation. Knows no provider's JSON beyond the error
//! body's `message`.

use std::fmt;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::ModelError;
use crate::error::truncate;
use crate::retry::{RetryPolicy, is_retryable_status, retry_after};

/// Largest error body read to explain an HTTP error.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// An API key. Its `Debug` output never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

/// How long to wait on the network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timeouts {
    /// To open the TCP (and TLS) connection.
    pub connect: Duration,
    /// Longest silence: before the response headers, before the first byte of the stream and
    /// between two chunks. 30 s by default, so that a hung server fails in well under a
    /// minute; a model that thinks for long before its first token needs more
    /// (`read_timeout_secs`).
    pub idle: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(10),
            idle: Duration::from_secs(30),
        }
    }
}

/// Where and how an adapter reaches its server.
#[derive(Debug, Clone)]
pub struct Connection {
    /// The API root, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:11434/v1` for the
    /// OpenAI formats, `https://api.anthropic.com` for Anthropic (the adapter appends `/v1/…`).
    pub base_url: String,
    /// The key, if the server wants one.
    pub api_key: Option<ApiKey>,
    /// The environment variable the key came from, named in authentication errors.
    pub key_env: Option<String>,
    /// Retries.
    pub retry: RetryPolicy,
    /// Timeouts.
    pub timeouts: Timeouts,
}

impl Connection {
    /// A connection to `base_url` with no key, default retries and timeouts.
    pub fn new(base_url: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            api_key: None,
            key_env: None,
            retry: RetryPolicy::default(),
            timeouts: Timeouts::default(),
        }
    }

    /// Sets the key and the variable it was read from.
    pub fn api_key(mut self, key: ApiKey, key_env: Option<String>) -> Self {
        self.api_key = Some(key);
        self.key_env = key_env;
        self
    }

    /// Sets the retry policy.
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Sets the timeouts.
    pub fn timeouts(mut self, timeouts: Timeouts) -> Self {
        self.timeouts = timeouts;
        self
    }
}

/// A response whose status was a success and whose first bytes arrived.
pub(crate) struct OpenStream {
    pub first: Bytes,
    pub rest: BoxStream<'static, reqwest::Result<Bytes>>,
}

/// A failed attempt, and whether to try again.
struct Failure {
    error: ModelError,
    retryable: bool,
    retry_after: Option<Duration>,
}

impl Failure {
    fn fatal(error: ModelError) -> Self {
        Self {
            error,
            retryable: false,
            retry_after: None,
        }
    }

    fn transient(error: ModelError) -> Self {
        Self {
            error,
            retryable: true,
            retry_after: None,
        }
    }
}

/// An HTTP client bound to one provider.
#[derive(Debug, Clone)]
pub(crate) struct Transport {
    pub provider: &'static str,
    pub base_url: String,
    client: reqwest::Client,
    retry: RetryPolicy,
    pub idle: Duration,
    key_env: Option<String>,
}

impl Transport {
    pub fn new(provider: &'static str, connection: &Connection) -> Result<Self, ModelError> {
        let request_error = |message: String| ModelError::Request {
            provider: provider.to_owned(),
            message,
        };
        let base_url = connection.base_url.trim_end_matches('/').to_owned();
        let parsed = reqwest::Url::parse(&base_url)
            .map_err(|e| request_error(format!("base_url `{base_url}` is not a URL: {e}")))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(request_error(format!(
                "base_url `{base_url}` must start with http:// or https://"
            )));
        }
        let tls = tls_config().map_err(|e| request_error(format!("TLS setup failed: {e}")))?;
        let client = reqwest::Client::builder()
            .connect_timeout(connection.timeouts.connect)
            .tls_backend_preconfigured(tls)
            .redirect(crate::redirect::same_origin_redirects())
            .build()
            .map_err(|e| request_error(error_chain(&e)))?;
        Ok(Self {
            provider,
            base_url,
            client,
            retry: connection.retry.clone(),
            idle: connection.timeouts.idle,
            key_env: connection.key_env.clone(),
        })
    }

    /// POSTs `body` to `base_url + path` and waits for the first bytes of the event stream,
    /// retrying what is worth retrying.
    pub async fn open(
        &self,
        path: &str,
        headers: HeaderMap,
        body: &Value,
        cancel: &CancellationToken,
    ) -> Result<OpenStream, ModelError> {
        let url = format!("{}{path}", self.base_url);
        let body = serde_json::to_vec(body).map_err(|e| ModelError::Request {
            provider: self.provider.to_owned(),
            message: format!("could not serialise the request: {e}"),
        })?;
        let attempts = self.retry.max_attempts.max(1);
        let mut attempt = 1;
        loop {
            let outcome = tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(ModelError::Cancelled),
                outcome = self.attempt(&url, &headers, &body) => outcome,
            };
            let failure = match outcome {
                Ok(open) => return Ok(open),
                Err(failure) => failure,
            };
            if !failure.retryable || attempt >= attempts {
                return Err(failure.error);
            }
            let delay = self.retry.delay(attempt, failure.retry_after);
            crate::retry::announce(crate::retry::RetryNotice {
                failed_attempt: attempt,
                attempts,
                delay,
                reason: failure.error.short_reason(),
            });
            tracing::warn!(
                provider = self.provider,
                attempt,
                of = attempts,
                delay_ms = delay.as_millis() as u64,
                error = %failure.error,
                "model request failed; retrying"
            );
            tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(ModelError::Cancelled),
                () = tokio::time::sleep(delay) => {}
            }
            attempt += 1;
        }
    }

    async fn attempt(
        &self,
        url: &str,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Result<OpenStream, Failure> {
        let request = self
            .client
            .post(url)
            .headers(headers.clone())
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "text/event-stream")
            .body(body.to_vec());
        let connect_error = |message: String| ModelError::Connect {
            provider: self.provider.to_owned(),
            url: url.to_owned(),
            message,
        };
        let no_answer = |headers| ModelError::NoAnswer {
            provider: self.provider.to_owned(),
            url: url.to_owned(),
            waited: self.idle,
            headers,
        };
        let response = match tokio::time::timeout(self.idle, request.send()).await {
            Err(_) => return Err(Failure::transient(no_answer(false))),
            Ok(Err(e)) if e.is_redirect() => {
                // Not worth retrying: the server will point elsewhere again.
                let message = match crate::redirect::RedirectRefused::find(&e) {
                    Some(refused) => format!("{refused} (the model entry's `base_url`)"),
                    None => error_chain(&e),
                };
                return Err(Failure::fatal(connect_error(message)));
            }
            Ok(Err(e)) if e.is_builder() => {
                return Err(Failure::fatal(ModelError::Request {
                    provider: self.provider.to_owned(),
                    message: error_chain(&e),
                }));
            }
            Ok(Err(e)) => return Err(Failure::transient(connect_error(error_chain(&e)))),
            Ok(Ok(response)) => response,
        };
        let status = response.status().as_u16();
        if !response.status().is_success() {
            return Err(self.http_failure(response, url).await);
        }
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_ascii_lowercase();
        let mut rest = response.bytes_stream().boxed();
        if content_type.starts_with("application/json") {
            // The server ignored `stream: true` and answered with one JSON document.
            let text = read_limited(&mut rest, self.idle).await;
            return Err(Failure::fatal(ModelError::Protocol {
                provider: self.provider.to_owned(),
                message: format!(
                    "expected an event stream (text/event-stream) but HTTP {status} came as {content_type}; the server does not stream"
                ),
                line: truncate(&text),
            }));
        }
        loop {
            match tokio::time::timeout(self.idle, rest.next()).await {
                Err(_) => return Err(Failure::transient(no_answer(true))),
                Ok(None) => {
                    return Err(Failure::transient(connect_error(format!(
                        "HTTP {status} but the server closed the stream before sending anything"
                    ))));
                }
                Ok(Some(Err(e))) => {
                    return Err(Failure::transient(connect_error(format!(
                        "the stream broke before its first byte: {}",
                        error_chain(&e)
                    ))));
                }
                Ok(Some(Ok(first))) if first.is_empty() => {}
                Ok(Some(Ok(first))) => return Ok(OpenStream { first, rest }),
            }
        }
    }

    async fn http_failure(&self, response: reqwest::Response, url: &str) -> Failure {
        let status = response.status().as_u16();
        let wait = retry_after(response.headers(), SystemTime::now());
        let html = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.to_ascii_lowercase().starts_with("text/html"));
        let mut body = response.bytes_stream().boxed();
        let text = read_limited(&mut body, self.idle).await;
        let parsed: Option<Value> = serde_json::from_str(&text).ok();
        let message =
            parsed.as_ref().and_then(error_message).unwrap_or_else(|| {
                match html_summary(&text, html) {
                    Some(summary) => summary,
                    None => text.trim().to_owned(),
                }
            });
        // A 404 is nearly always a wrong base_url or model: say which URL was asked.
        let message = if status == 404 {
            format!("{url} was not found ({message})")
        } else {
            message
        };
        let message = truncate(if message.is_empty() {
            "(empty body)"
        } else {
            &message
        });
        if matches!(status, 401 | 403) {
            return Failure::fatal(ModelError::Auth {
                provider: self.provider.to_owned(),
                status,
                message,
                key_env: self.key_env.clone(),
            });
        }
        // OpenAI answers 429 both for "slow down" and for "out of money"; only the first passes.
        let quota = parsed
            .as_ref()
            .and_then(|v| {
                v.pointer("/error/code")
                    .or_else(|| v.pointer("/error/type"))
            })
            .and_then(Value::as_str)
            == Some("insufficient_quota");
        let retryable = is_retryable_status(status) && !quota;
        Failure {
            error: ModelError::Http {
                provider: self.provider.to_owned(),
                status,
                message,
                retryable,
            },
            retryable,
            retry_after: wait,
        }
    }
}

/// Builds the TLS configuration: rustls with the `ring` provider Bosun already uses, and the
/// operating system's trust store (so corporate proxies and local CAs work).
pub fn tls_config() -> Result<rustls::ClientConfig, rustls::Error> {
    use rustls_platform_verifier::BuilderVerifierExt;
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_platform_verifier()?
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// A short description of an HTML error page (a proxy's or a gateway's), instead of its markup:
/// its `<title>`, or its first heading. `None` when the body is not HTML.
fn html_summary(text: &str, declared: bool) -> Option<String> {
    let lower = text.to_ascii_lowercase();
    let start = lower.trim_start();
    if !declared && !start.starts_with("<!doctype html") && !start.starts_with("<html") {
        return None;
    }
    let between = |open: &str, close: &str| -> Option<String> {
        let at = lower.find(open)?;
        let from = at + lower[at..].find('>')? + 1;
        let to = from + lower[from..].find(close)?;
        let inner: String = text
            .get(from..to)?
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        (!inner.is_empty()).then_some(inner)
    };
    let title = between("<title", "</title>").or_else(|| between("<h1", "</h1>"));
    Some(match title {
        Some(title) => format!("an HTML page titled \"{}\"", truncate(&title)),
        None => "an HTML page (not an API answer: is base_url the API's root?)".to_owned(),
    })
}

/// The `message` of the error shapes the providers use: `{"error": {"message": …}}` (OpenAI,
/// Anthropic's inner object), `{"error": "…"}` (Ollama, llama.cpp), `{"message": …}`.
fn error_message(body: &Value) -> Option<String> {
    let found = body
        .pointer("/error/message")
        .or_else(|| body.get("error").filter(|e| e.is_string()))
        .or_else(|| body.get("message"))
        .or_else(|| body.get("detail"))?;
    Some(match found {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    })
}

async fn read_limited(
    body: &mut BoxStream<'static, reqwest::Result<Bytes>>,
    idle: Duration,
) -> String {
    let mut buf = Vec::new();
    while buf.len() < MAX_ERROR_BODY {
        match tokio::time::timeout(idle, body.next()).await {
            Ok(Some(Ok(chunk))) => buf.extend_from_slice(&chunk),
            Ok(Some(Err(_)) | None) | Err(_) => break,
        }
    }
    buf.truncate(MAX_ERROR_BODY);
    String::from_utf8_lossy(&buf).into_owned()
}

/// An error and its causes, `outer: inner: innermost`, because reqwest's own message alone
/// ("error sending request") hides the reason.
pub(crate) fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// Headers carrying the key as a bearer token, as both OpenAI formats want it.
pub(crate) fn bearer_headers(
    provider: &'static str,
    connection: &Connection,
) -> Result<HeaderMap, ModelError> {
    let mut headers = HeaderMap::new();
    if let Some(key) = &connection.api_key {
        let (name, value) = header(
            provider,
            "authorization",
            &format!("Bearer {}", key.expose()),
        )?;
        headers.insert(name, value);
    }
    Ok(headers)
}

/// A header from a value the configuration supplied, refusing control characters.
pub(crate) fn header(
    provider: &'static str,
    name: &'static str,
    value: &str,
) -> Result<(HeaderName, HeaderValue), ModelError> {
    let mut value = HeaderValue::from_str(value).map_err(|_| ModelError::Request {
        provider: provider.to_owned(),
        message: format!("the value for header {name} holds characters a header cannot carry"),
    })?;
    if name.eq_ignore_ascii_case("authorization") || name.eq_ignore_ascii_case("x-api-key") {
        value.set_sensitive(true);
    }
    Ok((HeaderName::from_static(name), value))
}
