//! A session: the state one conversation (or one CLI run) carries between tool calls — the
//! `restrict_self` promises the model has made and the approvals a person gave "for this
//! session". Both live only in memory: a grant is never written anywhere as authority, and a
//! promise can only be added, never withdrawn. It also carries the session's taint: the highest
//! classification of data that entered it, which only ever rises.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use bosun_core::{Classification, Event};

use bosun_policy::Promise;

use crate::labels::{InstanceLabel, Reader, SessionLabels};

/// Per-session policy state.
#[derive(Debug, Default)]
pub struct Session {
    id: String,
    grants: Mutex<BTreeSet<String>>,
    promises: RwLock<Vec<Promise>>,
    taint: Mutex<Classification>,
    /// Rises a call made while it ran (a plugin's escalation), by call id: from where the
    /// first began to where the last ended, until the chokepoint takes them when the call ends.
    rises_in_call: Mutex<BTreeMap<String, (Classification, Classification)>>,
    /// The budget of the run going on in this session, which its subagents share.
    run_budget: Mutex<Option<Arc<RunBudget>>>,
    /// What first raised the taint to its current level.
    taint_source: Mutex<Option<String>>,
    /// What first brought untrusted input into the session; it stays marked.
    untrusted: Mutex<Option<String>>,
    /// Where the conversation stands, for a reviewer.
    context: Mutex<ReviewContext>,
    /// Where the built-in file tools read and write when the face offers its own (an editor).
    files: crate::file_access::FileAccessSlot,
    /// Where the run going on keeps the files its tools change, so it can be undone.
    checkpoint: Mutex<Option<Arc<crate::checkpoint::RunCheckpoint>>>,
    /// Plan mode: the model may only read (the chokepoint denies every other call).
    plan: AtomicBool,
    /// Whether the plugins' `SessionStart` hooks ran for this session in this process.
    hooks_started: AtomicBool,
    /// The plugins' run-moment hooks of the last turn, for the moments between turns
    /// (`/compact`, the session's end).
    run_hooks: Mutex<Option<Arc<crate::plugin_hooks::RunHooks>>>,
    /// The `bin/` folders of Claude Code plugins a person granted: on `run_command`'s PATH
    /// (before the rest) and readable in its sandbox, nothing else of the plugin.
    plugin_bin: Mutex<Arc<[std::path::PathBuf]>>,
    /// The model the session's conversation is sent to, a sink with a level: what a call
    /// brings above it is withheld from the model.
    model: Mutex<Option<ModelSink>>,
}

/// The model a session's conversation is sent to ([`Session::set_model`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelSink {
    /// Its `[models.<name>]` entry.
    pub name: String,
    /// The most sensitive data it may be sent: its level, or more where a person let a call
    /// bring more to it in this session.
    pub allowed: Classification,
}

/// The longest text kept of what the person asked or the model last said, in characters.
pub const MAX_CONTEXT_CHARS: usize = 2_000;

/// Where the conversation stands, as a reviewer sees it: what the person asked in the run going
/// on and what the model said before its calls (each bounded to [`MAX_CONTEXT_CHARS`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReviewContext {
    /// The person's request for the run going on.
    pub asked: Option<String>,
    /// The model's text in the step whose calls are judged.
    pub said: Option<String>,
}

/// `text` bounded to [`MAX_CONTEXT_CHARS`] (its end kept: the latest words matter most), or
/// `None` when it is blank.
fn bounded(text: &str) -> Option<String> {
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    let count = text.chars().count();
    if count <= MAX_CONTEXT_CHARS {
        return Some(text.to_owned());
    }
    let tail: String = text.chars().skip(count - MAX_CONTEXT_CHARS).collect();
    Some(format!(
        "[{} earlier characters left out] {tail}",
        count - MAX_CONTEXT_CHARS
    ))
}

/// What is left of a run's budgets, shared by the run and the subagents it starts: every model
/// step and tool call of any of them takes one.
#[derive(Debug)]
pub struct RunBudget {
    steps: AtomicU32,
    tool_calls: AtomicU32,
    children: AtomicU32,
}

impl RunBudget {
    /// A budget of `steps` model steps and `tool_calls` tool calls.
    pub fn new(steps: u32, tool_calls: u32) -> RunBudget {
        RunBudget {
            steps: AtomicU32::new(steps),
            tool_calls: AtomicU32::new(tool_calls),
            children: AtomicU32::new(0),
        }
    }

    fn take(counter: &AtomicU32) -> bool {
        counter
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_ok()
    }

    /// Takes one model step; false when none is left.
    pub fn take_step(&self) -> bool {
        Self::take(&self.steps)
    }

    /// Takes one tool call; false when none is left.
    pub fn take_tool_call(&self) -> bool {
        Self::take(&self.tool_calls)
    }

    /// Model steps and tool calls left.
    pub fn left(&self) -> (u32, u32) {
        (
            self.steps.load(Ordering::Acquire),
            self.tool_calls.load(Ordering::Acquire),
        )
    }

    /// Counts a child run; false when `max` have started already.
    pub fn start_child(&self, max: u32) -> bool {
        self.children
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .is_ok()
    }
}

impl Session {
    /// A new session with no grants and no promises.
    pub fn new(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            ..Self::default()
        }
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// True the first time it is asked in this process: the plugins' `SessionStart` hooks are
    /// due.
    pub fn start_hooks(&self) -> bool {
        !self.hooks_started.swap(true, Ordering::AcqRel)
    }

    /// Keeps the plugins' run-moment hooks of the turn going on, for the moments between turns.
    pub fn set_run_hooks(&self, hooks: Option<Arc<crate::plugin_hooks::RunHooks>>) {
        *self.run_hooks.lock().unwrap_or_else(|e| e.into_inner()) = hooks;
    }

    /// Sets the granted plugins' `bin/` folders for the turn going on (and its subagents).
    pub fn set_plugin_bin(&self, folders: Vec<std::path::PathBuf>) {
        *self.plugin_bin.lock().unwrap_or_else(|e| e.into_inner()) = folders.into();
    }

    /// The granted plugins' `bin/` folders ([`Session::set_plugin_bin`]).
    pub fn plugin_bin(&self) -> Arc<[std::path::PathBuf]> {
        self.plugin_bin
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The plugins' run-moment hooks of the last turn, if any plugin has one.
    pub fn run_hooks(&self) -> Option<Arc<crate::plugin_hooks::RunHooks>> {
        self.run_hooks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Lets the built-in file tools of this session read and write through the face (an
    /// editor's buffers); `None` returns them to the disk.
    pub fn set_file_access(&self, access: Option<Arc<dyn crate::file_access::FileAccess>>) {
        self.files.set(access);
    }

    /// Where the built-in file tools read and write, when the face offers its own.
    pub fn file_access(&self) -> Option<Arc<dyn crate::file_access::FileAccess>> {
        self.files.get()
    }

    /// The session's taint: the highest classification of data that entered it.
    pub fn taint(&self) -> Classification {
        *self.taint.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Raises the taint to `level` if it is higher; never lowers it. Returns the taint after.
    pub fn raise_taint(&self, level: Classification) -> Classification {
        let mut taint = self.taint.lock().unwrap_or_else(PoisonError::into_inner);
        if level > *taint {
            *taint = level;
        }
        *taint
    }

    /// Raises the taint to `level` on behalf of the running call `call_id` (a plugin escalating
    /// mid-call), remembering the rise for the chokepoint to record when the call ends —
    /// whether it succeeds or fails ([`Session::take_rise_in_call`]).
    pub fn raise_taint_in_call(&self, call_id: &str, level: Classification) -> Classification {
        let mut taint = self.taint.lock().unwrap_or_else(PoisonError::into_inner);
        if level > *taint {
            let before = *taint;
            *taint = level;
            let mut rises = self
                .rises_in_call
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            rises.entry(call_id.to_owned()).or_insert((before, level)).1 = level;
        }
        *taint
    }

    /// The rise call `call_id` made while it ran, from where it began to where it ended, if it
    /// made one; forgotten once taken.
    pub fn take_rise_in_call(&self, call_id: &str) -> Option<(Classification, Classification)> {
        self.rises_in_call
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(call_id)
    }

    /// Records that a person allowed `action` for the rest of the session (the chokepoint passes
    /// the action with the exact capabilities shown: `approval::session_grant_key`).
    pub fn grant(&self, action: &str) {
        if let Ok(mut grants) = self.grants.lock() {
            grants.insert(action.to_owned());
        }
    }

    /// The actions a person allowed for the rest of the session (each with some capabilities).
    pub fn granted_actions(&self) -> std::collections::BTreeSet<String> {
        self.grants
            .lock()
            .map(|g| {
                g.iter()
                    .map(|key| key.split('\n').next().unwrap_or_default().to_owned())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// True when a person allowed `action` for the rest of the session.
    pub fn is_granted(&self, action: &str) -> bool {
        self.grants
            .lock()
            .map(|g| g.contains(action))
            .unwrap_or(false)
    }

    /// Adds a promise; it binds every later call of the session.
    pub fn promise(&self, promise: Promise) {
        // A poisoned lock still holds the promises made so far: keep adding to them.
        let mut promises = self.promises.write().unwrap_or_else(|e| e.into_inner());
        promises.push(promise);
    }

    /// Runs `f` with the session's promises.
    pub fn with_promises<R>(&self, f: impl FnOnce(&[Promise]) -> R) -> R {
        let promises = self.promises.read().unwrap_or_else(|e| e.into_inner());
        f(&promises)
    }

    /// The model this session's conversation goes to, which may be sent `level` at most: the
    /// chokepoint withholds from it a result above that and asks before a call reads more. The
    /// same model again keeps what a person allowed it in this session; another starts at its
    /// own level.
    pub fn set_model(&self, name: &str, level: Classification) {
        let mut model = self.model.lock().unwrap_or_else(PoisonError::into_inner);
        let allowed = match &*model {
            Some(sink) if sink.name == name => sink.allowed.max(level),
            _ => level,
        };
        *model = Some(ModelSink {
            name: name.to_owned(),
            allowed,
        });
    }

    /// The model this session's conversation goes to, if a model reads it (none for a call
    /// from the CLI or an MCP client).
    pub fn model(&self) -> Option<ModelSink> {
        self.model
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// A person let a call bring `level` data to the session's model: it may be sent that much
    /// from now on in this session.
    pub fn allow_model(&self, level: Classification) {
        if let Some(sink) = self
            .model
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_mut()
        {
            sink.allowed = sink.allowed.max(level);
        }
    }

    /// Starts a child's session from this one: the same promises, taint and integrity mark,
    /// plan mode and checkpoint (never the approvals a person gave "for this session", which
    /// were given for the parent's calls).
    pub fn inherit(&self, parent: &Session) {
        let promises = parent.with_promises(<[Promise]>::to_vec);
        for promise in promises {
            self.promise(promise);
        }
        self.absorb(parent);
        self.set_plan(parent.is_plan());
        self.set_checkpoint(parent.checkpoint());
        *self.plugin_bin.lock().unwrap_or_else(|e| e.into_inner()) = parent.plugin_bin();
    }

    /// Sets (or, with `None`, ends) the checkpoint of the run going on: the file tools keep
    /// each file's state in it before their first write ([`crate::checkpoint::before_write`]).
    pub fn set_checkpoint(&self, checkpoint: Option<Arc<crate::checkpoint::RunCheckpoint>>) {
        *self
            .checkpoint
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = checkpoint;
    }

    /// The checkpoint of the run going on, if one is kept.
    pub fn checkpoint(&self) -> Option<Arc<crate::checkpoint::RunCheckpoint>> {
        self.checkpoint
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Turns plan mode on or off: while on, the chokepoint denies every call that does more
    /// than read, whatever the policy allows.
    pub fn set_plan(&self, on: bool) {
        self.plan.store(on, Ordering::Relaxed);
    }

    /// Whether plan mode is on.
    pub fn is_plan(&self) -> bool {
        self.plan.load(Ordering::Relaxed)
    }

    /// Takes in what `other` (a finished child) saw: its taint and its integrity mark.
    pub fn absorb(&self, other: &Session) {
        let before = self.taint();
        if self.raise_taint(other.taint()) > before
            && let Some(source) = other.taint_source()
        {
            self.set_taint_source(source);
        }
        if let Some(source) = other.untrusted_source() {
            self.mark_untrusted(source);
        }
    }

    /// Records what raised the taint to its current level.
    pub fn set_taint_source(&self, source: String) {
        *self
            .taint_source
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(source);
    }

    /// What raised the taint to its current level, if recorded.
    pub fn taint_source(&self) -> Option<String> {
        self.taint_source
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Marks the session as having read untrusted input from `source`; true the first time.
    pub fn mark_untrusted(&self, source: String) -> bool {
        let mut untrusted = self
            .untrusted
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if untrusted.is_some() {
            return false;
        }
        *untrusted = Some(source);
        true
    }

    /// Whether the session has read untrusted input.
    pub fn is_untrusted(&self) -> bool {
        self.untrusted
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    }

    /// Where the session's first untrusted input came from, if it has read any.
    pub fn untrusted_source(&self) -> Option<String> {
        self.untrusted
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Records what the person asked for the run starting now (and forgets what the model said
    /// in the last one).
    pub fn set_request(&self, asked: &str) {
        *self.context.lock().unwrap_or_else(PoisonError::into_inner) = ReviewContext {
            asked: bounded(asked),
            said: None,
        };
    }

    /// Records what the model said in the step whose calls come next.
    pub fn set_model_text(&self, said: &str) {
        self.context
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .said = bounded(said);
    }

    /// Where the conversation stands.
    pub fn review_context(&self) -> ReviewContext {
        self.context
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Sets the budget of the run now going on in this session.
    pub fn set_run_budget(&self, budget: Arc<RunBudget>) {
        *self
            .run_budget
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(budget);
    }

    /// The budget of the run going on, if one is.
    pub fn run_budget(&self) -> Option<Arc<RunBudget>> {
        self.run_budget
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl SessionLabels {
    /// The labels of `session` now.
    pub fn of(session: &Session) -> SessionLabels {
        session.labels()
    }
}

impl Reader for Session {
    fn labels(&self) -> SessionLabels {
        SessionLabels {
            level: self.taint(),
            untrusted: self.untrusted_source(),
        }
    }

    fn take_on(&self, carried: &InstanceLabel, id: &str, what: &str) -> Vec<Event> {
        let mut events = Vec::new();
        let Some((producer, label)) = carried.take() else {
            return events;
        };
        let before = self.taint();
        let after = self.raise_taint(label.level);
        if after > before {
            self.set_taint_source(format!(
                "{what} ({id}), whose {producer} holds data of sessions up to {}",
                label.level
            ));
            events.push(Event::TaintRaised {
                call_id: id.to_owned(),
                tool: what.to_owned(),
                from: before,
                to: after,
            });
        }
        if let Some(source) = label.untrusted {
            let source = format!("{source}, kept by the {producer} and returned by {what} ({id})");
            if self.mark_untrusted(source.clone()) {
                events.push(Event::UntrustedInput {
                    call_id: id.to_owned(),
                    tool: what.to_owned(),
                    source,
                });
            }
        }
        events
    }
}

#[cfg(test)]
mod taint_tests {
    use super::*;

    #[test]
    fn the_review_context_is_bounded_and_a_new_request_forgets_the_last_answer() {
        let session = Session::new("s");
        session.set_request("  fix the build  ");
        session.set_model_text(&"x".repeat(MAX_CONTEXT_CHARS + 5));
        let context = session.review_context();
        assert_eq!(context.asked.as_deref(), Some("fix the build"));
        let said = context.said.unwrap();
        assert!(
            said.starts_with("[5 earlier characters left out] "),
            "{said}"
        );
        assert_eq!(said.matches('x').count(), MAX_CONTEXT_CHARS);
        session.set_request("next");
        assert_eq!(session.review_context().said, None);
        session.set_model_text("   ");
        assert_eq!(session.review_context().said, None);
    }

    #[test]
    fn taint_only_rises() {
        let session = Session::new("s");
        assert_eq!(session.taint(), Classification::Public);
        assert_eq!(
            session.raise_taint(Classification::Confidential),
            Classification::Confidential
        );
        assert_eq!(
            session.raise_taint(Classification::Internal),
            Classification::Confidential
        );
        assert_eq!(session.taint(), Classification::Confidential);
    }
}
