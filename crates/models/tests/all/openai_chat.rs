//! Chat Completions against recorded-shape `chat.completion.chunk` streams.

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

const KIND: ProviderKind = ProviderKind::OpenaiChat;

async fn serve(fixture: &str) -> TestServer {
    TestServer::start([Reply::sse(sse(KIND, fixture)).into()]).await
}

fn expected_tools() -> Value {
    json!([
        {"type": "function", "function": {
            "name": "read_file",
            "description": "Read a file in the workspace.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        }},
        {"type": "function", "function": {
            "name": "list_dir",
            "description": "List a directory.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}, "depth": {"type": "integer"}}},
        }},
    ])
}

#[tokio::test]
async fn text_only() {
    let server = serve("text").await;
    let provider = support::provider(KIND, &server);
    let got = events(&*provider, &request("gpt-4.1-mini")).await;
    let mut want = hello_text();
    want.extend([usage(21, 4, Some(0), Some(0)), finished(FinishReason::Stop)]);
    assert_eq!(got, want);

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let sent = &requests[0];
    assert_eq!(
        (sent.method.as_str(), sent.path.as_str()),
        ("POST", "/chat/completions")
    );
    assert_eq!(sent.headers["authorization"], "Bearer test-key-123");
    assert_eq!(sent.headers["content-type"], "application/json");
    assert_eq!(sent.headers["accept"], "text/event-stream");
    assert_eq!(
        sent.body,
        json!({
            "model": "gpt-4.1-mini",
            "messages": [
                {"role": "system", "content": "You are Bosun's test agent."},
                {"role": "user", "content": "What is in src/lib.rs?"},
            ],
            "stream": true,
            "stream_options": {"include_usage": true},
            "tools": expected_tools(),
            "max_tokens": 1024,
        })
    );
}

fn reasoning(text: &str) -> ModelEvent {
    ModelEvent::Reasoning(ReasoningItem {
        format: ReasoningFormat::OpenaiChat,
        raw: json!({ "text": text }),
    })
}

#[tokio::test]
async fn reasoning_deltas_become_one_item_before_the_text() {
    let server = serve("reasoning").await;
    let provider = support::provider(KIND, &server);
    assert_eq!(
        events(&*provider, &request("m")).await,
        vec![
            reasoning("The user asks about src/lib.rs."),
            text("Hello"),
            text("."),
            finished(FinishReason::Stop),
        ]
    );
}

#[tokio::test]
async fn ollama_reasoning_before_a_tool_call_is_one_item_and_never_sent_back() {
    let server = TestServer::start([
        Reply::sse(sse(KIND, "reasoning_tool_call")).into(),
        Reply::sse(sse(KIND, "text")).into(),
    ])
    .await;
    let provider = support::provider(KIND, &server);
    let got = events(&*provider, &request("m")).await;
    assert_eq!(
        got,
        vec![
            reasoning("Read the file first."),
            call("call_x1", "read_file", json!({"path": "src/lib.rs"})),
            finished(FinishReason::ToolCalls),
        ]
    );
    let ModelEvent::Reasoning(item) = &got[0] else {
        unreachable!()
    };
    assert_eq!(item.summary_text(), "Read the file first.");
    // The next step's request carries the assistant turn without the reasoning.
    let mut next = request("m");
    next.messages.push(Message::Assistant {
        parts: vec![
            bosun_models::AssistantPart::Reasoning(item.clone()),
            bosun_models::AssistantPart::ToolCall(bosun_models::ToolCall {
                id: "call_x1".into(),
                name: "read_file".into(),
                input: json!({"path": "src/lib.rs"}),
            }),
        ],
    });
    let _ = events(&*provider, &next).await;
    let sent = server.requests()[1].body.to_string();
    assert!(!sent.contains("Read the file first."), "{sent}");
}

#[tokio::test]
async fn one_tool_call() {
    let server = serve("tool_call").await;
    let provider = support::provider(KIND, &server);
    assert_eq!(
        events(&*provider, &request("m")).await,
        vec![
            call("call_Rk3vQ1", "read_file", json!({"path": "src/lib.rs"})),
            usage(88, 17, Some(0), Some(0)),
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
            call("call_A1", "read_file", json!({"path": "src/lib.rs"})),
            call("call_B2", "list_dir", json!({"path": "src", "depth": 2})),
            usage(120, 41, Some(0), Some(0)),
            finished(FinishReason::ToolCalls),
        ]
    );
}

#[tokio::test]
async fn arguments_split_across_many_chunks() {
    // Two characters of arguments per event, and the bytes written seven at a time, so SSE
    // lines and UTF-8 characters are split too.
    let server = TestServer::start([Reply::sse(sse(KIND, "split_arguments"))
        .in_pieces(7, Duration::ZERO)
        .into()])
    .await;
    let provider = support::provider(KIND, &server);
    assert_eq!(
        events(&*provider, &request("m")).await,
        vec![
            call("call_Long9", "write_file", long_arguments()),
            usage(95, 52, Some(0), Some(0)),
            finished(FinishReason::ToolCalls),
        ]
    );
}

#[tokio::test]
async fn whole_tool_calls_without_index_or_done_line() {
    // Older Ollama: whole calls without `index`, `finish_reason: "stop"`, no `[DONE]`.
    let server = TestServer::start([Reply::sse(sse(KIND, "whole_tool_calls"))
        .close_delimited()
        .into()])
    .await;
    let provider = support::provider(KIND, &server);
    assert_eq!(
        events(&*provider, &request("qwen3:8b")).await,
        vec![
            call("call_x1", "read_file", json!({"path": "src/lib.rs"})),
            call("call_x2", "list_dir", json!({"path": "src", "depth": 2})),
            usage(64, 30, None, None),
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
async fn gives_up_after_max_attempts() {
    support::gives_up_after_max_attempts(KIND).await;
}

#[tokio::test]
async fn auth_error_is_not_retried() {
    support::auth_error_names_the_key_variable(KIND).await;
}

#[tokio::test]
async fn insufficient_quota_is_not_retried() {
    let server = TestServer::start([Reply::status(
        429,
        r#"{"error":{"message":"You exceeded your current quota.","type":"insufficient_quota","code":"insufficient_quota"}}"#,
    )])
    .await;
    let provider = support::provider(KIND, &server);
    let error = support::open_error(&*provider, &request("m")).await;
    assert_eq!(
        error.to_string(),
        "openai-chat answered HTTP 429: You exceeded your current quota.; the account's quota is exhausted: check billing or use another model"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn stream_cut_mid_way() {
    support::stream_cut_mid_way(KIND, 2, "a finish_reason or `data: [DONE]`").await;
}

#[tokio::test]
async fn malformed_chunk_is_a_protocol_error() {
    let server = serve("malformed").await;
    let provider = support::provider(KIND, &server);
    let items = run(&*provider, &request("m")).await;
    let line = r#"{"id":"chatcmpl-C7x1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"lo"}"#;
    let parse_error = serde_json::from_str::<Value>(line).unwrap_err();
    assert_eq!(
        items,
        vec![
            Ok(text("Hel")),
            Err(ModelError::Protocol {
                provider: "openai-chat".into(),
                message: format!("invalid JSON: {parse_error}"),
                line: line.into(),
            }),
        ]
    );
}

#[tokio::test]
async fn invalid_tool_arguments_are_a_clear_error() {
    let server = serve("bad_arguments").await;
    let provider = support::provider(KIND, &server);
    let items = run(&*provider, &request("m")).await;
    assert_eq!(items.len(), 1, "{items:?}");
    let error = items[0].clone().unwrap_err();
    assert_eq!(
        error,
        ModelError::ToolArguments {
            provider: "openai-chat".into(),
            tool: "read_file".into(),
            call_id: "call_Bad1".into(),
            message: "EOF while parsing an object at line 1 column 21".into(),
            arguments: r#"{"path": "src/lib.rs""#.into(),
        }
    );
}

#[tokio::test]
async fn error_object_mid_stream_is_reported() {
    let body = format!(
        "{}data: {}\n\n",
        sse(KIND, "cut"),
        json!({"error": {"message": "Upstream provider overloaded", "code": 502}})
    );
    let server = TestServer::start([Reply::sse(body).into()]).await;
    let provider = support::provider(KIND, &server);
    let items = run(&*provider, &request("m")).await;
    assert_eq!(
        items.last().unwrap().clone().unwrap_err(),
        ModelError::Api {
            provider: "openai-chat".into(),
            code: "502".into(),
            message: "Upstream provider overloaded".into(),
        }
    );
}

#[tokio::test]
async fn a_json_answer_instead_of_a_stream_is_explained() {
    let server = TestServer::start([Reply::status(
        200,
        r#"{"id":"chatcmpl-1","object":"chat.completion","choices":[]}"#,
    )])
    .await;
    let provider = support::provider(KIND, &server);
    let error = support::open_error(&*provider, &request("m")).await;
    assert!(
        matches!(&error, ModelError::Protocol { message, .. } if message.contains("the server does not stream")),
        "{error:?}"
    );
}

#[tokio::test]
async fn usage_accounting() {
    let server = serve("usage").await;
    let provider = support::provider(KIND, &server);
    assert_eq!(
        events(&*provider, &request("m")).await,
        vec![
            text("Cached answer."),
            usage(2048, 512, Some(1920), Some(448)),
            finished(FinishReason::Length),
        ]
    );
}

#[tokio::test]
async fn follow_up_carries_tool_calls_and_results() {
    let server = TestServer::start([
        Reply::sse(sse(KIND, "parallel_tool_calls")).into(),
        Reply::sse(sse(KIND, "text")).into(),
    ])
    .await;
    let provider = support::provider(KIND, &server);
    let mut conversation = request("m");
    let answer = support::answer(&*provider, &conversation).await;
    conversation.messages.push(answer.into_message());
    conversation.messages.push(Message::tool_result(
        "call_A1",
        r#"{"content":"pub fn hello() {}"}"#,
        false,
    ));
    conversation.messages.push(Message::tool_result(
        "call_B2",
        r#"{"error":{"code":"not_found","message":"src does not exist"}}"#,
        true,
    ));
    let second = support::answer(&*provider, &conversation).await;
    assert_eq!(second.text(), "Hello, world.");

    let bodies = server.bodies();
    assert_eq!(
        bodies[1]["messages"],
        json!([
            {"role": "system", "content": "You are Bosun's test agent."},
            {"role": "user", "content": "What is in src/lib.rs?"},
            {"role": "assistant", "content": "Reading both.", "tool_calls": [
                {"id": "call_A1", "type": "function",
                 "function": {"name": "read_file", "arguments": "{\"path\":\"src/lib.rs\"}"}},
                {"id": "call_B2", "type": "function",
                 "function": {"name": "list_dir", "arguments": "{\"path\":\"src\",\"depth\":2}"}},
            ]},
            {"role": "tool", "tool_call_id": "call_A1", "content": "{\"content\":\"pub fn hello() {}\"}"},
            {"role": "tool", "tool_call_id": "call_B2",
             "content": "{\"error\":{\"code\":\"not_found\",\"message\":\"src does not exist\"}}"},
        ])
    );
    assert_eq!(bodies[1]["tools"], expected_tools());
}

#[tokio::test]
async fn assistant_turn_with_only_tool_calls_sends_null_content() {
    let server = serve("tool_call").await;
    let provider = support::provider(KIND, &server);
    let answer = support::answer(&*provider, &request("m")).await;
    let mut next = request("m");
    next.messages.push(answer.into_message());
    let body = bosun_models::OpenAiChat::request_body(&next);
    assert_eq!(
        body["messages"][2],
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_Rk3vQ1", "type": "function",
             "function": {"name": "read_file", "arguments": "{\"path\":\"src/lib.rs\"}"}},
        ]})
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

#[tokio::test]
async fn no_key_sends_no_authorization() {
    let server = serve("text").await;
    let connection = bosun_models::Connection::new(&server.url).retry(support::fast_retry());
    let provider = support::provider_with(KIND, connection);
    let got = events(&*provider, &request("m")).await;
    assert!(matches!(got.last(), Some(ModelEvent::Finished { .. })));
    assert!(!server.requests()[0].headers.contains_key("authorization"));
}
