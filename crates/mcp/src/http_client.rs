//! The Streamable HTTP transport to a `[mcp.<name>] url = ...` server: reqwest with the same
//! TLS as the model providers (rustls, ring, the system's trust store), a bearer token and
//! headers whose values come from named environment variables — or the tokens of an OAuth
//! sign-in (`crate::oauth`).

use std::str::FromStr;
use std::time::Duration;

use bosun_host::mcp_config::McpServerConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

/// The value of the environment variable `var`, saying which setting needs it when unset.
fn env_value(var: &str, what: &str) -> Result<String, String> {
    std::env::var(var).map_err(|_| format!("{what} comes from ${var}, which is not set"))
}

/// The HTTP client and transport settings for `url` as `config` describes it (headers, a
/// bearer token from the environment).
pub(crate) fn parts(
    url: &str,
    config: &McpServerConfig,
) -> Result<(reqwest::Client, StreamableHttpClientTransportConfig), String> {
    let tls = bosun_models::tls_config().map_err(|e| format!("TLS setup failed: {e}"))?;
    let client = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .tls_backend_preconfigured(tls)
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
    let mut settings = StreamableHttpClientTransportConfig::with_uri(url);
    if let Some(var) = &config.bearer_token_env {
        settings.auth_header = Some(env_value(var, "the bearer token")?);
    }
    for (name, var) in &config.headers {
        let header = http::HeaderName::from_str(name)
            .map_err(|_| format!("`{name}` is not an HTTP header name"))?;
        let value = http::HeaderValue::from_str(&env_value(var, &format!("header {name}"))?)
            .map_err(|_| format!("the value of ${var} cannot be sent in an HTTP header"))?;
        settings.custom_headers.insert(header, value);
    }
    Ok((client, settings))
}

/// A transport to `url` as `config` describes it.
pub(crate) fn transport(
    url: &str,
    config: &McpServerConfig,
) -> Result<StreamableHttpClientTransport<reqwest::Client>, String> {
    let (client, settings) = parts(url, config)?;
    Ok(StreamableHttpClientTransport::with_client(client, settings))
}
