//! Opening files beneath a directory handle, atomically. A path checked by name and then opened
//! by name can be redirected in between: a process that swaps a directory of the path for a
//! symbolic link to the outside wins that race. So every file a built-in tool opens, creates,
//! replaces or links is reached from a handle of the workspace root, one kernel call resolving
//! the whole relative path beneath it (`openat2` with `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`):
//! a link that leaves the root, an absolute link or `..` past the root fails with
//! `outside_workspace` whatever is swapped in meanwhile. Temporary files are created, linked,
//! renamed and removed relative to a handle of their directory, never by name.
//!
//! A directory handed on whole — a plugin's preopen — is opened stricter still
//! ([`open_dir_no_links`], `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`): no symbolic link at all,
//! not even one that stays beneath the root, so what is opened is the directory at exactly the
//! name that was judged, or nothing.
//!
//! Where the kernel lacks `openat2` (Linux before 5.6), each component is opened with
//! `O_NOFOLLOW` from the handle of the one before: stricter (no symbolic link is followed at
//! all, even one that stays inside) but never weaker.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};

use rustix::fs::{AtFlags, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

/// How often a resolution is retried when the kernel reports a concurrent rename (`EAGAIN`).
const RETRIES: usize = 16;

/// Why a resolution failed: it would have left the root.
#[derive(Debug)]
struct Escaped;

impl std::fmt::Display for Escaped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the path leaves the workspace through a symbolic link or `..`")
    }
}

impl std::error::Error for Escaped {}

/// The error a resolution that would leave the root gives.
fn escaped() -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, Escaped)
}

fn from_errno(errno: Errno) -> io::Error {
    if errno == Errno::XDEV {
        escaped()
    } else {
        io::Error::from(errno)
    }
}

/// Whether `error` says the path left the workspace (rather than, say, not existing).
pub fn is_escape(error: &io::Error) -> bool {
    error.get_ref().is_some_and(|inner| inner.is::<Escaped>())
}

/// Why [`open_dir_no_links`] failed: a symbolic link lies on the path.
#[derive(Debug)]
struct Linked;

impl std::fmt::Display for Linked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a symbolic link lies on the path")
    }
}

impl std::error::Error for Linked {}

fn linked() -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, Linked)
}

/// Whether `error` says a symbolic link lay on a path opened by [`open_dir_no_links`].
pub fn is_link_on_path(error: &io::Error) -> bool {
    error.get_ref().is_some_and(|inner| inner.is::<Linked>())
}

/// The plain names of `relative`: only `Normal` components are allowed (no root, no `..`).
fn names(relative: &Path) -> io::Result<Vec<&std::ffi::OsStr>> {
    relative
        .components()
        .filter(|c| !matches!(c, Component::CurDir))
        .map(|c| match c {
            Component::Normal(name) => Ok(name),
            _ => Err(escaped()),
        })
        .collect()
}

/// Opens `relative` beneath `dir` with `flags`.
pub fn open_at(
    dir: BorrowedFd<'_>,
    relative: &Path,
    flags: OFlags,
    mode: Mode,
) -> io::Result<OwnedFd> {
    let names = names(relative)?;
    if names.is_empty() {
        return rustix::fs::openat(dir, ".", flags | OFlags::CLOEXEC, mode).map_err(from_errno);
    }
    let joined: std::path::PathBuf = names.iter().collect();
    for _ in 0..RETRIES {
        match rustix::fs::openat2(
            dir,
            &joined,
            flags | OFlags::CLOEXEC,
            mode,
            ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
        ) {
            Err(Errno::AGAIN | Errno::INTR) => continue,
            // No openat2 here, or a seccomp filter that refuses it (some container runtimes
            // answer EPERM); the walk below reports a real permission error again.
            Err(Errno::NOSYS | Errno::PERM) => {
                return open_by_components(dir, &names, flags, mode);
            }
            other => return other.map_err(from_errno),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::Interrupted,
        "the directory kept changing while the path was resolved: try again",
    ))
}

/// The fallback: every directory opened with `O_NOFOLLOW` from the one before.
fn open_by_components(
    dir: BorrowedFd<'_>,
    names: &[&std::ffi::OsStr],
    flags: OFlags,
    mode: Mode,
) -> io::Result<OwnedFd> {
    let Some((last, parents)) = names.split_last() else {
        return Err(escaped());
    };
    let mut current: Option<OwnedFd> = None;
    for name in parents {
        let at = current.as_ref().map_or(dir, AsFd::as_fd);
        let next = rustix::fs::openat(
            at,
            *name,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| {
            if e == Errno::LOOP || e == Errno::NOTDIR {
                escaped()
            } else {
                from_errno(e)
            }
        })?;
        current = Some(next);
    }
    let at = current.as_ref().map_or(dir, AsFd::as_fd);
    rustix::fs::openat(at, *last, flags | OFlags::NOFOLLOW | OFlags::CLOEXEC, mode).map_err(|e| {
        if e == Errno::LOOP {
            escaped()
        } else {
            from_errno(e)
        }
    })
}

/// Opens the directory `relative` beneath `dir`, following no symbolic link at all (not even
/// one that stays beneath `dir`) and no `..`: the directory at exactly that name, or an error.
/// What a caller judged by name is what it gets: a directory of the path swapped for a link
/// since is refused ([`is_link_on_path`]), never followed.
///
/// # Errors
/// [`is_link_on_path`] for a link on the path, [`is_escape`] for `..` or an absolute path,
/// and the system's error (not found, not a directory) otherwise.
pub fn open_dir_no_links(dir: BorrowedFd<'_>, relative: &Path) -> io::Result<OwnedFd> {
    let names = names(relative)?;
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    if names.is_empty() {
        return rustix::fs::openat(dir, ".", flags, Mode::empty()).map_err(io::Error::from);
    }
    let joined: std::path::PathBuf = names.iter().collect();
    for _ in 0..RETRIES {
        match rustix::fs::openat2(
            dir,
            &joined,
            flags,
            Mode::empty(),
            ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS,
        ) {
            Err(Errno::AGAIN | Errno::INTR) => continue,
            Err(Errno::NOSYS | Errno::PERM) => return dir_by_components(dir, &names),
            Err(Errno::LOOP) => return Err(linked()),
            other => return other.map_err(from_errno),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::Interrupted,
        "the directory kept changing while the path was resolved: try again",
    ))
}

/// [`open_dir_no_links`] without `openat2`: every directory opened with `O_NOFOLLOW` from the
/// one before.
fn dir_by_components(dir: BorrowedFd<'_>, names: &[&std::ffi::OsStr]) -> io::Result<OwnedFd> {
    let mut current: Option<OwnedFd> = None;
    for name in names {
        let at = current.as_ref().map_or(dir, AsFd::as_fd);
        let next = rustix::fs::openat(
            at,
            *name,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| {
            let is_link = rustix::fs::statat(at, *name, AtFlags::SYMLINK_NOFOLLOW)
                .is_ok_and(|st| rustix::fs::FileType::from_raw_mode(st.st_mode).is_symlink());
            if e == Errno::LOOP || is_link {
                linked()
            } else {
                io::Error::from(e)
            }
        })?;
        current = Some(next);
    }
    current.ok_or_else(escaped)
}

/// Walks the directory `relative` beneath `dir` — opened through no link at all
/// ([`open_dir_no_links`]) — and the directories below it, each opened from its parent's
/// descriptor with `O_NOFOLLOW` and listed through that descriptor, never by name: a directory
/// swapped for a link after it was listed is not entered (nor anything it leads to), so every
/// entry visited lies beneath `relative` where it was found. `visit` is given each entry's
/// path (relative to `dir`) and whether it is a directory (a link never is); it answers
/// whether to enter it, or breaks off the walk. A directory that cannot be opened or listed is
/// left out.
///
/// # Errors
/// As [`open_dir_no_links`], for `relative` itself.
pub fn walk_no_links(
    dir: BorrowedFd<'_>,
    relative: &Path,
    mut visit: impl FnMut(&Path, bool) -> std::ops::ControlFlow<(), bool>,
) -> io::Result<()> {
    use std::rc::Rc;
    let start = Rc::new(open_dir_no_links(dir, relative)?);
    // Directories still to list: each opened from its parent (kept open while a child of it
    // waits), only when its turn comes, so open descriptors stay few however wide the tree.
    let mut pending: Vec<(Rc<OwnedFd>, Option<std::ffi::OsString>, std::path::PathBuf)> =
        vec![(start, None, relative.to_path_buf())];
    while let Some((parent, name, path)) = pending.pop() {
        let opened = match &name {
            None => Ok(Rc::clone(&parent)),
            Some(name) => rustix::fs::openat(
                &*parent,
                name.as_os_str(),
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map(Rc::new),
        };
        drop(parent);
        let Ok(here) = opened else {
            continue;
        };
        let Ok(entries) = rustix::fs::Dir::read_from(&*here) else {
            continue;
        };
        for entry in entries {
            let Ok(entry) = entry else {
                break;
            };
            let bytes = entry.file_name().to_bytes();
            if bytes == b"." || bytes == b".." {
                continue;
            }
            let name = std::ffi::OsStr::from_bytes(bytes).to_os_string();
            let is_dir = match entry.file_type() {
                rustix::fs::FileType::Unknown => {
                    rustix::fs::statat(&*here, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW)
                        .is_ok_and(|st| rustix::fs::FileType::from_raw_mode(st.st_mode).is_dir())
                }
                kind => kind.is_dir(),
            };
            let child = path.join(&name);
            match visit(&child, is_dir) {
                std::ops::ControlFlow::Break(()) => return Ok(()),
                std::ops::ControlFlow::Continue(true) if is_dir => {
                    pending.push((Rc::clone(&here), Some(name), child));
                }
                std::ops::ControlFlow::Continue(_) => {}
            }
        }
    }
    Ok(())
}

/// A handle of the workspace root, from which every workspace file is opened.
#[derive(Debug)]
pub struct Root(OwnedFd);

impl Root {
    /// Opens the root directory `root` (canonical).
    pub fn open(root: &Path) -> io::Result<Root> {
        rustix::fs::open(
            root,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map(Root)
        .map_err(io::Error::from)
    }

    /// The handle itself.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.0.as_fd()
    }

    /// Opens the file at `relative` (to the root) for reading, without blocking on a FIFO and
    /// without following a final link out of the root.
    pub fn open_read(&self, relative: &Path) -> io::Result<File> {
        open_at(
            self.0.as_fd(),
            relative,
            OFlags::RDONLY | OFlags::NONBLOCK,
            Mode::empty(),
        )
        .map(File::from)
    }

    /// Opens the directory at `relative`, creating the missing ones one by one beneath the root
    /// (each `mkdirat` relative to the handle of its parent, so no swapped-in link is followed).
    pub fn create_dirs(&self, relative: &Path) -> io::Result<Dir> {
        let names = names(relative)?;
        let mut current = Dir(rustix::fs::openat(
            self.0.as_fd(),
            ".",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?);
        for name in names {
            let flags = OFlags::RDONLY | OFlags::DIRECTORY;
            let next = match open_at(current.0.as_fd(), Path::new(name), flags, Mode::empty()) {
                Ok(fd) => fd,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    match rustix::fs::mkdirat(current.0.as_fd(), name, Mode::from_raw_mode(0o777)) {
                        Ok(()) | Err(Errno::EXIST) => {}
                        Err(e) => return Err(io::Error::from(e)),
                    }
                    open_at(current.0.as_fd(), Path::new(name), flags, Mode::empty())?
                }
                Err(e) => return Err(e),
            };
            current = Dir(next);
        }
        Ok(current)
    }

    /// Opens the existing directory at `relative` through no symbolic link at all (see
    /// [`open_dir_no_links`]).
    pub fn open_dir_no_links(&self, relative: &Path) -> io::Result<OwnedFd> {
        open_dir_no_links(self.0.as_fd(), relative)
    }

    /// Opens the existing directory at `relative`.
    pub fn open_dir(&self, relative: &Path) -> io::Result<Dir> {
        open_at(
            self.0.as_fd(),
            relative,
            OFlags::RDONLY | OFlags::DIRECTORY,
            Mode::empty(),
        )
        .map(Dir)
    }
}

/// A handle of a directory beneath the root: temporary files are made, linked and renamed
/// through it.
#[derive(Debug)]
pub struct Dir(OwnedFd);

impl Dir {
    /// Creates the new file `name` here (never replacing one), readable and writable as the
    /// umask allows.
    pub fn create_new(&self, name: &str) -> io::Result<File> {
        rustix::fs::openat(
            self.0.as_fd(),
            name,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o666),
        )
        .map(File::from)
        .map_err(io::Error::from)
    }

    /// Links `from` to the new name `to`, both in this directory; fails if `to` exists.
    pub fn link(&self, from: &str, to: &str) -> io::Result<()> {
        rustix::fs::linkat(self.0.as_fd(), from, self.0.as_fd(), to, AtFlags::empty())
            .map_err(io::Error::from)
    }

    /// Renames `from` over `to`, both in this directory.
    pub fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        rustix::fs::renameat(self.0.as_fd(), from, self.0.as_fd(), to).map_err(io::Error::from)
    }

    /// Removes the file `name` from this directory.
    pub fn remove(&self, name: &str) -> io::Result<()> {
        rustix::fs::unlinkat(self.0.as_fd(), name, AtFlags::empty()).map_err(io::Error::from)
    }

    /// Removes the empty directory `name` from this directory.
    pub fn remove_dir(&self, name: &str) -> io::Result<()> {
        rustix::fs::unlinkat(self.0.as_fd(), name, AtFlags::REMOVEDIR).map_err(io::Error::from)
    }

    /// What `name` in this directory is, without following it if it is a link.
    pub fn stat(&self, name: &str) -> io::Result<rustix::fs::Stat> {
        rustix::fs::statat(self.0.as_fd(), name, AtFlags::SYMLINK_NOFOLLOW).map_err(io::Error::from)
    }

    /// Opens the file `name` of this directory for reading, never following a link.
    pub fn open_read(&self, name: &str) -> io::Result<File> {
        rustix::fs::openat(
            self.0.as_fd(),
            name,
            OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map(File::from)
        .map_err(io::Error::from)
    }

    /// Flushes the directory so a link or rename in it survives a crash.
    pub fn sync(&self) -> io::Result<()> {
        rustix::fs::fsync(self.0.as_fd()).map_err(io::Error::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_out_of_the_root_are_refused_and_links_inside_are_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        std::fs::create_dir_all(root.join("a")).unwrap();
        std::fs::write(tmp.path().join("outside.txt"), "secret").unwrap();
        std::fs::write(root.join("a/inside.txt"), "fine").unwrap();
        std::os::unix::fs::symlink(tmp.path(), root.join("up")).unwrap();
        std::os::unix::fs::symlink("/etc", root.join("abs")).unwrap();
        std::os::unix::fs::symlink("a", root.join("same")).unwrap();
        let handle = Root::open(&root).unwrap();
        for bad in [
            "up/outside.txt",
            "abs/hostname",
            "../outside.txt",
            "a/../../outside.txt",
        ] {
            let error = handle.open_read(Path::new(bad)).unwrap_err();
            assert!(is_escape(&error), "{bad}: {error}");
        }
        assert!(handle.open_read(Path::new("same/inside.txt")).is_ok());
        assert!(handle.open_read(Path::new("a/inside.txt")).is_ok());
        let dir = handle.create_dirs(Path::new("x/y")).unwrap();
        dir.create_new("f").unwrap();
        assert!(root.join("x/y/f").exists());
        assert!(handle.create_dirs(Path::new("up/x")).is_err());
        assert!(!tmp.path().join("x").exists());
    }

    /// A walk lists each directory through the descriptor it opened, never by name: a directory
    /// swapped for a link to the outside after it was listed (here, by the visitor itself, the
    /// instant before it is entered) is not entered, and nothing outside is visited.
    #[test]
    fn a_walk_never_enters_a_directory_swapped_for_a_link() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("a/b/inside.txt"), "").unwrap();
        std::fs::create_dir_all(tmp.path().join("outside/deep")).unwrap();
        std::fs::write(tmp.path().join("outside/deep/secret.txt"), "").unwrap();
        let handle = Root::open(&root).unwrap();
        let mut seen = Vec::new();
        walk_no_links(handle.fd(), Path::new(""), |path, is_dir| {
            seen.push(path.to_path_buf());
            if path == Path::new("a/b") {
                std::fs::rename(root.join("a/b"), root.join("a/moved")).unwrap();
                std::os::unix::fs::symlink(tmp.path().join("outside"), root.join("a/b")).unwrap();
            }
            std::ops::ControlFlow::Continue(is_dir)
        })
        .unwrap();
        assert!(seen.contains(&"a/b".into()), "{seen:?}");
        assert!(
            !seen
                .iter()
                .any(|p| p.starts_with("a/b") && p != Path::new("a/b")),
            "{seen:?}"
        );
        // A link at the start is refused whole.
        let error = walk_no_links(handle.fd(), Path::new("a/b"), |_, _| {
            std::ops::ControlFlow::Continue(true)
        })
        .unwrap_err();
        assert!(is_link_on_path(&error), "{error}");
        // Without swaps, everything below is visited, and a break stops the walk.
        let mut all = Vec::new();
        walk_no_links(handle.fd(), Path::new("a"), |path, is_dir| {
            all.push(path.to_path_buf());
            std::ops::ControlFlow::Continue(is_dir)
        })
        .unwrap();
        assert!(all.contains(&"a/moved/inside.txt".into()), "{all:?}");
        let mut count = 0;
        walk_no_links(handle.fd(), Path::new(""), |_, _| {
            count += 1;
            std::ops::ControlFlow::Break(())
        })
        .unwrap();
        assert_eq!(count, 1);
    }

    /// A directory handed on whole is opened through no link at all: one leading out, one
    /// staying inside, one in the middle of the path or at its end; `..` and absolute paths
    /// are refused as leaving. The fallback walk refuses the same.
    #[test]
    fn a_directory_opened_whole_is_reached_through_no_link() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::os::unix::fs::symlink(tmp.path(), root.join("up")).unwrap();
        std::os::unix::fs::symlink("a", root.join("same")).unwrap();
        std::os::unix::fs::symlink("b", root.join("a/to-b")).unwrap();
        let handle = Root::open(&root).unwrap();
        fn names(p: &str) -> Vec<&std::ffi::OsStr> {
            p.split('/').map(std::ffi::OsStr::new).collect()
        }
        for linked in ["up", "same", "same/b", "a/to-b"] {
            let error = handle.open_dir_no_links(Path::new(linked)).unwrap_err();
            assert!(is_link_on_path(&error), "{linked}: {error}");
            let error = dir_by_components(handle.fd(), &names(linked)).unwrap_err();
            assert!(is_link_on_path(&error), "fallback, {linked}: {error}");
        }
        for leaving in ["..", "a/../..", "/etc"] {
            let error = handle.open_dir_no_links(Path::new(leaving)).unwrap_err();
            assert!(is_escape(&error), "{leaving}: {error}");
        }
        let opened = handle.open_dir_no_links(Path::new("a/b")).unwrap();
        let direct = std::fs::metadata(root.join("a/b")).unwrap();
        let stat = rustix::fs::fstat(&opened).unwrap();
        use std::os::unix::fs::MetadataExt as _;
        assert_eq!((stat.st_dev, stat.st_ino), (direct.dev(), direct.ino()));
        let fallback = dir_by_components(handle.fd(), &names("a/b")).unwrap();
        assert_eq!(rustix::fs::fstat(&fallback).unwrap().st_ino, direct.ino());
        assert!(handle.open_dir_no_links(Path::new(".")).is_ok());
    }
}
