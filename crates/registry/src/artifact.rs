//! A plugin as one downloadable file, and back. A plugin that is one file travels as that file
//! (`plugin.wasm`, `mod.ts`, a skill's `SKILL.md`); one of several files (a Forge plugin, a
//! skill with resources) as `plugin.tar.gz`, packed and unpacked by Bosun's one tar
//! implementation (`bosun_oci::tarball`: deterministic, and an unpacker that refuses links,
//! devices, absolute paths, `..`, duplicates and anything over the installer's bounds).
//! Catalogs published before the tar was compressed name an uncompressed `plugin.tar`; it is
//! unpacked by the same code.

use std::path::Path;

use bosun_oci::UnpackLimits;
use bosun_plugins::source::{MAX_SOURCE_DEPTH, MAX_SOURCE_FILES};

use crate::error::RegistryError;

/// The name of a packed multi-file plugin or skill.
pub const TAR_FILE: &str = "plugin.tar.gz";

/// The name an uncompressed packed plugin had in earlier catalogs (still installed).
pub const PLAIN_TAR_FILE: &str = "plugin.tar";

/// The single files a plugin may travel as.
pub const SINGLE_FILES: [&str; 3] = ["plugin.wasm", "mod.ts", "SKILL.md"];

/// Largest total a packed plugin may unpack to.
pub const MAX_UNPACKED_BYTES: u64 = bosun_plugins::catalog::MAX_COMPONENT_BYTES;

/// Whether `file` is a name a plugin or skill travels as.
pub fn is_artifact_file(file: &str) -> bool {
    SINGLE_FILES.contains(&file) || file == TAR_FILE || file == PLAIN_TAR_FILE
}

/// The installer's bounds on what a packed plugin unpacks to.
pub fn unpack_limits() -> UnpackLimits {
    UnpackLimits {
        max_bytes: MAX_UNPACKED_BYTES,
        // Every file and a folder for each at most.
        max_entries: 2 * MAX_SOURCE_FILES,
        max_files: MAX_SOURCE_FILES,
        max_depth: MAX_SOURCE_DEPTH,
        ..UnpackLimits::default()
    }
}

fn archive_error(e: bosun_oci::OciError) -> RegistryError {
    match e {
        bosun_oci::OciError::Archive { entry, reason } if entry.is_empty() => {
            RegistryError::Archive { what: reason }
        }
        bosun_oci::OciError::Archive { entry, reason } => RegistryError::Archive {
            what: format!(
                "holds `{}`, which is refused: {reason}",
                crate::name::escape(&entry)
            ),
        },
        bosun_oci::OciError::TooLarge { what, limit, .. } => RegistryError::Archive {
            what: format!("is over the limit of {limit} for {what}"),
        },
        other => other.into(),
    }
}

/// Packs the files `(relative path, bytes)` as a deterministic [`TAR_FILE`].
pub fn pack(files: &[(String, Vec<u8>)]) -> Result<Vec<u8>, RegistryError> {
    bosun_oci::pack_files(files).map_err(archive_error)
}

/// Unpacks `bytes` (a [`TAR_FILE`] or [`PLAIN_TAR_FILE`]) into `dir`, which must not exist yet;
/// on a refusal nothing is left at `dir`.
pub fn unpack(bytes: &[u8], dir: &Path) -> Result<(), RegistryError> {
    bosun_oci::unpack(bytes, dir, &unpack_limits())
        .map(|_| ())
        .map_err(archive_error)
}

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
                // Not through a link swapped in since the listing, never waiting on a FIFO,
                // and no more than is left of the bound.
                let bytes = bosun_fsio::read_regular(
                    &entry.path(),
                    MAX_UNPACKED_BYTES.saturating_sub(total),
                )
                .map_err(|e| match e {
                    bosun_fsio::OpenError::Io { source, .. } => {
                        RegistryError::io(format!("reading {rel}"))(source)
                    }
                    bosun_fsio::OpenError::TooLarge { .. } => RegistryError::Archive {
                        what: format!(
                            "would hold more than {MAX_SOURCE_FILES} files or {MAX_UNPACKED_BYTES} bytes"
                        ),
                    },
                    refused => RegistryError::Archive {
                        what: format!("would hold {rel}, which {}", refused_tail(&refused)),
                    },
                })?;
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

/// Lays the downloaded artifact `file` out in `dir`, which must not exist yet (its parent must).
pub fn lay_out(file: &str, bytes: &[u8], dir: &Path) -> Result<(), RegistryError> {
    if file == TAR_FILE || file == PLAIN_TAR_FILE {
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
    std::fs::create_dir(dir).map_err(RegistryError::io(format!("creating {}", dir.display())))?;
    let path = dir.join(file);
    std::fs::write(&path, bytes).map_err(RegistryError::io(format!("writing {}", path.display())))
}

/// What a refused file is, for an archive error ("is a FIFO, not a regular file").
fn refused_tail(refused: &bosun_fsio::OpenError) -> String {
    match refused.found() {
        Some(found) => format!("is {found}, not a regular file"),
        None => refused.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_archive_with_a_climbing_or_linked_entry_is_refused() {
        let scratch = tempfile::tempdir().unwrap();
        let dir = scratch.path().join("laid");
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
            lay_out(PLAIN_TAR_FILE, &raw, &dir),
            Err(RegistryError::Archive { .. })
        ));
        assert!(!scratch.path().join("escape").exists());
        assert!(!dir.exists());

        let mut builder = tar::Builder::new(Vec::new());
        let mut link = tar::Header::new_ustar();
        link.set_entry_type(tar::EntryType::Symlink);
        link.set_size(0);
        builder
            .append_link(&mut link, "passwd", "/etc/passwd")
            .unwrap();
        let linked = builder.into_inner().unwrap();
        assert!(matches!(
            lay_out(PLAIN_TAR_FILE, &linked, &dir),
            Err(RegistryError::Archive { .. })
        ));
        assert!(!dir.exists());

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
        lay_out(TAR_FILE, &packed, &dir).unwrap();
        assert_eq!(std::fs::read(dir.join("lib/a.mjs")).unwrap(), b"a");
    }
}
