//! The source snapshot of a JavaScript plugin (Forge or Triggerfish): every file of its
//! directory, read once, in memory. The snapshot's hash is what trust pins, its files are what
//! the manifest is checked against, and for an enabled plugin the same snapshot is what the JS
//! engine loads — what is reviewed and scanned is what runs, byte for byte.
//!
//! Reading follows no symbolic link anywhere: files are opened with `O_NOFOLLOW` (so a link
//! swapped in after the listing is refused by the open itself) and directories are checked with
//! `symlink_metadata` before they are listed. Nothing is skipped silently: a link, a special
//! file (FIFO, socket, device), a name that is not UTF-8 or a broken bound refuses the whole
//! plugin with the path and the reason. The one exception is a directory named `.git`, at any
//! depth, which is skipped: version-control data is not plugin code and would only hit the
//! bounds.
//!
//! Bounds: at most [`MAX_SOURCE_FILES`] files (512), each at most [`MAX_SOURCE_FILE_BYTES`]
//! (4 MiB), together at most [`MAX_SOURCE_TOTAL_BYTES`] (16 MiB), and directories at most
//! [`MAX_SOURCE_DEPTH`] (32) levels deep. A plugin that needs more (a vendored `node_modules`)
//! must be bundled first.
//!
//! # The hash
//!
//! [`SourceSnapshot::sha256`] is the lowercase hex SHA-256 of this encoding, in which every
//! length is an unsigned 64-bit big-endian integer, so that no two different file sets encode
//! the same way:
//!
//! ```text
//! "bosun-plugin-source-v1\n"          (23 bytes, a domain tag)
//! number of files
//! for each file, sorted by path:
//!     length of the path in bytes, the path (UTF-8, `/`-separated, relative)
//!     length of the content in bytes, the content
//! ```
//!
//! Empty directories are not part of a snapshot and do not change its hash.
//!
//! ```
//! use std::sync::Arc;
//! use bosun_plugins::source::{SourceFile, SourceSnapshot};
//!
//! let snapshot = SourceSnapshot::from_files(vec![
//!     SourceFile { path: "plugin.json".into(), bytes: Arc::from(&b"{}"[..]) },
//!     SourceFile { path: "lib/util.mjs".into(), bytes: Arc::from(&b"export {}"[..]) },
//! ])
//! .unwrap();
//! assert_eq!(snapshot.files()[0].path, "lib/util.mjs");
//! assert!(snapshot.get("plugin.json").is_some());
//! assert_eq!(snapshot.sha256().len(), 64);
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::PluginError;

/// Most files a snapshot holds.
pub const MAX_SOURCE_FILES: usize = 512;
/// Largest file a snapshot holds, in bytes (4 MiB).
pub const MAX_SOURCE_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// Largest total of a snapshot's files, in bytes (16 MiB).
pub const MAX_SOURCE_TOTAL_BYTES: u64 = 16 * 1024 * 1024;
/// Deepest directory nesting a snapshot reads below the plugin directory.
pub const MAX_SOURCE_DEPTH: usize = 32;

/// The domain tag that starts the hashed encoding.
const HASH_TAG: &[u8] = b"bosun-plugin-source-v1\n";

/// One file of a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    /// Its path relative to the plugin directory: UTF-8, components joined by `/`, none of them
    /// empty, `.` or `..`.
    pub path: String,
    /// Its content as read.
    pub bytes: Arc<[u8]>,
}

/// Every file of a plugin directory, sorted by path (byte order of the `/`-joined paths).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceSnapshot {
    files: Vec<SourceFile>,
    sha256: String,
}

impl SourceSnapshot {
    /// Reads every regular file under `dir`, which must be a real directory (not a symbolic
    /// link), under the rules and bounds of this module.
    pub fn read(dir: &Path) -> Result<Self, PluginError> {
        match dir.symlink_metadata() {
            Ok(meta) if meta.is_symlink() => {
                return Err(PluginError::Symlink {
                    path: dir.to_owned(),
                    what: "directory",
                });
            }
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => {
                return Err(source_error(
                    dir,
                    "is not a directory: a JavaScript plugin is a directory",
                ));
            }
            Err(source) => {
                return Err(PluginError::Read {
                    path: dir.to_owned(),
                    source,
                });
            }
        }
        let mut reader = Reader {
            files: Vec::new(),
            total: 0,
        };
        reader.walk(dir, "", 0)?;
        Self::from_files(reader.files)
    }

    /// A snapshot of files already in memory (a scanner's fixtures, a test). The paths must
    /// have the form [`SourceFile::path`] describes, each once; the bounds apply.
    pub fn from_files(files: Vec<SourceFile>) -> Result<Self, PluginError> {
        if files.len() > MAX_SOURCE_FILES {
            return Err(too_many_files(Path::new(".")));
        }
        let mut total: u64 = 0;
        let mut sorted: BTreeMap<String, Arc<[u8]>> = BTreeMap::new();
        for file in files {
            if !is_snapshot_path(&file.path) {
                return Err(source_error(
                    Path::new(&file.path),
                    "is not a relative `/`-separated path inside the plugin directory",
                ));
            }
            let len = file.bytes.len() as u64;
            if len > MAX_SOURCE_FILE_BYTES {
                return Err(file_too_large(Path::new(&file.path)));
            }
            total += len;
            if total > MAX_SOURCE_TOTAL_BYTES {
                return Err(total_too_large(Path::new(".")));
            }
            if sorted.insert(file.path.clone(), file.bytes).is_some() {
                return Err(source_error(
                    Path::new(&file.path),
                    "appears twice in the snapshot",
                ));
            }
        }
        let files: Vec<SourceFile> = sorted
            .into_iter()
            .map(|(path, bytes)| SourceFile { path, bytes })
            .collect();
        let sha256 = hash(&files);
        Ok(Self { files, sha256 })
    }

    /// Every file, sorted by path.
    pub fn files(&self) -> &[SourceFile] {
        &self.files
    }

    /// The file at `path` (relative, `/`-separated, normalised), if the snapshot holds it.
    pub fn get(&self, path: &str) -> Option<&SourceFile> {
        self.files
            .binary_search_by(|f| f.path.as_str().cmp(path))
            .ok()
            .and_then(|i| self.files.get(i))
    }

    /// Lowercase hex SHA-256 of the canonical encoding (see the module documentation): the
    /// hash trust pins for a JavaScript plugin.
    pub fn sha256(&self) -> &str {
        &self.sha256
    }

    /// The sum of the files' sizes, in bytes.
    pub fn total_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.bytes.len() as u64).sum()
    }
}

/// The canonical encoding, hashed.
fn hash(files: &[SourceFile]) -> String {
    let mut hasher = Sha256::new();
    hasher.update(HASH_TAG);
    hasher.update((files.len() as u64).to_be_bytes());
    for file in files {
        hasher.update((file.path.len() as u64).to_be_bytes());
        hasher.update(file.path.as_bytes());
        hasher.update((file.bytes.len() as u64).to_be_bytes());
        hasher.update(&file.bytes);
    }
    bosun_core::text::hex(&hasher.finalize())
}

/// Whether `path` is relative, `/`-separated, and has no empty, `.` or `..` component.
pub(crate) fn is_snapshot_path(path: &str) -> bool {
    !path.is_empty()
        && path
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != "..")
}

struct Reader {
    files: Vec<SourceFile>,
    total: u64,
}

impl Reader {
    /// Reads the directory `dir`, whose path relative to the plugin directory is `prefix`.
    fn walk(&mut self, dir: &Path, prefix: &str, depth: usize) -> Result<(), PluginError> {
        if depth > MAX_SOURCE_DEPTH {
            return Err(source_error(
                dir,
                &format!(
                    "nests more than {MAX_SOURCE_DEPTH} directories deep: Bosun does not read plugins this deep; flatten the layout"
                ),
            ));
        }
        let read_error = |source| PluginError::Read {
            path: dir.to_owned(),
            source,
        };
        let mut entries: Vec<(String, PathBuf)> = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(read_error)? {
            let entry = entry.map_err(read_error)?;
            let path = entry.path();
            let name = entry.file_name().into_string().map_err(|_| {
                source_error(
                    &path,
                    "has a name that is not UTF-8: rename it (Bosun names every file of a plugin in its review)",
                )
            })?;
            entries.push((name, path));
        }
        entries.sort();
        for (name, path) in entries {
            let relative = if prefix.is_empty() {
                name.clone()
            } else {
                format!("{prefix}/{name}")
            };
            let meta = path
                .symlink_metadata()
                .map_err(|source| PluginError::Read {
                    path: path.clone(),
                    source,
                })?;
            let kind = meta.file_type();
            if kind.is_symlink() {
                return Err(PluginError::Symlink {
                    path,
                    what: "file or directory",
                });
            } else if kind.is_dir() {
                if name == ".git" {
                    continue;
                }
                self.walk(&path, &relative, depth + 1)?;
            } else if kind.is_file() {
                if self.files.len() >= MAX_SOURCE_FILES {
                    return Err(too_many_files(&path));
                }
                let bytes = read_file(&path)?;
                self.total += bytes.len() as u64;
                if self.total > MAX_SOURCE_TOTAL_BYTES {
                    return Err(total_too_large(&path));
                }
                self.files.push(SourceFile {
                    path: relative,
                    bytes: Arc::from(bytes),
                });
            } else {
                return Err(source_error(
                    &path,
                    "is not a regular file or directory (a FIFO, socket or device): remove it from the plugin",
                ));
            }
        }
        Ok(())
    }
}

/// Reads one file: not through a symbolic link (checked by the open itself), a regular file, at
/// most [`MAX_SOURCE_FILE_BYTES`].
fn read_file(path: &Path) -> Result<Vec<u8>, PluginError> {
    let read_error = |source| PluginError::Read {
        path: path.to_owned(),
        source,
    };
    bosun_fsio::read_regular(path, MAX_SOURCE_FILE_BYTES).map_err(|e| match e {
        bosun_fsio::OpenError::NotRegular {
            found: bosun_fsio::Found::Link,
            ..
        } => PluginError::Symlink {
            path: path.to_owned(),
            what: "file",
        },
        bosun_fsio::OpenError::NotRegular { found, .. } => source_error(
            path,
            &format!("is not a regular file ({found}): remove it from the plugin"),
        ),
        bosun_fsio::OpenError::TooLarge { .. } => file_too_large(path),
        other => read_error(other.into_io()),
    })
}

fn source_error(path: &Path, problem: &str) -> PluginError {
    PluginError::Source {
        path: path.to_owned(),
        problem: problem.to_owned(),
    }
}

fn too_many_files(path: &Path) -> PluginError {
    source_error(
        path,
        &format!(
            "is past the bound of {MAX_SOURCE_FILES} files for a JavaScript plugin: bundle the plugin, or remove what it does not need (node_modules, build output)"
        ),
    )
}

fn file_too_large(path: &Path) -> PluginError {
    source_error(
        path,
        &format!(
            "is larger than {MAX_SOURCE_FILE_BYTES} bytes (4 MiB), the bound for one file of a JavaScript plugin: split or remove it"
        ),
    )
}

fn total_too_large(path: &Path) -> PluginError {
    source_error(
        path,
        &format!(
            "takes the plugin past {MAX_SOURCE_TOTAL_BYTES} bytes (16 MiB), the bound for a JavaScript plugin: remove what it does not need"
        ),
    )
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn file(path: &str, bytes: &[u8]) -> SourceFile {
        SourceFile {
            path: path.to_owned(),
            bytes: Arc::from(bytes),
        }
    }

    fn snapshot(files: &[(&str, &[u8])]) -> SourceSnapshot {
        SourceSnapshot::from_files(files.iter().map(|(p, b)| file(p, b)).collect()).unwrap()
    }

    fn write(dir: &Path, path: &str, bytes: &[u8]) {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }

    fn refusal(dir: &Path) -> String {
        match SourceSnapshot::read(dir) {
            Ok(s) => panic!("read: {:?}", s.files()),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn reads_every_file_recursively_sorted_by_slash_path() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "plugin.json", b"{}");
        write(dir.path(), "index.mjs", b"export default () => {}");
        write(dir.path(), "lib/a.mjs", b"a");
        write(dir.path(), "lib/deeper/b.js", b"b");
        write(dir.path(), "lib-x.js", b"c");
        let snap = SourceSnapshot::read(dir.path()).unwrap();
        let paths: Vec<&str> = snap.files().iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "index.mjs",
                "lib-x.js",
                "lib/a.mjs",
                "lib/deeper/b.js",
                "plugin.json"
            ]
        );
        assert_eq!(&*snap.get("lib/deeper/b.js").unwrap().bytes, b"b");
        assert!(snap.get("lib").is_none());
        assert_eq!(snap.total_bytes(), 2 + 23 + 3);
        assert_eq!(
            snap,
            snapshot(&[
                ("plugin.json", b"{}"),
                ("index.mjs", b"export default () => {}"),
                ("lib/a.mjs", b"a"),
                ("lib/deeper/b.js", b"b"),
                ("lib-x.js", b"c"),
            ])
        );
    }

    #[test]
    fn git_directories_are_skipped_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "mod.ts", b"x");
        write(dir.path(), ".git/HEAD", b"ref: refs/heads/main");
        write(dir.path(), "sub/.git/config", b"");
        write(dir.path(), ".hidden.js", b"h");
        write(dir.path(), "node_modules/m/index.js", b"m");
        let snap = SourceSnapshot::read(dir.path()).unwrap();
        let paths: Vec<&str> = snap.files().iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, [".hidden.js", "mod.ts", "node_modules/m/index.js"]);
    }

    #[cfg(unix)]
    #[test]
    fn a_symlinked_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        write(outside.path(), "secret.js", b"s");
        write(dir.path(), "mod.ts", b"x");
        std::os::unix::fs::symlink(outside.path().join("secret.js"), dir.path().join("lib.js"))
            .unwrap();
        let reason = refusal(dir.path());
        assert!(reason.contains("lib.js is a symbolic link"), "{reason}");
    }

    #[cfg(unix)]
    #[test]
    fn a_symlinked_subdirectory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        write(outside.path(), "secret.js", b"s");
        write(dir.path(), "mod.ts", b"x");
        std::fs::create_dir(dir.path().join("lib")).unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("lib").join("vendor")).unwrap();
        let reason = refusal(dir.path());
        assert!(reason.contains("vendor is a symbolic link"), "{reason}");
    }

    #[cfg(unix)]
    #[test]
    fn a_symlinked_git_directory_is_refused_not_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        write(dir.path(), "mod.ts", b"x");
        std::os::unix::fs::symlink(outside.path(), dir.path().join(".git")).unwrap();
        assert!(refusal(dir.path()).contains(".git is a symbolic link"));
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_is_refused_without_hanging() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "mod.ts", b"x");
        let status = std::process::Command::new("mkfifo")
            .arg(dir.path().join("pipe.js"))
            .status()
            .unwrap();
        assert!(status.success());
        let reason = refusal(dir.path());
        assert!(
            reason.contains("is not a regular file or directory"),
            "{reason}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_linked_plugin_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "real/mod.ts", b"x");
        std::os::unix::fs::symlink(dir.path().join("real"), dir.path().join("link")).unwrap();
        assert!(refusal(&dir.path().join("link")).contains("is a symbolic link"));
    }

    #[test]
    fn too_many_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..=MAX_SOURCE_FILES {
            write(dir.path(), &format!("f/{i:04}.js"), b"");
        }
        let reason = refusal(dir.path());
        assert!(reason.contains("past the bound of 512 files"), "{reason}");
        // Exactly the bound is fine.
        std::fs::remove_file(dir.path().join("f/0000.js")).unwrap();
        assert_eq!(
            SourceSnapshot::read(dir.path()).unwrap().files().len(),
            MAX_SOURCE_FILES
        );
    }

    #[test]
    fn a_file_over_the_bound_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "mod.ts", b"x");
        let big = vec![b' '; MAX_SOURCE_FILE_BYTES as usize + 1];
        write(dir.path(), "big.js", &big);
        let reason = refusal(dir.path());
        assert!(
            reason.contains("big.js: is larger than 4194304 bytes"),
            "{reason}"
        );
    }

    #[test]
    fn files_together_over_the_bound_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let chunk = vec![b' '; MAX_SOURCE_FILE_BYTES as usize];
        for i in 0..4 {
            write(dir.path(), &format!("part{i}.js"), &chunk);
        }
        assert!(SourceSnapshot::read(dir.path()).is_ok());
        write(dir.path(), "part4.js", b"!");
        let reason = refusal(dir.path());
        assert!(reason.contains("past 16777216 bytes"), "{reason}");
    }

    #[test]
    fn too_deep_directories_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let deep = (0..=MAX_SOURCE_DEPTH)
            .map(|_| "d")
            .collect::<Vec<_>>()
            .join("/");
        write(dir.path(), &format!("{deep}/x.js"), b"");
        assert!(refusal(dir.path()).contains("directories deep"));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_name_that_is_not_utf8_is_refused() {
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "mod.ts", b"x");
        std::fs::write(
            dir.path().join(std::ffi::OsStr::from_bytes(b"bad\xff.js")),
            b"",
        )
        .unwrap();
        assert!(refusal(dir.path()).contains("not UTF-8"));
    }

    #[test]
    fn the_hash_changes_when_any_byte_or_path_changes() {
        let base = snapshot(&[("index.mjs", b"export default 1"), ("plugin.json", b"{}")]);
        let variants = [
            snapshot(&[("index.mjs", b"export default 2"), ("plugin.json", b"{}")]),
            snapshot(&[("index.mjs", b"export default 1"), ("plugin.json", b"{ }")]),
            snapshot(&[("index.js", b"export default 1"), ("plugin.json", b"{}")]),
            snapshot(&[("index.mjs", b"export default 1")]),
            snapshot(&[
                ("index.mjs", b"export default 1"),
                ("plugin.json", b"{}"),
                ("empty.js", b""),
            ]),
        ];
        for variant in &variants {
            assert_ne!(base.sha256(), variant.sha256(), "{:?}", variant.files());
        }
        // Same files in another order: same snapshot, same hash.
        let reordered = snapshot(&[("plugin.json", b"{}"), ("index.mjs", b"export default 1")]);
        assert_eq!(base.sha256(), reordered.sha256());
    }

    #[test]
    fn the_encoding_keeps_different_file_sets_apart() {
        // The same bytes concatenated: path+content boundaries moved, a file split in two.
        type Files<'a> = &'a [(&'a str, &'a [u8])];
        let pairs: [(Files<'_>, Files<'_>); 3] = [
            (&[("a", b"bc")], &[("ab", b"c")]),
            (&[("a", b"xy")], &[("a", b"x"), ("b", b"y")]),
            (&[("a", b""), ("b", b"")], &[("a", b"b")]),
        ];
        for (left, right) in pairs {
            assert_ne!(snapshot(left).sha256(), snapshot(right).sha256());
        }
        // The documented encoding, byte for byte.
        let mut expected = Vec::new();
        expected.extend_from_slice(b"bosun-plugin-source-v1\n");
        expected.extend_from_slice(&1u64.to_be_bytes());
        expected.extend_from_slice(&1u64.to_be_bytes());
        expected.extend_from_slice(b"a");
        expected.extend_from_slice(&2u64.to_be_bytes());
        expected.extend_from_slice(b"bc");
        assert_eq!(
            snapshot(&[("a", b"bc")]).sha256(),
            bosun_core::text::hex(&Sha256::digest(&expected))
        );
    }

    #[test]
    fn in_memory_paths_must_be_normalised_and_unique() {
        for bad in ["", "/abs.js", "a//b.js", "./a.js", "a/../b.js", "a/"] {
            let result = SourceSnapshot::from_files(vec![file(bad, b"")]);
            assert!(result.is_err(), "{bad:?} accepted");
        }
        let twice = SourceSnapshot::from_files(vec![file("a.js", b"1"), file("a.js", b"2")]);
        assert!(twice.unwrap_err().to_string().contains("appears twice"));
    }
}
