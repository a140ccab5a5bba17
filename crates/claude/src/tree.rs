//! A plugin's files as one content digest: every regular file by relative path, its SHA-256 and
//! whether it is executable. The cache is keyed by this digest, never by a version string, and
//! a plugin whose files no longer have it is refused.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::ClaudeError;

/// Most files a plugin may hold.
pub const MAX_FILES: usize = 4096;
/// Most bytes a plugin may hold (64 MiB).
pub const MAX_BYTES: u64 = 64 * 1024 * 1024;
/// Deepest folder nesting.
const MAX_DEPTH: usize = 16;

/// One file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileDigest {
    /// Its SHA-256, lowercase hex.
    pub sha256: String,
    /// Whether any execute bit is set.
    #[serde(default)]
    pub executable: bool,
}

/// Every file of a plugin.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tree {
    /// By relative `/`-joined path.
    pub files: BTreeMap<String, FileDigest>,
}

impl Tree {
    /// Reads every file under `dir`. Symbolic links, special files, `.git` and anything past the
    /// bounds refuse the plugin: what was hashed must be all there is.
    pub fn read(dir: &Path) -> Result<Tree, ClaudeError> {
        let mut tree = Tree::default();
        let mut total = 0u64;
        let mut pending = vec![(dir.to_path_buf(), String::new(), 0usize)];
        while let Some((at, prefix, depth)) = pending.pop() {
            let entries = std::fs::read_dir(&at)
                .map_err(|e| ClaudeError::io(format!("reading {}", at.display()), e))?;
            for entry in entries {
                let entry =
                    entry.map_err(|e| ClaudeError::io(format!("reading {}", at.display()), e))?;
                let name = entry
                    .file_name()
                    .into_string()
                    .map_err(|n| ClaudeError::Layout {
                        message: format!(
                            "{} has a name that is not UTF-8",
                            Path::new(&n).display()
                        ),
                    })?;
                if prefix.is_empty() && name == ".git" {
                    continue;
                }
                let rel = if prefix.is_empty() {
                    name
                } else {
                    format!("{prefix}/{name}")
                };
                let meta = entry
                    .path()
                    .symlink_metadata()
                    .map_err(|e| ClaudeError::io(format!("reading {rel}"), e))?;
                let kind = meta.file_type();
                if kind.is_dir() {
                    if depth >= MAX_DEPTH {
                        return Err(ClaudeError::Layout {
                            message: format!("{rel} is nested deeper than {MAX_DEPTH} folders"),
                        });
                    }
                    pending.push((entry.path(), rel, depth + 1));
                } else if kind.is_file() {
                    total += meta.len();
                    if tree.files.len() >= MAX_FILES || total > MAX_BYTES {
                        return Err(ClaudeError::Layout {
                            message: format!(
                                "the plugin holds more than {MAX_FILES} files or {} MiB",
                                MAX_BYTES >> 20
                            ),
                        });
                    }
                    // Opened without following a link and without waiting on a FIFO, so a
                    // file swapped since it was listed is refused, not read through; no more
                    // than is left of the plugin's bound is read.
                    let bytes = bosun_fsio::read_regular(
                        &entry.path(),
                        MAX_BYTES - (total - meta.len()),
                    )
                    .map_err(|e| match e {
                        bosun_fsio::OpenError::Io { source, .. } => {
                            ClaudeError::io(format!("reading {rel}"), source)
                        }
                        refused => ClaudeError::Layout {
                            message: format!(
                                "{rel}: {refused}; a plugin must be plain files, so that what is reviewed is what runs"
                            ),
                        },
                    })?;
                    total = total - meta.len() + bytes.len() as u64;
                    tree.files.insert(
                        rel,
                        FileDigest {
                            sha256: hex::encode(Sha256::digest(&bytes)),
                            executable: meta.permissions().mode() & 0o111 != 0,
                        },
                    );
                } else {
                    return Err(ClaudeError::Layout {
                        message: format!(
                            "{rel} is a symbolic link or special file: a plugin must be plain files, so that what is reviewed is what runs"
                        ),
                    });
                }
            }
        }
        Ok(tree)
    }

    /// The content digest: SHA-256 over each file's path, mode and digest, in path order.
    pub fn digest(&self) -> String {
        let mut hasher = Sha256::new();
        for (path, file) in &self.files {
            hasher.update(path.as_bytes());
            hasher.update([0, u8::from(file.executable)]);
            hasher.update(file.sha256.as_bytes());
            hasher.update([b'\n']);
        }
        hex::encode(hasher.finalize())
    }

    /// How `now` differs from this tree: changed, added and removed paths.
    pub fn drift(&self, now: &Tree) -> Vec<String> {
        let mut out = Vec::new();
        for (path, file) in &self.files {
            match now.files.get(path) {
                None => out.push(format!("removed {path}")),
                Some(f) if f != file => out.push(format!("changed {path}")),
                Some(_) => {}
            }
        }
        for path in now.files.keys() {
            if !self.files.contains_key(path) {
                out.push(format!("added {path}"));
            }
        }
        out
    }
}

/// Copies the plain files of `from` into `to` (which must not exist), keeping execute bits;
/// refuses links and special files as [`Tree::read`] does.
pub fn copy_tree(from: &Path, to: &Path) -> Result<(), ClaudeError> {
    let tree = Tree::read(from)?;
    std::fs::create_dir_all(to)
        .map_err(|e| ClaudeError::io(format!("creating {}", to.display()), e))?;
    for (rel, file) in &tree.files {
        let dst = to.join(rel);
        if let Some(parent) = dst.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| ClaudeError::io(format!("creating {}", parent.display()), e))?;
        }
        // Read again as `Tree::read` read it (no link followed, no FIFO waited on), and only
        // the bytes it digested are copied: a file swapped in between is refused.
        let bytes = bosun_fsio::read_regular(&from.join(rel), MAX_BYTES).map_err(|e| match e {
            bosun_fsio::OpenError::Io { source, .. } => {
                ClaudeError::io(format!("copying {rel}"), source)
            }
            refused => ClaudeError::Layout {
                message: format!("{rel}: {refused}"),
            },
        })?;
        if hex::encode(Sha256::digest(&bytes)) != file.sha256 {
            return Err(ClaudeError::Layout {
                message: format!("{rel} changed while the plugin was being copied; try again"),
            });
        }
        // Created, never opened over something there: a link at that name is not followed.
        let mode = if file.executable { 0o755 } else { 0o644 };
        bosun_fsio::create_file(&dst, &bytes, mode)
            .map_err(|e| ClaudeError::io(format!("copying {rel}"), e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_follows_content_and_mode_and_links_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        std::fs::write(dir.path().join("a/b/x"), "1").unwrap();
        let first = Tree::read(dir.path()).unwrap();
        std::fs::set_permissions(
            dir.path().join("a/b/x"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        let second = Tree::read(dir.path()).unwrap();
        assert_ne!(first.digest(), second.digest());
        assert_eq!(first.drift(&second), ["changed a/b/x"]);
        let copy = dir.path().join("copy");
        copy_tree(&dir.path().join("a"), &copy).unwrap();
        assert_eq!(Tree::read(&copy).unwrap().files.len(), 1);
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join("a/link")).unwrap();
        assert!(
            Tree::read(dir.path())
                .unwrap_err()
                .to_string()
                .contains("symbolic link")
        );
    }
}
