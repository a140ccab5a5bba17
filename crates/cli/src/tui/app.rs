//! The terminal UI's state machine. [`App::handle`] takes one [`AppEvent`] — a key, something
//! the running turn did, an approval request, the end of a turn — and updates the screen's
//! state; [`App::render`] draws it on any ratatui backend. It starts turns on the
//! [`Engine`] and never waits for one: the only blocking wait is the caller's, on the channel.
//!
//! An approval or a confirmation is a modal: while one is open, keys answer it and nothing else,
//! and keys read before it was on screen for [`ARM_DELAY`] never do, so a person typing ahead
//! cannot approve a call by accident. The next approval in line is armed only once it shows;
//! [`App::modal_shown`] tells the event loop when a new one does, which then throws away what
//! waits unread in the terminal (the state machine itself makes no system call).

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender};
use std::time::{Duration, Instant};

use anyhow::Result;
use bosun_agent::conversation::Conversation;
use bosun_agent::run::Budgets;
use bosun_core::{ApprovalAnswer, Envelope, Event};
use bosun_host::approval::{PendingApproval, sanitize_for_terminal};
use bosun_plugins::PluginScope;
use tokio_util::sync::CancellationToken;

use super::engine::Engine;
pub(crate) use super::events::AppEvent;
use super::input::LineEditor;
pub(crate) use super::transcript::{Entry, earlier_entries};
// The transcript's types, as the state machine's tests name them.
#[cfg(test)]
pub(crate) use super::transcript::{ToolEntry, ToolState};
use crate::env::Env;
use crate::plugins::TrustReview;

/// How long a modal must have been on screen before a key answers it.
pub(crate) const ARM_DELAY: Duration = Duration::from_millis(400);
/// Rows a page key scrolls a long confirmation.
pub(super) const CONFIRM_PAGE: usize = 10;
/// Lines moved by PageUp and PageDown.
pub(super) const SCROLL_STEP: usize = 10;

/// The turn in progress.
pub(crate) struct Running {
    pub(super) cancel: CancellationToken,
    pub cancelling: bool,
    /// The entry the current step's text goes to.
    pub(super) text_entry: Option<usize>,
    /// What the run is doing now (the model, or a tool by name) and since when.
    pub doing: (String, Instant),
    /// When the provider is retried: why, and when the next attempt goes out.
    pub retry: Option<(String, Instant)>,
}

/// A running subagent as the status line shows it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct ChildStatus {
    pub name: String,
    pub step: u32,
    pub tool: Option<String>,
}

/// Follows one event of a subagent's run.
pub(crate) fn child_event(
    children: &mut std::collections::BTreeMap<String, ChildStatus>,
    envelope: &Envelope,
) {
    let id = envelope.run_id.clone();
    match &envelope.event {
        Event::RunStarted { command, .. } => {
            let name = command.strip_prefix("subagent ").unwrap_or(command);
            children.insert(
                id,
                ChildStatus {
                    name: sanitize_for_terminal(name),
                    ..ChildStatus::default()
                },
            );
        }
        Event::ModelStarted { step, .. } => {
            if let Some(child) = children.get_mut(&id) {
                child.step = *step;
            }
        }
        Event::ToolStarted { tool, .. } => {
            if let Some(child) = children.get_mut(&id) {
                child.tool = Some(sanitize_for_terminal(tool));
            }
        }
        Event::ToolCompleted { .. } | Event::ToolFailed { .. } => {
            if let Some(child) = children.get_mut(&id) {
                child.tool = None;
            }
        }
        Event::RunFinished { .. } => {
            children.remove(&id);
        }
        _ => {}
    }
}

/// `subagent code-reviewer: step 2, read_file` for each running child.
pub(crate) fn children_summary(
    children: &std::collections::BTreeMap<String, ChildStatus>,
) -> String {
    children
        .values()
        .map(|c| match &c.tool {
            Some(tool) => format!("subagent {}: step {}, {tool}", c.name, c.step),
            None => format!("subagent {}: step {}", c.name, c.step),
        })
        .collect::<Vec<_>>()
        .join(" · ")
}

/// A change that waits for the person's yes.
pub(crate) struct Confirm {
    pub question: String,
    pub(super) action: PluginAction,
    pub shown: Instant,
    /// Rows of a long question scrolled past (Up/Down, PgUp/PgDn, Home/End, the wheel).
    pub scroll: usize,
    /// The most rows the question can scroll, as last drawn.
    pub max_scroll: std::cell::Cell<usize>,
    /// Whether, as last drawn, the question's end was still below the box: `y` then waits
    /// until the person has scrolled to it — a review is approved only once all of it was on
    /// screen.
    pub end_unseen: std::cell::Cell<bool>,
}

impl Confirm {
    pub(super) fn new(question: String, action: PluginAction) -> Self {
        Self {
            question,
            action,
            shown: Instant::now(),
            scroll: 0,
            max_scroll: std::cell::Cell::new(0),
            end_unseen: std::cell::Cell::new(false),
        }
    }
}

pub(super) enum PluginAction {
    Trust(TrustReview),
    Untrust(String),
    /// Pin an MCP server's tools as reviewed.
    McpTrust(String, crate::mcp::Review),
    /// Forget an MCP server's approval.
    McpUntrust(String),
    /// Go back to before the last request: the conversation and the files its run changed.
    Rewind,
    /// `/init`: a run that writes AGENTS.md.
    Init,
}

/// An approval on screen.
pub(crate) struct Asked {
    pub pending: PendingApproval,
    pub shown: Instant,
    /// The rules an "always here" answer would write, while the person confirms them.
    pub remember: Option<Vec<String>>,
    /// Rows of a long input scrolled past (Up/Down in the modal).
    pub scroll: usize,
    /// The reason being typed for a denial (`f`), sent to the model with it.
    pub feedback: Option<String>,
}

/// The terminal UI's state.
pub(crate) struct App {
    pub(super) env: Arc<Env>,
    pub(super) engine: Engine,
    /// The session between turns; a running turn holds it.
    pub(super) session: Option<Conversation>,
    pub(super) session_id: String,
    /// The model entry of the next turn.
    pub(super) model: String,
    /// The permission mode of the next turn (Shift-Tab cycles it); the config's at start.
    pub(super) permission: bosun_host::permission::PermissionMode,
    /// When Esc was pressed at an idle, empty prompt: a second press soon after offers to go
    /// back to before the last message.
    pub(super) esc_armed: Option<Instant>,
    pub(super) workspace: String,
    pub(super) budgets: Budgets,
    pub(super) entries: Vec<Entry>,
    pub(super) input: LineEditor,
    pub(super) running: Option<Running>,
    /// Model steps of the current (or last) run.
    pub(super) steps: u32,
    /// Subagents running now, by their run: name, model step, tool running.
    pub(super) children: std::collections::BTreeMap<String, ChildStatus>,
    /// The session's labels as its runs reported them: the highest level of data seen, and the
    /// first untrusted input read.
    pub(super) labels: (bosun_core::Classification, Option<String>),
    /// Tool calls of the current (or last) run.
    pub(super) tool_calls: u32,
    pub(super) approvals: VecDeque<Asked>,
    pub(super) confirm: Option<Confirm>,
    /// Lines scrolled up from the bottom.
    pub(super) scroll: usize,
    /// The most lines the conversation can scroll, as last drawn.
    pub(super) max_scroll: std::cell::Cell<usize>,
    /// Whether the wheel scrolls the conversation (the terminal reports the mouse to Bosun);
    /// off, the terminal selects text with the mouse as usual. `/mouse` switches.
    pub(super) mouse: bool,
    pub(super) last_run: Option<String>,
    /// Whether the session is stored (after its first run).
    pub(super) stored: bool,
    pub(super) exit: bool,
    pub(super) quit_after_run: bool,
    /// When Ctrl-C was pressed at an idle, empty prompt: a second press soon after leaves.
    pub(super) leave_armed: Option<Instant>,
    /// Inputs sent while a run was going, started one by one after it.
    pub(super) queued: VecDeque<String>,
    /// Whether tool results show all their lines (Ctrl-O), not the first few.
    pub(super) expanded: bool,
    /// The model's window, for the "context left" figure.
    pub(super) context: bosun_agent::context::ContextBudget,
    /// Estimated tokens of the last request sent; `None` before any, or after a compaction.
    pub(super) context_used: Option<u64>,
    /// Whether the person was told that the context is nearly full (once until it is not).
    pub(super) context_warned: bool,
    /// Tokens in and out over this session's runs in this window, as the provider counted.
    pub(super) tokens: (u64, u64),
    /// The `@path` popup.
    pub(super) mentions: super::mention::Mentions,
    /// Each entry's lines as last drawn, so a frame lays out only what changed.
    pub(super) rendered: super::rendered::Rendered,
    /// `/plugins search`es under way on a worker (their results arrive as
    /// [`AppEvent::SearchEnded`]).
    pub(super) searching: usize,
}

/// The labels a conversation opens with (a resumed one's stored labels), as the UI keeps them.
pub(super) fn held_labels(open: &Conversation) -> (bosun_core::Classification, Option<String>) {
    (open.grants.taint(), open.grants.untrusted_source())
}

/// How soon a second Ctrl-C at an idle prompt must follow the first to leave.
pub(crate) const LEAVE_WINDOW: std::time::Duration = std::time::Duration::from_secs(2);

impl App {
    /// Why the model's URLs are withheld on screen: the session holds data above `PUBLIC` and
    /// has read untrusted input, so a URL the model wrote may carry that data to whoever planted
    /// the instruction. `None` otherwise.
    pub(super) fn url_guard(&self) -> Option<String> {
        let (level, untrusted) = &self.labels;
        match untrusted {
            Some(source) if *level > bosun_core::Classification::Public => Some(format!(
                "this session holds {level} data and has read untrusted input ({source}); a URL \
                 in the answer could carry that data out"
            )),
            _ => None,
        }
    }

    /// The UI for `open`, starting its turns on a runtime of its own; they report on `events`.
    pub(crate) fn new(env: Arc<Env>, open: Conversation, events: Sender<AppEvent>) -> Result<Self> {
        let engine = Engine::new(events)?;
        let workspace = env
            .workspace
            .root()
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| env.workspace.root().display().to_string());
        let mut app = Self {
            session_id: open.stored.id.clone(),
            model: open.stored.model.clone(),
            permission: env.config.user.mode.into(),
            esc_armed: None,
            workspace: sanitize_for_terminal(&workspace),
            budgets: Budgets {
                max_steps: env.config.user.agent.max_steps,
                max_tool_calls: env.config.user.agent.max_tool_calls,
            },
            entries: vec![Entry::Notice(
                "Bosun: every tool call passes one chokepoint. Type a task and press Enter; /help lists the commands.\nCtrl-C cancels a run; at the prompt, pressed twice, it leaves."
                    .to_owned(),
            )],
            input: LineEditor::default(),
            running: None,
            steps: 0,
            children: std::collections::BTreeMap::new(),
            labels: held_labels(&open),
            tool_calls: 0,
            approvals: VecDeque::new(),
            confirm: None,
            scroll: 0,
            max_scroll: std::cell::Cell::new(0),
            mouse: true,
            last_run: open.stored.run_ids.last().cloned(),
            stored: !open.stored.run_ids.is_empty(),
            exit: false,
            quit_after_run: false,
            leave_armed: None,
            queued: VecDeque::new(),
            expanded: false,
            context: context_of(&env, &open.stored.model),
            context_used: None,
            context_warned: false,
            tokens: (0, 0),
            mentions: super::mention::Mentions::default(),
            rendered: super::rendered::Rendered::default(),
            searching: 0,
            engine,
            env,
            session: None,
        };
        if !open.stored.messages.is_empty() {
            app.entries.extend(earlier_entries(&open.stored.messages));
            app.entries.push(Entry::Notice(format!(
                "resumed session {} ({} messages)",
                open.stored.id,
                open.stored.messages.len()
            )));
        }
        app.entries
            .extend(plugin_warnings(&app.env).into_iter().map(Entry::Warning));
        app.session = Some(open);
        app.input.set_history(super::history::load(&app.env));
        Ok(app)
    }

    /// True once the person asked to leave.
    pub(crate) fn should_exit(&self) -> bool {
        self.exit
    }

    /// Whether the terminal should report the mouse (its wheel) to Bosun.
    pub(crate) fn wants_mouse(&self) -> bool {
        self.mouse
    }

    /// The wheel: an approval on screen scrolls its input, else the conversation scrolls,
    /// never past its top or bottom.
    fn wheel(&mut self, lines: i32) {
        let step = usize::try_from(lines.unsigned_abs()).unwrap_or(usize::MAX);
        if self.approvals.is_empty()
            && let Some(confirm) = &mut self.confirm
        {
            confirm.scroll = if lines > 0 {
                confirm.scroll.saturating_sub(step)
            } else {
                confirm
                    .scroll
                    .saturating_add(step)
                    .min(confirm.max_scroll.get())
            };
            return;
        }
        if let Some(asked) = self.approvals.front_mut() {
            asked.scroll = if lines > 0 {
                asked.scroll.saturating_sub(step)
            } else {
                asked.scroll.saturating_add(step)
            };
            return;
        }
        self.scroll = if lines > 0 {
            self.scroll.saturating_add(step).min(self.max_scroll.get())
        } else {
            self.scroll.saturating_sub(step)
        };
    }

    /// True while a turn runs.
    pub(crate) fn is_running(&self) -> bool {
        self.running.is_some()
    }

    /// Handles one event.
    pub(crate) fn handle(&mut self, event: AppEvent) {
        match event {
            AppEvent::Key(key, at) => self.key(key, at),
            AppEvent::Redraw => {}
            AppEvent::Paste(text) => self.paste(&text),
            AppEvent::Wheel(lines) => self.wheel(lines),
            AppEvent::Notice(text) => self.entries.push(Entry::Notice(text)),
            AppEvent::Trace(envelope) => self.trace(&envelope),
            AppEvent::Approval(pending) => {
                if self.running.as_ref().is_none_or(|run| run.cancelling) {
                    pending.answer(ApprovalAnswer::Deny);
                } else {
                    self.approvals.push_back(Asked {
                        pending,
                        shown: Instant::now(),
                        remember: None,
                        scroll: 0,
                        feedback: None,
                    });
                }
            }
            AppEvent::Warnings(warnings) => self
                .entries
                .extend(warnings.into_iter().map(Entry::Warning)),
            AppEvent::TurnEnded(end) => self.turn_ended(*end),
            AppEvent::Compacted(end) => self.compacted(*end),
            AppEvent::CommandEnded(end) => self.command_ended(*end),
            AppEvent::SearchEnded(end) => self.search_ended(*end),
        }
    }

    /// After the loop ends: a running turn is cancelled and given until `deadline` to store its
    /// session, handling what it sends meanwhile.
    pub(crate) fn wind_down(&mut self, inbox: &Receiver<AppEvent>, deadline: Instant) {
        if let Some(run) = &mut self.running {
            run.cancelling = true;
            run.cancel.cancel();
        }
        self.deny_all();
        while self.running.is_some() {
            let left = deadline.saturating_duration_since(Instant::now());
            match inbox.recv_timeout(left) {
                Ok(event) => self.handle(event),
                Err(_) => break,
            }
        }
    }

    /// What to print after leaving: how to come back.
    pub(crate) fn farewell(&self) -> Option<String> {
        self.stored.then(|| {
            format!(
                "session {}  continue with: bosun --resume {}",
                self.session_id, self.session_id
            )
        })
    }
}

/// The window of the model entry `model` (its `context_window`, else the known window of its
/// model id); none when the entry cannot be opened.
pub(super) fn context_of(env: &Env, model: &str) -> bosun_agent::context::ContextBudget {
    bosun_agent::assembly::open_model(&env.config, model)
        .map(|configured| bosun_agent::context::ContextBudget::of(&configured))
        .unwrap_or_default()
}

/// Plugins that will not load as configured, said at start: invalid ones with why, changed
/// ones awaiting trust, project ones never trusted.
pub(super) fn plugin_warnings(env: &Env) -> Vec<String> {
    let Ok((_, catalog)) = env.catalog() else {
        return Vec::new();
    };
    catalog
        .entries()
        .iter()
        .filter_map(|e| {
            let name = sanitize_for_terminal(&e.local_name);
            let trust = match e.scope {
                PluginScope::User => format!("bosun plugins trust {name}"),
                PluginScope::Project { .. } => format!("/plugins trust {name}"),
            };
            match &e.state {
                bosun_plugins::PluginState::Invalid { reason } => Some(format!(
                    "plugin `{name}` cannot be used: {}",
                    sanitize_for_terminal(reason)
                )),
                bosun_plugins::PluginState::Changed { .. } => Some(format!(
                    "plugin `{name}` changed since you trusted it; its tools are held back until \
                     you review it: {trust}"
                )),
                bosun_plugins::PluginState::Untrusted => Some(format!(
                    "plugin `{name}` is not trusted yet; its tools are not offered: {trust}"
                )),
                _ => None,
            }
        })
        .collect()
}
