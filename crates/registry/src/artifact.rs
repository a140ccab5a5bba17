//! A plugin as one downloadable file, and back. A plugin that is one file travels as that file
//! (`plugin.wasm`, `mod.ts`, a skill's `SKILL.md`); one of several files (a Forge plugin) as an
//! uncompressed tar, `plugin.tar`, written deterministically (sorted, zero times and owners).
//! Unpacking accepts regular files and directories only, with normal relative paths, under the
//! installer's bounds — no links, devices, absolute paths or `..`.

use std::path::{Component, Path};

use bosun_plugins::source::{MAX_SOURCE_DEPTH, MAX_SOURCE_FILES};

use crate::error::RegistryError;

/// The name of a packed multi-file plugin.
pub const TAR_FILE: &str = "plugin.tar";

/// The single files a plugin may travel as.
pub const SINGLE_FILES: [&str; 3] = ["plugin.wasm", "mod.ts", "SKILL.md"];

/// Largest total a packed plugin may unpack to.
pub const MAX_UNPACKED_BYTES: u64 = bosun_plugins::catalog::MAX_COMPONENT_BYTES;

/// Packs the files `(relative path, bytes)` as a deterministic tar.
pub fn pack(files: &[(String, Vec<u8>)]) -> Result<Vec<u8>, RegistryError> {
    let mut sorted: Vec<&(String, Vec<u8>)> = files.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let mut builder = tar::Builder::new(Vec::new());
    builder.mode(tar::HeaderMode::Deterministic);
    for (path, bytes) in sorted {
        let mut header = tar::Header::new_ustar();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(0);
        header.set_entry_type(tar::EntryType::Regular);
        builder
            .append_data(&mut header, path, bytes.as_slice())
            .map_err(|e| RegistryError::Archive {
                what: format!("cannot take {path}: {e}"),
            })?;
    }
    builder.into_inner().map_err(|e| RegistryError::Archive {
        what: format!("cannot be written: {e}"),
    })
}

/// Unpacks `bytes` (a [`TAR_FILE`]) into `dir`, which must exist and be empty.
pub fn unpack(bytes: &[u8], dir: &Path) -> Result<(), RegistryError> {
    let refuse = |what: String| RegistryError::Archive { what };
    let mut archive = tar::Archive::new(bytes);
    let mut files = 0usize;
    let mut total = 0u64;
    let entries = archive
        .entries()
        .map_err(|e| refuse(format!("cannot be read: {e}")))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| refuse(format!("cannot be read: {e}")))?;
        let path = entry
            .path()
            .map_err(|e| refuse(format!("has an unreadable path: {e}")))?
            .into_owned();
        let normal = path.components().all(|c| matches!(c, Component::Normal(_)));
        let depth = path.components().count();
        let hidden_name = path
            .to_str()
            .is_none_or(|p| p.chars().any(|c| c.is_control()));
        if !normal || depth == 0 || depth > MAX_SOURCE_DEPTH || hidden_name {
            return Err(refuse(format!(
                "holds the path `{}`, which is not a plain relative path",
                crate::name::escape(&path.to_string_lossy())
            )));
        }
        let target = dir.join(&path);
        match entry.header().entry_type() {
            tar::EntryType::Directory => {
                std::fs::create_dir_all(&target)
                    .map_err(RegistryError::io(format!("creating {}", target.display())))?;
            }
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                files += 1;
                total += entry.size();
                if files > MAX_SOURCE_FILES || total > MAX_UNPACKED_BYTES {
                    return Err(refuse(format!(
                        "holds more than {MAX_SOURCE_FILES} files or {MAX_UNPACKED_BYTES} bytes"
                    )));
                }
                if let Some(parent) = target.parent() {
                    std::fs::create_dir_all(parent)
                        .map_err(RegistryError::io(format!("creating {}", parent.display())))?;
                }
                let mut out = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&target)
                    .map_err(RegistryError::io(format!("writing {}", target.display())))?;
                let size = entry.size();
                std::io::copy(&mut (&mut entry).take(size), &mut out)
                    .map_err(RegistryError::io(format!("writing {}", target.display())))?;
            }
            other => {
                return Err(refuse(format!(
                    "holds `{}` of type {other:?}: only files and directories are unpacked",
                    crate::name::escape(&path.to_string_lossy())
                )));
            }
        }
    }
    Ok(())
}

use std::io::Read;

/// Every regular file under `dir` as `(relative path, bytes)`, under the installer's bounds,
/// refusing links; version control and build output are left out.
pub fn read_tree(dir: &Path) -> Result<Vec<(String, Vec<u8>)>, RegistryError> {
    const SKIPPED: [&str; 3] = [".git", "target", "node_modules"];
    let mut out = Vec::new();
    let mut total = 0u64;
    let mut pending = vec![(dir.to_path_buf(), String::new(), 0usize)];
    while let Some((at, prefix, depth)) = pending.pop() {
        let entries = std::fs::read_dir(&at)
            .map_err(RegistryError::io(format!("reading {}", at.display())))?;
        for entry in entries {
            let entry = entry.map_err(RegistryError::io(format!("reading {}", at.display())))?;
            let name = entry
                .file_name()
                .into_string()
                .map_err(|n| RegistryError::Archive {
                    what: format!("would hold the non-UTF-8 name {}", n.to_string_lossy()),
                })?;
            if SKIPPED.contains(&name.as_str()) {
                continue;
            }
            let rel = if prefix.is_empty() {
                name
            } else {
                format!("{prefix}/{name}")
            };
            let kind = entry
                .file_type()
                .map_err(RegistryError::io(format!("reading {}", at.display())))?;
            if kind.is_symlink() {
                return Err(RegistryError::Archive {
                    what: format!("would hold the symbolic link {rel}: copy what it points to"),
                });
            } else if kind.is_dir() {
                if depth + 1 > MAX_SOURCE_DEPTH {
                    return Err(RegistryError::Archive {
                        what: format!("would nest {rel} too deep"),
                    });
                }
                pending.push((entry.path(), rel, depth + 1));
            } else if kind.is_file() {
                let bytes = std::fs::read(entry.path())
                    .map_err(RegistryError::io(format!("reading {rel}")))?;
                total += bytes.len() as u64;
                if out.len() >= MAX_SOURCE_FILES || total > MAX_UNPACKED_BYTES {
                    return Err(RegistryError::Archive {
                        what: format!(
                            "would hold more than {MAX_SOURCE_FILES} files or {MAX_UNPACKED_BYTES} bytes"
                        ),
                    });
                }
                out.push((rel, bytes));
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// Lays the downloaded artifact `file` out in `dir` (which must exist and be empty).
pub fn lay_out(file: &str, bytes: &[u8], dir: &Path) -> Result<(), RegistryError> {
    if file == TAR_FILE {
        return unpack(bytes, dir);
    }
    if !SINGLE_FILES.contains(&file) {
        return Err(RegistryError::Archive {
            what: format!(
                "`{}` is not a plugin file Bosun installs",
                crate::name::escape(file)
            ),
        });
    }
    let path = dir.join(file);
    std::fs::write(&path, bytes).map_err(RegistryError::io(format!("writing {}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_archive_with_a_climbing_or_linked_entry_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        // A path with `..`, written raw (the builder refuses it).
        let mut header = tar::Header::new_gnu();
        header.set_size(1);
        header.set_entry_type(tar::EntryType::Regular);
        {
            let name = b"../escape";
            let gnu = header.as_gnu_mut().unwrap();
            gnu.name[..name.len()].copy_from_slice(name);
        }
        header.set_cksum();
        let mut raw = Vec::new();
        raw.extend_from_slice(header.as_bytes());
        let mut block = [0u8; 512];
        block[0] = b'x';
        raw.extend_from_slice(&block);
        raw.extend_from_slice(&[0u8; 1024]);
        assert!(matches!(
            unpack(&raw, dir.path()),
            Err(RegistryError::Archive { .. })
        ));
        assert!(!dir.path().parent().unwrap().join("escape").exists());

        let mut builder = tar::Builder::new(Vec::new());
        let mut link = tar::Header::new_ustar();
        link.set_entry_type(tar::EntryType::Symlink);
        link.set_size(0);
        builder
            .append_link(&mut link, "passwd", "/etc/passwd")
            .unwrap();
        let linked = builder.into_inner().unwrap();
        assert!(matches!(
            unpack(&linked, dir.path()),
            Err(RegistryError::Archive { .. })
        ));
        assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());

        let packed = pack(&[
            ("lib/a.mjs".to_owned(), b"a".to_vec()),
            ("plugin.json".to_owned(), b"{}".to_vec()),
        ])
        .unwrap();
        assert_eq!(
            packed,
            pack(&[
                ("plugin.json".to_owned(), b"{}".to_vec()),
                ("lib/a.mjs".to_owned(), b"a".to_vec())
            ])
            .unwrap()
        );
        unpack(&packed, dir.path()).unwrap();
        assert_eq!(std::fs::read(dir.path().join("lib/a.mjs")).unwrap(), b"a");
    }
}
