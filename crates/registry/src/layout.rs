//! `kind = "dir"` over an OCI image layout: the air-gapped bundle `oras`, skopeo and crane read
//! and write (`oci-layout`, `index.json`, `blobs/sha256/…`), opened when the folder holds an
//! `oci-layout` file (else the folder is a signed catalog, [`crate::signed`]).
//!
//! ```toml
//! [registries.offline]
//! kind = "dir"
//! path = "/media/bundle"
//! keys = ["<publisher key id, confirmed with the publisher>"]
//! ```
//!
//! What it holds is what `index.json` lists: each image manifest whose artifact type is a
//! plugin (the standard Wasm artifact, or `application/vnd.bosun.plugin.v1`) or a skill, named
//! by its `org.opencontainers.image.title` and `.version` annotations (else by its
//! `org.opencontainers.image.ref.name`, `[…/]NAME:VERSION`). Install resolves an entry to its
//! manifest digest and reads the one layer by digest: `bosun-oci`'s [`Layout`] checks every
//! blob's size against its descriptor before reading it and its digest after, refuses links
//! (a blob, or `blobs/` itself) and never builds a path from anything but a checked digest.
//!
//! Trust is as for `kind = "oci"` ([`crate::oci`]): with keys pinned, an entry installs only
//! when a Bosun signature by one of them vouches for its manifest digest, name and version —
//! found as a manifest in `index.json` whose `subject` is it, or under `sha256-<hex>.sig`. The
//! repository a signature names is not compared: a layout holds what was copied from any
//! registry. With no key pinned the layout is unsigned (the digest comes from the same folder as
//! the bytes) and is shown as such everywhere, as Reef is. [`publish`] writes a plugin or skill
//! and its signature into a layout (creating it), so a bundle is made with
//! `bosun plugins publish PATH --to oci-layout:DIR`.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use bosun_oci::manifest::{ANNOTATION_REF_NAME, ANNOTATION_TITLE};
use bosun_oci::{Descriptor, Digest, Layout, ManifestBytes};
use chrono::{DateTime, Utc};

use crate::error::RegistryError;
use crate::fetch::Progress;
use crate::key::PrivateKey;
use crate::name::Requested;
use crate::publish::Prepared;
use crate::signature::{ANNOTATION_VERSION, MAX_CANDIDATES, SIGNATURE_ARTIFACT, SIGNATURE_LAYER};
use crate::source::{ArtifactKind, Claims, Signer, Source, Target};

/// Whether `path` is an OCI image layout (it holds an `oci-layout` file).
pub fn is_layout(path: &Path) -> bool {
    std::fs::symlink_metadata(path.join("oci-layout")).is_ok_and(|m| m.is_file())
}

/// A source reading an OCI image layout folder.
#[derive(Debug, Clone)]
pub struct LayoutSource {
    name: String,
    root: PathBuf,
    pinned: Vec<String>,
}

/// One manifest in the layout that is a plugin or skill.
struct Entry {
    kind: ArtifactKind,
    descriptor: Descriptor,
    manifest: ManifestBytes,
    name: String,
    version: semver::Version,
}

impl LayoutSource {
    /// The layout at `root`, trusted through signatures by `pinned` (unsigned when empty).
    pub fn new(name: &str, root: &Path, pinned: Vec<String>) -> Self {
        Self {
            name: name.to_owned(),
            root: root.to_owned(),
            pinned,
        }
    }

    fn layout(&self) -> Result<Layout, RegistryError> {
        Ok(Layout::open(&self.root)?)
    }

    /// Every plugin or skill manifest `index.json` lists, of `kind`. An entry that cannot be
    /// read or named is passed over (install names it precisely when asked for).
    fn entries_of(&self, layout: &Layout, kind: ArtifactKind) -> Result<Vec<Entry>, RegistryError> {
        let index = layout.index()?;
        let mut found = Vec::new();
        for descriptor in index
            .manifests
            .into_iter()
            .take(bosun_oci::layout::MAX_INDEX_ENTRIES)
        {
            if descriptor.artifact_type.as_deref() == Some(SIGNATURE_ARTIFACT) {
                continue;
            }
            let Ok(manifest) = layout.read_manifest(&descriptor) else {
                continue;
            };
            if kind_of(manifest.manifest.effective_artifact_type()) != Some(kind) {
                continue;
            }
            let Some((name, version)) = naming(&descriptor, &manifest) else {
                continue;
            };
            found.push(Entry {
                kind,
                descriptor,
                manifest,
                name,
                version,
            });
        }
        Ok(found)
    }

    /// The target `entry` is: vouched for by a signature by a pinned key, or (no key pinned)
    /// unsigned, described by its own annotations.
    fn target(&self, layout: &Layout, entry: &Entry) -> Result<Target, RegistryError> {
        let location = entry.manifest.digest.to_string();
        if self.pinned.is_empty() {
            return self.unsigned(entry, location);
        }
        let version = entry.version.to_string();
        let mut last = None;
        for candidate in layout
            .signatures(&entry.manifest.digest, SIGNATURE_ARTIFACT)?
            .into_iter()
            .take(MAX_CANDIDATES)
        {
            let checked = layout
                .read_artifact_at(&candidate)
                .map_err(RegistryError::from)
                .and_then(|artifact| {
                    crate::signature::verify_signature(
                        &artifact,
                        entry.kind,
                        None,
                        &entry.manifest.digest,
                        (&entry.name, &version),
                        &self.pinned,
                    )
                });
            match checked {
                Ok(vouched) => return Ok(vouched.target(location)),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or(RegistryError::Threshold {
            role: format!(
                "oci-signature of {} {version} ({}) in {}",
                entry.name,
                entry.manifest.digest,
                self.root.display()
            ),
            valid: 0,
            threshold: 1,
        }))
    }

    fn unsigned(&self, entry: &Entry, location: String) -> Result<Target, RegistryError> {
        let layer = match entry.manifest.manifest.layers.as_slice() {
            [layer] => layer,
            _ => {
                return Err(RegistryError::malformed(
                    "oci-layout",
                    format!("{} has more than one layer", entry.descriptor.digest),
                ));
            }
        };
        let file = layer
            .annotation(ANNOTATION_TITLE)
            .filter(|f| crate::artifact::is_artifact_file(f))
            .or_else(|| (layer.media_type == bosun_oci::wasm::WASM_LAYER).then_some("plugin.wasm"))
            .ok_or_else(|| {
                RegistryError::malformed(
                    "oci-layout",
                    format!(
                        "the layer of {} is not titled as a file a plugin travels as",
                        entry.descriptor.digest
                    ),
                )
            })?;
        let description = entry
            .manifest
            .manifest
            .annotation("org.opencontainers.image.description")
            .unwrap_or_default()
            .to_owned();
        Ok(Target {
            kind: entry.kind,
            claims: Claims {
                name: entry.name.clone(),
                version: entry.version.to_string(),
                description,
                ..Claims::default()
            },
            length: Some(layer.size),
            sha256: layer.digest.hex().to_owned(),
            file: file.to_owned(),
            location,
            signer: Signer::Unsigned {
                origin: self.root.display().to_string(),
            },
        })
    }

    /// The key ids whose signatures the layout holds (each checked against the key it names),
    /// for a person to compare with the publisher's before `bosun registry trust` pins them.
    pub fn signer_keyids(&self) -> Result<Vec<String>, RegistryError> {
        let layout = self.layout()?;
        let mut ids = std::collections::BTreeSet::new();
        for descriptor in layout
            .index()?
            .manifests
            .into_iter()
            .take(bosun_oci::layout::MAX_INDEX_ENTRIES)
        {
            if descriptor
                .artifact_type
                .as_deref()
                .is_some_and(|t| t != SIGNATURE_ARTIFACT)
            {
                continue;
            }
            let Ok(artifact) = layout.read_artifact_at(&descriptor) else {
                continue;
            };
            if let [layer] = artifact.layers()
                && artifact.manifest.manifest.effective_artifact_type() == SIGNATURE_ARTIFACT
                && layer.descriptor.media_type == SIGNATURE_LAYER
            {
                ids.extend(crate::signature::self_signed_keyids(&layer.bytes));
            }
        }
        Ok(ids.into_iter().collect())
    }
}

/// Plugin or skill, by artifact type.
fn kind_of(artifact_type: &str) -> Option<ArtifactKind> {
    match artifact_type {
        bosun_oci::wasm::WASM_CONFIG | bosun_oci::tarball::PLUGIN_ARTIFACT => {
            Some(ArtifactKind::Plugin)
        }
        bosun_oci::tarball::SKILL_ARTIFACT => Some(ArtifactKind::Skill),
        _ => None,
    }
}

/// An entry's name and version: its manifest's title and version annotations, else its
/// `ref.name` (`[…/]NAME:VERSION`). Both checked as every name and version is.
fn naming(descriptor: &Descriptor, manifest: &ManifestBytes) -> Option<(String, semver::Version)> {
    let annotated = manifest
        .manifest
        .annotation(ANNOTATION_TITLE)
        .zip(manifest.manifest.annotation(ANNOTATION_VERSION));
    let (name, version) = match annotated {
        Some((name, version)) => (name.to_owned(), version.to_owned()),
        None => {
            let reference = descriptor.annotation(ANNOTATION_REF_NAME)?;
            let (repository, version) = reference.rsplit_once(':')?;
            let name = repository.rsplit('/').next()?;
            (name.to_owned(), version.to_owned())
        }
    };
    crate::name::check_name(&name).ok()?;
    let version = crate::name::parse_version(&version).ok()?;
    Some((name, version))
}

#[async_trait]
impl Source for LayoutSource {
    fn name(&self) -> &str {
        &self.name
    }

    fn label(&self) -> String {
        if self.pinned.is_empty() {
            "unsigned: checksum from the same origin (an OCI layout folder)".to_owned()
        } else {
            "signed (OCI layout signatures by a pinned key)".to_owned()
        }
    }

    /// What the layout holds; with keys pinned, only what a signature by one vouches for.
    async fn entries(
        &self,
        kind: ArtifactKind,
        _now: DateTime<Utc>,
    ) -> Result<Vec<Target>, RegistryError> {
        let layout = self.layout()?;
        Ok(self
            .entries_of(&layout, kind)?
            .iter()
            .filter_map(|entry| self.target(&layout, entry).ok())
            .collect())
    }

    async fn resolve(
        &self,
        kind: ArtifactKind,
        requested: &Requested,
        _now: DateTime<Utc>,
    ) -> Result<Target, RegistryError> {
        let layout = self.layout()?;
        let mut named: Vec<Entry> = self
            .entries_of(&layout, kind)?
            .into_iter()
            .filter(|e| e.name == requested.name)
            .collect();
        named.sort_by(|a, b| a.version.cmp(&b.version));
        let chosen = match &requested.version {
            Some(wanted) => named.iter().rev().find(|e| &e.version == wanted),
            None => named
                .iter()
                .rev()
                .find(|e| e.version.pre.is_empty())
                .or(named.last()),
        };
        let entry = chosen.ok_or_else(|| RegistryError::NotFound {
            what: format!(
                "`{requested}` in the OCI layout `{}` ({})",
                self.name,
                self.root.display()
            ),
        })?;
        self.target(&layout, entry)
    }

    async fn fetch(
        &self,
        target: &Target,
        progress: &dyn Progress,
    ) -> Result<Vec<u8>, RegistryError> {
        let layout = self.layout()?;
        let digest: Digest = target.location.parse().map_err(bosun_oci::OciError::from)?;
        let descriptor = layout
            .index()?
            .manifests
            .into_iter()
            .find(|d| d.digest == digest)
            .ok_or_else(|| RegistryError::NotFound {
                what: format!(
                    "the manifest {digest} in {}'s index.json",
                    self.root.display()
                ),
            })?;
        let manifest = layout.read_manifest(&descriptor)?;
        let layer = manifest
            .manifest
            .layers
            .iter()
            .find(|l| l.digest.hex() == target.sha256 && Some(l.size) == target.length)
            .ok_or_else(|| RegistryError::NotFound {
                what: format!("the layer sha256:{} in {digest}", target.sha256),
            })?;
        progress.start(&target.file, Some(layer.size));
        let read = layout.read_blob(layer, bosun_oci::Limits::default().blob_bytes);
        if let Ok(bytes) = &read {
            progress.advance(bytes.len() as u64);
        }
        progress.finish();
        Ok(read?)
    }
}

/// What [`publish`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishedLayout {
    /// The name it is listed under in `index.json` (`NAME:VERSION`, `skills/NAME:VERSION`).
    pub reference: String,
    /// The manifest's digest.
    pub manifest: Digest,
    /// The signature artifact's digest.
    pub signature: Digest,
    /// What it declares.
    pub claims: Claims,
}

/// Writes a prepared plugin or skill (`kind`) into the layout at `root` (created if absent) as
/// the artifact an OCI registry would hold, listed as `NAME:VERSION` (`skills/NAME:VERSION`),
/// and its signature by `key` as a manifest whose subject it is. A version already there is
/// never replaced.
pub fn publish(
    root: &Path,
    kind: ArtifactKind,
    prepared: Prepared,
    key: &PrivateKey,
) -> Result<PublishedLayout, RegistryError> {
    let claims = prepared.claims;
    crate::name::parse_version(&claims.version)?;
    let repository = crate::signature::repository("", kind, &claims.name)?;
    let reference = format!("{repository}:{}", claims.version);
    let occupied = std::fs::read_dir(root).is_ok_and(|mut d| d.next().is_some());
    if occupied && !is_layout(root) {
        return Err(RegistryError::Config {
            source_name: root.display().to_string(),
            message: "the folder is not empty and is not an OCI image layout (no oci-layout file): name an empty or new folder, or an existing layout".to_owned(),
        });
    }
    let layout = Layout::create(root)?;
    let taken = layout.index()?.manifests.into_iter().find(|d| {
        d.annotation(ANNOTATION_REF_NAME) == Some(reference.as_str())
            || layout.read_manifest(d).is_ok_and(|m| {
                kind_of(m.manifest.effective_artifact_type()) == Some(kind)
                    && naming(d, &m)
                        .is_some_and(|(n, v)| n == claims.name && v.to_string() == claims.version)
            })
    });
    if let Some(existing) = taken {
        return Err(RegistryError::Config {
            source_name: root.display().to_string(),
            message: format!(
                "{reference} is already in the layout ({}): a published version is never replaced; raise the version",
                existing.digest
            ),
        });
    }
    let (artifact, file) =
        crate::signature::plugin_artifact(kind, prepared.file, prepared.bytes, &claims)?;
    let layer = artifact.layers()[0].descriptor.clone();
    let signature = crate::signature::signature_artifact(
        kind,
        repository.as_str(),
        &artifact,
        file,
        &layer,
        &claims,
        key,
    )?;
    // The signature first: stopped between the two, the layout holds a signature of nothing
    // (harmless), never an entry without its signature that blocks publishing it again.
    let signature = layout.write_artifact(&signature, None)?;
    let manifest = layout.write_artifact(&artifact, Some(&reference))?;
    Ok(PublishedLayout {
        reference,
        manifest: manifest.digest,
        signature: signature.digest,
        claims,
    })
}
