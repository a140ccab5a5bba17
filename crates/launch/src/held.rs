//! The places a child's sandbox is built from — its grants, the protected paths it keeps
//! read-only, the credentials it masks, the files its command line names — each resolved once
//! and held open, so that what the kernel is handed later (a Landlock rule, a bind mount) is the
//! very file that was checked, not whatever its name leads to by then.
//!
//! Inside a place children may write (the workspace, a private `TMPDIR`, a write grant) a path is
//! opened beneath that place's descriptor through no symbolic link at all: another child (a
//! stdio MCP server running beside this command, say) could have swapped a directory there for a
//! link (`ws/sub` → `~/.ssh`). Anywhere else a path the caller has not resolved (a `[sandbox]`
//! grant, a toolchain, a named file) is resolved once — the person's own links, a dotfiles
//! checkout, are followed then — and that canonical path is opened through no link. A link found
//! where none was refuses the launch ([`LaunchError::Changed`]); nothing is ever opened by name
//! as a fallback (a kernel without `openat2` refuses too).

use std::ffi::CString;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use crate::{LaunchError, sys};

/// A place opened (`O_PATH`) through no symbolic link.
#[derive(Debug)]
pub(crate) struct Held {
    /// The path as the caller gave it: where `bwrap` puts it inside the child's root.
    pub(crate) given: PathBuf,
    /// Where it was opened: canonical, with no link on it when it was opened.
    pub(crate) path: PathBuf,
    pub(crate) fd: OwnedFd,
    dev: u64,
    ino: u64,
    mode: u32,
    /// Whether it is a mount's root on the host (no directory entry of its own names it).
    mount_root: bool,
}

impl Held {
    pub(crate) fn is_dir(&self) -> bool {
        self.mode & libc::S_IFMT == libc::S_IFDIR
    }

    pub(crate) fn is_file(&self) -> bool {
        self.mode & libc::S_IFMT == libc::S_IFREG
    }

    /// What must cover it inside a bubblewrap sandbox: `relative` beneath `grant` there, or
    /// its own canonical path when no grant holds it ([`crate::stage`]).
    pub(crate) fn check(
        &self,
        cover: crate::stage::Cover,
        grant: Option<&Held>,
        relative: PathBuf,
    ) -> crate::stage::Check {
        crate::stage::Check {
            cover,
            dev: self.dev,
            ino: self.ino,
            mount_root: self.mount_root,
            base: grant.map_or_else(|| self.path.clone(), |g| g.given.clone()),
            base_id: grant.map_or((0, 0), |g| (g.dev, g.ino)),
            relative,
        }
    }

    /// How the child finds this place again in its own mount namespace.
    pub(crate) fn target(&self) -> Result<sys::Target, LaunchError> {
        Ok(sys::Target {
            path: c_path(&self.path)?,
            dev: self.dev,
            ino: self.ino,
        })
    }

    fn duplicate(&self, given: &Path) -> Result<Held, LaunchError> {
        let fd = self
            .fd
            .try_clone()
            .map_err(|e| LaunchError::Setup(format!("holding {}: {e}", given.display())))?;
        Ok(Held {
            given: given.to_path_buf(),
            path: self.path.clone(),
            fd,
            dev: self.dev,
            ino: self.ino,
            mode: self.mode,
            mount_root: self.mount_root,
        })
    }
}

/// Whether a path has been resolved already by whoever decided on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Input {
    /// Decided on as it is (the workspace's protected paths, a caller's grants): no link on it
    /// inside a writable place is followed.
    Resolved,
    /// A name from a configuration (`~/.cargo/bin`): resolved once here, following the links it
    /// holds now, before it is opened through none.
    Unresolved,
}

/// What a link at the very end of a resolved path means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FinalLink {
    /// Left out: a protected `AGENTS.md` that is itself a link is not followed, as before.
    Skip,
    /// The launch is refused.
    Refuse,
}

/// The writable places held so far, beneath which every later path is opened.
#[derive(Debug, Default)]
pub(crate) struct Places {
    writable: Vec<Held>,
}

impl Places {
    /// Holds a place children may write, and opens every later path beneath it through it.
    pub(crate) fn writable(
        &mut self,
        given: &Path,
        input: Input,
    ) -> Result<Option<Held>, LaunchError> {
        let Some(held) = self.hold(given, input, FinalLink::Refuse)? else {
            return Ok(None);
        };
        self.writable.push(held.duplicate(given)?);
        Ok(Some(held))
    }

    /// Holds `given`, or `None` when nothing is there (or it cannot be opened, which a grant
    /// of a missing path always was: left out).
    ///
    /// # Errors
    /// [`LaunchError::Changed`] when a symbolic link lies where the resolution found none;
    /// [`LaunchError::Setup`] when this kernel cannot open a path through no link.
    pub(crate) fn hold(
        &self,
        given: &Path,
        input: Input,
        end: FinalLink,
    ) -> Result<Option<Held>, LaunchError> {
        if !given.is_absolute() {
            return Ok(None);
        }
        if input == Input::Resolved
            && let Some((place, relative)) = self.beneath(given)
        {
            return self.open_beneath(place, &relative, given, end);
        }
        let Ok(canonical) = std::fs::canonicalize(given) else {
            return Ok(None);
        };
        if let Some((place, relative)) = self.beneath(&canonical) {
            return self.open_beneath(place, &relative, given, FinalLink::Refuse);
        }
        let path = c_path(&canonical)?;
        #[cfg(test)]
        tests::resolved(&canonical);
        match sys::open_held(None, &path, false) {
            Ok(fd) => held(fd, given, canonical).map(Some),
            Err(e) => refusal(e, given, &canonical, None).map(|()| None),
        }
    }

    /// The innermost writable place `path` lies in, and the plain names below it (`None` for
    /// a path with `..` or none).
    fn beneath(&self, path: &Path) -> Option<(&Held, PathBuf)> {
        self.writable
            .iter()
            .filter_map(|place| {
                let relative = path
                    .strip_prefix(&place.given)
                    .or_else(|_| path.strip_prefix(&place.path))
                    .ok()?;
                relative
                    .components()
                    .all(|c| matches!(c, Component::Normal(_)))
                    .then(|| (place, relative.to_path_buf()))
            })
            .min_by_key(|(_, relative)| relative.components().count())
    }

    fn open_beneath(
        &self,
        place: &Held,
        relative: &Path,
        given: &Path,
        end: FinalLink,
    ) -> Result<Option<Held>, LaunchError> {
        if relative.as_os_str().is_empty() {
            return place.duplicate(given).map(Some);
        }
        let path = place.path.join(relative);
        let name = c_path(relative)?;
        #[cfg(test)]
        tests::resolved(&path);
        match sys::open_held(Some(place.fd.as_fd()), &name, true) {
            Ok(fd) => held(fd, given, path).map(Some),
            Err(e) => {
                let at_end = end == FinalLink::Skip
                    && e.raw_os_error() == Some(libc::ELOOP)
                    && final_is_link(place, relative);
                if at_end {
                    return Ok(None);
                }
                refusal(e, given, &path, Some(&place.path)).map(|()| None)
            }
        }
    }
}

/// Whether every directory of `relative` (beneath `place`) is reached through no link and its
/// last name is a link itself.
fn final_is_link(place: &Held, relative: &Path) -> bool {
    let (Some(parent), Some(name)) = (relative.parent(), relative.file_name()) else {
        return false;
    };
    let opened = if parent.as_os_str().is_empty() {
        place.fd.try_clone().ok()
    } else {
        c_path(parent)
            .ok()
            .and_then(|parent| sys::open_held(Some(place.fd.as_fd()), &parent, true).ok())
    };
    let Some(dir) = opened else {
        return false;
    };
    CString::new(name.as_bytes()).is_ok_and(|name| sys::is_link_at(dir.as_fd(), &name))
}

fn held(fd: OwnedFd, given: &Path, path: PathBuf) -> Result<Held, LaunchError> {
    let (dev, ino, mode) = sys::stat_of(fd.as_fd())
        .map_err(|e| LaunchError::Setup(format!("holding {}: {e}", given.display())))?;
    let mount_root = sys::is_mount_root(fd.as_fd());
    Ok(Held {
        given: given.to_path_buf(),
        path,
        fd,
        dev,
        ino,
        mode,
        mount_root,
    })
}

/// What a failed open means: a link (or a `..` leaving the place) where the resolution found
/// none refuses the launch; a kernel that cannot open through no link refuses it too; anything
/// else (not there, not a directory, not allowed) leaves the path out.
fn refusal(
    error: std::io::Error,
    given: &Path,
    path: &Path,
    place: Option<&Path>,
) -> Result<(), LaunchError> {
    match error.raw_os_error() {
        Some(libc::ELOOP | libc::EXDEV) => Err(LaunchError::Changed {
            place: given.display().to_string(),
            what: match place {
                Some(place) => format!(
                    "a symbolic link lies on {} inside {}, which sandboxed programs may write",
                    path.display(),
                    place.display()
                ),
                None => format!(
                    "a symbolic link lies on {}, resolved a moment before",
                    path.display()
                ),
            },
        }),
        Some(libc::ENOSYS | libc::EPERM) => Err(LaunchError::Setup(format!(
            "opening {} through no symbolic link (openat2 with RESOLVE_NO_SYMLINKS) is refused \
             here ({error}); the sandbox never opens its paths by name instead: run on Linux 5.6 \
             or later, outside a container that filters openat2, or set [sandbox] enabled = false",
            path.display()
        ))),
        _ => Ok(()),
    }
}

fn c_path(path: &Path) -> Result<CString, LaunchError> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| LaunchError::Setup(format!("{} holds a NUL byte", path.display())))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    type Hook = Box<dyn FnMut(&Path)>;

    thread_local! {
        /// What a test does to a path between its resolution and its open.
        static RESOLVED: std::cell::RefCell<Option<Hook>> = const { std::cell::RefCell::new(None) };
    }

    /// Runs `hook` with every path this thread resolves, just before it is opened.
    pub(crate) fn between_resolving_and_opening(hook: impl FnMut(&Path) + 'static) {
        RESOLVED.with(|slot| *slot.borrow_mut() = Some(Box::new(hook)));
    }

    pub(super) fn resolved(path: &Path) {
        RESOLVED.with(|slot| {
            if let Some(hook) = slot.borrow_mut().as_mut() {
                hook(path);
            }
        });
    }

    fn tree() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = std::fs::canonicalize(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        for d in ["ws/sub/.git", "ws/real", "secret"] {
            std::fs::create_dir_all(root.join(d)).unwrap_or_else(|e| panic!("{e}"));
        }
        (dir, root)
    }

    fn link(target: &Path, at: &Path) {
        std::os::unix::fs::symlink(target, at).unwrap_or_else(|e| panic!("{e}"));
    }

    /// Inside a writable place no link is followed, whether it leads out or stays inside; a
    /// protected name that is itself a link is left out, a link before it refuses the launch.
    #[test]
    fn inside_a_writable_place_no_link_is_followed() {
        let (_dir, root) = tree();
        let ws = root.join("ws");
        let mut places = Places::default();
        assert!(matches!(
            places.writable(&ws, Input::Unresolved),
            Ok(Some(_))
        ));
        link(&root.join("secret"), &ws.join("out"));
        link(Path::new("real"), &ws.join("in"));
        link(Path::new("real"), &ws.join("AGENTS.md"));
        for linked in ["out", "in", "out/x", "in/.git"] {
            let error = places.hold(&ws.join(linked), Input::Resolved, FinalLink::Refuse);
            assert!(
                matches!(error, Err(LaunchError::Changed { .. })),
                "{linked}: {error:?}"
            );
        }
        assert!(matches!(
            places.hold(&ws.join("AGENTS.md"), Input::Resolved, FinalLink::Skip),
            Ok(None)
        ));
        assert!(matches!(
            places.hold(&ws.join("in/.git"), Input::Resolved, FinalLink::Skip),
            Err(LaunchError::Changed { .. })
        ));
        let git = places
            .hold(&ws.join("sub/.git"), Input::Resolved, FinalLink::Refuse)
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("sub/.git is there"));
        assert!(git.is_dir() && git.path == ws.join("sub/.git"));
        assert!(matches!(
            places.hold(&ws.join("missing"), Input::Resolved, FinalLink::Refuse),
            Ok(None)
        ));
    }

    /// Outside the writable places a name is resolved once (its links followed), then that
    /// canonical path is opened through no link.
    #[test]
    fn elsewhere_a_name_is_resolved_once_then_opened_through_no_link() {
        let (_dir, root) = tree();
        link(&root.join("secret"), &root.join("dotfiles"));
        let places = Places::default();
        let held = places
            .hold(&root.join("dotfiles"), Input::Unresolved, FinalLink::Refuse)
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("the link's target is there"));
        assert_eq!(held.path, root.join("secret"));
        assert_eq!(held.given, root.join("dotfiles"));
    }
}
