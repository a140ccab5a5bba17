//! When to send a request again and how long to wait first: exponential backoff with jitter,
//! the server's `Retry-After` honoured up to a cap, a bounded number of attempts.
//!
//! Only failures before any byte of the answer arrived are retried; see [`crate::transport`].

use std::time::{Duration, SystemTime};

use reqwest::header::HeaderMap;

/// How often and how patiently a request is retried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included (at least 1).
    pub max_attempts: u32,
    /// Wait before the second attempt; doubles for each later one.
    pub initial_backoff: Duration,
    /// Longest computed wait.
    pub max_backoff: Duration,
    /// Longest wait a server's `Retry-After` can impose; a longer one is cut to this.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 4,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// No retries at all.
    pub fn none() -> Self {
        Self {
            max_attempts: 1,
            ..Self::default()
        }
    }

    /// The wait before attempt `failed + 1`, after `failed` failures: the server's hint when it
    /// gave one (capped), else `initial_backoff · 2^(failed-1)` capped at `max_backoff`, scaled
    /// by a random factor in [0.5, 1) so that many clients do not retry in step.
    pub fn delay(&self, failed: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(hint) = retry_after {
            return hint.min(self.max_retry_after);
        }
        let exp = failed.saturating_sub(1).min(16);
        let full = self
            .initial_backoff
            .saturating_mul(1 << exp)
            .min(self.max_backoff);
        full.mul_f64(0.5 + fastrand::f64() * 0.5)
    }
}

/// Statuses worth another attempt: rate limits and transient server failures (529 is
/// Anthropic's "overloaded").
pub(crate) fn is_retryable_status(status: u16) -> bool {
    matches!(status, 429 | 500 | 502 | 503 | 504 | 529)
}

/// Reads the server's wait hint: OpenAI's `retry-after-ms`, else `Retry-After` as seconds or
/// as an HTTP date.
pub(crate) fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return Duration::try_from_secs_f64(ms / 1000.0).ok();
    }
    let value = text("retry-after")?;
    if let Ok(secs) = value.parse::<f64>() {
        return Duration::try_from_secs_f64(secs).ok();
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn retry_after_reads_seconds_dates_and_milliseconds() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let at = |h: &[(&'static str, &str)]| retry_after(&headers(h), now);
        assert_eq!(at(&[("retry-after", "3")]), Some(Duration::from_secs(3)));
        assert_eq!(
            at(&[("retry-after", "0.5")]),
            Some(Duration::from_millis(500))
        );
        let date = httpdate::fmt_http_date(now + Duration::from_secs(7));
        assert_eq!(at(&[("retry-after", &date)]), Some(Duration::from_secs(7)));
        let past = httpdate::fmt_http_date(now - Duration::from_secs(7));
        assert_eq!(at(&[("retry-after", &past)]), Some(Duration::ZERO));
        assert_eq!(
            at(&[("retry-after", "3"), ("retry-after-ms", "250")]),
            Some(Duration::from_millis(250))
        );
        assert_eq!(at(&[("retry-after", "soon")]), None);
        assert_eq!(at(&[("retry-after", "-1")]), None);
        assert_eq!(at(&[]), None);
    }

    #[test]
    fn backoff_doubles_with_jitter_and_caps() {
        let policy = RetryPolicy::default();
        for _ in 0..50 {
            let first = policy.delay(1, None);
            assert!(first >= Duration::from_millis(250) && first < Duration::from_millis(500));
            let third = policy.delay(3, None);
            assert!(third >= Duration::from_secs(1) && third < Duration::from_secs(2));
            assert!(policy.delay(30, None) < Duration::from_secs(8));
        }
        assert_eq!(
            policy.delay(1, Some(Duration::from_secs(3600))),
            Duration::from_secs(60)
        );
        assert_eq!(
            policy.delay(1, Some(Duration::from_secs(2))),
            Duration::from_secs(2)
        );
    }
}

/// A request about to be sent again: which attempt comes next, after how long, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryNotice {
    /// The attempt that failed (1 for the first).
    pub failed_attempt: u32,
    /// How many attempts there may be in all.
    pub attempts: u32,
    /// How long until the next one.
    pub delay: Duration,
    /// Why the last one failed, in one line (`HTTP 429`, `connection refused`, …).
    pub reason: String,
}

tokio::task_local! {
    /// Who wants to hear about retries of the requests made in this task: set with
    /// [`notify_retries`] around a provider's `stream` call.
    static ON_RETRY: std::sync::Arc<dyn Fn(RetryNotice) + Send + Sync>;
}

/// Runs `future`, calling `on_retry` before each retry of a model request it makes — so a
/// person can be told "retrying in 3 s (HTTP 429)" instead of waiting in silence.
pub async fn notify_retries<F: std::future::Future>(
    on_retry: std::sync::Arc<dyn Fn(RetryNotice) + Send + Sync>,
    future: F,
) -> F::Output {
    ON_RETRY.scope(on_retry, future).await
}

/// Tells whoever set [`notify_retries`] (nobody: nothing happens).
pub(crate) fn announce(notice: RetryNotice) {
    let _ = ON_RETRY.try_with(|on_retry| on_retry(notice));
}
