//! Stored sessions: `$BOSUN_HOME/sessions/<id>.json`, one conversation per file, so that
//! `bosun run --resume ID "more"` can carry on where a run stopped.
//!
//! A file holds the conversation (the models crate's [`Message`]s, exactly as the model last saw
//! them, elisions included), the model entry's name, the workspace root, creation and update
//! times and the ids of the runs that added to it. It never holds approvals or grants: a person's
//! "allow for this session" lives in the in-memory [`crate::Session`] only, and a file that
//! carries any field not listed here is refused, so a session file cannot smuggle authority in.
//!
//! Files are written atomically (a temporary file in the same directory, fsync, rename, fsync of
//! the directory) with mode 0600 in a 0700 directory, and are bounded: at most
//! [`MAX_MESSAGES`] messages and [`MAX_SESSION_BYTES`] bytes, the oldest whole turns being
//! dropped to fit; a larger file is refused on load.

use std::fs::{self, File};
use std::io::Read;
use std::path::{Path, PathBuf};

use bosun_models::Message;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use bosun_host::trace::{create_private_dir, new_run_id};

/// The session file format this build writes.
pub const SESSION_SCHEMA_VERSION: u32 = 1;
/// Largest session file written or read.
pub const MAX_SESSION_BYTES: u64 = 16 * 1024 * 1024;
/// Most messages kept in a session.
pub const MAX_MESSAGES: usize = 1000;
/// Longest title (from the first task), in characters.
const TITLE_CHARS: usize = 80;

/// A session that cannot be stored or read.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// No session matches.
    #[error("no session `{which}` in {dir}; `bosun sessions list` shows the stored sessions")]
    NotFound {
        /// What was asked for.
        which: String,
        /// The sessions directory.
        dir: PathBuf,
    },
    /// A prefix matches several sessions.
    #[error("session id prefix `{prefix}` matches {count} sessions; give more characters")]
    Ambiguous {
        /// The prefix.
        prefix: String,
        /// How many matched.
        count: usize,
    },
    /// The id has characters a session id never has.
    #[error(
        "`{0}` is not a session id: ids are lowercase hex and dashes (see `bosun sessions list`)"
    )]
    InvalidId(String),
    /// The file is over the bound.
    #[error(
        "session file {path} is {bytes} bytes, over the {} MiB bound; Bosun never writes one that large, so it is damaged or was not written by Bosun: move it away",
        MAX_SESSION_BYTES >> 20
    )]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        bytes: u64,
    },
    /// The conversation cannot be made to fit even with every earlier turn dropped.
    #[error(
        "session {id} was not saved: its latest turn alone is over {} MiB; lower limits.max_output_bytes",
        MAX_SESSION_BYTES >> 20
    )]
    TurnTooLarge {
        /// The session.
        id: String,
    },
    /// The file is not a session this build reads.
    #[error("{path}: not a Bosun session ({message}); the file is damaged or from a newer Bosun")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's message.
        message: String,
    },
    /// Reading or writing failed.
    #[error("cannot {action} {path}: {source}; check that $BOSUN_HOME is writable")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The session belongs to another workspace.
    #[error(
        "session {id} was started in {session_workspace}, not here ({here}); run `bosun run --resume {id}` from that workspace"
    )]
    WorkspaceMismatch {
        /// The session.
        id: String,
        /// Where it was started.
        session_workspace: PathBuf,
        /// Where it was resumed.
        here: PathBuf,
    },
}

/// One stored conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoredSession {
    /// [`SESSION_SCHEMA_VERSION`] when written.
    pub schema_version: u32,
    /// The id (a UUIDv7: ids sort by creation time).
    pub id: String,
    /// The start of the first task, for listings.
    pub title: String,
    /// The `[models.<name>]` entry the session last used.
    pub model: String,
    /// The canonical workspace root it runs in.
    pub workspace: PathBuf,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it was last saved.
    pub updated_at: DateTime<Utc>,
    /// The runs that added to it, oldest first (`bosun inspect <run-id>`).
    pub run_ids: Vec<String>,
    /// How many of the oldest messages were dropped to keep the session bounded.
    #[serde(default)]
    pub dropped_messages: u64,
    /// The conversation, oldest first.
    pub messages: Vec<Message>,
    /// What the person did between runs that the model must hear of (files put back by an
    /// undo, a command's output): sent before the next request and then part of `messages`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// A line of `bosun sessions list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionSummary {
    /// The id.
    pub id: String,
    /// The start of the first task.
    pub title: String,
    /// The model entry.
    pub model: String,
    /// The workspace root.
    pub workspace: PathBuf,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it was last saved.
    pub updated_at: DateTime<Utc>,
    /// How many runs added to it.
    pub runs: usize,
    /// How many messages it holds.
    pub messages: usize,
}

/// The fields a listing reads; the messages are counted, not kept.
#[derive(Deserialize)]
struct Header {
    schema_version: u32,
    id: String,
    title: String,
    model: String,
    workspace: PathBuf,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
    run_ids: Vec<serde::de::IgnoredAny>,
    messages: Vec<serde::de::IgnoredAny>,
}

impl StoredSession {
    /// Refuses to resume the session in another workspace: its paths and its history belong to
    /// the one it was started in.
    pub fn check_workspace(&self, root: &Path) -> Result<(), SessionError> {
        if self.workspace == root {
            Ok(())
        } else {
            Err(SessionError::WorkspaceMismatch {
                id: self.id.clone(),
                session_workspace: self.workspace.clone(),
                here: root.to_owned(),
            })
        }
    }

    /// Drops the oldest whole turns (a user message and everything up to the next one) until at
    /// most [`MAX_MESSAGES`] remain; a tool result never loses its call.
    fn drop_oldest_turn(&mut self) -> bool {
        let next_turn = self
            .messages
            .iter()
            .enumerate()
            .skip(1)
            .find(|(_, m)| matches!(m, Message::User { .. }))
            .map(|(i, _)| i);
        match next_turn {
            Some(at) => {
                self.messages.drain(..at);
                self.dropped_messages += at as u64;
                true
            }
            None => false,
        }
    }

    fn set_title_from_first_task(&mut self) {
        if !self.title.is_empty() {
            return;
        }
        if let Some(Message::User { text }) = self.messages.first() {
            let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            let mut title: String = line.trim().chars().take(TITLE_CHARS).collect();
            if line.trim().chars().count() > TITLE_CHARS {
                title.push('…');
            }
            self.title = title;
        }
    }
}

/// The sessions directory.
#[derive(Debug, Clone)]
pub struct SessionStore {
    dir: PathBuf,
    /// `$BOSUN_HOME` when the store is the home's: a removed session's checkpoints go too.
    home: Option<PathBuf>,
}

fn is_id(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 64
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b) || b == b'-')
}

impl SessionStore {
    /// Sessions in `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            home: None,
        }
    }

    /// `$BOSUN_HOME/sessions`.
    pub fn in_home(home: &Path) -> Self {
        Self {
            dir: home.join("sessions"),
            home: Some(home.to_owned()),
        }
    }

    /// Forgets the checkpoints of session `id` (its files can no longer be undone). Best
    /// effort: the session itself is gone already, and what is left only takes space.
    fn remove_checkpoints(&self, id: &str) {
        if let Some(home) = &self.home {
            let _ = bosun_host::checkpoint::CheckpointStore::of_session(home, id).remove_all();
        }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A new, empty session (written by the first [`SessionStore::save`]).
    pub fn create(&self, model: &str, workspace: &Path) -> StoredSession {
        let now = Utc::now();
        StoredSession {
            schema_version: SESSION_SCHEMA_VERSION,
            id: new_run_id(),
            title: String::new(),
            model: model.to_owned(),
            workspace: workspace.to_owned(),
            created_at: now,
            updated_at: now,
            run_ids: Vec::new(),
            dropped_messages: 0,
            messages: Vec::new(),
            notes: Vec::new(),
        }
    }

    fn path_of(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.json"))
    }

    /// Writes the session atomically, after bounding it, and stamps `updated_at`.
    pub fn save(&self, session: &mut StoredSession) -> Result<PathBuf, SessionError> {
        if !is_id(&session.id) {
            return Err(SessionError::InvalidId(session.id.clone()));
        }
        session.set_title_from_first_task();
        session.updated_at = Utc::now();
        while session.messages.len() > MAX_MESSAGES {
            if !session.drop_oldest_turn() {
                return Err(SessionError::TurnTooLarge {
                    id: session.id.clone(),
                });
            }
        }
        let text = loop {
            let text = serde_json::to_vec_pretty(&*session).map_err(|e| SessionError::Parse {
                path: self.path_of(&session.id),
                message: e.to_string(),
            })?;
            if text.len() as u64 <= MAX_SESSION_BYTES {
                break text;
            }
            if !session.drop_oldest_turn() {
                return Err(SessionError::TurnTooLarge {
                    id: session.id.clone(),
                });
            }
        };
        let io = |action, path: &Path| {
            let path = path.to_owned();
            move |source| SessionError::Io {
                action,
                path,
                source,
            }
        };
        create_private_dir(&self.dir).map_err(io("create", &self.dir))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(&self.dir, fs::Permissions::from_mode(0o700))
                .map_err(io("restrict", &self.dir))?;
        }
        let path = self.path_of(&session.id);
        let mut bytes = text;
        bytes.push(b'\n');
        let written = bosun_host::write_atomic(&path, &bytes);
        if let Err(source) = written {
            return Err(SessionError::Io {
                action: "write",
                path,
                source,
            });
        }
        Ok(path)
    }

    /// Loads a session: `last` is the most recently saved; otherwise an id or a unique prefix.
    pub fn load(&self, which: &str) -> Result<StoredSession, SessionError> {
        let id = if which == "last" {
            self.list_ids()?
                .into_iter()
                .filter_map(|id| self.read_header(&id).ok().map(|h| (h.updated_at, id)))
                .max()
                .map(|(_, id)| id)
                .ok_or_else(|| self.not_found(which))?
        } else {
            if !is_id(which) {
                return Err(SessionError::InvalidId(which.to_owned()));
            }
            let matches: Vec<String> = self
                .list_ids()?
                .into_iter()
                .filter(|id| id.starts_with(which))
                .collect();
            match matches.as_slice() {
                [one] => one.clone(),
                [] => return Err(self.not_found(which)),
                many if many.iter().any(|id| id == which) => which.to_owned(),
                many => {
                    return Err(SessionError::Ambiguous {
                        prefix: which.to_owned(),
                        count: many.len(),
                    });
                }
            }
        };
        let path = self.path_of(&id);
        let text = self.read_bounded(&path)?;
        let session: StoredSession =
            serde_json::from_slice(&text).map_err(|e| SessionError::Parse {
                path: path.clone(),
                message: e.to_string(),
            })?;
        if session.schema_version != SESSION_SCHEMA_VERSION {
            return Err(SessionError::Parse {
                path,
                message: format!(
                    "schema version {} (this build reads {SESSION_SCHEMA_VERSION})",
                    session.schema_version
                ),
            });
        }
        if session.id != id {
            return Err(SessionError::Parse {
                path,
                message: format!("the file names session {} inside", session.id),
            });
        }
        Ok(session)
    }

    /// Every readable session, most recently saved first, and a warning for each file that
    /// could not be read.
    pub fn list(&self) -> Result<(Vec<SessionSummary>, Vec<String>), SessionError> {
        let mut sessions = Vec::new();
        let mut warnings = Vec::new();
        for id in self.list_ids()? {
            match self.read_header(&id) {
                Ok(h) => sessions.push(SessionSummary {
                    id: h.id,
                    title: h.title,
                    model: h.model,
                    workspace: h.workspace,
                    created_at: h.created_at,
                    updated_at: h.updated_at,
                    runs: h.run_ids.len(),
                    messages: h.messages.len(),
                }),
                Err(e) => warnings.push(e.to_string()),
            }
        }
        sessions.sort_by(|a, b| {
            b.updated_at
                .cmp(&a.updated_at)
                .then_with(|| b.id.cmp(&a.id))
        });
        Ok((sessions, warnings))
    }

    /// Removes the stored session `which` (an id, a unique prefix or `last`), returning it. A
    /// name that is not a stored session is refused, so nothing else in the directory can go.
    pub fn remove(&self, which: &str) -> Result<StoredSession, SessionError> {
        let session = self.load(which)?;
        let path = self.path_of(&session.id);
        fs::remove_file(&path).map_err(|source| SessionError::Io {
            action: "remove",
            path,
            source,
        })?;
        self.remove_checkpoints(&session.id);
        Ok(session)
    }

    /// Removes the sessions of `among` (summaries from [`SessionStore::list`], most recent
    /// first) that are last used before `before`, or that come after the `keep` most recent
    /// ones; returns those removed. Either bound may be absent; with neither nothing goes.
    pub fn prune(
        &self,
        among: &[SessionSummary],
        before: Option<DateTime<Utc>>,
        keep: Option<usize>,
    ) -> Result<Vec<SessionSummary>, SessionError> {
        let mut removed = Vec::new();
        for (rank, session) in among.iter().enumerate() {
            let old = before.is_some_and(|before| session.updated_at < before);
            let beyond = keep.is_some_and(|keep| rank >= keep);
            if !(old || beyond) || !is_id(&session.id) {
                continue;
            }
            let path = self.path_of(&session.id);
            match fs::remove_file(&path) {
                Ok(()) => {
                    self.remove_checkpoints(&session.id);
                    removed.push(session.clone());
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(source) => {
                    return Err(SessionError::Io {
                        action: "remove",
                        path,
                        source,
                    });
                }
            }
        }
        Ok(removed)
    }

    fn not_found(&self, which: &str) -> SessionError {
        SessionError::NotFound {
            which: which.to_owned(),
            dir: self.dir.clone(),
        }
    }

    /// Ids of the files in the directory (temporary files and strangers skipped).
    fn list_ids(&self) -> Result<Vec<String>, SessionError> {
        let entries = match fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => {
                return Err(SessionError::Io {
                    action: "list",
                    path: self.dir.clone(),
                    source,
                });
            }
        };
        let mut ids: Vec<String> = entries
            .filter_map(Result::ok)
            .filter_map(|e| {
                e.file_name()
                    .to_str()
                    .and_then(|n| n.strip_suffix(".json"))
                    .filter(|id| is_id(id))
                    .map(str::to_owned)
            })
            .collect();
        ids.sort();
        Ok(ids)
    }

    fn read_header(&self, id: &str) -> Result<Header, SessionError> {
        let path = self.path_of(id);
        let text = self.read_bounded(&path)?;
        let header: Header = serde_json::from_slice(&text).map_err(|e| SessionError::Parse {
            path: path.clone(),
            message: e.to_string(),
        })?;
        if header.schema_version != SESSION_SCHEMA_VERSION || header.id != id {
            return Err(SessionError::Parse {
                path,
                message: "wrong schema version or id".to_owned(),
            });
        }
        Ok(header)
    }

    fn read_bounded(&self, path: &Path) -> Result<Vec<u8>, SessionError> {
        let io = |source| SessionError::Io {
            action: "read",
            path: path.to_owned(),
            source,
        };
        let file = File::open(path).map_err(io)?;
        let bytes = file.metadata().map_err(io)?.len();
        if bytes > MAX_SESSION_BYTES {
            return Err(SessionError::TooLarge {
                path: path.to_owned(),
                bytes,
            });
        }
        // Read at most one byte past the bound, in case the file grew since the check.
        let mut text = Vec::with_capacity(usize::try_from(bytes).unwrap_or(0));
        file.take(MAX_SESSION_BYTES + 1)
            .read_to_end(&mut text)
            .map_err(io)?;
        if text.len() as u64 > MAX_SESSION_BYTES {
            return Err(SessionError::TooLarge {
                path: path.to_owned(),
                bytes: text.len() as u64,
            });
        }
        Ok(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn turns_are_dropped_whole() {
        let store = SessionStore::new("/nonexistent");
        let mut session = store.create("m", Path::new("/ws"));
        session.messages = vec![
            Message::user("one"),
            Message::assistant(vec![]),
            Message::tool_result("c1", "{}", false),
            Message::user("two"),
            Message::assistant(vec![]),
        ];
        assert!(session.drop_oldest_turn());
        assert_eq!(session.messages.len(), 2);
        assert_eq!(session.dropped_messages, 3);
        assert!(!session.drop_oldest_turn());
    }

    #[test]
    fn ids_are_checked() {
        assert!(is_id("0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"));
        assert!(!is_id("../../etc/passwd"));
        assert!(!is_id(""));
        assert!(!is_id("ABC"));
    }
}
