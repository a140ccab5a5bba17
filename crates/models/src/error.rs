//! What can go wrong between Bosun and a model provider, each variant saying what to do about it.

use std::time::Duration;

/// Longest piece of a server's text (an error body, an offending line) kept in an error.
pub const MAX_QUOTED_CHARS: usize = 300;

/// An error from a model provider adapter.
///
/// `provider` is the adapter's wire format (`openai-chat`, `openai-responses`, `anthropic`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// The server answered with an HTTP error status.
    #[error("{provider} answered HTTP {status}: {message}; {}", http_advice(*status, *retryable))]
    Http {
        /// Wire format of the adapter.
        provider: String,
        /// HTTP status code.
        status: u16,
        /// The server's own error message, or its body, truncated.
        message: String,
        /// Whether the request may succeed if sent again (it was, up to the retry bound).
        retryable: bool,
    },
    /// The server refused the credentials.
    #[error("{provider} refused the API key (HTTP {status}: {message}); {}", auth_advice(key_env.as_deref()))]
    Auth {
        /// Wire format of the adapter.
        provider: String,
        /// HTTP status code (401 or 403).
        status: u16,
        /// The server's own error message, truncated.
        message: String,
        /// The environment variable the key was read from, if any.
        key_env: Option<String>,
    },
    /// The server could not be reached, or did not answer in time, before any byte of the
    /// response arrived.
    #[error(
        "could not reach {provider} at {url}: {message}; check base_url and that the server is running"
    )]
    Connect {
        /// Wire format of the adapter.
        provider: String,
        /// The URL the request went to.
        url: String,
        /// What failed.
        message: String,
    },
    /// The server took the request but sent no answer (no response, or no first byte of its
    /// stream) within the idle timeout.
    #[error(
        "{provider} at {url} sent no answer within {}{}; the server is hung or overloaded: run the step again, or raise read_timeout_secs in the model's [models.<name>] entry if it thinks for long",
        seconds(*waited),
        if *headers { " after its response headers" } else { "" }
    )]
    NoAnswer {
        /// Wire format of the adapter.
        provider: String,
        /// The URL the request went to.
        url: String,
        /// How long it waited.
        waited: Duration,
        /// Whether the response headers had arrived (the stream's first byte had not).
        headers: bool,
    },
    /// The stream broke after data had arrived; it is not retried because the model's partial
    /// answer was already delivered.
    #[error(
        "the {provider} stream broke after {received}: {reason}; the answer is incomplete, run the step again"
    )]
    Interrupted {
        /// Wire format of the adapter.
        provider: String,
        /// What had been received, e.g. `5 events (42 characters of text, 1 tool call)`.
        received: String,
        /// Why it broke.
        reason: String,
    },
    /// A chunk of the stream could not be understood.
    #[error(
        "{provider} sent a malformed stream chunk ({message}): `{line}`; the server or a proxy in between does not speak the {provider} format, check base_url and provider"
    )]
    Protocol {
        /// Wire format of the adapter.
        provider: String,
        /// What was wrong with it.
        message: String,
        /// The offending line, truncated.
        line: String,
    },
    /// The model produced tool-call arguments that are not a JSON value.
    #[error(
        "{provider}: the model called `{tool}` (call {call_id}) with arguments that are not valid JSON ({message}): `{arguments}`; run the step again or use a model that follows tool schemas"
    )]
    ToolArguments {
        /// Wire format of the adapter.
        provider: String,
        /// The tool the model called.
        tool: String,
        /// The call's id.
        call_id: String,
        /// The JSON parser's message.
        message: String,
        /// The arguments as received, truncated.
        arguments: String,
    },
    /// The provider reported an error inside the stream (e.g. `response.failed`, an Anthropic
    /// `error` event).
    #[error(
        "{provider} reported an error in the stream: {code}: {message}; {}",
        api_advice(code)
    )]
    Api {
        /// Wire format of the adapter.
        provider: String,
        /// The provider's error type or code, e.g. `overloaded_error`, `server_error`.
        code: String,
        /// The provider's message, truncated.
        message: String,
    },
    /// The stream was idle for longer than the read timeout.
    #[error(
        "{provider} sent nothing for {} after {received}; the server stalled, run the step again or raise read_timeout_secs in the model's [models.<name>] entry",
        seconds(*idle)
    )]
    Idle {
        /// Wire format of the adapter.
        provider: String,
        /// How long it was quiet.
        idle: Duration,
        /// What had been received before it went quiet.
        received: String,
    },
    /// The request could not be built (an invalid URL, a header with forbidden characters).
    #[error("could not build the {provider} request: {message}")]
    Request {
        /// Wire format of the adapter.
        provider: String,
        /// What was wrong.
        message: String,
    },
    /// The request carries an image and the model entry does not take images; nothing was
    /// sent.
    #[error(
        "[models.{model}] does not take images, so the request was not sent: set `images = true` in [models.{model}] if the model reads images, or switch to a model that does"
    )]
    ImagesNotTaken {
        /// The `[models.<name>]` entry.
        model: String,
    },
    /// The session holds data above what the model entry may be sent; nothing was sent.
    #[error(
        "the session holds {held} data{from} and [models.{model}] may be sent {allowed} at most, so the request was not sent: set `classification = \"{held}\"` in [models.{model}] of your own config if this model may hold such data, or carry on in a new session"
    )]
    AboveLevel {
        /// The `[models.<name>]` entry.
        model: String,
        /// The session's level.
        held: bosun_core::Classification,
        /// The entry's level.
        allowed: bosun_core::Classification,
        /// ` (from …)`: what raised the session, or empty.
        from: String,
    },
    /// The cancellation token fired.
    #[error("the model request was cancelled")]
    Cancelled,
}

impl ModelError {
    /// A few words on what really failed, for a retry notice: `HTTP 429`, `no answer within
    /// 30 s`, `connection refused`, ….
    pub fn short_reason(&self) -> String {
        match self {
            Self::Http { status, .. } | Self::Auth { status, .. } => format!("HTTP {status}"),
            Self::Connect { message, .. } => connect_reason(message),
            Self::NoAnswer { waited, .. } => format!("no answer within {}", seconds(*waited)),
            Self::Interrupted { .. } => "the stream broke".to_owned(),
            Self::Idle { idle, .. } => format!("nothing sent for {}", seconds(*idle)),
            Self::Api { code, .. } => code.clone(),
            other => {
                let text = other.to_string();
                text.chars().take(60).collect()
            }
        }
    }

    /// Whether sending the same request again may succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Http { retryable, .. } => *retryable,
            Self::Connect { .. }
            | Self::NoAnswer { .. }
            | Self::Interrupted { .. }
            | Self::Idle { .. } => true,
            Self::Api { code, .. } => is_transient_code(code),
            Self::Auth { .. }
            | Self::Protocol { .. }
            | Self::ToolArguments { .. }
            | Self::Request { .. }
            | Self::ImagesNotTaken { .. }
            | Self::AboveLevel { .. }
            | Self::Cancelled => false,
        }
    }
}

/// `30 s`, or `0.3 s` for the short timeouts of tests.
fn seconds(duration: Duration) -> String {
    if duration.subsec_millis() == 0 {
        format!("{} s", duration.as_secs())
    } else {
        format!("{:.1} s", duration.as_secs_f64())
    }
}

/// The innermost cause of a connection failure (`connection refused`, `dns error: …`), which is
/// what a person needs, rather than reqwest's "error sending request".
fn connect_reason(message: &str) -> String {
    let last = message.rsplit(": ").next().unwrap_or(message).trim();
    let last = last.split(" (os error").next().unwrap_or(last);
    if last.is_empty() {
        "no connection".to_owned()
    } else {
        format!("no connection: {}", last.to_lowercase())
            .chars()
            .take(80)
            .collect()
    }
}

fn is_transient_code(code: &str) -> bool {
    matches!(
        code,
        "overloaded_error"
            | "api_error"
            | "server_error"
            | "rate_limit_error"
            | "rate_limit_exceeded"
    )
}

fn http_advice(status: u16, retryable: bool) -> &'static str {
    match status {
        400 => {
            "the server refused the request: check the model name and that it supports tools and streaming"
        }
        404 => "check base_url and the model name",
        413 => "the conversation is too long for this server: shorten or compact it",
        429 if retryable => "rate limited and still limited after retrying: wait and try again",
        429 => "the account's quota is exhausted: check billing or use another model",
        _ if retryable => {
            "the server is failing or overloaded, still after retrying: try again later"
        }
        _ => "check the model configuration",
    }
}

fn auth_advice(key_env: Option<&str>) -> String {
    match key_env {
        Some(env) => format!("check the key in the environment variable {env}"),
        None => "no api_key_env is configured for this model: set one in its [models.<name>] entry"
            .to_owned(),
    }
}

fn api_advice(code: &str) -> &'static str {
    if is_transient_code(code) {
        "the provider is failing or overloaded: run the step again"
    } else {
        "check the request and the model configuration"
    }
}

/// Cuts `text` to [`MAX_QUOTED_CHARS`] characters, marking the cut.
pub(crate) fn truncate(text: &str) -> String {
    let mut chars = text.char_indices();
    match chars.nth(MAX_QUOTED_CHARS) {
        None => text.to_owned(),
        Some((at, _)) => format!("{}… ({} bytes in all)", &text[..at], text.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_keeps_short_text_and_marks_cuts() {
        assert_eq!(truncate("short"), "short");
        let long = "é".repeat(400);
        let cut = truncate(&long);
        assert!(cut.starts_with(&"é".repeat(MAX_QUOTED_CHARS)));
        assert!(cut.ends_with("… (800 bytes in all)"), "{cut}");
    }

    #[test]
    fn messages_say_what_to_do() {
        let err = ModelError::Auth {
            provider: "anthropic".into(),
            status: 401,
            message: "invalid x-api-key".into(),
            key_env: Some("ANTHROPIC_API_KEY".into()),
        };
        assert_eq!(
            err.to_string(),
            "anthropic refused the API key (HTTP 401: invalid x-api-key); check the key in the environment variable ANTHROPIC_API_KEY"
        );
        let err = ModelError::Http {
            provider: "openai-chat".into(),
            status: 503,
            message: "busy".into(),
            retryable: true,
        };
        assert_eq!(
            err.to_string(),
            "openai-chat answered HTTP 503: busy; the server is failing or overloaded, still after retrying: try again later"
        );
    }
}
