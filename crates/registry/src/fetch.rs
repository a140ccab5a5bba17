//! Where a source's bytes come from — an HTTPS origin or a local folder — read with a size cap
//! and a timeout. Paths are built only from segments already checked ([`check_relative`]), so
//! nothing a catalog says can climb out of the source's root. What a static host needs is
//! followed: a redirect (301, 302, 303, 307, 308) to any host of the same scheme, at most
//! [`MAX_REDIRECTS`] of them, never from `https://` down to `http://` (what is fetched is
//! verified against a digest, so where the bytes come from is not what is trusted); an answer of
//! 5xx or 429 is tried again at most [`MAX_ATTEMPTS`] times in all, waiting a bounded backoff or
//! the server's `Retry-After` (given in seconds, at most [`MAX_RETRY_WAIT`]; a longer one ends the
//! fetch at once with what the server asked). All of it stays within the request's timeout.
//!
//! Plain `http://` is accepted for loopback addresses only (tests, a local mirror).

use std::path::{Path, PathBuf};
use std::time::Duration;

use futures_util::StreamExt;
use url::Url;

use crate::error::RegistryError;

/// How long one metadata or catalog request may take, by default.
pub const METADATA_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one plugin download may take, by default.
pub const ARTIFACT_TIMEOUT: Duration = Duration::from_secs(300);
/// Most redirects one fetch follows.
pub const MAX_REDIRECTS: usize = 5;
/// Most requests one fetch makes when the server answers 5xx or 429.
pub const MAX_ATTEMPTS: u32 = 4;
/// The longest wait between two of them, whatever `Retry-After` says.
pub const MAX_RETRY_WAIT: Duration = Duration::from_secs(10);
/// The first wait of the backoff (doubled each time) when the server gives no `Retry-After`.
const FIRST_BACKOFF: Duration = Duration::from_millis(250);

/// Why a redirect was not followed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RedirectRefused {
    /// More than [`MAX_REDIRECTS`].
    #[error("more than {MAX_REDIRECTS} redirects (ending at {to}): not followed")]
    TooMany {
        /// Where the last one pointed.
        to: String,
    },
    /// From `https://` to anything else, or to `http://` off loopback.
    #[error(
        "a redirect from {from} to {to} leaves https: refused (ask the host to redirect to an https:// address)"
    )]
    Downgrade {
        /// Where it came from.
        from: String,
        /// Where it pointed.
        to: String,
    },
}

fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(d)) => d == "localhost",
        None => false,
    }
}

/// Whether a redirect from `from` to `to`, after `followed` others, is followed.
pub fn check_redirect(from: &Url, to: &Url, followed: usize) -> Result<(), RedirectRefused> {
    if followed >= MAX_REDIRECTS {
        return Err(RedirectRefused::TooMany { to: to.to_string() });
    }
    let same_scheme = from.scheme() == to.scheme();
    let allowed = match to.scheme() {
        "https" => same_scheme,
        "http" => same_scheme && is_loopback(to),
        _ => false,
    };
    if allowed {
        Ok(())
    } else {
        Err(RedirectRefused::Downgrade {
            from: from.to_string(),
            to: to.to_string(),
        })
    }
}

/// The redirect policy of every registry request ([`check_redirect`]).
fn redirect_policy() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let followed = attempt.previous().len().saturating_sub(1);
        let checked = match attempt.previous().last() {
            Some(from) => check_redirect(from, attempt.url(), followed),
            None => Ok(()),
        };
        match checked {
            Ok(()) => attempt.follow(),
            Err(refused) => attempt.error(refused),
        }
    })
}

/// How long to wait before trying again after `status`, the `attempt`-th answer (from 1);
/// `Err` with the server's own wait when it asks for longer than [`MAX_RETRY_WAIT`].
pub fn retry_wait(attempt: u32, retry_after: Option<&str>) -> Result<Duration, Duration> {
    let backoff = FIRST_BACKOFF
        .saturating_mul(1 << attempt.saturating_sub(1).min(8))
        .min(MAX_RETRY_WAIT);
    match retry_after.and_then(|v| v.trim().parse::<u64>().ok()) {
        Some(seconds) if Duration::from_secs(seconds) > MAX_RETRY_WAIT => {
            Err(Duration::from_secs(seconds))
        }
        Some(seconds) => Ok(Duration::from_secs(seconds)),
        None => Ok(backoff),
    }
}

/// Told about a download's progress (a progress bar on a terminal; nothing on a pipe).
pub trait Progress: Send + Sync {
    /// A download of `what` starts; `total` when its length is known.
    fn start(&self, what: &str, total: Option<u64>);
    /// `bytes` more arrived.
    fn advance(&self, bytes: u64);
    /// It ended (either way).
    fn finish(&self);
}

/// No progress shown.
#[derive(Debug, Clone, Copy, Default)]
pub struct Quiet;

impl Progress for Quiet {
    fn start(&self, _: &str, _: Option<u64>) {}
    fn advance(&self, _: u64) {}
    fn finish(&self) {}
}

/// Checks a path relative to a source's root: segments of `A-Z a-z 0-9 . _ -`, none empty,
/// none starting with `.`, at most 8 deep.
pub fn check_relative(relative: &str) -> Result<Vec<&str>, RegistryError> {
    let segments: Vec<&str> = relative.split('/').collect();
    let ok = !relative.is_empty()
        && relative.len() <= 512
        && segments.len() <= 8
        && segments.iter().all(|s| {
            !s.is_empty()
                && !s.starts_with('.')
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        });
    if ok {
        Ok(segments)
    } else {
        Err(RegistryError::InvalidName {
            name: crate::name::escape(relative),
        })
    }
}

/// Where a source's files are.
#[derive(Debug, Clone)]
pub struct Origin {
    base: Base,
    timeout: Duration,
}

#[derive(Debug, Clone)]
enum Base {
    Http { url: Url, client: reqwest::Client },
    Dir(PathBuf),
}

impl Origin {
    /// An HTTPS origin (or `http://` on loopback); `url` is the source's root.
    pub fn http(url: &str, timeout: Duration) -> Result<Self, RegistryError> {
        let bad = |message: String| RegistryError::Config {
            source_name: url.to_owned(),
            message,
        };
        let mut parsed = Url::parse(url).map_err(|e| bad(format!("`{url}` is not a URL: {e}")))?;
        let loopback = is_loopback(&parsed);
        match parsed.scheme() {
            "https" => {}
            "http" if loopback => {}
            _ => {
                return Err(bad(format!(
                    "`{url}` must be https:// (plain http:// only on a loopback address)"
                )));
            }
        }
        if !parsed.username().is_empty() || parsed.password().is_some() || parsed.query().is_some()
        {
            return Err(bad(format!(
                "`{url}` must not carry credentials or a query"
            )));
        }
        if !parsed.path().ends_with('/') {
            let path = format!("{}/", parsed.path());
            parsed.set_path(&path);
        }
        let tls = bosun_models::tls_config().map_err(|e| bad(format!("TLS setup failed: {e}")))?;
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10).min(timeout))
            .read_timeout(timeout)
            .tls_backend_preconfigured(tls)
            .redirect(redirect_policy())
            .build()
            .map_err(|e| bad(format!("the HTTP client cannot be built: {e}")))?;
        Ok(Self {
            base: Base::Http {
                url: parsed,
                client,
            },
            timeout,
        })
    }

    /// A local folder.
    pub fn dir(path: impl Into<PathBuf>) -> Self {
        Self {
            base: Base::Dir(path.into()),
            timeout: METADATA_TIMEOUT,
        }
    }

    /// The same origin with another timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// How a person sees where `relative` is.
    pub fn describe(&self, relative: &str) -> String {
        match &self.base {
            Base::Http { url, .. } => format!("{url}{relative}"),
            Base::Dir(dir) => dir.join(relative).display().to_string(),
        }
    }

    /// The local folder, for a folder origin.
    pub fn local_dir(&self) -> Option<&Path> {
        match &self.base {
            Base::Dir(dir) => Some(dir),
            Base::Http { .. } => None,
        }
    }

    /// Reads `relative`, at most `cap` bytes; `None` when the source has no such file (404, or
    /// no such file in the folder).
    pub async fn get(
        &self,
        relative: &str,
        cap: u64,
        progress: &dyn Progress,
    ) -> Result<Option<Vec<u8>>, RegistryError> {
        let segments = check_relative(relative)?;
        let what = self.describe(relative);
        match &self.base {
            Base::Dir(dir) => {
                let mut path = dir.clone();
                path.extend(&segments);
                read_capped_file(&path, cap, &what)
            }
            Base::Http { url, client } => {
                let mut target = url.clone();
                if let Ok(mut parts) = target.path_segments_mut() {
                    parts.pop_if_empty().extend(&segments);
                }
                let seconds = self.timeout.as_secs();
                let fetched = tokio::time::timeout(
                    self.timeout,
                    get_capped(client, target, cap, &what, seconds, progress),
                )
                .await;
                progress.finish();
                fetched.unwrap_or(Err(RegistryError::Timeout { url: what, seconds }))
            }
        }
    }
}

/// A file of a folder source: not through a final link, never waiting on a FIFO, a regular
/// file of at most `cap` bytes (the folder is someone else's). `None` when it is missing.
fn read_capped_file(path: &Path, cap: u64, what: &str) -> Result<Option<Vec<u8>>, RegistryError> {
    match bosun_fsio::read_regular(path, cap) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.is_not_found() => Ok(None),
        Err(bosun_fsio::OpenError::TooLarge { .. }) => Err(RegistryError::TooLarge {
            what: what.to_owned(),
            limit: cap,
        }),
        Err(e) => Err(RegistryError::io(format!("reading {what}"))(e.into_io())),
    }
}

async fn get_capped(
    client: &reqwest::Client,
    url: Url,
    cap: u64,
    what: &str,
    seconds: u64,
    progress: &dyn Progress,
) -> Result<Option<Vec<u8>>, RegistryError> {
    let failed = |message: String| RegistryError::Fetch {
        url: what.to_owned(),
        message,
    };
    let request_failed = |e: reqwest::Error| {
        if e.is_timeout() {
            RegistryError::Timeout {
                url: what.to_owned(),
                seconds,
            }
        } else {
            failed(error_chain(&e))
        }
    };
    let mut attempt = 0;
    let response = loop {
        attempt += 1;
        let response = client
            .get(url.clone())
            .send()
            .await
            .map_err(request_failed)?;
        let status = response.status();
        if status == reqwest::StatusCode::NOT_FOUND {
            return Ok(None);
        }
        if status.is_success() {
            break response;
        }
        let transient =
            status.is_server_error() || status == reqwest::StatusCode::TOO_MANY_REQUESTS;
        if !transient || attempt >= MAX_ATTEMPTS {
            return Err(failed(format!(
                "the server answered HTTP {status}{}",
                if transient {
                    format!(" {attempt} times")
                } else {
                    String::new()
                }
            )));
        }
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        drop(response);
        match retry_wait(attempt, retry_after.as_deref()) {
            Ok(wait) => tokio::time::sleep(wait).await,
            Err(asked) => {
                return Err(failed(format!(
                    "the server answered HTTP {status} and asked to wait {} s, longer than the {} s Bosun waits: try again later",
                    asked.as_secs(),
                    MAX_RETRY_WAIT.as_secs()
                )));
            }
        }
    };
    let declared = response.content_length();
    if declared.is_some_and(|n| n > cap) {
        return Err(RegistryError::TooLarge {
            what: what.to_owned(),
            limit: cap,
        });
    }
    progress.start(what, declared);
    let mut bytes =
        Vec::with_capacity(usize::try_from(declared.unwrap_or(0).min(cap)).unwrap_or(0));
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(request_failed)?;
        if (bytes.len() + chunk.len()) as u64 > cap {
            return Err(RegistryError::TooLarge {
                what: what.to_owned(),
                limit: cap,
            });
        }
        bytes.extend_from_slice(&chunk);
        progress.advance(chunk.len() as u64);
    }
    if declared.is_some_and(|n| n != bytes.len() as u64) {
        return Err(failed(format!(
            "the server declared {} bytes and sent {}",
            declared.unwrap_or(0),
            bytes.len()
        )));
    }
    Ok(Some(bytes))
}

/// An error with its sources, and the refused redirect spelled out when that ended it.
fn error_chain(error: &reqwest::Error) -> String {
    let mut source = std::error::Error::source(error);
    while let Some(e) = source {
        if let Some(refused) = e.downcast_ref::<RedirectRefused>() {
            return refused.to_string();
        }
        source = e.source();
    }
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(e) = source {
        text.push_str(": ");
        text.push_str(&e.to_string());
        source = e.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_fifo_in_a_folder_source_is_refused_without_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("timestamp.json");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        let origin = Origin::dir(dir.path());
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap();
            let _ = tx.send(runtime.block_on(origin.get("timestamp.json", 4096, &Quiet)));
        });
        let Ok(read) = rx.recv_timeout(Duration::from_secs(60)) else {
            // Let the blocked reader go before failing.
            let _ = std::fs::OpenOptions::new().write(true).open(&fifo);
            panic!("reading the folder source waited on the FIFO");
        };
        let error = read.unwrap_err().to_string();
        assert!(error.contains("not a regular file"), "{error}");
    }

    #[cfg(unix)]
    #[test]
    fn a_link_or_an_oversized_file_in_a_folder_source_is_refused() {
        use bosun_fsio::testing::{plant_link, plant_oversized};
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("catalog");
        std::fs::create_dir_all(&root).unwrap();
        let outside = dir.path().join("secret.json");
        std::fs::write(&outside, "the secret outside the folder").unwrap();
        plant_link(&root.join("timestamp.json"), &outside);
        let origin = Origin::dir(&root);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let error = runtime
            .block_on(origin.get("timestamp.json", 4096, &Quiet))
            .unwrap_err()
            .to_string();
        assert!(error.contains("a symbolic link"), "{error}");
        assert!(!error.contains("the secret"), "{error}");

        plant_oversized(&root.join("timestamp.json"), 4097);
        let error = runtime
            .block_on(origin.get("timestamp.json", 4096, &Quiet))
            .unwrap_err();
        assert!(
            matches!(error, RegistryError::TooLarge { limit: 4096, .. }),
            "{error}"
        );
    }

    #[test]
    fn relative_paths_cannot_leave_the_root() {
        for bad in [
            "",
            "../x",
            "a/../b",
            "/etc/passwd",
            "a//b",
            ".hidden",
            "a/.b",
            "a\\b",
            "a b",
            "a?b",
            "a#b",
            "a%2f",
        ] {
            assert!(check_relative(bad).is_err(), "{bad:?}");
        }
        check_relative("plugins/web/1.0.0/mod.ts").unwrap();
        assert!(Origin::http("http://example.com/reef", METADATA_TIMEOUT).is_err());
        assert!(Origin::http("ftp://127.0.0.1/", METADATA_TIMEOUT).is_err());
        assert!(Origin::http("https://u:p@example.com/", METADATA_TIMEOUT).is_err());
        Origin::http("http://127.0.0.1:9/", METADATA_TIMEOUT).unwrap();
    }

    #[test]
    fn redirects_keep_their_scheme_never_leave_https_and_are_bounded() {
        let url = |s: &str| Url::parse(s).unwrap();
        let https = url("https://reef.example/plugins/index/catalog.json");
        // A static host moving the file to another https host (a CDN): followed.
        check_redirect(&https, &url("https://cdn.example/catalog.json"), 0).unwrap();
        for refused in [
            "http://cdn.example/catalog.json",
            "http://127.0.0.1/catalog.json",
            "ftp://cdn.example/catalog.json",
            "file:///etc/passwd",
        ] {
            assert!(
                matches!(
                    check_redirect(&https, &url(refused), 0),
                    Err(RedirectRefused::Downgrade { .. })
                ),
                "{refused}"
            );
        }
        let local = url("http://127.0.0.1:8080/x");
        check_redirect(&local, &url("http://localhost:9090/y"), 0).unwrap();
        assert!(check_redirect(&local, &url("http://example.com/y"), 0).is_err());
        check_redirect(&https, &https, MAX_REDIRECTS - 1).unwrap();
        assert!(matches!(
            check_redirect(&https, &https, MAX_REDIRECTS),
            Err(RedirectRefused::TooMany { .. })
        ));
    }

    #[test]
    fn retry_waits_back_off_honour_retry_after_and_refuse_a_long_one() {
        assert_eq!(retry_wait(1, None), Ok(Duration::from_millis(250)));
        assert_eq!(retry_wait(2, None), Ok(Duration::from_millis(500)));
        assert_eq!(
            retry_wait(3, Some("not a number")),
            Ok(Duration::from_secs(1))
        );
        assert_eq!(retry_wait(30, None), Ok(MAX_RETRY_WAIT));
        assert_eq!(retry_wait(1, Some("2")), Ok(Duration::from_secs(2)));
        assert_eq!(retry_wait(1, Some("3600")), Err(Duration::from_secs(3600)));
    }
}
