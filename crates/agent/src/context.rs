//! Context elision: fitting a run's conversation into the model's context window.
//!
//! Tokens are estimated as UTF-8 bytes / 4 — about
//! chars / 4 for English and code with BPE tokenizers, and on the high (safe) side for other
//! scripts. The room for input is the model's `context_window` minus its `max_output_tokens`
//! (or [`DEFAULT_OUTPUT_RESERVE`] tokens, at most half the window, when that is unset). Before a
//! step whose estimated request exceeds [`ELIDE_AT_PERCENT`] % of that room, the oldest tool
//! outputs are replaced, one at a time, by `[elided: N bytes of <tool> output to fit the context
//! window]` until the estimate is at most [`ELIDE_TO_PERCENT`] % (the gap keeps a long run from
//! eliding on every step, which would also defeat providers' prompt caching). Only tool outputs
//! are elided — never the task, the model's own turns or the system prompt. The window is the
//! model entry's `context_window`, else the known window of the provider's model id
//! ([`known_window`]); a model with neither is never elided for.

use bosun_models::{AssistantPart, Message, ToolDefinition};
use serde::Serialize;

/// Tokens kept free for the answer when the model entry sets no `max_output_tokens`.
pub const DEFAULT_OUTPUT_RESERVE: u64 = 4096;
/// Elision starts when the estimated request passes this share of the room for input.
pub const ELIDE_AT_PERCENT: u64 = 90;
/// Elision goes on until the estimate is at most this share.
pub const ELIDE_TO_PERCENT: u64 = 75;
/// Estimated bytes per token.
pub const BYTES_PER_TOKEN: u64 = 4;
/// Estimated framing bytes per message (role, ids, separators).
const MESSAGE_OVERHEAD_BYTES: u64 = 16;
/// Tokens counted for one image: the providers bill an image by its pixels, about 1,600 tokens
/// for one scaled to their largest size, whatever its bytes.
pub const IMAGE_TOKENS: u64 = 1_600;

/// The model's size limits, for context elision.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ContextBudget {
    /// Tokens the model can take in; `None` turns elision off.
    pub context_window: Option<u64>,
    /// Cap on generated tokens per request, also sent with each request.
    pub max_output_tokens: Option<u32>,
}

impl ContextBudget {
    /// The limits of a configured model: its `context_window`, else the known window of its
    /// model id.
    pub fn of(configured: &bosun_models::ConfiguredModel) -> Self {
        Self {
            context_window: configured
                .context_window
                .or_else(|| known_window(&configured.model)),
            max_output_tokens: configured.max_output_tokens,
        }
    }

    /// Percent of the room for input left after a request of `estimated` tokens, if the
    /// window is known.
    pub fn percent_left(&self, estimated: u64) -> Option<u64> {
        let room = self.input_room()?.max(1);
        Some(room.saturating_sub(estimated) * 100 / room)
    }

    /// Estimated tokens of input a request may carry, if the window is known.
    pub fn input_room(&self) -> Option<u64> {
        let window = self.context_window?;
        let reserve = match self.max_output_tokens {
            Some(max) => u64::from(max),
            None => DEFAULT_OUTPUT_RESERVE.min(window / 2),
        };
        Some(window.saturating_sub(reserve))
    }
}

/// Context windows of the official providers' model ids, by the longest prefix that matches
/// (a dated or suffixed id matches its family). Local servers set `context_window` themselves:
/// their window is whatever they were started with.
const KNOWN_WINDOWS: &[(&str, u64)] = &[
    ("claude-", 200_000),
    ("gpt-5", 400_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    ("codex-", 200_000),
];

/// The known context window of the provider's model id `model`, if it is one of the official
/// providers' (see [`KNOWN_WINDOWS`]).
pub fn known_window(model: &str) -> Option<u64> {
    KNOWN_WINDOWS
        .iter()
        .filter(|(prefix, _)| model.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|(_, window)| *window)
}

/// Estimated tokens of a request: system prompt, tool definitions and conversation.
pub fn estimate_tokens(system: &str, tools: &[ToolDefinition], messages: &[Message]) -> u64 {
    let tools: u64 = tools
        .iter()
        .map(|t| {
            (t.name.len() + t.description.len() + t.input_schema.to_string().len()) as u64
                + MESSAGE_OVERHEAD_BYTES
        })
        .sum();
    let messages: u64 = messages.iter().map(message_bytes).sum();
    (system.len() as u64 + tools + messages).div_ceil(BYTES_PER_TOKEN)
}

fn message_bytes(message: &Message) -> u64 {
    let bytes = match message {
        Message::User { text, images } => {
            text.len() + images.len() * IMAGE_TOKENS as usize * BYTES_PER_TOKEN as usize
        }
        Message::Tool(result) => result.call_id.len() + result.content.len(),
        Message::Assistant { parts } => parts
            .iter()
            .map(|part| match part {
                AssistantPart::Text { text } => text.len(),
                AssistantPart::ToolCall(call) => {
                    call.id.len() + call.name.len() + call.input.to_string().len()
                }
                AssistantPart::Reasoning(item) => item.raw.to_string().len(),
            })
            .sum(),
    };
    bytes as u64 + MESSAGE_OVERHEAD_BYTES
}

/// The marker that replaces an elided tool output.
pub fn elision_marker(bytes: usize, tool: &str) -> String {
    format!("[elided: {bytes} bytes of {tool} output to fit the context window]")
}

/// One elided output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Elision {
    /// The call.
    pub call_id: String,
    /// Its tool.
    pub tool: String,
    /// Bytes removed.
    pub bytes: usize,
}

/// Applies the elision policy (see the module docs) to `messages` in place and says what went.
pub fn elide_to_fit(
    context: &ContextBudget,
    system: &str,
    tools: &[ToolDefinition],
    messages: &mut [Message],
) -> Vec<Elision> {
    let Some(room) = context.input_room() else {
        return Vec::new();
    };
    let mut estimate = estimate_tokens(system, tools, messages);
    if estimate * 100 <= room * ELIDE_AT_PERCENT {
        return Vec::new();
    }
    let target = room * ELIDE_TO_PERCENT / 100;
    let mut elided = Vec::new();
    for i in 0..messages.len() {
        if estimate <= target {
            break;
        }
        let Message::Tool(result) = &messages[i] else {
            continue;
        };
        if result.content.starts_with("[elided: ") {
            continue;
        }
        let call_id = result.call_id.clone();
        let tool = tool_name_of(&messages[..i], &call_id).unwrap_or_else(|| "tool".to_owned());
        // A loaded skill is the instructions the run follows: never elided.
        if tool == bosun_host::skills::LOAD_SKILL {
            continue;
        }
        let bytes = result.content.len();
        let marker = elision_marker(bytes, &tool);
        if marker.len() >= bytes {
            continue;
        }
        let saved = (bytes - marker.len()) as u64;
        if let Message::Tool(result) = &mut messages[i] {
            result.content = marker;
        }
        estimate = estimate.saturating_sub(saved / BYTES_PER_TOKEN);
        elided.push(Elision {
            call_id,
            tool,
            bytes,
        });
    }
    elided
}

/// The tool name of the call `call_id`, from the assistant turn that made it.
fn tool_name_of(earlier: &[Message], call_id: &str) -> Option<String> {
    earlier.iter().rev().find_map(|message| match message {
        Message::Assistant { parts } => parts.iter().find_map(|part| match part {
            AssistantPart::ToolCall(call) if call.id == call_id => Some(call.name.clone()),
            _ => None,
        }),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_windows_match_the_model_family() {
        assert_eq!(known_window("claude-sonnet-4-5-20250929"), Some(200_000));
        assert_eq!(known_window("gpt-4.1-mini"), Some(1_047_576));
        assert_eq!(known_window("gpt-4o-mini"), Some(128_000));
        assert_eq!(known_window("qwen3:8b"), None);
        let budget = ContextBudget {
            context_window: Some(10_000),
            max_output_tokens: Some(2_000),
        };
        assert_eq!(budget.percent_left(2_000), Some(75));
        assert_eq!(budget.percent_left(9_000), Some(0));
    }

    #[test]
    fn the_room_for_input_leaves_the_output_reserve() {
        let explicit = ContextBudget {
            context_window: Some(10_000),
            max_output_tokens: Some(2_000),
        };
        assert_eq!(explicit.input_room(), Some(8_000));
        let small = ContextBudget {
            context_window: Some(1_000),
            max_output_tokens: None,
        };
        assert_eq!(small.input_room(), Some(500));
        assert_eq!(ContextBudget::default().input_room(), None);
    }

    #[test]
    fn the_oldest_tool_outputs_go_first_and_only_as_needed() {
        let call = |id: &str| {
            Message::assistant(vec![AssistantPart::ToolCall(bosun_models::ToolCall {
                id: id.into(),
                name: "read_file".into(),
                input: serde_json::json!({"path": "x"}),
            })])
        };
        let mut messages = vec![
            Message::user("task"),
            call("c1"),
            Message::tool_result("c1", "a".repeat(4_000), false),
            call("c2"),
            Message::tool_result("c2", "b".repeat(4_000), false),
            call("c3"),
            Message::tool_result("c3", "c".repeat(400), false),
        ];
        // ~2150 tokens in all; room 2000: over 90 %, so elide to 75 % (1500): one output goes.
        let context = ContextBudget {
            context_window: Some(3_000),
            max_output_tokens: Some(1_000),
        };
        let elided = elide_to_fit(&context, "", &[], &mut messages);
        assert_eq!(
            elided,
            vec![Elision {
                call_id: "c1".into(),
                tool: "read_file".into(),
                bytes: 4_000
            }]
        );
        assert_eq!(
            messages[2],
            Message::tool_result(
                "c1",
                "[elided: 4000 bytes of read_file output to fit the context window]",
                false
            )
        );
        assert_eq!(
            messages[4],
            Message::tool_result("c2", "b".repeat(4_000), false)
        );
        // Nothing more to do on the next step.
        assert!(elide_to_fit(&context, "", &[], &mut messages).is_empty());
    }
}
