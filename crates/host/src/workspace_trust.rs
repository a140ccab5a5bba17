//! Whether the person trusts a folder as a workspace: the answer the terminal faces ask for the
//! first time Bosun runs in a folder, remembered in `$BOSUN_HOME/workspaces.json`.
//!
//! A record names the folder by its canonical path **and** its device and inode: a folder that
//! was moved, deleted and made again, or replaced by a symbolic link to another folder, has no
//! record and is asked about again. Records are read from Bosun's home only — never from the
//! workspace — and not at all when the home lies inside the workspace, where the folder's own
//! tools and commands could write one. This module decides nothing about what trust enables;
//! `config::LoadedConfig::load` does (docs/security.md, "Workspace trust").

use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The file holding the answers, in `$BOSUN_HOME`.
pub const RECORDS_FILE: &str = "workspaces.json";

/// What the person said about a workspace.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorkspaceTrust {
    /// Never asked (or the folder changed since): the project may only tighten what the user
    /// configured, and nothing of its own that adds to a run (skills, agents, plugins) loads.
    #[default]
    Unasked,
    /// Trusted: the project's config, instructions, skills and agents apply.
    Trusted,
    /// Refused: the user's config only, in read-only mode; nothing of the project is read.
    Refused,
}

impl WorkspaceTrust {
    /// The word `/status` and `bosun config check` show.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unasked => "not asked",
            Self::Trusted => "trusted",
            Self::Refused => "not trusted",
        }
    }
}

/// What the records file could not be.
#[derive(Debug, thiserror::Error)]
pub enum TrustRecordError {
    /// The file exists but cannot be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The records file.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// The file is not what Bosun writes.
    #[error(
        "{path}: {message}: this file holds the folders you answered \"trust?\" for; fix or delete it (the folders are asked about again)"
    )]
    Malformed {
        /// The records file.
        path: PathBuf,
        /// What the parser said.
        message: String,
    },
    /// `$BOSUN_HOME` is inside the workspace, so the workspace could write its own record.
    #[error(
        "Bosun's home {home} is inside the workspace {workspace}, where the folder's own tools and commands could write a trust record: set BOSUN_HOME to a directory outside it"
    )]
    HomeInsideWorkspace {
        /// Bosun's home.
        home: PathBuf,
        /// The workspace root.
        workspace: PathBuf,
    },
    /// The workspace root cannot be examined.
    #[error("cannot examine the workspace {workspace}: {source}")]
    Workspace {
        /// The workspace root.
        workspace: PathBuf,
        /// The cause.
        source: io::Error,
    },
}

/// One remembered answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Record {
    /// The canonical path of the workspace root.
    path: PathBuf,
    /// Its device and inode when the answer was given.
    device: u64,
    inode: u64,
    /// The answer.
    trusted: bool,
    /// When, in seconds since the Unix epoch.
    answered_at: u64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Records {
    workspaces: Vec<Record>,
}

/// Something about a folder the question should warn of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Concern {
    /// The folder is the filesystem's root.
    FilesystemRoot,
    /// The folder is the person's home directory.
    HomeDirectory,
    /// The folder is not a git repository: changes cannot be reviewed or reverted with git.
    NotARepository,
}

impl Concern {
    /// What to tell the person.
    pub fn warning(self) -> &'static str {
        match self {
            Self::FilesystemRoot => {
                "this is the filesystem's root: every file of this machine would be in the workspace; start Bosun in a project folder instead"
            }
            Self::HomeDirectory => {
                "this is your home directory: every file you own (keys, mail, other projects) would be in the workspace; start Bosun in a project folder instead"
            }
            Self::NotARepository => {
                "this folder is not a git repository: changes cannot be reviewed or undone with git (Bosun's /undo covers its own file tools only)"
            }
        }
    }

    /// Whether the question's default answer should be "no".
    pub fn is_grave(self) -> bool {
        matches!(self, Self::FilesystemRoot | Self::HomeDirectory)
    }
}

/// What the question about `root` (a canonical workspace root) should warn of, gravest first.
pub fn concerns(root: &Path) -> Vec<Concern> {
    let mut out = Vec::new();
    if root.parent().is_none() {
        out.push(Concern::FilesystemRoot);
    }
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .and_then(|h| std::fs::canonicalize(h).ok());
    if home.as_deref() == Some(root) {
        out.push(Concern::HomeDirectory);
    }
    if root.join(".git").symlink_metadata().is_err() {
        out.push(Concern::NotARepository);
    }
    out
}

fn records_path(home: &Path) -> PathBuf {
    home.join(RECORDS_FILE)
}

/// Refuses a home inside the workspace (compared canonically where the home exists).
fn check_home(home: &Path, root: &Path) -> Result<(), TrustRecordError> {
    let canonical = std::fs::canonicalize(home).unwrap_or_else(|_| home.to_owned());
    if canonical.starts_with(root) {
        return Err(TrustRecordError::HomeInsideWorkspace {
            home: canonical,
            workspace: root.to_owned(),
        });
    }
    Ok(())
}

fn identity(root: &Path) -> Result<(u64, u64), TrustRecordError> {
    // Not followed: a root that is a link now is not the directory that was answered for.
    let meta = std::fs::symlink_metadata(root).map_err(|source| TrustRecordError::Workspace {
        workspace: root.to_owned(),
        source,
    })?;
    if !meta.is_dir() {
        return Err(TrustRecordError::Workspace {
            workspace: root.to_owned(),
            source: io::Error::new(io::ErrorKind::InvalidInput, "not a directory"),
        });
    }
    Ok((meta.dev(), meta.ino()))
}

fn read(path: &Path) -> Result<Records, TrustRecordError> {
    let text = match bosun_fsio::read_state_text(path) {
        Ok(Some(text)) => text,
        Ok(None) => return Ok(Records::default()),
        Err(source) => {
            return Err(TrustRecordError::Io {
                path: path.to_owned(),
                source,
            });
        }
    };
    serde_json::from_str(&text).map_err(|e| TrustRecordError::Malformed {
        path: path.to_owned(),
        message: e.to_string(),
    })
}

/// The remembered answer for the workspace at `root` (canonical), or
/// [`WorkspaceTrust::Unasked`] when there is none for this very directory — or when `home` is
/// inside the workspace, where no record is believed.
///
/// # Errors
/// The records file cannot be read or is malformed; the root cannot be examined.
pub fn lookup(home: &Path, root: &Path) -> Result<WorkspaceTrust, TrustRecordError> {
    if check_home(home, root).is_err() {
        return Ok(WorkspaceTrust::Unasked);
    }
    let records = read(&records_path(home))?;
    let (device, inode) = identity(root)?;
    Ok(records
        .workspaces
        .iter()
        .find(|r| r.path == root && r.device == device && r.inode == inode)
        .map_or(WorkspaceTrust::Unasked, |r| {
            if r.trusted {
                WorkspaceTrust::Trusted
            } else {
                WorkspaceTrust::Refused
            }
        }))
}

/// Remembers `trusted` for the workspace at `root` (canonical), replacing what was said of the
/// same path before; returns the file written.
///
/// # Errors
/// `home` is inside the workspace; the records file cannot be read or written.
pub fn record(home: &Path, root: &Path, trusted: bool) -> Result<PathBuf, TrustRecordError> {
    check_home(home, root)?;
    let path = records_path(home);
    let (device, inode) = identity(root)?;
    // Under the file's lock, on the file as it is now: another Bosun's answer for another
    // workspace at the same moment is kept.
    let _lock = crate::state_lock::lock(&path).map_err(|source| TrustRecordError::Io {
        path: path.clone(),
        source,
    })?;
    let mut records = read(&path)?;
    records.workspaces.retain(|r| r.path != root);
    records.workspaces.push(Record {
        path: root.to_owned(),
        device,
        inode,
        trusted,
        answered_at: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
    });
    let text = serde_json::to_string_pretty(&records).map_err(|e| TrustRecordError::Malformed {
        path: path.clone(),
        message: e.to_string(),
    })?;
    crate::write_atomic(&path, text.as_bytes()).map_err(|source| TrustRecordError::Io {
        path: path.clone(),
        source,
    })?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The answers are not read through a link planted at `workspaces.json`: a file elsewhere
    /// saying this folder is trusted is refused, not believed, and nothing is written to it.
    #[test]
    fn answers_are_not_read_through_a_link_planted_in_their_place() {
        let (dir, home, ws) = dirs();
        record(&home, &ws, true).unwrap();
        let planted = dir.path().join("planted.json");
        std::fs::copy(records_path(&home), &planted).unwrap();
        let before = std::fs::read(&planted).unwrap();
        bosun_fsio::testing::plant_link(&records_path(&home), &planted);
        let error = lookup(&home, &ws).unwrap_err();
        assert!(error.to_string().contains("symbolic link"), "{error}");
        assert!(record(&home, &ws, false).is_err());
        assert_eq!(std::fs::read(&planted).unwrap(), before);
    }

    fn dirs() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let ws = ws.canonicalize().unwrap();
        (dir, home, ws)
    }

    #[test]
    fn an_answer_is_remembered_for_that_directory_only() {
        let (_dir, home, ws) = dirs();
        assert_eq!(lookup(&home, &ws).unwrap(), WorkspaceTrust::Unasked);
        record(&home, &ws, false).unwrap();
        assert_eq!(lookup(&home, &ws).unwrap(), WorkspaceTrust::Refused);
        record(&home, &ws, true).unwrap();
        assert_eq!(lookup(&home, &ws).unwrap(), WorkspaceTrust::Trusted);
        let records = read(&records_path(&home)).unwrap();
        assert_eq!(records.workspaces.len(), 1);
    }

    #[test]
    fn a_replaced_folder_is_asked_again() {
        let (dir, home, ws) = dirs();
        record(&home, &ws, true).unwrap();
        std::fs::rename(&ws, dir.path().join("old")).unwrap();
        std::fs::create_dir(&ws).unwrap();
        assert_eq!(lookup(&home, &ws).unwrap(), WorkspaceTrust::Unasked);
    }

    #[test]
    fn a_home_inside_the_workspace_is_never_believed() {
        let (_dir, _, ws) = dirs();
        let home = ws.join(".bosun-home");
        std::fs::create_dir_all(&home).unwrap();
        let (device, inode) = identity(&ws).unwrap();
        let planted = Records {
            workspaces: vec![Record {
                path: ws.clone(),
                device,
                inode,
                trusted: true,
                answered_at: 0,
            }],
        };
        std::fs::write(
            records_path(&home),
            serde_json::to_string(&planted).unwrap(),
        )
        .unwrap();
        assert_eq!(lookup(&home, &ws).unwrap(), WorkspaceTrust::Unasked);
        let refused = record(&home, &ws, true).unwrap_err();
        assert!(
            matches!(refused, TrustRecordError::HomeInsideWorkspace { .. }),
            "{refused}"
        );
    }

    #[test]
    fn a_malformed_file_says_how_to_fix_it() {
        let (_dir, home, ws) = dirs();
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(records_path(&home), "{").unwrap();
        let err = lookup(&home, &ws).unwrap_err().to_string();
        assert!(err.contains("fix or delete it"), "{err}");
    }

    #[test]
    fn concerns_name_a_folder_outside_git_and_the_root() {
        let (_dir, _, ws) = dirs();
        assert_eq!(concerns(&ws), vec![Concern::NotARepository]);
        std::fs::create_dir(ws.join(".git")).unwrap();
        assert!(concerns(&ws).is_empty());
        assert!(concerns(Path::new("/")).contains(&Concern::FilesystemRoot));
        assert!(Concern::FilesystemRoot.is_grave());
    }

    /// Eight answers for eight workspaces at once: every one is remembered.
    #[test]
    fn concurrent_answers_are_all_remembered() {
        let (dir, home, _) = dirs();
        let writers = 8;
        let roots: Vec<PathBuf> = (0..writers)
            .map(|i| {
                let ws = dir.path().join(format!("ws{i}"));
                std::fs::create_dir_all(&ws).unwrap();
                ws.canonicalize().unwrap()
            })
            .collect();
        let start = std::sync::Arc::new(std::sync::Barrier::new(writers));
        let handles: Vec<_> = roots
            .iter()
            .cloned()
            .map(|root| {
                let home = home.clone();
                let start = std::sync::Arc::clone(&start);
                std::thread::spawn(move || {
                    start.wait();
                    record(&home, &root, true).unwrap();
                })
            })
            .collect();
        for handle in handles {
            handle.join().unwrap();
        }
        for root in &roots {
            assert_eq!(
                lookup(&home, root).unwrap(),
                WorkspaceTrust::Trusted,
                "{}",
                root.display()
            );
        }
    }
}
