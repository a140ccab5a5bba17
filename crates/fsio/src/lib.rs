//! How Bosun opens a file from a tree it does not control.
//!
//! Plugin folders, Claude Code marketplace clones, skill folders, registry folders, OCI image
//! layouts and the workspace are written by someone else. A plain `open` of a path there can
//! hang on a FIFO planted in a file's place (it waits for a writer that never comes), read
//! something outside the tree through a symbolic link, or exhaust memory on a huge or endless
//! file (`/dev/zero` behind a link). Every read of such a file goes through this crate:
//!
//! 1. the open does not follow a final symbolic link (`O_NOFOLLOW`), does not wait on a FIFO
//!    (`O_NONBLOCK`) and is not inherited by children (`O_CLOEXEC`);
//! 2. the descriptor just opened is `fstat`ed, and anything but a regular file is refused with
//!    an error naming the path and what was found there (a link, a FIFO, a device, a directory,
//!    a socket) — judged on the descriptor, so nothing can be swapped in between a check and
//!    the open;
//! 3. `O_NONBLOCK` is cleared for the read;
//! 4. at most a stated bound is read; a file past it is an error naming the bound (one byte more
//!    than the bound is read, so a file that grew since its size was looked at is still seen).
//!
//! Writes of Bosun's own files go through [`write_atomic`] and [`write_new`]: a temporary file
//! created exclusively under an unpredictable name, renamed into place (never over an existing
//! file for [`write_new`]); logs are appended through [`open_append`], which does not follow a
//! final link either.
//!
//! Only the final component is not followed: the caller judges the directories on the way (a
//! plugin tree's walk refuses links it meets; the workspace opens beneath a handle of its root,
//! [`beneath`]).
//!
//! ```
//! # fn main() -> Result<(), bosun_fsio::OpenError> {
//! let dir = tempfile::tempdir().map_err(|e| bosun_fsio::OpenError::io(std::path::Path::new("."), e))?;
//! let path = dir.path().join("plugin.json");
//! std::fs::write(&path, br#"{"name":"demo"}"#).map_err(|e| bosun_fsio::OpenError::io(&path, e))?;
//! let text = bosun_fsio::read_text(&path, 64 * 1024)?;
//! assert_eq!(text, r#"{"name":"demo"}"#);
//! // Past the bound: an error that names it.
//! let error = bosun_fsio::read_regular(&path, 4).unwrap_err();
//! assert!(error.to_string().contains("4 bytes"));
//! # Ok(())
//! # }
//! ```

pub mod beneath;
pub mod lock;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
mod write;

pub use write::{
    create_file, open_append, temporary_beside, write_atomic, write_atomic_with_mode, write_new,
};

use std::fmt;
use std::fs::{File, Metadata};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// What was found where a regular file was expected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// A symbolic link (not followed).
    Link,
    /// A FIFO (named pipe).
    Fifo,
    /// A directory.
    Directory,
    /// A character device (`/dev/zero`, a terminal).
    CharDevice,
    /// A block device.
    BlockDevice,
    /// A Unix socket.
    Socket,
    /// Something else that is not a regular file.
    Other,
}

impl Found {
    /// What the metadata of an opened file (or of a path not followed) shows, `None` for a
    /// regular file.
    pub fn of(metadata: &Metadata) -> Option<Self> {
        let kind = metadata.file_type();
        if kind.is_file() {
            return None;
        }
        if kind.is_symlink() {
            return Some(Self::Link);
        }
        if kind.is_dir() {
            return Some(Self::Directory);
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileTypeExt as _;
            if kind.is_fifo() {
                return Some(Self::Fifo);
            }
            if kind.is_char_device() {
                return Some(Self::CharDevice);
            }
            if kind.is_block_device() {
                return Some(Self::BlockDevice);
            }
            if kind.is_socket() {
                return Some(Self::Socket);
            }
        }
        Some(Self::Other)
    }
}

impl fmt::Display for Found {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Link => "a symbolic link",
            Self::Fifo => "a FIFO",
            Self::Directory => "a directory",
            Self::CharDevice => "a character device",
            Self::BlockDevice => "a block device",
            Self::Socket => "a socket",
            Self::Other => "not a file",
        })
    }
}

/// Why a file could not be opened or read.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The open or the read failed (missing, no permission, an I/O error).
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The path as the caller named it.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// Something other than a regular file is where the file should be.
    #[error(
        "{} is {found}, not a regular file: Bosun reads only regular files from trees it does not control; put the file itself there",
        path.display()
    )]
    NotRegular {
        /// The path as the caller named it.
        path: PathBuf,
        /// What is there instead.
        found: Found,
    },
    /// The file is larger than the caller's bound.
    #[error(
        "{} is larger than {bound} bytes, the bound for this file: make it smaller",
        path.display()
    )]
    TooLarge {
        /// The path as the caller named it.
        path: PathBuf,
        /// The bound, in bytes.
        bound: u64,
    },
    /// The file is not UTF-8 text (from [`read_text`] only).
    #[error("{} is not UTF-8 text", path.display())]
    NotText {
        /// The path as the caller named it.
        path: PathBuf,
    },
}

impl OpenError {
    /// An I/O error at `path`.
    pub fn io(path: &Path, source: io::Error) -> Self {
        Self::Io {
            path: path.to_owned(),
            source,
        }
    }

    /// The path the error is about, as the caller named it.
    pub fn path(&self) -> &Path {
        match self {
            Self::Io { path, .. }
            | Self::NotRegular { path, .. }
            | Self::TooLarge { path, .. }
            | Self::NotText { path } => path,
        }
    }

    /// Whether nothing is at the path (so a caller that treats a missing file as absent can).
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::Io { source, .. } if source.kind() == io::ErrorKind::NotFound)
    }

    /// What was found in the file's place, for [`OpenError::NotRegular`].
    pub fn found(&self) -> Option<Found> {
        match self {
            Self::NotRegular { found, .. } => Some(*found),
            _ => None,
        }
    }

    /// The error as an [`io::Error`] of the same kind whose message is this one, naming the
    /// path.
    pub fn into_named_io(self) -> io::Error {
        let kind = match &self {
            Self::Io { source, .. } => source.kind(),
            Self::TooLarge { .. } => io::ErrorKind::FileTooLarge,
            Self::NotText { .. } => io::ErrorKind::InvalidData,
            Self::NotRegular { .. } => io::ErrorKind::InvalidInput,
        };
        io::Error::new(kind, self.to_string())
    }

    /// The error as an [`io::Error`] (its message kept), for callers whose own errors carry one.
    pub fn into_io(self) -> io::Error {
        match self {
            Self::Io { source, .. } => source,
            other => other.into_named_io(),
        }
    }
}

/// The most bytes of a state file Bosun keeps under its home that [`read_state`] reads.
pub const MAX_STATE_BYTES: u64 = 64 << 20;

/// The bytes of a state file Bosun keeps (`trust.toml`, `registry/lock.json`, a signed
/// registry's state, the MCP pins, remembered answers, …), or `None` when there is none. Read as
/// [`read_regular`] reads, to at most [`MAX_STATE_BYTES`]: a link planted in the file's place
/// is refused, never read through — it would make Bosun take another file's records (another
/// home's trust store, a file of the attacker's) as its own — and a FIFO is not waited on.
///
/// # Errors
/// An [`io::Error`] whose message names the path and what is there instead of the file.
pub fn read_state(path: &Path) -> io::Result<Option<Vec<u8>>> {
    absent_when_missing(read_regular(path, MAX_STATE_BYTES))
}

/// [`read_state`] of a text file.
///
/// # Errors
/// As [`read_state`], and [`io::ErrorKind::InvalidData`] for bytes that are not UTF-8.
pub fn read_state_text(path: &Path) -> io::Result<Option<String>> {
    absent_when_missing(read_text(path, MAX_STATE_BYTES))
}

/// A state file's read: `None` when there is no file, any other error named.
fn absent_when_missing<T>(read: Result<T, OpenError>) -> io::Result<Option<T>> {
    match read {
        Ok(value) => Ok(Some(value)),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e.into_named_io()),
    }
}

/// Opens `path` for reading: not through a final symbolic link, without waiting on a FIFO, a
/// regular file only (judged on the opened descriptor), `O_NONBLOCK` cleared. The file and its
/// metadata, taken from the descriptor.
///
/// # Errors
/// [`OpenError::NotRegular`] for a link, a FIFO, a device, a directory or a socket;
/// [`OpenError::Io`] when the open fails.
pub fn open_regular(path: &Path) -> Result<(File, Metadata), OpenError> {
    let file = open_no_follow(path)?;
    regular(file, path)
}

/// Judges a descriptor the caller opened itself (without following a final link and with
/// `O_NONBLOCK`, as beneath a directory handle): a regular file only, `O_NONBLOCK` cleared.
/// `path` is the name errors use.
///
/// # Errors
/// [`OpenError::NotRegular`] for anything but a regular file; [`OpenError::Io`] when `fstat`
/// or `fcntl` fails.
pub fn regular(file: File, path: &Path) -> Result<(File, Metadata), OpenError> {
    let metadata = file.metadata().map_err(|e| OpenError::io(path, e))?;
    if let Some(found) = Found::of(&metadata) {
        return Err(OpenError::NotRegular {
            path: path.to_owned(),
            found,
        });
    }
    clear_nonblocking(&file).map_err(|e| OpenError::io(path, e))?;
    Ok((file, metadata))
}

/// The bytes of the regular file at `path`, at most `bound` of them (see [`open_regular`]).
///
/// # Errors
/// As [`open_regular`], and [`OpenError::TooLarge`] past `bound`.
pub fn read_regular(path: &Path, bound: u64) -> Result<Vec<u8>, OpenError> {
    read_regular_with_metadata(path, bound).map(|(bytes, _)| bytes)
}

/// As [`read_regular`], with the metadata of the file read (taken from the descriptor before
/// reading: its identity, its times).
///
/// # Errors
/// As [`read_regular`].
pub fn read_regular_with_metadata(
    path: &Path,
    bound: u64,
) -> Result<(Vec<u8>, Metadata), OpenError> {
    let (file, metadata) = open_regular(path)?;
    let bytes = read_bounded(file, &metadata, path, bound)?;
    Ok((bytes, metadata))
}

/// The UTF-8 text of the regular file at `path`, at most `bound` bytes (see [`open_regular`]).
///
/// # Errors
/// As [`read_regular`], and [`OpenError::NotText`] for bytes that are not UTF-8.
pub fn read_text(path: &Path, bound: u64) -> Result<String, OpenError> {
    let bytes = read_regular(path, bound)?;
    String::from_utf8(bytes).map_err(|_| OpenError::NotText {
        path: path.to_owned(),
    })
}

/// At most `bound` bytes of `file` (already judged regular, `metadata` its own), read to its
/// end: one byte more than the bound is an error, so a file that grew since `metadata` was
/// taken is still refused.
///
/// # Errors
/// [`OpenError::TooLarge`] past `bound`; [`OpenError::Io`] when a read fails.
pub fn read_bounded(
    file: impl Read,
    metadata: &Metadata,
    path: &Path,
    bound: u64,
) -> Result<Vec<u8>, OpenError> {
    let too_large = || OpenError::TooLarge {
        path: path.to_owned(),
        bound,
    };
    if metadata.len() > bound {
        return Err(too_large());
    }
    let mut bytes = Vec::with_capacity(usize::try_from(metadata.len()).unwrap_or(0));
    file.take(bound.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| OpenError::io(path, e))?;
    if bytes.len() as u64 > bound {
        return Err(too_large());
    }
    Ok(bytes)
}

#[cfg(unix)]
fn open_no_follow(path: &Path) -> Result<File, OpenError> {
    use std::os::unix::fs::OpenOptionsExt as _;
    // O_NONBLOCK: opening a FIFO would otherwise wait for a writer; it changes nothing for a
    // regular file. `std` adds O_CLOEXEC itself.
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| refused_link(path).unwrap_or_else(|| OpenError::io(path, e)))
}

/// A final link the open refused (`ELOOP`), told apart from other failures by looking at the
/// path without following it.
#[cfg(unix)]
fn refused_link(path: &Path) -> Option<OpenError> {
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    is_link.then(|| OpenError::NotRegular {
        path: path.to_owned(),
        found: Found::Link,
    })
}

#[cfg(not(unix))]
fn open_no_follow(path: &Path) -> Result<File, OpenError> {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(OpenError::NotRegular {
            path: path.to_owned(),
            found: Found::Link,
        });
    }
    File::open(path).map_err(|e| OpenError::io(path, e))
}

/// Clears `O_NONBLOCK` on `file`, set only so that the open could not wait on a FIFO.
#[cfg(unix)]
#[allow(unsafe_code)]
fn clear_nonblocking(file: &File) -> io::Result<()> {
    use std::os::fd::AsRawFd as _;
    let fd = file.as_raw_fd();
    // SAFETY: `fd` is borrowed from `file`, open for the whole call; F_GETFL reads only the
    // descriptor's status flags.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    if flags & libc::O_NONBLOCK == 0 {
        return Ok(());
    }
    // SAFETY: as above; F_SETFL changes only the status flags of this descriptor.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(not(unix))]
fn clear_nonblocking(_file: &File) -> io::Result<()> {
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::testing::{plant_fifo, plant_link, returns_within_guard};

    #[test]
    fn a_regular_file_is_read_whole_within_its_bound() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        std::fs::write(&path, b"12345").unwrap();
        assert_eq!(read_regular(&path, 5).unwrap(), b"12345");
        assert_eq!(read_text(&path, 5).unwrap(), "12345");
    }

    #[test]
    fn a_file_past_its_bound_is_refused_naming_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        std::fs::write(&path, b"123456").unwrap();
        let error = read_regular(&path, 5).unwrap_err();
        assert!(
            matches!(error, OpenError::TooLarge { bound: 5, .. }),
            "{error}"
        );
        assert!(error.to_string().contains("5 bytes"), "{error}");
        assert!(
            error.to_string().contains(&path.display().to_string()),
            "{error}"
        );
    }

    #[test]
    fn a_file_that_grew_after_its_size_was_taken_is_still_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        std::fs::write(&path, b"123").unwrap();
        let (file, metadata) = open_regular(&path).unwrap();
        std::fs::write(&path, b"123456789").unwrap();
        let error = read_bounded(file, &metadata, &path, 5).unwrap_err();
        assert!(matches!(error, OpenError::TooLarge { .. }), "{error}");
    }

    #[test]
    fn a_fifo_is_refused_without_waiting_for_a_writer() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        plant_fifo(&path);
        let reading = path.clone();
        let error = returns_within_guard(&path, move || read_regular(&reading, 100).unwrap_err());
        assert_eq!(error.found(), Some(Found::Fifo), "{error}");
        assert!(error.to_string().contains("a FIFO"), "{error}");
        assert!(
            error.to_string().contains(&path.display().to_string()),
            "{error}"
        );
    }

    #[test]
    fn a_link_is_refused_and_what_it_points_at_is_not_read_or_named() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("secret");
        std::fs::write(&outside, b"secret").unwrap();
        let path = dir.path().join("a.txt");
        plant_link(&path, &outside);
        let error = read_regular(&path, 100).unwrap_err();
        assert_eq!(error.found(), Some(Found::Link), "{error}");
        assert!(!error.to_string().contains("secret"), "{error}");
        // A dangling link is a link too, not a missing file.
        let dangling = dir.path().join("b.txt");
        plant_link(&dangling, &dir.path().join("nowhere"));
        let error = read_regular(&dangling, 100).unwrap_err();
        assert_eq!(error.found(), Some(Found::Link), "{error}");
        assert!(!error.is_not_found());
    }

    #[test]
    fn a_device_and_a_directory_are_refused() {
        let error = read_regular(Path::new("/dev/zero"), 100).unwrap_err();
        assert_eq!(error.found(), Some(Found::CharDevice), "{error}");
        assert!(error.to_string().contains("a character device"), "{error}");
        let dir = tempfile::tempdir().unwrap();
        let error = read_regular(dir.path(), 100).unwrap_err();
        assert_eq!(error.found(), Some(Found::Directory), "{error}");
    }

    /// A state file is read when it is one, absent when there is none, and refused when a
    /// link or a FIFO is in its place — naming the path and what is there.
    #[test]
    fn a_state_file_is_never_read_through_a_link_or_from_a_fifo() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trust.toml");
        assert!(read_state(&path).unwrap().is_none());
        std::fs::write(&path, "mine").unwrap();
        assert_eq!(read_state_text(&path).unwrap().as_deref(), Some("mine"));
        let elsewhere = dir.path().join("elsewhere.toml");
        std::fs::write(&elsewhere, "theirs").unwrap();
        plant_link(&path, &elsewhere);
        let error = read_state(&path).unwrap_err();
        assert!(error.to_string().contains("a symbolic link"), "{error}");
        assert!(
            error.to_string().contains(&path.display().to_string()),
            "{error}"
        );
        plant_fifo(&path);
        let reading = path.clone();
        let error = returns_within_guard(&path, move || read_state(&reading).unwrap_err());
        assert!(error.to_string().contains("a FIFO"), "{error}");
    }

    #[test]
    fn a_missing_file_is_told_apart() {
        let dir = tempfile::tempdir().unwrap();
        let error = read_regular(&dir.path().join("none"), 100).unwrap_err();
        assert!(error.is_not_found(), "{error}");
    }

    #[test]
    fn the_file_handed_back_blocks_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        std::fs::write(&path, b"x").unwrap();
        let (file, _) = open_regular(&path).unwrap();
        use std::os::fd::AsRawFd as _;
        #[allow(unsafe_code)]
        // SAFETY: F_GETFL on a descriptor owned by `file`, open for the call.
        let flags = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETFL) };
        assert!(flags >= 0);
        assert_eq!(flags & libc::O_NONBLOCK, 0);
    }

    #[test]
    fn bytes_that_are_not_text_are_refused_as_text() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        std::fs::write(&path, [0xff, 0xfe]).unwrap();
        let error = read_text(&path, 100).unwrap_err();
        assert!(matches!(error, OpenError::NotText { .. }), "{error}");
    }
}
