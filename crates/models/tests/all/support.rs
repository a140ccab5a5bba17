//! What every provider's tests share: building an adapter against the test server, a standard
//! conversation, and the flows that are the same for every wire format (retries, cuts,
//! cancellation), each checked against that format's own fixtures.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bosun_models::{
    Answer, Anthropic, ApiKey, CancellationToken, Connection, FinishReason, Message, ModelError,
    ModelEvent, ModelRequest, OpenAiChat, OpenAiResponses, Provider, ProviderKind, RetryPolicy,
    Timeouts, TokenUsage, ToolCall, ToolDefinition,
};
use futures_util::StreamExt;
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::server::{Reply, TestServer, fixture};

pub const KEY: &str = "test-key-123";

/// Retries quick enough for tests; `Retry-After` still honoured up to 5 s.
pub fn fast_retry() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 4,
        initial_backoff: Duration::from_millis(10),
        max_backoff: Duration::from_millis(50),
        max_retry_after: Duration::from_secs(5),
    }
}

pub fn fixture_dir(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::OpenaiChat => "openai_chat",
        ProviderKind::OpenaiResponses => "openai_responses",
        ProviderKind::Anthropic => "anthropic",
    }
}

pub fn sse(kind: ProviderKind, name: &str) -> String {
    fixture(fixture_dir(kind), name)
}

pub fn connection(server: &TestServer) -> Connection {
    Connection::new(&server.url)
        .api_key(ApiKey::new(KEY), Some("TEST_KEY".into()))
        .retry(fast_retry())
}

pub fn provider_with(kind: ProviderKind, connection: Connection) -> Arc<dyn Provider> {
    match kind {
        ProviderKind::OpenaiChat => Arc::new(OpenAiChat::new(connection).unwrap()),
        ProviderKind::OpenaiResponses => Arc::new(OpenAiResponses::new(connection).unwrap()),
        ProviderKind::Anthropic => Arc::new(Anthropic::new(connection).unwrap()),
    }
}

pub fn provider(kind: ProviderKind, server: &TestServer) -> Arc<dyn Provider> {
    provider_with(kind, connection(server))
}

pub fn tools() -> Vec<ToolDefinition> {
    vec![
        ToolDefinition {
            name: "read_file".into(),
            description: "Read a file in the workspace.".into(),
            input_schema: json!({
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            }),
        },
        ToolDefinition {
            name: "list_dir".into(),
            description: "List a directory.".into(),
            input_schema: json!({
                "type": "object",
                "properties": {"path": {"type": "string"}, "depth": {"type": "integer"}},
            }),
        },
    ]
}

/// The first request of every scenario.
pub fn request(model: &str) -> ModelRequest {
    ModelRequest {
        model: model.into(),
        system: Some("You are Bosun's test agent.".into()),
        messages: vec![Message::user("What is in src/lib.rs?")],
        tools: tools(),
        max_output_tokens: Some(1024),
    }
}

/// Every item of the stream, errors included.
pub async fn run(
    provider: &dyn Provider,
    request: &ModelRequest,
) -> Vec<Result<ModelEvent, ModelError>> {
    let stream = provider
        .stream(request, CancellationToken::new())
        .await
        .unwrap();
    stream.collect().await
}

/// The stream's events, which must all be `Ok`.
pub async fn events(provider: &dyn Provider, request: &ModelRequest) -> Vec<ModelEvent> {
    run(provider, request)
        .await
        .into_iter()
        .map(|item| item.unwrap())
        .collect()
}

pub fn text(s: &str) -> ModelEvent {
    ModelEvent::TextDelta(s.into())
}

pub fn call(id: &str, name: &str, arguments: serde_json::Value) -> ModelEvent {
    ModelEvent::ToolCall(ToolCall {
        id: id.into(),
        name: name.into(),
        input: arguments,
    })
}

pub fn usage(input: u64, output: u64, cached: Option<u64>, reasoning: Option<u64>) -> ModelEvent {
    ModelEvent::Usage(TokenUsage {
        input_tokens: input,
        output_tokens: output,
        cached_input_tokens: cached,
        reasoning_tokens: reasoning,
    })
}

pub fn finished(reason: FinishReason) -> ModelEvent {
    ModelEvent::Finished { reason }
}

/// The arguments of the `split_arguments` fixtures, sent two characters at a time.
pub fn long_arguments() -> serde_json::Value {
    json!({
        "path": "docs/überblick.md",
        "content": "# Überblick\n\nZeile mit \"Zitat\" und Emoji 🚢.\n",
        "create_dirs": true,
    })
}

/// The text the `text` fixtures spell, split as they split it.
pub fn hello_text() -> Vec<ModelEvent> {
    vec![text("Hello"), text(", wor"), text("ld.")]
}

fn answer_text(items: &[Result<ModelEvent, ModelError>]) -> String {
    items
        .iter()
        .filter_map(|item| match item {
            Ok(ModelEvent::TextDelta(t)) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

/// A 429 with `Retry-After: 1`, then the `text` fixture: one retry, after about a second.
pub async fn retries_after_429(kind: ProviderKind) {
    let server = TestServer::start([
        Reply::status(
            429,
            r#"{"error":{"message":"Rate limit reached","type":"rate_limit_error"}}"#,
        )
        .header("retry-after", "1"),
        Reply::sse(sse(kind, "text")).into(),
    ])
    .await;
    let provider = provider(kind, &server);
    let items = run(&*provider, &request("m")).await;
    assert_eq!(answer_text(&items), "Hello, world.");
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "one retry");
    assert_eq!(requests[0].body, requests[1].body, "the same request again");
    let waited = requests[1].at - requests[0].at;
    assert!(
        waited >= Duration::from_millis(900) && waited < Duration::from_secs(10),
        "waited {waited:?} for Retry-After: 1"
    );
}

/// A 500, then the `text` fixture: one retry after a short backoff.
pub async fn retries_after_500(kind: ProviderKind) {
    let server = TestServer::start([
        Reply::status(500, r#"{"error":{"message":"The server had an error"}}"#),
        Reply::sse(sse(kind, "text")).into(),
    ])
    .await;
    let provider = provider(kind, &server);
    let items = run(&*provider, &request("m")).await;
    assert_eq!(answer_text(&items), "Hello, world.");
    assert_eq!(server.requests().len(), 2);
}

/// Failures that keep coming stop after `max_attempts`, with the last status.
pub async fn gives_up_after_max_attempts(kind: ProviderKind) {
    let busy = || Reply::status(503, r#"{"error":{"message":"busy"}}"#);
    let server = TestServer::start([busy(), busy(), busy(), busy(), busy()]).await;
    let provider = provider(kind, &server);
    let error = open_error(&*provider, &request("m")).await;
    assert_eq!(
        error,
        ModelError::Http {
            provider: kind.as_str().into(),
            status: 503,
            message: "busy".into(),
            retryable: true,
        }
    );
    assert_eq!(server.requests().len(), 4);
}

/// A 401 is not retried and names the key's variable.
pub async fn auth_error_names_the_key_variable(kind: ProviderKind) {
    let server = TestServer::start([Reply::status(
        401,
        r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
    )])
    .await;
    let provider = provider(kind, &server);
    let error = open_error(&*provider, &request("m")).await;
    assert_eq!(
        error,
        ModelError::Auth {
            provider: kind.as_str().into(),
            status: 401,
            message: "invalid x-api-key".into(),
            key_env: Some("TEST_KEY".into()),
        }
    );
    assert!(
        error
            .to_string()
            .ends_with("check the key in the environment variable TEST_KEY")
    );
    assert_eq!(server.requests().len(), 1);
}

/// The `cut` fixture (`events` SSE events spelling "Hello") ends two ways: the chunked body
/// broken off in the middle of a line, and a connection closed cleanly before the terminal event.
/// Both surface as `Interrupted` after the text that did arrive, saying what arrived, and neither
/// is retried.
pub async fn stream_cut_mid_way(kind: ProviderKind, events: usize, missing: &str) {
    let body = sse(kind, "cut");
    let received = |bytes: usize| {
        format!("{bytes} bytes in {events} events (5 characters of text, 0 complete tool calls)")
    };
    let server = TestServer::start([
        Reply::sse(body.clone() + "data: {\"partial")
            .cut_after(body.len() + 10)
            .into(),
        Reply::sse(body.clone()).close_delimited().into(),
    ])
    .await;
    let provider = provider(kind, &server);

    let items = run(&*provider, &request("m")).await;
    assert_eq!(answer_text(&items), "Hello");
    let last = items.last().unwrap().clone().unwrap_err();
    let ModelError::Interrupted {
        provider: name,
        received: got,
        reason,
    } = &last
    else {
        panic!("expected Interrupted, got {last:?}");
    };
    assert_eq!(name, kind.as_str());
    assert_eq!(got, &received(body.len() + 10));
    assert!(!reason.is_empty());
    assert!(last.to_string().contains("run the step again"), "{last}");

    let items = run(&*provider, &request("m")).await;
    assert_eq!(answer_text(&items), "Hello");
    assert_eq!(
        items.last().unwrap().clone().unwrap_err(),
        ModelError::Interrupted {
            provider: kind.as_str().into(),
            received: received(body.len()),
            reason: format!("the connection closed before {missing}"),
        }
    );
    assert_eq!(server.requests().len(), 2, "neither stream was retried");
}

/// A slow stream stops promptly when the token fires, and the connection is dropped.
pub async fn cancellation_stops_a_slow_stream(kind: ProviderKind) {
    let server = TestServer::start([Reply::sse(sse(kind, "cut")).then_hang().into()]).await;
    let provider = provider(kind, &server);
    let cancel = CancellationToken::new();
    let mut stream = provider
        .stream(&request("m"), cancel.clone())
        .await
        .unwrap();
    // Read until the first text arrives, then cancel while the server is silent.
    loop {
        match stream.next().await.unwrap().unwrap() {
            ModelEvent::TextDelta(_) => break,
            _ => continue,
        }
    }
    let waiter = tokio::spawn({
        let cancel = cancel.clone();
        async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            cancel.cancel();
        }
    });
    let started = Instant::now();
    let next = tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .expect("the stream stopped");
    assert_eq!(next, Some(Err(ModelError::Cancelled)));
    assert_eq!(stream.next().await, None);
    assert!(started.elapsed() < Duration::from_secs(10));
    waiter.await.unwrap();
    drop(stream);
    assert!(
        server
            .wait_for_disconnect(Duration::from_secs(10))
            .await
            .is_some(),
        "the connection was closed"
    );
}

/// A stream that goes quiet longer than the idle timeout fails with what arrived.
pub async fn idle_stream_times_out(kind: ProviderKind) {
    let server = TestServer::start([Reply::sse(sse(kind, "cut")).then_hang().into()]).await;
    let connection = connection(&server).timeouts(Timeouts {
        connect: Duration::from_secs(5),
        idle: Duration::from_millis(300),
    });
    let provider = provider_with(kind, connection);
    let items = run(&*provider, &request("m")).await;
    assert_eq!(answer_text(&items), "Hello");
    let error = items.last().unwrap().clone().unwrap_err();
    assert!(
        matches!(&error, ModelError::Idle { idle, .. } if *idle == Duration::from_millis(300)),
        "{error:?}"
    );
}

/// The whole answer, which must succeed.
pub async fn answer(provider: &dyn Provider, request: &ModelRequest) -> Answer {
    let stream = provider
        .stream(request, CancellationToken::new())
        .await
        .unwrap();
    Answer::collect(stream).await.unwrap()
}

/// The error with which opening the stream fails.
pub async fn open_error(provider: &dyn Provider, request: &ModelRequest) -> ModelError {
    provider
        .stream(request, CancellationToken::new())
        .await
        .err()
        .unwrap()
}
