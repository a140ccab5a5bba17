//! Stored sessions: `$BOSUN_HOME/sessions/<id>.json`, one conversation per file, so that
//! `bosun run --resume ID "more"` can carry on where a run stopped.
//!
//! A file holds the conversation (the models crate's [`Message`]s, exactly as the model last saw
//! them, elisions included), the model entry's name, the workspace root, creation and update
//! times, the ids of the runs that added to it, and the session's labels ([`HeldLabels`]: the
//! highest level of data its history holds and what raised it, the first untrusted input it
//! read), written in the same atomic save as the history they describe. It never holds
//! approvals or grants: a person's "allow for this session" lives in the in-memory
//! [`bosun_host::Session`] only, and a file that carries any field not listed here is refused,
//! so a session file cannot smuggle authority in.
//!
//! Labels only tighten, so a file can lower nothing by leaving them out: a stored session
//! without labels (written by an older Bosun) or with labels that do not parse is carried on
//! as holding `RESTRICTED` data and untrusted input, naming why ([`StoredSession::resumed_labels`]).
//!
//! Images the person attached are kept once, by their SHA-256, in `sessions/<id>/images/`; a
//! message holds only the reference (media type, digest, size), so the session file stays small
//! and a trace of the same message never holds the bytes. Saving writes the images the kept
//! messages name and removes those no message names any more; loading puts the bytes back after
//! checking them against their digest (a missing or changed file leaves the reference alone, and
//! the model is told an image was there). Images count against their own bound,
//! [`MAX_SESSION_IMAGE_BYTES`], the oldest whole turns being dropped to fit.
//!
//! Files are read without following a link at their name or waiting on a FIFO
//! ([`bosun_fsio::open_regular`]). Files are written atomically (a temporary file in the same directory, fsync, rename, fsync of
//! the directory) with mode 0600 in a 0700 directory, under the file's lock
//! ([`bosun_host::state_lock`]); a save that finds on disk a version other than the one its copy
//! was read from — another process carried on the same session meanwhile — refuses, naming
//! that process, and stores this copy as a new session named in the error rather than drop
//! either's turns; a save that finds the file removed (`bosun sessions rm`) since this copy was
//! stored does not bring it back. Removing a session removes its lock file too. Files are bounded: at most
//! [`MAX_MESSAGES`] messages and [`MAX_SESSION_BYTES`] bytes, the oldest whole turns being
//! dropped to fit; a larger file is refused on load.

use std::fs;
use std::path::{Path, PathBuf};

use bosun_core::Classification;
use bosun_host::Session;
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
/// Most bytes of images a session keeps.
pub const MAX_SESSION_IMAGE_BYTES: u64 = 64 * 1024 * 1024;
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
    /// Another process stored the session since this copy was read: storing this copy over it
    /// would drop the turns that process added, so this copy is stored as a new session
    /// (`kept_as`), with its labels, when it can be.
    #[error(
        "session {id} was stored by another Bosun process{} since this one read it: this process's copy was not stored over it, so the other's turns are kept; {}",
        by.map(|pid| format!(" (pid {pid})")).unwrap_or_default(),
        match kept_as {
            Some(new) => format!("this one's turns are stored as a new session {new}: `bosun run --resume {new}` continues them, `bosun run --resume {id}` the other's"),
            None => format!("this one's turns could not be stored; `bosun run --resume {id}` continues from what is stored"),
        }
    )]
    StoredMeanwhile {
        /// The session.
        id: String,
        /// The process that stored it last, when it said so.
        by: Option<u32>,
        /// The new session this copy was stored as, when it could be.
        kept_as: Option<String>,
    },
    /// The session was removed (`bosun sessions rm`, `prune`) since this copy was stored: it
    /// is not stored again.
    #[error(
        "session {id} was removed since this process read it (`bosun sessions rm` or `prune`), so it is not stored again; `bosun run` starts a new one"
    )]
    Removed {
        /// The session.
        id: String,
    },
    /// Something other than a regular file is at a session's name (a link, a FIFO), or an
    /// image that is not one.
    #[error("{0}; Bosun never puts one there: move it away")]
    NotRegular(bosun_fsio::OpenError),
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
    /// The session's images are over their bound even with every earlier turn dropped.
    #[error(
        "session {id} was not saved: the images of its latest turn alone are over {} MiB; attach fewer or smaller images",
        MAX_SESSION_IMAGE_BYTES >> 20
    )]
    ImagesTooLarge {
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
    /// The session's labels: what its history holds. Set from the in-memory session by
    /// [`StoredSession::keep_labels`] before each save, put back by
    /// [`StoredSession::restore_labels`] before a resumed session's first step.
    #[serde(default, skip_serializing_if = "StoredLabels::is_missing")]
    pub labels: StoredLabels,
    /// The `updated_at` of the stored version this copy was read from or last written as
    /// (`None`: never stored). A save finding another version on disk refuses
    /// ([`SessionError::StoredMeanwhile`]) instead of dropping that version's turns.
    #[serde(skip)]
    stored_as: Option<DateTime<Utc>>,
}

/// A session's labels as its file keeps them: the highest level of data its history holds
/// and what raised it, and the first untrusted input it read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeldLabels {
    /// The highest level of data the session has seen.
    pub level: Classification,
    /// What raised it to that level, as explanations name it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raised_by: Option<String>,
    /// The first untrusted input it read, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub untrusted: Option<String>,
}

impl HeldLabels {
    /// The labels of `session` now.
    pub fn of(session: &Session) -> HeldLabels {
        let level = session.taint();
        HeldLabels {
            level,
            raised_by: session
                .taint_source()
                .filter(|_| level > Classification::Public),
            untrusted: session.untrusted_source(),
        }
    }

    /// Takes in `other`: the higher level with what raised it, and the first untrusted input.
    fn raise(&mut self, other: HeldLabels) {
        if other.level > self.level {
            self.level = other.level;
            self.raised_by = other.raised_by;
        }
        if self.untrusted.is_none() {
            self.untrusted = other.untrusted;
        }
    }
}

/// What a session file says of its labels.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum StoredLabels {
    /// The labels, stored with the history.
    Held(HeldLabels),
    /// None: the file was written by a Bosun that did not store them.
    #[default]
    Missing,
    /// Something that does not parse as labels: kept as it is (so a save by a part that does
    /// not set labels writes it back, and the file still resumes failing closed), with why.
    Damaged {
        /// What the file holds.
        value: serde_json::Value,
        /// The parser's message.
        message: String,
    },
}

impl StoredLabels {
    fn is_missing(&self) -> bool {
        matches!(self, StoredLabels::Missing)
    }
}

impl Serialize for StoredLabels {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            StoredLabels::Held(labels) => labels.serialize(serializer),
            StoredLabels::Damaged { value, .. } => value.serialize(serializer),
            StoredLabels::Missing => serializer.serialize_none(),
        }
    }
}

impl<'de> Deserialize<'de> for StoredLabels {
    /// Labels that do not parse do not fail the load: the session resumes failing closed.
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        Ok(match HeldLabels::deserialize(&value) {
            Ok(labels) => StoredLabels::Held(labels),
            Err(e) => StoredLabels::Damaged {
                value,
                message: e.to_string(),
            },
        })
    }
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
    /// The labels to carry the session on with: those stored with its history, or — when the
    /// file holds none (an older Bosun wrote it) or they do not parse — `RESTRICTED` and
    /// untrusted, naming why. Failing closed at the top level rather than at the highest level
    /// the configuration names: what raised an older session may be a label since changed, a
    /// plugin's or an MCP server's level, or a Claude Code plugin's data folder.
    pub fn resumed_labels(&self) -> HeldLabels {
        let why = match &self.labels {
            StoredLabels::Held(labels) => return labels.clone(),
            StoredLabels::Missing => format!(
                "session {} as stored without its labels (by an older Bosun): its history may hold anything earlier turns read",
                self.id
            ),
            StoredLabels::Damaged { message, .. } => format!(
                "session {} as stored with labels that do not parse ({message}): its history may hold anything earlier turns read",
                self.id
            ),
        };
        HeldLabels {
            level: Classification::Restricted,
            raised_by: Some(why.clone()),
            untrusted: Some(why),
        }
    }

    /// Puts the labels of the stored history ([`StoredSession::resumed_labels`]) on `session`,
    /// which carries the conversation on: before its first step, so its first call is judged
    /// at them and its run's `run.started` records the level. Labels only rise.
    pub fn restore_labels(&self, session: &Session) {
        let labels = self.resumed_labels();
        let before = session.taint();
        if session.raise_taint(labels.level) > before {
            session.set_taint_source(
                labels
                    .raised_by
                    .unwrap_or_else(|| format!("earlier turns of session {}", self.id)),
            );
        }
        if let Some(source) = labels.untrusted {
            session.mark_untrusted(source);
        }
    }

    /// Sets the labels to store from `session` (which carried the conversation on), never
    /// below those the file held: written with the history by the next save.
    pub fn keep_labels(&mut self, session: &Session) {
        let mut labels = self.resumed_labels();
        labels.raise(HeldLabels::of(session));
        self.labels = StoredLabels::Held(labels);
    }

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

    /// Bytes of the distinct images the messages name.
    fn image_bytes(&self) -> u64 {
        let mut seen = std::collections::BTreeSet::new();
        self.messages
            .iter()
            .flat_map(Message::images)
            .filter(|image| seen.insert(image.sha256.as_str()))
            .map(|image| image.size)
            .sum()
    }

    fn set_title_from_first_task(&mut self) {
        if !self.title.is_empty() {
            return;
        }
        if let Some(Message::User { text, .. }) = self.messages.first() {
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

/// A lowercase hex SHA-256, the only name an image file has.
fn is_digest(text: &str) -> bool {
    text.len() == 64
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
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

    /// Forgets the checkpoints and images of session `id` (its files can no longer be undone).
    /// Best effort: the session itself is gone already, and what is left only takes space.
    fn remove_checkpoints(&self, id: &str) {
        if is_id(id) {
            let _ = fs::remove_dir_all(self.dir.join(id));
        }
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
            labels: StoredLabels::Held(HeldLabels::default()),
            stored_as: None,
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
        while session.image_bytes() > MAX_SESSION_IMAGE_BYTES {
            if !session.drop_oldest_turn() {
                return Err(SessionError::ImagesTooLarge {
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
        // Under the session file's lock from the look at the stored version to the write: two
        // processes carrying on the same session (`--resume` twice, the terminal UI and a run)
        // each hold their own copy, and the later write would drop the earlier one's turns.
        let held = bosun_host::state_lock::lock(&path).map_err(io("lock", &path))?;
        match self.read_header(&session.id) {
            Ok(stored) if Some(stored.updated_at) != session.stored_as => {
                let by = held.last_holder();
                drop(held);
                return Err(self.keep_as_new(session, by));
            }
            // Stored once, gone now: a person removed it, and it stays removed.
            Err(SessionError::Io { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound && session.stored_as.is_some() =>
            {
                return Err(SessionError::Removed {
                    id: session.id.clone(),
                });
            }
            _ => {}
        }
        // The images first, so a session file never names an image not yet on disk.
        self.write_images(session)?;
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
        held.sign();
        session.stored_as = Some(session.updated_at);
        self.sweep_images(session);
        Ok(path)
    }

    /// Stores `session`, which another process stored over since this copy was read, as a new
    /// session (its images and labels with it), so neither process's turns are lost; the
    /// error names both. When that fails too, `session` is left as it was.
    fn keep_as_new(&self, session: &mut StoredSession, by: Option<u32>) -> SessionError {
        let id = session.id.clone();
        let stored_as = session.stored_as.take();
        session.id = new_run_id();
        let kept_as = match self.save(session) {
            Ok(_) => Some(session.id.clone()),
            Err(_) => {
                session.id.clone_from(&id);
                session.stored_as = stored_as;
                None
            }
        };
        SessionError::StoredMeanwhile { id, by, kept_as }
    }

    /// `sessions/<id>/images/`.
    fn images_dir(&self, id: &str) -> PathBuf {
        self.dir.join(id).join("images")
    }

    /// Writes each held image the messages name that is not on disk yet.
    fn write_images(&self, session: &StoredSession) -> Result<(), SessionError> {
        let images: Vec<_> = session
            .messages
            .iter()
            .flat_map(Message::images)
            .filter(|image| image.bytes().is_some())
            .collect();
        if images.is_empty() {
            return Ok(());
        }
        let dir = self.images_dir(&session.id);
        let io = |action, path: &Path| {
            let path = path.to_owned();
            move |source| SessionError::Io {
                action,
                path,
                source,
            }
        };
        if let Some(parent) = dir.parent() {
            create_private_dir(parent).map_err(io("create", parent))?;
        }
        create_private_dir(&dir).map_err(io("create", &dir))?;
        for image in images {
            let path = dir.join(&image.sha256);
            if !is_digest(&image.sha256) || path.exists() {
                continue;
            }
            if let Some(bytes) = image.bytes() {
                bosun_host::write_atomic(&path, bytes).map_err(io("write", &path))?;
            }
        }
        Ok(())
    }

    /// Removes the images no kept message names (their turns were dropped or rewound).
    fn sweep_images(&self, session: &StoredSession) {
        let dir = self.images_dir(&session.id);
        let Ok(entries) = fs::read_dir(&dir) else {
            return;
        };
        let named: std::collections::BTreeSet<&str> = session
            .messages
            .iter()
            .flat_map(Message::images)
            .map(|image| image.sha256.as_str())
            .collect();
        for entry in entries.filter_map(Result::ok) {
            let name = entry.file_name();
            let keep = name.to_str().is_some_and(|n| named.contains(n));
            if !keep {
                let _ = fs::remove_file(entry.path());
            }
        }
    }

    /// Puts the bytes of every image the messages name back, each read from the session's
    /// images folder, bounded, and checked against its digest and type.
    fn load_images(&self, session: &mut StoredSession) {
        let dir = self.images_dir(&session.id);
        for message in &mut session.messages {
            let Message::User { images, .. } = message else {
                continue;
            };
            for image in images.iter_mut() {
                let Ok(bytes) = bosun_fsio::read_regular(
                    &dir.join(&image.sha256),
                    bosun_models::MAX_IMAGE_BYTES as u64,
                ) else {
                    continue;
                };
                if let Ok(held) = image.clone().with_bytes(bytes) {
                    *image = held;
                }
            }
        }
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
        // A digest names a file in the session's images folder: nothing else may be named.
        if let Some(bad) = session
            .messages
            .iter()
            .flat_map(Message::images)
            .find(|image| !is_digest(&image.sha256))
        {
            return Err(SessionError::Parse {
                path,
                message: format!(
                    "an image reference `{}` is not a SHA-256 digest",
                    bad.sha256.chars().take(80).collect::<String>()
                ),
            });
        }
        let mut session = session;
        session.stored_as = Some(session.updated_at);
        self.load_images(&mut session);
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
        match self.remove_file(&session.id) {
            Ok(()) => Ok(session),
            Err(source) => Err(SessionError::Io {
                action: "remove",
                path: self.path_of(&session.id),
                source,
            }),
        }
    }

    /// Removes the file of session `id` under its lock (so no save is half way), then its
    /// images, checkpoints and lock file. A process that has the session open does not store
    /// it again ([`SessionError::Removed`]), so the lock file has no later user to serve.
    fn remove_file(&self, id: &str) -> std::io::Result<()> {
        let path = self.path_of(id);
        let held = bosun_host::state_lock::lock(&path)?;
        fs::remove_file(&path)?;
        let _ = fs::remove_file(bosun_host::state_lock::lock_file_for(&path));
        drop(held);
        self.remove_checkpoints(id);
        Ok(())
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
            match self.remove_file(&session.id) {
                Ok(()) => removed.push(session.clone()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(source) => {
                    return Err(SessionError::Io {
                        action: "remove",
                        path: self.path_of(&session.id),
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

    /// The bytes of the session file at `path`: never through a link at its name, never
    /// waiting on a FIFO (`bosun_fsio`), at most [`MAX_SESSION_BYTES`].
    fn read_bounded(&self, path: &Path) -> Result<Vec<u8>, SessionError> {
        let opened = |e: bosun_fsio::OpenError| match e {
            bosun_fsio::OpenError::Io { source, .. } => SessionError::Io {
                action: "read",
                path: path.to_owned(),
                source,
            },
            bosun_fsio::OpenError::TooLarge { .. } => SessionError::TooLarge {
                path: path.to_owned(),
                bytes: MAX_SESSION_BYTES + 1,
            },
            other => SessionError::NotRegular(other),
        };
        let (file, metadata) = bosun_fsio::open_regular(path).map_err(opened)?;
        if metadata.len() > MAX_SESSION_BYTES {
            return Err(SessionError::TooLarge {
                path: path.to_owned(),
                bytes: metadata.len(),
            });
        }
        bosun_fsio::read_bounded(file, &metadata, path, MAX_SESSION_BYTES).map_err(opened)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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

    /// Two processes carry on the same session, each from its own copy: the first to store
    /// wins, the second is refused naming the process that stored (not silently dropping that
    /// turn), and once read again it stores on top of both.
    #[test]
    fn a_session_stored_meanwhile_by_another_process_is_not_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path().join("sessions"));
        let mut session = store.create("m", Path::new("/ws"));
        session.messages = vec![Message::user("one"), Message::assistant(vec![])];
        store.save(&mut session).unwrap();
        let mut here = store.load(&session.id).unwrap();
        let mut there = store.load(&session.id).unwrap();

        there.messages.push(Message::user("from there"));
        store.save(&mut there).unwrap();
        here.messages.push(Message::user("from here"));
        let error = store.save(&mut here).unwrap_err();
        assert!(
            matches!(error, SessionError::StoredMeanwhile { by: Some(pid), .. } if pid == std::process::id()),
            "{error:?}"
        );
        assert!(error.to_string().contains(&session.id), "{error}");
        assert!(
            error
                .to_string()
                .contains(&format!("pid {}", std::process::id())),
            "{error}"
        );
        let stored = store.load(&session.id).unwrap();
        assert_eq!(stored.messages.last(), Some(&Message::user("from there")));
        // This copy's turns are not lost: they are a new session, named in the error.
        let SessionError::StoredMeanwhile {
            kept_as: Some(kept_as),
            ..
        } = &error
        else {
            panic!("{error:?}")
        };
        assert_ne!(kept_as, &session.id);
        assert!(
            error
                .to_string()
                .contains(&format!("bosun run --resume {kept_as}")),
            "{error}"
        );
        let kept = store.load(kept_as).unwrap();
        assert_eq!(kept.messages.last(), Some(&Message::user("from here")));
        assert_eq!(kept.messages.len(), 3);

        // The copy that stored keeps storing; a copy read again stores on top of it.
        there.messages.push(Message::assistant(vec![]));
        store.save(&mut there).unwrap();
        let mut again = store.load(&session.id).unwrap();
        again.messages.push(Message::user("from here"));
        store.save(&mut again).unwrap();
        assert_eq!(store.load(&session.id).unwrap().messages.len(), 5);
    }

    /// A session holding `RESTRICTED` data and untrusted input, as the chokepoint leaves it.
    fn secret_session() -> Session {
        let session = Session::new("s");
        session.raise_taint(Classification::Restricted);
        session.set_taint_source("read_file (c1), which read secrets/key.pem".to_owned());
        session.mark_untrusted("run_command (c2), granted net.http".to_owned());
        session
    }

    /// The labels are written with the history and put back on the session that carries it
    /// on, with what raised them; a later save by a session that holds less keeps them.
    #[test]
    fn labels_are_stored_with_the_history_and_put_back_on_load() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path());
        let mut stored = store.create("m", Path::new("/ws"));
        stored.messages = vec![Message::user("read the key"), Message::assistant(vec![])];
        stored.keep_labels(&secret_session());
        store.save(&mut stored).unwrap();

        let mut loaded = store.load(&stored.id).unwrap();
        let resumed = Session::new(loaded.id.clone());
        loaded.restore_labels(&resumed);
        assert_eq!(resumed.taint(), Classification::Restricted);
        assert_eq!(
            resumed.taint_source().as_deref(),
            Some("read_file (c1), which read secrets/key.pem")
        );
        assert_eq!(
            resumed.untrusted_source().as_deref(),
            Some("run_command (c2), granted net.http")
        );

        // Stored again from a session that holds nothing: never lowered.
        loaded.keep_labels(&Session::new("fresh"));
        store.save(&mut loaded).unwrap();
        assert_eq!(
            store.load(&stored.id).unwrap().labels,
            StoredLabels::Held(HeldLabels::of(&secret_session()))
        );
    }

    /// A file without labels (an older Bosun's) or with labels that do not parse loads, and
    /// is carried on as holding `RESTRICTED` data and untrusted input, saying why — never at
    /// `PUBLIC`; stored again, it keeps that level.
    #[test]
    fn a_session_without_labels_or_with_damaged_ones_is_carried_on_at_the_top_level() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path());
        for (labels, why) in [
            (None, "stored without its labels"),
            (
                Some(json!({"level": "TOP_SECRET"})),
                "labels that do not parse",
            ),
            (Some(json!(null)), "labels that do not parse"),
            (
                Some(json!({"level": "PUBLIC", "granted": "everything"})),
                "labels that do not parse",
            ),
        ] {
            let mut stored = store.create("m", Path::new("/ws"));
            stored.messages = vec![Message::user("read the key")];
            let path = store.save(&mut stored).unwrap();
            let mut file: serde_json::Value =
                serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
            match labels {
                None => file.as_object_mut().unwrap().remove("labels"),
                Some(labels) => file
                    .as_object_mut()
                    .unwrap()
                    .insert("labels".into(), labels),
            };
            fs::write(&path, serde_json::to_vec(&file).unwrap()).unwrap();

            let mut loaded = store.load(&stored.id).unwrap();
            let resumed = Session::new(loaded.id.clone());
            loaded.restore_labels(&resumed);
            assert_eq!(resumed.taint(), Classification::Restricted, "{why}");
            assert!(resumed.taint_source().unwrap().contains(why), "{why}");
            assert!(resumed.untrusted_source().unwrap().contains(why), "{why}");

            loaded.keep_labels(&resumed);
            store.save(&mut loaded).unwrap();
            let again = store.load(&stored.id).unwrap().resumed_labels();
            assert_eq!(again.level, Classification::Restricted, "{why}");
            assert!(again.raised_by.unwrap().contains(why), "{why}");
        }
    }

    /// `bosun sessions rm` of a session another process has open: that process's next save
    /// does not bring it back, and the session's lock file goes with it.
    #[test]
    fn a_removed_session_stays_removed_and_leaves_no_lock_file() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path());
        let mut open = store.create("m", Path::new("/ws"));
        open.messages = vec![Message::user("one")];
        let path = store.save(&mut open).unwrap();
        let lock = bosun_host::state_lock::lock_file_for(&path);
        assert!(lock.exists());

        store.remove(&open.id).unwrap();
        assert!(!path.exists());
        assert!(!lock.exists(), "the lock file stays after the session went");
        open.messages.push(Message::user("two"));
        let error = store.save(&mut open).unwrap_err();
        assert!(matches!(error, SessionError::Removed { .. }), "{error:?}");
        assert!(!path.exists(), "a removed session was written back");

        // Pruned alike.
        let mut other = store.create("m", Path::new("/ws"));
        other.messages = vec![Message::user("one")];
        let path = store.save(&mut other).unwrap();
        let (listed, _) = store.list().unwrap();
        assert_eq!(store.prune(&listed, None, Some(0)).unwrap().len(), 1);
        assert!(!bosun_host::state_lock::lock_file_for(&path).exists());
        assert!(matches!(
            store.save(&mut other).unwrap_err(),
            SessionError::Removed { .. }
        ));
    }

    /// A link or a FIFO at a session's name is not read through (nor waited on): loading it
    /// is an error naming what is there.
    #[test]
    fn a_session_is_not_loaded_through_a_link_or_from_a_fifo() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path().join("sessions"));
        let mut elsewhere =
            SessionStore::new(dir.path().join("elsewhere")).create("m", Path::new("/ws"));
        elsewhere.messages = vec![Message::user("planted")];
        let planted = SessionStore::new(dir.path().join("elsewhere"))
            .save(&mut elsewhere)
            .unwrap();
        fs::create_dir_all(store.dir()).unwrap();
        bosun_fsio::testing::plant_link(&store.path_of(&elsewhere.id), &planted);
        let error = store.load(&elsewhere.id).unwrap_err();
        assert!(matches!(error, SessionError::NotRegular(_)), "{error:?}");
        assert!(error.to_string().contains("symbolic link"), "{error}");

        let id = "0190aaaa-0000-7000-8000-000000000000";
        let fifo = store.path_of(id);
        bosun_fsio::testing::plant_fifo(&fifo);
        let sessions = store.dir().to_owned();
        let loaded = bosun_fsio::testing::returns_within_guard(&fifo, move || {
            SessionStore::new(sessions).load(id).map(|_| ())
        });
        assert!(
            matches!(loaded, Err(SessionError::NotRegular(_))),
            "{loaded:?}"
        );
    }

    /// The smallest valid PNG: one transparent pixel.
    const PNG: &[u8] = &[
        0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44,
        0x52, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F,
        0x15, 0xC4, 0x89, 0x00, 0x00, 0x00, 0x0A, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x00,
        0x01, 0x00, 0x00, 0x05, 0x00, 0x01, 0x0D, 0x0A, 0x2D, 0xB4, 0x00, 0x00, 0x00, 0x00, 0x49,
        0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82,
    ];

    fn image() -> bosun_models::Image {
        bosun_models::Image::from_bytes("dot.png", PNG.to_vec()).unwrap()
    }

    #[test]
    fn images_are_kept_once_beside_the_session_and_come_back_on_load() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path());
        let mut session = store.create("m", Path::new("/ws"));
        session.messages = vec![
            Message::user_with_images("look", vec![image()]),
            Message::assistant(vec![]),
            Message::user_with_images("again", vec![image()]),
        ];
        let path = store.save(&mut session).unwrap();
        let text = fs::read_to_string(&path).unwrap();
        let b64 = image().base64().unwrap();
        assert!(
            !text.contains(&b64[..20]),
            "the session file holds no image bytes"
        );
        assert!(text.contains(&image().sha256));
        let images: Vec<_> = fs::read_dir(store.images_dir(&session.id))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(
            images,
            vec![image().sha256],
            "one file for the two references"
        );
        let loaded = store.load(&session.id).unwrap();
        assert_eq!(loaded.messages[0].images()[0].bytes(), Some(PNG));
        assert_eq!(loaded.messages[2].images()[0].bytes(), Some(PNG));
        // Once no message names it, the image goes.
        let mut loaded = loaded;
        loaded.messages = vec![Message::user("text only")];
        store.save(&mut loaded).unwrap();
        assert_eq!(
            fs::read_dir(store.images_dir(&session.id)).unwrap().count(),
            0
        );
        store.remove(&session.id).unwrap();
        assert!(!dir.path().join(&session.id).exists());
    }

    #[test]
    fn a_changed_image_file_is_not_sent_as_the_image() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path());
        let mut session = store.create("m", Path::new("/ws"));
        session.messages = vec![Message::user_with_images("look", vec![image()])];
        store.save(&mut session).unwrap();
        let file = store.images_dir(&session.id).join(image().sha256);
        let mut other = PNG.to_vec();
        other[30] ^= 0xFF;
        fs::write(&file, other).unwrap();
        let loaded = store.load(&session.id).unwrap();
        assert_eq!(loaded.messages[0].images()[0], image());
        assert!(loaded.messages[0].images()[0].bytes().is_none());
    }

    #[test]
    fn a_session_file_cannot_name_an_image_outside_its_folder() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path());
        let mut session = store.create("m", Path::new("/ws"));
        session.messages = vec![Message::user_with_images("look", vec![image()])];
        let path = store.save(&mut session).unwrap();
        let text = fs::read_to_string(&path)
            .unwrap()
            .replace(&image().sha256, "../../../../etc/passwd");
        fs::write(&path, text).unwrap();
        let err = store.load(&session.id).unwrap_err();
        assert!(
            matches!(&err, SessionError::Parse { message, .. } if message.contains("not a SHA-256 digest")),
            "{err}"
        );
    }

    #[test]
    fn ids_are_checked() {
        assert!(is_id("0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"));
        assert!(!is_id("../../etc/passwd"));
        assert!(!is_id(""));
        assert!(!is_id("ABC"));
    }
}
