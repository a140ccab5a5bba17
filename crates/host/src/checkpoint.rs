//! Checkpoints: what a run's file tools changed, kept so the run can be undone. Just before a
//! run's first write of a file through Bosun's file tools (`create_file`, `apply_patch`, and any
//! tool that calls [`before_write`]), the file's exact bytes and mode — or its absence, with the
//! directories the write is about to create — are kept under
//! `$BOSUN_HOME/checkpoints/<session>/`, outside the workspace. When the run ends it is sealed:
//! the state it left each file in is recorded, so an undo can tell that someone changed a file
//! since and refuses to overwrite that change unless forced.
//!
//! Undo restores exactly what was kept (bytes and permission bits), removes the files the run
//! created and the directories it created for them when they are empty again, and touches no
//! other path. Changes made by programs a run started (`run_command`, a plugin's process) are
//! not captured: only writes through the file tools pass here. This module never decides
//! whether a write may happen — the chokepoint did, before the tool ran — and every path it
//! touches is opened beneath the workspace root (`beneath`).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::{self, Read as _, Write as _};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use bosun_core::{ErrorCode, ToolError};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use crate::Workspace;
use crate::beneath::{Dir, Root};

/// Runs kept per session; sealing a run forgets the oldest beyond this (their files can no
/// longer be undone).
pub const MAX_RUNS_KEPT: usize = 100;
/// Largest file kept before a write; a write to a larger file is refused rather than made
/// without a way back.
pub const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// What went wrong keeping or restoring a checkpoint.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// Reading or writing a checkpoint, or a workspace file, failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: String,
        /// The error.
        source: io::Error,
    },
    /// Files changed after the runs to undo; nothing was restored.
    #[error(
        "{} changed after the run{}: nothing was restored; look at the change{}, then force the \
         undo to overwrite {} with the kept state",
        list(files),
        if *runs > 1 { "s" } else { "" },
        if files.len() > 1 { "s" } else { "" },
        if files.len() > 1 { "them" } else { "it" }
    )]
    Changed {
        /// The workspace-relative files that differ from what the runs left.
        files: Vec<String>,
        /// How many runs were to be undone.
        runs: usize,
    },
    /// No kept run changed a file.
    #[error("no file change of this session is kept: nothing to undo")]
    Nothing,
    /// The run named has no checkpoint.
    #[error(
        "run {0} changed no file through Bosun's tools, or its checkpoint was undone or pruned"
    )]
    UnknownRun(String),
    /// A kept manifest or file does not hold what it should.
    #[error("the checkpoint {path} is damaged ({reason}): it cannot be used; remove it")]
    Damaged {
        /// The file.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// A file is too large to keep.
    #[error(
        "`{path}` is {bytes} bytes, more than the {MAX_FILE_BYTES} bytes a checkpoint keeps: the \
         file was not changed"
    )]
    TooLarge {
        /// The file.
        path: String,
        /// Its size.
        bytes: u64,
    },
}

/// `a`, `a and b`, `a, b and c`, with each name in backticks.
fn list(files: &[String]) -> String {
    let quoted: Vec<String> = files.iter().map(|f| format!("`{f}`")).collect();
    match quoted.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

fn io_at(path: impl Into<String>) -> impl FnOnce(io::Error) -> CheckpointError {
    let path = path.into();
    move |source| CheckpointError::Io { path, source }
}

/// A file's state: absent, or a regular file with these bytes and permission bits, or
/// something else (a directory, a link) that no file tool writes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FileState {
    /// No file there.
    Absent,
    /// A regular file.
    File {
        /// SHA-256 of its bytes, hex; the kept copy is `blobs/<sha256>`.
        sha256: String,
        /// Permission bits (`st_mode & 0o7777`).
        mode: u32,
        /// Its size.
        bytes: u64,
    },
    /// A directory, a link or a special file.
    Other,
}

/// One file of a run's checkpoint.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct FileRecord {
    /// Workspace-relative, `/`-separated.
    path: String,
    /// Before the run's first write of it.
    before: FileState,
    /// Directories that did not exist before that write (outermost first), removed on undo
    /// when empty again.
    #[serde(default)]
    created_dirs: Vec<String>,
    /// What the run left; `None` until the run is sealed.
    after: Option<FileState>,
}

/// A run's checkpoint as stored (`runs/<run-id>.json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Manifest {
    run_id: String,
    /// The person's request that started the run.
    task: String,
    /// How many messages the conversation held before the run's request.
    messages_before: usize,
    started_at: DateTime<Utc>,
    /// Whether the run ended and its files' final state is recorded.
    sealed: bool,
    files: Vec<FileRecord>,
}

/// A point a session can be taken back to: the start of a run that changed files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Point {
    /// The run.
    pub run_id: String,
    /// What the person asked in it.
    pub task: String,
    /// How many messages the conversation held before the run's request.
    pub messages_before: usize,
    /// When it started.
    pub started_at: DateTime<Utc>,
    /// The workspace-relative files it changed.
    pub files: Vec<String>,
}

/// What an undo did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Restored {
    /// The runs undone, newest first.
    pub runs: Vec<String>,
    /// Files put back to their kept bytes.
    pub restored: Vec<String>,
    /// Files the runs had created, removed.
    pub removed: Vec<String>,
    /// The earliest run undone: its request, and the messages before it.
    pub earliest: Option<Point>,
}

/// The checkpoints of one session, under `$BOSUN_HOME/checkpoints/<session>/`.
#[derive(Debug, Clone)]
pub struct CheckpointStore {
    dir: PathBuf,
}

impl CheckpointStore {
    /// The checkpoints of session `session_id` under `home`.
    pub fn of_session(home: &Path, session_id: &str) -> CheckpointStore {
        // A session id is one plain name; anything else is kept under a name that cannot climb.
        let name: String = session_id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        CheckpointStore {
            dir: home.join("checkpoints").join(name),
        }
    }

    /// Where this session's checkpoints are.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn runs_dir(&self) -> PathBuf {
        self.dir.join("runs")
    }

    fn blobs_dir(&self) -> PathBuf {
        self.dir.join("blobs")
    }

    /// The checkpoint of run `run_id`, which started after `messages_before` messages with
    /// `task`. Nothing is written until its first file write.
    pub fn begin(&self, run_id: &str, task: &str, messages_before: usize) -> Arc<RunCheckpoint> {
        Arc::new(RunCheckpoint {
            store: self.clone(),
            manifest: Mutex::new(Manifest {
                run_id: run_id.to_owned(),
                task: task.to_owned(),
                messages_before,
                started_at: Utc::now(),
                sealed: false,
                files: Vec::new(),
            }),
        })
    }

    /// The runs kept, oldest first.
    ///
    /// # Errors
    /// The directory cannot be read or a manifest is damaged.
    pub fn points(&self) -> Result<Vec<Point>, CheckpointError> {
        Ok(self.manifests()?.iter().map(point).collect())
    }

    /// Every manifest, oldest first.
    fn manifests(&self) -> Result<Vec<Manifest>, CheckpointError> {
        let dir = self.runs_dir();
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_at(dir.display().to_string())(e)),
        };
        let mut manifests = Vec::new();
        for entry in entries {
            let path = entry.map_err(io_at(dir.display().to_string()))?.path();
            if path.extension().is_none_or(|e| e != "json") {
                continue;
            }
            manifests.push(read_manifest(&path)?);
        }
        manifests.sort_by(|a, b| {
            a.started_at
                .cmp(&b.started_at)
                .then(a.run_id.cmp(&b.run_id))
        });
        Ok(manifests)
    }

    /// Undoes the newest run kept (see [`CheckpointStore::rewind`]).
    ///
    /// # Errors
    /// As [`CheckpointStore::rewind`]; [`CheckpointError::Nothing`] when no run is kept.
    pub fn undo_last(
        &self,
        workspace: &Workspace,
        force: bool,
    ) -> Result<Restored, CheckpointError> {
        let last = self.manifests()?.pop().ok_or(CheckpointError::Nothing)?;
        self.rewind(&last.run_id, workspace, force)
    }

    /// Undoes run `run_id` and every later one: each file they changed goes back to its state
    /// before the earliest of them changed it. Every file is checked first — it must be as the
    /// last of these runs to change it left it — and if one is not, nothing is restored
    /// ([`CheckpointError::Changed`]) unless `force`. The undone runs' checkpoints are then
    /// forgotten.
    ///
    /// # Errors
    /// The run is not kept, a file changed since (without `force`), or I/O failed.
    pub fn rewind(
        &self,
        run_id: &str,
        workspace: &Workspace,
        force: bool,
    ) -> Result<Restored, CheckpointError> {
        let manifests = self.manifests()?;
        let Some(from) = manifests.iter().position(|m| m.run_id == run_id) else {
            return Err(CheckpointError::UnknownRun(run_id.to_owned()));
        };
        let undone = &manifests[from..];
        // Per file: the state to expect now (what the newest run left) and the state to go back
        // to (what it was before the oldest run), with every directory those runs created.
        let mut plan: BTreeMap<String, (Option<FileState>, FileState, Vec<String>)> =
            BTreeMap::new();
        for manifest in undone {
            for record in &manifest.files {
                check_path(&record.path, &self.runs_dir())?;
                let entry = plan
                    .entry(record.path.clone())
                    .or_insert_with(|| (None, record.before.clone(), record.created_dirs.clone()));
                entry.0.clone_from(&record.after);
            }
        }
        let root = workspace
            .handle()
            .map_err(io_at(workspace.root().display().to_string()))?;
        if !force {
            let changed: Vec<String> = plan
                .iter()
                .filter(|(path, (expected, _, _))| match expected {
                    // A run that never ended cleanly: what it left is not known.
                    None => true,
                    Some(expected) => current_state(&root, path).ok().as_ref() != Some(expected),
                })
                .map(|(path, _)| path.clone())
                .collect();
            if !changed.is_empty() {
                return Err(CheckpointError::Changed {
                    files: changed,
                    runs: undone.len(),
                });
            }
        }
        let mut restored = Restored {
            runs: undone.iter().rev().map(|m| m.run_id.clone()).collect(),
            earliest: undone.first().map(point),
            ..Restored::default()
        };
        // Files first, then the directories their creation made, deepest first.
        let mut dirs = BTreeSet::new();
        for (path, (_, before, created_dirs)) in &plan {
            match before {
                FileState::File { sha256, mode, .. } => {
                    let bytes = self.blob(sha256)?;
                    write_file(&root, path, &bytes, *mode)?;
                    restored.restored.push(path.clone());
                }
                FileState::Absent => {
                    if remove_file(&root, path)? {
                        restored.removed.push(path.clone());
                    }
                }
                // Never kept: a file tool writes regular files only.
                FileState::Other => {}
            }
            for dir in created_dirs {
                check_path(dir, &self.runs_dir())?;
                dirs.insert(dir.clone());
            }
        }
        for dir in dirs.iter().rev() {
            remove_empty_dir(&root, dir);
        }
        for manifest in undone {
            let path = self.manifest_path(&manifest.run_id);
            fs::remove_file(&path).map_err(io_at(path.display().to_string()))?;
        }
        self.collect_blobs()?;
        Ok(restored)
    }

    /// Forgets every checkpoint of the session (the session was removed).
    ///
    /// # Errors
    /// The directory exists and cannot be removed.
    pub fn remove_all(&self) -> Result<(), CheckpointError> {
        match fs::remove_dir_all(&self.dir) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                Err(io_at(self.dir.display().to_string())(e))
            }
            _ => Ok(()),
        }
    }

    fn manifest_path(&self, run_id: &str) -> PathBuf {
        let name: String = run_id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        self.runs_dir().join(format!("{name}.json"))
    }

    /// The kept bytes with digest `sha256`, checked against it.
    fn blob(&self, sha256: &str) -> Result<Vec<u8>, CheckpointError> {
        if sha256.len() != 64 || !sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(CheckpointError::Damaged {
                path: self.dir.display().to_string(),
                reason: format!("`{sha256}` is not a SHA-256 digest"),
            });
        }
        let path = self.blobs_dir().join(sha256);
        let bytes = fs::read(&path).map_err(io_at(path.display().to_string()))?;
        if hex(&Sha256::digest(&bytes)) != sha256 {
            return Err(CheckpointError::Damaged {
                path: path.display().to_string(),
                reason: "its bytes no longer match their digest".to_owned(),
            });
        }
        Ok(bytes)
    }

    /// Keeps `bytes` as `blobs/<sha256>` unless they are kept already.
    fn keep_blob(&self, sha256: &str, bytes: &[u8]) -> Result<(), CheckpointError> {
        let dir = self.blobs_dir();
        let path = dir.join(sha256);
        if path.exists() {
            return Ok(());
        }
        private_dirs(&dir)?;
        write_private(&path, bytes)
    }

    /// Removes blobs no kept run refers to.
    fn collect_blobs(&self) -> Result<(), CheckpointError> {
        let used: BTreeSet<String> = self
            .manifests()?
            .iter()
            .flat_map(|m| m.files.iter())
            .flat_map(|f| [&f.before, f.after.as_ref().unwrap_or(&FileState::Absent)])
            .filter_map(|state| match state {
                FileState::File { sha256, .. } => Some(sha256.clone()),
                _ => None,
            })
            .collect();
        let dir = self.blobs_dir();
        let Ok(entries) = fs::read_dir(&dir) else {
            return Ok(());
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !used.contains(&name) {
                let _ = fs::remove_file(entry.path());
            }
        }
        Ok(())
    }

    /// Forgets the oldest runs beyond [`MAX_RUNS_KEPT`].
    fn prune(&self) -> Result<(), CheckpointError> {
        let manifests = self.manifests()?;
        if manifests.len() <= MAX_RUNS_KEPT {
            return Ok(());
        }
        for manifest in &manifests[..manifests.len() - MAX_RUNS_KEPT] {
            let _ = fs::remove_file(self.manifest_path(&manifest.run_id));
        }
        self.collect_blobs()
    }
}

fn point(manifest: &Manifest) -> Point {
    Point {
        run_id: manifest.run_id.clone(),
        task: manifest.task.clone(),
        messages_before: manifest.messages_before,
        started_at: manifest.started_at,
        files: manifest.files.iter().map(|f| f.path.clone()).collect(),
    }
}

fn read_manifest(path: &Path) -> Result<Manifest, CheckpointError> {
    let text = bosun_fsio::read_state_text(path)
        .and_then(|text| {
            text.ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "no manifest"))
        })
        .map_err(io_at(path.display().to_string()))?;
    serde_json::from_str(&text).map_err(|e| CheckpointError::Damaged {
        path: path.display().to_string(),
        reason: e.to_string(),
    })
}

/// A kept path must be a plain relative path: no root, no `..`, no `.`.
fn check_path(path: &str, manifest: &Path) -> Result<(), CheckpointError> {
    let plain = !path.is_empty()
        && Path::new(path)
            .components()
            .all(|c| matches!(c, Component::Normal(_)));
    if plain {
        Ok(())
    } else {
        Err(CheckpointError::Damaged {
            path: manifest.display().to_string(),
            reason: format!("`{path}` is not a plain path inside the workspace"),
        })
    }
}

/// The checkpoint of one run, filled by the file tools as they write.
#[derive(Debug)]
pub struct RunCheckpoint {
    store: CheckpointStore,
    manifest: Mutex<Manifest>,
}

impl RunCheckpoint {
    /// Keeps the state of `relative` (a workspace-relative path) unless this run already kept
    /// it. Called by a file tool just before it writes; when it fails, the tool must not write.
    ///
    /// # Errors
    /// The file cannot be read, is too large, or the checkpoint cannot be written.
    pub fn before_write(
        &self,
        workspace: &Workspace,
        relative: &Path,
    ) -> Result<(), CheckpointError> {
        let shown = slashed(relative);
        check_path(&shown, self.store.dir())?;
        let mut manifest = self.manifest.lock().unwrap_or_else(PoisonError::into_inner);
        if manifest.files.iter().any(|f| f.path == shown) {
            return Ok(());
        }
        let root = workspace
            .handle()
            .map_err(io_at(workspace.root().display().to_string()))?;
        let (before, bytes) = read_state(&root, &shown)?;
        if let (FileState::File { sha256, .. }, Some(bytes)) = (&before, &bytes) {
            self.store.keep_blob(sha256, bytes)?;
        }
        let created_dirs = if before == FileState::Absent {
            missing_dirs(&root, &shown)
        } else {
            Vec::new()
        };
        manifest.files.push(FileRecord {
            path: shown,
            before,
            created_dirs,
            after: None,
        });
        self.save(&manifest)
    }

    /// Records the state the run left each file in; called once when the run ends, however
    /// it ended. Also forgets the session's oldest runs beyond [`MAX_RUNS_KEPT`].
    ///
    /// # Errors
    /// The checkpoint cannot be written.
    pub fn seal(&self, workspace: &Workspace) -> Result<(), CheckpointError> {
        let mut manifest = self.manifest.lock().unwrap_or_else(PoisonError::into_inner);
        if manifest.files.is_empty() {
            return Ok(());
        }
        let root = workspace
            .handle()
            .map_err(io_at(workspace.root().display().to_string()))?;
        for record in &mut manifest.files {
            record.after = Some(current_state(&root, &record.path).unwrap_or(FileState::Other));
        }
        manifest.sealed = true;
        self.save(&manifest)?;
        drop(manifest);
        self.store.prune()
    }

    /// The workspace-relative files this run changed so far.
    pub fn files(&self) -> Vec<String> {
        self.manifest
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .files
            .iter()
            .map(|f| f.path.clone())
            .collect()
    }

    fn save(&self, manifest: &Manifest) -> Result<(), CheckpointError> {
        let dir = self.store.runs_dir();
        private_dirs(&dir)?;
        let json = serde_json::to_vec_pretty(manifest).map_err(|e| CheckpointError::Io {
            path: dir.display().to_string(),
            source: io::Error::other(e),
        })?;
        write_private(&self.store.manifest_path(&manifest.run_id), &json)
    }
}

/// The pre-write hook of the file tools: keeps the state of `relative` in the run's checkpoint
/// (when the session has one) before the tool changes it, or refuses the write.
///
/// # Errors
/// `io_error` naming the file when its state cannot be kept: the file is then left as it is.
pub fn before_write(
    checkpoint: Option<&RunCheckpoint>,
    workspace: &Workspace,
    relative: &Path,
) -> Result<(), ToolError> {
    let Some(checkpoint) = checkpoint else {
        return Ok(());
    };
    checkpoint
        .before_write(workspace, relative)
        .map_err(|e| {
            ToolError::new(
                ErrorCode::IoError,
                format!(
                    "`{}` was not changed: its state could not be kept for undo ({e}); free space under $BOSUN_HOME or try again",
                    slashed(relative)
                ),
            )
        })
}

fn slashed(relative: &Path) -> String {
    relative
        .components()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// The parent directory handle and the file name of `path` (plain, relative), or `None` when
/// the parent does not exist.
fn parent_of<'p>(root: &Root, path: &'p str) -> io::Result<Option<(Dir, &'p str)>> {
    let (parent, name) = path.rsplit_once('/').unwrap_or((".", path));
    match root.open_dir(Path::new(parent)) {
        Ok(dir) => Ok(Some((dir, name))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// The state of `path` and, for a regular file, its bytes.
fn read_state(root: &Root, path: &str) -> Result<(FileState, Option<Vec<u8>>), CheckpointError> {
    let Some((dir, name)) = parent_of(root, path).map_err(io_at(path))? else {
        return Ok((FileState::Absent, None));
    };
    let stat = match dir.stat(name) {
        Ok(stat) => stat,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((FileState::Absent, None)),
        Err(e) => return Err(io_at(path)(e)),
    };
    if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::RegularFile {
        return Ok((FileState::Other, None));
    }
    let size = u64::try_from(stat.st_size).unwrap_or(u64::MAX);
    if size > MAX_FILE_BYTES {
        return Err(CheckpointError::TooLarge {
            path: path.to_owned(),
            bytes: size,
        });
    }
    let mut file = dir.open_read(name).map_err(io_at(path))?;
    let mut bytes = Vec::new();
    (&mut file)
        .take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io_at(path))?;
    let mode = file.metadata().map_err(io_at(path))?.permissions().mode() & 0o7777;
    let state = FileState::File {
        sha256: hex(&Sha256::digest(&bytes)),
        mode,
        bytes: bytes.len() as u64,
    };
    Ok((state, Some(bytes)))
}

fn current_state(root: &Root, path: &str) -> Result<FileState, CheckpointError> {
    read_state(root, path).map(|(state, _)| state)
}

/// The directories above `path` that do not exist, outermost first.
fn missing_dirs(root: &Root, path: &str) -> Vec<String> {
    let mut missing = Vec::new();
    let mut current = path;
    while let Some((parent, _)) = current.rsplit_once('/') {
        if root.open_dir(Path::new(parent)).is_ok() {
            break;
        }
        missing.push(parent.to_owned());
        current = parent;
    }
    missing.reverse();
    missing
}

/// Puts `bytes` with permission bits `mode` at `path`, atomically (a new file beside it,
/// renamed over it), creating missing parents beneath the root.
fn write_file(root: &Root, path: &str, bytes: &[u8], mode: u32) -> Result<(), CheckpointError> {
    let (parent, name) = path.rsplit_once('/').unwrap_or((".", path));
    let dir = root.create_dirs(Path::new(parent)).map_err(io_at(path))?;
    let temp = format!(
        ".{}.bosun-undo-{}.tmp",
        name.chars().take(64).collect::<String>(),
        uuid::Uuid::now_v7().simple()
    );
    let written = (|| {
        let mut file = dir.create_new(&temp)?;
        file.write_all(bytes)?;
        file.set_permissions(fs::Permissions::from_mode(mode))?;
        file.sync_all()?;
        dir.rename(&temp, name)
    })();
    if let Err(e) = written {
        let _ = dir.remove(&temp);
        return Err(io_at(path)(e));
    }
    let _ = dir.sync();
    Ok(())
}

/// Removes the file at `path`; `false` when it was not there.
fn remove_file(root: &Root, path: &str) -> Result<bool, CheckpointError> {
    let Some((dir, name)) = parent_of(root, path).map_err(io_at(path))? else {
        return Ok(false);
    };
    match dir.remove(name) {
        Ok(()) => {
            let _ = dir.sync();
            Ok(true)
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(io_at(path)(e)),
    }
}

/// Removes the directory at `path` if it is empty; anything in it keeps it.
fn remove_empty_dir(root: &Root, path: &str) {
    if let Ok(Some((dir, name))) = parent_of(root, path) {
        let _ = dir.remove_dir(name);
    }
}

/// Creates `dir` and its parents, readable by the owner only.
fn private_dirs(dir: &Path) -> Result<(), CheckpointError> {
    use std::os::unix::fs::DirBuilderExt as _;
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(io_at(dir.display().to_string()))
}

/// Writes `bytes` to `path` atomically, readable by the owner only.
fn write_private(path: &Path, bytes: &[u8]) -> Result<(), CheckpointError> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let temp = path.with_extension(format!("{}.tmp", uuid::Uuid::now_v7().simple()));
    let written = (|| {
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        fs::rename(&temp, path)
    })();
    if let Err(e) = written {
        let _ = fs::remove_file(&temp);
        return Err(io_at(path.display().to_string())(e));
    }
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::with_capacity(64), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}
