//! The OCI image layout (image-spec v1.1.0 `image-layout.md`): a folder with `oci-layout`,
//! `index.json` and `blobs/sha256/<hex>`, which `oras`, skopeo and crane read and write. Bosun
//! uses it for the air-gapped `dir` bundle. A layout is treated as hostile input: blob paths
//! are built only from checked digests, `blobs` and `blobs/sha256` must be real folders (not
//! links out of the layout), every blob is size-checked before it is read and digest-checked
//! after, and writes go through a temporary file renamed into place. What refers to a manifest
//! (a signature) is found as the image spec has it in a layout: a manifest listed in
//! `index.json` whose `subject` is that manifest, or the one named `sha256-<hex>.sig`.

use std::path::{Path, PathBuf};

use crate::artifact::{Artifact, Blob};
use crate::client::Limits;
use crate::digest::Digest;
use crate::error::OciError;
use crate::manifest::{
    ANNOTATION_REF_NAME, DOCKER_MANIFEST_V2, Descriptor, Index, MANIFEST_V1, Manifest,
    ManifestBytes,
};

/// The most `index.json` entries looked through for what refers to a manifest.
pub const MAX_INDEX_ENTRIES: usize = 10_000;

/// The `oci-layout` file's content.
const LAYOUT_VERSION: &str = r#"{"imageLayoutVersion":"1.0.0"}"#;

/// An image layout folder.
#[derive(Debug, Clone)]
pub struct Layout {
    root: PathBuf,
    limits: Limits,
}

impl Layout {
    /// Creates the layout at `root` (or opens it if it is one already).
    pub fn create(root: &Path) -> Result<Self, OciError> {
        let blobs = root.join("blobs/sha256");
        std::fs::create_dir_all(&blobs).map_err(|e| OciError::io(&blobs, e))?;
        let layout = Self {
            root: root.to_owned(),
            limits: Limits::default(),
        };
        let marker = root.join("oci-layout");
        if !marker.exists() {
            layout.write_atomically(&marker, LAYOUT_VERSION.as_bytes())?;
        }
        {
            // Under the index's lock: another process's push a moment before is not replaced
            // by an empty index.
            let _lock = layout.lock_index()?;
            if !root.join("index.json").exists() {
                layout.write_index(&Index::default())?;
            }
        }
        Self::open(root)
    }

    /// Opens the layout at `root`, checking its `oci-layout` version.
    pub fn open(root: &Path) -> Result<Self, OciError> {
        let marker = root.join("oci-layout");
        let text = read_small(&marker, 4096)?;
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Version {
            image_layout_version: String,
        }
        let version: Version = serde_json::from_slice(&text).map_err(|e| OciError::Layout {
            path: marker.clone(),
            reason: format!("oci-layout does not parse: {e}"),
        })?;
        if version.image_layout_version != "1.0.0" {
            return Err(OciError::Layout {
                path: marker,
                reason: format!(
                    "imageLayoutVersion is {}; only 1.0.0 is read",
                    version.image_layout_version
                ),
            });
        }
        Ok(Self {
            root: root.to_owned(),
            limits: Limits::default(),
        })
    }

    /// The same layout with other size limits for reading.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `index.json`.
    pub fn index(&self) -> Result<Index, OciError> {
        let path = self.root.join("index.json");
        let bytes = read_small(&path, self.limits.manifest_bytes)?;
        Index::from_slice(&path.display().to_string(), &bytes)
    }

    /// The manifest named `name` (its `org.opencontainers.image.ref.name`) in `index.json`.
    pub fn resolve(&self, name: &str) -> Result<Descriptor, OciError> {
        self.index()?
            .manifests
            .into_iter()
            .find(|d| d.annotation(ANNOTATION_REF_NAME) == Some(name))
            .ok_or_else(|| OciError::NotFound {
                url: self.root.join("index.json").display().to_string(),
                detail: format!("no manifest is named `{name}`"),
            })
    }

    fn blob_path(&self, digest: &Digest) -> PathBuf {
        self.root.join("blobs/sha256").join(digest.hex())
    }

    /// Writes a blob (skipped when a file with the right content is there): its digest.
    pub fn write_blob(&self, bytes: &[u8]) -> Result<Digest, OciError> {
        let digest = Digest::of(bytes);
        let path = self.blob_path(&digest);
        let present = std::fs::symlink_metadata(&path)
            .is_ok_and(|m| m.is_file() && m.len() == bytes.len() as u64)
            && bosun_fsio::read_regular(&path, bytes.len() as u64)
                .is_ok_and(|b| Digest::of(&b) == digest);
        if !present {
            self.write_atomically(&path, bytes)?;
        }
        Ok(digest)
    }

    /// Refuses a layout whose `blobs` or `blobs/sha256` is not a real folder inside it (a
    /// link would let a blob path leave the layout).
    fn check_blob_folders(&self) -> Result<(), OciError> {
        for folder in ["blobs", "blobs/sha256"] {
            let path = self.root.join(folder);
            let metadata = std::fs::symlink_metadata(&path).map_err(|e| OciError::io(&path, e))?;
            if !metadata.is_dir() {
                return Err(OciError::Layout {
                    path,
                    reason: format!(
                        "`{folder}` must be a folder inside the layout, not a link or a file"
                    ),
                });
            }
        }
        Ok(())
    }

    /// Reads the blob `descriptor` names: a regular file of exactly its size (at most `cap`)
    /// whose digest matches.
    pub fn read_blob(&self, descriptor: &Descriptor, cap: u64) -> Result<Vec<u8>, OciError> {
        self.check_blob_folders()?;
        let path = self.blob_path(&descriptor.digest);
        let what = format!("blob {} in {}", descriptor.digest, self.root.display());
        if descriptor.size > cap {
            return Err(OciError::TooLarge {
                what,
                limit: cap,
                size: descriptor.size,
            });
        }
        let metadata = std::fs::symlink_metadata(&path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => OciError::NotFound {
                url: path.display().to_string(),
                detail: format!("the layout lacks {what}"),
            },
            _ => OciError::io(&path, e),
        })?;
        if !metadata.is_file() {
            return Err(OciError::Layout {
                path,
                reason: "a blob must be a regular file, not a link or a folder".to_owned(),
            });
        }
        if metadata.len() != descriptor.size {
            return Err(OciError::LengthMismatch {
                what,
                declared: descriptor.size,
                received: metadata.len(),
            });
        }
        let bytes = read_small(&path, descriptor.size)?;
        let actual = Digest::of(&bytes);
        if actual != descriptor.digest || bytes.len() as u64 != descriptor.size {
            return Err(OciError::DigestMismatch {
                what,
                expected: descriptor.digest.clone(),
                actual,
            });
        }
        Ok(bytes)
    }

    /// Writes an artifact's blobs and manifest, and lists it in `index.json` under `name` when
    /// given (replacing what had that name). Returns the manifest's descriptor.
    pub fn write_artifact(
        &self,
        artifact: &Artifact,
        name: Option<&str>,
    ) -> Result<Descriptor, OciError> {
        artifact.check()?;
        for blob in &artifact.blobs {
            self.write_blob(&blob.bytes)?;
        }
        self.write_blob(&artifact.manifest.bytes)?;
        let mut descriptor = artifact.manifest.descriptor();
        descriptor.annotations = None;
        // Read, changed and written under the index's lock: two pushes into one layout (two
        // `bosun registry publish`, a publish beside a mirror) each keep the other's entry.
        let _lock = self.lock_index()?;
        let mut index = self.index()?;
        match name {
            Some(name) => {
                index
                    .manifests
                    .retain(|d| d.annotation(ANNOTATION_REF_NAME) != Some(name));
                descriptor.annotations = Some(
                    [(ANNOTATION_REF_NAME.to_owned(), name.to_owned())]
                        .into_iter()
                        .collect(),
                );
                index.manifests.push(descriptor.clone());
            }
            None => {
                if !index
                    .manifests
                    .iter()
                    .any(|d| d.digest == descriptor.digest)
                {
                    index.manifests.push(descriptor.clone());
                }
            }
        }
        self.write_index(&index)?;
        Ok(descriptor)
    }

    /// The artifact whose manifest has `digest`, every blob checked.
    pub fn read_artifact(&self, digest: &Digest) -> Result<Artifact, OciError> {
        let path = self.blob_path(digest);
        let size = std::fs::symlink_metadata(&path)
            .map_err(|e| OciError::io(&path, e))?
            .len();
        let mut descriptor = Descriptor::of(MANIFEST_V1, b"");
        descriptor.digest = digest.clone();
        descriptor.size = size;
        self.read_artifact_at(&descriptor)
    }

    /// The manifest `descriptor` (an `index.json` entry, a subject) names: its blob checked
    /// against the descriptor's size and digest, then parsed. An index is not a manifest.
    pub fn read_manifest(&self, descriptor: &Descriptor) -> Result<ManifestBytes, OciError> {
        if descriptor.media_type != MANIFEST_V1 && descriptor.media_type != DOCKER_MANIFEST_V2 {
            return Err(OciError::Malformed {
                what: format!("{} in {}", descriptor.digest, self.root.display()),
                reason: format!(
                    "its media type is {}, not an image manifest",
                    descriptor.media_type
                ),
            });
        }
        let bytes = self.read_blob(descriptor, self.limits.manifest_bytes)?;
        let manifest = Manifest::from_slice(&bytes)?;
        Ok(ManifestBytes {
            manifest,
            bytes,
            digest: descriptor.digest.clone(),
        })
    }

    /// The artifact whose manifest `descriptor` names, every blob checked against its
    /// descriptor (size first, then digest) and the layers' total capped.
    pub fn read_artifact_at(&self, descriptor: &Descriptor) -> Result<Artifact, OciError> {
        let manifest = self.read_manifest(descriptor)?;
        let digest = &manifest.digest;
        let total: u64 = manifest
            .manifest
            .layers
            .iter()
            .fold(0u64, |sum, l| sum.saturating_add(l.size));
        if total > self.limits.blob_bytes {
            return Err(OciError::TooLarge {
                what: format!("the layers of {digest}"),
                limit: self.limits.blob_bytes,
                size: total,
            });
        }
        let config = &manifest.manifest.config;
        let mut blobs = vec![Blob {
            descriptor: config.clone(),
            bytes: self.read_blob(config, self.limits.manifest_bytes)?.into(),
        }];
        for layer in &manifest.manifest.layers {
            blobs.push(Blob {
                descriptor: layer.clone(),
                bytes: self.read_blob(layer, self.limits.blob_bytes)?.into(),
            });
        }
        Ok(Artifact { manifest, blobs })
    }

    /// What may be a signature of `subject`, of `artifact_type`: each manifest in `index.json`
    /// whose `subject` is `subject` (read to see; entries whose descriptor says another
    /// artifact type are skipped unread), then the one named `sha256-<hex>.sig` when it is not
    /// among them. Candidates only: the caller verifies each. Entries that cannot be read are
    /// passed over, so a broken entry cannot hide a good signature.
    pub fn signatures(
        &self,
        subject: &Digest,
        artifact_type: &str,
    ) -> Result<Vec<Descriptor>, OciError> {
        let index = self.index()?;
        let tag = subject.signature_tag();
        let mut found: Vec<Descriptor> = Vec::new();
        for entry in index.manifests.iter().take(MAX_INDEX_ENTRIES) {
            if entry.digest == *subject
                || entry
                    .artifact_type
                    .as_deref()
                    .is_some_and(|t| t != artifact_type)
            {
                continue;
            }
            let Ok(manifest) = self.read_manifest(entry) else {
                continue;
            };
            let refers = manifest
                .manifest
                .subject
                .as_ref()
                .is_some_and(|s| s.digest == *subject);
            if refers && manifest.manifest.effective_artifact_type() == artifact_type {
                found.push(entry.clone());
            }
        }
        if let Some(tagged) = index
            .manifests
            .iter()
            .find(|d| d.annotation(ANNOTATION_REF_NAME) == Some(tag.as_str()))
            && !found.iter().any(|d| d.digest == tagged.digest)
        {
            found.push(tagged.clone());
        }
        Ok(found)
    }

    /// The sidecar lock of `index.json` (`.index.json.lock`, as Bosun locks its own state
    /// files), held by whoever reads, changes and writes the index.
    fn lock_index(&self) -> Result<bosun_fsio::lock::StateLock, OciError> {
        let path = self.root.join("index.json");
        bosun_fsio::lock::lock(&path).map_err(|e| OciError::io(&path, e))
    }

    fn write_index(&self, index: &Index) -> Result<(), OciError> {
        self.write_atomically(&self.root.join("index.json"), &index.to_vec())
    }

    /// Writes `bytes` to a temporary file beside `path` (created exclusively under an
    /// unpredictable name, so a link planted at a temporary's name is never written through),
    /// syncs it and renames it over `path` ([`bosun_fsio::write_atomic_with_mode`]). A layout's
    /// files are readable by others, as any layout's.
    fn write_atomically(&self, path: &Path, bytes: &[u8]) -> Result<(), OciError> {
        bosun_fsio::write_atomic_with_mode(path, bytes, 0o644).map_err(|e| OciError::io(path, e))
    }
}

/// Reads a file of at most `cap` bytes, refusing a bigger one without reading it all. A layout
/// is a folder someone else filled (a bundle carried in), so the file must be a regular one:
/// a link is not followed and a FIFO or a device is refused without waiting on it.
fn read_small(path: &Path, cap: u64) -> Result<Vec<u8>, OciError> {
    bosun_fsio::read_regular(path, cap).map_err(|e| layout_error(e, cap))
}

/// A refused read of a layout file as the layout's error.
fn layout_error(error: bosun_fsio::OpenError, cap: u64) -> OciError {
    match error {
        bosun_fsio::OpenError::NotRegular { path, found } => OciError::Layout {
            path,
            reason: format!(
                "is {found}: it must be a regular file, not a link, a FIFO or a device; copy the layout again"
            ),
        },
        bosun_fsio::OpenError::TooLarge { path, bound } => OciError::TooLarge {
            what: path.display().to_string(),
            limit: bound,
            size: cap.saturating_add(1),
        },
        bosun_fsio::OpenError::Io { path, source } => OciError::io(&path, source),
        bosun_fsio::OpenError::NotText { path } => OciError::Layout {
            path,
            reason: "is not UTF-8 text".to_owned(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::Annotations;

    fn artifact() -> Artifact {
        Artifact::builder("application/vnd.example")
            .layer(
                "application/octet-stream",
                &b"layer"[..],
                Annotations::new(),
            )
            .build()
    }

    #[test]
    fn an_artifact_round_trips_through_a_layout() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::create(dir.path()).unwrap();
        let written = artifact();
        let descriptor = layout.write_artifact(&written, Some("1.0.0")).unwrap();
        let reopened = Layout::open(dir.path()).unwrap();
        assert_eq!(reopened.resolve("1.0.0").unwrap().digest, descriptor.digest);
        assert_eq!(reopened.read_artifact(&descriptor.digest).unwrap(), written);
        // Naming another artifact 1.0.0 replaces the entry.
        let other = Artifact::builder("application/vnd.example").build();
        layout.write_artifact(&other, Some("1.0.0")).unwrap();
        assert_eq!(layout.index().unwrap().manifests.len(), 1);
    }

    /// Pushes into one layout from many threads at once (as from many processes: each opens
    /// the layout itself) keep every entry: the index is read, changed and written under its
    /// lock (before, each push wrote back the index it had read, dropping the others').
    #[test]
    fn concurrent_pushes_into_one_layout_keep_every_entry() {
        let dir = tempfile::tempdir().unwrap();
        Layout::create(dir.path()).unwrap();
        let writers = 8;
        let rounds = 10;
        let ready = std::sync::Arc::new(std::sync::Barrier::new(writers));
        let handles: Vec<_> = (0..writers)
            .map(|i| {
                let root = dir.path().to_owned();
                let ready = std::sync::Arc::clone(&ready);
                std::thread::spawn(move || {
                    let layout = Layout::open(&root).unwrap();
                    ready.wait();
                    for round in 0..rounds {
                        let name = format!("w{i}-{round}");
                        let artifact = Artifact::builder("application/vnd.example")
                            .layer(
                                "application/octet-stream",
                                name.clone().into_bytes(),
                                Annotations::new(),
                            )
                            .build();
                        layout.write_artifact(&artifact, Some(&name)).unwrap();
                    }
                })
            })
            .collect();
        for handle in handles {
            handle.join().unwrap();
        }
        let layout = Layout::open(dir.path()).unwrap();
        let mut names: Vec<String> = layout
            .index()
            .unwrap()
            .manifests
            .iter()
            .filter_map(|d| d.annotation(ANNOTATION_REF_NAME).map(str::to_owned))
            .collect();
        names.sort();
        let mut expected: Vec<String> = (0..writers)
            .flat_map(|i| (0..rounds).map(move |round| format!("w{i}-{round}")))
            .collect();
        expected.sort();
        assert_eq!(names, expected);
    }

    /// Runs `read` on a thread and waits for it; a read still blocked after a minute fails
    /// the test (and `fifo` is opened for writing to let the thread go).
    #[cfg(unix)]
    fn returns_without_waiting<T: Send + 'static>(
        fifo: &Path,
        read: impl FnOnce() -> T + Send + 'static,
    ) -> T {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(read());
        });
        match rx.recv_timeout(std::time::Duration::from_secs(60)) {
            Ok(value) => value,
            Err(_) => {
                let _ = std::fs::OpenOptions::new().write(true).open(fifo);
                panic!("reading the layout waited on the FIFO {}", fifo.display());
            }
        }
    }

    #[cfg(unix)]
    fn mkfifo(path: &Path) {
        let _ = std::fs::remove_file(path);
        let status = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(status.success());
    }

    #[cfg(unix)]
    #[test]
    fn a_layout_file_that_is_a_fifo_or_a_link_is_refused_without_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::create(dir.path()).unwrap();
        let descriptor = layout.write_artifact(&artifact(), Some("x")).unwrap();

        let index = dir.path().join("index.json");
        mkfifo(&index);
        let reading = layout.clone();
        let error = returns_without_waiting(&index, move || reading.index().unwrap_err());
        assert!(matches!(error, OciError::Layout { .. }), "{error}");
        assert!(error.to_string().contains("regular file"), "{error}");

        // A manifest blob swapped for a FIFO after its size was looked at: the same read.
        let blob = layout.blob_path(&descriptor.digest);
        mkfifo(&blob);
        let reading = layout.clone();
        let digest = descriptor.digest.clone();
        let error = returns_without_waiting(&blob, move || {
            read_small(&reading.blob_path(&digest), 4096).unwrap_err()
        });
        assert!(matches!(error, OciError::Layout { .. }), "{error}");

        let marker = dir.path().join("oci-layout");
        mkfifo(&marker);
        let root = dir.path().to_owned();
        let error = returns_without_waiting(&marker, move || Layout::open(&root).unwrap_err());
        assert!(matches!(error, OciError::Layout { .. }), "{error}");

        // A link in a file's place is not followed, wherever it points.
        let secret = dir.path().join("elsewhere.json");
        std::fs::write(&secret, LAYOUT_VERSION).unwrap();
        std::fs::remove_file(&marker).unwrap();
        std::os::unix::fs::symlink(&secret, &marker).unwrap();
        let error = Layout::open(dir.path()).unwrap_err();
        assert!(matches!(error, OciError::Layout { .. }), "{error}");
    }

    /// A layout may be a folder someone else can write to: a link planted at the name a
    /// writer's temporary file would have (once `.index.json.<pid>.tmp`) is never written
    /// through, and the index stays a regular file of the layout's own.
    #[test]
    fn a_link_planted_at_a_temporary_name_is_not_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::create(dir.path()).unwrap();
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("theirs");
        std::fs::write(&target, b"theirs").unwrap();
        let planted = dir
            .path()
            .join(format!(".index.json.{}.tmp", std::process::id()));
        std::os::unix::fs::symlink(&target, &planted).unwrap();
        let descriptor = layout.write_artifact(&artifact(), Some("x")).unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"theirs");
        let index = dir.path().join("index.json");
        assert!(index.symlink_metadata().unwrap().is_file());
        assert!(layout.read_artifact(&descriptor.digest).is_ok());
    }

    #[test]
    fn a_tampered_layout_blob_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::create(dir.path()).unwrap();
        let written = artifact();
        let descriptor = layout.write_artifact(&written, Some("x")).unwrap();
        let layer = &written.layers()[0].descriptor;
        let path = dir.path().join("blobs/sha256").join(layer.digest.hex());
        std::fs::write(&path, b"LAYER").unwrap();
        assert!(matches!(
            layout.read_artifact(&descriptor.digest),
            Err(OciError::DigestMismatch { .. })
        ));
        std::fs::write(&path, b"layer and more").unwrap();
        assert!(matches!(
            layout.read_artifact(&descriptor.digest),
            Err(OciError::LengthMismatch { .. })
        ));
    }

    #[test]
    fn a_signature_is_found_by_its_subject_and_by_the_sig_name() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::create(dir.path()).unwrap();
        let subject = layout.write_artifact(&artifact(), Some("1.0.0")).unwrap();
        assert!(
            layout
                .signatures(&subject.digest, "application/vnd.sig")
                .unwrap()
                .is_empty()
        );
        let by_subject = Artifact::builder("application/vnd.sig")
            .layer("application/json", &b"one"[..], Annotations::new())
            .subject(subject.clone())
            .build();
        let referrer = layout.write_artifact(&by_subject, None).unwrap();
        // Another type referring to it, and one of the type referring elsewhere: neither.
        let other_type = Artifact::builder("application/vnd.other")
            .subject(subject.clone())
            .build();
        layout.write_artifact(&other_type, None).unwrap();
        let elsewhere = Artifact::builder("application/vnd.sig")
            .subject(Descriptor::of(MANIFEST_V1, b"another manifest"))
            .build();
        layout.write_artifact(&elsewhere, None).unwrap();
        let tagged = Artifact::builder("application/vnd.sig")
            .layer("application/json", &b"two"[..], Annotations::new())
            .build();
        let tagged = layout
            .write_artifact(&tagged, Some(&subject.digest.signature_tag()))
            .unwrap();
        let found: Vec<Digest> = layout
            .signatures(&subject.digest, "application/vnd.sig")
            .unwrap()
            .into_iter()
            .map(|d| d.digest)
            .collect();
        assert_eq!(found, vec![referrer.digest, tagged.digest]);
    }

    #[test]
    fn a_layout_blob_bigger_than_its_descriptor_or_missing_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::create(dir.path()).unwrap();
        let written = artifact();
        let descriptor = layout.write_artifact(&written, Some("x")).unwrap();
        let layer = written.layers()[0].descriptor.clone();
        // A descriptor over the cap is refused before the file is opened.
        assert!(matches!(
            layout.read_blob(&layer, 2),
            Err(OciError::TooLarge { .. })
        ));
        let path = dir.path().join("blobs/sha256").join(layer.digest.hex());
        std::fs::remove_file(&path).unwrap();
        assert!(matches!(
            layout.read_artifact_at(&descriptor),
            Err(OciError::NotFound { .. })
        ));
    }

    #[cfg(unix)]
    #[test]
    fn a_blobs_folder_that_links_out_of_the_layout_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::create(&dir.path().join("bundle")).unwrap();
        let descriptor = layout.write_artifact(&artifact(), Some("x")).unwrap();
        let outside = dir.path().join("outside");
        std::fs::rename(dir.path().join("bundle/blobs/sha256"), &outside).unwrap();
        std::os::unix::fs::symlink(&outside, dir.path().join("bundle/blobs/sha256")).unwrap();
        assert!(matches!(
            layout.read_artifact_at(&descriptor),
            Err(OciError::Layout { .. })
        ));
    }

    #[cfg(unix)]
    #[test]
    fn a_layout_blob_that_is_a_link_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::create(dir.path()).unwrap();
        let written = artifact();
        let descriptor = layout.write_artifact(&written, None).unwrap();
        let layer = &written.layers()[0].descriptor;
        let path = dir.path().join("blobs/sha256").join(layer.digest.hex());
        let elsewhere = dir.path().join("elsewhere");
        std::fs::write(&elsewhere, b"layer").unwrap();
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
        assert!(matches!(
            layout.read_artifact(&descriptor.digest),
            Err(OciError::Layout { .. })
        ));
    }
}
