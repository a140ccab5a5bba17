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
