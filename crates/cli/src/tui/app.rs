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
use bosun_agent::run::{Budget, Budgets, RunEnd};
use bosun_core::{ApprovalAnswer, Envelope, Event};
use bosun_host::approval::{PendingApproval, sanitize_for_terminal};
use bosun_models::{AssistantPart, Message};
use bosun_plugins::PluginScope;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::engine::Engine;
pub(crate) use super::events::{AppEvent, TurnEnd};
use super::input::{Edit, LineEditor};
use super::slash::{self, Slash};
pub(crate) use super::transcript::{Entry, ToolEntry, ToolState};
use crate::env::Env;
use crate::plugins::TrustReview;

/// How long a modal must have been on screen before a key answers it.
pub(crate) const ARM_DELAY: Duration = Duration::from_millis(400);
/// Rows a page key scrolls a long confirmation.
const CONFIRM_PAGE: usize = 10;
/// Lines moved by PageUp and PageDown.
const SCROLL_STEP: usize = 10;
/// Characters of a tool's input or output shown in the conversation.
const SHORT_CHARS: usize = 120;

/// The turn in progress.
pub(crate) struct Running {
    cancel: CancellationToken,
    pub cancelling: bool,
    /// The entry the current step's text goes to.
    text_entry: Option<usize>,
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
    action: PluginAction,
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
    fn new(question: String, action: PluginAction) -> Self {
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

enum PluginAction {
    Trust(TrustReview),
    Untrust(String),
    /// Pin an MCP server's tools as reviewed.
    McpTrust(String, crate::mcp::Review),
    /// Forget an MCP server's approval.
    McpUntrust(String),
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
    engine: Engine,
    /// The session between turns; a running turn holds it.
    session: Option<Conversation>,
    pub(super) session_id: String,
    /// The model entry of the next turn.
    pub(super) model: String,
    pub(super) mode: String,
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
    last_run: Option<String>,
    /// Whether the session is stored (after its first run).
    stored: bool,
    exit: bool,
    quit_after_run: bool,
    /// When Ctrl-C was pressed at an idle, empty prompt: a second press soon after leaves.
    pub(super) leave_armed: Option<Instant>,
    /// Inputs sent while a run was going, started one by one after it.
    pub(super) queued: VecDeque<String>,
    /// Whether tool results show all their lines (Ctrl-O), not the first few.
    pub(super) expanded: bool,
    /// Whether the running turn is a `/compact`.
    compacting: bool,
    /// Tokens in and out over this session's runs in this window, as the provider counted.
    pub(super) tokens: (u64, u64),
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
            mode: env.config.user.mode.to_string(),
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
            labels: (bosun_core::Classification::Public, None),
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
            compacting: false,
            tokens: (0, 0),
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
        app.input.set_history(history::load(&app.env));
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

    fn key(&mut self, key: KeyEvent, at: Instant) {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && key.code == KeyCode::Char('c') {
            self.interrupt(at);
            return;
        }
        self.leave_armed = None;
        if let Some(asked) = self.approvals.front_mut() {
            if at < asked.shown + ARM_DELAY {
                return;
            }
            if asked.remember.is_some() {
                // Confirming the rules of an "always here" answer.
                match key.code {
                    KeyCode::Char('y' | 'Y') => {}
                    KeyCode::Char('n' | 'N') | KeyCode::Esc => {
                        asked.remember = None;
                        asked.shown = at;
                        return;
                    }
                    _ => return,
                }
                if let Some(asked) = self.answered(at) {
                    asked.pending.answer(ApprovalAnswer::AllowAlways);
                }
                return;
            }
            if let Some(text) = &mut asked.feedback {
                // Typing the reason for a denial: Enter denies with it, Esc goes back.
                match key.code {
                    KeyCode::Enter => {
                        let text = text.trim().to_owned();
                        if let Some(asked) = self.answered(at) {
                            if text.is_empty() {
                                asked.pending.answer(ApprovalAnswer::Deny);
                            } else {
                                asked.pending.deny_with(text);
                            }
                        }
                    }
                    KeyCode::Esc => {
                        asked.feedback = None;
                        asked.shown = at;
                    }
                    KeyCode::Backspace => {
                        text.pop();
                    }
                    KeyCode::Char(c) if !ctrl && text.chars().count() < 500 => text.push(c),
                    _ => {}
                }
                return;
            }
            let answer = match key.code {
                KeyCode::Char('f' | 'F') => {
                    asked.feedback = Some(String::new());
                    return;
                }
                // Scrolling a long input is no answer.
                KeyCode::Up => {
                    asked.scroll = asked.scroll.saturating_sub(1);
                    return;
                }
                KeyCode::Down => {
                    asked.scroll += 1;
                    return;
                }
                KeyCode::Char('o' | 'O' | 'y' | 'Y') => ApprovalAnswer::AllowOnce,
                KeyCode::Char('s' | 'S') => ApprovalAnswer::AllowSession,
                KeyCode::Char('w' | 'W') => {
                    let request = &asked.pending.request;
                    match bosun_host::remembered::rules_for(
                        &request.action,
                        &request.capabilities,
                        &request.tool,
                    ) {
                        Ok(rules) => {
                            asked.remember = Some(bosun_host::remembered::describe(&rules));
                            // The confirmation is armed anew: type-ahead cannot answer it.
                            asked.shown = at;
                        }
                        Err(why) => self
                            .entries
                            .push(Entry::Warning(format!("cannot remember this call: {why}"))),
                    }
                    return;
                }
                KeyCode::Char('d' | 'D') | KeyCode::Esc => ApprovalAnswer::Deny,
                _ => return,
            };
            if let Some(asked) = self.answered(at) {
                asked.pending.answer(answer);
            }
            return;
        }
        if let Some(confirm) = &mut self.confirm {
            // Scrolling needs no arming: it answers nothing.
            let most = confirm.max_scroll.get();
            let scrolled = match key.code {
                KeyCode::Up => Some(confirm.scroll.saturating_sub(1)),
                KeyCode::Down => Some(confirm.scroll.saturating_add(1).min(most)),
                KeyCode::PageUp => Some(confirm.scroll.saturating_sub(CONFIRM_PAGE)),
                KeyCode::PageDown => Some(confirm.scroll.saturating_add(CONFIRM_PAGE).min(most)),
                KeyCode::Home => Some(0),
                KeyCode::End => Some(most),
                _ => None,
            };
            if let Some(scroll) = scrolled {
                confirm.scroll = scroll;
                return;
            }
            if at < confirm.shown + ARM_DELAY {
                return;
            }
            match key.code {
                KeyCode::Char('y' | 'Y') => {
                    // Part of the question was never on screen: not an answer yet.
                    if confirm.end_unseen.get() {
                        return;
                    }
                    if let Some(confirm) = self.confirm.take() {
                        self.confirmed(confirm.action);
                    }
                }
                KeyCode::Char('n' | 'N') | KeyCode::Esc => {
                    self.confirm = None;
                    self.entries
                        .push(Entry::Notice("nothing changed".to_owned()));
                }
                _ => {}
            }
            return;
        }
        match key.code {
            KeyCode::PageUp => {
                self.scroll = (self.scroll + SCROLL_STEP).min(self.max_scroll.get());
            }
            KeyCode::PageDown => self.scroll = self.scroll.saturating_sub(SCROLL_STEP),
            KeyCode::End if self.input.is_empty() => self.scroll = 0,
            KeyCode::Home if self.input.is_empty() => self.scroll = self.max_scroll.get(),
            KeyCode::Char('d') if ctrl && self.input.is_empty() && self.running.is_none() => {
                self.exit = true;
            }
            KeyCode::Tab => self.complete_mention(),
            KeyCode::Char('o') if ctrl => self.expanded = !self.expanded,
            _ => {
                if let Edit::Submit(line) = self.input.key(key) {
                    self.submit(line);
                }
            }
        }
    }

    /// Text pasted into the terminal: inserted into the input whole (a paste never answers an
    /// approval or sends anything).
    fn paste(&mut self, text: &str) {
        // Into a denial's reason being typed: text only, it answers nothing.
        if let Some(reason) = self.approvals.front_mut().and_then(|a| a.feedback.as_mut()) {
            reason.extend(text.chars().filter(|c| !c.is_control()).take(500));
            return;
        }
        if self.approvals.is_empty() && self.confirm.is_none() {
            self.leave_armed = None;
            self.input.insert_str(text);
        }
    }

    /// Tab after `@partial/path`: completes it from the workspace's files — the one match, or
    /// the longest common start with the candidates listed.
    fn complete_mention(&mut self) {
        let Some(partial) = self.input.mention() else {
            return;
        };
        let root = self.env.workspace.root();
        let matches = mention_candidates(root, &partial);
        match matches.as_slice() {
            [] => {}
            [one] => self.input.complete_mention(one),
            many => {
                let common = common_prefix(many);
                if common.len() > partial.len() {
                    self.input.complete_mention(&common);
                } else {
                    let shown: Vec<&str> = many.iter().take(20).map(String::as_str).collect();
                    let more = many.len().saturating_sub(shown.len());
                    let mut text = shown.join("  ");
                    if more > 0 {
                        text.push_str(&format!("  … {more} more"));
                    }
                    self.entries
                        .push(Entry::Notice(sanitize_for_terminal(&text)));
                }
            }
        }
    }

    /// Ctrl-C: cancels a run (a second press while it winds down leaves); at an idle prompt it
    /// clears a typed line, and on an empty one asks for a second press before leaving.
    fn interrupt(&mut self, at: Instant) {
        match &mut self.running {
            Some(run) if !run.cancelling => {
                run.cancelling = true;
                run.cancel.cancel();
                self.deny_all();
                if !self.queued.is_empty() {
                    self.entries.push(Entry::Notice(format!(
                        "dropped {} queued task(s) with the cancelled run",
                        self.queued.len()
                    )));
                    self.queued.clear();
                }
            }
            Some(_) => self.exit = true,
            None if !self.input.is_empty() => {
                self.input.clear();
                self.leave_armed = None;
            }
            None => match self.leave_armed {
                Some(first) if at.saturating_duration_since(first) <= LEAVE_WINDOW => {
                    self.exit = true;
                }
                _ => self.leave_armed = Some(at),
            },
        }
    }

    /// Takes the approval on screen off it, answered by a key read at `at`. What shows next —
    /// the next approval in line or a confirmation behind it — is armed from `at`: it was asked
    /// earlier but is on screen only now, and a second press of the key that answered this one
    /// must not answer it too.
    fn answered(&mut self, at: Instant) -> Option<Asked> {
        let asked = self.approvals.pop_front();
        if let Some(next) = self.approvals.front_mut() {
            next.shown = next.shown.max(at);
        } else if let Some(confirm) = &mut self.confirm {
            confirm.shown = confirm.shown.max(at);
        }
        asked
    }

    /// When the modal on screen (the first approval in line, else a confirmation) was armed;
    /// `None` when there is none. A new value means a new question: the caller throws away
    /// the terminal's unread input then, as keys typed before it are no answer.
    pub(crate) fn modal_shown(&self) -> Option<Instant> {
        match self.approvals.front() {
            Some(asked) => Some(asked.shown),
            None => self.confirm.as_ref().map(|confirm| confirm.shown),
        }
    }

    /// Refuses every open approval (the run is being cancelled).
    fn deny_all(&mut self) {
        for asked in self.approvals.drain(..) {
            asked.pending.answer(ApprovalAnswer::Deny);
        }
    }

    fn submit(&mut self, line: String) {
        let line = line.trim().to_owned();
        if line.is_empty() {
            return;
        }
        self.scroll = 0;
        if line.starts_with('/') {
            self.entries
                .push(Entry::Command(sanitize_for_terminal(&line)));
            self.slash(&line);
            return;
        }
        if self.running.is_some() {
            // Sent when the run ends, in order.
            self.entries.push(Entry::Notice(format!(
                "queued (sent when this run ends): {}",
                sanitize_for_terminal(&line)
            )));
            self.queued.push_back(line);
            return;
        }
        history::append(&self.env, &line);
        self.entries.push(Entry::User(line.clone()));
        self.start_turn(line, "");
    }

    /// Starts a turn with `task`; `note`, when given, is shown instead of the task.
    fn start_turn(&mut self, task: String, note: &str) {
        let Some(mut open) = self.session.take() else {
            return;
        };
        if !note.is_empty() {
            self.entries.push(Entry::Notice(note.to_owned()));
        }
        self.model.clone_into(&mut open.stored.model);
        let cancel = self.engine.start(self.env.clone(), open, task);
        self.steps = 0;
        self.children.clear();
        self.tool_calls = 0;
        self.running = Some(Running {
            cancel,
            cancelling: false,
            text_entry: None,
            doing: ("starting".to_owned(), Instant::now()),
            retry: None,
        });
    }

    fn slash(&mut self, line: &str) {
        let command = match slash::parse(line) {
            Ok(command) => command,
            Err(message) => {
                self.entries.push(Entry::Error(message));
                return;
            }
        };
        let env = self.env.clone();
        let shown = match command {
            Slash::Help => Ok(slash::help()),
            Slash::Mouse => {
                self.mouse = !self.mouse;
                Ok(if self.mouse {
                    "mouse: the wheel scrolls the conversation (hold Shift to select text; /mouse again to leave the mouse to the terminal)".to_owned()
                } else {
                    "mouse: left to the terminal — select and copy as usual; PageUp/PageDown scroll (/mouse again for the wheel)".to_owned()
                })
            }
            Slash::Plugins => slash::plugins(&env),
            Slash::Trust(name) => self.ask_trust(&name).map(|()| String::new()),
            Slash::Untrust(name) => self.ask_untrust(&name).map(|()| String::new()),
            Slash::Policy => Ok(slash::policy(&env)),
            Slash::PolicyCheck {
                action,
                capabilities,
            } => slash::policy_check(&env, &action, &capabilities),
            // The config is read again, so a model added since the start is there.
            Slash::Model(None) => self
                .reload_env()
                .map(|env| slash::models(&env, &self.model)),
            Slash::Model(Some(name)) => self.reload_env().and_then(|env| {
                bosun_agent::assembly::open_model(&env.config, &name)
                    .map_err(anyhow::Error::from)
                    .map(|_| {
                        self.model = name.clone();
                        format!("model: {name} from the next turn")
                    })
            }),
            Slash::Mcp => crate::mcp::list_lines(&env).map(|lines| lines.join("\n")),
            Slash::McpTrust(name) => self.ask_mcp_trust(&name).map(|()| String::new()),
            Slash::McpUntrust(name) => {
                self.confirm = Some(Confirm::new(
                    format!(
                        "Forget the approval of MCP server `{name}`? Its tools will not be offered until it is approved again."
                    ),
                    PluginAction::McpUntrust(name),
                ));
                Ok(String::new())
            }
            Slash::Clear => self.clear(),
            Slash::Resume(which) => self.resume(which.as_deref()),
            Slash::Diff => Ok(self.diff()),
            Slash::Init => self.init(),
            Slash::Compact => self.compact(),
            Slash::Skills => Ok(slash::skills(&env)),
            Slash::Sessions => slash::sessions(&env, &self.session_id),
            Slash::Inspect => {
                let which = self.last_run.as_deref().unwrap_or("last");
                crate::commands::inspect_text(&env.config.home, which)
                    .map(|text| text.trim_end().to_owned())
            }
            Slash::Quit => {
                if let Some(run) = &mut self.running {
                    run.cancelling = true;
                    run.cancel.cancel();
                    self.quit_after_run = true;
                    self.deny_all();
                    Ok("cancelling the run; leaving when the session is stored".to_owned())
                } else {
                    self.exit = true;
                    Ok(String::new())
                }
            }
        };
        match shown {
            Ok(text) if text.is_empty() => {}
            Ok(text) => self.entries.push(Entry::Notice(text)),
            Err(e) => self.entries.push(Entry::Error(format!("{e:#}"))),
        }
    }

    /// Reads the configuration again (for `/model`): a config that no longer parses is
    /// reported and the one in use kept.
    fn reload_env(&mut self) -> Result<Arc<Env>> {
        let env = crate::env::load_in(self.env.workspace.root(), &self.env.config.home)
            .map_err(|e| e.context("reading the configuration again"))?;
        self.env = Arc::new(env);
        Ok(self.env.clone())
    }

    /// Refuses what needs the session while a run holds it.
    fn idle(&self, what: &str) -> Result<()> {
        if self.running.is_some() {
            anyhow::bail!("{what} waits for the run to end (Ctrl-C cancels it)");
        }
        Ok(())
    }

    /// `/clear`: a new session in this window; the old one stays stored.
    fn clear(&mut self) -> Result<String> {
        self.idle("/clear")?;
        let open = crate::run::open_session(&self.env, None, Some(&self.model))?;
        let before = std::mem::replace(&mut self.session_id, open.stored.id.clone());
        let kept = self.stored;
        self.session = Some(open);
        self.entries.clear();
        self.stored = false;
        self.last_run = None;
        self.steps = 0;
        self.tool_calls = 0;
        self.tokens = (0, 0);
        self.labels = (bosun_core::Classification::Public, None);
        self.scroll = 0;
        Ok(if kept {
            format!("new session; the previous one is stored: /resume or `bosun --resume {before}`")
        } else {
            "new session".to_owned()
        })
    }

    /// `/resume`: this workspace's sessions numbered; `/resume N` or `/resume ID` continues one.
    fn resume(&mut self, which: Option<&str>) -> Result<String> {
        let store = bosun_agent::session_store::SessionStore::in_home(&self.env.config.home);
        let (mut sessions, _) = store.list()?;
        sessions.retain(|s| s.workspace == self.env.workspace.root() && s.id != self.session_id);
        let Some(which) = which else {
            if sessions.is_empty() {
                return Ok("no other session in this workspace".to_owned());
            }
            let mut lines: Vec<String> = sessions
                .iter()
                .take(20)
                .enumerate()
                .map(|(i, s)| {
                    format!(
                        "{:>2}. {}  {}  {}",
                        i + 1,
                        s.updated_at.format("%Y-%m-%d %H:%M"),
                        &s.id[..s.id.len().min(13)],
                        sanitize_for_terminal(&s.title)
                    )
                })
                .collect();
            lines.push("/resume N continues one".to_owned());
            return Ok(lines.join("\n"));
        };
        self.idle("/resume")?;
        let id = match which.parse::<usize>() {
            Ok(n) if (1..=sessions.len()).contains(&n) => sessions[n - 1].id.clone(),
            Ok(n) => anyhow::bail!("no session {n}: /resume lists them"),
            Err(_) => which.to_owned(),
        };
        let open = crate::run::open_session(&self.env, Some(&id), None)?;
        self.session_id.clone_from(&open.stored.id);
        self.model.clone_from(&open.stored.model);
        self.entries = earlier_entries(&open.stored.messages);
        self.stored = !open.stored.run_ids.is_empty();
        self.last_run = open.stored.run_ids.last().cloned();
        self.tokens = (0, 0);
        self.labels = (bosun_core::Classification::Public, None);
        self.scroll = 0;
        let text = format!(
            "resumed session {} ({} messages)",
            open.stored.id,
            open.stored.messages.len()
        );
        self.session = Some(open);
        Ok(text)
    }

    /// `/diff`: what this session's tools changed — each patch's diff, each file created.
    fn diff(&self) -> String {
        let mut lines = Vec::new();
        for entry in &self.entries {
            let Entry::Tool(tool) = entry else { continue };
            let ToolState::Done(summary) = &tool.state else {
                continue;
            };
            match tool.tool.as_str() {
                "apply_patch" => {
                    lines.push(summary.clone());
                    lines.extend(tool.detail.iter().map(|d| format!("  {}", d.text)));
                }
                "create_file" => lines.push(summary.clone()),
                _ => {}
            }
        }
        if lines.is_empty() {
            "no changes by this session's tools (commands it ran are not tracked: run `git status`)"
                .to_owned()
        } else {
            lines.join("\n")
        }
    }

    /// `/init`: asks the model, as an ordinary turn, to write `AGENTS.md` (creating the file
    /// asks for approval like any write).
    fn init(&mut self) -> Result<String> {
        self.idle("/init")?;
        if self.env.workspace.root().join("AGENTS.md").exists() {
            anyhow::bail!("AGENTS.md exists already: ask the model to update it if you want");
        }
        self.start_turn(INIT_TASK.to_owned(), "/init: writing AGENTS.md");
        Ok(String::new())
    }

    /// `/compact`: a turn in which the model summarises the conversation; when it ends, the
    /// session keeps only the summary.
    fn compact(&mut self) -> Result<String> {
        self.idle("/compact")?;
        if self
            .session
            .as_ref()
            .is_none_or(|open| open.stored.messages.is_empty())
        {
            anyhow::bail!("nothing to compact yet");
        }
        self.compacting = true;
        self.start_turn(
            COMPACT_TASK.to_owned(),
            "/compact: summarising the conversation",
        );
        Ok(String::new())
    }

    fn project_plugin(&self, name: &str) -> Result<()> {
        let (_, catalog) = self.env.catalog()?;
        let entry = crate::plugins::find(&catalog, name)?;
        if matches!(entry.scope, PluginScope::User) {
            anyhow::bail!(
                "`{name}` is a user plugin: it is trusted when enabled, with `bosun plugins enable {name}`, and stopped with `bosun plugins disable {name}`"
            );
        }
        Ok(())
    }

    fn ask_trust(&mut self, name: &str) -> Result<()> {
        self.project_plugin(name)?;
        let (_, catalog) = self.env.catalog()?;
        let Some(review) = crate::plugins::review_trust(&catalog, Some(name))? else {
            return Ok(());
        };
        self.confirm = Some(Confirm::new(
            format!(
                "{}Trust `{name}` exactly as it is?",
                sanitize_for_terminal_lines(&review.text)
            ),
            PluginAction::Trust(review),
        ));
        Ok(())
    }

    fn ask_untrust(&mut self, name: &str) -> Result<()> {
        self.project_plugin(name)?;
        self.confirm = Some(Confirm::new(
            format!(
                "Forget the trust of `{name}`? Its code will not load until it is trusted again."
            ),
            PluginAction::Untrust(name.to_owned()),
        ));
        Ok(())
    }

    /// `/mcp trust NAME`: starts the server, shows what it offers and asks before pinning.
    fn ask_mcp_trust(&mut self, name: &str) -> Result<()> {
        let review = crate::mcp::review(&self.env, name)?;
        self.confirm = Some(Confirm::new(
            format!(
                "MCP server `{name}` offers:\n{}\nApprove these {} tool(s) exactly as shown?",
                review.text, review.count
            ),
            PluginAction::McpTrust(name.to_owned(), review),
        ));
        Ok(())
    }

    fn confirmed(&mut self, action: PluginAction) {
        let done = match action {
            PluginAction::Trust(review) => {
                let names = review.names.join(", ");
                crate::plugins::trust_store(&self.env.config)
                    .and_then(|mut store| crate::plugins::record_trust(&mut store, review))
                    .map(|()| format!("trusted {names}; its tools load from the next turn"))
            }
            PluginAction::Untrust(name) => crate::plugins::untrust_named(&self.env, &name),
            PluginAction::McpTrust(name, review) => crate::mcp::record(&self.env, &name, review)
                .map(|text| format!("{text}; its tools are offered from the next turn")),
            PluginAction::McpUntrust(name) => crate::mcp::remove(&self.env, &name),
        };
        self.entries.push(match done {
            Ok(text) => Entry::Notice(text),
            Err(e) => Entry::Error(format!("{e:#}")),
        });
    }

    fn trace(&mut self, envelope: &Envelope) {
        // A subagent's events: its progress in the status line, nothing in the transcript.
        if envelope.parent_run_id.is_some() {
            child_event(&mut self.children, envelope);
            return;
        }
        let Some(run) = &mut self.running else {
            return;
        };
        let tool = tool_entry;
        match &envelope.event {
            Event::ModelStarted { step, .. } => {
                self.steps = *step;
                run.text_entry = None;
                run.doing = ("thinking".to_owned(), Instant::now());
            }
            Event::ModelRetrying {
                delay_ms, reason, ..
            } => {
                run.retry = Some((
                    sanitize_for_terminal(reason),
                    Instant::now() + std::time::Duration::from_millis(*delay_ms),
                ));
            }
            Event::ModelCompleted {
                usage: Some(usage), ..
            } => {
                self.tokens.0 += usage.input_tokens;
                self.tokens.1 += usage.output_tokens;
            }
            Event::ModelText { text, .. } => {
                run.retry = None;
                let text = text.replace('\t', "    ");
                match run.text_entry.and_then(|i| self.entries.get_mut(i)) {
                    Some(Entry::Assistant(shown)) => shown.push_str(&text),
                    _ => {
                        run.text_entry = Some(self.entries.len());
                        self.entries.push(Entry::Assistant(text));
                    }
                }
            }
            Event::ModelReasoning { text, .. } => {
                run.retry = None;
                run.text_entry = None;
                self.entries.push(Entry::Reasoning(text.clone()));
            }
            Event::TaintRaised { to, .. } => self.labels.0 = self.labels.0.max(*to),
            Event::UntrustedInput { source, .. } => {
                self.labels.1.get_or_insert_with(|| source.clone());
            }
            Event::ContextElided { tool, bytes, .. } => self.entries.push(Entry::Notice(format!(
                "elided {bytes} bytes of an earlier {} output to fit the context window",
                sanitize_for_terminal(tool)
            ))),
            Event::ToolProposed {
                call_id,
                tool,
                input,
            } => {
                self.tool_calls += 1;
                run.text_entry = None;
                run.doing = (sanitize_for_terminal(tool), Instant::now());
                self.entries.push(Entry::Tool(ToolEntry {
                    call_id: call_id.clone(),
                    tool: sanitize_for_terminal(tool),
                    input: short(&input.to_string()),
                    decision: None,
                    detail: Vec::new(),
                    answer: None,
                    state: ToolState::Proposed,
                }));
            }
            Event::ToolDecided {
                call_id,
                explanation,
                ..
            } => {
                if let Some(entry) = tool(&mut self.entries, call_id) {
                    entry.decision = Some(sanitize_for_terminal(&explanation.summary()));
                }
            }
            Event::ApprovalAsked { call_id, .. } => {
                run.doing = ("your answer".to_owned(), Instant::now());
                if let Some(entry) = tool(&mut self.entries, call_id) {
                    entry.state = ToolState::Asking;
                }
            }
            Event::ApprovalAnswered { call_id, answer } => {
                if let Some(entry) = tool(&mut self.entries, call_id) {
                    entry.answer = Some(*answer);
                }
            }
            Event::ToolStarted {
                call_id,
                tool: name,
            } => {
                run.doing = (sanitize_for_terminal(name), Instant::now());
                if let Some(entry) = tool(&mut self.entries, call_id) {
                    entry.state = ToolState::Running;
                }
            }
            Event::ToolCompleted {
                call_id, output, ..
            } => {
                if let Some(entry) = tool(&mut self.entries, call_id) {
                    let (summary, detail) = super::results::summarize(&entry.tool, output);
                    entry.state = ToolState::Done(summary);
                    entry.detail = detail;
                }
            }
            Event::ToolFailed { call_id, error, .. } => {
                if let Some(entry) = tool(&mut self.entries, call_id) {
                    entry.state = ToolState::Failed {
                        code: error.code.to_string(),
                        message: sanitize_for_terminal(&error.message),
                    };
                }
            }
            _ => {}
        }
    }

    fn turn_ended(&mut self, end: TurnEnd) {
        let TurnEnd {
            open,
            run_id,
            result,
        } = end;
        self.session_id.clone_from(&open.stored.id);
        let model = open.stored.model.clone();
        let mut open = open;
        if std::mem::take(&mut self.compacting) {
            self.compacted(&mut open, &result);
        }
        self.session = Some(open);
        self.running = None;
        self.deny_all();
        if run_id.is_some() {
            self.last_run = run_id;
        }
        match result {
            Err(e) => self
                .entries
                .push(Entry::Error(format!("the run could not start: {e}"))),
            Ok(done) => {
                self.entries
                    .extend(done.warnings.into_iter().map(Entry::Warning));
                match &done.report.end {
                    RunEnd::Completed => {}
                    RunEnd::LimitReached { budget, limit } => {
                        self.entries.push(Entry::Warning(format!(
                            "the run used its budget of {limit} {budget}; say \"continue\" to go on, or raise [agent] {} in {}",
                            match budget {
                                Budget::Steps => "max_steps",
                                Budget::ToolCalls => "max_tool_calls",
                            },
                            crate::env::config_path(&self.env)
                        )));
                    }
                    RunEnd::Cancelled => self.entries.push(Entry::Notice(
                        "cancelled; the session is saved and the next line continues it".to_owned(),
                    )),
                    RunEnd::ModelFailed(e) => self.entries.push(Entry::Error(format!(
                        "model `{}`: {}",
                        sanitize_for_terminal(&model),
                        sanitize_for_terminal(&e.to_string())
                    ))),
                }
                if done.saved {
                    self.stored = true;
                } else if !done.discarded {
                    self.entries.push(Entry::Warning(
                        "the session could not be stored (see the warning above)".to_owned(),
                    ));
                }
            }
        }
        if self.quit_after_run {
            self.exit = true;
        } else if let Some(next) = self.queued.pop_front() {
            self.submit(next);
        }
    }
}

/// Workspace paths starting with `partial` (relative, never outside the workspace): files as
/// they are, directories with a trailing `/`. Hidden entries only when asked for with a dot.
fn mention_candidates(root: &std::path::Path, partial: &str) -> Vec<String> {
    use std::path::Component;
    let (dir, start) = match partial.rfind('/') {
        Some(at) => (&partial[..=at], &partial[at + 1..]),
        None => ("", partial),
    };
    let inside = std::path::Path::new(dir)
        .components()
        .all(|c| matches!(c, Component::Normal(_)));
    if !inside {
        return Vec::new();
    }
    let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
        return Vec::new();
    };
    let mut found: Vec<String> = entries
        .filter_map(Result::ok)
        .take(10_000)
        .filter_map(|entry| {
            let name = entry.file_name().to_str()?.to_owned();
            if !name.starts_with(start) || (name.starts_with('.') && !start.starts_with('.')) {
                return None;
            }
            let slash = if entry.file_type().ok()?.is_dir() {
                "/"
            } else {
                ""
            };
            Some(format!("{dir}{name}{slash}"))
        })
        .collect();
    found.sort();
    found
}

/// The longest start every string shares.
fn common_prefix(all: &[String]) -> String {
    let Some(first) = all.first() else {
        return String::new();
    };
    let mut end = first.len();
    for other in &all[1..] {
        end = first
            .char_indices()
            .zip(other.chars())
            .take_while(|((_, a), b)| a == b)
            .last()
            .map_or(0, |((i, c), _)| i + c.len_utf8())
            .min(end);
    }
    first[..end].to_owned()
}

/// The input history, kept per workspace in `$BOSUN_HOME/history/`.
mod history {
    use std::io::Write as _;
    use std::path::PathBuf;

    use crate::env::Env;

    /// Most inputs kept on disk per workspace.
    const KEPT: usize = 500;

    fn file(env: &Env) -> PathBuf {
        use sha2::Digest as _;
        let digest = sha2::Sha256::digest(env.workspace.root().as_os_str().as_encoded_bytes());
        let name: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
        env.config
            .home
            .join("history")
            .join(format!("{name}.jsonl"))
    }

    /// This workspace's inputs, oldest first (an unreadable file is an empty history).
    pub(super) fn load(env: &Env) -> Vec<String> {
        let Ok(text) = std::fs::read_to_string(file(env)) else {
            return Vec::new();
        };
        let lines: Vec<String> = text
            .lines()
            .filter_map(|l| serde_json::from_str::<String>(l).ok())
            .collect();
        let skip = lines.len().saturating_sub(KEPT);
        lines.into_iter().skip(skip).collect()
    }

    /// Adds `input` (best effort: a history that cannot be written is not worth an error).
    pub(super) fn append(env: &Env, input: &str) {
        let path = file(env);
        if let Some(dir) = path.parent() {
            let _ = bosun_host::trace::create_private_dir(dir);
        }
        let Ok(line) = serde_json::to_string(input) else {
            return;
        };
        let mut options = std::fs::OpenOptions::new();
        options.create(true).append(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        if let Ok(mut f) = options.open(&path) {
            let _ = writeln!(f, "{line}");
        }
        // Keep it bounded: rewrite with the newest inputs once it has grown well past the bound.
        if std::fs::metadata(&path).is_ok_and(|m| m.len() > 1 << 20) {
            let kept = load(env);
            let text: String = kept
                .iter()
                .filter_map(|l| serde_json::to_string(l).ok())
                .map(|l| l + "\n")
                .collect();
            let _ = bosun_host::write_atomic(&path, text.as_bytes());
        }
    }
}

/// Plugins that will not load as configured, said at start: invalid ones with why, changed
/// ones awaiting trust, project ones never trusted.
fn plugin_warnings(env: &Env) -> Vec<String> {
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

/// What `/init` asks of the model.
const INIT_TASK: &str = "Write an AGENTS.md file at the root of this repository for coding agents \
that will work here. Look around first (list_files, read_file on the build files and the main \
entry points), then create AGENTS.md with: what the project is in two sentences; how to build, \
run the tests and the linters (exact commands); the layout (the main directories and what lives \
in each); conventions a contributor must follow. Keep it under 80 lines and factual: only what \
you found in the repository.";

/// What `/compact` asks of the model.
const COMPACT_TASK: &str = "Summarise our conversation so far for your own later use: the task, \
what was decided, what was done (files changed, commands run and their outcome), what is still \
open, and any facts about the workspace you will need. Use no tools. Answer with the summary \
only.";

impl App {
    /// After a `/compact` turn: the conversation becomes the summary alone, stored.
    fn compacted(
        &mut self,
        open: &mut Conversation,
        result: &Result<bosun_agent::turn::TurnDone, String>,
    ) {
        let Ok(done) = result else { return };
        if done.report.end != RunEnd::Completed || done.report.text.trim().is_empty() {
            self.entries.push(Entry::Warning(
                "the summary did not come back: the conversation is kept as it was".to_owned(),
            ));
            return;
        }
        let before = open.stored.messages.len();
        open.stored.messages = vec![
            Message::User {
                text: format!(
                    "Summary of our conversation so far (earlier messages were compacted):\n\n{}",
                    done.report.text.trim()
                ),
            },
            Message::Assistant {
                parts: vec![AssistantPart::Text {
                    text: "Understood; I will continue from this summary.".to_owned(),
                }],
            },
        ];
        match open.store.save(&mut open.stored) {
            Ok(_) => self.entries.push(Entry::Notice(format!(
                "compacted {before} messages into the summary above; the session continues from it"
            ))),
            Err(e) => self.entries.push(Entry::Warning(format!(
                "the compacted session could not be stored: {e}"
            ))),
        }
    }
}

/// The latest entry of the call `id`.
fn tool_entry<'a>(entries: &'a mut [Entry], id: &str) -> Option<&'a mut ToolEntry> {
    entries.iter_mut().rev().find_map(|entry| match entry {
        Entry::Tool(tool) if tool.call_id == id => Some(tool),
        _ => None,
    })
}

/// At most [`SHORT_CHARS`] characters of `text`, sanitised.
fn short(text: &str) -> String {
    let mut cut: String = text.chars().take(SHORT_CHARS).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    sanitize_for_terminal(&cut)
}

/// Sanitises each line of `text`, keeping the line breaks.
fn sanitize_for_terminal_lines(text: &str) -> String {
    text.split_inclusive('\n')
        .map(|line| match line.strip_suffix('\n') {
            Some(body) => format!("{}\n", sanitize_for_terminal(body)),
            None => sanitize_for_terminal(line),
        })
        .collect()
}

/// The entries of a resumed session's conversation.
fn earlier_entries(messages: &[Message]) -> Vec<Entry> {
    let mut entries = Vec::new();
    for message in messages {
        match message {
            Message::User { text } => entries.push(Entry::User(text.clone())),
            Message::Assistant { parts } => {
                for part in parts {
                    match part {
                        AssistantPart::Text { text } if !text.trim().is_empty() => {
                            entries.push(Entry::Assistant(text.replace('\t', "    ")));
                        }
                        AssistantPart::ToolCall(call) => entries.push(Entry::Tool(ToolEntry {
                            call_id: call.id.clone(),
                            tool: sanitize_for_terminal(&call.name),
                            input: short(&call.input.to_string()),
                            decision: None,
                            detail: Vec::new(),
                            answer: None,
                            state: ToolState::Earlier,
                        })),
                        _ => {}
                    }
                }
            }
            Message::Tool(result) => {
                if let Some(tool) = tool_entry(&mut entries, &result.call_id) {
                    let (state, detail) = earlier_result(&tool.tool, &result.content);
                    tool.state = state;
                    tool.detail = detail;
                }
            }
        }
    }
    entries
}

/// A stored tool result (Bosun's result JSON) as a state and its detail lines.
fn earlier_result(tool: &str, content: &str) -> (ToolState, Vec<super::results::Detail>) {
    let Ok(value) = serde_json::from_str::<Value>(content) else {
        return (ToolState::Earlier, Vec::new());
    };
    if value.get("ok") == Some(&Value::Bool(false)) {
        let error = value.get("error");
        let field = |key: &str| {
            error
                .and_then(|e| e.get(key))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        return (
            ToolState::Failed {
                code: field("code"),
                message: sanitize_for_terminal(&field("message")),
            },
            Vec::new(),
        );
    }
    match value.get("output") {
        Some(output) => {
            let (summary, detail) = super::results::summarize(tool, output);
            (ToolState::Done(summary), detail)
        }
        None => (ToolState::Earlier, Vec::new()),
    }
}
