//! Redirects from a provider's server: the key never goes to an address nobody configured.
//! Every wire format, every redirect status; another port or another host name is another
//! origin. Only a 307/308 on the same origin is followed, with the key.

use bosun_models::{ModelEvent, ProviderKind};

use crate::server::{Reply, TestServer};
use crate::support::{KEY, open_error, provider, request, run, sse};

const KINDS: [ProviderKind; 3] = [
    ProviderKind::OpenaiChat,
    ProviderKind::OpenaiResponses,
    ProviderKind::Anthropic,
];

/// The header each format carries the key in.
fn key_header(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::Anthropic => "x-api-key",
        _ => "authorization",
    }
}

/// Enforcement: `bosun_models::same_origin_redirects` on the provider's client. Without it
/// reqwest follows each of these and sends `x-api-key` along (it strips only `Authorization`).
#[tokio::test]
async fn a_redirect_to_another_origin_never_carries_the_key() {
    for kind in KINDS {
        for status in [301, 302, 303, 307, 308] {
            let elsewhere = TestServer::start([Reply::sse(sse(kind, "text")).into()]).await;
            let server = TestServer::start([Reply::status(status, "")
                .header("location", &format!("{}/v1/capture", elsewhere.url))])
            .await;
            let provider = provider(kind, &server);
            let error = open_error(&*provider, &request("m")).await.to_string();
            assert!(
                elsewhere.requests().is_empty(),
                "{kind:?} {status}: the other origin was reached"
            );
            assert_eq!(server.requests().len(), 1, "{kind:?} {status}: retried");
            assert!(
                error.contains(&format!("HTTP {status} redirecting to {}", elsewhere.url))
                    && error.contains("base_url"),
                "{kind:?} {status}: {error}"
            );
        }
        // The same server under another host name is another origin too.
        let server = TestServer::start([Reply::status(307, "").header(
            "location",
            &server_on_localhost(&TestServer::start([]).await.url),
        )])
        .await;
        let error = open_error(&*provider(kind, &server), &request("m"))
            .await
            .to_string();
        assert!(
            error.contains("redirecting to http://localhost:"),
            "{error}"
        );
        assert_eq!(server.requests().len(), 1);
    }
}

fn server_on_localhost(url: &str) -> String {
    format!("{}/v1/moved", url.replace("127.0.0.1", "localhost"))
}

/// A 307/308 within the origin keeps the POST and its key: followed. A 302 within the origin
/// would lose the body: refused.
#[tokio::test]
async fn a_body_keeping_redirect_within_the_origin_is_followed_with_the_key() {
    for kind in KINDS {
        for status in [307, 308] {
            let server = TestServer::start([
                Reply::status(status, "").header("location", "/v1/moved"),
                Reply::sse(sse(kind, "text")).into(),
            ])
            .await;
            let items = run(&*provider(kind, &server), &request("m")).await;
            let text: String = items
                .iter()
                .filter_map(|item| match item {
                    Ok(ModelEvent::TextDelta(t)) => Some(t.as_str()),
                    _ => None,
                })
                .collect();
            assert_eq!(text, "Hello, world.", "{kind:?} {status}");
            let requests = server.requests();
            assert_eq!(requests.len(), 2);
            assert_eq!(requests[1].path, "/v1/moved");
            assert!(requests[1].headers[key_header(kind)].contains(KEY));
            assert_eq!(requests[0].body, requests[1].body);
        }
        let server =
            TestServer::start([Reply::status(302, "").header("location", "/v1/moved")]).await;
        let error = open_error(&*provider(kind, &server), &request("m"))
            .await
            .to_string();
        assert!(error.contains("HTTP 302 redirecting to"), "{error}");
        assert_eq!(server.requests().len(), 1);
    }
}
