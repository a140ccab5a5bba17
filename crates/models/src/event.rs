//! What a model stream yields, the same for every provider.

use futures_util::StreamExt;
use serde::{Deserialize, Serialize};

use bosun_core::{FinishReason, TokenUsage, ToolCall};

use crate::{AssistantPart, Message, ModelError, ModelStream, ReasoningItem};

/// One event of a model's answer.
///
/// A successful stream yields any number of `TextDelta`, `ToolCall` and `Reasoning` events,
/// then at most one `Usage`, then exactly one `Finished`, then ends. A stream that fails yields
/// one `Err` and ends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelEvent {
    /// A piece of visible text.
    TextDelta(String),
    /// A complete tool call; its arguments arrived in full and parsed as JSON.
    ToolCall(ToolCall),
    /// A reasoning item to carry into the next request of this turn.
    Reasoning(ReasoningItem),
    /// Token accounting for this request.
    Usage(TokenUsage),
    /// The model stopped.
    Finished {
        /// Why.
        reason: FinishReason,
    },
}

/// A whole answer gathered from a stream: the assistant turn to put back into the
/// conversation, and how it ended.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Answer {
    /// Text, tool calls and reasoning items in the order they came; consecutive text deltas are
    /// joined into one part.
    pub parts: Vec<AssistantPart>,
    /// The provider's token counts, if it sent them.
    pub usage: Option<TokenUsage>,
    /// Why it stopped; `None` until `Finished` arrives.
    pub finish: Option<FinishReason>,
}

impl Answer {
    /// Adds one event.
    pub fn push(&mut self, event: ModelEvent) {
        match event {
            ModelEvent::TextDelta(delta) => match self.parts.last_mut() {
                Some(AssistantPart::Text { text }) => text.push_str(&delta),
                _ => self.parts.push(AssistantPart::Text { text: delta }),
            },
            ModelEvent::ToolCall(call) => self.parts.push(AssistantPart::ToolCall(call)),
            ModelEvent::Reasoning(item) => self.parts.push(AssistantPart::Reasoning(item)),
            ModelEvent::Usage(usage) => self.usage = Some(usage),
            ModelEvent::Finished { reason } => self.finish = Some(reason),
        }
    }

    /// Reads a stream to its end; the first error ends it.
    pub async fn collect(mut stream: ModelStream) -> Result<Self, ModelError> {
        let mut answer = Self::default();
        while let Some(event) = stream.next().await {
            answer.push(event?);
        }
        Ok(answer)
    }

    /// The visible text.
    pub fn text(&self) -> String {
        self.parts
            .iter()
            .filter_map(|part| match part {
                AssistantPart::Text { text } => Some(text.as_str()),
                AssistantPart::ToolCall(_) | AssistantPart::Reasoning(_) => None,
            })
            .collect()
    }

    /// The tool calls, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.parts.iter().filter_map(|part| match part {
            AssistantPart::ToolCall(call) => Some(call),
            AssistantPart::Text { .. } | AssistantPart::Reasoning(_) => None,
        })
    }

    /// The assistant turn, for the next request.
    pub fn into_message(self) -> Message {
        Message::Assistant { parts: self.parts }
    }
}
