//! Where the built-in file tools read and write text when the face that runs the session offers
//! its own: an editor over the Agent Client Protocol holds unsaved buffers, and an edit should
//! land in the buffer the person is looking at. The tools still resolve and confine every path,
//! are still judged by the chokepoint and traced; this seam only changes whose bytes they read and
//! where the new text goes. It never starts a process: commands run in Bosun's OS sandbox.

use std::io;
use std::path::Path;
use std::sync::{Arc, PoisonError, RwLock};

use async_trait::async_trait;

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
