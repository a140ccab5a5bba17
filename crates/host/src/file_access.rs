//! Where the built-in file tools read and write text when the face that runs the session offers
//! its own: an editor over the Agent Client Protocol holds unsaved buffers, and an edit should
//! land in the buffer the person is looking at. The tools still resolve and confine every path,
//! are still judged by the chokepoint and traced; this seam only changes whose bytes they read and
//! where the new text goes. It never starts a process: commands run in Bosun's OS sandbox.
//!
//! The face writes by path, in its own process, so a path confined when the tool checked it could
//! be swapped before the face writes (a directory replaced by a symbolic link to the outside).
//! [`write_confined`] closes that window on Bosun's side: the path is handed over only while it
//! still names, by the same canonical path and beneath the root, the very file the tool opened
//! (its device and inode), and is checked again once the face has written.

use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};

use async_trait::async_trait;
use bosun_core::{ErrorCode, ToolError};
use rustix::fs::{Mode, OFlags};

/// Reads and writes whole text files through the face (an editor's buffers). Paths are
/// absolute, canonical and already confined to the workspace.
#[async_trait]
pub trait FileAccess: Send + Sync {
    /// The file's text as the face sees it (an unsaved buffer included).
    async fn read_text(&self, path: &Path) -> io::Result<String>;

    /// Replaces the file's text (the face creates the file when it does not exist).
    async fn write_text(&self, path: &Path, text: &str) -> io::Result<()>;
}

/// The file access a session's tools use, when its face offers one.
#[derive(Default)]
pub struct FileAccessSlot(RwLock<Option<Arc<dyn FileAccess>>>);

impl std::fmt::Debug for FileAccessSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("FileAccessSlot")
            .field(&self.get().is_some())
            .finish()
    }
}

impl FileAccessSlot {
    /// Sets (or, with `None`, removes) the face's file access.
    pub fn set(&self, access: Option<Arc<dyn FileAccess>>) {
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = access;
    }

    /// The face's file access, if it offers one.
    pub fn get(&self) -> Option<Arc<dyn FileAccess>> {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// A file a face is about to write, as the tool confined it: its canonical path beneath the
/// root and the identity (device, inode) of the file the tool opened there.
#[derive(Debug, Clone)]
pub struct ConfinedPath {
    root: PathBuf,
    path: PathBuf,
    identity: (u64, u64),
}

impl ConfinedPath {
    /// `path` (absolute and canonical, inside the canonical `root`) as it names `opened` now,
    /// the file the tool opened beneath the root.
    ///
    /// # Errors
    /// The opened file's metadata cannot be read.
    pub fn new(root: &Path, path: &Path, opened: &std::fs::File) -> io::Result<Self> {
        let meta = opened.metadata()?;
        Ok(Self {
            root: root.to_owned(),
            path: path.to_owned(),
            identity: (meta.dev(), meta.ino()),
        })
    }

    /// The path the face is given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the path still names the checked file: it is still its own canonical path (no
    /// component has become a symbolic link), and opened beneath the root without following a
    /// link it is the same device and inode.
    fn still_names_it(&self) -> io::Result<bool> {
        if std::fs::canonicalize(&self.path)? != self.path {
            return Ok(false);
        }
        let Ok(relative) = self.path.strip_prefix(&self.root) else {
            return Ok(false);
        };
        let root = crate::beneath::Root::open(&self.root)?;
        let fd = crate::beneath::open_at(
            root.fd(),
            relative,
            OFlags::PATH | OFlags::NOFOLLOW,
            Mode::empty(),
        )?;
        let stat = rustix::fs::fstat(&fd)?;
        Ok((stat.st_dev, stat.st_ino) == self.identity)
    }

    /// [`Self::still_names_it`] off the async threads, as a tool error for `shown` saying
    /// `swapped` when it does not.
    async fn check(&self, shown: &str, swapped: fn(&str) -> ToolError) -> Result<(), ToolError> {
        let target = self.clone();
        let still = tokio::task::spawn_blocking(move || target.still_names_it())
            .await
            .map_err(|err| ToolError::new(ErrorCode::IoError, format!("`{shown}`: {err}")))?;
        match still {
            Ok(true) => Ok(()),
            Ok(false) => Err(swapped(shown)),
            Err(err) if err.kind() == io::ErrorKind::NotFound => Err(swapped(shown)),
            Err(err) => Err(crate::workspace::io_error(&err, shown)),
        }
    }
}

fn swapped_before(shown: &str) -> ToolError {
    ToolError::new(
        ErrorCode::OutsideWorkspace,
        format!(
            "`{shown}` no longer names the file that was checked (a symbolic link or another \
             file was put in its place), so nothing was written: look at what changed it"
        ),
    )
}

fn swapped_during(shown: &str) -> ToolError {
    ToolError::new(
        ErrorCode::OutsideWorkspace,
        format!(
            "`{shown}` was replaced while the editor wrote it (a symbolic link or another file \
             was put in its place): check where the text went and what changed the path"
        ),
    )
}

/// Writes `text` through `files` to `target`, shown to the model as `shown`: checked again right
/// before the face is given the path, so a path swapped since the tool confined it is never
/// handed over, and once more after the face wrote, so a swap during the write is reported
/// rather than taken for success.
///
/// # Errors
/// `outside_workspace` when the path no longer names the checked file; the face's own failure
/// as for any write.
pub async fn write_confined(
    files: &dyn FileAccess,
    target: &ConfinedPath,
    text: &str,
    shown: &str,
) -> Result<(), ToolError> {
    target.check(shown, swapped_before).await?;
    files
        .write_text(target.path(), text)
        .await
        .map_err(|err| crate::workspace::io_error(&err, shown))?;
    target.check(shown, swapped_during).await
}
