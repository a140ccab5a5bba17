//! How Bosun writes a file of its own: whole or not at all, never through a link, never over a
//! file it must not replace.
//!
//! Every write of a state file (the trust store, the config, a session, a key, a cache entry, an
//! OCI layout's index) goes through a temporary file beside the target, created by
//! [`tempfile`] under an unpredictable name with `O_CREAT | O_EXCL` (which never follows a link:
//! a link planted at that name fails the create instead of being written through) and mode 0600,
//! named `.<name>.<six random letters>.tmp` so the start-up sweep can recognise it. The
//! temporary is locked (`flock`) while it exists, written, synced, then renamed onto the target
//! and the directory synced, so a reader sees the old file or the new one, and a crash leaves
//! one of them. The rename replaces a link at the target itself, never what it points at.
//!
//! [`write_atomic`] replaces the target; [`write_new`] never does: the rename is
//! `renameat2(RENAME_NOREPLACE)` (or `link` + `unlink` where that is missing), so whatever is
//! at the name — a file written a moment ago by another process, a link — makes it fail with
//! [`io::ErrorKind::AlreadyExists`], with no window between a check and the write.
//! [`open_append`] opens a log to add lines to, not through a final link.
//!
//! This module creates no directory: the caller decides who may enter it.
//!
//! ```
//! # fn main() -> std::io::Result<()> {
//! let dir = tempfile::tempdir()?;
//! let key = dir.path().join("root.key");
//! bosun_fsio::write_new(&key, b"first")?;
//! let again = bosun_fsio::write_new(&key, b"second").unwrap_err();
//! assert_eq!(again.kind(), std::io::ErrorKind::AlreadyExists);
//! assert_eq!(std::fs::read(&key)?, b"first");
//! bosun_fsio::write_atomic(&key, b"third")?;
//! assert_eq!(std::fs::read(&key)?, b"third");
//! # Ok(()) }
//! ```

use std::fs::File;
use std::io::{self, Write as _};
use std::path::Path;

/// Replaces `path` with `contents`, atomically (see the module doc). The file is created with
/// mode 0600.
///
/// # Errors
/// Any I/O failure; the old file is then untouched and no temporary is left.
pub fn write_atomic(path: &Path, contents: &[u8]) -> io::Result<()> {
    write_atomic_with_mode(path, contents, 0o600)
}

/// [`write_atomic`] for a file others may read: created with `mode` (less the umask) instead
/// of 0600 — a blob of an OCI layout, a file of a plugin's tree. Never for a secret.
///
/// # Errors
/// As [`write_atomic`].
pub fn write_atomic_with_mode(path: &Path, contents: &[u8], mode: u32) -> io::Result<()> {
    let temp = written_temporary(path, contents, mode)?;
    temp.persist(path).map_err(|e| e.error)?;
    sync_dir(dir_of(path))
}

/// Creates `path` holding `contents`, atomically, only if nothing is at that name: an existing
/// file (even one created a moment before by another process) or a link is never replaced.
/// The file is created with mode 0600.
///
/// # Errors
/// [`io::ErrorKind::AlreadyExists`] when something is at `path` (it is untouched); any other
/// I/O failure. Either way no temporary is left.
pub fn write_new(path: &Path, contents: &[u8]) -> io::Result<()> {
    let temp = written_temporary(path, contents, 0o600)?;
    temp.persist_noclobber(path).map_err(|e| e.error)?;
    sync_dir(dir_of(path))
}

/// A temporary file beside `path` (see the module doc) of `mode`, holding `contents`, synced: it
/// is removed when dropped unless persisted.
fn written_temporary(
    path: &Path,
    contents: &[u8],
    mode: u32,
) -> io::Result<tempfile::NamedTempFile> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let prefix = format!(".{name}.");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".tmp");
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(mode));
    #[cfg(not(unix))]
    let _ = mode;
    let mut temp = builder.tempfile_in(dir_of(path))?;
    // The lock tells the sweep of another Bosun that this file is in flight. A file system
    // without locks only leaves the age to tell, which no real write comes near.
    let _ = temp.as_file().try_lock();
    temp.write_all(contents)?;
    temp.as_file().sync_all()?;
    Ok(temp)
}

/// A temporary file of `mode` for the caller to fill (a download streamed to disk) before
/// [`tempfile::NamedTempFile::persist`]: beside `path`, named and created as [`write_atomic`]'s.
///
/// # Errors
/// The file cannot be created in `path`'s directory.
pub fn temporary_beside(path: &Path, mode: u32) -> io::Result<tempfile::NamedTempFile> {
    written_temporary(path, &[], mode)
}

/// Creates the file `path`, which must not exist yet, holding `contents` with `mode` (set on
/// the descriptor, so the umask does not narrow a script's execute bits): for a file of a tree
/// being laid out in a new staging folder, where nothing is to be replaced. `O_EXCL` makes a
/// link or anything else already at that name fail the create, never written through.
///
/// # Errors
/// [`io::ErrorKind::AlreadyExists`] when something is at `path`; any other I/O failure.
pub fn create_file(path: &Path, contents: &[u8], mode: u32) -> io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600).custom_flags(libc::O_NOFOLLOW);
    }
    let mut file = options.open(path)?;
    file.write_all(contents)?;
    #[cfg(unix)]
    file.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(mode))?;
    #[cfg(not(unix))]
    let _ = mode;
    Ok(())
}

/// Opens the log `path` to add to, creating it with `mode` if missing: not through a final
/// link, not waiting on a FIFO, a regular file only (see [`crate::regular`]).
///
/// # Errors
/// [`io::ErrorKind::InvalidInput`] naming what is there for a link, a FIFO, a device or a
/// directory; any other I/O failure.
pub fn open_append(path: &Path, mode: u32) -> io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options
            .mode(mode)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    #[cfg(not(unix))]
    let _ = mode;
    let file = options.open(path).map_err(|e| refused(path, e))?;
    crate::regular(file, path)
        .map(|(file, _)| file)
        .map_err(crate::OpenError::into_io)
}

/// The open's error, or the refusal of a final link in its place (`ELOOP`) naming what is there.
#[cfg(unix)]
fn refused(path: &Path, error: io::Error) -> io::Error {
    crate::refused_link(path).map_or(error, crate::OpenError::into_io)
}

#[cfg(not(unix))]
fn refused(_path: &Path, error: io::Error) -> io::Error {
    error
}

fn dir_of(path: &Path) -> &Path {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

#[cfg(unix)]
fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(not(unix))]
fn sync_dir(_dir: &Path) -> io::Result<()> {
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use std::io::Write as _;
    use std::os::unix::fs::PermissionsExt as _;
    use std::sync::{Arc, Barrier};

    use super::*;
    use crate::testing::{plant_fifo, plant_link, returns_within_guard};

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("listing {}: {e}", dir.display()))
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn an_atomic_write_replaces_the_file_privately_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trust.toml");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(names(dir.path()), ["trust.toml"]);
    }

    #[test]
    fn a_link_at_the_target_is_replaced_and_what_it_points_at_is_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("theirs");
        std::fs::write(&outside, b"theirs").unwrap();
        let path = dir.path().join("index.json");
        plant_link(&path, &outside);
        write_atomic(&path, b"ours").unwrap();
        assert_eq!(std::fs::read(&outside).unwrap(), b"theirs");
        assert!(!path.symlink_metadata().unwrap().is_symlink());
        assert_eq!(std::fs::read(&path).unwrap(), b"ours");
    }

    #[test]
    fn a_new_file_never_replaces_an_existing_one_or_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("root.key");
        std::fs::write(&path, b"the key before").unwrap();
        let error = write_new(&path, b"another key").unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::AlreadyExists, "{error}");
        assert_eq!(std::fs::read(&path).unwrap(), b"the key before");

        let outside = dir.path().join("theirs");
        let linked = dir.path().join("linked.key");
        plant_link(&linked, &outside);
        let error = write_new(&linked, b"another key").unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::AlreadyExists, "{error}");
        assert!(linked.symlink_metadata().unwrap().is_symlink());
        assert!(!outside.exists(), "written through the link");
        assert_eq!(names(dir.path()), ["linked.key", "root.key"]);
    }

    /// Many writers race to create the same name: exactly one wins and the file is its own,
    /// whole — a check before the write could not give that.
    #[test]
    fn of_writers_racing_for_a_new_name_exactly_one_wins() {
        let dir = tempfile::tempdir().unwrap();
        let path = Arc::new(dir.path().join("root.key"));
        let writers = 8;
        let start = Arc::new(Barrier::new(writers));
        let handles: Vec<_> = (0..writers)
            .map(|i| {
                let path = Arc::clone(&path);
                let start = Arc::clone(&start);
                std::thread::spawn(move || {
                    start.wait();
                    write_new(&path, format!("key {i}").as_bytes()).map(|()| i)
                })
            })
            .collect();
        let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let won: Vec<usize> = results
            .iter()
            .filter_map(|r| r.as_ref().ok())
            .copied()
            .collect();
        assert_eq!(won.len(), 1, "{results:?}");
        for result in &results {
            if let Err(e) = result {
                assert_eq!(e.kind(), io::ErrorKind::AlreadyExists, "{e}");
            }
        }
        assert_eq!(
            std::fs::read_to_string(&*path).unwrap(),
            format!("key {}", won[0])
        );
    }

    #[test]
    fn the_temporary_is_named_for_the_sweep_and_created_exclusively() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock.json");
        let temp = temporary_beside(&path, 0o600).unwrap();
        let name = temp
            .path()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let random = name
            .strip_prefix(".lock.json.")
            .and_then(|r| r.strip_suffix(".tmp"))
            .unwrap_or_else(|| panic!("{name}"));
        assert_eq!(random.len(), 6, "{name}");
        let mode = temp.as_file().metadata().unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn a_created_file_keeps_its_mode_and_never_goes_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.sh");
        create_file(&path, b"#!/bin/sh\n", 0o755).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o755);
        let error = create_file(&path, b"again", 0o644).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::AlreadyExists, "{error}");

        let outside = dir.path().join("theirs");
        std::fs::write(&outside, b"theirs").unwrap();
        let linked = dir.path().join("linked");
        plant_link(&linked, &outside);
        let error = create_file(&linked, b"ours", 0o644).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::AlreadyExists, "{error}");
        assert_eq!(std::fs::read(&outside).unwrap(), b"theirs");
    }

    #[test]
    fn a_log_is_not_appended_through_a_link_nor_waits_on_a_fifo() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("history.jsonl");
        let mut log = open_append(&path, 0o600).unwrap();
        writeln!(log, "one").unwrap();
        drop(log);
        let mut log = open_append(&path, 0o600).unwrap();
        writeln!(log, "two").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\ntwo\n");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);

        let outside = dir.path().join("theirs");
        std::fs::write(&outside, b"theirs").unwrap();
        plant_link(&path, &outside);
        let error = open_append(&path, 0o600).unwrap_err();
        assert!(error.to_string().contains("a symbolic link"), "{error}");
        assert_eq!(std::fs::read(&outside).unwrap(), b"theirs");

        // A FIFO nobody reads: the open fails at once instead of waiting for a reader.
        plant_fifo(&path);
        let opening = path.clone();
        returns_within_guard(&path, move || open_append(&opening, 0o600).unwrap_err());
    }
}
