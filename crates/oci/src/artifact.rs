//! An artifact in memory: a manifest with the exact bytes it is pushed as, and its config and
//! layer blobs (OCI image-spec v1.1.0 "Guidelines for Artifact Usage"). The same value is
//! pushed to a registry, written to an image layout, and returned by a pull from either, so a
//! Wasm component or a plugin tarball travels one way everywhere.

use bytes::Bytes;

use crate::digest::Digest;
use crate::error::OciError;
use crate::manifest::{Annotations, Descriptor, EMPTY_JSON, MANIFEST_V1, Manifest, ManifestBytes};

/// One blob and its descriptor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blob {
    /// Media type, digest and size.
    pub descriptor: Descriptor,
    /// The bytes, whose digest is `descriptor.digest`.
    pub bytes: Bytes,
}

impl Blob {
    /// A blob of `bytes` with `media_type`.
    pub fn new(media_type: &str, bytes: impl Into<Bytes>) -> Self {
        let bytes = bytes.into();
        Self {
            descriptor: Descriptor::of(media_type, &bytes),
            bytes,
        }
    }
}

/// A manifest and its blobs: the config first, then the layers in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Artifact {
    /// The manifest and its bytes.
    pub manifest: ManifestBytes,
    /// The config, then each layer.
    pub blobs: Vec<Blob>,
}

impl Artifact {
    /// A builder of an artifact of `artifact_type`.
    pub fn builder(artifact_type: &str) -> ArtifactBuilder {
        ArtifactBuilder {
            artifact_type: artifact_type.to_owned(),
            config: None,
            layers: Vec::new(),
            annotations: Annotations::new(),
            subject: None,
        }
    }

    /// The manifest's digest.
    pub fn digest(&self) -> &Digest {
        &self.manifest.digest
    }

    /// The config blob.
    pub fn config(&self) -> Option<&Blob> {
        self.blobs.first()
    }

    /// The layer blobs.
    pub fn layers(&self) -> &[Blob] {
        self.blobs.get(1..).unwrap_or_default()
    }

    /// Checks that the blobs are exactly the manifest's config and layers, in order, each with
    /// the bytes its descriptor names (for an artifact assembled by hand or read from disk).
    pub fn check(&self) -> Result<(), OciError> {
        let manifest = &self.manifest.manifest;
        let expected: Vec<&Descriptor> = std::iter::once(&manifest.config)
            .chain(&manifest.layers)
            .collect();
        let what = format!("artifact {}", self.manifest.digest);
        if expected.len() != self.blobs.len() {
            return Err(OciError::Malformed {
                what,
                reason: format!(
                    "the manifest names {} blobs but {} are present",
                    expected.len(),
                    self.blobs.len()
                ),
            });
        }
        for (descriptor, blob) in expected.into_iter().zip(&self.blobs) {
            let actual = Digest::of(&blob.bytes);
            if actual != descriptor.digest {
                return Err(OciError::DigestMismatch {
                    what: format!("{what}: blob"),
                    expected: descriptor.digest.clone(),
                    actual,
                });
            }
            if blob.bytes.len() as u64 != descriptor.size {
                return Err(OciError::LengthMismatch {
                    what: format!("{what}: blob {}", descriptor.digest),
                    declared: descriptor.size,
                    received: blob.bytes.len() as u64,
                });
            }
        }
        Ok(())
    }
}

/// Builds an [`Artifact`].
#[derive(Debug, Clone)]
pub struct ArtifactBuilder {
    artifact_type: String,
    config: Option<Blob>,
    layers: Vec<Blob>,
    annotations: Annotations,
    subject: Option<Descriptor>,
}

impl ArtifactBuilder {
    /// The config blob (default: the empty JSON object, as the spec advises for artifacts with
    /// no config).
    pub fn config(mut self, media_type: &str, bytes: impl Into<Bytes>) -> Self {
        self.config = Some(Blob::new(media_type, bytes));
        self
    }

    /// Adds a layer, with annotations (such as `org.opencontainers.image.title`).
    pub fn layer(
        mut self,
        media_type: &str,
        bytes: impl Into<Bytes>,
        annotations: Annotations,
    ) -> Self {
        let mut blob = Blob::new(media_type, bytes);
        if !annotations.is_empty() {
            blob.descriptor.annotations = Some(annotations);
        }
        self.layers.push(blob);
        self
    }

    /// Adds a manifest annotation.
    pub fn annotation(mut self, key: &str, value: &str) -> Self {
        self.annotations.insert(key.to_owned(), value.to_owned());
        self
    }

    /// Adds manifest annotations.
    pub fn annotations(mut self, annotations: Annotations) -> Self {
        self.annotations.extend(annotations);
        self
    }

    /// The manifest this artifact refers to (for a signature or an attestation).
    pub fn subject(mut self, subject: Descriptor) -> Self {
        self.subject = Some(subject);
        self
    }

    /// The artifact. Without an `org.opencontainers.image.created` annotation none is added,
    /// so the same input gives the same digest.
    pub fn build(self) -> Artifact {
        let config = self
            .config
            .unwrap_or_else(|| Blob::new(EMPTY_JSON, &b"{}"[..]));
        let manifest = Manifest {
            schema_version: 2,
            media_type: Some(MANIFEST_V1.to_owned()),
            artifact_type: Some(self.artifact_type),
            config: config.descriptor.clone(),
            layers: self.layers.iter().map(|b| b.descriptor.clone()).collect(),
            subject: self.subject,
            annotations: (!self.annotations.is_empty()).then_some(self.annotations),
        };
        let mut blobs = vec![config];
        blobs.extend(self.layers);
        Artifact {
            manifest: ManifestBytes::new(manifest),
            blobs,
        }
    }
}

/// The current time as the spec's annotations write it (RFC 3339, UTC, seconds).
pub fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_input_builds_the_same_digest() {
        let build = || {
            Artifact::builder("application/vnd.example")
                .layer("application/octet-stream", &b"abc"[..], Annotations::new())
                .annotation("k", "v")
                .build()
        };
        assert_eq!(build().digest(), build().digest());
        assert!(build().check().is_ok());
    }

    #[test]
    fn a_swapped_blob_fails_the_check() {
        let mut artifact = Artifact::builder("application/vnd.example")
            .layer("application/octet-stream", &b"abc"[..], Annotations::new())
            .build();
        artifact.blobs[1].bytes = Bytes::from_static(b"abd");
        assert!(matches!(
            artifact.check(),
            Err(OciError::DigestMismatch { .. })
        ));
    }
}
