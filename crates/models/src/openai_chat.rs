//! OpenAI-compatible Chat Completions, streaming: `POST {base_url}/chat/completions`.
//!
//! Follows the OpenAI API reference for `/v1/chat/completions` with `stream: true` (chunk
//! object `chat.completion.chunk`, tool calls as `tools[].type = "function"`, usage in a last
//! chunk with empty `choices` when `stream_options.include_usage` is set, `data: [DONE]` to
//! end), restricted to the fields that Ollama, vLLM, llama.cpp's server, LM Studio and
//! OpenRouter also accept: no `parallel_tool_calls`, no `store`, and `max_tokens` rather than
//! OpenAI's newer `max_completion_tokens`. Reasoning text some servers stream beside the answer
//! (`delta.reasoning_content` from vLLM and DeepSeek, `delta.reasoning` from Ollama and
//! OpenRouter) becomes one [`ReasoningItem`] per block, to show; it is never sent back.

use std::collections::BTreeMap;

use reqwest::header::HeaderMap;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::stream::{WireParser, parse_arguments, parse_json, shape_error, start};
use crate::transport::{Connection, Transport, bearer_headers};
use crate::{
    AssistantPart, FinishReason, Message, ModelError, ModelEvent, ModelRequest, ModelStream,
    Provider, ReasoningFormat, ReasoningItem, TokenUsage, ToolCall,
};

const PROVIDER: &str = "openai-chat";

/// An adapter for OpenAI-compatible Chat Completions servers.
#[derive(Debug, Clone)]
pub struct OpenAiChat {
    transport: Transport,
    headers: HeaderMap,
}

impl OpenAiChat {
    /// An adapter for the server at `connection.base_url` (the API root that holds
    /// `/chat/completions`, e.g. `https://api.openai.com/v1`). The key, if any, is sent as a
    /// bearer token.
    pub fn new(connection: Connection) -> Result<Self, ModelError> {
        let transport = Transport::new(PROVIDER, &connection)?;
        let headers = bearer_headers(PROVIDER, &connection)?;
        Ok(Self { transport, headers })
    }

    /// The JSON body sent for `request`.
    pub fn request_body(request: &ModelRequest) -> Value {
        let mut messages = Vec::new();
        if let Some(system) = &request.system {
            messages.push(json!({"role": "system", "content": system}));
        }
        for message in &request.messages {
            match message {
                Message::User { text, images } if images.is_empty() => {
                    messages.push(json!({"role": "user", "content": text}));
                }
                Message::User { text, images } => {
                    // Content parts: the images as `data:` URLs, then the text.
                    let mut content: Vec<Value> = images
                        .iter()
                        .map(|image| match image.data_url() {
                            Some(url) => json!({"type": "image_url", "image_url": {"url": url}}),
                            None => json!({
                                "type": "text",
                                "text": image.placeholder("its bytes are not stored"),
                            }),
                        })
                        .collect();
                    if !text.is_empty() {
                        content.push(json!({"type": "text", "text": text}));
                    }
                    messages.push(json!({"role": "user", "content": content}));
                }
                Message::Assistant { parts } => messages.push(assistant_message(parts)),
                Message::Tool(result) => messages.push(json!({
                    "role": "tool",
                    "tool_call_id": result.call_id,
                    "content": result.content,
                })),
            }
        }
        let mut body = Map::new();
        body.insert("model".into(), json!(request.model));
        body.insert("messages".into(), Value::Array(messages));
        body.insert("stream".into(), json!(true));
        body.insert("stream_options".into(), json!({"include_usage": true}));
        if !request.tools.is_empty() {
            let tools = request
                .tools
                .iter()
                .map(|tool| {
                    json!({
                        "type": "function",
                        "function": {
                            "name": tool.name,
                            "description": tool.description,
                            "parameters": tool.input_schema,
                        },
                    })
                })
                .collect();
            body.insert("tools".into(), Value::Array(tools));
        }
        if let Some(max) = request.max_output_tokens {
            body.insert("max_tokens".into(), json!(max));
        }
        Value::Object(body)
    }
}

fn assistant_message(parts: &[AssistantPart]) -> Value {
    let mut text = String::new();
    let mut calls = Vec::new();
    for part in parts {
        match part {
            AssistantPart::Text { text: t } => text.push_str(t),
            AssistantPart::ToolCall(call) => calls.push(json!({
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.input.to_string()},
            })),
            // Chat Completions has no way to hand reasoning back.
            AssistantPart::Reasoning(_) => {}
        }
    }
    let mut message = Map::new();
    message.insert("role".into(), json!("assistant"));
    message.insert(
        "content".into(),
        if text.is_empty() && !calls.is_empty() {
            Value::Null
        } else {
            Value::String(text)
        },
    );
    if !calls.is_empty() {
        message.insert("tool_calls".into(), Value::Array(calls));
    }
    Value::Object(message)
}

#[async_trait::async_trait]
impl Provider for OpenAiChat {
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
            "/chat/completions",
            &self.headers,
            &body,
            ChatParser::default(),
            cancel,
        )
        .await
    }
}

/// A tool call being assembled from `delta.tool_calls` fragments.
#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// Bytes of one reasoning block kept; the rest is dropped (it is only shown).
const MAX_REASONING_BYTES: usize = 64 * 1024;

#[derive(Debug, Default)]
struct ChatParser {
    /// The reasoning block streaming now, not yet handed on.
    reasoning: String,
    /// By the fragments' `index`.
    calls: BTreeMap<u64, PartialCall>,
    emitted_calls: usize,
    finish: Option<String>,
    usage: Option<TokenUsage>,
    done: bool,
}

impl ChatParser {
    /// Hands on the reasoning block that streamed so far, if any.
    fn flush_reasoning(&mut self, out: &mut Vec<ModelEvent>) {
        if self.reasoning.is_empty() {
            return;
        }
        let text = std::mem::take(&mut self.reasoning);
        out.push(ModelEvent::Reasoning(ReasoningItem {
            format: ReasoningFormat::OpenaiChat,
            raw: json!({ "text": text }),
        }));
    }

    fn flush_calls(&mut self, out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        for (index, call) in std::mem::take(&mut self.calls) {
            let id = if call.id.is_empty() {
                // llama.cpp and OpenAI always send one; a server that does not still needs the
                // result matched to the call.
                format!("call_{index}")
            } else {
                call.id
            };
            if call.name.is_empty() {
                return Err(shape_error(
                    PROVIDER,
                    format!("tool call {index} ({id}) ended without a function name"),
                    &call.arguments,
                ));
            }
            let arguments = parse_arguments(PROVIDER, &id, &call.name, &call.arguments)?;
            out.push(ModelEvent::ToolCall(ToolCall {
                id,
                name: call.name,
                input: arguments,
            }));
            self.emitted_calls += 1;
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        self.flush_reasoning(out);
        self.flush_calls(out)?;
        if let Some(usage) = self.usage.take() {
            out.push(ModelEvent::Usage(usage));
        }
        let reason = match self.finish.as_deref() {
            Some("stop") | None => FinishReason::Stop,
            Some("length") => FinishReason::Length,
            Some("tool_calls" | "function_call") => FinishReason::ToolCalls,
            Some("content_filter") => FinishReason::ContentFilter,
            Some(other) => FinishReason::Other(other.to_owned()),
        };
        // Ollama and some llama.cpp builds say `stop` after tool calls.
        let reason = if reason == FinishReason::Stop && self.emitted_calls > 0 {
            FinishReason::ToolCalls
        } else {
            reason
        };
        out.push(ModelEvent::Finished { reason });
        self.done = true;
        Ok(())
    }

    fn tool_call_delta(
        &mut self,
        position: usize,
        fragment: &Value,
        data: &str,
    ) -> Result<(), ModelError> {
        let index = match fragment.get("index") {
            Some(index) => index.as_u64().ok_or_else(|| {
                shape_error(
                    PROVIDER,
                    "a tool call fragment's index is not a number",
                    data,
                )
            })?,
            // Older Ollama sends whole calls without an index.
            None => position as u64,
        };
        let call = self.calls.entry(index).or_default();
        if let Some(id) = fragment.get("id").and_then(Value::as_str)
            && call.id.is_empty()
        {
            id.clone_into(&mut call.id);
        }
        let function = fragment.get("function");
        if let Some(name) = function.and_then(|f| f.get("name")).and_then(Value::as_str)
            && call.name.is_empty()
        {
            name.clone_into(&mut call.name);
        }
        match function.and_then(|f| f.get("arguments")) {
            Some(Value::String(piece)) => call.arguments.push_str(piece),
            // Some servers send the arguments as an object in one piece.
            Some(object @ Value::Object(_)) => call.arguments.push_str(&object.to_string()),
            Some(_) | None => {}
        }
        Ok(())
    }
}

impl WireParser for ChatParser {
    fn event(
        &mut self,
        event: crate::sse::SseEvent,
        out: &mut Vec<ModelEvent>,
    ) -> Result<(), ModelError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            return self.finish(out);
        }
        let chunk = parse_json(PROVIDER, data)?;
        if !chunk.is_object() {
            return Err(shape_error(PROVIDER, "a chunk is not a JSON object", data));
        }
        if let Some(error) = chunk.get("error") {
            // OpenRouter and vLLM report failures mid-stream this way.
            return Err(ModelError::Api {
                provider: PROVIDER.to_owned(),
                code: error
                    .get("code")
                    .or_else(|| error.get("type"))
                    .map(|c| match c {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    })
                    .unwrap_or_else(|| "error".to_owned()),
                message: crate::error::truncate(
                    error.get("message").and_then(Value::as_str).unwrap_or(data),
                ),
            });
        }
        let choices = match chunk.get("choices") {
            None | Some(Value::Null) => &[][..],
            Some(Value::Array(choices)) => choices.as_slice(),
            Some(_) => return Err(shape_error(PROVIDER, "`choices` is not an array", data)),
        };
        // Only the first choice is read: Bosun never asks for `n > 1`.
        if let Some(choice) = choices.first() {
            let delta = choice.get("delta");
            if let Some(thought) = delta
                .and_then(|d| d.get("reasoning_content").or_else(|| d.get("reasoning")))
                .and_then(Value::as_str)
            {
                let room = MAX_REASONING_BYTES.saturating_sub(self.reasoning.len());
                let mut cut = thought.len().min(room);
                while !thought.is_char_boundary(cut) {
                    cut -= 1;
                }
                self.reasoning.push_str(&thought[..cut]);
            }
            if let Some(text) = delta.and_then(|d| d.get("content")).and_then(Value::as_str)
                && !text.is_empty()
            {
                self.flush_reasoning(out);
                out.push(ModelEvent::TextDelta(text.to_owned()));
            }
            if delta
                .and_then(|d| d.get("tool_calls"))
                .is_some_and(|c| !c.is_null())
            {
                self.flush_reasoning(out);
            }
            match delta.and_then(|d| d.get("tool_calls")) {
                None | Some(Value::Null) => {}
                Some(Value::Array(fragments)) => {
                    for (position, fragment) in fragments.iter().enumerate() {
                        self.tool_call_delta(position, fragment, data)?;
                    }
                }
                Some(_) => {
                    return Err(shape_error(
                        PROVIDER,
                        "`delta.tool_calls` is not an array",
                        data,
                    ));
                }
            }
            if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                self.finish = Some(reason.to_owned());
                self.flush_calls(out)?;
            }
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            let count = |pointer: &str| usage.pointer(pointer).and_then(Value::as_u64);
            self.usage = Some(TokenUsage {
                input_tokens: count("/prompt_tokens").unwrap_or(0),
                output_tokens: count("/completion_tokens").unwrap_or(0),
                cached_input_tokens: count("/prompt_tokens_details/cached_tokens"),
                reasoning_tokens: count("/completion_tokens_details/reasoning_tokens"),
            });
        }
        Ok(())
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn end_of_body(&mut self, out: &mut Vec<ModelEvent>) -> Result<Option<String>, ModelError> {
        if self.finish.is_some() {
            // A `finish_reason` arrived; only the `[DONE]` line is missing.
            self.finish(out)?;
            return Ok(None);
        }
        Ok(Some("a finish_reason or `data: [DONE]`".to_owned()))
    }
}
