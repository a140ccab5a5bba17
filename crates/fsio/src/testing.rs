//! Helpers for hostile tests: plant a FIFO, a link or an oversized file where a file should be,
//! and run the operation under test on a thread with a generous hang guard.

use std::path::Path;
use std::time::Duration;

/// How long an operation may take before the test calls it hung: a guard, not a timing claim.
pub const HANG_GUARD: Duration = Duration::from_secs(20);

/// Replaces whatever is at `path` with a FIFO nobody writes to.
///
/// # Panics
/// When the FIFO cannot be made (a test helper).
pub fn plant_fifo(path: &Path) {
    remove(path);
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap_or_else(|e| panic!("running mkfifo: {e}"));
    assert!(status.success(), "mkfifo {} failed", path.display());
}

/// Replaces whatever is at `path` with a symbolic link to `target`.
///
/// # Panics
/// When the link cannot be made (a test helper).
pub fn plant_link(path: &Path, target: &Path) {
    remove(path);
    #[cfg(unix)]
    std::os::unix::fs::symlink(target, path)
        .unwrap_or_else(|e| panic!("linking {} to {}: {e}", path.display(), target.display()));
}

/// Replaces whatever is at `path` with a file of `bytes` bytes (sparse: it costs no disk).
///
/// # Panics
/// When the file cannot be made (a test helper).
pub fn plant_oversized(path: &Path, bytes: u64) {
    remove(path);
    let file =
        std::fs::File::create(path).unwrap_or_else(|e| panic!("creating {}: {e}", path.display()));
    file.set_len(bytes)
        .unwrap_or_else(|e| panic!("growing {}: {e}", path.display()));
}

/// Runs `operation` on a thread and hands back what it returned. An operation still running
/// after [`HANG_GUARD`] fails the test; `fifo` (if it is one) is then opened for writing so the
/// thread can end.
///
/// # Panics
/// When the operation has not returned within the guard, or panicked.
pub fn returns_within_guard<T: Send + 'static>(
    fifo: &Path,
    operation: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    let thread = std::thread::spawn(move || {
        let _ = tx.send(operation());
    });
    match rx.recv_timeout(HANG_GUARD) {
        Ok(value) => value,
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            let panic = thread.join().err();
            panic!("the operation panicked: {panic:?}")
        }
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            let _ = std::fs::OpenOptions::new()
                .write(true)
                .custom_nonblock()
                .open(fifo);
            panic!(
                "the operation had not returned after {HANG_GUARD:?}: it waited on {}",
                fifo.display()
            );
        }
    }
}

trait NonBlock {
    fn custom_nonblock(&mut self) -> &mut Self;
}

impl NonBlock for std::fs::OpenOptions {
    fn custom_nonblock(&mut self) -> &mut Self {
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::custom_flags(self, libc::O_NONBLOCK);
        self
    }
}

fn remove(path: &Path) {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
        let _ = std::fs::remove_dir_all(path);
    } else {
        let _ = std::fs::remove_file(path);
    }
}
