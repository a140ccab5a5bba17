//! `bosun sessions show|rm|prune`: one stored conversation read back, removed, or the old ones
//! cleared. Only files the session store recognises as sessions are ever removed.

use std::time::Duration;

use anyhow::{Result, bail};
use bosun_agent::session_store::SessionStore;
use bosun_host::approval::sanitize_for_terminal;
use bosun_host::config::bosun_home;
use bosun_models::{AssistantPart, Message};

use crate::env::print_json;
use crate::exit;
use crate::term::outln;

/// Characters of a tool result shown by `sessions show`.
const RESULT_PREVIEW: usize = 200;

/// `bosun sessions show ID [--json]`: the session's header and its conversation.
pub fn show(which: &str, json: bool) -> Result<u8> {
    let store = SessionStore::in_home(&bosun_home()?);
    let session = store.load(which)?;
    if json {
        print_json(&session)?;
        return Ok(exit::OK);
    }
    outln!("session {}", session.id);
    outln!("title:     {}", sanitize_for_terminal(&session.title));
    outln!("model:     {}", sanitize_for_terminal(&session.model));
    outln!(
        "workspace: {}",
        sanitize_for_terminal(&session.workspace.display().to_string())
    );
    outln!(
        "created:   {}   last used: {}",
        session.created_at.format("%Y-%m-%d %H:%M"),
        session.updated_at.format("%Y-%m-%d %H:%M")
    );
    outln!("runs:      {}", session.run_ids.join(", "));
    // What carrying it on starts from: the stored labels, or the top level when it has none.
    let labels = session.resumed_labels();
    outln!(
        "labels:    {}{}",
        labels.level,
        labels
            .raised_by
            .map(|by| format!(" (from {})", sanitize_for_terminal(&by)))
            .unwrap_or_default()
    );
    if let Some(source) = labels.untrusted {
        outln!("untrusted: {}", sanitize_for_terminal(&source));
    }
    if session.dropped_messages > 0 {
        outln!(
            "({} older messages were dropped to keep the session bounded)",
            session.dropped_messages
        );
    }
    for message in &session.messages {
        outln!();
        match message {
            Message::User { text, images } => {
                for image in images {
                    outln!("> {}", image.label());
                }
                outln!("> {}", sanitize_for_terminal(text));
            }
            Message::Assistant { parts } => {
                for part in parts {
                    match part {
                        AssistantPart::Text { text } => outln!("{}", sanitize_for_terminal(text)),
                        AssistantPart::ToolCall(call) => outln!(
                            "→ {} {}",
                            sanitize_for_terminal(&call.name),
                            sanitize_for_terminal(&call.input.to_string())
                        ),
                        AssistantPart::Reasoning(_) => {}
                    }
                }
            }
            Message::Tool(result) => {
                let preview: String = result.content.chars().take(RESULT_PREVIEW).collect();
                let more = if result.content.chars().count() > RESULT_PREVIEW {
                    "…"
                } else {
                    ""
                };
                outln!(
                    "{} {}{more}",
                    if result.is_error { "✗" } else { "←" },
                    sanitize_for_terminal(&preview)
                );
            }
        }
    }
    Ok(exit::OK)
}

/// `bosun sessions rm ID`: removes one stored session (an id, a unique prefix or `last`).
pub fn rm(which: &str) -> Result<u8> {
    let store = SessionStore::in_home(&bosun_home()?);
    let removed = store.remove(which)?;
    outln!(
        "removed session {} ({})",
        removed.id,
        sanitize_for_terminal(&removed.title)
    );
    Ok(exit::OK)
}

/// Parses `30d`, `12h`, `90m` or `2w`.
pub fn parse_age(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text.len().saturating_sub(1);
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().map_err(|_| {
        format!("`{text}` is not an age: write a number and a unit, like 30d, 12h, 2w")
    })?;
    let seconds = match unit {
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 7 * 86_400,
        _ => {
            return Err(format!(
                "`{text}` has no known unit: use m (minutes), h (hours), d (days) or w (weeks)"
            ));
        }
    };
    Ok(Duration::from_secs(number.saturating_mul(seconds)))
}

/// `bosun sessions prune [--older-than AGE] [--keep N] [--all]`: removes this workspace's (every
/// workspace's with `--all`) sessions last used longer ago than AGE, or beyond the N most recent.
pub fn prune(older_than: Option<Duration>, keep: Option<usize>, all: bool) -> Result<u8> {
    if older_than.is_none() && keep.is_none() {
        bail!("say what to prune: --older-than AGE (like 30d) and/or --keep N");
    }
    let store = SessionStore::in_home(&bosun_home()?);
    let (mut sessions, _) = store.list()?;
    if !all {
        let cwd = std::env::current_dir()?;
        let here = bosun_host::Workspace::discover(&cwd)?;
        sessions.retain(|s| s.workspace == here.root());
    }
    let before = match older_than {
        Some(age) => Some(chrono::Utc::now() - chrono::Duration::from_std(age)?),
        None => None,
    };
    let removed = store.prune(&sessions, before, keep)?;
    for session in &removed {
        outln!(
            "removed {}  {}",
            session.id,
            sanitize_for_terminal(&session.title)
        );
    }
    outln!(
        "{} session(s) removed, {} kept",
        removed.len(),
        sessions.len() - removed.len()
    );
    Ok(exit::OK)
}
