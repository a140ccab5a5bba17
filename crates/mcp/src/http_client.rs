//! The Streamable HTTP transport to a `[mcp.<name>] url = ...` server: reqwest with the same
//! TLS as the model providers (rustls, ring, the system's trust store), a bearer token and
//! headers whose values come from named environment variables — or the tokens of an OAuth
//! sign-in (`crate::oauth`).
//!
//! Redirects: only a 307/308 within the URL's own origin is followed
//! ([`bosun_models::same_origin_redirects`], shared with the model providers and OAuth); any
//! other ends the connection before the headers or tokens reach an address the user never
//! configured and policy never judged ([`redirect_refused`] says what to do).

use std::str::FromStr;
use std::time::Duration;

use bosun_host::mcp_config::McpServerConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

/// Why the HTTP client of a server (or of an OAuth sign-in) could not be built.
#[derive(Debug, thiserror::Error)]
pub enum HttpClientError {
    /// The TLS configuration (the system's trust store) could not be read.
    #[error("TLS setup failed: {0}")]
    Tls(String),
    /// reqwest refused the client.
    #[error("cannot build the HTTP client: {0}")]
    Client(#[source] reqwest::Error),
    /// A header or token comes from a variable that is not set.
    #[error("{what} comes from ${var}, which is not set")]
    Unset {
        /// `the bearer token`, `header X-Api-Key`.
        what: String,
        /// The variable.
        var: String,
    },
    /// A configured header name is not one.
    #[error("`{name}` is not an HTTP header name")]
    HeaderName {
        /// The name as configured.
        name: String,
    },
    /// A variable's value cannot be a header value (a newline, say).
    #[error("the value of ${var} cannot be sent in an HTTP header")]
    HeaderValue {
        /// The variable.
        var: String,
    },
}

/// A reqwest client with Bosun's TLS (rustls, ring, the system's trust store), a 10 s connect
/// timeout and `redirect`; `configure` adds what the caller needs.
pub(crate) fn client(
    redirect: reqwest::redirect::Policy,
    configure: impl FnOnce(reqwest::ClientBuilder) -> reqwest::ClientBuilder,
) -> Result<reqwest::Client, HttpClientError> {
    let tls = bosun_models::tls_config().map_err(|e| HttpClientError::Tls(e.to_string()))?;
    configure(
        reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .tls_backend_preconfigured(tls)
            .redirect(redirect),
    )
    .build()
    .map_err(HttpClientError::Client)
}

/// The HTTP client and transport settings for `url` as `config` describes it (headers, a
/// bearer token from the environment).
pub(crate) fn parts(
    url: &str,
    config: &McpServerConfig,
    refused: &bosun_models::RefusedNote,
) -> Result<(reqwest::Client, StreamableHttpClientTransportConfig), HttpClientError> {
    parts_from(url, config, refused, |var| std::env::var(var).ok())
}

/// [`parts`] with the environment as `env` gives it.
fn parts_from(
    url: &str,
    config: &McpServerConfig,
    refused: &bosun_models::RefusedNote,
    env: impl Fn(&str) -> Option<String>,
) -> Result<(reqwest::Client, StreamableHttpClientTransportConfig), HttpClientError> {
    let env_value = |var: &str, what: &str| {
        env(var).ok_or_else(|| HttpClientError::Unset {
            what: what.to_owned(),
            var: var.to_owned(),
        })
    };
    let client = client(
        bosun_models::same_origin_redirects_noting(refused.clone()),
        |builder| builder,
    )?;
    let mut settings = StreamableHttpClientTransportConfig::with_uri(url);
    if let Some(var) = &config.bearer_token_env {
        settings.auth_header = Some(env_value(var, "the bearer token")?);
    }
    for (name, var) in &config.headers {
        let header = http::HeaderName::from_str(name)
            .map_err(|_| HttpClientError::HeaderName { name: name.clone() })?;
        let value = http::HeaderValue::from_str(&env_value(var, &format!("header {name}"))?)
            .map_err(|_| HttpClientError::HeaderValue { var: var.clone() })?;
        settings.custom_headers.insert(header, value);
    }
    // A plugin's server carries its header values itself (expanded from its user config), and
    // an editor's server the values the editor gave.
    for (name, value) in config
        .provided
        .iter()
        .flat_map(|p| &p.headers)
        .chain(&config.given_headers)
    {
        let header = http::HeaderName::from_str(name)
            .map_err(|_| HttpClientError::HeaderName { name: name.clone() })?;
        let value =
            http::HeaderValue::from_str(value).map_err(|_| HttpClientError::HeaderValue {
                var: format!("the value given for {name}"),
            })?;
        settings.custom_headers.insert(header, value);
    }
    Ok((client, settings))
}

/// A transport to `url` as `config` describes it.
pub(crate) fn transport(
    url: &str,
    config: &McpServerConfig,
    refused: &bosun_models::RefusedNote,
) -> Result<StreamableHttpClientTransport<reqwest::Client>, HttpClientError> {
    let (client, settings) = parts(url, config, refused)?;
    Ok(StreamableHttpClientTransport::with_client(client, settings))
}

/// What to tell the user when `error` ended on a redirect the client refused: where it went and
/// how to point server `name` there if that is its new address.
/// rmcp's transport keeps only the message of what failed, so the refusal is also read from
/// `noted`, where the client's policy put it.
pub(crate) fn redirect_refused(
    name: &str,
    error: &(dyn std::error::Error + 'static),
    noted: &bosun_models::RefusedNote,
) -> Option<String> {
    let noted = noted
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take();
    let refused = bosun_models::RedirectRefused::find(error)
        .cloned()
        .or(noted)?;
    Some(format!(
        "{refused}: its headers and tokens were not sent there. If {to} is the server's address, set `url = \"{to}\"` in [mcp.{name}] and approve it again with `bosun mcp trust {name}`",
        to = refused.to
    ))
}

#[cfg(test)]
mod tests {
    use rmcp::model::ProtocolVersion;
    use rmcp::service::{ClientLifecycleMode, ClientServiceExt};

    use super::*;
    use crate::loopback::{Answer, Loopback};

    const KEY: &str = "the-api-key-of-this-server";

    /// `[mcp.web]` at `url` sending `X-Api-Key` and a bearer token, both `KEY`.
    fn transport_to(
        url: &str,
        refused: &bosun_models::RefusedNote,
    ) -> StreamableHttpClientTransport<reqwest::Client> {
        let config: McpServerConfig = toml::from_str(&format!(
            "url = {url:?}\nbearer_token_env = \"TOKEN\"\nheaders = {{ X-Api-Key = \"KEY\" }}\n"
        ))
        .unwrap();
        let (client, settings) =
            parts_from(url, &config, refused, |_| Some(KEY.to_owned())).unwrap();
        StreamableHttpClientTransport::with_client(client, settings)
    }

    /// Connects as Bosun does and returns what the user would read.
    async fn handshake_error(url: &str) -> String {
        let lifecycle = ClientLifecycleMode::Auto {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
        };
        let refused = bosun_models::RefusedNote::default();
        let error =
            ().serve_with_lifecycle(transport_to(url, &refused), lifecycle)
                .await
                .err()
                .unwrap();
        redirect_refused("web", &error, &refused)
            .unwrap_or_else(|| format!("not a refusal: {error}"))
    }

    /// Enforcement: `bosun_models::same_origin_redirects` on the MCP transport's client.
    /// Without it reqwest follows every one of these and sends `X-Api-Key` to the other
    /// server (another port, or the same port under another host name, is another origin).
    #[tokio::test]
    async fn a_redirect_to_another_origin_never_carries_the_servers_headers() {
        let elsewhere = Loopback::start(|_, _| Answer::new(500)).await;
        for status in [301, 302, 303, 307, 308] {
            for to in [
                format!("{}/capture", elsewhere.base()),
                "http://localhost:{port}/capture".to_owned(),
            ] {
                let to_here = to.clone();
                let server = Loopback::start(move |_, port| {
                    Answer::new(status)
                        .header("location", &to_here.replace("{port}", &port.to_string()))
                })
                .await;
                let to = to.replace("{port}", &server.port.to_string());
                let error = handshake_error(&format!("{}/mcp", server.base())).await;
                assert!(
                    error.contains(&format!("HTTP {status} redirecting to {to}"))
                        && error.contains(&format!("set `url = \"{to}\"` in [mcp.web]"))
                        && error.contains("bosun mcp trust web"),
                    "{status} {to}: {error}"
                );
                assert_eq!(server.seen().len(), 1, "{status} {to}");
                assert_eq!(server.seen()[0].headers["x-api-key"], KEY);
            }
        }
        assert!(
            elsewhere.seen().is_empty(),
            "the other origin was reached: {:?}",
            elsewhere.seen()
        );
    }

    /// A 307/308 within the origin keeps the POST, its body and its headers: followed. A
    /// 302 within the origin would turn it into a bodyless GET: refused.
    #[tokio::test]
    async fn a_body_keeping_redirect_within_the_origin_is_followed() {
        for status in [307, 308] {
            let server = Loopback::start(move |seen, _| {
                if seen.target == "/mcp" {
                    Answer::new(status).header("location", "/moved")
                } else {
                    Answer::new(500)
                }
            })
            .await;
            let _ = handshake_error(&format!("{}/mcp", server.base())).await;
            let seen = server.seen();
            assert_eq!(seen[1].method, "POST", "{status}");
            assert_eq!(seen[1].target, "/moved", "{status}");
            assert_eq!(seen[1].headers["x-api-key"], KEY, "{status}");
            assert_eq!(seen[1].body, seen[0].body, "{status}");
        }
        let server = Loopback::start(|_, _| Answer::new(302).header("location", "/moved")).await;
        let error = handshake_error(&format!("{}/mcp", server.base())).await;
        assert!(error.contains("HTTP 302 redirecting to"), "{error}");
        assert_eq!(server.seen().len(), 1);
    }
}
