//! What the terminal UI reacts to: keys, the running turn's events and trace, approval
//! requests, and the end of a turn. The engine sends these; the state machine takes them.

use std::time::Instant;

use bosun_agent::conversation::Conversation;
use bosun_agent::turn::TurnDone;
use bosun_core::Envelope;
use bosun_host::approval::PendingApproval;
use ratatui::crossterm::event::KeyEvent;

/// Everything the UI reacts to.
pub(crate) enum AppEvent {
    /// A key, with when the terminal thread read it.
    Key(KeyEvent, Instant),
    /// The terminal changed size.
    Redraw,
    /// Text pasted into the terminal (bracketed paste).
    Paste(String),
    /// The mouse wheel turned: lines up (positive) or down (negative).
    Wheel(i32),
    /// An event of the running turn, recorded or live (redacted).
    Trace(Box<Envelope>),
    /// Policy asks the person about a call.
    Approval(PendingApproval),
    /// Something the person should know while the turn gets ready.
    Notice(String),
    /// What building the turn warned about.
    Warnings(Vec<String>),
    /// The turn is over and the session stored.
    TurnEnded(Box<TurnEnd>),
    /// A `/compact` is over.
    Compacted(Box<CompactEnd>),
    /// A command the person typed is over.
    CommandEnded(Box<CommandEnd>),
    /// A `/plugins search` is over.
    SearchEnded(Box<SearchEnd>),
}

impl AppEvent {
    /// A key read now.
    pub(crate) fn key(key: KeyEvent) -> Self {
        Self::Key(key, Instant::now())
    }
}

/// A turn's end: the session back, and how it went.
pub(crate) struct TurnEnd {
    pub open: Conversation,
    /// `None` when the turn could not start.
    pub run_id: Option<String>,
    /// Why the turn could not start, or what it did.
    pub result: Result<TurnDone, String>,
}

/// A `/compact`'s end: the session back (compacted and stored, or as it was), and how it went.
pub(crate) struct CompactEnd {
    pub open: Conversation,
    pub result: Result<bosun_agent::compaction::Compacted, String>,
}

/// A `/plugins search`'s end: what was searched for, and the lines to show or why it failed.
pub(crate) struct SearchEnd {
    pub query: String,
    pub result: Result<String, String>,
}

/// A command the person runs themselves, through the chokepoint and the sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PersonCommand {
    /// `!cmd`: a shell command line, run by `sh -c`; its output goes into the conversation.
    Shell(String),
    /// `/review [FOCUS]`: the working tree's diff against `HEAD`, then a review of it.
    Review(Option<String>),
    /// `/plugins install`: one `plugin_install` call naming a registry, so the plugin is
    /// fetched, verified and reviewed before the approval box asks (with the review in it).
    Install {
        name: String,
        version: Option<String>,
        registry: String,
    },
}

impl PersonCommand {
    /// What the trace says started it.
    pub(crate) fn label(&self) -> String {
        match self {
            Self::Shell(line) => format!("!{line}"),
            Self::Review(_) => "/review".to_owned(),
            Self::Install { name, .. } => format!("/plugins install {name}"),
        }
    }

    /// The tool the command calls.
    pub(crate) fn tool(&self) -> &'static str {
        match self {
            Self::Shell(_) | Self::Review(_) => "run_command",
            Self::Install { .. } => "plugin_install",
        }
    }

    /// The input of the call. A shell line is given to `sh -c` whole, so policy
    /// judges `process.spawn:sh` and the approval box shows the line as typed.
    pub(crate) fn input(&self) -> serde_json::Value {
        match self {
            Self::Shell(line) => serde_json::json!({"program": "sh", "args": ["-c", line]}),
            Self::Review(_) => serde_json::json!({
                "program": "git",
                "args": ["--no-pager", "diff", "HEAD", "--no-color", "--no-ext-diff"],
            }),
            Self::Install {
                name,
                version,
                registry,
            } => {
                let mut input = serde_json::json!({"name": name, "registry": registry});
                if let Some(version) = version {
                    input["version"] = serde_json::Value::from(version.as_str());
                }
                input
            }
        }
    }
}

/// The end of a person's command: the session back, and the call's result or why it could not
/// be made.
pub(crate) struct CommandEnd {
    pub open: Conversation,
    pub command: PersonCommand,
    pub result: Result<bosun_core::ToolResult, String>,
}
