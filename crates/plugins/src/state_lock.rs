//! The lock that keeps two Bosun processes from losing each other's change to the same state
//! file (`trust.toml`, `registry/lock.json`, `config.toml`, the MCP pins, …).
//!
//! Every such file is changed by reading it, changing it in memory and writing it whole
//! ([`crate::atomic::write_atomic`]). Two processes doing that at once would each write their own
//! copy, and the later rename would drop the other's record. So a change takes an exclusive
//! advisory lock ([`std::fs::File::try_lock`], `flock`) on a sidecar file beside the state file,
//! `.<name>.lock` (mode 0600, never followed if a link; it holds at most the id of the process
//! that last wrote under it, see [`StateLock::sign`]), reads the file as it is on disk now,
//! applies its change and writes, all under the lock ([`update`]). The lock is held only for
//! that read-change-write, never across a question to the person or a network fetch; the
//! stores that load early and save later ([`crate::TrustStore`], [`crate::lock::InstallLock`])
//! keep a journal of their own changes and replay it on the file as it is at save.
//!
//! Waiting for the lock is bounded ([`WAIT`]): a lock held longer is reported with the file's
//! name and what to do, never waited on forever. The kernel drops the lock when its holder
//! exits, even by `SIGKILL`; the sidecar file itself stays (it is empty or holds a process id, and costs nothing),
//! and its name is none of the temporary names the start-up sweep removes.

use std::path::Path;
use std::time::Duration;

use crate::atomic::write_atomic;

pub use bosun_fsio::lock::{StateLock, WAIT, lock, lock_file_for, lock_within};

/// Why [`update`] changed nothing.
#[derive(Debug)]
pub enum UpdateError<E> {
    /// The lock could not be taken, or the file could not be read or written (the message
    /// names the file).
    Io(std::io::Error),
    /// The change refused the file as it is on disk now.
    Change(E),
}

/// Changes the state file `path` under its lock: `change` is given the file as it is on disk
/// now (`None` when there is none) and returns the new contents, or `None` to leave the file
/// as it is. The new contents are written with [`write_atomic`] before the lock is released.
///
/// # Errors
/// [`UpdateError::Io`] for the lock (see [`lock`]), the read and the write;
/// [`UpdateError::Change`] for what `change` returned. Either way the file is unchanged.
pub fn update<E>(
    path: &Path,
    change: impl FnOnce(Option<&[u8]>) -> Result<Option<Vec<u8>>, E>,
) -> Result<(), UpdateError<E>> {
    update_within(path, WAIT, change)
}

/// [`update`] with its own bound on the wait for the lock.
///
/// # Errors
/// As [`update`].
pub fn update_within<E>(
    path: &Path,
    wait: Duration,
    change: impl FnOnce(Option<&[u8]>) -> Result<Option<Vec<u8>>, E>,
) -> Result<(), UpdateError<E>> {
    let _lock = lock_within(path, wait).map_err(UpdateError::Io)?;
    let current = read_current(path).map_err(UpdateError::Io)?;
    if let Some(next) = change(current.as_deref()).map_err(UpdateError::Change)? {
        write_atomic(path, &next).map_err(|e| {
            UpdateError::Io(std::io::Error::new(
                e.kind(),
                format!("writing {}: {e}", path.display()),
            ))
        })?;
    }
    Ok(())
}

/// Replays a store's `changes`, in order, on the state file `path` as it is on disk now, under
/// its lock: `read` turns the bytes on disk (`None` when there is no file) into the store's
/// contents, `apply` makes one change, `encode` gives the bytes to write. Returns what was
/// written, for the store to hold from then on. Another process's records are kept; for the
/// keys changed here, these changes win.
///
/// # Errors
/// As [`update`]: [`UpdateError::Change`] for what `read` or `encode` refused (a file that no
/// longer parses is left as it is). Either way the file is unchanged.
pub fn replay<F, C: Clone, E>(
    path: &Path,
    changes: &[C],
    read: impl FnOnce(Option<&[u8]>) -> Result<F, E>,
    mut apply: impl FnMut(&mut F, C),
    encode: impl FnOnce(&F) -> Result<Vec<u8>, E>,
) -> Result<F, UpdateError<E>> {
    let mut merged = None;
    update(path, |current| {
        let mut contents = read(current)?;
        for change in changes.iter().cloned() {
            apply(&mut contents, change);
        }
        let bytes = encode(&contents)?;
        merged = Some(contents);
        Ok(Some(bytes))
    })?;
    // `update` returns Ok only after its change ran and produced the contents.
    merged.ok_or_else(|| UpdateError::Io(std::io::Error::other("the change did not run")))
}

/// The file's bytes, or `None` when there is no file; never through a link planted in its place
/// (see [`bosun_fsio::read_state`]).
fn read_current(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    bosun_fsio::read_state(path)
}

#[cfg(test)]
mod tests {
    use std::fs::File;
    use std::io::ErrorKind;
    use std::sync::{Arc, Barrier, mpsc};

    use super::*;

    /// Appends `line` to the file under its lock.
    fn append(path: &Path, line: &str) {
        update(path, |current| {
            let mut text = current.map(<[u8]>::to_vec).unwrap_or_default();
            text.extend_from_slice(line.as_bytes());
            text.push(b'\n');
            Ok::<_, std::convert::Infallible>(Some(text))
        })
        .unwrap();
    }

    /// A state file is never read through a link planted in its place — by an update, the
    /// trust store's load or the integrity lock's: another file's records (a trust store saying
    /// a changed plugin is trusted) would be taken as this home's, and written back. The file
    /// the link leads to is left as it was.
    #[test]
    fn state_files_are_never_read_through_a_link_planted_in_their_place() {
        let dir = tempfile::tempdir().unwrap();
        let planted = dir.path().join("planted");
        std::fs::write(&planted, "version = 1\n").unwrap();
        let path = dir.path().join("state.txt");
        bosun_fsio::testing::plant_link(&path, &planted);
        let mut ran = false;
        let error = update(&path, |_| {
            ran = true;
            Ok::<_, std::convert::Infallible>(Some(b"changed".to_vec()))
        })
        .unwrap_err();
        assert!(!ran, "the change ran on the planted file");
        let UpdateError::Io(error) = error;
        assert!(error.to_string().contains("symbolic link"), "{error}");

        let home = dir.path().join("home");
        std::fs::create_dir_all(home.join("registry")).unwrap();
        let trust = crate::TrustStore::default_path(&home);
        bosun_fsio::testing::plant_link(&trust, &planted);
        let error = crate::TrustStore::load(&trust).unwrap_err();
        assert!(error.to_string().contains("symbolic link"), "{error}");
        bosun_fsio::testing::plant_link(&crate::lock::lock_path(&home), &planted);
        let error = crate::lock::InstallLock::load(&home).unwrap_err();
        assert!(error.to_string().contains("symbolic link"), "{error}");
        assert_eq!(std::fs::read(&planted).unwrap(), b"version = 1\n");
    }

    #[test]
    fn concurrent_updates_all_land() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.txt");
        let writers = 8;
        let barrier = Arc::new(Barrier::new(writers));
        let handles: Vec<_> = (0..writers)
            .map(|i| {
                let path = path.clone();
                let barrier = Arc::clone(&barrier);
                std::thread::spawn(move || {
                    barrier.wait();
                    append(&path, &format!("writer {i}"));
                })
            })
            .collect();
        for handle in handles {
            handle.join().unwrap();
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let mut lines: Vec<&str> = text.lines().collect();
        lines.sort_unstable();
        let expected: Vec<String> = (0..writers).map(|i| format!("writer {i}")).collect();
        assert_eq!(lines, expected);
    }

    #[test]
    fn a_waiter_proceeds_once_the_holder_releases() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trust.toml");
        let held = lock(&path).unwrap();
        let (started, waiting) = mpsc::channel();
        let waiter = {
            let path = path.clone();
            std::thread::spawn(move || {
                started.send(()).unwrap();
                // A generous bound: only a hang guard.
                update_within(&path, Duration::from_secs(120), |_| {
                    Ok::<_, std::convert::Infallible>(Some(b"after".to_vec()))
                })
            })
        };
        waiting.recv().unwrap();
        // Whatever the waiter has done so far, it cannot have written under a held lock.
        assert!(!path.exists(), "written while the lock was held");
        drop(held);
        waiter.join().unwrap().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"after");
    }

    #[test]
    fn a_lock_held_forever_ends_the_wait_with_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trust.toml");
        std::fs::write(&path, "before").unwrap();
        // Another open file description, as another process would have.
        let other = File::options()
            .write(true)
            .create(true)
            .truncate(false)
            .open(lock_file_for(&path))
            .unwrap();
        other.lock().unwrap();
        let result = update_within(&path, Duration::from_millis(200), |_| {
            Ok::<_, std::convert::Infallible>(Some(b"after".to_vec()))
        });
        let Err(UpdateError::Io(error)) = result else {
            panic!("the update went ahead under another's lock: {result:?}");
        };
        assert_eq!(error.kind(), ErrorKind::TimedOut);
        let message = error.to_string();
        assert!(message.contains(&path.display().to_string()), "{message}");
        assert!(message.contains("another Bosun process"), "{message}");
        assert!(message.contains("try again"), "{message}");
        assert_eq!(std::fs::read(&path).unwrap(), b"before");
    }

    #[test]
    fn a_change_that_refuses_leaves_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock.json");
        std::fs::write(&path, "{broken").unwrap();
        let result = update(&path, |current| {
            assert_eq!(current, Some(&b"{broken"[..]));
            Err("does not parse")
        });
        assert!(matches!(result, Err(UpdateError::Change("does not parse"))));
        assert_eq!(std::fs::read(&path).unwrap(), b"{broken");
        // And the lock was released: the next change goes ahead at once.
        update_within(&path, Duration::ZERO, |_| {
            Ok::<_, std::convert::Infallible>(Some(b"{}".to_vec()))
        })
        .unwrap();
    }

    #[test]
    fn the_lock_file_is_private_not_followed_and_never_swept() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("registry/lock.json");
        drop(lock(&path).unwrap());
        let lock_path = lock_file_for(&path);
        assert_eq!(lock_path, dir.path().join("registry/.lock.json.lock"));
        let mode = std::fs::metadata(&lock_path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        for name in [
            ".trust.toml.lock",
            ".lock.json.lock",
            ".tmpabc.lock",
            ".pins.json.lock",
        ] {
            assert!(!crate::atomic::is_temporary_name(name), "{name}");
        }

        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("theirs");
        std::fs::write(&target, "theirs").unwrap();
        let linked = dir.path().join("config.toml");
        std::os::unix::fs::symlink(&target, lock_file_for(&linked)).unwrap();
        let error = lock(&linked).unwrap_err();
        assert_eq!(error.raw_os_error(), Some(libc::ELOOP), "{error}");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "theirs");
    }
}
