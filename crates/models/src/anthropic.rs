//! The Anthropic Messages API, streaming: `POST {base_url}/v1/messages`.
//!
//! Follows API version `2023-06-01` (sent as `anthropic-version`) and its streaming events:
//! `message_start`, `content_block_start` / `_delta` / `_stop` (text, `tool_use` with
//! `input_json_delta`, `thinking` with `signature_delta`, `redacted_thinking`), `message_delta`
//! (stop reason, output tokens), `message_stop`, `ping`, `error`. Tool results go back as
//! `tool_result` blocks of a user message; thinking blocks are handed back verbatim, as the API
//! requires when thinking is on and tools are used.

use std::collections::BTreeMap;

use reqwest::header::HeaderMap;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::error::truncate;
use crate::sse::SseEvent;
use crate::stream::{WireParser, parse_arguments, parse_json, shape_error, start};
use crate::transport::{Connection, Transport, header};
use crate::{
    AssistantPart, FinishReason, Image, Message, ModelError, ModelEvent, ModelRequest, ModelStream,
    Provider, ReasoningFormat, ReasoningItem, TokenUsage, ToolCall,
};

const PROVIDER: &str = "anthropic";

/// The API version this module speaks.
pub const API_VERSION: &str = "2023-06-01";

/// `max_tokens` sent when the request sets no cap (the API requires one).
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

/// An adapter for the Anthropic Messages API.
#[derive(Debug, Clone)]
pub struct Anthropic {
    transport: Transport,
    headers: HeaderMap,
}

impl Anthropic {
    /// An adapter for the server at `connection.base_url` (the root that holds `/v1/messages`,
    /// e.g. `https://api.anthropic.com`). The key, if any, is sent as `x-api-key`.
    pub fn new(connection: Connection) -> Result<Self, ModelError> {
        let transport = Transport::new(PROVIDER, &connection)?;
        let mut headers = HeaderMap::new();
        let (name, value) = header(PROVIDER, "anthropic-version", API_VERSION)?;
        headers.insert(name, value);
        if let Some(key) = &connection.api_key {
            let (name, value) = header(PROVIDER, "x-api-key", key.expose())?;
            headers.insert(name, value);
        }
        Ok(Self { transport, headers })
    }

    /// The JSON body sent for `request`.
    pub fn request_body(request: &ModelRequest) -> Value {
        // The API wants user and assistant turns to alternate: consecutive user-side entries
        // (tool results, then perhaps more text) become one user message.
        let mut messages: Vec<(&str, Vec<Value>)> = Vec::new();
        let mut push = |role: &'static str, block: Value| match messages.last_mut() {
            Some((last, blocks)) if *last == role => blocks.push(block),
            _ => messages.push((role, vec![block])),
        };
        for message in &request.messages {
            match message {
                Message::User { text, images } => {
                    // Images before the text, as the API's guide advises.
                    for image in images {
                        push("user", image_block(image));
                    }
                    // The API refuses empty text blocks; images alone are a whole message.
                    if !text.is_empty() || images.is_empty() {
                        push("user", json!({"type": "text", "text": text}));
                    }
                }
                Message::Tool(result) => push(
                    "user",
                    json!({
                        "type": "tool_result",
                        "tool_use_id": result.call_id,
                        "content": result.content,
                        "is_error": result.is_error,
                    }),
                ),
                Message::Assistant { parts } => {
                    for part in parts {
                        match part {
                            // The API refuses empty text blocks.
                            AssistantPart::Text { text } if text.is_empty() => {}
                            AssistantPart::Text { text } => {
                                push("assistant", json!({"type": "text", "text": text}));
                            }
                            AssistantPart::ToolCall(call) => push(
                                "assistant",
                                json!({
                                    "type": "tool_use",
                                    "id": call.id,
                                    "name": call.name,
                                    "input": call.input,
                                }),
                            ),
                            AssistantPart::Reasoning(item) => {
                                if item.format == ReasoningFormat::Anthropic {
                                    push("assistant", item.raw.clone());
                                }
                            }
                        }
                    }
                }
            }
        }
        let messages: Vec<Value> = messages
            .into_iter()
            .map(|(role, content)| json!({"role": role, "content": content}))
            .collect();
        let mut body = Map::new();
        body.insert("model".into(), json!(request.model));
        body.insert(
            "max_tokens".into(),
            json!(request.max_output_tokens.unwrap_or(DEFAULT_MAX_TOKENS)),
        );
        if let Some(system) = &request.system {
            body.insert("system".into(), json!(system));
        }
        body.insert("messages".into(), Value::Array(messages));
        if !request.tools.is_empty() {
            let tools = request
                .tools
                .iter()
                .map(|tool| {
                    json!({
                        "name": tool.name,
                        "description": tool.description,
                        "input_schema": tool.input_schema,
                    })
                })
                .collect();
            body.insert("tools".into(), Value::Array(tools));
        }
        body.insert("stream".into(), json!(true));
        Value::Object(body)
    }
}

/// An `image` content block with a base64 source, or a text note when the bytes are not held.
fn image_block(image: &Image) -> Value {
    match image.base64() {
        Some(data) => json!({
            "type": "image",
            "source": {"type": "base64", "media_type": image.media_type.media_type(), "data": data},
        }),
        None => json!({"type": "text", "text": image.placeholder("its bytes are not stored")}),
    }
}

#[async_trait::async_trait]
impl Provider for Anthropic {
    fn name(&self) -> &'static str {
        PROVIDER
    }

    async fn stream(
        &self,
        request: &ModelRequest,
        cancel: CancellationToken,
    ) -> Result<ModelStream, ModelError> {
        let body = Self::request_body(request);
        start(
            &self.transport,
            "/v1/messages",
            &self.headers,
            &body,
            MessagesParser::default(),
            cancel,
        )
        .await
    }
}

/// A content block being assembled.
#[derive(Debug)]
enum Block {
    Text,
    ToolUse {
        id: String,
        name: String,
        json: String,
    },
    Thinking {
        thinking: String,
        signature: String,
    },
    /// Kept verbatim (`redacted_thinking`).
    Opaque(Value),
    /// Server tools' blocks and whatever comes next; not Bosun's.
    Other,
}

#[derive(Debug, Default)]
struct MessagesParser {
    /// By the block's `index`.
    blocks: BTreeMap<u64, Block>,
    input_tokens: u64,
    cache_read: Option<u64>,
    cache_write: u64,
    output_tokens: u64,
    stop_reason: Option<String>,
    done: bool,
}

fn text<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

impl MessagesParser {
    fn read_usage(&mut self, usage: Option<&Value>) {
        let Some(usage) = usage else { return };
        let count = |key: &str| usage.get(key).and_then(Value::as_u64);
        if let Some(n) = count("input_tokens") {
            self.input_tokens = n;
        }
        if let Some(n) = count("cache_read_input_tokens") {
            self.cache_read = Some(n);
        }
        if let Some(n) = count("cache_creation_input_tokens") {
            self.cache_write = n;
        }
        if let Some(n) = count("output_tokens") {
            // Cumulative: `message_delta` repeats the running total.
            self.output_tokens = n;
        }
    }

    fn index(value: &Value, data: &str) -> Result<u64, ModelError> {
        value
            .get("index")
            .and_then(Value::as_u64)
            .ok_or_else(|| shape_error(PROVIDER, "the event has no block index", data))
    }

    fn finish(&mut self, out: &mut Vec<ModelEvent>) {
        out.push(ModelEvent::Usage(TokenUsage {
            input_tokens: self.input_tokens + self.cache_read.unwrap_or(0) + self.cache_write,
            output_tokens: self.output_tokens,
            cached_input_tokens: self.cache_read,
            reasoning_tokens: None,
        }));
        let reason = match self.stop_reason.as_deref() {
            Some("end_turn" | "stop_sequence") | None => FinishReason::Stop,
            Some("max_tokens" | "model_context_window_exceeded") => FinishReason::Length,
            Some("tool_use") => FinishReason::ToolCalls,
            Some("refusal") => FinishReason::ContentFilter,
            Some(other) => FinishReason::Other(other.to_owned()),
        };
        out.push(ModelEvent::Finished { reason });
        self.done = true;
    }
}

impl WireParser for MessagesParser {
    fn event(&mut self, event: SseEvent, out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        let data = event.data.as_str();
        let value = parse_json(PROVIDER, data)?;
        let kind = value
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(event.event.as_str());
        match kind {
            "message_start" => self.read_usage(value.pointer("/message/usage")),
            "content_block_start" => {
                let index = Self::index(&value, data)?;
                let block = value.get("content_block").cloned().unwrap_or_default();
                let block = match text(&block, "type") {
                    "text" => {
                        let initial = text(&block, "text");
                        if !initial.is_empty() {
                            out.push(ModelEvent::TextDelta(initial.to_owned()));
                        }
                        Block::Text
                    }
                    "tool_use" => Block::ToolUse {
                        id: text(&block, "id").to_owned(),
                        name: text(&block, "name").to_owned(),
                        json: String::new(),
                    },
                    "thinking" => Block::Thinking {
                        thinking: text(&block, "thinking").to_owned(),
                        signature: text(&block, "signature").to_owned(),
                    },
                    "redacted_thinking" => Block::Opaque(block),
                    _ => Block::Other,
                };
                self.blocks.insert(index, block);
            }
            "content_block_delta" => {
                let index = Self::index(&value, data)?;
                let delta = value.get("delta").cloned().unwrap_or_default();
                let block = self.blocks.get_mut(&index).ok_or_else(|| {
                    shape_error(PROVIDER, "a delta for a block that never started", data)
                })?;
                match (text(&delta, "type"), block) {
                    ("text_delta", _) => {
                        let piece = text(&delta, "text");
                        if !piece.is_empty() {
                            out.push(ModelEvent::TextDelta(piece.to_owned()));
                        }
                    }
                    ("input_json_delta", Block::ToolUse { json, .. }) => {
                        json.push_str(text(&delta, "partial_json"));
                    }
                    ("input_json_delta", _) => {
                        return Err(shape_error(
                            PROVIDER,
                            "input_json_delta for a block that is not tool_use",
                            data,
                        ));
                    }
                    ("thinking_delta", Block::Thinking { thinking, .. }) => {
                        thinking.push_str(text(&delta, "thinking"));
                    }
                    ("signature_delta", Block::Thinking { signature, .. }) => {
                        signature.push_str(text(&delta, "signature"));
                    }
                    // citations_delta and deltas of blocks Bosun does not keep.
                    _ => {}
                }
            }
            "content_block_stop" => {
                let index = Self::index(&value, data)?;
                match self.blocks.remove(&index) {
                    Some(Block::ToolUse { id, name, json }) => {
                        if id.is_empty() || name.is_empty() {
                            return Err(shape_error(
                                PROVIDER,
                                "a tool_use block has no id or name",
                                data,
                            ));
                        }
                        let arguments = parse_arguments(PROVIDER, &id, &name, &json)?;
                        out.push(ModelEvent::ToolCall(ToolCall {
                            id,
                            name,
                            input: arguments,
                        }));
                    }
                    Some(Block::Thinking {
                        thinking,
                        signature,
                    }) => out.push(ModelEvent::Reasoning(ReasoningItem {
                        format: ReasoningFormat::Anthropic,
                        raw: json!({"type": "thinking", "thinking": thinking, "signature": signature}),
                    })),
                    Some(Block::Opaque(raw)) => out.push(ModelEvent::Reasoning(ReasoningItem {
                        format: ReasoningFormat::Anthropic,
                        raw,
                    })),
                    Some(Block::Text | Block::Other) | None => {}
                }
            }
            "message_delta" => {
                if let Some(reason) = value.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(reason.to_owned());
                }
                self.read_usage(value.get("usage"));
            }
            "message_stop" => self.finish(out),
            "error" => {
                let error = value.get("error").cloned().unwrap_or_default();
                return Err(ModelError::Api {
                    provider: PROVIDER.to_owned(),
                    code: match text(&error, "type") {
                        "" => "error".to_owned(),
                        code => code.to_owned(),
                    },
                    message: truncate(match text(&error, "message") {
                        "" => data,
                        message => message,
                    }),
                });
            }
            // ping, and event types added after this revision.
            _ => {}
        }
        Ok(())
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn end_of_body(&mut self, out: &mut Vec<ModelEvent>) -> Result<Option<String>, ModelError> {
        if self.stop_reason.is_some() && self.blocks.is_empty() {
            // `message_delta` carried the stop reason; only `message_stop` is missing.
            self.finish(out);
            return Ok(None);
        }
        Ok(Some("`message_stop`".to_owned()))
    }
}
