//! Bosun's one tar implementation: a folder (or a list of files) as a deterministic gzip tar,
//! and the refusing unpacker every tar Bosun receives goes through — OCI tar layers of JS/TS
//! plugins and skills, and the packed plugins of a signed catalog (`bosun-registry`'s
//! `plugin.tar.gz`, and the uncompressed `plugin.tar` of earlier catalogs).
//!
//! Packing is deterministic — entries sorted by path, mtime 0, uid and gid 0, no user names,
//! modes 0644/0755 — so the same folder gives the same digest on every machine. Packing and
//! unpacking accept only regular files and directories: a link, a device or a FIFO is refused,
//! as are absolute paths, `..`, backslashes, control characters in names, duplicate entries,
//! and more bytes, files, entries or depth than [`UnpackLimits`] allow. The decompressed stream
//! as a whole is bounded too ([`UnpackLimits::stream_bytes`]): the tar reader keeps a pax
//! header's or a GNU long name's data in memory whole and reads past the data of entries it
//! skips, so a few kilobytes of gzip must not become gigabytes of either. Unpacking writes into
//! a folder it creates and removes that folder again on any refusal, so a hostile layer leaves
//! nothing behind.

use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};

use bytes::Bytes;

use crate::artifact::Artifact;
use crate::error::OciError;
use crate::manifest::{ANNOTATION_TITLE, Annotations, LAYER_TAR_GZIP};

/// The artifact type of a JS/TS plugin.
pub const PLUGIN_ARTIFACT: &str = "application/vnd.bosun.plugin.v1";
/// The artifact type of a skill.
pub const SKILL_ARTIFACT: &str = "application/vnd.bosun.skill.v1";

/// What a folder artifact holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TreeKind {
    /// A JS/TS plugin's folder.
    Plugin,
    /// A skill's folder.
    Skill,
}

impl TreeKind {
    /// Its artifact type.
    pub fn artifact_type(self) -> &'static str {
        match self {
            Self::Plugin => PLUGIN_ARTIFACT,
            Self::Skill => SKILL_ARTIFACT,
        }
    }
}

/// How much one tar may unpack to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnpackLimits {
    /// Total bytes of all files (default 64 MiB).
    pub max_bytes: u64,
    /// Entries, files and directories together (default 10,000).
    pub max_entries: usize,
    /// Regular files (default 10,000).
    pub max_files: usize,
    /// Bytes in one entry's path (default 1,024).
    pub max_path: usize,
    /// Components in one entry's path (default 64).
    pub max_depth: usize,
}

impl Default for UnpackLimits {
    fn default() -> Self {
        Self {
            max_bytes: 64 * 1024 * 1024,
            max_entries: 10_000,
            max_files: 10_000,
            max_path: 1024,
            max_depth: 64,
        }
    }
}

/// What one entry may add to the tar stream beside its file's bytes: its header, a pax header
/// and a GNU long-name header with their padding, and pax records (times, extended attributes)
/// up to 4 KiB, plus the path twice (in the pax `path` and a long name).
const ENTRY_OVERHEAD: u64 = 4 * 512 + 4 * 1024;

impl UnpackLimits {
    /// The most bytes the decompressed tar stream may hold: the files' bytes plus
    /// [`ENTRY_OVERHEAD`] and two paths for every entry allowed, and the end-of-archive
    /// blocks. A layer that needs more hides data where no file limit counts it.
    pub fn stream_bytes(&self) -> u64 {
        let per_entry = ENTRY_OVERHEAD.saturating_add(2 * self.max_path as u64);
        (self.max_entries as u64)
            .saturating_add(2)
            .saturating_mul(per_entry)
            .saturating_add(self.max_bytes)
    }
}

/// A reader that gives at most `left` bytes and then fails if its source holds more; it
/// remembers that it did, so the refusal can be named whatever the tar reader made of it.
struct BoundedStream<R> {
    inner: R,
    left: u64,
    exceeded: bool,
}

impl<R: Read> Read for BoundedStream<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if self.left == 0 {
            let mut probe = [0u8; 1];
            if self.inner.read(&mut probe)? == 0 {
                return Ok(0);
            }
            self.exceeded = true;
            return Err(std::io::Error::other(
                "the tar stream is longer than its limit",
            ));
        }
        let want = usize::try_from(self.left).map_or(buf.len(), |left| left.min(buf.len()));
        let read = self.inner.read(&mut buf[..want])?;
        self.left -= read as u64;
        Ok(read)
    }
}

/// What an unpack wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unpacked {
    /// Regular files written.
    pub files: usize,
    /// Their bytes.
    pub bytes: u64,
}

/// One entry to pack.
enum Entry {
    Dir(String),
    File {
        path: String,
        bytes: Vec<u8>,
        executable: bool,
    },
}

impl Entry {
    fn path(&self) -> &str {
        match self {
            Self::Dir(path) | Self::File { path, .. } => path,
        }
    }
}

/// Packs `dir` into a deterministic gzip tar (see the module doc).
pub fn pack(dir: &Path) -> Result<Vec<u8>, OciError> {
    let mut paths = Vec::new();
    collect(dir, dir, &mut paths)?;
    let mut entries = Vec::with_capacity(paths.len());
    for (relative, is_dir, executable) in paths {
        if is_dir {
            entries.push(Entry::Dir(relative));
        } else {
            let full = dir.join(&relative);
            // Listed as a regular file; opened so that one swapped since for a link or a FIFO
            // is refused, not followed or waited on, and no file past what an unpack takes is
            // read.
            let bytes = bosun_fsio::read_regular(&full, UnpackLimits::default().max_bytes)
                .map_err(|e| match e {
                    bosun_fsio::OpenError::Io { path, source } => OciError::io(&path, source),
                    refused => OciError::Archive {
                        entry: relative.clone(),
                        reason: refused.to_string(),
                    },
                })?;
            entries.push(Entry::File {
                path: relative,
                bytes,
                executable,
            });
        }
    }
    write_entries(entries, dir)
}

/// Packs `files` — `(relative path, bytes)`, `/`-separated — into the same deterministic gzip
/// tar as [`pack`] makes of a folder holding them (their folders implied, modes 0644).
pub fn pack_files(files: &[(String, Vec<u8>)]) -> Result<Vec<u8>, OciError> {
    let mut dirs = std::collections::BTreeSet::new();
    let mut entries = Vec::with_capacity(files.len());
    for (path, bytes) in files {
        safe_relative(path).map_err(|reason| OciError::Archive {
            entry: path.chars().take(300).collect(),
            reason: reason.to_owned(),
        })?;
        let mut parent = path.as_str();
        while let Some((up, _)) = parent.rsplit_once('/') {
            dirs.insert(up.to_owned());
            parent = up;
        }
        entries.push(Entry::File {
            path: path.clone(),
            bytes: bytes.clone(),
            executable: false,
        });
    }
    entries.extend(dirs.into_iter().map(Entry::Dir));
    write_entries(entries, Path::new("."))
}

/// The one tar writer: `entries` sorted by path, each with the fixed header of the module doc.
fn write_entries(mut entries: Vec<Entry>, origin: &Path) -> Result<Vec<u8>, OciError> {
    entries.sort_by(|a, b| a.path().cmp(b.path()));
    let encoder = flate2::GzBuilder::new()
        .mtime(0)
        .write(Vec::new(), flate2::Compression::default());
    let mut builder = tar::Builder::new(encoder);
    for entry in entries {
        let mut header = tar::Header::new_gnu();
        header.set_mtime(0);
        header.set_uid(0);
        header.set_gid(0);
        let result = match &entry {
            Entry::Dir(path) => {
                header.set_entry_type(tar::EntryType::Directory);
                header.set_mode(0o755);
                header.set_size(0);
                builder.append_data(&mut header, format!("{path}/"), std::io::empty())
            }
            Entry::File {
                path,
                bytes,
                executable,
            } => {
                header.set_entry_type(tar::EntryType::Regular);
                header.set_mode(if *executable { 0o755 } else { 0o644 });
                header.set_size(bytes.len() as u64);
                builder.append_data(&mut header, path, bytes.as_slice())
            }
        };
        result.map_err(|e| OciError::io(origin.join(entry.path()), e))?;
    }
    let encoder = builder.into_inner().map_err(|e| OciError::io(origin, e))?;
    encoder.finish().map_err(|e| OciError::io(origin, e))
}

/// Every directory and file under `dir`, sorted, as `/`-separated paths relative to `root`.
fn collect(root: &Path, dir: &Path, out: &mut Vec<(String, bool, bool)>) -> Result<(), OciError> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| OciError::io(dir, e))?
        .collect::<Result<_, _>>()
        .map_err(|e| OciError::io(dir, e))?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        let relative = path
            .strip_prefix(root)
            .ok()
            .and_then(Path::to_str)
            .map(str::to_owned)
            .ok_or_else(|| OciError::Archive {
                entry: path.display().to_string(),
                reason: "the path is not UTF-8; rename it".to_owned(),
            })?;
        if relative.contains('\\') {
            return Err(OciError::Archive {
                entry: relative,
                reason: "backslashes are refused in names; rename it".to_owned(),
            });
        }
        let metadata = std::fs::symlink_metadata(&path).map_err(|e| OciError::io(&path, e))?;
        let kind = metadata.file_type();
        if kind.is_symlink() {
            return Err(OciError::Archive {
                entry: relative,
                reason: "links are not packed; replace the link with the file it points at"
                    .to_owned(),
            });
        }
        if kind.is_dir() {
            out.push((relative, true, false));
            collect(root, &path, out)?;
        } else if kind.is_file() {
            out.push((relative, false, executable(&metadata)));
        } else {
            return Err(OciError::Archive {
                entry: relative,
                reason: "only regular files and directories are packed".to_owned(),
            });
        }
    }
    Ok(())
}

#[cfg(unix)]
fn executable(metadata: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    metadata.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn executable(_: &std::fs::Metadata) -> bool {
    false
}

/// Unpacks a tar — gzip-compressed (recognised by its magic bytes) or plain — into `dest`,
/// which must not exist yet (see the module doc). On any error `dest` is removed again.
pub fn unpack(layer: &[u8], dest: &Path, limits: &UnpackLimits) -> Result<Unpacked, OciError> {
    std::fs::create_dir(dest).map_err(|e| OciError::io(dest, e))?;
    let result = unpack_into(layer, dest, limits);
    if result.is_err() {
        let _ = std::fs::remove_dir_all(dest);
    }
    result
}

fn unpack_into(layer: &[u8], dest: &Path, limits: &UnpackLimits) -> Result<Unpacked, OciError> {
    let reader: Box<dyn Read + '_> = if layer.starts_with(&[0x1f, 0x8b]) {
        Box::new(flate2::read::GzDecoder::new(layer))
    } else {
        Box::new(layer)
    };
    let limit = limits.stream_bytes();
    let mut stream = BoundedStream {
        inner: reader,
        left: limit,
        exceeded: false,
    };
    let result = unpack_entries(tar::Archive::new(&mut stream), dest, limits);
    if stream.exceeded {
        return Err(OciError::TooLarge {
            what: "the tar layer, decompressed (headers and skipped data included)".to_owned(),
            limit,
            size: limit.saturating_add(1),
        });
    }
    result
}

fn unpack_entries<R: Read>(
    mut archive: tar::Archive<R>,
    dest: &Path,
    limits: &UnpackLimits,
) -> Result<Unpacked, OciError> {
    let mut unpacked = Unpacked { files: 0, bytes: 0 };
    let mut entries_seen = 0usize;
    let bad_layer = |e: std::io::Error| OciError::Archive {
        entry: String::new(),
        reason: format!("the layer is not a readable tar: {e}"),
    };
    for entry in archive.entries().map_err(bad_layer)? {
        let mut entry = entry.map_err(bad_layer)?;
        let raw = entry.path_bytes();
        let name = String::from_utf8_lossy(&raw).into_owned();
        let refuse = |reason: &str| OciError::Archive {
            entry: name.chars().take(300).collect(),
            reason: reason.to_owned(),
        };
        let kind = entry.header().entry_type();
        if matches!(kind, tar::EntryType::XGlobalHeader) {
            continue;
        }
        entries_seen += 1;
        if entries_seen > limits.max_entries {
            return Err(OciError::TooLarge {
                what: "the tar layer's entry count".to_owned(),
                limit: limits.max_entries as u64,
                size: entries_seen as u64,
            });
        }
        if raw.len() > limits.max_path {
            return Err(refuse("the path is longer than the limit"));
        }
        let relative = safe_relative(&name).map_err(&refuse)?;
        if relative.components().count() > limits.max_depth {
            return Err(refuse("the path nests deeper than the limit"));
        }
        let target = dest.join(&relative);
        match kind {
            tar::EntryType::Directory => {
                std::fs::create_dir_all(&target).map_err(|e| OciError::io(&target, e))?;
            }
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                // The size the reader goes by — a pax `size` record overrides the header's —
                // so the bound is checked against the bytes that will be read.
                let size = entry.size();
                if unpacked.files >= limits.max_files {
                    return Err(OciError::TooLarge {
                        what: "the tar layer's file count".to_owned(),
                        limit: limits.max_files as u64,
                        size: unpacked.files as u64 + 1,
                    });
                }
                if unpacked.bytes.saturating_add(size) > limits.max_bytes {
                    return Err(OciError::TooLarge {
                        what: "the tar layer's unpacked files".to_owned(),
                        limit: limits.max_bytes,
                        size: unpacked.bytes.saturating_add(size),
                    });
                }
                if let Some(parent) = target.parent() {
                    std::fs::create_dir_all(parent).map_err(|e| OciError::io(parent, e))?;
                }
                let mut file = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&target)
                    .map_err(|e| match e.kind() {
                        std::io::ErrorKind::AlreadyExists => {
                            refuse("the layer holds this path twice")
                        }
                        _ => OciError::io(&target, e),
                    })?;
                let mut limited = (&mut entry).take(size);
                let written =
                    std::io::copy(&mut limited, &mut file).map_err(|e| OciError::io(&target, e))?;
                if written != size {
                    return Err(refuse("the layer ends inside this file"));
                }
                file.flush().map_err(|e| OciError::io(&target, e))?;
                set_mode(&target, entry.header().mode().unwrap_or(0o644))?;
                unpacked.files += 1;
                unpacked.bytes += size;
            }
            tar::EntryType::Symlink | tar::EntryType::Link => {
                return Err(refuse(
                    "links are refused: a link could point outside the folder, and a plugin's files travel as files",
                ));
            }
            tar::EntryType::Char | tar::EntryType::Block | tar::EntryType::Fifo => {
                return Err(refuse("devices and FIFOs are refused"));
            }
            _ => return Err(refuse("only regular files and directories are accepted")),
        }
    }
    Ok(unpacked)
}

/// `name` as a relative path of plain components, or why not.
fn safe_relative(name: &str) -> Result<PathBuf, &'static str> {
    if name.contains('\\') || name.chars().any(char::is_control) {
        return Err("backslashes and control characters are refused in names");
    }
    let mut path = PathBuf::new();
    for component in Path::new(name).components() {
        match component {
            Component::Normal(part) => path.push(part),
            Component::CurDir => {}
            Component::ParentDir => {
                return Err("`..` is refused: it could write outside the folder");
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err("absolute paths are refused");
            }
        }
    }
    if path.as_os_str().is_empty() {
        return Err("an empty path is refused");
    }
    Ok(path)
}

#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) -> Result<(), OciError> {
    use std::os::unix::fs::PermissionsExt as _;
    let mode = if mode & 0o111 != 0 { 0o755 } else { 0o644 };
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| OciError::io(path, e))
}

#[cfg(not(unix))]
fn set_mode(_: &Path, _: u32) -> Result<(), OciError> {
    Ok(())
}

/// The artifact of folder `dir`: the empty config, one gzip tar layer titled `title`, the
/// artifact type of `kind`, and `annotations` (no creation time is added, so the digest
/// depends only on the files and the annotations).
pub fn tree_artifact(
    kind: TreeKind,
    dir: &Path,
    title: &str,
    annotations: Annotations,
) -> Result<Artifact, OciError> {
    let layer = pack(dir)?;
    let mut layer_annotations = Annotations::new();
    layer_annotations.insert(ANNOTATION_TITLE.to_owned(), title.to_owned());
    Ok(Artifact::builder(kind.artifact_type())
        .layer(LAYER_TAR_GZIP, layer, layer_annotations)
        .annotations(annotations)
        .build())
}

/// The tar layer of a pulled folder artifact of `kind`, after checking its layout. As with
/// [`read_wasm_artifact`](crate::read_wasm_artifact), the blobs are taken as verified by the
/// pull or layout read that produced the artifact.
pub fn read_tree_artifact(artifact: &Artifact, kind: TreeKind) -> Result<Bytes, OciError> {
    let wrong = |reason: String| OciError::NotAnArtifact {
        reference: artifact.digest().to_string(),
        expected: format!("a {} artifact", kind.artifact_type()),
        reason,
    };
    let manifest = &artifact.manifest.manifest;
    if manifest.effective_artifact_type() != kind.artifact_type() {
        return Err(wrong(format!(
            "its artifact type is {}",
            manifest.effective_artifact_type()
        )));
    }
    let [layer] = artifact.layers() else {
        return Err(wrong(format!(
            "it has {} layers, not exactly one",
            manifest.layers.len()
        )));
    };
    if layer.descriptor.media_type != LAYER_TAR_GZIP {
        return Err(wrong(format!(
            "its layer is {}, not {LAYER_TAR_GZIP}",
            layer.descriptor.media_type
        )));
    }
    Ok(layer.bytes.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hostile_tar(entries: &[(&str, tar::EntryType, &[u8], Option<&str>)]) -> Vec<u8> {
        let encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let mut builder = tar::Builder::new(encoder);
        for (name, kind, data, link) in entries {
            let mut header = tar::Header::new_gnu();
            header.set_entry_type(*kind);
            header.set_size(data.len() as u64);
            header.set_mode(0o644);
            // Write the name bytes raw: `append_data` would refuse `..` and absolute paths.
            let raw = name.as_bytes();
            header.as_old_mut().name[..raw.len()].copy_from_slice(raw);
            if let Some(link) = link {
                header.set_link_name(link).unwrap();
            }
            header.set_cksum();
            builder.append(&header, *data).unwrap();
        }
        builder.into_inner().unwrap().finish().unwrap()
    }

    fn refused(layer: &[u8], limits: &UnpackLimits) -> OciError {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("out");
        let error = unpack(layer, &dest, limits).unwrap_err();
        assert!(!dest.exists(), "a refused layer left {}", dest.display());
        error
    }

    #[test]
    fn packing_is_deterministic_and_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src/lib")).unwrap();
        std::fs::write(dir.path().join("mod.ts"), "export {}\n").unwrap();
        std::fs::write(dir.path().join("src/lib/a.ts"), "a").unwrap();
        let first = pack(dir.path()).unwrap();
        // Touch a file's time: the layer does not change.
        std::fs::write(dir.path().join("mod.ts"), "export {}\n").unwrap();
        assert_eq!(pack(dir.path()).unwrap(), first);
        let out = tempfile::tempdir().unwrap();
        let dest = out.path().join("p");
        let unpacked = unpack(&first, &dest, &UnpackLimits::default()).unwrap();
        assert_eq!(
            unpacked,
            Unpacked {
                files: 2,
                bytes: 11
            }
        );
        assert_eq!(
            std::fs::read_to_string(dest.join("src/lib/a.ts")).unwrap(),
            "a"
        );
        let names: Vec<String> = tar::Archive::new(flate2::read::GzDecoder::new(&first[..]))
            .entries()
            .unwrap()
            .map(|e| e.unwrap().path().unwrap().display().to_string())
            .collect();
        assert_eq!(names, ["mod.ts", "src/", "src/lib/", "src/lib/a.ts"]);
    }

    #[test]
    fn tar_entry_with_parent_traversal_is_refused() {
        let layer = hostile_tar(&[("../evil.sh", tar::EntryType::Regular, b"x", None)]);
        assert!(matches!(
            refused(&layer, &UnpackLimits::default()),
            OciError::Archive { .. }
        ));
        let nested = hostile_tar(&[("a/../../evil", tar::EntryType::Regular, b"x", None)]);
        assert!(matches!(
            refused(&nested, &UnpackLimits::default()),
            OciError::Archive { .. }
        ));
    }

    #[test]
    fn tar_entry_with_absolute_path_is_refused() {
        let layer = hostile_tar(&[("/tmp/evil", tar::EntryType::Regular, b"x", None)]);
        assert!(matches!(
            refused(&layer, &UnpackLimits::default()),
            OciError::Archive { .. }
        ));
    }

    #[test]
    fn tar_links_are_refused_before_anything_is_written_through_them() {
        let symlink = hostile_tar(&[
            ("escape", tar::EntryType::Symlink, b"", Some("/etc")),
            ("escape/passwd", tar::EntryType::Regular, b"x", None),
        ]);
        assert!(matches!(
            refused(&symlink, &UnpackLimits::default()),
            OciError::Archive { .. }
        ));
        let hardlink = hostile_tar(&[("h", tar::EntryType::Link, b"", Some("/etc/shadow"))]);
        assert!(matches!(
            refused(&hardlink, &UnpackLimits::default()),
            OciError::Archive { .. }
        ));
    }

    #[test]
    fn tar_devices_and_fifos_are_refused() {
        for kind in [
            tar::EntryType::Char,
            tar::EntryType::Block,
            tar::EntryType::Fifo,
        ] {
            let layer = hostile_tar(&[("dev", kind, b"", None)]);
            assert!(matches!(
                refused(&layer, &UnpackLimits::default()),
                OciError::Archive { .. }
            ));
        }
    }

    #[test]
    fn tar_size_bombs_are_refused() {
        let big = vec![0u8; 4096];
        let layer = hostile_tar(&[
            ("a", tar::EntryType::Regular, &big, None),
            ("b", tar::EntryType::Regular, &big, None),
        ]);
        let small = UnpackLimits {
            max_bytes: 6000,
            ..UnpackLimits::default()
        };
        assert!(matches!(refused(&layer, &small), OciError::TooLarge { .. }));
        let few = UnpackLimits {
            max_entries: 1,
            ..UnpackLimits::default()
        };
        assert!(matches!(refused(&layer, &few), OciError::TooLarge { .. }));
    }

    /// One pax record, `"<length> <key>=<value>\n"`, its length counting itself.
    fn pax_record(key: &str, value: &[u8]) -> Vec<u8> {
        let body = key.len() + value.len() + 3;
        let mut length = body + body.to_string().len();
        if length.to_string().len() != body.to_string().len() {
            length += 1;
        }
        let mut record = format!("{length} {key}=").into_bytes();
        record.extend_from_slice(value);
        record.push(b'\n');
        assert_eq!(record.len(), length);
        record
    }

    #[test]
    fn data_hidden_in_extension_headers_or_skipped_entries_is_cut_at_the_stream_bound() {
        // A few kilobytes of gzip each: the tar reader would hold the pax comment and the long
        // name in memory whole and decompress the global header's data to skip it.
        let hidden = vec![b'a'; 8 * 1024 * 1024];
        let limits = UnpackLimits {
            max_bytes: 1024 * 1024,
            max_entries: 4,
            ..UnpackLimits::default()
        };
        assert!(limits.stream_bytes() < 2 * 1024 * 1024);
        let pax_comment = pax_record("comment", &hidden);
        let layers = [
            hostile_tar(&[
                ("pax", tar::EntryType::XHeader, &pax_comment, None),
                ("a", tar::EntryType::Regular, b"x", None),
            ]),
            hostile_tar(&[
                ("global", tar::EntryType::XGlobalHeader, &hidden, None),
                ("a", tar::EntryType::Regular, b"x", None),
            ]),
            hostile_tar(&[
                ("././@LongLink", tar::EntryType::GNULongName, &hidden, None),
                ("a", tar::EntryType::Regular, b"x", None),
            ]),
        ];
        for layer in &layers {
            assert!(layer.len() < 64 * 1024, "the bomb is {} bytes", layer.len());
            match refused(layer, &limits) {
                OciError::TooLarge { what, limit, .. } => {
                    assert!(what.contains("decompressed"), "{what}");
                    assert_eq!(limit, limits.stream_bytes());
                }
                other => panic!("refused as {other:?}, not by the stream bound"),
            }
        }
        // The bound leaves room for files up to `max_bytes` and every entry allowed.
        let full = vec![7u8; 1024 * 1024 - 3];
        let fits = hostile_tar(&[
            ("d/", tar::EntryType::Directory, b"", None),
            ("d/a", tar::EntryType::Regular, &full, None),
            ("b", tar::EntryType::Regular, b"xyz", None),
        ]);
        let dir = tempfile::tempdir().unwrap();
        let unpacked = unpack(&fits, &dir.path().join("out"), &limits).unwrap();
        assert_eq!(unpacked.bytes, 1024 * 1024);
    }

    #[test]
    fn a_pax_size_larger_than_the_headers_is_the_size_checked() {
        // The ustar header says 0 bytes, the pax record 10,000: the reader reads 10,000, so
        // those are what the byte limit must count.
        let encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let mut builder = tar::Builder::new(encoder);
        let record = pax_record("size", b"10000");
        let mut pax = tar::Header::new_ustar();
        pax.set_entry_type(tar::EntryType::XHeader);
        pax.set_size(record.len() as u64);
        pax.set_path("pax").unwrap();
        pax.set_cksum();
        builder.append(&pax, record.as_slice()).unwrap();
        let mut file = tar::Header::new_ustar();
        file.set_entry_type(tar::EntryType::Regular);
        file.set_size(0);
        file.set_mode(0o644);
        file.set_path("big").unwrap();
        file.set_cksum();
        builder.append(&file, &[1u8; 10_000][..]).unwrap();
        let layer = builder.into_inner().unwrap().finish().unwrap();
        let small = UnpackLimits {
            max_bytes: 6000,
            ..UnpackLimits::default()
        };
        match refused(&layer, &small) {
            OciError::TooLarge { size, .. } => assert_eq!(size, 10_000),
            other => panic!("refused as {other:?}, not by the byte limit"),
        }
        // Under a limit that allows it, all 10,000 bytes are the file's.
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("out");
        unpack(&layer, &dest, &UnpackLimits::default()).unwrap();
        assert_eq!(std::fs::read(dest.join("big")).unwrap(), [1u8; 10_000]);
    }

    #[test]
    fn a_name_that_is_a_file_in_one_entry_and_a_folder_in_another_is_refused() {
        let file_then_inside = hostile_tar(&[
            ("a", tar::EntryType::Regular, b"1", None),
            ("a/b", tar::EntryType::Regular, b"2", None),
        ]);
        let folder_then_file = hostile_tar(&[
            ("d/", tar::EntryType::Directory, b"", None),
            ("d", tar::EntryType::Regular, b"1", None),
        ]);
        let file_then_folder = hostile_tar(&[
            ("f", tar::EntryType::Regular, b"1", None),
            ("f/", tar::EntryType::Directory, b"", None),
        ]);
        for layer in [file_then_inside, folder_then_file, file_then_folder] {
            refused(&layer, &UnpackLimits::default());
        }
    }

    #[test]
    fn tar_duplicate_entries_are_refused() {
        let layer = hostile_tar(&[
            ("a", tar::EntryType::Regular, b"1", None),
            ("a", tar::EntryType::Regular, b"2", None),
        ]);
        assert!(matches!(
            refused(&layer, &UnpackLimits::default()),
            OciError::Archive { .. }
        ));
    }

    #[test]
    fn packing_files_matches_packing_the_folder_that_holds_them() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src/lib")).unwrap();
        std::fs::write(dir.path().join("mod.ts"), "export {}\n").unwrap();
        std::fs::write(dir.path().join("src/lib/a.ts"), "a").unwrap();
        let files = [
            ("src/lib/a.ts".to_owned(), b"a".to_vec()),
            ("mod.ts".to_owned(), b"export {}\n".to_vec()),
        ];
        assert_eq!(pack_files(&files).unwrap(), pack(dir.path()).unwrap());
        let climbing = [("../x".to_owned(), b"x".to_vec())];
        assert!(matches!(
            pack_files(&climbing),
            Err(OciError::Archive { .. })
        ));
    }

    #[test]
    fn a_plain_tar_is_unpacked_under_the_same_checks() {
        let mut builder = tar::Builder::new(Vec::new());
        let mut header = tar::Header::new_ustar();
        header.set_size(2);
        header.set_mode(0o644);
        builder
            .append_data(&mut header, "a/b.txt", &b"hi"[..])
            .unwrap();
        let plain = builder.into_inner().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("out");
        unpack(&plain, &dest, &UnpackLimits::default()).unwrap();
        assert_eq!(std::fs::read(dest.join("a/b.txt")).unwrap(), b"hi");

        // The gzip layers' hostile cases, uncompressed.
        let gz = hostile_tar(&[("../evil", tar::EntryType::Regular, b"x", None)]);
        let mut raw = Vec::new();
        flate2::read::GzDecoder::new(&gz[..])
            .read_to_end(&mut raw)
            .unwrap();
        assert!(matches!(
            refused(&raw, &UnpackLimits::default()),
            OciError::Archive { .. }
        ));
    }

    #[test]
    fn tar_names_with_control_characters_or_too_deep_are_refused() {
        let layer = hostile_tar(&[("a\u{1b}[2Jb", tar::EntryType::Regular, b"x", None)]);
        assert!(matches!(
            refused(&layer, &UnpackLimits::default()),
            OciError::Archive { .. }
        ));
        let deep = hostile_tar(&[("a/b/c/d", tar::EntryType::Regular, b"x", None)]);
        let shallow = UnpackLimits {
            max_depth: 3,
            ..UnpackLimits::default()
        };
        assert!(matches!(refused(&deep, &shallow), OciError::Archive { .. }));
        let two = hostile_tar(&[
            ("a", tar::EntryType::Regular, b"1", None),
            ("b", tar::EntryType::Regular, b"2", None),
        ]);
        let one_file = UnpackLimits {
            max_files: 1,
            ..UnpackLimits::default()
        };
        assert!(matches!(
            refused(&two, &one_file),
            OciError::TooLarge { .. }
        ));
    }

    #[cfg(unix)]
    #[test]
    fn packing_refuses_a_symlink() {
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join("p")).unwrap();
        assert!(matches!(pack(dir.path()), Err(OciError::Archive { .. })));
    }
}
