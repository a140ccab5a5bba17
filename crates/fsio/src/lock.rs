//! The sidecar lock of a state file Bosun reads, changes and writes back: an exclusive advisory
//! lock ([`std::fs::File::try_lock`], `flock`) on `.<name>.lock` beside it (mode 0600, never
//! opened through a link), waited for at most a stated bound, released by the kernel when its
//! holder exits. `bosun_plugins::state_lock` builds the read-change-write on it; layouts and
//! credential files that are changed in place take it directly. It never reads or writes the
//! state file itself.

use std::fs::File;
use std::io::{ErrorKind, Read};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Longest wait for another process's change to the same file: a change holds the lock for a
/// read and a write of a small file, so a lock held this long belongs to a process that hangs.
pub const WAIT: Duration = Duration::from_secs(30);

/// The longest pause between two tries for the lock.
const MAX_POLL: Duration = Duration::from_millis(100);

/// The exclusive right to change one state file, held until dropped.
#[derive(Debug)]
pub struct StateLock {
    /// The open lock file: closing it releases the lock.
    file: File,
}

impl StateLock {
    /// The process id the last holder that wrote under this lock left in the lock file
    /// ([`StateLock::sign`]), so a conflict found under the lock can name who made it.
    pub fn last_holder(&self) -> Option<u32> {
        use std::io::{Seek as _, SeekFrom};
        let mut file = &self.file;
        file.seek(SeekFrom::Start(0)).ok()?;
        let mut text = String::new();
        file.take(16).read_to_string(&mut text).ok()?;
        text.trim().parse().ok()
    }

    /// Leaves this process's id in the lock file, for [`StateLock::last_holder`] of the next.
    /// Best effort: a lock file that cannot be written only names no one.
    pub fn sign(&self) {
        use std::io::{Seek as _, SeekFrom, Write as _};
        let mut file = &self.file;
        let _ = file
            .set_len(0)
            .and_then(|()| file.seek(SeekFrom::Start(0)))
            .and_then(|_| write!(file, "{}", std::process::id()));
    }
}

/// The sidecar lock file of `path`: `.<name>.lock` in the same directory.
pub fn lock_file_for(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.lock"))
}

/// Takes the lock of the state file `path`, waiting at most [`WAIT`] for another process to
/// finish its change.
///
/// # Errors
/// The lock file cannot be created or opened (a link, not a regular file), or the lock stayed
/// held for [`WAIT`] ([`ErrorKind::TimedOut`], naming the file).
pub fn lock(path: &Path) -> std::io::Result<StateLock> {
    lock_within(path, WAIT)
}

/// [`lock`] with its own bound on the wait.
///
/// # Errors
/// As [`lock`], with `wait` as the bound.
pub fn lock_within(path: &Path, wait: Duration) -> std::io::Result<StateLock> {
    let lock_path = lock_file_for(path);
    if let Some(dir) = lock_path.parent().filter(|d| !d.as_os_str().is_empty()) {
        create_private_dir(dir)?;
    }
    let file = open_lock_file(&lock_path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::new(
            ErrorKind::InvalidInput,
            format!(
                "{} is not a regular file: remove it so Bosun can lock {}",
                lock_path.display(),
                path.display()
            ),
        ));
    }
    let started = Instant::now();
    let mut pause = Duration::from_millis(5);
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(StateLock { file }),
            Err(std::fs::TryLockError::WouldBlock) => {}
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(std::io::Error::new(
                    e.kind(),
                    format!("locking {}: {e}", lock_path.display()),
                ));
            }
        }
        let waited = started.elapsed();
        if waited >= wait {
            return Err(std::io::Error::new(
                ErrorKind::TimedOut,
                format!(
                    "{} is being changed by another Bosun process, which has held its lock {} for {} s: nothing was changed; try again when that process has finished (or has been stopped)",
                    path.display(),
                    lock_path.display(),
                    waited.as_secs()
                ),
            ));
        }
        std::thread::sleep(pause.min(wait - waited));
        pause = (pause * 2).min(MAX_POLL);
    }
}

#[cfg(unix)]
fn open_lock_file(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
}

#[cfg(not(unix))]
fn open_lock_file(path: &Path) -> std::io::Result<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
}

/// Creates `dir` and its missing parents, mode 0700 (the lock file's directory).
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}
