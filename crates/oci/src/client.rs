//! A client of one OCI distribution registry (distribution-spec v1.1.0): every request goes
//! through [`Client::send`], which adds credentials only for the registry's own origin, answers
//! a `401` challenge once (Basic, or a bearer token from the realm), follows redirects by hand,
//! and gives up when nothing arrives for the idle timeout. Reading a body always has a cap, and
//! a deadline for the whole body ([`BodyClock`]).
//! Pulling (`client/pull.rs`), pushing (`client/push.rs`) and the referrers API
//! (`client/referrers.rs`) are built on it.
//!
//! Redirects: registries send blob downloads to a storage or CDN origin with a 302/307, so a
//! client that refused every cross-origin redirect (as `bosun_models::same_origin_redirects`
//! does for model providers) could not pull from the public registries. Here a redirect is
//! followed for `GET` and `HEAD` only, never from HTTPS to plain HTTP, at most
//! [`MAX_REDIRECTS`] times, and once a hop leaves the registry's origin no credential is sent
//! again on that request, whatever origin comes next. Content is verified by digest after the
//! download, so where it came from cannot change what is accepted.

mod pull;
mod push;
mod referrers;

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use bytes::Bytes;
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue, LOCATION, WWW_AUTHENTICATE};
use reqwest::{Method, StatusCode};

use crate::auth::{Challenge, Credentials, token_from_answer};
use crate::error::OciError;
use crate::reference::{Registry, Repository};

pub use pull::BlobStream;
pub use push::PushedManifest;

/// How many redirects one request may follow.
pub const MAX_REDIRECTS: usize = 5;

/// The most of an error or token body read (the rest is dropped).
const SMALL_BODY: u64 = 64 * 1024;

/// Size and time limits of a [`Client`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// The largest manifest, index, config or referrers list accepted (default 4 MiB, the
    /// limit distribution and most registries enforce on push).
    pub manifest_bytes: u64,
    /// The largest blob, and the largest total of one artifact's layers (default 256 MiB).
    pub blob_bytes: u64,
    /// How long a request may go without a byte arriving before it is abandoned (default 30 s).
    pub idle_timeout: Duration,
    /// How long one response's body may take from its first byte to its last, however
    /// steadily it arrives (default 300 s): a registry trickling a byte just inside the idle
    /// timeout cannot hold a pull for days.
    pub body_timeout: Duration,
    /// How long connecting may take (default 10 s).
    pub connect_timeout: Duration,
    /// Blobs larger than this are pushed in chunks of this size (default 8 MiB).
    pub chunk_bytes: u64,
    /// The most tags a tag listing returns (default 10,000).
    pub max_tags: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            manifest_bytes: 4 * 1024 * 1024,
            blob_bytes: 256 * 1024 * 1024,
            idle_timeout: Duration::from_secs(30),
            body_timeout: Duration::from_secs(300),
            connect_timeout: Duration::from_secs(10),
            chunk_bytes: 8 * 1024 * 1024,
            max_tags: 10_000,
        }
    }
}

/// Builds a [`Client`].
#[derive(Debug)]
pub struct ClientBuilder {
    registry: Registry,
    credentials: Credentials,
    limits: Limits,
    allow_plain_http: bool,
}

impl ClientBuilder {
    /// The credentials to present (default: anonymous).
    pub fn credentials(mut self, credentials: Credentials) -> Self {
        self.credentials = credentials;
        self
    }

    /// The limits (default: [`Limits::default`]).
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Allows `http://` to a registry that is not on this machine (default: only loopback).
    pub fn allow_plain_http(mut self, allow: bool) -> Self {
        self.allow_plain_http = allow;
        self
    }

    /// The client.
    pub fn build(self) -> Result<Client, OciError> {
        if self.registry.is_plain_http() && !self.registry.is_loopback() && !self.allow_plain_http {
            return Err(OciError::PlainHttp {
                registry: self.registry.to_string(),
            });
        }
        let transport = |message: String| OciError::Transport {
            url: self.registry.to_string(),
            message,
        };
        let tls =
            bosun_models::tls_config().map_err(|e| transport(format!("TLS setup failed: {e}")))?;
        let http = reqwest::Client::builder()
            .connect_timeout(self.limits.connect_timeout)
            .tls_backend_preconfigured(tls)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("bosun/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| transport(error_chain(&e)))?;
        Ok(Client {
            registry: self.registry,
            http,
            credentials: self.credentials,
            limits: self.limits,
            tokens: Mutex::default(),
            allow_plain_http: self.allow_plain_http,
        })
    }
}

/// A client of one registry. Cheap to share behind an `Arc`; bearer tokens are cached per scope.
#[derive(Debug)]
pub struct Client {
    registry: Registry,
    http: reqwest::Client,
    credentials: Credentials,
    limits: Limits,
    /// `Authorization` values that worked, by scope.
    tokens: Mutex<HashMap<String, String>>,
    allow_plain_http: bool,
}

/// What a request needs access to, for the token scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    Pull,
    Push,
}

/// One request to send: everything but the credentials, which [`Client::send`] adds.
#[derive(Debug, Clone)]
pub(crate) struct Call {
    pub method: Method,
    pub url: url::Url,
    pub headers: HeaderMap,
    pub body: Option<Bytes>,
}

impl Call {
    pub fn new(method: Method, url: url::Url) -> Self {
        Self {
            method,
            url,
            headers: HeaderMap::new(),
            body: None,
        }
    }

    pub fn header(mut self, name: reqwest::header::HeaderName, value: &str) -> Self {
        if let Ok(value) = HeaderValue::from_str(value) {
            self.headers.insert(name, value);
        }
        self
    }

    pub fn body(mut self, body: Bytes) -> Self {
        self.body = Some(body);
        self
    }
}

impl Client {
    /// A builder for a client of `registry`.
    pub fn builder(registry: Registry) -> ClientBuilder {
        ClientBuilder {
            registry,
            credentials: Credentials::Anonymous,
            limits: Limits::default(),
            allow_plain_http: false,
        }
    }

    /// The registry this client talks to.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// `<registry>/v2/<repository>/<rest>`.
    pub(crate) fn url(&self, repository: &Repository, rest: &str) -> Result<url::Url, OciError> {
        let text = format!("{}/v2/{repository}/{rest}", self.registry);
        url::Url::parse(&text).map_err(|e| OciError::InvalidReference {
            reference: text,
            reason: e.to_string(),
        })
    }

    fn same_origin(&self, url: &url::Url) -> bool {
        url.origin() == self.registry.url().origin()
    }

    fn scope(repository: &Repository, access: Access) -> String {
        match access {
            Access::Pull => format!("repository:{repository}:pull"),
            Access::Push => format!("repository:{repository}:pull,push"),
        }
    }

    /// Sends `call` with the credentials for `repository` and `access`, answering one
    /// authentication challenge. Any status comes back; callers map the ones they do not expect
    /// with [`status_error`].
    pub(crate) async fn send(
        &self,
        repository: &Repository,
        access: Access,
        call: &Call,
    ) -> Result<reqwest::Response, OciError> {
        let scope = Self::scope(repository, access);
        let own_origin = self.same_origin(&call.url);
        let cached = if own_origin {
            self.cached_authorization(&scope)
        } else {
            None
        };
        let response = self.send_following(call, cached.clone()).await?;
        if response.status() != StatusCode::UNAUTHORIZED || !own_origin {
            return Ok(response);
        }
        let Some(challenge) = response
            .headers()
            .get(WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .and_then(Challenge::parse)
        else {
            return Ok(response);
        };
        let authorization = match challenge.scheme.as_str() {
            "bearer" => {
                if let Credentials::Bearer(token) = &self.credentials {
                    let sent = format!("Bearer {token}");
                    if cached.as_deref() == Some(sent.as_str()) {
                        return Ok(response);
                    }
                    sent
                } else {
                    let token = self.fetch_token(&challenge, &scope).await?;
                    format!("Bearer {token}")
                }
            }
            "basic" => match self.credentials.basic_header() {
                Some(basic) if cached.as_deref() != Some(basic.as_str()) => basic,
                _ => return Ok(response),
            },
            _ => return Ok(response),
        };
        let retried = self
            .send_following(call, Some(authorization.clone()))
            .await?;
        if retried.status() != StatusCode::UNAUTHORIZED {
            self.tokens
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .insert(scope, authorization);
        }
        Ok(retried)
    }

    fn cached_authorization(&self, scope: &str) -> Option<String> {
        let cached = self
            .tokens
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(scope)
            .cloned();
        cached.or_else(|| match &self.credentials {
            Credentials::Bearer(token) => Some(format!("Bearer {token}")),
            _ => None,
        })
    }

    /// Asks the challenge's realm for a bearer token for `scope`: with an identity token, by
    /// the OAuth2 refresh-token `POST` of distribution's token spec (`oauth.md`; the `GET` of
    /// `token.md` has no place for a refresh token, so there is no fallback to it); otherwise by
    /// that `GET`, with the Basic credentials when there are some. The realm must be HTTPS or
    /// the registry's own origin: a registry cannot send a secret to a plain-HTTP address of
    /// its choosing. A `POST` is never redirected, and no error quotes the secret, even when
    /// the token service echoes it.
    async fn fetch_token(&self, challenge: &Challenge, scope: &str) -> Result<String, OciError> {
        let realm_text = challenge.param("realm").unwrap_or_default();
        let mut realm = url::Url::parse(realm_text).map_err(|e| OciError::Malformed {
            what: format!("the authentication challenge of {}", self.registry),
            reason: format!("realm `{realm_text}` is not a URL: {e}"),
        })?;
        let realm_ok = realm.scheme() == "https"
            || (realm.scheme() == "http" && self.same_origin(&realm))
            || (realm.scheme() == "http" && self.allow_plain_http);
        if !realm_ok {
            return Err(OciError::CredentialsWithheld {
                url: realm.to_string(),
                reason: format!(
                    "{} named a plain-HTTP token service on another origin; a token service must use HTTPS or be the registry itself",
                    self.registry
                ),
            });
        }
        let mut scopes = vec![scope];
        if let Some(asked) = challenge.param("scope")
            && asked != scope
        {
            scopes.push(asked);
        }
        let call = match &self.credentials {
            Credentials::IdentityToken(refresh) => {
                let form = crate::auth::refresh_form(refresh, challenge.param("service"), &scopes);
                Call::new(Method::POST, realm.clone())
                    .header(
                        reqwest::header::CONTENT_TYPE,
                        "application/x-www-form-urlencoded",
                    )
                    .body(Bytes::from(form))
            }
            _ => {
                {
                    let mut query = realm.query_pairs_mut();
                    if let Some(service) = challenge.param("service") {
                        query.append_pair("service", service);
                    }
                    for scope in &scopes {
                        query.append_pair("scope", scope);
                    }
                }
                Call::new(Method::GET, realm.clone())
            }
        };
        let secret = self.credentials.secret();
        let scrubbed = |error: OciError| scrub_error(error, secret);
        let response = self
            .send_following(&call, self.credentials.basic_header())
            .await
            .map_err(scrubbed)?;
        if !response.status().is_success() {
            return Err(scrubbed(status_error(&realm, response, &self.limits).await));
        }
        let body = read_body(
            &realm,
            response,
            "token answer",
            SMALL_BODY,
            None,
            &self.limits,
        )
        .await
        .map_err(scrubbed)?;
        token_from_answer(realm.as_str(), &body).map_err(scrubbed)
    }

    /// Sends `call`, following redirects under the rules in the module doc. `authorization`
    /// goes only to the origin of `call.url`, and never again once a hop leaves it.
    async fn send_following(
        &self,
        call: &Call,
        authorization: Option<String>,
    ) -> Result<reqwest::Response, OciError> {
        let first_origin = call.url.origin();
        let mut url = call.url.clone();
        let mut authorization = authorization;
        for _ in 0..=MAX_REDIRECTS {
            if url.origin() != first_origin {
                authorization = None;
            }
            let mut request = self.http.request(call.method.clone(), url.clone());
            for (name, value) in &call.headers {
                request = request.header(name, value);
            }
            if let Some(value) = &authorization {
                request = request.header(AUTHORIZATION, value);
            }
            if let Some(body) = &call.body {
                request = request.body(body.clone());
            }
            let response =
                match tokio::time::timeout(self.limits.idle_timeout, request.send()).await {
                    Err(_) => {
                        return Err(OciError::TimedOut {
                            url: url.to_string(),
                            after: self.limits.idle_timeout,
                        });
                    }
                    Ok(Err(e)) => {
                        return Err(OciError::Transport {
                            url: url.to_string(),
                            message: error_chain(&e),
                        });
                    }
                    Ok(Ok(response)) => response,
                };
            if !response.status().is_redirection() {
                return Ok(response);
            }
            let Some(location) = response
                .headers()
                .get(LOCATION)
                .and_then(|v| v.to_str().ok())
            else {
                return Ok(response);
            };
            let refused = |to: String, reason: &str| OciError::RedirectRefused {
                from: url.to_string(),
                to,
                status: response.status().as_u16(),
                reason: reason.to_owned(),
            };
            let next = url
                .join(location)
                .map_err(|_| refused(location.to_owned(), "the Location is not a URL"))?;
            if !matches!(call.method, Method::GET | Method::HEAD) {
                return Err(refused(
                    next.to_string(),
                    "only downloads are redirected; an upload or a manifest push goes where it was addressed",
                ));
            }
            if !matches!(next.scheme(), "http" | "https") {
                return Err(refused(next.to_string(), "not an http(s) URL"));
            }
            if url.scheme() == "https" && next.scheme() == "http" {
                return Err(refused(
                    next.to_string(),
                    "it would downgrade HTTPS to plain HTTP",
                ));
            }
            url = next;
        }
        Err(OciError::RedirectRefused {
            from: call.url.to_string(),
            to: url.to_string(),
            status: 0,
            reason: format!("more than {MAX_REDIRECTS} redirects"),
        })
    }
}

/// The waits of one response body: at most the idle timeout for each piece, and the body
/// timeout for all of it, counted from when reading starts.
pub(crate) struct BodyClock<'u> {
    url: &'u url::Url,
    idle: Duration,
    whole: Duration,
    deadline: tokio::time::Instant,
}

impl<'u> BodyClock<'u> {
    /// Starts the clock for the body of `url`'s response.
    pub(crate) fn start(url: &'u url::Url, limits: &Limits) -> Self {
        Self {
            url,
            idle: limits.idle_timeout,
            whole: limits.body_timeout,
            deadline: tokio::time::Instant::now() + limits.body_timeout,
        }
    }

    /// The next piece of `response`'s body, `None` at its end.
    pub(crate) async fn next(
        &self,
        response: &mut reqwest::Response,
    ) -> Result<Option<Bytes>, OciError> {
        let left = self
            .deadline
            .saturating_duration_since(tokio::time::Instant::now());
        if left.is_zero() {
            return Err(OciError::TooSlow {
                url: self.url.to_string(),
                after: self.whole,
            });
        }
        match tokio::time::timeout(self.idle.min(left), response.chunk()).await {
            Err(_) if left <= self.idle => Err(OciError::TooSlow {
                url: self.url.to_string(),
                after: self.whole,
            }),
            Err(_) => Err(OciError::TimedOut {
                url: self.url.to_string(),
                after: self.idle,
            }),
            Ok(Err(e)) => Err(OciError::Transport {
                url: self.url.to_string(),
                message: error_chain(&e),
            }),
            Ok(Ok(chunk)) => Ok(chunk),
        }
    }
}

/// Reads a body of at most `cap` bytes, and exactly `declared` when given, within the waits of
/// a [`BodyClock`]. Stops reading as soon as a limit is passed.
pub(crate) async fn read_body(
    url: &url::Url,
    mut response: reqwest::Response,
    what: &str,
    cap: u64,
    declared: Option<u64>,
    limits: &Limits,
) -> Result<Vec<u8>, OciError> {
    let limit = declared.map_or(cap, |d| d.min(cap));
    if let Some(length) = response.content_length() {
        if length > cap {
            return Err(OciError::TooLarge {
                what: what.to_owned(),
                limit: cap,
                size: length,
            });
        }
        if let Some(declared) = declared
            && length != declared
        {
            return Err(OciError::LengthMismatch {
                what: what.to_owned(),
                declared,
                received: length,
            });
        }
    }
    let clock = BodyClock::start(url, limits);
    let mut body = Vec::new();
    while let Some(chunk) = clock.next(&mut response).await? {
        let total = body.len() as u64 + chunk.len() as u64;
        if total > limit {
            return Err(match declared {
                Some(declared) if declared <= cap => OciError::LengthMismatch {
                    what: what.to_owned(),
                    declared,
                    received: total,
                },
                _ => OciError::TooLarge {
                    what: what.to_owned(),
                    limit: cap,
                    size: total,
                },
            });
        }
        body.extend_from_slice(&chunk);
    }
    if let Some(declared) = declared
        && body.len() as u64 != declared
    {
        return Err(OciError::LengthMismatch {
            what: what.to_owned(),
            declared,
            received: body.len() as u64,
        });
    }
    Ok(body)
}

/// The error for a status the caller did not expect, with the registry's error codes
/// (distribution-spec "Error Codes": `{"errors":[{"code","message"}]}`) when it sent them.
pub(crate) async fn status_error(
    url: &url::Url,
    response: reqwest::Response,
    limits: &Limits,
) -> OciError {
    let status = response.status();
    let body = read_body(url, response, "error body", SMALL_BODY, None, limits)
        .await
        .unwrap_or_default();
    let detail = error_detail(&body).unwrap_or_else(|| format!("HTTP {}", status.as_u16()));
    let url = url.to_string();
    match status {
        StatusCode::NOT_FOUND => OciError::NotFound { url, detail },
        StatusCode::UNAUTHORIZED => OciError::Unauthorized { url, detail },
        StatusCode::FORBIDDEN => OciError::Denied { url, detail },
        _ => OciError::Status {
            url,
            status: status.as_u16(),
            detail,
        },
    }
}

/// `error` with `secret` replaced wherever a server's words or a URL could carry it.
fn scrub_error(error: OciError, secret: Option<&str>) -> OciError {
    let scrub = |text: String| crate::auth::scrub(&text, secret);
    match error {
        OciError::NotFound { url, detail } => OciError::NotFound {
            url: scrub(url),
            detail: scrub(detail),
        },
        OciError::Unauthorized { url, detail } => OciError::Unauthorized {
            url: scrub(url),
            detail: scrub(detail),
        },
        OciError::Denied { url, detail } => OciError::Denied {
            url: scrub(url),
            detail: scrub(detail),
        },
        OciError::Status {
            url,
            status,
            detail,
        } => OciError::Status {
            url: scrub(url),
            status,
            detail: scrub(detail),
        },
        OciError::Malformed { what, reason } => OciError::Malformed {
            what: scrub(what),
            reason: scrub(reason),
        },
        OciError::Transport { url, message } => OciError::Transport {
            url: scrub(url),
            message: scrub(message),
        },
        other => other,
    }
}

fn error_detail(body: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Errors {
        errors: Vec<ErrorEntry>,
    }
    #[derive(serde::Deserialize)]
    struct ErrorEntry {
        code: Option<String>,
        message: Option<String>,
    }
    if let Ok(errors) = serde_json::from_slice::<Errors>(body)
        && !errors.errors.is_empty()
    {
        let parts: Vec<String> = errors
            .errors
            .iter()
            .take(5)
            .map(|e| {
                let code = e.code.as_deref().unwrap_or("UNKNOWN");
                match e.message.as_deref() {
                    Some(message) => format!("{code}: {}", cut(message, 200)),
                    None => code.to_owned(),
                }
            })
            .collect();
        return Some(parts.join("; "));
    }
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    (!text.is_empty()).then(|| cut(text, 200))
}

fn cut(text: &str, chars: usize) -> String {
    let mut out: String = text
        .chars()
        .take(chars)
        .filter(|c| !c.is_control())
        .collect();
    if text.chars().count() > chars {
        out.push('…');
    }
    out
}

/// An error and its sources, as one line.
fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        let next = e.to_string();
        if !text.contains(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        source = e.source();
    }
    text
}
