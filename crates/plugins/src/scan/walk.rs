//! Reading a plugin directory into a snapshot for the scanner: recursive, sorted by name,
//! bounded, and without following a single symbolic link. A link is a finding that refuses the
//! plugin (not an error), so the report still shows everything else; so are files that are not
//! regular, too large, unreadable, or past a bound. Files that are not JavaScript/TypeScript are
//! not read, and directories named `.git` are skipped, as the loader's snapshot skips them.

use std::io::Read;
use std::path::Path;

use super::{
    Finding, MAX_DIR_DEPTH, MAX_ENTRIES, MAX_FILE_BYTES, MAX_FILES, MAX_TOTAL_BYTES, file_finding,
    is_source_file,
};

/// What [`walk`] read.
pub(super) struct Walked {
    /// `(relative path, bytes)` of every source file read.
    pub files: Vec<(String, Vec<u8>)>,
    /// Findings about files that were not read.
    pub findings: Vec<Finding>,
    /// Source files found but not read (too large, not regular, unreadable).
    pub rejected_files: usize,
}

struct Walker {
    walked: Walked,
    entries: usize,
    bytes: u64,
    stopped: bool,
}

/// Read every source file under `root`.
pub(super) fn walk(root: &Path) -> Walked {
    let mut walker = Walker {
        walked: Walked {
            files: Vec::new(),
            findings: Vec::new(),
            rejected_files: 0,
        },
        entries: 0,
        bytes: 0,
        stopped: false,
    };
    walker.directory(root, "", 0);
    walker.walked
}

impl Walker {
    fn stop(&mut self, rel: &str, message: String) {
        self.walked.findings.push(file_finding(rel, message));
        self.stopped = true;
    }

    fn source_files(&self) -> usize {
        self.walked.files.len() + self.walked.rejected_files
    }

    fn reject(&mut self, rel: &str, message: String) {
        self.walked.rejected_files += 1;
        self.walked.findings.push(file_finding(rel, message));
    }

    fn directory(&mut self, dir: &Path, rel: &str, depth: usize) {
        let read = match std::fs::read_dir(dir) {
            Ok(read) => read,
            Err(e) => {
                let shown = if rel.is_empty() { "." } else { rel };
                self.walked.findings.push(file_finding(
                    shown,
                    format!("is a directory that cannot be listed ({e}), so it cannot be reviewed"),
                ));
                return;
            }
        };
        let mut entries = Vec::new();
        for entry in read {
            self.entries += 1;
            if self.entries > MAX_ENTRIES {
                let shown = if rel.is_empty() { "." } else { rel };
                self.stop(
                    shown,
                    format!("the plugin directory holds more than {MAX_ENTRIES} entries; the rest were not scanned: scan the plugin's own directory"),
                );
                return;
            }
            match entry {
                Ok(entry) => entries.push(entry),
                Err(e) => {
                    let shown = if rel.is_empty() { "." } else { rel };
                    self.walked.findings.push(file_finding(
                        shown,
                        format!("has an entry that cannot be read ({e})"),
                    ));
                }
            }
        }
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            if self.stopped {
                return;
            }
            let name = entry.file_name();
            let Some(name) = name.to_str() else {
                let lossy = entry.file_name().to_string_lossy().into_owned();
                self.walked.findings.push(file_finding(
                    &join(rel, &lossy),
                    "has a name that is not UTF-8: rename it".to_owned(),
                ));
                continue;
            };
            let child = join(rel, name);
            let path = entry.path();
            let meta = match path.symlink_metadata() {
                Ok(meta) => meta,
                Err(e) => {
                    self.walked
                        .findings
                        .push(file_finding(&child, format!("cannot be read ({e})")));
                    continue;
                }
            };
            if meta.is_symlink() {
                self.walked.findings.push(file_finding(
                    &child,
                    "is a symbolic link, which Bosun does not follow in a plugin: put the real file or directory there".to_owned(),
                ));
            } else if meta.is_dir() {
                if name == ".git" {
                    // Version-control data is not plugin code and the loader does not read it
                    // (`source.rs` skips it the same way); a linked `.git` is still a finding.
                    continue;
                }
                if depth + 1 > MAX_DIR_DEPTH {
                    self.walked.findings.push(file_finding(
                        &child,
                        format!(
                            "is nested deeper than {MAX_DIR_DEPTH} directories and was not scanned"
                        ),
                    ));
                } else {
                    self.directory(&path, &child, depth + 1);
                }
            } else if is_source_file(name) {
                self.source_file(&path, &child, &meta);
            }
        }
    }

    fn source_file(&mut self, path: &Path, rel: &str, meta: &std::fs::Metadata) {
        if self.source_files() >= MAX_FILES {
            self.stop(
                rel,
                format!("the plugin has more than {MAX_FILES} JavaScript/TypeScript files; this one and the rest were not scanned"),
            );
            return;
        }
        if !meta.is_file() {
            self.reject(
                rel,
                "is not a regular file, so it cannot be reviewed".to_owned(),
            );
            return;
        }
        if meta.len() > MAX_FILE_BYTES as u64 {
            self.reject(
                rel,
                format!(
                    "is {} bytes, over the {MAX_FILE_BYTES}-byte bound for a scanned file: split it",
                    meta.len()
                ),
            );
            return;
        }
        if self.bytes + meta.len() > MAX_TOTAL_BYTES {
            self.stop(
                rel,
                format!("the plugin's sources exceed {MAX_TOTAL_BYTES} bytes; this file and the rest were not scanned"),
            );
            return;
        }
        match read_source(path) {
            Ok(bytes) => {
                self.bytes += bytes.len() as u64;
                self.walked.files.push((rel.to_owned(), bytes));
            }
            Err(e) => self.reject(
                rel,
                format!("cannot be read ({e}), so it cannot be reviewed"),
            ),
        }
    }
}

fn join(rel: &str, name: &str) -> String {
    if rel.is_empty() {
        name.to_owned()
    } else {
        format!("{rel}/{name}")
    }
}

/// Read one source file: not through a link (the open refuses one swapped in after the
/// listing), not blocking on a FIFO, a regular file, at most [`MAX_FILE_BYTES`] (one byte more
/// is read, so that a file grown since its size was checked is still seen as too large).
pub(super) fn read_source(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(
        &mut options,
        libc::O_NOFOLLOW | libc::O_NONBLOCK,
    );
    let file = options.open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)?;
    Ok(bytes)
}
