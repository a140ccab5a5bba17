//! `fs-stats`: counts what is in the workspace, by file extension. It reads directory entries
//! and sizes only, never file contents, and never follows a symbolic link.

pub mod spec;

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use bosun_sdk::{Plugin, ToolError, Tools, host};
use serde::Serialize;

use spec::FsStatsInput;

/// Where the sandbox preopens the workspace.
pub const WORKSPACE: &str = "/workspace";
/// The most entries one call visits; past it the counts are partial and `truncated` is set.
pub const MAX_ENTRIES: u64 = 200_000;
/// The most extensions listed; the rest are summed under `(other)`.
pub const MAX_EXTENSIONS: usize = 100;

/// The plugin; it keeps no state.
#[derive(Default)]
pub struct FsStats;

impl Plugin for FsStats {
    fn tools() -> Tools<Self> {
        Tools::new().tool(spec::FS_STATS, |input: FsStatsInput| {
            fs_stats(Path::new(WORKSPACE), input)
        })
    }
}

bosun_sdk::export!(FsStats);

/// Files and bytes of one extension.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
pub struct ExtensionStats {
    /// The extension in lower case, without the dot; `(none)` for files without one.
    pub extension: String,
    /// How many files.
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
}

/// What `fs_stats` returns.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
pub struct Stats {
    /// The directory counted, relative to the workspace.
    pub path: String,
    /// Regular files.
    pub files: u64,
    /// Directories below `path`.
    pub directories: u64,
    /// Symbolic links (not followed).
    pub symlinks: u64,
    /// Bytes of the regular files.
    pub bytes: u64,
    /// Directories that could not be read.
    pub unreadable: u64,
    /// Per extension, most bytes first.
    pub by_extension: Vec<ExtensionStats>,
    /// Whether the walk stopped at the entry bound.
    pub truncated: bool,
}

/// Counts what is under `input.path` (relative to `workspace`).
pub fn fs_stats(workspace: &Path, input: FsStatsInput) -> Result<Stats, ToolError> {
    let relative = input.path.unwrap_or_else(|| ".".to_owned());
    let start = workspace.join(checked_relative(&relative)?);
    if !std::fs::symlink_metadata(&start)?.is_dir() {
        return Err(ToolError::new(
            "not_directory",
            format!("`{relative}` is not a directory"),
        ));
    }
    let mut stats = Stats {
        path: relative,
        ..Stats::default()
    };
    let mut by_extension: BTreeMap<String, ExtensionStats> = BTreeMap::new();
    let mut pending = vec![start];
    let mut visited = 0u64;
    'walk: while let Some(dir) = pending.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(_) => {
                stats.unreadable += 1;
                continue;
            }
        };
        for entry in entries {
            visited += 1;
            if visited > MAX_ENTRIES {
                stats.truncated = true;
                break 'walk;
            }
            if visited.is_multiple_of(1024) {
                host::check_cancelled()?;
            }
            let Ok(entry) = entry else {
                stats.unreadable += 1;
                continue;
            };
            // `file_type` does not follow symbolic links.
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_symlink() {
                stats.symlinks += 1;
            } else if kind.is_dir() {
                stats.directories += 1;
                pending.push(entry.path());
            } else if kind.is_file() {
                let size = entry.metadata().map(|m| m.len()).unwrap_or(0);
                stats.files += 1;
                stats.bytes += size;
                let extension = extension_of(&entry.path());
                let slot =
                    by_extension
                        .entry(extension.clone())
                        .or_insert_with(|| ExtensionStats {
                            extension,
                            ..ExtensionStats::default()
                        });
                slot.files += 1;
                slot.bytes += size;
            }
        }
    }
    stats.by_extension = ranked(by_extension.into_values().collect());
    Ok(stats)
}

/// A workspace-relative path as given, refused when it is absolute or climbs out with `..`.
/// The sandbox enforces this regardless; refusing here gives the clearer error.
fn checked_relative(path: &str) -> Result<PathBuf, ToolError> {
    let candidate = Path::new(path);
    let mut clean = PathBuf::new();
    for component in candidate.components() {
        match component {
            Component::Normal(part) => clean.push(part),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(ToolError::outside_workspace(format!(
                    "`{path}` leaves the workspace: give a path relative to its root, without `..`"
                )));
            }
        }
    }
    Ok(clean)
}

fn extension_of(path: &Path) -> String {
    path.extension()
        .map(|e| e.to_string_lossy().to_lowercase())
        .unwrap_or_else(|| "(none)".to_owned())
}

/// Most bytes first (then name); past [`MAX_EXTENSIONS`], summed as `(other)`.
fn ranked(mut all: Vec<ExtensionStats>) -> Vec<ExtensionStats> {
    all.sort_by(|a, b| {
        b.bytes
            .cmp(&a.bytes)
            .then_with(|| a.extension.cmp(&b.extension))
    });
    if all.len() > MAX_EXTENSIONS {
        let rest = all.split_off(MAX_EXTENSIONS - 1);
        all.push(ExtensionStats {
            extension: "(other)".to_owned(),
            files: rest.iter().map(|e| e.files).sum(),
            bytes: rest.iter().map(|e| e.bytes).sum(),
        });
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;
    use bosun_sdk::testing;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("fs-stats-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("src/nested")).unwrap();
        std::fs::write(dir.join("README.md"), "hello").unwrap();
        std::fs::write(dir.join("src/lib.rs"), "fn main() {}").unwrap();
        std::fs::write(dir.join("src/nested/MOD.RS"), "x").unwrap();
        std::fs::write(dir.join("Makefile"), "all:").unwrap();
        dir
    }

    #[test]
    fn counts_by_extension() {
        let dir = scratch("count");
        #[cfg(unix)]
        std::os::unix::fs::symlink("/etc", dir.join("src/escape")).unwrap();
        let stats = fs_stats(&dir, FsStatsInput::default()).unwrap();
        assert_eq!((stats.files, stats.directories, stats.bytes), (4, 2, 22));
        assert_eq!(stats.symlinks, u64::from(cfg!(unix)));
        let rs = stats
            .by_extension
            .iter()
            .find(|e| e.extension == "rs")
            .unwrap();
        assert_eq!((rs.files, rs.bytes), (2, 13));
        assert_eq!(stats.by_extension[0].extension, "rs");
        assert!(stats.by_extension.iter().any(|e| e.extension == "(none)"));

        let src = fs_stats(
            &dir,
            FsStatsInput {
                path: Some("src".into()),
            },
        )
        .unwrap();
        assert_eq!((src.files, src.directories), (2, 1));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn paths_that_leave_the_workspace_are_refused() {
        let dir = scratch("leave");
        for path in ["../etc", "/etc", "src/../../x"] {
            let err = fs_stats(
                &dir,
                FsStatsInput {
                    path: Some(path.into()),
                },
            )
            .unwrap_err();
            assert_eq!(err.code, "outside_workspace", "{path}");
        }
        let err = fs_stats(
            &dir,
            FsStatsInput {
                path: Some("README.md".into()),
            },
        )
        .unwrap_err();
        assert_eq!(err.code, "not_directory");
        let err = fs_stats(
            &dir,
            FsStatsInput {
                path: Some("missing".into()),
            },
        )
        .unwrap_err();
        assert_eq!(err.code, "not_found");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn many_extensions_are_summed_past_the_bound() {
        let all = (0..150)
            .map(|i| ExtensionStats {
                extension: format!("e{i}"),
                files: 1,
                bytes: i,
            })
            .collect();
        let ranked = ranked(all);
        assert_eq!(ranked.len(), MAX_EXTENSIONS);
        assert_eq!(ranked.last().unwrap().extension, "(other)");
        assert_eq!(ranked.iter().map(|e| e.files).sum::<u64>(), 150);
    }

    #[test]
    fn metadata_declares_fs_read_from_the_path() {
        let doc = testing::check_metadata::<FsStats>(bosun_sdk::metadata!()).unwrap();
        assert_eq!(
            doc["tools"][0]["capabilities"],
            serde_json::json!([{"capability": "fs.read", "path_from_input": "/path"}])
        );
    }
}
