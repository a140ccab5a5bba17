//! A marketplace published as one `marketplace.json` over HTTPS (`[registries.<name>] kind =
//! "claude-marketplace"`, `url = "https://host/path/marketplace.json"`), read the way the
//! registry reads a catalogue: the platform's certificate store (`SSL_CERT_FILE` adds one), a
//! size cap ([`MAX_MARKETPLACE_BYTES`]), a timeout for the whole fetch
//! ([`MARKETPLACE_TIMEOUT`]), plain `http://` on loopback only.
//!
//! Redirects are stricter than the registry's: a registry file is checked against a digest
//! its signed or pinned catalogue names, so where its bytes come from is not what is trusted;
//! a marketplace is the list that names the sources, trusted because of the address the person
//! configured. So a redirect is followed only within that origin (same scheme, host and port),
//! at most [`MAX_REDIRECTS`] times; one to another origin is refused, naming both.
//!
//! What such a marketplace can install: `github`, `url` and `git-subdir` sources (git, in the
//! sandbox, as from any marketplace). A `./relative` source is refused: HTTP has no folder to
//! copy it from (a static host lists no directories, so the plugin's files cannot be known),
//! and Claude Code does not resolve them for a URL marketplace either.

use std::time::Duration;

use futures_util::StreamExt;
use url::Url;

use crate::ClaudeError;

/// The largest `marketplace.json` read over HTTP (4 MiB).
pub const MAX_MARKETPLACE_BYTES: u64 = 4 * 1024 * 1024;
/// How long fetching it may take, redirects and all, unless its registry entry says
/// otherwise (`timeout_secs`).
pub const MARKETPLACE_TIMEOUT: Duration = Duration::from_secs(30);
/// Most redirects followed (each within the origin).
pub const MAX_REDIRECTS: usize = 5;

/// Why a marketplace over HTTP(S) is refused or failed.
fn refused(url: &str, message: impl std::fmt::Display) -> ClaudeError {
    ClaudeError::Source {
        message: format!(
            "the marketplace {}: {message}",
            bosun_core::escape_hidden(url)
        ),
    }
}

fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(d)) => d == "localhost",
        None => false,
    }
}

/// Whether `url` names a `marketplace.json` over HTTP(S) (a path ending in `.json`), as
/// opposed to a git repository.
pub fn is_json_url(url: &str) -> bool {
    (url.starts_with("https://") || url.starts_with("http://"))
        && Url::parse(url).is_ok_and(|u| u.path().ends_with(".json"))
}

/// Checks a marketplace URL: `https://` (plain `http://` only on a loopback address), no
/// credentials, no query or fragment.
///
/// # Errors
/// Says which rule it breaks.
pub fn check_url(url: &str) -> Result<Url, ClaudeError> {
    let parsed = Url::parse(url).map_err(|e| refused(url, format!("is not a URL: {e}")))?;
    match parsed.scheme() {
        "https" => {}
        "http" if is_loopback(&parsed) => {}
        _ => {
            return Err(refused(
                url,
                "must be https:// (plain http:// only on a loopback address)",
            ));
        }
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(refused(url, "must not carry credentials"));
    }
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Err(refused(url, "must not carry a query or a fragment"));
    }
    Ok(parsed)
}

/// Whether `to` is on the origin of `from` (scheme, host, port).
pub fn same_origin(from: &Url, to: &Url) -> bool {
    from.scheme() == to.scheme()
        && from.host_str() == to.host_str()
        && from.port_or_known_default() == to.port_or_known_default()
}

/// A redirect not followed.
#[derive(Debug)]
struct RedirectRefused(String);

impl std::fmt::Display for RedirectRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RedirectRefused {}

fn redirect_policy() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let Some(first) = attempt.previous().first().cloned() else {
            return attempt.follow();
        };
        if attempt.previous().len() > MAX_REDIRECTS {
            let message = format!("more than {MAX_REDIRECTS} redirects: not followed");
            return attempt.error(RedirectRefused(message));
        }
        if same_origin(&first, attempt.url()) {
            attempt.follow()
        } else {
            let message = format!(
                "it redirects to {}, another origin than the one configured: not followed (configure the address it moved to, if you trust it)",
                bosun_core::escape_hidden(attempt.url().as_str())
            );
            attempt.error(RedirectRefused(message))
        }
    })
}

/// The innermost useful words of an error chain (reqwest wraps the policy's own message).
fn chain(error: &reqwest::Error) -> String {
    let mut words = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(inner) = source {
        if let Some(redirect) = inner.downcast_ref::<RedirectRefused>() {
            return redirect.0.clone();
        }
        words = format!("{words}: {inner}");
        source = inner.source();
    }
    words
}

/// Fetches the `marketplace.json` at `url` ([`check_url`]), at most [`MAX_MARKETPLACE_BYTES`],
/// within `timeout`, following redirects only within its origin.
///
/// # Errors
/// A refused URL or redirect, an answer that is not 200, one over the cap, a timeout, a
/// connection or TLS failure — each saying which.
pub async fn fetch_marketplace(url: &str, timeout: Duration) -> Result<Vec<u8>, ClaudeError> {
    let cap = MAX_MARKETPLACE_BYTES;
    let parsed = check_url(url)?;
    let tls =
        bosun_models::tls_config().map_err(|e| refused(url, format!("TLS setup failed: {e}")))?;
    let client = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10).min(timeout))
        .tls_backend_preconfigured(tls)
        .redirect(redirect_policy())
        .build()
        .map_err(|e| refused(url, format!("the HTTP client cannot be built: {e}")))?;
    let fetch = async {
        let response = client
            .get(parsed)
            .send()
            .await
            .map_err(|e| refused(url, chain(&e)))?;
        let status = response.status();
        if !status.is_success() {
            return Err(refused(url, format!("the server answered HTTP {status}")));
        }
        let too_large = || {
            refused(
                url,
                format!("it is larger than {cap} bytes, the most Bosun reads of a marketplace"),
            )
        };
        if response.content_length().is_some_and(|n| n > cap) {
            return Err(too_large());
        }
        let mut bytes = Vec::new();
        let mut stream = response.bytes_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| refused(url, chain(&e)))?;
            if (bytes.len() + chunk.len()) as u64 > cap {
                return Err(too_large());
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(bytes)
    };
    tokio::time::timeout(timeout, fetch)
        .await
        .unwrap_or_else(|_| {
            Err(refused(
                url,
                format!(
                    "it did not arrive within {} s: try again later, or ask its host",
                    timeout.as_secs()
                ),
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_https_or_loopback_http_without_credentials_is_a_marketplace_url() {
        for good in [
            "https://example.com/m/marketplace.json",
            "http://127.0.0.1:8080/marketplace.json",
            "http://localhost/x.json",
        ] {
            assert!(check_url(good).is_ok(), "{good}");
        }
        for bad in [
            "http://example.com/marketplace.json",
            "https://u:p@example.com/marketplace.json",
            "https://example.com/marketplace.json?x=1",
            "ftp://example.com/marketplace.json",
            "file:///etc/marketplace.json",
        ] {
            assert!(check_url(bad).is_err(), "{bad}");
        }
        assert!(is_json_url("https://example.com/a/marketplace.json"));
        assert!(!is_json_url("https://github.com/o/r.git"));
        assert!(!is_json_url("git://example.com/r.json"));
    }

    #[test]
    fn an_origin_is_scheme_host_and_port() {
        let url = |s: &str| Url::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"));
        let from = url("https://example.com/m.json");
        assert!(same_origin(
            &from,
            &url("https://example.com:443/other.json")
        ));
        assert!(!same_origin(&from, &url("https://cdn.example.com/m.json")));
        assert!(!same_origin(&from, &url("http://example.com/m.json")));
        assert!(!same_origin(&from, &url("https://example.com:8443/m.json")));
    }
}
