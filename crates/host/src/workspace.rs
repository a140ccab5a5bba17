//! The workspace: the one directory tree the built-in tools may touch, and the only place where a
//! path from a model becomes a path on disk.
//!
//! Every path a tool uses goes through [`Workspace::resolve`] (an existing path) or
//! [`Workspace::resolve_new`] (a file about to be created). Both refuse, with
//! `outside_workspace`, anything that ends outside the root once `..` and symbolic links are
//! resolved. Paths are first checked lexically, so a path that plainly leaves the root is refused
//! without touching the filesystem outside it. This module never creates, changes or deletes
//! anything.

use std::collections::VecDeque;
use std::io;
use std::path::{Component, Path, PathBuf};

use bosun_core::{ErrorCode, Scope, ToolError};

/// The most symbolic links one path is followed through, as Linux's `MAXSYMLINKS`.
const MAX_LINKS: usize = 40;

/// A workspace root and the directory relative paths start from, both canonical.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    root: PathBuf,
    cwd: PathBuf,
    /// Folders inside the root that are not the workspace's (Bosun's own home, when it lies
    /// there): every resolve refuses them and no walk enters them. See [`Workspace::withholding`].
    withheld: Vec<PathBuf>,
}

impl Workspace {
    /// The workspace around `cwd`: the nearest ancestor of the canonical `cwd` holding `.git`
    /// (a directory, or a file as in worktrees and submodules), else `cwd` itself.
    pub fn discover(cwd: &Path) -> io::Result<Workspace> {
        let cwd = cwd.canonicalize()?;
        let root = cwd
            .ancestors()
            .find(|dir| dir.join(".git").symlink_metadata().is_ok())
            .unwrap_or(&cwd)
            .to_path_buf();
        Ok(Workspace {
            root,
            cwd,
            withheld: Vec::new(),
        })
    }

    /// A workspace with the given root and working directory. Both are canonicalised; `cwd` must
    /// be the root or inside it.
    pub fn new(root: impl AsRef<Path>, cwd: impl AsRef<Path>) -> io::Result<Workspace> {
        let root = root.as_ref().canonicalize()?;
        let cwd = cwd.as_ref().canonicalize()?;
        if !cwd.starts_with(&root) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "the working directory {} is outside the workspace root {}: start inside it",
                    cwd.display(),
                    root.display()
                ),
            ));
        }
        Ok(Workspace {
            root,
            cwd,
            withheld: Vec::new(),
        })
    }

    /// The same workspace with `place` withheld from every tool when it lies inside the root:
    /// Bosun's own home is the case — run in `$HOME`, the default `~/.bosun` is a workspace
    /// folder, and it holds signed-in servers' tokens and plugins' secrets. A place outside the
    /// root, the root itself or one holding the root changes nothing.
    #[must_use]
    pub fn withholding(mut self, place: &Path) -> Workspace {
        let place = place
            .canonicalize()
            .unwrap_or_else(|_| normalize(&self.cwd.join(place)));
        if place.starts_with(&self.root) && place != self.root && !self.withheld.contains(&place) {
            self.withheld.push(place);
        }
        self
    }

    /// Whether `path` (canonical, inside the root) is or lies in a withheld folder.
    pub fn is_withheld(&self, path: &Path) -> bool {
        self.withheld.iter().any(|place| path.starts_with(place))
    }

    fn refuse_withheld(&self, input_path: &str, path: &Path) -> Result<(), ToolError> {
        if let Some(place) = self.withheld.iter().find(|place| path.starts_with(place)) {
            return Err(ToolError::new(
                ErrorCode::OutsideWorkspace,
                format!(
                    "`{input_path}` is in Bosun's own home ({}), which no tool reads or writes: \
                     it holds tokens and secrets that are not the workspace's. Move BOSUN_HOME \
                     outside the folders Bosun works in",
                    self.relative(place)
                ),
            ));
        }
        Ok(())
    }

    /// A handle of the root, from which files are opened beneath it (see `beneath`).
    ///
    /// # Errors
    /// The root cannot be opened.
    pub fn handle(&self) -> io::Result<crate::beneath::Root> {
        crate::beneath::Root::open(&self.root)
    }

    /// `path` (absolute, inside the root, as [`resolve`](Self::resolve) returns it) relative to
    /// the root; the root itself is `.`.
    pub fn beneath<'a>(&self, path: &'a Path) -> Result<&'a Path, ToolError> {
        match path.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => Ok(Path::new(".")),
            Ok(rel) => Ok(rel),
            Err(_) => Err(self.outside(&path.display().to_string())),
        }
    }

    /// The canonical workspace root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The canonical directory relative paths start from.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// Resolves a path that must exist to its canonical form inside the workspace.
    ///
    /// Relative paths start from [`Workspace::cwd`]; absolute paths are accepted only inside the
    /// root. `..` and symbolic links are resolved, and the result must stay inside the root. A
    /// link leading out is refused from its own text, as [`inside`](Self::inside) does, before
    /// anything outside is looked at: `outside_workspace` whether its target exists or not.
    pub fn resolve(&self, input_path: &str) -> Result<PathBuf, ToolError> {
        let judged = self.inside(input_path)?;
        let canonical = judged
            .canonicalize()
            .map_err(|err| io_error(&err, input_path))?;
        // Only a link changed since it was followed can lead out here.
        if !canonical.starts_with(&self.root) {
            return Err(self.outside(input_path));
        }
        self.refuse_withheld(input_path, &canonical)?;
        Ok(canonical)
    }

    /// The path a call naming `input_path` is judged at, found without telling the caller what
    /// is there: its links followed as the kernel would, the rest as written once nothing
    /// exists. Policy judges before a tool touches anything, so what a denied call hears must
    /// not depend on what exists where it is denied: `not_found`, `already_exists`, "not a
    /// directory", "a symbolic link" or "outside the workspace" would say whether a file
    /// exists in a denied `secrets/`, or what it is. Nothing outside the root is ever looked
    /// at: a link whose text leads out is judged where it lies (the link's own path, and the
    /// names after it as written), so a denied `secrets/key`, a link there to `/etc/passwd`
    /// and nothing at all are denied alike; a call policy lets through is refused
    /// `outside_workspace` by the link's text alone once allowed ([`inside`](Self::inside),
    /// which every tool resolves through), whether its target exists, is a directory, a FIFO
    /// or unreadable. Only what the text shows (an empty path, `..` past the root, Bosun's own
    /// home named) is an error here.
    ///
    /// # Errors
    /// The path is empty, holds a NUL byte, leaves the root as written or names Bosun's home.
    pub fn judged(&self, input_path: &str) -> Result<PathBuf, ToolError> {
        let lexical = self.lexical(input_path)?;
        self.refuse_withheld(input_path, &lexical)?;
        let resolved = match self.follow_inside(&lexical) {
            Followed::Inside(path) | Followed::Out { at: path } => path,
        };
        self.refuse_withheld(input_path, &resolved)?;
        Ok(resolved)
    }

    /// The path `input_path` leads to with its links followed inside the root, refusing one
    /// whose links lead out: what a tool (or a plugin's preopen) uses once its call is
    /// allowed. Like [`judged`](Self::judged), nothing outside the root is looked at: a link
    /// leading out is `outside_workspace` by its text alone, in words naming only the path as
    /// written and the workspace.
    ///
    /// # Errors
    /// As [`judged`](Self::judged), and `outside_workspace` for a path through a link whose
    /// text leads out.
    pub fn inside(&self, input_path: &str) -> Result<PathBuf, ToolError> {
        let lexical = self.lexical(input_path)?;
        self.refuse_withheld(input_path, &lexical)?;
        let Followed::Inside(resolved) = self.follow_inside(&lexical) else {
            return Err(self.outside(input_path));
        };
        self.refuse_withheld(input_path, &resolved)?;
        Ok(resolved)
    }

    /// The scope of a call naming `input_path`: the [`judged`](Self::judged) path, relative to
    /// the root, for policy, and the path as written when that differs, for what the model is
    /// told (`Scope::written`).
    ///
    /// # Errors
    /// As [`judged`](Self::judged).
    pub fn judged_scope(&self, input_path: &str) -> Result<Scope, ToolError> {
        let path = self.relative(&self.judged(input_path)?);
        Ok(Scope {
            written: (path != input_path).then(|| input_path.to_owned()),
            path: Some(path),
            ..Scope::default()
        })
    }

    /// `lexical` (normal, inside the root) with its symbolic links followed one name at a time
    /// from the root, looking only at names inside it: a link's target is read as text and the
    /// walk stops as soon as that text (absolute, or `..` past the root) leads out, answering
    /// where that link lies. Once a name does not exist (or cannot be looked at) the rest is
    /// taken as written. Past [`MAX_LINKS`] links, as the kernel's limit, the path is taken as
    /// written from there.
    fn follow_inside(&self, lexical: &Path) -> Followed {
        let Ok(relative) = lexical.strip_prefix(&self.root) else {
            return Followed::Out {
                at: self.root.clone(),
            };
        };
        let mut pending: VecDeque<PathBuf> = relative
            .components()
            .map(|c| PathBuf::from(c.as_os_str()))
            .collect();
        let mut resolved = self.root.clone();
        let mut links = 0usize;
        // Where the last link followed lies, with the names after it as written: what a path
        // leading out through it is judged at.
        let mut last_link = self.root.clone();
        while let Some(name) = pending.pop_front() {
            match Path::new(&name).components().next() {
                Some(Component::CurDir) | None => continue,
                Some(Component::ParentDir) => {
                    if resolved == self.root {
                        // Only a link's text can climb past the root: `lexical` is normal.
                        return Followed::Out { at: last_link };
                    }
                    resolved.pop();
                    continue;
                }
                _ => {}
            }
            let next = resolved.join(&name);
            let is_link = match next.symlink_metadata() {
                Ok(meta) => meta.file_type().is_symlink(),
                Err(_) => return self.written_from(next, pending, last_link),
            };
            if !is_link {
                resolved = next;
                continue;
            }
            links += 1;
            let target = match std::fs::read_link(&next) {
                Ok(target) if links <= MAX_LINKS => target,
                _ => return self.written_from(next, pending, last_link),
            };
            last_link = self
                .as_written(next.clone(), pending.clone())
                .unwrap_or_else(|| next.clone());
            let target = if target.is_absolute() {
                // Components, not a lexical clean-up: `..` after a link is the link's parent's.
                let Ok(rest) = target.strip_prefix(&self.root) else {
                    return Followed::Out { at: last_link };
                };
                resolved = self.root.clone();
                rest.to_path_buf()
            } else {
                target
            };
            for part in target.components().rev() {
                pending.push_front(PathBuf::from(part.as_os_str()));
            }
        }
        Followed::Inside(resolved)
    }

    /// The walk's end once `from` does not exist: the rest as written, or out through the last
    /// link followed (`at`) when what is written climbs past the root.
    fn written_from(&self, from: PathBuf, pending: VecDeque<PathBuf>, at: PathBuf) -> Followed {
        match self.as_written(from, pending) {
            Some(path) => Followed::Inside(path),
            None => Followed::Out { at },
        }
    }

    /// `from` and the names after it as written, if that stays inside the root.
    fn as_written(&self, from: PathBuf, pending: VecDeque<PathBuf>) -> Option<PathBuf> {
        let written = normalize(&pending.into_iter().fold(from, |path, name| path.join(name)));
        written.starts_with(&self.root).then_some(written)
    }

    /// Resolves the path of a file that may not exist yet, for creating or replacing it.
    ///
    /// The deepest existing ancestor is checked component by component from the root: every
    /// existing component must be a real directory (never a symbolic link), the final
    /// component, when it exists, must not be a symbolic link either, and nothing may leave the
    /// root. The returned path is canonical for its existing part and lexically normal for the
    /// rest, so it names exactly the place that was checked.
    ///
    /// This check and the later write are not one atomic step: a process that swaps a directory
    /// for a symbolic link in between could redirect the write. Callers re-check the parent
    /// after creating it.
    pub fn resolve_new(&self, input_path: &str) -> Result<PathBuf, ToolError> {
        let lexical = self.lexical(input_path)?;
        let relative = lexical
            .strip_prefix(&self.root)
            .map_err(|_| self.outside(input_path))?;
        self.refuse_withheld(input_path, &lexical)?;
        let mut current = self.root.clone();
        let mut components = relative.components().peekable();
        while let Some(component) = components.next() {
            let Component::Normal(name) = component else {
                // A lexically normal path below the root holds only plain names.
                return Err(self.outside(input_path));
            };
            current.push(name);
            let meta = match current.symlink_metadata() {
                Ok(meta) => meta,
                // Nothing further exists: the rest will be created, below a checked directory.
                Err(err) if err.kind() == io::ErrorKind::NotFound => break,
                Err(err) => return Err(io_error(&err, input_path)),
            };
            if meta.file_type().is_symlink() {
                return Err(self.symlink_refused(input_path, &current));
            }
            if components.peek().is_some() && !meta.is_dir() {
                return Err(ToolError::new(
                    ErrorCode::NotDirectory,
                    format!(
                        "`{input_path}`: `{}` is a file, not a directory; choose another path",
                        self.relative(&current)
                    ),
                ));
            }
        }
        Ok(lexical)
    }

    /// `text` (a config file's `path:line`, say) as a model may be told it: a path inside the
    /// workspace relative to the root, one under the person's home directory as `~/…`, so that
    /// neither the home's place nor the user's name is told; anything else as it is (the
    /// machine's `/etc/bosun/requirements.toml`).
    pub fn told(&self, text: &str) -> String {
        let under = |place: &Path| {
            let place = place.to_str().filter(|p| !p.is_empty() && *p != "/")?;
            text.strip_prefix(place)?.strip_prefix('/')
        };
        if let Some(rest) = under(&self.root) {
            return rest.to_owned();
        }
        match std::env::var_os("HOME").and_then(|home| under(Path::new(&home)).map(str::to_owned)) {
            Some(rest) => format!("~/{rest}"),
            None => text.to_owned(),
        }
    }

    /// `abs` relative to the root, `/`-separated; `.` for the root itself. A path outside the
    /// root (which resolved paths never are) is returned whole.
    pub fn relative(&self, abs: &Path) -> String {
        match abs.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
            Ok(rel) => rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/"),
            Err(_) => abs.to_string_lossy().into_owned(),
        }
    }

    /// Checks the input's form and returns it joined to the cwd and lexically normalised, after
    /// making sure it does not plainly leave the root.
    fn lexical(&self, input_path: &str) -> Result<PathBuf, ToolError> {
        if input_path.is_empty() {
            return Err(ToolError::new(
                ErrorCode::InvalidInput,
                "the path is empty: give a path relative to the workspace, e.g. `src/main.rs` or `.`",
            ));
        }
        if input_path.contains('\0') {
            return Err(ToolError::new(
                ErrorCode::InvalidInput,
                "the path contains a NUL byte: remove it",
            ));
        }
        let joined = self.cwd.join(input_path);
        let normal = normalize(&joined);
        if !normal.starts_with(&self.root) {
            return Err(self.outside(input_path));
        }
        Ok(normal)
    }

    fn outside(&self, input_path: &str) -> ToolError {
        ToolError::new(
            ErrorCode::OutsideWorkspace,
            format!(
                "`{input_path}` is outside the workspace: the path must stay inside {}",
                self.root.display()
            ),
        )
    }

    fn symlink_refused(&self, input_path: &str, link: &Path) -> ToolError {
        // Where the link leads is read from its text: nothing outside the root is looked at.
        let inside = matches!(self.follow_inside(link), Followed::Inside(_));
        if inside {
            ToolError::new(
                ErrorCode::InvalidInput,
                format!(
                    "`{input_path}` goes through the symbolic link `{}`: give the real path instead",
                    self.relative(link)
                ),
            )
        } else {
            ToolError::new(
                ErrorCode::OutsideWorkspace,
                format!(
                    "`{input_path}` goes through the symbolic link `{}`, which leads outside the \
                     workspace: the path must stay inside {}",
                    self.relative(link),
                    self.root.display()
                ),
            )
        }
    }
}

/// Where [`Workspace::follow_inside`] ends.
enum Followed {
    /// The path, its links followed, inside the root.
    Inside(PathBuf),
    /// A link's text leads out: `at` is where that link lies inside the root, with the names
    /// after it as written.
    Out { at: PathBuf },
}

/// Maps an I/O error on `path` to a tool error: `not_found` for a missing path, `io_error`
/// (naming the path) otherwise.
pub fn io_error(err: &io::Error, path: &str) -> ToolError {
    if crate::beneath::is_escape(err) {
        return ToolError::new(
            ErrorCode::OutsideWorkspace,
            format!(
                "`{path}` leads outside the workspace (a symbolic link or `..` changed while it was used): stay inside the workspace"
            ),
        );
    }
    match err.kind() {
        io::ErrorKind::NotFound => ToolError::new(
            ErrorCode::NotFound,
            format!("`{path}` does not exist: check the path, e.g. with list_files"),
        ),
        _ => ToolError::new(ErrorCode::IoError, format!("`{path}`: {err}")),
    }
}

/// Removes `.` and resolves `..` without touching the filesystem. `..` at the filesystem root
/// stays at the root, as the kernel does.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Prefix(_) | Component::RootDir => out.push(component.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => out.push(name),
        }
    }
    out
}

/// Entries the walk for protected paths reads before it gives up and protects the whole
/// workspace instead (about a second of directory reading on a local disk).
pub const PROTECTED_WALK_LIMIT: usize = 1_000_000;

/// Every protected path (`.git`, `.bosun`, `AGENTS.md`, … — names compared without case) that
/// exists anywhere under `root`, for the OS sandbox to keep read-only. The walk is whole: no
/// directory is skipped (`node_modules`, `target` and `.venv` included) and there is no depth
/// bound; symbolic links are not followed. Protection never depends on the walk finishing:
/// past [`PROTECTED_WALK_LIMIT`] entries the answer is `root` itself, so a child may write
/// nothing of the workspace rather than something unprotected.
pub fn protected_paths(root: &Path) -> Vec<PathBuf> {
    protected_paths_within(root, PROTECTED_WALK_LIMIT)
}

fn protected_paths_within(root: &Path, limit: usize) -> Vec<PathBuf> {
    let Ok(handle) = bosun_fsio::beneath::Root::open(root) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    let mut seen = 0usize;
    // Each directory is listed through the descriptor it was opened by, following no link: a
    // directory swapped for a link mid-walk shows no other tree's names.
    let _ = bosun_fsio::beneath::walk_no_links(handle.fd(), Path::new(""), |path, is_dir| {
        seen += 1;
        if seen > limit {
            return std::ops::ControlFlow::Break(());
        }
        let lower = path
            .file_name()
            .map(|name| name.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        if bosun_policy::PROTECTED_DIRS.contains(&lower.as_str())
            || bosun_policy::PROTECTED_FILES.contains(&lower.as_str())
        {
            found.push(root.join(path));
            std::ops::ControlFlow::Continue(false)
        } else {
            std::ops::ControlFlow::Continue(is_dir)
        }
    });
    if seen > limit {
        return vec![root.to_path_buf()];
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_protected_path_is_found_however_deep_or_hidden() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = dir.path();
        let make = |relative: &str| {
            let path = root.join(relative);
            std::fs::create_dir_all(&path).unwrap_or_else(|e| panic!("{e}"));
            path
        };
        let deep = (0..40)
            .map(|i| format!("d{i}"))
            .collect::<Vec<_>>()
            .join("/");
        let expected = [
            make(".git"),
            make("node_modules/a/.git"),
            make("target/b/.bosun"),
            make(".venv/c/.agents"),
            make(&format!("{deep}/.git")),
            make("x/.GIT"),
        ];
        std::fs::write(root.join("AGENTS.md"), "").unwrap_or_else(|e| panic!("{e}"));
        let found = protected_paths(root);
        for path in expected.iter().chain([&root.join("AGENTS.md")]) {
            assert!(found.contains(path), "{} not in {found:?}", path.display());
        }
        // Nothing inside a protected directory is walked or listed twice.
        assert_eq!(found.len(), expected.len() + 1, "{found:?}");
        // A walk that cannot finish protects the whole workspace.
        assert_eq!(protected_paths_within(root, 10), vec![root.to_path_buf()]);
    }

    #[test]
    fn a_file_is_told_relative_to_the_workspace_or_the_home() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let workspace = Workspace::new(dir.path(), dir.path()).unwrap_or_else(|e| panic!("{e}"));
        let root = workspace.root().display().to_string();
        assert_eq!(
            workspace.told(&format!("{root}/.bosun/config.toml:4")),
            ".bosun/config.toml:4"
        );
        assert_eq!(
            workspace.told("/etc/bosun/requirements.toml:2"),
            "/etc/bosun/requirements.toml:2"
        );
        // A name merely starting like the root is not inside it.
        assert_eq!(
            workspace.told(&format!("{root}x/a:1")),
            format!("{root}x/a:1")
        );
        if let Some(home) = std::env::var_os("HOME").filter(|h| h.len() > 1) {
            let home = Path::new(&home).display().to_string();
            assert_eq!(
                workspace.told(&format!("{home}/.bosun/config.toml:3")),
                "~/.bosun/config.toml:3"
            );
        }
    }

    #[test]
    fn normalize_resolves_dots_lexically() {
        assert_eq!(normalize(Path::new("/a/./b/../c")), PathBuf::from("/a/c"));
        assert_eq!(normalize(Path::new("/../../x")), PathBuf::from("/x"));
        assert_eq!(normalize(Path::new("/a/b/")), PathBuf::from("/a/b"));
    }
}
