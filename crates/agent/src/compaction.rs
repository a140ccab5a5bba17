//! Compaction: the older turns of a conversation replaced by a summary the model writes, the
//! recent turns kept as they are. `/compact` asks for it; a run does it by itself before a step
//! whose request would still pass [`COMPACT_AT_PERCENT`] % of the room for input after elision
//! (see [`crate::context`]), and once more when the provider answers that the request is over
//! its window.
//!
//! The summary request offers **no tools** and carries no tool-call blocks: the turns to
//! summarise go as one plain-text transcript (each tool output cut to
//! [`TRANSCRIPT_TOOL_BYTES`], the whole cut from its oldest end to fit the window), so the model
//! can only answer in text and every provider takes it. What comes back replaces the summarised
//! turns; the last [`KEEP_RECENT_TURNS`] turns (fewer when they would fill more than half the
//! room) follow it unchanged. Nothing here runs a tool or stores a session.

use bosun_models::{Answer, AssistantPart, Message, ModelError, ModelRequest, Provider};
use futures_util::StreamExt;
use tokio_util::sync::CancellationToken;

use crate::context::{BYTES_PER_TOKEN, ContextBudget, estimate_tokens};

/// A run compacts before a step whose estimate, after elision, passes this share of the room.
pub const COMPACT_AT_PERCENT: u64 = 90;
/// Turns (a person's message and what followed it) kept as they are after the summary.
pub const KEEP_RECENT_TURNS: usize = 2;
/// Most bytes of one tool output in the transcript the summary is written from.
pub const TRANSCRIPT_TOOL_BYTES: usize = 2_000;
/// Most bytes of the transcript when the model's window is unknown.
const TRANSCRIPT_MAX_BYTES: usize = 400_000;

/// How the summary is asked for.
const SUMMARY_SYSTEM: &str = "You write the working summary of a conversation between a person \
and a coding agent, so that the agent can continue the work from the summary alone. You have no \
tools; answer with the summary only.";

/// What the summary must hold.
const SUMMARY_TASK: &str = "Summarise the conversation above for the agent's later use: the \
person's task and requests, what was decided, what was done (files changed, commands run and \
their outcome), what is still open, and the facts about the workspace the agent will need. Be \
specific (paths, names, numbers); leave out pleasantries.";

/// The first words of the message that holds a summary.
pub const SUMMARY_HEADING: &str = "Summary of our conversation so far";

/// What a compaction did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compacted {
    /// Messages replaced by the summary.
    pub summarised: usize,
    /// Messages kept after it, unchanged.
    pub kept: usize,
    /// The summary.
    pub summary: String,
}

/// Why a conversation was not compacted. Each says what to do.
#[derive(Debug, thiserror::Error)]
pub enum CompactError {
    /// There are no earlier turns to summarise.
    #[error("nothing to compact: there are no earlier turns to summarise")]
    NothingToCompact,
    /// The summary request failed.
    #[error("the summary request failed: {0}")]
    Model(#[source] ModelError),
    /// The model answered without text.
    #[error(
        "the model answered the summary request without a summary; the conversation is kept as it was, try /compact again"
    )]
    EmptySummary,
    /// Cancelled.
    #[error("compaction was cancelled; the conversation is kept as it was")]
    Cancelled,
    /// The session holds data above what the conversation's model may be sent: nothing was
    /// sent to be summarised.
    #[error("the conversation was not compacted and is kept as it was: {0}")]
    Withheld(ModelError),
    /// The conversation's model entry cannot be opened.
    #[error(transparent)]
    Open(Box<crate::assembly::TurnError>),
    /// The compacted session could not be stored.
    #[error("the compacted session could not be stored: {0}")]
    Store(#[source] crate::session_store::SessionError),
    /// A plugin's `PreCompact` hook blocked it (exit 2 or `decision: "block"`, as in Claude
    /// Code).
    #[error(
        "the PreCompact hook of the plugin `{plugin}` blocked compaction: {reason}; the conversation is kept as it was (disable the plugin's hook or uninstall it to compact)"
    )]
    Blocked {
        /// The plugin.
        plugin: String,
        /// What its hook said.
        reason: String,
    },
}

/// Compacts `messages` by a summary from `provider`'s `model`: everything before the kept
/// recent turns is summarised. The kept part never starts after `keep_from` (a run keeps its
/// own task's turn whole: pass that turn's start; `/compact` passes `messages.len()`).
pub async fn compact(
    provider: &dyn Provider,
    model: &str,
    context: &ContextBudget,
    messages: &[Message],
    keep_from: usize,
    cancel: &CancellationToken,
) -> Result<(Vec<Message>, Compacted), CompactError> {
    let cut = cut_point(context, messages, keep_from).ok_or(CompactError::NothingToCompact)?;
    let request = summary_request(model, context, &messages[..cut]);
    let summary = ask(provider, &request, cancel).await?;
    let summary = summary.trim().to_owned();
    if summary.is_empty() {
        return Err(CompactError::EmptySummary);
    }
    let mut compacted = vec![
        Message::user(format!(
            "{SUMMARY_HEADING} ({cut} earlier messages were compacted):\n\n{summary}"
        )),
        Message::assistant(vec![AssistantPart::Text {
            text: "Understood; I will continue from this summary.".to_owned(),
        }]),
    ];
    compacted.extend_from_slice(&messages[cut..]);
    let done = Compacted {
        summarised: cut,
        kept: messages.len() - cut,
        summary,
    };
    Ok((compacted, done))
}

/// Whether the request `system` + `messages` (with `tools`) is past the share of the room at
/// which a run compacts.
pub fn needs_compaction(
    context: &ContextBudget,
    system: &str,
    tools: &[bosun_models::ToolDefinition],
    messages: &[Message],
) -> bool {
    context.input_room().is_some_and(|room| {
        estimate_tokens(system, tools, messages) * 100 > room * COMPACT_AT_PERCENT
    })
}

/// Whether `error` is a provider saying the request is over the model's context window.
pub fn is_overflow(error: &ModelError) -> bool {
    let message = match error {
        ModelError::Http { status: 413, .. } => return true,
        ModelError::Http { message, .. } => message,
        ModelError::Api { code, message, .. } => {
            if code.contains("context_length") {
                return true;
            }
            message
        }
        _ => return false,
    };
    let message = message.to_ascii_lowercase();
    [
        "context_length_exceeded",
        "context length",
        "context window",
        "prompt is too long",
        "too many tokens",
        "maximum context",
    ]
    .iter()
    .any(|needle| message.contains(needle))
}

/// Where the kept recent turns start: at a person's message, at most [`KEEP_RECENT_TURNS`] of
/// them, at most half the room, never after `keep_from`; `messages.len()` (all summarised) when
/// `keep_from` allows it and no turn can be kept. `None` when nothing would be summarised.
fn cut_point(context: &ContextBudget, messages: &[Message], keep_from: usize) -> Option<usize> {
    let keep_from = keep_from.min(messages.len());
    let mut candidates: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(i, m)| *i > 0 && *i <= keep_from && matches!(m, Message::User { .. }))
        .map(|(i, _)| i)
        .collect();
    if keep_from == messages.len() && keep_from > 0 && candidates.last() != Some(&keep_from) {
        candidates.push(keep_from);
    }
    let turns_from = |at: usize| {
        messages[at..]
            .iter()
            .filter(|m| matches!(m, Message::User { .. }))
            .count()
    };
    let fits = |at: usize| {
        context
            .input_room()
            .is_none_or(|room| estimate_tokens("", &[], &messages[at..]) * 2 <= room)
    };
    candidates
        .iter()
        .copied()
        .find(|&at| turns_from(at) <= KEEP_RECENT_TURNS && fits(at))
        .or_else(|| candidates.last().copied())
}

/// The summary request: no tools, one person's message holding the transcript and the task.
fn summary_request(model: &str, context: &ContextBudget, messages: &[Message]) -> ModelRequest {
    let limit = context.input_room().map_or(TRANSCRIPT_MAX_BYTES, |room| {
        let room = usize::try_from(room).unwrap_or(usize::MAX);
        // The instructions and the framing take a little of the room.
        room.saturating_mul(BYTES_PER_TOKEN as usize)
            .saturating_sub(SUMMARY_SYSTEM.len() + SUMMARY_TASK.len() + 512)
    });
    let transcript = transcript(messages, limit);
    let mut request = ModelRequest::new(model);
    request.system = Some(SUMMARY_SYSTEM.to_owned());
    request.messages = vec![Message::user(format!(
        "<conversation>\n{transcript}</conversation>\n\n{SUMMARY_TASK}"
    ))];
    request.max_output_tokens = context.max_output_tokens;
    request
}

/// The conversation as plain text, each tool output cut, the whole at most `limit` bytes (its
/// oldest part goes first).
fn transcript(messages: &[Message], limit: usize) -> String {
    let mut blocks: Vec<String> = Vec::new();
    for message in messages {
        match message {
            Message::User { text, images } => {
                // The summariser gets no images; it learns that there were some.
                let labels: Vec<String> = images.iter().map(bosun_models::Image::label).collect();
                let attached = if labels.is_empty() {
                    String::new()
                } else {
                    format!("{}\n", labels.join(" "))
                };
                blocks.push(format!("[person]\n{attached}{text}\n\n"));
            }
            Message::Assistant { parts } => {
                let mut block = String::from("[agent]\n");
                for part in parts {
                    match part {
                        AssistantPart::Text { text } => {
                            block.push_str(text);
                            block.push('\n');
                        }
                        AssistantPart::ToolCall(call) => block.push_str(&format!(
                            "(called {} with {})\n",
                            call.name,
                            cut(&call.input.to_string(), TRANSCRIPT_TOOL_BYTES)
                        )),
                        AssistantPart::Reasoning(_) => {}
                    }
                }
                block.push('\n');
                blocks.push(block);
            }
            Message::Tool(result) => blocks.push(format!(
                "[tool result{}]\n{}\n\n",
                if result.is_error { ", an error" } else { "" },
                cut(&result.content, TRANSCRIPT_TOOL_BYTES)
            )),
        }
    }
    let mut total: usize = blocks.iter().map(String::len).sum();
    let mut first = 0;
    // The note of what was left out takes at most 64 bytes.
    while total + if first > 0 { 64 } else { 0 } > limit && first + 1 < blocks.len() {
        total -= blocks[first].len();
        first += 1;
    }
    let mut text = String::new();
    if first > 0 {
        text.push_str(&format!(
            "[{first} older messages left out to fit the window]\n\n"
        ));
    }
    for block in &blocks[first..] {
        text.push_str(block);
    }
    if text.len() > limit {
        // One block alone is over the limit: keep its end.
        let mut at = text.len() - limit;
        while !text.is_char_boundary(at) {
            at += 1;
        }
        text = text[at..].to_owned();
    }
    text
}

/// `text` cut to at most `bytes` bytes on a character boundary, saying how much went.
fn cut(text: &str, bytes: usize) -> String {
    if text.len() <= bytes {
        return text.to_owned();
    }
    let mut at = bytes;
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    format!("{}… [{} more bytes]", &text[..at], text.len() - at)
}

/// Sends the summary request; its text.
async fn ask(
    provider: &dyn Provider,
    request: &ModelRequest,
    cancel: &CancellationToken,
) -> Result<String, CompactError> {
    let opening = provider.stream(request, cancel.clone());
    let stream = tokio::select! {
        biased;
        () = cancel.cancelled() => return Err(CompactError::Cancelled),
        stream = opening => stream,
    };
    let mut stream = match stream {
        Ok(stream) => stream,
        Err(ModelError::Cancelled) => return Err(CompactError::Cancelled),
        Err(e) => return Err(CompactError::Model(e)),
    };
    let mut answer = Answer::default();
    loop {
        let next = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(CompactError::Cancelled),
            next = stream.next() => next,
        };
        match next {
            None => break,
            Some(Ok(event)) => answer.push(event),
            Some(Err(ModelError::Cancelled)) => return Err(CompactError::Cancelled),
            Some(Err(e)) => return Err(CompactError::Model(e)),
        }
    }
    Ok(answer.text())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(task: &str) -> Vec<Message> {
        vec![
            Message::user(task),
            Message::assistant(vec![AssistantPart::Text {
                text: format!("done: {task}"),
            }]),
        ]
    }

    #[test]
    fn the_cut_keeps_the_recent_turns_and_never_passes_keep_from() {
        let messages: Vec<Message> = ["a", "b", "c", "d"].into_iter().flat_map(turn).collect();
        let none = ContextBudget::default();
        // Four turns: the last two kept.
        assert_eq!(cut_point(&none, &messages, messages.len()), Some(4));
        // A run keeps its own turn (the last) whole and may keep one before it.
        assert_eq!(cut_point(&none, &messages, 6), Some(4));
        assert_eq!(cut_point(&none, &messages, 2), Some(2));
        // One turn: `/compact` summarises it all; a run whose own turn is the only one cannot.
        let one = turn("a");
        assert_eq!(cut_point(&none, &one, one.len()), Some(2));
        assert_eq!(cut_point(&none, &one, 0), None);
    }

    #[test]
    fn recent_turns_too_large_for_half_the_room_are_summarised_too() {
        let mut messages = turn("a");
        messages.extend(turn(&"b".repeat(4_000)));
        messages.extend(turn("c"));
        let small = ContextBudget {
            context_window: Some(2_000),
            max_output_tokens: Some(500),
        };
        // Keeping "b" and "c" would take ~1000 tokens of a 1500-token room: only "c" is kept.
        assert_eq!(cut_point(&small, &messages, messages.len()), Some(4));
    }

    #[test]
    fn the_transcript_cuts_tool_outputs_and_its_oldest_part() {
        let messages = vec![
            Message::user("first".repeat(20)),
            Message::tool_result("c1", "x".repeat(5_000), false),
            Message::user("last"),
        ];
        let text = transcript(&messages, 100_000);
        assert!(text.contains("… [3000 more bytes]"), "{text}");
        let short = transcript(&messages, 2_150);
        assert!(short.starts_with("[1 older messages left out"), "{short}");
        assert!(short.ends_with("[person]\nlast\n\n"));
    }

    #[test]
    fn overflow_errors_are_recognised() {
        let http = |status, message: &str| ModelError::Http {
            provider: "openai-chat".into(),
            status,
            message: message.into(),
            retryable: false,
        };
        assert!(is_overflow(&http(413, "")));
        assert!(is_overflow(&http(
            400,
            "This model's maximum context length is 8192 tokens"
        )));
        assert!(is_overflow(&http(400, "prompt is too long: 210000 tokens")));
        assert!(!is_overflow(&http(400, "unknown parameter")));
    }
}
