//! The Messages API against recorded-shape `message_*` / `content_block_*` event streams.

use std::time::Duration;

use bosun_models::{
    FinishReason, Message, ModelError, ModelEvent, ProviderKind, ReasoningFormat, ReasoningItem,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::server::{Reply, TestServer};
use crate::support::{
    self, call, events, finished, hello_text, long_arguments, request, run, sse, text, usage,
};

const KIND: ProviderKind = ProviderKind::Anthropic;

async fn serve(fixture: &str) -> TestServer {
    TestServer::start([Reply::sse(sse(KIND, fixture)).into()]).await
}

fn thinking_block() -> Value {
    json!({"type": "thinking", "thinking": "Need the file first.", "signature": "EqQBCkYIBxgCKkBsig=="})
}

#[tokio::test]
async fn text_only() {
    let server = serve("text").await;
    let provider = support::provider(KIND, &server);
    let got = events(&*provider, &request("claude-sonnet-4-5")).await;
    let mut want = hello_text();
    want.extend([usage(25, 15, Some(0), None), finished(FinishReason::Stop)]);
    assert_eq!(got, want);

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let sent = &requests[0];
    assert_eq!(
        (sent.method.as_str(), sent.path.as_str()),
        ("POST", "/v1/messages")
    );
    assert_eq!(sent.headers["x-api-key"], "test-key-123");
    assert_eq!(sent.headers["anthropic-version"], "2023-06-01");
    assert!(!sent.headers.contains_key("authorization"));
    assert_eq!(
        sent.body,
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 1024,
            "system": "You are Bosun's test agent.",
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "What is in src/lib.rs?"}]},
            ],
            "tools": [
                {"name": "read_file", "description": "Read a file in the workspace.",
                 "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
                {"name": "list_dir", "description": "List a directory.",
                 "input_schema": {"type": "object", "properties": {"path": {"type": "string"}, "depth": {"type": "integer"}}}},
            ],
            "stream": true,
        })
    );
}

#[tokio::test]
async fn max_tokens_is_always_sent() {
    let mut req = request("m");
    req.max_output_tokens = None;
    let body = bosun_models::Anthropic::request_body(&req);
    assert_eq!(
        body["max_tokens"],
        json!(bosun_models::anthropic::DEFAULT_MAX_TOKENS)
    );
}

#[tokio::test]
async fn one_tool_call_with_thinking() {
    let server = serve("tool_call").await;
    let provider = support::provider(KIND, &server);
    let got = events(&*provider, &request("m")).await;
    assert_eq!(
        got,
        vec![
            ModelEvent::Reasoning(ReasoningItem {
                format: ReasoningFormat::Anthropic,
                raw: thinking_block(),
            }),
            call(
                "toolu_01A09q90qw90lq917835lq9",
                "read_file",
                json!({"path": "src/lib.rs"})
            ),
            usage(88, 81, Some(0), None),
            finished(FinishReason::ToolCalls),
        ]
    );
}

#[tokio::test]
async fn parallel_tool_calls() {
    let server = serve("parallel_tool_calls").await;
    let provider = support::provider(KIND, &server);
    assert_eq!(
        events(&*provider, &request("m")).await,
        vec![
            text("Reading both."),
            call("toolu_A1", "read_file", json!({"path": "src/lib.rs"})),
            call("toolu_B2", "list_dir", json!({"path": "src", "depth": 2})),
            usage(120, 41, Some(0), None),
            finished(FinishReason::ToolCalls),
        ]
    );
}

#[tokio::test]
async fn arguments_split_across_many_chunks() {
    let server = TestServer::start([Reply::sse(sse(KIND, "split_arguments"))
        .in_pieces(7, Duration::ZERO)
        .into()])
    .await;
    let provider = support::provider(KIND, &server);
    assert_eq!(
        events(&*provider, &request("m")).await,
        vec![
            call("toolu_Long9", "write_file", long_arguments()),
            usage(95, 52, Some(0), None),
            finished(FinishReason::ToolCalls),
        ]
    );
}

#[tokio::test]
async fn retries_429_honouring_retry_after() {
    support::retries_after_429(KIND).await;
}

#[tokio::test]
async fn retries_500() {
    support::retries_after_500(KIND).await;
}

#[tokio::test]
async fn retries_529_overloaded() {
    let server = TestServer::start([
        Reply::status(
            529,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        ),
        Reply::sse(sse(KIND, "text")).into(),
    ])
    .await;
    let provider = support::provider(KIND, &server);
    let answer = support::answer(&*provider, &request("m")).await;
    assert_eq!(answer.text(), "Hello, world.");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn gives_up_after_max_attempts() {
    support::gives_up_after_max_attempts(KIND).await;
}

#[tokio::test]
async fn auth_error_is_not_retried() {
    support::auth_error_names_the_key_variable(KIND).await;
}

#[tokio::test]
async fn stream_cut_mid_way() {
    support::stream_cut_mid_way(KIND, 4, "`message_stop`").await;
}

#[tokio::test]
async fn malformed_chunk_is_a_protocol_error() {
    let server = serve("malformed").await;
    let provider = support::provider(KIND, &server);
    let items = run(&*provider, &request("m")).await;
    let line =
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"lo"}"#;
    let parse_error = serde_json::from_str::<Value>(line).unwrap_err();
    assert_eq!(
        items,
        vec![
            Ok(text("Hel")),
            Err(ModelError::Protocol {
                provider: "anthropic".into(),
                message: format!("invalid JSON: {parse_error}"),
                line: line.into(),
            }),
        ]
    );
}

#[tokio::test]
async fn overloaded_error_event_is_reported() {
    let body = format!(
        "{}event: error\ndata: {{\"type\": \"error\", \"error\": {{\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}}}}\n\n",
        sse(KIND, "cut")
    );
    let server = TestServer::start([Reply::sse(body).into()]).await;
    let provider = support::provider(KIND, &server);
    let items = run(&*provider, &request("m")).await;
    let error = items.last().unwrap().clone().unwrap_err();
    assert_eq!(
        error,
        ModelError::Api {
            provider: "anthropic".into(),
            code: "overloaded_error".into(),
            message: "Overloaded".into(),
        }
    );
    assert_eq!(
        error.to_string(),
        "anthropic reported an error in the stream: overloaded_error: Overloaded; the provider is failing or overloaded: run the step again"
    );
}

#[tokio::test]
async fn usage_accounting() {
    // Anthropic counts cache reads apart from input_tokens; Usage adds them in.
    let server = serve("usage").await;
    let provider = support::provider(KIND, &server);
    assert_eq!(
        events(&*provider, &request("m")).await,
        vec![
            text("Cached answer."),
            usage(2048, 512, Some(1920), None),
            finished(FinishReason::Length),
        ]
    );
}

#[tokio::test]
async fn follow_up_carries_thinking_tool_use_and_results() {
    let server = TestServer::start([
        Reply::sse(sse(KIND, "tool_call")).into(),
        Reply::sse(sse(KIND, "text")).into(),
    ])
    .await;
    let provider = support::provider(KIND, &server);
    let mut conversation = request("m");
    let answer = support::answer(&*provider, &conversation).await;
    conversation.messages.push(answer.into_message());
    conversation.messages.push(Message::tool_result(
        "toolu_01A09q90qw90lq917835lq9",
        r#"{"error":{"code":"not_found","message":"src/lib.rs does not exist"}}"#,
        true,
    ));
    conversation
        .messages
        .push(Message::user("Then check the README."));
    let second = support::answer(&*provider, &conversation).await;
    assert_eq!(second.text(), "Hello, world.");

    let bodies = server.bodies();
    assert_eq!(
        bodies[1]["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "What is in src/lib.rs?"}]},
            {"role": "assistant", "content": [
                thinking_block(),
                {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "read_file",
                 "input": {"path": "src/lib.rs"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01A09q90qw90lq917835lq9",
                 "content": "{\"error\":{\"code\":\"not_found\",\"message\":\"src/lib.rs does not exist\"}}",
                 "is_error": true},
                {"type": "text", "text": "Then check the README."},
            ]},
        ])
    );
}

#[tokio::test]
async fn cancellation_stops_a_slow_stream() {
    support::cancellation_stops_a_slow_stream(KIND).await;
}

#[tokio::test]
async fn idle_stream_times_out() {
    support::idle_stream_times_out(KIND).await;
}
