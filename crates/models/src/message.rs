//! A provider-neutral conversation: what Bosun sends to a model. Each adapter translates it into
//! its own wire format; nothing here knows about HTTP or about how tools run.

use bosun_core::ToolCall;

use crate::image::Image;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One request to a model: a conversation plus the tools it may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelRequest {
    /// The provider's model id, e.g. `gpt-5` or `claude-sonnet-4-5`.
    pub model: String,
    /// The system prompt, if any.
    pub system: Option<String>,
    /// The conversation so far, oldest first.
    pub messages: Vec<Message>,
    /// The tools offered to the model.
    pub tools: Vec<ToolDefinition>,
    /// Cap on generated tokens. Chat Completions and Responses omit the field when `None`;
    /// Anthropic requires one and uses [`crate::anthropic::DEFAULT_MAX_TOKENS`].
    pub max_output_tokens: Option<u32>,
}

impl ModelRequest {
    /// Whether any message carries an image.
    pub fn has_images(&self) -> bool {
        self.messages.iter().any(|m| !m.images().is_empty())
    }

    /// A request with no system prompt, no messages, no tools and no token cap.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            system: None,
            messages: Vec::new(),
            tools: Vec::new(),
            max_output_tokens: None,
        }
    }
}

/// One entry in the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// What the person said.
    User {
        /// The text.
        text: String,
        /// Images attached to it, sent before the text. Serialised as references only
        /// ([`Image`]): the bytes live beside the stored session.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<Image>,
    },
    /// What the model answered in one step, in the order it produced it.
    Assistant {
        /// Text, tool calls and reasoning items.
        parts: Vec<AssistantPart>,
    },
    /// The result of one tool call, answering an earlier [`ToolCall`] by its id.
    Tool(ToolResult),
}

impl Message {
    /// A user message.
    pub fn user(text: impl Into<String>) -> Self {
        Self::User {
            text: text.into(),
            images: Vec::new(),
        }
    }

    /// A user message with images attached.
    pub fn user_with_images(text: impl Into<String>, images: Vec<Image>) -> Self {
        Self::User {
            text: text.into(),
            images,
        }
    }

    /// The images of this message (none unless it is a person's).
    pub fn images(&self) -> &[Image] {
        match self {
            Self::User { images, .. } => images,
            _ => &[],
        }
    }

    /// An assistant turn.
    pub fn assistant(parts: Vec<AssistantPart>) -> Self {
        Self::Assistant { parts }
    }

    /// A tool result.
    pub fn tool_result(
        call_id: impl Into<String>,
        content: impl Into<String>,
        is_error: bool,
    ) -> Self {
        Self::Tool(ToolResult {
            call_id: call_id.into(),
            content: content.into(),
            is_error,
        })
    }
}

/// A piece of an assistant turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AssistantPart {
    /// Visible text.
    Text {
        /// The text.
        text: String,
    },
    /// A tool the model asked to call.
    ToolCall(ToolCall),
    /// A reasoning item to hand back on the next step.
    Reasoning(ReasoningItem),
}

/// The result of a tool call, sent back to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The id of the [`ToolCall`] this answers.
    pub call_id: String,
    /// The result as JSON text, sent verbatim.
    pub content: String,
    /// Whether the call failed. Anthropic carries it as `is_error`; the OpenAI formats have no
    /// such field, so the content itself must say so (Bosun's results do, with an error code).
    pub is_error: bool,
}

/// The wire format a reasoning item came from; only that format can take it back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReasoningFormat {
    /// A Responses API `reasoning` output item (with `encrypted_content`).
    OpenaiResponses,
    /// An Anthropic `thinking` or `redacted_thinking` content block (with its signature).
    Anthropic,
    /// Reasoning text an OpenAI-compatible Chat Completions server streamed beside the answer
    /// (`delta.reasoning_content` from vLLM and DeepSeek, `delta.reasoning` from Ollama and
    /// OpenRouter), as `{"text": …}`. Shown, never handed back: Chat Completions has no way.
    OpenaiChat,
}

/// Opaque reasoning state the provider asks to get back on the next step of the same turn.
///
/// The item is kept exactly as received — ids, `encrypted_content`, signatures — because the
/// provider verifies it. Adapters of another format skip it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReasoningItem {
    /// Which format produced it.
    pub format: ReasoningFormat,
    /// The item as received.
    pub raw: Value,
}

impl ReasoningItem {
    /// Any human-readable summary or thinking text the item carries.
    pub fn summary_text(&self) -> String {
        match self.format {
            ReasoningFormat::OpenaiResponses => self
                .raw
                .get("summary")
                .and_then(Value::as_array)
                .map(|parts| {
                    parts
                        .iter()
                        .filter_map(|p| p.get("text").and_then(Value::as_str))
                        .collect::<Vec<_>>()
                        .join("\n")
                })
                .unwrap_or_default(),
            ReasoningFormat::Anthropic => self
                .raw
                .get("thinking")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            ReasoningFormat::OpenaiChat => self
                .raw
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        }
    }
}

/// A tool as offered to a model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    /// The tool's name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// JSON Schema of its input (an object schema).
    pub input_schema: Value,
}

impl From<&bosun_core::ToolSpec> for ToolDefinition {
    fn from(spec: &bosun_core::ToolSpec) -> Self {
        Self {
            name: spec.name.as_str().to_owned(),
            description: spec.description.clone(),
            input_schema: spec.input_schema.clone(),
        }
    }
}
