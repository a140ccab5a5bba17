//! The one redirect policy of every HTTP client Bosun builds with reqwest (model providers, MCP
//! servers over HTTP, OAuth): a redirect is followed only when it stays on the origin (scheme,
//! host and port) of the first request and keeps the method and body (307, 308), at most
//! [`MAX_REDIRECTS`] times. Anything else ends the request with [`RedirectRefused`] before a byte
//! goes to the new address.
//!
//! Why: a request carries credentials (an API key header, a bearer token, an MCP server's
//! configured headers), and reqwest strips only `Authorization`, `Cookie` and
//! `Proxy-Authorization` on a cross-origin hop, never a custom header such as `x-api-key`. The
//! policy and the network rules judged the first address; another origin was never judged. A
//! 301/302/303 would also turn the POST into a bodyless GET.

/// How many same-origin redirects one request may follow.
pub const MAX_REDIRECTS: usize = 5;

/// A redirect Bosun did not follow: where it came from, where it pointed, and its status.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{from} answered HTTP {status} redirecting to {to}; Bosun follows only 307/308 redirects within the same origin (scheme, host and port), so nothing was sent to {to} — if that is the right address, configure it in place of {from}"
)]
pub struct RedirectRefused {
    /// The URL that answered with the redirect.
    pub from: String,
    /// Where it pointed.
    pub to: String,
    /// The redirect's status.
    pub status: u16,
}

impl RedirectRefused {
    /// The refusal somewhere in `error`'s chain of sources, if the request ended on one.
    pub fn find<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a RedirectRefused> {
        let mut current = Some(error);
        while let Some(e) = current {
            if let Some(refused) = e.downcast_ref::<RedirectRefused>() {
                return Some(refused);
            }
            current = e.source();
        }
        None
    }
}

/// The last redirect a client refused, for callers whose error chain loses it (a transport
/// that keeps only the message).
pub type RefusedNote = std::sync::Arc<std::sync::Mutex<Option<RedirectRefused>>>;

/// The redirect policy for a reqwest client that sends credentials (see the module doc).
pub fn same_origin_redirects() -> reqwest::redirect::Policy {
    same_origin_redirects_noting(RefusedNote::default())
}

/// [`same_origin_redirects`], keeping each refusal in `note` too.
pub fn same_origin_redirects_noting(note: RefusedNote) -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(move |attempt| {
        let from = attempt
            .previous()
            .last()
            .map(ToString::to_string)
            .unwrap_or_default();
        let keeps_body = matches!(attempt.status().as_u16(), 307 | 308);
        let same_origin = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if !keeps_body || !same_origin {
            let refused = RedirectRefused {
                from,
                to: attempt.url().to_string(),
                status: attempt.status().as_u16(),
            };
            *note
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(refused.clone());
            attempt.error(refused)
        } else if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error(format!(
                "more than {MAX_REDIRECTS} redirects starting at {from}"
            ))
        } else {
            attempt.follow()
        }
    })
}
