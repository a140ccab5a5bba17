//! Signing in to an MCP server over Streamable HTTP that requires OAuth (the MCP authorization
//! specification: protected resource and authorization server metadata, dynamic client
//! registration, the authorization code flow with PKCE, refresh), with rmcp's authorization
//! manager doing the protocol.
//!
//! `bosun mcp login NAME` ([`login`]) registers Bosun as a client of the server's authorization
//! server, prints the address to open in a browser, and waits on a loopback port for the
//! redirect that carries the code; the tokens land in `$BOSUN_HOME/mcp-credentials/NAME.json`
//! (mode 0600, written whole), bound to the server's URL. Connecting to the server later
//! ([`authorized_transport`]) sends the access token and refreshes it when it runs out; a URL
//! that changed since the sign-in uses no stored token. `bosun mcp logout NAME` forgets them.
//!
//! Every OAuth request goes through Bosun's own HTTP client (the providers' TLS), and only to
//! `https://` addresses or to loopback ones: a server's metadata cannot send the token request
//! in the clear to another machine.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationRequest, AuthorizationSession,
    CredentialRefreshGuard, CredentialStore, OAuthHttpClient, OAuthHttpClientError,
    OAuthHttpClientFuture, OAuthHttpRedirectPolicy, OAuthHttpRequest, StoredCredentials,
};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{AuthClient, StreamableHttpClientTransport};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How long a sign-in waits for the browser's redirect.
pub const LOGIN_TIMEOUT: Duration = Duration::from_secs(300);

/// The largest OAuth response read.
const MAX_RESPONSE_BYTES: usize = 1024 * 1024;

/// Why signing in to a server, or forgetting its tokens, failed.
#[derive(Debug, thiserror::Error)]
pub enum OAuthError {
    /// A step of the sign-in failed (discovery, registration, the browser's answer, the
    /// exchange); the message names the step and what to do.
    #[error("{0}")]
    SignIn(String),
    /// OAuth's HTTP client could not be built.
    #[error(transparent)]
    Http(#[from] crate::http_client::HttpClientError),
    /// rmcp could not set OAuth up for the server (its metadata could not be discovered).
    #[error("OAuth setup for {url} failed: {message}")]
    Setup {
        /// The server's URL.
        url: String,
        /// What failed.
        message: String,
    },
    /// Tokens are kept for the server and cannot be used.
    #[error("the sign-in kept for {name} cannot be used: {message}; run `bosun mcp login {name}`")]
    KeptUnusable {
        /// The server's local name.
        name: String,
        /// Why.
        message: String,
    },
    /// The kept tokens could not be removed.
    #[error("cannot remove {}: {source}", path.display())]
    Forget {
        /// The credentials file.
        path: PathBuf,
        /// The system's error.
        source: std::io::Error,
    },
}

/// Where the tokens of server `name` are kept.
pub fn credentials_path(home: &Path, name: &str) -> PathBuf {
    home.join("mcp-credentials").join(format!("{name}.json"))
}

/// The tokens of one server, and the URL they were given for.
#[derive(Clone, Serialize, Deserialize)]
struct Kept {
    url: String,
    credentials: StoredCredentials,
}

/// The largest credentials file read: tokens and a client registration are a few KiB.
const MAX_CREDENTIALS_BYTES: u64 = 1024 * 1024;

/// The bytes of a credentials file, read as Bosun reads its own state: never through a link
/// planted at its name (which would hand one server another's tokens), never waiting on a FIFO.
fn read_kept(path: &Path) -> std::io::Result<Vec<u8>> {
    bosun_fsio::read_regular(path, MAX_CREDENTIALS_BYTES).map_err(bosun_fsio::OpenError::into_io)
}

/// rmcp's credential store over one file, for one URL: what is kept for another URL is not
/// loaded.
#[derive(Clone)]
struct FileStore {
    path: PathBuf,
    url: String,
}

#[async_trait]
impl CredentialStore for FileStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let bytes = match read_kept(&self.path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(AuthError::CredentialStoreError(e.to_string())),
        };
        let kept: Kept = serde_json::from_slice(&bytes).map_err(|e| {
            AuthError::CredentialStoreError(format!("{} does not parse: {e}", self.path.display()))
        })?;
        Ok((kept.url == self.url).then_some(kept.credentials))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let kept = Kept {
            url: self.url.clone(),
            credentials,
        };
        let json = serde_json::to_vec(&kept)
            .map_err(|e| AuthError::CredentialStoreError(e.to_string()))?;
        bosun_host::write_atomic(&self.path, &json)
            .map_err(|e| AuthError::CredentialStoreError(e.to_string()))
    }

    async fn clear(&self) -> Result<(), AuthError> {
        match std::fs::remove_file(&self.path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(AuthError::CredentialStoreError(e.to_string())),
        }
    }

    /// The credential file's sidecar lock, held by rmcp from its re-read of the file through
    /// the token request to the save: two Bosun processes refreshing the same server's tokens
    /// take turns, and the later one refreshes with the refresh token the earlier one stored.
    /// Without it both would send the same refresh token; a server that rotates them answers
    /// the second `invalid_grant` (signed out), or the second's save drops the first's token.
    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        let path = self.path.clone();
        let lock = tokio::task::spawn_blocking(move || bosun_host::state_lock::lock(&path))
            .await
            .map_err(|e| AuthError::CredentialStoreError(e.to_string()))?
            .map_err(|e| {
                AuthError::CredentialStoreError(format!("{}: {e}", self.path.display()))
            })?;
        Ok(Some(CredentialRefreshGuard::new(lock)))
    }
}

/// OAuth's HTTP requests through Bosun's HTTP client: redirects followed only when the step
/// allows them and then only within the origin ([`bosun_models::same_origin_redirects`]),
/// bodies bounded, and nothing but `https://` or loopback addresses.
struct Http {
    follow: reqwest::Client,
    stop: reqwest::Client,
}

impl Http {
    fn new() -> Result<Http, crate::http_client::HttpClientError> {
        let build = |redirect: reqwest::redirect::Policy| {
            crate::http_client::client(redirect, |builder| builder.timeout(Duration::from_secs(30)))
        };
        Ok(Http {
            // Each hop stays on the first request's origin, which `send` checked.
            follow: build(bosun_models::same_origin_redirects())?,
            stop: build(reqwest::redirect::Policy::none())?,
        })
    }
}

/// Whether OAuth may talk to `url`: TLS, or this machine.
fn allowed(url: &url::Url) -> bool {
    match url.scheme() {
        "https" => true,
        "http" => match url.host() {
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            Some(url::Host::Domain(host)) => host.eq_ignore_ascii_case("localhost"),
            None => false,
        },
        _ => false,
    }
}

impl OAuthHttpClient for Http {
    fn execute(&self, request: OAuthHttpRequest) -> OAuthHttpClientFuture<'_> {
        let follow = matches!(request.redirect_policy, OAuthHttpRedirectPolicy::Follow);
        Box::pin(self.send(request.request, follow))
    }
}

impl Http {
    /// Sends one OAuth request, following redirects when `follow`, refusing any address that is
    /// neither https nor loopback before connecting, and reading at most 1 MiB back.
    async fn send(
        &self,
        request: http::Request<Vec<u8>>,
        follow: bool,
    ) -> Result<http::Response<Vec<u8>>, OAuthHttpClientError> {
        let client = if follow { &self.follow } else { &self.stop };
        let request =
            reqwest::Request::try_from(request).map_err(|e| Box::new(e) as OAuthHttpClientError)?;
        if !allowed(request.url()) {
            return Err(format!(
                "OAuth request to {} refused: only https:// or loopback addresses",
                request.url()
            )
            .into());
        }
        let mut response = client.execute(request).await.map_err(|e| {
            // The refusal's words, not reqwest's "error following redirect".
            match bosun_models::RedirectRefused::find(&e) {
                Some(refused) => Box::new(refused.clone()) as OAuthHttpClientError,
                None => Box::new(e) as OAuthHttpClientError,
            }
        })?;
        let mut builder = http::Response::builder().status(response.status());
        for (name, value) in response.headers() {
            builder = builder.header(name, value);
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| Box::new(e) as OAuthHttpClientError)?
        {
            if body.len() + chunk.len() > MAX_RESPONSE_BYTES {
                return Err("the OAuth response is over 1 MiB".into());
            }
            body.extend_from_slice(&chunk);
        }
        builder
            .body(body)
            .map_err(|e| Box::new(e) as OAuthHttpClientError)
    }
}

/// rmcp's authorization manager for `url`, keeping tokens in `store`.
async fn manager(url: &str, store: FileStore) -> Result<AuthorizationManager, OAuthError> {
    manager_with(url, store, Arc::new(Http::new()?)).await
}

async fn manager_with(
    url: &str,
    store: FileStore,
    http: Arc<Http>,
) -> Result<AuthorizationManager, OAuthError> {
    let mut manager = AuthorizationManager::new_with_oauth_http_client(url, http)
        .await
        .map_err(|e| OAuthError::Setup {
            url: url.to_owned(),
            message: e.to_string(),
        })?;
    manager.set_credential_store(store);
    Ok(manager)
}

/// Signs in to the server `name` at `url`: registers Bosun, hands `show` the address the
/// person opens, and waits (at most [`LOGIN_TIMEOUT`]) for the redirect on a loopback port.
///
/// # Errors
/// Discovery, registration or the exchange failed, the person refused, or nobody came back in
/// time — each said in words.
pub async fn login(
    home: &Path,
    name: &str,
    url: &str,
    show: impl FnOnce(&str),
) -> Result<(), OAuthError> {
    sign_in(home, name, url, show)
        .await
        .map_err(OAuthError::SignIn)
}

/// The steps of [`login`], each failure said in words.
async fn sign_in(
    home: &Path,
    name: &str,
    url: &str,
    show: impl FnOnce(&str),
) -> Result<(), String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| format!("cannot listen on a loopback port for the sign-in: {e}"))?;
    let port = listener
        .local_addr()
        .map_err(|e| format!("cannot read the loopback port: {e}"))?
        .port();
    let redirect = format!("http://127.0.0.1:{port}/callback");
    let store = FileStore {
        path: credentials_path(home, name),
        url: url.to_owned(),
    };
    let http = Arc::new(Http::new().map_err(|e| e.to_string())?);
    // The server's own 401 names its protected resource metadata and the scope it wants
    // (RFC 9728 §5.1): ask it first, and fall back to the well-known addresses without it.
    let challenge = http.challenge(url).await;
    let mut manager = manager_with(url, store, http)
        .await
        .map_err(|e| e.to_string())?;
    let metadata = manager
        .resolve_metadata_from_challenge(challenge.as_deref())
        .await
        .map_err(|e| format!("{name} ({url}) publishes no usable OAuth metadata: {e}"))?;
    let offered = metadata
        .metadata
        .scopes_supported
        .clone()
        .unwrap_or_default();
    manager.set_metadata(metadata.metadata);
    // The challenged scope, else the resource's `scopes_supported`, else the authorization
    // server's (the MCP specification's order for a first sign-in).
    let offered: Vec<&str> = offered.iter().map(String::as_str).collect();
    let scopes = manager.select_initial_scopes(&offered).await;
    let mut request = AuthorizationRequest::new(redirect).with_client_name("Bosun");
    if !scopes.is_empty() {
        request = request.with_scopes(scopes);
    }
    let session = AuthorizationSession::new(manager, request)
        .await
        .map_err(|(_, e)| format!("{name} ({url}) cannot be signed in to: {e}"))?;
    show(&session.auth_url);
    let (back, mut browser) = tokio::time::timeout(LOGIN_TIMEOUT, callback(&listener))
        .await
        .map_err(|_| {
            format!(
                "no sign-in came back within {} s; run `bosun mcp login {name}` again",
                LOGIN_TIMEOUT.as_secs()
            )
        })??;
    // The redirect's `iss` (RFC 9207) is checked against the server the request went to: a
    // code from another authorization server (a mix-up) is never exchanged.
    let exchanged = session
        .handle_callback_with_issuer(&back.code, &back.state, back.issuer.as_deref())
        .await
        .map_err(|e| match e {
            AuthError::AuthorizationServerMismatch {
                expected_issuer,
                received_issuer,
            } => format!(
                "signing in to {name} refused: the sign-in came back naming the authorization server {}, but Bosun asked {}; nothing was exchanged. Run `bosun mcp login {name}` again, and if this repeats, something between you and {url} is answering for another server",
                bosun_core::escape_hidden(&received_issuer),
                bosun_core::escape_hidden(&expected_issuer)
            ),
            AuthError::AuthorizationServerMissingIssuer { expected_issuer } => format!(
                "signing in to {name} refused: {} says it names itself in every sign-in redirect (`iss`, RFC 9207), and this one did not; nothing was exchanged. Run `bosun mcp login {name}` again, and if this repeats, tell the server's operator",
                bosun_core::escape_hidden(&expected_issuer)
            ),
            other => format!("signing in to {name} failed: {other}"),
        })
        .map(|_| ());
    // The browser waited for this: its page says what the terminal says.
    let page = match &exchanged {
        Ok(()) => SIGNED_IN_PAGE,
        Err(_) => NOT_SIGNED_IN_PAGE,
    };
    let _ = respond(&mut browser, "200 OK", page).await;
    exchanged
}

/// The browser's page once the code was checked and exchanged and the tokens kept.
const SIGNED_IN_PAGE: &str = "Bosun is signed in. You can close this window.";
/// The browser's page when the authorization server refused, or Bosun refused what came back.
const NOT_SIGNED_IN_PAGE: &str =
    "Bosun was not signed in: the terminal says why. You can close this window.";

/// What the browser's redirect carried back.
#[derive(Debug, PartialEq, Eq)]
struct Callback {
    code: String,
    state: String,
    /// The authorization server's name for itself (RFC 9207), when it gave one.
    issuer: Option<String>,
}

impl Http {
    /// The `WWW-Authenticate` challenge `url` answers an unauthenticated MCP request with, if it
    /// answers 401 with one. Sends no credentials and follows no redirect; any failure is `None`
    /// (discovery then tries the well-known addresses).
    async fn challenge(&self, url: &str) -> Option<String> {
        let body = serde_json::json!({
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": rmcp::model::ProtocolVersion::LATEST_WITH_INITIALIZE,
                "capabilities": {},
                "clientInfo": {"name": "bosun", "version": env!("CARGO_PKG_VERSION")},
            },
        });
        let request = http::Request::builder()
            .method("POST")
            .uri(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(serde_json::to_vec(&body).ok()?)
            .ok()?;
        let response = self.send(request, false).await.ok()?;
        if response.status() != http::StatusCode::UNAUTHORIZED {
            return None;
        }
        response
            .headers()
            .get(http::header::WWW_AUTHENTICATE)?
            .to_str()
            .ok()
            .map(str::to_owned)
    }
}

/// Waits for the browser's redirect: `GET /callback?code=…&state=…[&iss=…]`. A redirect with a
/// code is returned with its connection, unanswered: only once the code is checked and
/// exchanged can the page say whether Bosun is signed in. A refusal is answered at once; other
/// requests (a favicon) are answered 404 and waited past.
async fn callback(
    listener: &tokio::net::TcpListener,
) -> Result<(Callback, tokio::net::TcpStream), String> {
    loop {
        let (mut stream, _) = listener
            .accept()
            .await
            .map_err(|e| format!("the sign-in listener failed: {e}"))?;
        let mut head = Vec::new();
        let mut buffer = [0u8; 1024];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 * 1024 {
            let n = match tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buffer))
                .await
            {
                Ok(Ok(n)) if n > 0 => n,
                _ => break,
            };
            head.extend_from_slice(&buffer[..n]);
        }
        let text = String::from_utf8_lossy(&head);
        let target = text
            .lines()
            .next()
            .and_then(|line| line.strip_prefix("GET "))
            .and_then(|rest| rest.split(' ').next())
            .unwrap_or_default()
            .to_owned();
        let Ok(parsed) = url::Url::parse(&format!("http://127.0.0.1{target}")) else {
            let _ = respond(&mut stream, "404 Not Found", "Not found.").await;
            continue;
        };
        if parsed.path() != "/callback" {
            let _ = respond(&mut stream, "404 Not Found", "Not found.").await;
            continue;
        }
        let query = |key: &str| {
            parsed
                .query_pairs()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.into_owned())
        };
        if let Some(error) = query("error") {
            let _ = respond(&mut stream, "200 OK", NOT_SIGNED_IN_PAGE).await;
            let why = query("error_description").unwrap_or_default();
            return Err(format!(
                "the authorization server refused: {} {}",
                bosun_core::escape_hidden(&error),
                bosun_core::escape_hidden(&why)
            ));
        }
        match (query("code"), query("state")) {
            (Some(code), Some(state)) => {
                let back = Callback {
                    code,
                    state,
                    issuer: query("iss"),
                };
                return Ok((back, stream));
            }
            _ => {
                let _ = respond(
                    &mut stream,
                    "400 Bad Request",
                    "The sign-in carried no code.",
                )
                .await;
            }
        }
    }
}

async fn respond(
    stream: &mut tokio::net::TcpStream,
    status: &str,
    text: &str,
) -> std::io::Result<()> {
    let response = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
        text.len()
    );
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}

/// Whether tokens are kept for server `name` at `url`.
pub fn signed_in(home: &Path, name: &str, url: &str) -> bool {
    read_kept(&credentials_path(home, name))
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Kept>(&bytes).ok())
        .is_some_and(|kept| kept.url == url)
}

/// Forgets the tokens of server `name`; true when there were any.
///
/// # Errors
/// The file exists and cannot be removed.
pub fn logout(home: &Path, name: &str) -> Result<bool, OAuthError> {
    let path = credentials_path(home, name);
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(source) => Err(OAuthError::Forget { path, source }),
    }
}

/// A transport to `url` that sends the tokens kept for `name` (refreshing them when they run
/// out), with `settings`' headers.
pub(crate) async fn authorized_transport(
    home: &Path,
    name: &str,
    url: &str,
    client: reqwest::Client,
    settings: StreamableHttpClientTransportConfig,
) -> Result<StreamableHttpClientTransport<AuthClient<reqwest::Client>>, OAuthError> {
    let store = FileStore {
        path: credentials_path(home, name),
        url: url.to_owned(),
    };
    let mut manager = manager(url, store).await?;
    manager
        .initialize_from_store()
        .await
        .map_err(|e| OAuthError::KeptUnusable {
            name: name.to_owned(),
            message: e.to_string(),
        })?;
    Ok(StreamableHttpClientTransport::with_client(
        AuthClient::new(client, manager),
        settings,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oauth_talks_only_to_tls_or_this_machine() {
        for ok in [
            "https://auth.example.com/token",
            "http://127.0.0.1:8080/token",
            "http://[::1]/token",
            "http://localhost:9/token",
        ] {
            assert!(allowed(&url::Url::parse(ok).unwrap()), "{ok}");
        }
        for refused in [
            "http://auth.example.com/token",
            "http://10.0.0.1/token",
            "http://169.254.169.254/latest",
            "ftp://127.0.0.1/x",
            "file:///etc/passwd",
        ] {
            assert!(!allowed(&url::Url::parse(refused).unwrap()), "{refused}");
        }
    }

    #[test]
    fn the_oauth_client_refuses_a_plain_http_address_elsewhere_before_connecting() {
        let http = Http::new().unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        for url in [
            "http://auth.example.invalid/token",
            "http://10.255.255.1/token",
        ] {
            let request = http::Request::builder()
                .method("POST")
                .uri(url)
                .body(b"grant_type=authorization_code".to_vec())
                .unwrap();
            let error = runtime
                .block_on(http.send(request, false))
                .err()
                .unwrap()
                .to_string();
            assert!(
                error.contains("only https:// or loopback"),
                "{url}: {error}"
            );
        }
    }

    #[test]
    fn tokens_kept_for_one_url_are_not_used_for_another() {
        let dir = tempfile::tempdir().unwrap();
        let path = credentials_path(dir.path(), "web");
        let kept = r#"{"url": "https://a.example/mcp", "credentials": {"client_id": "c", "token_response": null}}"#;
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, kept).unwrap();
        assert!(signed_in(dir.path(), "web", "https://a.example/mcp"));
        assert!(!signed_in(dir.path(), "web", "https://b.example/mcp"));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let other = FileStore {
            path: path.clone(),
            url: "https://b.example/mcp".to_owned(),
        };
        assert!(runtime.block_on(other.load()).unwrap().is_none());
        // A file that does not parse is an error that names it, not an empty sign-in.
        std::fs::write(&path, "not json").unwrap();
        let error = runtime.block_on(other.load()).err().unwrap().to_string();
        assert!(error.contains("does not parse"), "{error}");
        assert!(logout(dir.path(), "web").unwrap());
        assert!(!logout(dir.path(), "web").unwrap());
    }

    #[test]
    fn the_callback_waits_past_other_requests_and_a_refusal_is_an_error() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let port = listener.local_addr().unwrap().port();
            let browser = tokio::spawn(async move {
                let mut replies = Vec::new();
                for target in [
                    "/favicon.ico",
                    "/callback?state=s",
                    "/callback?error=access_denied&error_description=%1b%5b31mno",
                ] {
                    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
                        .await
                        .unwrap();
                    stream
                        .write_all(format!("GET {target} HTTP/1.1\r\nhost: x\r\n\r\n").as_bytes())
                        .await
                        .unwrap();
                    let mut reply = String::new();
                    stream.read_to_string(&mut reply).await.unwrap();
                    replies.push(reply);
                }
                replies
            });
            let error = callback(&listener).await.err().unwrap();
            assert!(error.contains("refused: access_denied"), "{error}");
            // What the server wrote is shown escaped, never as a terminal sequence.
            assert!(!error.contains('\u{1b}'), "{error:?}");
            let replies = browser.await.unwrap();
            assert!(replies[0].starts_with("HTTP/1.1 404"), "{}", replies[0]);
            assert!(replies[1].starts_with("HTTP/1.1 400"), "{}", replies[1]);
            assert!(replies[2].contains("not signed in"), "{}", replies[2]);
        });
    }

    /// What the authorization server puts in the sign-in redirect's `iss`.
    #[derive(Clone, Copy, Debug)]
    enum Iss {
        Right,
        Wrong,
        Missing,
    }

    /// One loopback server playing an MCP resource that requires OAuth and its authorization
    /// server. Its 401 names protected resource metadata at an address no well-known lookup
    /// finds (`/meta/prm`) and the scope `files:read files:write`; its metadata says it names
    /// itself in every sign-in redirect (RFC 9207), and the redirect's `iss` is as `iss` says.
    async fn authority(iss: Iss) -> crate::loopback::Loopback {
        authority_guarding(iss, None).await
    }

    /// [`authority`], whose token endpoint, when `guarded` names a credentials file, answers a
    /// refresh only while another holder has that file's lock (the refreshing process, if it
    /// took it) and `invalid_grant` otherwise, as a server that rotates refresh tokens answers
    /// the loser of two unguarded refreshes.
    async fn authority_guarding(iss: Iss, guarded: Option<PathBuf>) -> crate::loopback::Loopback {
        use crate::loopback::Answer;
        crate::loopback::Loopback::start(move |seen, port| {
            let base = format!("http://127.0.0.1:{port}");
            let (path, query) = seen.target.split_once('?').unwrap_or((&seen.target, ""));
            let param = |key: &str| {
                url::form_urlencoded::parse(query.as_bytes())
                    .find(|(k, _)| k == key)
                    .map(|(_, v)| v.into_owned())
                    .unwrap_or_default()
            };
            match (seen.method.as_str(), path) {
                ("POST", "/mcp") => Answer::new(401).header(
                    "www-authenticate",
                    &format!(
                        r#"Bearer resource_metadata="{base}/meta/prm", scope="files:read files:write""#
                    ),
                ),
                ("GET", "/meta/prm") => Answer::json(serde_json::json!({
                    "resource": format!("{base}/mcp"),
                    "authorization_servers": [base],
                    "scopes_supported": ["everything"],
                })),
                ("GET", "/.well-known/oauth-authorization-server") => {
                    Answer::json(serde_json::json!({
                        "issuer": base,
                        "authorization_endpoint": format!("{base}/authorize"),
                        "token_endpoint": format!("{base}/token"),
                        "registration_endpoint": format!("{base}/register"),
                        "response_types_supported": ["code"],
                        "grant_types_supported": ["authorization_code", "refresh_token"],
                        "code_challenge_methods_supported": ["S256"],
                        "token_endpoint_auth_methods_supported": ["none"],
                        "authorization_response_iss_parameter_supported": true,
                    }))
                }
                ("POST", "/register") => {
                    let mut client: serde_json::Value =
                        serde_json::from_str(&seen.body).unwrap_or_default();
                    client["client_id"] = "bosun-test".into();
                    client["token_endpoint_auth_method"] = "none".into();
                    let mut answer = Answer::json(client);
                    answer.status = 201;
                    answer
                }
                ("GET", "/authorize") => {
                    let mut back = url::Url::parse(&param("redirect_uri")).unwrap();
                    back.query_pairs_mut()
                        .append_pair("code", "the-code")
                        .append_pair("state", &param("state"));
                    match iss {
                        Iss::Right => {
                            back.query_pairs_mut().append_pair("iss", &base);
                        }
                        Iss::Wrong => {
                            back.query_pairs_mut()
                                .append_pair("iss", "https://attacker.example");
                        }
                        Iss::Missing => {}
                    }
                    Answer::new(302).header("location", back.as_str())
                }
                ("POST", "/token") if seen.body.contains("grant_type=refresh_token") => {
                    let unguarded = guarded.as_deref().is_some_and(|path| {
                        bosun_host::state_lock::lock_within(path, std::time::Duration::ZERO)
                            .is_ok()
                    });
                    if unguarded {
                        let mut answer = Answer::json(serde_json::json!({"error": "invalid_grant"}));
                        answer.status = 400;
                        return answer;
                    }
                    Answer::json(serde_json::json!({
                        "access_token": "the-refreshed-access-token",
                        "token_type": "Bearer",
                        "expires_in": 3600,
                        "refresh_token": "the-rotated-refresh-token",
                    }))
                }
                ("POST", "/token") => Answer::json(serde_json::json!({
                    "access_token": "the-access-token",
                    "token_type": "Bearer",
                    "expires_in": 3600,
                    "refresh_token": "the-refresh-token",
                })),
                _ => Answer::new(404),
            }
        })
        .await
    }

    /// How a sign-in went: its outcome, every request the authority saw, whether tokens are
    /// kept, and the page the browser was shown at the end.
    struct SignIn {
        outcome: Result<(), String>,
        seen: Vec<crate::loopback::Seen>,
        kept: bool,
        page: String,
    }

    /// Signs in to the authority as `bosun mcp login web` does, a browser following the
    /// address.
    async fn sign_in(iss: Iss) -> SignIn {
        let server = authority(iss).await;
        let home = tempfile::tempdir().unwrap();
        sign_in_to(&server, home.path()).await
    }

    /// Signs in to `server` as `web`, keeping the tokens in `home`.
    async fn sign_in_to(server: &crate::loopback::Loopback, home: &Path) -> SignIn {
        let url = format!("{}/mcp", server.base());
        let mut browsing = None;
        let outcome = login(home, "web", &url, |address| {
            let address = address.to_owned();
            // The browser: follows the authorization server's redirect back to Bosun.
            let browser = reqwest::Client::builder()
                .tls_backend_preconfigured(bosun_models::tls_config().unwrap())
                .build()
                .unwrap();
            browsing = Some(tokio::spawn(async move {
                browser.get(address).send().await?.text().await
            }));
        })
        .await
        .map_err(|e| e.to_string());
        let page = browsing.unwrap().await.unwrap().unwrap();
        SignIn {
            outcome,
            seen: server.seen(),
            kept: signed_in(home, "web", &url),
            page,
        }
    }

    /// Enforcement: rmcp refreshes under the credential file's lock (`acquire_refresh_guard`),
    /// from its re-read of the file to its save, so a second Bosun refreshing the same
    /// server's tokens waits and then refreshes with the token the first stored. The token
    /// endpoint here answers a refresh only while the lock is held.
    #[tokio::test]
    async fn a_refresh_holds_the_credential_files_lock_from_its_read_to_its_save() {
        let home = tempfile::tempdir().unwrap();
        let path = credentials_path(home.path(), "web");
        let server = authority_guarding(Iss::Right, Some(path.clone())).await;
        let url = format!("{}/mcp", server.base());
        let signed = sign_in_to(&server, home.path()).await;
        assert_eq!(signed.outcome, Ok(()));
        // The access token ran out long ago.
        let mut kept: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        kept["credentials"]["token_received_at"] = 1.into();
        std::fs::write(&path, serde_json::to_vec(&kept).unwrap()).unwrap();
        let store = FileStore {
            path: path.clone(),
            url: url.clone(),
        };
        let mut manager = manager(&url, store).await.unwrap();
        assert!(manager.initialize_from_store().await.unwrap());
        let token = manager.get_access_token().await;
        assert_eq!(
            token.map_err(|e| e.to_string()).as_deref(),
            Ok("the-refreshed-access-token")
        );
        let kept = std::fs::read_to_string(&path).unwrap();
        assert!(kept.contains("the-rotated-refresh-token"), "{kept}");
    }

    /// Tokens are read only from the regular file at their name: a link planted there (to
    /// another server's tokens) is not followed.
    #[tokio::test]
    async fn kept_tokens_are_not_read_through_a_link() {
        let home = tempfile::tempdir().unwrap();
        let path = credentials_path(home.path(), "web");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let theirs = home.path().join("theirs.json");
        std::fs::write(
            &theirs,
            serde_json::json!({"url": "https://a.example/mcp", "credentials": {"client_id": "c", "token_response": null}}).to_string(),
        )
        .unwrap();
        std::os::unix::fs::symlink(&theirs, &path).unwrap();
        assert!(!signed_in(home.path(), "web", "https://a.example/mcp"));
        let store = FileStore {
            path,
            url: "https://a.example/mcp".to_owned(),
        };
        let error = store.load().await.err().unwrap().to_string();
        assert!(error.contains("symbolic link"), "{error}");
    }

    fn asked(seen: &[crate::loopback::Seen], method: &str, path: &str) -> bool {
        seen.iter()
            .any(|s| s.method == method && s.target.split('?').next() == Some(path))
    }

    /// Enforcement: `login` passes the redirect's `iss` to rmcp's check
    /// (`handle_callback_with_issuer`), and discovery starts from the server's own challenge
    /// (`resolve_metadata_from_challenge`) with the challenged scope requested.
    #[tokio::test]
    async fn a_sign_in_is_bound_to_the_issuer_and_found_through_the_challenge() {
        let SignIn {
            outcome,
            seen,
            kept,
            page,
        } = sign_in(Iss::Right).await;
        assert_eq!(outcome, Ok(()), "{seen:#?}");
        assert!(kept);
        assert_eq!(page, SIGNED_IN_PAGE);
        // The metadata was only reachable through the challenge.
        assert!(asked(&seen, "GET", "/meta/prm"), "{seen:#?}");
        // The scope the server challenged with is the scope asked for.
        let authorize = seen
            .iter()
            .find(|s| s.target.starts_with("/authorize?"))
            .unwrap();
        let scope =
            url::form_urlencoded::parse(authorize.target.split_once('?').unwrap().1.as_bytes())
                .find(|(k, _)| k == "scope")
                .map(|(_, v)| v.into_owned());
        assert_eq!(scope.as_deref(), Some("files:read files:write"));

        let SignIn {
            outcome,
            seen,
            kept,
            page,
        } = sign_in(Iss::Wrong).await;
        let error = outcome.err().unwrap();
        assert!(
            error.contains("https://attacker.example")
                && error.contains("refused")
                && error.contains("bosun mcp login web"),
            "{error}"
        );
        assert!(!asked(&seen, "POST", "/token"), "the code was exchanged");
        assert!(!kept);
        // The browser is told the truth too, not that Bosun is signed in.
        assert_eq!(page, NOT_SIGNED_IN_PAGE);

        let SignIn {
            outcome,
            seen,
            kept,
            page,
        } = sign_in(Iss::Missing).await;
        let error = outcome.err().unwrap();
        assert!(
            error.contains("`iss`") && error.contains("bosun mcp login web"),
            "{error}"
        );
        assert!(!asked(&seen, "POST", "/token"), "the code was exchanged");
        assert!(!kept);
        assert_eq!(page, NOT_SIGNED_IN_PAGE);
    }
}
