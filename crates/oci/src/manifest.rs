//! The OCI wire types Bosun reads and writes (image-spec v1.1.0: `descriptor.md`,
//! `manifest.md`, `image-index.md`, `annotations.md`) and their media types. Parsing checks the
//! schema version and the media type; digests are typed, so a descriptor cannot name a path or
//! a URL outside its repository.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::digest::Digest;
use crate::error::OciError;

/// An OCI image manifest.
pub const MANIFEST_V1: &str = "application/vnd.oci.image.manifest.v1+json";
/// An OCI image index.
pub const INDEX_V1: &str = "application/vnd.oci.image.index.v1+json";
/// A Docker schema 2 manifest, which older tools (and some signature tools) still push; read as
/// an OCI manifest, whose shape it shares.
pub const DOCKER_MANIFEST_V2: &str = "application/vnd.docker.distribution.manifest.v2+json";
/// The empty JSON object `{}` as a config or layer (image-spec v1.1.0 "Guidance for an Empty
/// Descriptor").
pub const EMPTY_JSON: &str = "application/vnd.oci.empty.v1+json";
/// A tar layer compressed with gzip.
pub const LAYER_TAR_GZIP: &str = "application/vnd.oci.image.layer.v1.tar+gzip";

/// The annotation naming a manifest's tag in an image layout's `index.json`.
pub const ANNOTATION_REF_NAME: &str = "org.opencontainers.image.ref.name";
/// The annotation with the creation time (RFC 3339).
pub const ANNOTATION_CREATED: &str = "org.opencontainers.image.created";
/// The annotation with a layer's file name, as ORAS writes it.
pub const ANNOTATION_TITLE: &str = "org.opencontainers.image.title";

/// Manifests Bosun asks for, in the `Accept` header.
pub const MANIFEST_ACCEPT: &str = "application/vnd.oci.image.manifest.v1+json, application/vnd.oci.image.index.v1+json, application/vnd.docker.distribution.manifest.v2+json";

/// Annotations, ordered so that serialising them is deterministic.
pub type Annotations = BTreeMap<String, String>;

/// What a manifest or index points at: media type, digest and size, plus optional metadata.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    /// The media type of the content.
    pub media_type: String,
    /// The content's digest.
    pub digest: Digest,
    /// The content's length in bytes.
    pub size: u64,
    /// The artifact type of a manifest this descriptor points at (in indexes and referrers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
    /// Annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// The content itself, base64, when small enough to embed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<String>,
    /// The platform of an image in an index; kept as it came.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<serde_json::Value>,
}

impl Descriptor {
    /// A descriptor of `bytes` with `media_type`.
    pub fn of(media_type: &str, bytes: &[u8]) -> Self {
        Self {
            media_type: media_type.to_owned(),
            digest: Digest::of(bytes),
            size: bytes.len() as u64,
            artifact_type: None,
            annotations: None,
            data: None,
            platform: None,
        }
    }

    /// One annotation's value.
    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.annotations
            .as_ref()
            .and_then(|a| a.get(key))
            .map(String::as_str)
    }
}

/// An image manifest: a config and layers, optionally an artifact type and a subject.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    /// Always 2.
    pub schema_version: u32,
    /// [`MANIFEST_V1`] (or [`DOCKER_MANIFEST_V2`] when read from an older tool).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// The artifact's type; when absent, the config's media type says it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
    /// The config blob.
    pub config: Descriptor,
    /// The layers, in order.
    pub layers: Vec<Descriptor>,
    /// The manifest this one refers to (a signature's subject).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<Descriptor>,
    /// Annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
}

impl Manifest {
    /// Parses and checks a manifest's JSON.
    pub fn from_slice(bytes: &[u8]) -> Result<Self, OciError> {
        let manifest: Self = serde_json::from_slice(bytes).map_err(|e| OciError::Malformed {
            what: "manifest".to_owned(),
            reason: e.to_string(),
        })?;
        if manifest.schema_version != 2 {
            return Err(OciError::Malformed {
                what: "manifest".to_owned(),
                reason: format!("schemaVersion is {}, not 2", manifest.schema_version),
            });
        }
        if let Some(media_type) = &manifest.media_type
            && media_type != MANIFEST_V1
            && media_type != DOCKER_MANIFEST_V2
        {
            return Err(OciError::Malformed {
                what: "manifest".to_owned(),
                reason: format!("mediaType is {media_type}, not {MANIFEST_V1}"),
            });
        }
        Ok(manifest)
    }

    /// The JSON as pushed: compact, fields in the spec's order.
    pub fn to_vec(&self) -> Vec<u8> {
        // Serialising plain strings, integers and maps cannot fail.
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// The artifact type: `artifactType`, else the config's media type.
    pub fn effective_artifact_type(&self) -> &str {
        self.artifact_type
            .as_deref()
            .unwrap_or(&self.config.media_type)
    }

    /// One annotation's value.
    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.annotations
            .as_ref()
            .and_then(|a| a.get(key))
            .map(String::as_str)
    }
}

/// An image index: a list of manifests (an image layout's `index.json`, a referrers list).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Index {
    /// Always 2.
    pub schema_version: u32,
    /// [`INDEX_V1`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// The index's artifact type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
    /// The manifests.
    #[serde(default)]
    pub manifests: Vec<Descriptor>,
    /// The manifest this index refers to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<Descriptor>,
    /// Annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
}

impl Default for Index {
    fn default() -> Self {
        Self {
            schema_version: 2,
            media_type: Some(INDEX_V1.to_owned()),
            artifact_type: None,
            manifests: Vec::new(),
            subject: None,
            annotations: None,
        }
    }
}

impl Index {
    /// Parses and checks an index's JSON; `what` names it in errors.
    pub fn from_slice(what: &str, bytes: &[u8]) -> Result<Self, OciError> {
        let index: Self = serde_json::from_slice(bytes).map_err(|e| OciError::Malformed {
            what: what.to_owned(),
            reason: e.to_string(),
        })?;
        if index.schema_version != 2 {
            return Err(OciError::Malformed {
                what: what.to_owned(),
                reason: format!("schemaVersion is {}, not 2", index.schema_version),
            });
        }
        if let Some(media_type) = &index.media_type
            && media_type != INDEX_V1
        {
            return Err(OciError::Malformed {
                what: what.to_owned(),
                reason: format!("mediaType is {media_type}, not {INDEX_V1}"),
            });
        }
        Ok(index)
    }

    /// The JSON as written: compact, fields in the spec's order.
    pub fn to_vec(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }
}

/// A manifest with the exact bytes it was pushed or pulled as (its digest is over those bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestBytes {
    /// The parsed manifest.
    pub manifest: Manifest,
    /// The bytes.
    pub bytes: Vec<u8>,
    /// The digest of the bytes.
    pub digest: Digest,
}

impl ManifestBytes {
    /// Serialises `manifest` once and keeps the bytes.
    pub fn new(manifest: Manifest) -> Self {
        let bytes = manifest.to_vec();
        let digest = Digest::of(&bytes);
        Self {
            manifest,
            bytes,
            digest,
        }
    }

    /// A descriptor of this manifest, carrying its artifact type (as indexes and referrers
    /// lists do).
    pub fn descriptor(&self) -> Descriptor {
        let mut descriptor = Descriptor::of(MANIFEST_V1, &self.bytes);
        descriptor.artifact_type = Some(self.manifest.effective_artifact_type().to_owned());
        descriptor.annotations = self.manifest.annotations.clone();
        descriptor
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manifest_round_trips_with_the_spec_field_names() {
        let config = Descriptor::of(EMPTY_JSON, b"{}");
        let manifest = Manifest {
            schema_version: 2,
            media_type: Some(MANIFEST_V1.to_owned()),
            artifact_type: Some("application/vnd.example".to_owned()),
            config,
            layers: vec![],
            subject: None,
            annotations: None,
        };
        let bytes = manifest.to_vec();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(text.starts_with(r#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","artifactType":"application/vnd.example","config":{"mediaType":"application/vnd.oci.empty.v1+json","digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","size":2}"#), "{text}");
        assert_eq!(Manifest::from_slice(&bytes).unwrap(), manifest);
    }

    #[test]
    fn a_manifest_of_another_kind_or_version_is_refused() {
        let index = Index::default().to_vec();
        assert!(Manifest::from_slice(&index).is_err());
        let v1 = br#"{"schemaVersion":1,"config":{"mediaType":"x","digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","size":2},"layers":[]}"#;
        assert!(Manifest::from_slice(v1).is_err());
    }
}
