//! A conversation to continue across turns: the stored session (whose `model` is the entry its
//! next turn uses) and the approvals given "for this session", which live in memory only.
//! `bosun run` opens one per process; the terminal UI keeps one across its turns. This module
//! chooses and stores; it never runs a model.

use std::path::Path;
use std::sync::Arc;

use bosun_core::Redactor;
use bosun_host::checkpoint::{CheckpointError, CheckpointStore, Restored};
use bosun_host::config::LoadedConfig;
use bosun_host::{Session, Workspace};
use bosun_models::Message;

use crate::assembly::{TurnError, config_path, open_model};
use crate::run::{RunEnd, RunReport};
use crate::session_store::{SessionError, SessionStore, StoredSession};

/// What a rewind did: the request it went back to, the files it restored, and whether the
/// conversation itself went back (it cannot past a compaction that summarised that request).
#[derive(Debug, Clone, Default)]
pub struct Rewound {
    /// The request of the run rewound to, to be edited and sent again.
    pub task: String,
    /// What the undo of the files did (empty when those runs changed no file).
    pub files: Restored,
    /// Whether the conversation now ends just before that request.
    pub conversation: bool,
}

/// Why a rewind did nothing.
#[derive(Debug, thiserror::Error)]
pub enum RewindError {
    /// There is no earlier request.
    #[error("nothing to go back to: this session has no request yet")]
    Nothing,
    /// Undoing the files failed or was refused; the conversation was left as it was.
    #[error(transparent)]
    Files(#[from] CheckpointError),
    /// The session could not be stored (the files were restored).
    #[error("the files were restored, but the session could not be stored: {0}")]
    Store(#[from] SessionError),
}

/// A stored session and its in-memory grants.
pub struct Conversation {
    /// Where it is stored.
    pub store: SessionStore,
    /// What is stored.
    pub stored: StoredSession,
    /// Approvals given "for this session".
    pub grants: Arc<Session>,
}

/// What storing a finished turn did.
#[derive(Debug, Default)]
pub struct Kept {
    /// Whether the session was stored.
    pub saved: bool,
    /// Whether it was left unstored on purpose (a new session whose model answered nothing).
    pub discarded: bool,
    /// Storing the session failed (the run itself is over).
    pub warning: Option<String>,
}

impl Conversation {
    /// Opens the conversation of the workspace at `root`: `resume` (an id, a unique prefix or
    /// `last`) continues a stored one of this workspace, else a new one starts. The model is
    /// `model`, else the resumed session's, else `default_model`, else the only one configured;
    /// it is opened now so that a missing entry or key fails before anything runs.
    pub fn open(
        config: &LoadedConfig,
        root: &Path,
        resume: Option<&str>,
        model: Option<&str>,
    ) -> Result<Self, TurnError> {
        let store = SessionStore::in_home(&config.home);
        let stored = match resume {
            Some(which) => {
                // `last` is the last session of this workspace, not of any.
                let which = if which == "last" {
                    latest_here(&store, root)?
                } else {
                    which.to_owned()
                };
                let stored = store.load(&which)?;
                stored.check_workspace(root)?;
                Some(stored)
            }
            None => None,
        };
        let name = choose_model(config, model, stored.as_ref().map(|s| s.model.as_str()))?;
        open_model(config, &name)?;
        let stored = match stored {
            Some(mut stored) => {
                name.clone_into(&mut stored.model);
                stored
            }
            None => store.create(&name, root),
        };
        let grants = Arc::new(Session::new(stored.id.clone()));
        // What the history holds, before anything runs: a resumed session's first call is
        // judged at its labels, and its run's `run.started` records them.
        stored.restore_labels(&grants);
        Ok(Self {
            store,
            stored,
            grants,
        })
    }

    /// The session ends (`reason`: `prompt_input_exit` when the person leaves, `clear` when
    /// they start afresh, `other`): the plugins' `SessionEnd` hooks of its last turn run, told
    /// and not asked. What failed is returned for the face to show.
    pub async fn end(&self, reason: &str) -> Vec<String> {
        match self.grants.run_hooks().filter(|h| h.has("SessionEnd")) {
            Some(hooks) => {
                hooks
                    .session_end(reason, None, &tokio_util::sync::CancellationToken::new())
                    .await
            }
            None => Vec::new(),
        }
    }

    /// Stores the session with the run `run_id` that ended with `report` added — whatever the
    /// ending, cancellation included, so it can be resumed. Every secret `redactor` knows is
    /// redacted first, as in the run's trace: the stored session is read back by the model
    /// (next turn, `--resume`, `session/load`), so a secret a tool echoed (an editor's MCP
    /// header value, a key a command printed) is not carried forward.
    pub fn keep(&mut self, report: &RunReport, run_id: &str, redactor: &Redactor) -> Kept {
        // A new session whose model failed before answering anything is not kept: there is
        // nothing to resume, and an empty session would only clutter the list.
        let nothing_answered = matches!(report.end, RunEnd::ModelFailed(_))
            && self.stored.run_ids.is_empty()
            && !report
                .messages
                .iter()
                .any(|m| matches!(m, bosun_models::Message::Assistant { .. }));
        if nothing_answered {
            return Kept {
                discarded: true,
                ..Kept::default()
            };
        }
        self.stored.messages = report.messages.clone();
        // An answer cut off by a cancel stays, marked, so a resumed session (and its model)
        // sees how far it got.
        if let Some(partial) = &report.partial {
            self.stored.messages.push(Message::assistant(vec![
                bosun_models::AssistantPart::Text {
                    text: format!("{partial}\n\n{}", crate::run::CANCELLED_MARK),
                },
            ]));
        }
        redact_messages(&mut self.stored.messages, redactor);
        self.stored.run_ids.push(run_id.to_owned());
        match self.save() {
            Ok(_) => Kept {
                saved: true,
                ..Kept::default()
            },
            Err(e) => Kept {
                warning: Some(e.to_string()),
                ..Kept::default()
            },
        }
    }
}

impl Conversation {
    /// Keeps `note` for the model's next request — something the person did between runs that
    /// the model must know of (an undo, a command's output) — and stores the session, so a
    /// resumed session still sends it. The next turn puts the notes before its request.
    ///
    /// # Errors
    /// Storing the session failed; the note is kept in memory for the next turn all the same.
    pub fn note(&mut self, note: impl Into<String>) -> Result<(), SessionError> {
        self.stored.notes.push(note.into());
        self.save()
    }

    /// Stores the session with its labels — those of the in-memory session, never below what
    /// the file held — in the same atomic write as the history they describe. Every save of a
    /// conversation goes through here.
    ///
    /// # Errors
    /// As [`SessionStore::save`].
    pub fn save(&mut self) -> Result<(), SessionError> {
        self.stored.keep_labels(&self.grants);
        self.store.save(&mut self.stored).map(|_| ())
    }

    /// Where this conversation's runs keep the files they change ([`bosun_host::checkpoint`]).
    pub fn checkpoints(&self, home: &Path) -> CheckpointStore {
        CheckpointStore::of_session(home, &self.stored.id)
    }

    /// Takes the files and the conversation back to just before a request: the request of run
    /// `run_id` (one of [`CheckpointStore::points`]), or with `None` the last request made.
    /// The files every later run changed through Bosun's file tools are restored first — and
    /// if one changed since, nothing is done unless `force` — then the conversation is cut
    /// before that request and stored. The request comes back in [`Rewound::task`].
    ///
    /// # Errors
    /// [`RewindError::Files`] when a file changed since (nothing was done), or I/O failed.
    pub fn rewind(
        &mut self,
        home: &Path,
        workspace: &Workspace,
        run_id: Option<&str>,
        force: bool,
    ) -> Result<Rewound, RewindError> {
        let store = self.checkpoints(home);
        let points = store.points()?;
        let (run, task, at) = match run_id {
            Some(run_id) => {
                let point = points
                    .iter()
                    .find(|p| p.run_id == run_id)
                    .ok_or_else(|| CheckpointError::UnknownRun(run_id.to_owned()))?;
                (
                    Some(point.run_id.clone()),
                    point.task.clone(),
                    Some(point.messages_before),
                )
            }
            None => {
                let task = self
                    .stored
                    .messages
                    .iter()
                    .rev()
                    .find_map(|m| match m {
                        Message::User { text, .. } => Some(text.clone()),
                        _ => None,
                    })
                    .ok_or(RewindError::Nothing)?;
                // The last run's files, if it changed any.
                let run = self
                    .stored
                    .run_ids
                    .last()
                    .filter(|last| points.iter().any(|p| &&p.run_id == last))
                    .cloned();
                (run, task, None)
            }
        };
        let files = match &run {
            Some(run) => store.rewind(run, workspace, force)?,
            None => Restored::default(),
        };
        let messages = &self.stored.messages;
        let is_request =
            |i: usize| matches!(messages.get(i), Some(Message::User { text, .. }) if *text == task);
        // Where the run recorded it started, unless a compaction moved it: then the last time
        // the same request was made.
        let cut = at
            .filter(|i| is_request(*i))
            .or_else(|| (0..messages.len()).rev().find(|i| is_request(*i)));
        let conversation = match cut {
            Some(cut) => {
                self.stored.messages.truncate(cut);
                self.save()?;
                true
            }
            None => false,
        };
        Ok(Rewound {
            task,
            files,
            conversation,
        })
    }
}

/// The model entry to use: `asked`, else the resumed session's, else `default_model`, else the
/// only entry there is.
/// Redacts every secret `redactor` knows from `messages`, in place: the person's text, the
/// model's text and tool-call inputs, and tool results. A reasoning item holding one is dropped
/// rather than altered (its provider verifies it as received, and an earlier turn's reasoning
/// is not needed to continue).
fn redact_messages(messages: &mut [Message], redactor: &Redactor) {
    use bosun_models::AssistantPart;
    if redactor.is_empty() {
        return;
    }
    for message in messages.iter_mut() {
        match message {
            Message::User { text, .. } => *text = redactor.redact_str(text),
            Message::Assistant { parts } => {
                parts.retain(|part| match part {
                    AssistantPart::Reasoning(item) => !redactor.finds(&item.raw.to_string()),
                    _ => true,
                });
                for part in parts.iter_mut() {
                    match part {
                        AssistantPart::Text { text } => *text = redactor.redact_str(text),
                        AssistantPart::ToolCall(call) => redactor.redact_strings(&mut call.input),
                        AssistantPart::Reasoning(_) => {}
                    }
                }
            }
            Message::Tool(result) => result.content = redactor.redact_str(&result.content),
        }
    }
}

fn choose_model(
    config: &LoadedConfig,
    asked: Option<&str>,
    session_model: Option<&str>,
) -> Result<String, TurnError> {
    if let Some(name) = asked {
        return Ok(name.to_owned());
    }
    let models = config.user.models_config();
    if let Some(name) = session_model {
        if models.models.contains_key(name) {
            return Ok(name.to_owned());
        }
        return Err(TurnError::ModelGone {
            name: name.to_owned(),
            config: config_path(config),
        });
    }
    if let Some(name) = &models.default_model {
        return Ok(name.clone());
    }
    let mut names = models.models.keys();
    match (names.next(), names.next()) {
        (None, _) => Err(TurnError::NoModel {
            config: config_path(config),
        }),
        (Some(only), None) => Ok(only.clone()),
        (Some(_), Some(_)) => Err(TurnError::NoDefaultModel {
            names: models.models.keys().cloned().collect::<Vec<_>>().join(", "),
            config: config_path(config),
        }),
    }
}

/// The id of the session of `root` used last.
fn latest_here(store: &SessionStore, root: &Path) -> Result<String, TurnError> {
    let (sessions, _) = store.list()?;
    sessions
        .into_iter()
        .find(|s| s.workspace == root)
        .map(|s| s.id)
        .ok_or_else(|| TurnError::NoSessionHere {
            root: root.display().to_string(),
        })
}
