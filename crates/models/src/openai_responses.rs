//! The OpenAI Responses API, streaming: `POST {base_url}/responses`.
//!
//! Follows the OpenAI API reference for `/v1/responses` (stateless use: `store: false`, the
//! whole conversation sent as `input` items each time) and its streaming events
//! (`response.output_text.delta`, `response.output_item.added` / `.done`,
//! `response.function_call_arguments.delta` / `.done`, `response.completed`,
//! `response.incomplete`, `response.failed`, `error`). Reasoning items come back with
//! `encrypted_content` (asked for through `include`) and are sent back verbatim on the next step,
//! which is what lets a reasoning model keep its chain of thought across tool calls without the
//! server storing anything.

use std::collections::BTreeMap;

use reqwest::header::HeaderMap;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::error::truncate;
use crate::sse::SseEvent;
use crate::stream::{WireParser, parse_arguments, parse_json, shape_error, start};
use crate::transport::{Connection, Transport, bearer_headers};
use crate::{
    AssistantPart, FinishReason, Message, ModelError, ModelEvent, ModelRequest, ModelStream,
    Provider, ReasoningFormat, ReasoningItem, TokenUsage, ToolCall,
};

const PROVIDER: &str = "openai-responses";

/// An adapter for the Responses API.
#[derive(Debug, Clone)]
pub struct OpenAiResponses {
    transport: Transport,
    headers: HeaderMap,
    encrypted_reasoning: bool,
}

impl OpenAiResponses {
    /// An adapter for the server at `connection.base_url` (the API root that holds
    /// `/responses`, e.g. `https://api.openai.com/v1`). The key, if any, is sent as a bearer
    /// token.
    pub fn new(connection: Connection) -> Result<Self, ModelError> {
        let transport = Transport::new(PROVIDER, &connection)?;
        let headers = bearer_headers(PROVIDER, &connection)?;
        Ok(Self {
            transport,
            headers,
            encrypted_reasoning: true,
        })
    }

    /// Stops asking for `reasoning.encrypted_content`, which models without reasoning (the
    /// GPT-4 family) refuse.
    pub fn without_encrypted_reasoning(mut self) -> Self {
        self.encrypted_reasoning = false;
        self
    }

    /// The JSON body sent for `request` (by an adapter that asks for encrypted reasoning).
    pub fn request_body(request: &ModelRequest) -> Value {
        let mut input = Vec::new();
        for message in &request.messages {
            match message {
                Message::User { text, images } => {
                    let mut content: Vec<Value> = images
                        .iter()
                        .map(|image| match image.data_url() {
                            Some(url) => {
                                json!({"type": "input_image", "image_url": url, "detail": "auto"})
                            }
                            None => json!({
                                "type": "input_text",
                                "text": image.placeholder("its bytes are not stored"),
                            }),
                        })
                        .collect();
                    if !text.is_empty() || images.is_empty() {
                        content.push(json!({"type": "input_text", "text": text}));
                    }
                    input.push(json!({"type": "message", "role": "user", "content": content}));
                }
                Message::Assistant { parts } => assistant_items(parts, &mut input),
                Message::Tool(result) => input.push(json!({
                    "type": "function_call_output",
                    "call_id": result.call_id,
                    "output": result.content,
                })),
            }
        }
        let mut body = Map::new();
        body.insert("model".into(), json!(request.model));
        if let Some(system) = &request.system {
            body.insert("instructions".into(), json!(system));
        }
        body.insert("input".into(), Value::Array(input));
        if !request.tools.is_empty() {
            let tools = request
                .tools
                .iter()
                .map(|tool| {
                    json!({
                        "type": "function",
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": tool.input_schema,
                        // The Responses API makes functions strict by default, which refuses
                        // schemas with optional properties; Bosun's schemas are ordinary.
                        "strict": false,
                    })
                })
                .collect();
            body.insert("tools".into(), Value::Array(tools));
            body.insert("tool_choice".into(), json!("auto"));
            body.insert("parallel_tool_calls".into(), json!(true));
        }
        body.insert("stream".into(), json!(true));
        body.insert("store".into(), json!(false));
        body.insert("include".into(), json!(["reasoning.encrypted_content"]));
        if let Some(max) = request.max_output_tokens {
            body.insert("max_output_tokens".into(), json!(max));
        }
        Value::Object(body)
    }
}

fn assistant_items(parts: &[AssistantPart], input: &mut Vec<Value>) {
    let mut text = String::new();
    let flush = |text: &mut String, input: &mut Vec<Value>| {
        if !text.is_empty() {
            input.push(json!({
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": std::mem::take(text)}],
            }));
        }
    };
    for part in parts {
        match part {
            AssistantPart::Text { text: t } => text.push_str(t),
            AssistantPart::ToolCall(call) => {
                flush(&mut text, input);
                input.push(json!({
                    "type": "function_call",
                    "call_id": call.id,
                    "name": call.name,
                    "arguments": call.input.to_string(),
                }));
            }
            AssistantPart::Reasoning(item) => {
                flush(&mut text, input);
                if item.format == ReasoningFormat::OpenaiResponses {
                    input.push(item.raw.clone());
                }
            }
        }
    }
    flush(&mut text, input);
}

#[async_trait::async_trait]
impl Provider for OpenAiResponses {
    fn name(&self) -> &'static str {
        PROVIDER
    }

    async fn stream(
        &self,
        request: &ModelRequest,
        cancel: CancellationToken,
    ) -> Result<ModelStream, ModelError> {
        let mut body = Self::request_body(request);
        if !self.encrypted_reasoning
            && let Some(fields) = body.as_object_mut()
        {
            fields.remove("include");
        }
        start(
            &self.transport,
            "/responses",
            &self.headers,
            &body,
            ResponsesParser::default(),
            cancel,
        )
        .await
    }
}

/// A `function_call` output item being assembled.
#[derive(Debug, Default)]
struct PartialCall {
    call_id: String,
    name: String,
    arguments: String,
}

#[derive(Debug, Default)]
struct ResponsesParser {
    /// By `output_index`.
    calls: BTreeMap<u64, PartialCall>,
    emitted_calls: usize,
    done: bool,
}

fn text<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn usage(response: &Value) -> Option<TokenUsage> {
    let usage = response.get("usage").filter(|u| u.is_object())?;
    let count = |pointer: &str| usage.pointer(pointer).and_then(Value::as_u64);
    Some(TokenUsage {
        input_tokens: count("/input_tokens").unwrap_or(0),
        output_tokens: count("/output_tokens").unwrap_or(0),
        cached_input_tokens: count("/input_tokens_details/cached_tokens"),
        reasoning_tokens: count("/output_tokens_details/reasoning_tokens"),
    })
}

fn api_error(error: &Value, fallback: &str) -> ModelError {
    let code = match error.get("code").or_else(|| error.get("type")) {
        Some(Value::String(code)) => code.clone(),
        Some(Value::Null) | None => "error".to_owned(),
        Some(other) => other.to_string(),
    };
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or(fallback);
    ModelError::Api {
        provider: PROVIDER.to_owned(),
        code,
        message: truncate(message),
    }
}

impl ResponsesParser {
    fn output_index(event: &Value, data: &str) -> Result<u64, ModelError> {
        event
            .get("output_index")
            .and_then(Value::as_u64)
            .ok_or_else(|| shape_error(PROVIDER, "the event has no output_index", data))
    }

    fn item_done(
        &mut self,
        event: &Value,
        data: &str,
        out: &mut Vec<ModelEvent>,
    ) -> Result<(), ModelError> {
        let Some(item) = event.get("item").filter(|i| i.is_object()) else {
            return Err(shape_error(PROVIDER, "output_item.done has no item", data));
        };
        match text(item, "type") {
            "function_call" => {
                let partial = event
                    .get("output_index")
                    .and_then(Value::as_u64)
                    .and_then(|index| self.calls.remove(&index))
                    .unwrap_or_default();
                let pick = |full: &str, partial: String| {
                    if full.is_empty() {
                        partial
                    } else {
                        full.to_owned()
                    }
                };
                let call_id = pick(text(item, "call_id"), partial.call_id);
                let name = pick(text(item, "name"), partial.name);
                let arguments = pick(text(item, "arguments"), partial.arguments);
                if call_id.is_empty() || name.is_empty() {
                    return Err(shape_error(
                        PROVIDER,
                        "a function_call item has no call_id or name",
                        data,
                    ));
                }
                let arguments = parse_arguments(PROVIDER, &call_id, &name, &arguments)?;
                out.push(ModelEvent::ToolCall(ToolCall {
                    id: call_id,
                    name,
                    input: arguments,
                }));
                self.emitted_calls += 1;
            }
            "reasoning" => out.push(ModelEvent::Reasoning(ReasoningItem {
                format: ReasoningFormat::OpenaiResponses,
                raw: item.clone(),
            })),
            // Messages arrived as text deltas; other items (web search, …) are not Bosun's.
            _ => {}
        }
        Ok(())
    }
}

impl WireParser for ResponsesParser {
    fn event(&mut self, event: SseEvent, out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        let data = event.data.as_str();
        let value = parse_json(PROVIDER, data)?;
        let kind = value
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(event.event.as_str());
        match kind {
            "response.output_text.delta" => {
                let delta = text(&value, "delta");
                if !delta.is_empty() {
                    out.push(ModelEvent::TextDelta(delta.to_owned()));
                }
            }
            "response.output_item.added" => {
                let item = value.get("item").cloned().unwrap_or_default();
                if text(&item, "type") == "function_call" {
                    let index = Self::output_index(&value, data)?;
                    self.calls.insert(
                        index,
                        PartialCall {
                            call_id: text(&item, "call_id").to_owned(),
                            name: text(&item, "name").to_owned(),
                            arguments: text(&item, "arguments").to_owned(),
                        },
                    );
                }
            }
            "response.function_call_arguments.delta" => {
                let index = Self::output_index(&value, data)?;
                let call = self.calls.get_mut(&index).ok_or_else(|| {
                    shape_error(
                        PROVIDER,
                        "arguments for a function call never announced",
                        data,
                    )
                })?;
                call.arguments.push_str(text(&value, "delta"));
            }
            "response.function_call_arguments.done" => {
                let index = Self::output_index(&value, data)?;
                if let (Some(call), Some(arguments)) = (
                    self.calls.get_mut(&index),
                    value.get("arguments").and_then(Value::as_str),
                ) {
                    arguments.clone_into(&mut call.arguments);
                }
            }
            "response.output_item.done" => self.item_done(&value, data, out)?,
            "response.completed" | "response.incomplete" => {
                let response = value.get("response").cloned().unwrap_or_default();
                if let Some(usage) = usage(&response) {
                    out.push(ModelEvent::Usage(usage));
                }
                let reason = if kind == "response.completed" {
                    if self.emitted_calls > 0 {
                        FinishReason::ToolCalls
                    } else {
                        FinishReason::Stop
                    }
                } else {
                    match response
                        .pointer("/incomplete_details/reason")
                        .and_then(Value::as_str)
                    {
                        Some("max_output_tokens") => FinishReason::Length,
                        Some("content_filter") => FinishReason::ContentFilter,
                        Some(other) => FinishReason::Other(other.to_owned()),
                        None => FinishReason::Other("incomplete".to_owned()),
                    }
                };
                out.push(ModelEvent::Finished { reason });
                self.done = true;
            }
            "response.failed" => {
                let error = value
                    .pointer("/response/error")
                    .cloned()
                    .unwrap_or_default();
                return Err(api_error(&error, data));
            }
            "error" => {
                let error = value
                    .get("error")
                    .filter(|e| e.is_object())
                    .unwrap_or(&value);
                return Err(api_error(error, data));
            }
            // response.created, .in_progress, content_part.*, reasoning summaries, …
            _ => {}
        }
        Ok(())
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn end_of_body(&mut self, _out: &mut Vec<ModelEvent>) -> Result<Option<String>, ModelError> {
        Ok(Some("`response.completed`".to_owned()))
    }
}
