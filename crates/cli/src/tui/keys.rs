//! What the terminal UI does with a key or a paste: the prompt's editing, completion of `@`
//! mentions, answers to the modal on screen (an approval, a confirmation), Ctrl-C, and sending
//! the input as a task or a slash command. Keys never answer a modal before it was armed.

use std::time::Instant;

use anyhow::Result;
use bosun_core::ApprovalAnswer;
use bosun_host::approval::sanitize_for_terminal;
use bosun_host::permission::PermissionMode;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::app::{ARM_DELAY, App, Asked, CONFIRM_PAGE, LEAVE_WINDOW, Running, SCROLL_STEP};
use super::input::Edit;
use super::transcript::Entry;

impl App {
    pub(super) fn key(&mut self, key: KeyEvent, at: Instant) {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && key.code == KeyCode::Char('c') {
            self.interrupt(at);
            return;
        }
        self.leave_armed = None;
        if key.code != KeyCode::Esc {
            self.esc_armed = None;
        }
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
                // Keys the box does not offer (it says why) answer nothing.
                KeyCode::Char('s' | 'S') if !asked.pending.request.reach.offers_session() => {
                    return;
                }
                KeyCode::Char('w' | 'W') if !asked.pending.request.reach.offers_always() => {
                    return;
                }
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
                KeyCode::Char('d' | 'D' | 'n' | 'N') | KeyCode::Esc => ApprovalAnswer::Deny,
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
        if self.mention_key(&key) {
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
            KeyCode::Tab => {
                self.complete_mention();
                self.follow_mention();
            }
            KeyCode::BackTab => self.cycle_mode(),
            // Esc stops a run, as Ctrl-C does, but never leaves.
            KeyCode::Esc if self.running.as_ref().is_some_and(|run| !run.cancelling) => {
                self.cancel_run();
            }
            // Esc Esc at an idle, empty prompt: go back to before the last message.
            KeyCode::Esc if self.running.is_none() && self.input.is_empty() => {
                match self.esc_armed.take() {
                    Some(first) if at.saturating_duration_since(first) <= LEAVE_WINDOW => {
                        self.ask_rewind();
                    }
                    _ => self.esc_armed = Some(at),
                }
            }
            KeyCode::Char('o') if ctrl => self.expanded = !self.expanded,
            _ => {
                if let Edit::Submit(line) = self.input.key(key) {
                    self.submit(line);
                }
                self.follow_mention();
            }
        }
    }

    /// The `@path` list's keys while it is on screen: Up/Down choose, Enter takes the chosen
    /// path, Esc closes it (Tab still completes the typed start, as a shell does). False when the list is not shown or the key is not its own.
    fn mention_key(&mut self, key: &KeyEvent) -> bool {
        if self.mentions.popup.is_none() {
            return false;
        }
        match key.code {
            KeyCode::Up => self.mentions.select(-1),
            KeyCode::Down => self.mentions.select(1),
            KeyCode::Esc => self.mentions.dismiss(),
            KeyCode::Enter if key.modifiers.is_empty() => {
                if let Some(path) = self.mentions.take() {
                    self.input.complete_mention(&path);
                    self.input.insert_str(" ");
                }
                self.follow_mention();
            }
            _ => return false,
        }
        true
    }

    /// Opens, narrows or closes the `@path` list after the input changed.
    pub(super) fn follow_mention(&mut self) {
        let word = self.input.mention();
        self.mentions
            .follow(self.env.workspace.root(), word.as_deref());
    }

    /// Text pasted into the terminal: inserted into the input whole (a paste never answers an
    /// approval or sends anything).
    pub(super) fn paste(&mut self, text: &str) {
        // Into a denial's reason being typed: text only, it answers nothing.
        if let Some(reason) = self.approvals.front_mut().and_then(|a| a.feedback.as_mut()) {
            reason.extend(text.chars().filter(|c| !c.is_control()).take(500));
            return;
        }
        if self.approvals.is_empty() && self.confirm.is_none() {
            self.leave_armed = None;
            // A pasted (or dropped) path to an image becomes its `@` mention, attached on send.
            match super::mention::pasted_image(self.env.workspace.root(), text) {
                Some(mention) => self.input.insert_str(&mention),
                None => self.input.insert_str(text),
            }
            self.follow_mention();
        }
    }

    /// Tab after `@partial/path`: completes it from the workspace's files — the one match, or
    /// the longest common start with the candidates listed.
    pub(super) fn complete_mention(&mut self) {
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
    pub(super) fn interrupt(&mut self, at: Instant) {
        match &mut self.running {
            Some(run) if !run.cancelling => self.cancel_run(),
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

    /// Cancels the running turn (Esc, Ctrl-C): open approvals are refused, what streamed stays
    /// on screen, and tasks queued behind it come back to the prompt to be sent or edited.
    pub(super) fn cancel_run(&mut self) {
        let Some(run) = &mut self.running else {
            return;
        };
        run.cancelling = true;
        run.cancel.cancel();
        self.deny_all();
        if !self.queued.is_empty() {
            let typed = self.input.text();
            let queued: Vec<String> = self.queued.drain(..).collect();
            self.input.clear();
            self.input.insert_str(&queued.join("\n"));
            if !typed.is_empty() {
                self.input.insert_str("\n");
                self.input.insert_str(&typed);
            }
            self.entries.push(Entry::Notice(format!(
                "{} queued task(s) back at the prompt: Enter sends them as one message",
                queued.len()
            )));
        }
    }

    /// Takes the approval on screen off it, answered by a key read at `at`. What shows next —
    /// the next approval in line or a confirmation behind it — is armed from `at`: it was asked
    /// earlier but is on screen only now, and a second press of the key that answered this one
    /// must not answer it too.
    pub(super) fn answered(&mut self, at: Instant) -> Option<Asked> {
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
    pub(super) fn deny_all(&mut self) {
        for asked in self.approvals.drain(..) {
            asked.pending.answer(ApprovalAnswer::Deny);
        }
    }

    pub(super) fn submit(&mut self, line: String) {
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
        super::history::append(&self.env, &line);
        if let Some(command) = line.strip_prefix('!') {
            self.entries
                .push(Entry::Command(sanitize_for_terminal(&line)));
            if let Err(e) = self.shell(command) {
                self.entries.push(Entry::Error(format!("{e:#}")));
            }
            return;
        }
        self.entries.push(Entry::User(line.clone()));
        self.start_turn(line, "");
    }

    /// Starts a turn with `task`; `note`, when given, is shown instead of the task.
    pub(super) fn start_turn(&mut self, task: String, note: &str) {
        self.start_turn_in(task, note, self.permission);
    }

    /// Starts a turn with `task` in permission mode `mode` (`/review` runs in plan mode).
    pub(super) fn start_turn_in(&mut self, task: String, note: &str, mode: PermissionMode) {
        // `@shot.png`: read beneath the workspace root and checked by its bytes now, so a path
        // outside the workspace or a file that is no image stops here, with the task kept.
        let images = match super::mention::attach_images(&self.env.workspace, &task) {
            Ok(images) => images,
            Err(e) => {
                self.entries
                    .push(Entry::Error(format!("{e}; nothing was sent")));
                self.input.insert_str(&task);
                return;
            }
        };
        let Some(mut open) = self.session.take() else {
            return;
        };
        if !note.is_empty() {
            self.entries.push(Entry::Notice(note.to_owned()));
        }
        self.model.clone_into(&mut open.stored.model);
        let cancel = self
            .engine
            .start(self.env.clone(), open, task, images, mode);
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
