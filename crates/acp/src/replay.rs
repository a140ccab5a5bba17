//! `session/load`: a stored Bosun session told to the editor again as the updates it would
//! have seen — the person's messages as `user_message_chunk`, the model's text and reasoning,
//! each tool call with its kind, locations and diff, and how it ended, and the plan after each
//! `update_plan` — so the editor shows the
//! conversation before the next prompt. Only what the session stores is replayed: a command's
//! streamed output is its stored result.

use std::collections::HashMap;
use std::path::Path;

use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, ImageContent, SessionId, SessionUpdate, TextContent,
    ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
};
use bosun_host::builtin::Plan;
use bosun_models::{AssistantPart, Message, ReasoningFormat};
use serde_json::Value;

use crate::client::ClientLink;
use crate::updates::{
    message_chunk, output_content, plan_update, proposed, text_content, thought_chunk,
};

/// The updates that tell `messages` again, in order.
pub fn updates(root: &Path, messages: &[Message]) -> Vec<SessionUpdate> {
    let mut updates = Vec::new();
    let mut tools: HashMap<&str, &str> = HashMap::new();
    for message in messages {
        match message {
            Message::User { text, images } => {
                // Each image as the editor sent it, from the bytes the session keeps (or its
                // label when they are gone), then the text.
                for image in images {
                    let block = match image.base64() {
                        Some(data) => ContentBlock::Image(ImageContent::new(
                            data,
                            image.media_type.media_type(),
                        )),
                        None => ContentBlock::Text(TextContent::new(image.label())),
                    };
                    updates.push(SessionUpdate::UserMessageChunk(ContentChunk::new(block)));
                }
                if !text.is_empty() || images.is_empty() {
                    updates.push(SessionUpdate::UserMessageChunk(ContentChunk::new(
                        ContentBlock::Text(TextContent::new(text.clone())),
                    )));
                }
            }
            Message::Assistant { parts } => {
                for part in parts {
                    match part {
                        AssistantPart::Text { text } => updates.push(message_chunk(text.clone())),
                        AssistantPart::Reasoning(item) => {
                            if item.format == ReasoningFormat::OpenaiChat
                                && let Some(text) = item.raw.get("text").and_then(Value::as_str)
                            {
                                updates.push(thought_chunk(text.to_owned()));
                            }
                        }
                        AssistantPart::ToolCall(call) => {
                            tools.insert(&call.id, &call.name);
                            updates.push(SessionUpdate::ToolCall(proposed(
                                root,
                                &call.id,
                                &call.name,
                                &call.input,
                                None,
                            )));
                        }
                    }
                }
            }
            Message::Tool(result) => {
                let status = if result.is_error {
                    ToolCallStatus::Failed
                } else {
                    ToolCallStatus::Completed
                };
                let raw: Value = serde_json::from_str(&result.content)
                    .unwrap_or_else(|_| Value::String(result.content.clone()));
                let mut fields = ToolCallUpdateFields::new()
                    .status(status)
                    .raw_output(raw.clone());
                // A failure says why, as it did when it happened.
                if result.is_error {
                    let error = raw.get("error").unwrap_or(&raw);
                    let code = error.get("code").and_then(Value::as_str).unwrap_or("error");
                    let text = error
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or(&result.content);
                    fields = fields.content(vec![text_content(format!("{code}: {text}"), None)]);
                } else if tools.get(result.call_id.as_str()) == Some(&"run_command") {
                    let streams: Vec<&str> = ["stdout", "stderr"]
                        .iter()
                        .filter_map(|key| raw.get(*key).and_then(Value::as_str))
                        .filter(|text| !text.is_empty())
                        .collect();
                    if !streams.is_empty() {
                        fields = fields.content(vec![output_content(&streams.join("\n"), None)]);
                    }
                }
                updates.push(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                    result.call_id.clone(),
                    fields,
                )));
                // The plan as it stood after this call, as the editor saw it then.
                if !result.is_error
                    && let Some(tool) = tools.get(result.call_id.as_str())
                    && let Some(plan) = Plan::from_result(tool, raw.get("output").unwrap_or(&raw))
                {
                    updates.push(plan_update(&plan, None));
                }
            }
        }
    }
    updates
}

/// Sends the replay of `messages` to the editor.
pub fn send(link: &ClientLink, session: &SessionId, root: &Path, messages: &[Message]) {
    for update in updates(root, messages) {
        link.update(session, update);
    }
}
