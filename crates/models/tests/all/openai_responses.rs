//! The Responses API against recorded-shape `response.*` event streams.

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

const KIND: ProviderKind = ProviderKind::OpenaiResponses;

async fn serve(fixture: &str) -> TestServer {
    TestServer::start([Reply::sse(sse(KIND, fixture)).into()]).await
}

fn reasoning_item() -> Value {
    json!({
        "id": "rs_68a1b2",
        "type": "reasoning",
        "encrypted_content": "gAAAAABo-opaque-ciphertext==",
        "summary": [{"type": "summary_text", "text": "Need the file first."}],
    })
}

fn expected_tools() -> Value {
    json!([
        {"type": "function", "name": "read_file", "description": "Read a file in the workspace.",
         "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
         "strict": false},
        {"type": "function", "name": "list_dir", "description": "List a directory.",
         "parameters": {"type": "object", "properties": {"path": {"type": "string"}, "depth": {"type": "integer"}}},
         "strict": false},
    ])
}

#[tokio::test]
async fn text_only() {
    let server = serve("text").await;
    let provider = support::provider(KIND, &server);
    let got = events(&*provider, &request("gpt-5-mini")).await;
    let mut want = hello_text();
    want.extend([usage(21, 4, Some(0), Some(0)), finished(FinishReason::Stop)]);
    assert_eq!(got, want);

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let sent = &requests[0];
    assert_eq!(
        (sent.method.as_str(), sent.path.as_str()),
        ("POST", "/responses")
    );
    assert_eq!(sent.headers["authorization"], "Bearer test-key-123");
    assert_eq!(sent.headers["accept"], "text/event-stream");
    assert_eq!(
        sent.body,
        json!({
            "model": "gpt-5-mini",
            "instructions": "You are Bosun's test agent.",
            "input": [
                {"type": "message", "role": "user",
                 "content": [{"type": "input_text", "text": "What is in src/lib.rs?"}]},
            ],
            "tools": expected_tools(),
            "tool_choice": "auto",
            "parallel_tool_calls": true,
            "stream": true,
            "store": false,
            "include": ["reasoning.encrypted_content"],
            "max_output_tokens": 1024,
        })
    );
}

#[tokio::test]
async fn one_tool_call_with_reasoning() {
    let server = serve("tool_call").await;
    let provider = support::provider(KIND, &server);
    let got = events(&*provider, &request("m")).await;
    assert_eq!(
        got,
        vec![
            ModelEvent::Reasoning(ReasoningItem {
                format: ReasoningFormat::OpenaiResponses,
                raw: reasoning_item(),
            }),
            call("call_Rk3vQ1", "read_file", json!({"path": "src/lib.rs"})),
            usage(88, 81, Some(0), Some(64)),
            finished(FinishReason::ToolCalls),
        ]
    );
    let ModelEvent::Reasoning(item) = &got[0] else {
        unreachable!()
    };
    assert_eq!(item.summary_text(), "Need the file first.");
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
async fn arguments_assembled_from_deltas_when_the_item_omits_them() {
    // Some compatible servers send only the deltas; the done item carries no arguments.
    let body = sse(KIND, "split_arguments")
        .lines()
        .filter(|line| !line.contains("function_call_arguments.done"))
        .map(|line| {
            if line.contains("\"type\":\"response.output_item.done\"") {
                let mut event: Value =
                    serde_json::from_str(line.trim_start_matches("data: ")).unwrap();
                event["item"]["arguments"] = json!("");
                format!("data: {event}")
            } else {
                line.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let server = TestServer::start([Reply::sse(body).into()]).await;
    let provider = support::provider(KIND, &server);
    let got = events(&*provider, &request("m")).await;
    assert_eq!(got[0], call("call_Long9", "write_file", long_arguments()));
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
async fn stream_cut_mid_way() {
    support::stream_cut_mid_way(KIND, 5, "`response.completed`").await;
}

#[tokio::test]
async fn malformed_chunk_is_a_protocol_error() {
    let server = serve("malformed").await;
    let provider = support::provider(KIND, &server);
    let items = run(&*provider, &request("m")).await;
    let line = r#"{"type":"response.output_text.delta","sequence_number":5,"item_id":"msg_68a1c0","output_index":0,"delta":"lo""#;
    let parse_error = serde_json::from_str::<Value>(line).unwrap_err();
    assert_eq!(
        items,
        vec![
            Ok(text("Hel")),
            Err(ModelError::Protocol {
                provider: "openai-responses".into(),
                message: format!("invalid JSON: {parse_error}"),
                line: line.into(),
            }),
        ]
    );
}

#[tokio::test]
async fn failed_response_is_reported() {
    let failed = json!({
        "type": "response.failed",
        "sequence_number": 9,
        "response": {
            "id": "resp_68a1", "object": "response", "status": "failed",
            "error": {"code": "server_error", "message": "The model failed to generate a response."},
            "output": [], "usage": null,
        },
    });
    let body = format!(
        "{}event: response.failed\ndata: {failed}\n\n",
        sse(KIND, "cut")
    );
    let server = TestServer::start([Reply::sse(body).into()]).await;
    let provider = support::provider(KIND, &server);
    let items = run(&*provider, &request("m")).await;
    let error = items.last().unwrap().clone().unwrap_err();
    assert_eq!(
        error,
        ModelError::Api {
            provider: "openai-responses".into(),
            code: "server_error".into(),
            message: "The model failed to generate a response.".into(),
        }
    );
    assert!(error.is_retryable());
}

#[tokio::test]
async fn error_event_is_reported() {
    let body = "event: error\ndata: {\"type\":\"error\",\"sequence_number\":0,\"code\":\"context_length_exceeded\",\"message\":\"Your input exceeds the context window of this model.\",\"param\":\"input\"}\n\n";
    let server = TestServer::start([Reply::sse(body).into()]).await;
    let provider = support::provider(KIND, &server);
    let items = run(&*provider, &request("m")).await;
    assert_eq!(
        items,
        vec![Err(ModelError::Api {
            provider: "openai-responses".into(),
            code: "context_length_exceeded".into(),
            message: "Your input exceeds the context window of this model.".into(),
        })]
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
async fn follow_up_carries_reasoning_calls_and_outputs() {
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
        "call_Rk3vQ1",
        r#"{"content":"pub fn hello() {}"}"#,
        false,
    ));
    let second = support::answer(&*provider, &conversation).await;
    assert_eq!(second.text(), "Hello, world.");

    let bodies = server.bodies();
    assert_eq!(
        bodies[1]["input"],
        json!([
            {"type": "message", "role": "user",
             "content": [{"type": "input_text", "text": "What is in src/lib.rs?"}]},
            reasoning_item(),
            {"type": "function_call", "call_id": "call_Rk3vQ1", "name": "read_file",
             "arguments": "{\"path\":\"src/lib.rs\"}"},
            {"type": "function_call_output", "call_id": "call_Rk3vQ1",
             "output": "{\"content\":\"pub fn hello() {}\"}"},
        ])
    );
    assert_eq!(bodies[1]["store"], json!(false));
}

#[tokio::test]
async fn assistant_text_goes_back_as_output_text() {
    let mut next = request("m");
    next.messages.push(Message::assistant(vec![
        bosun_models::AssistantPart::Text {
            text: "Reading ".into(),
        },
        bosun_models::AssistantPart::Text {
            text: "both.".into(),
        },
    ]));
    next.messages.push(Message::user("Go on."));
    let body = bosun_models::OpenAiResponses::request_body(&next);
    assert_eq!(
        body["input"],
        json!([
            {"type": "message", "role": "user",
             "content": [{"type": "input_text", "text": "What is in src/lib.rs?"}]},
            {"type": "message", "role": "assistant",
             "content": [{"type": "output_text", "text": "Reading both."}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Go on."}]},
        ])
    );
}

#[tokio::test]
async fn cancellation_stops_a_slow_stream() {
    support::cancellation_stops_a_slow_stream(KIND).await;
}

#[tokio::test]
async fn encrypted_reasoning_can_be_left_out() {
    let server = serve("text").await;
    let provider = bosun_models::OpenAiResponses::new(support::connection(&server))
        .unwrap()
        .without_encrypted_reasoning();
    let got = events(&provider, &request("gpt-4.1")).await;
    assert_eq!(got.last(), Some(&finished(FinishReason::Stop)));
    let body = &server.bodies()[0];
    assert_eq!(body.get("include"), None);
    assert_eq!(body["store"], json!(false));
}
