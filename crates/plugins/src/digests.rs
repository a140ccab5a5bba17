//! What listing plugins may reuse: each WebAssembly component's SHA-256 and metadata section, kept
//! in `$BOSUN_HOME/cache/plugin-digests.json` with the identity of the file they were read from
//! (device, inode, size, modification and status-change times).
//!
//! Only a listing uses it (`bosun plugins list`, `/plugins`): a plugin whose file still has the
//! identity it had when it was last read is shown from what was kept, without reading and
//! hashing its bytes again. Nothing that loads code does: the host always reads, hashes and
//! checks the bytes it runs against the trust store. The status-change time cannot be set from
//! user space, so a file rewritten in place — even with its size and modification time restored
//! — reads as changed. A cache file that does not parse, is too large or names other files is
//! simply not used.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

/// The largest cache file read: far beyond thousands of plugins' entries.
const MAX_CACHE_BYTES: u64 = 16 * 1024 * 1024;

/// Where a file is and what it is now, as far as the kernel says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Identity {
    dev: u64,
    ino: u64,
    len: u64,
    mtime_ns: i128,
    ctime_ns: i128,
}

impl Identity {
    /// The identity in `meta`, for a regular file.
    pub(crate) fn of(meta: &std::fs::Metadata) -> Option<Identity> {
        use std::os::unix::fs::MetadataExt;
        if !meta.file_type().is_file() {
            return None;
        }
        Some(Identity {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
            ctime_ns: i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()),
        })
    }
}

/// One component as it was last read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Known {
    identity: Identity,
    /// Its SHA-256, hex.
    pub(crate) sha256: String,
    /// Its `bosun:plugin-metadata` section, as read (checked again at every use).
    pub(crate) metadata: String,
}

/// The digests kept for a listing, and those it learns.
#[derive(Debug)]
pub struct Digests {
    file: PathBuf,
    known: BTreeMap<PathBuf, Known>,
    /// What this listing used or learned: the next cache file holds exactly these.
    used: Mutex<BTreeMap<PathBuf, Known>>,
}

impl Digests {
    /// The digests kept in `file` (none when it is missing or unusable).
    pub fn load(file: impl Into<PathBuf>) -> Digests {
        let file = file.into();
        // Not through a link planted in the cache's place (it would only change what `plugins
        // list` shows, but a listing should not show another file's claims either).
        let known = bosun_fsio::read_regular(&file, MAX_CACHE_BYTES)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default();
        Digests {
            file,
            known,
            used: Mutex::new(BTreeMap::new()),
        }
    }

    /// What was kept of `path`, when the file there (not followed if a link) is still the
    /// one it was read from.
    pub(crate) fn lookup(&self, path: &Path) -> Option<Known> {
        let known = self.known.get(path)?;
        let now = Identity::of(&std::fs::symlink_metadata(path).ok()?)?;
        if now != known.identity {
            return None;
        }
        self.remember(path, known.clone());
        Some(known.clone())
    }

    /// Keeps what was just read of `path` (`identity` taken from the open file before reading).
    pub(crate) fn learn(&self, path: &Path, identity: Identity, sha256: &str, metadata: &[u8]) {
        let Ok(metadata) = std::str::from_utf8(metadata) else {
            return;
        };
        self.remember(
            path,
            Known {
                identity,
                sha256: sha256.to_owned(),
                metadata: metadata.to_owned(),
            },
        );
    }

    fn remember(&self, path: &Path, known: Known) {
        self.used
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(path.to_owned(), known);
    }

    /// Writes what this listing used, when it differs from what was kept. A failure only
    /// costs the next listing a read.
    pub fn save(&self) {
        let used = self
            .used
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if *used == self.known {
            return;
        }
        if let Ok(json) = serde_json::to_vec(&*used) {
            let _ = crate::atomic::write_atomic(&self.file, &json);
        }
    }
}
