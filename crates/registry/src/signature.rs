//! Bosun's signature of an OCI artifact, shared by OCI registries ([`crate::oci`]) and image
//! layout folders ([`crate::layout`]): the [`Statement`] a publisher signs (the catalog's
//! Ed25519 over canonical JSON, [`crate::metadata`]), the signature artifact whose `subject` is
//! the plugin's manifest, its verification against pinned keys, and the artifact a plugin or
//! skill travels as.

use std::collections::BTreeMap;

use bosun_oci::manifest::ANNOTATION_TITLE;
use bosun_oci::{Annotations, Artifact, Digest, Repository};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::RegistryError;
use crate::key::PrivateKey;
use crate::metadata::{Envelope, key_ring, sign, signed_part, verify_threshold};
use crate::source::{ArtifactKind, Claims, Signer, Target};

/// The artifact type of a Bosun signature of an OCI artifact.
pub const SIGNATURE_ARTIFACT: &str = "application/vnd.bosun.signature.v1";
/// The media type of its one layer: a signed envelope of a [`Statement`].
pub const SIGNATURE_LAYER: &str = "application/vnd.bosun.signature.v1+json";
/// The artifact type of a JS/TS plugin that is not Wasm.
pub const PLUGIN_ARTIFACT: &str = bosun_oci::tarball::PLUGIN_ARTIFACT;
/// The role name signatures are checked and reported under.
pub(crate) const ROLE: &str = "oci-signature";
/// The `_type` of a statement.
const STATEMENT_TYPE: &str = "bosun-oci-target";
/// The annotation with an artifact's version.
pub const ANNOTATION_VERSION: &str = "org.opencontainers.image.version";
/// How many candidate signatures are tried before giving up.
pub const MAX_CANDIDATES: usize = 16;
/// The largest signature artifact layer read.
const MAX_SIGNATURE_BYTES: u64 = 64 * 1024;

/// What a signature vouches for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Statement {
    /// Always `bosun-oci-target`.
    #[serde(rename = "_type")]
    pub statement_type: String,
    /// Plugin or skill.
    pub kind: ArtifactKind,
    /// The repository it was pushed to.
    pub repository: String,
    /// The manifest's digest.
    pub manifest: String,
    /// The file it installs as (`plugin.wasm`, `mod.ts`, `plugin.tar.gz`).
    pub file: String,
    /// The file's length.
    pub length: u64,
    /// The file's SHA-256, lowercase hex (its layer's digest).
    pub sha256: String,
    /// What it declares.
    pub claims: Claims,
    /// The signing keys, by id (each id must be the hash of its key; only pinned ids count).
    pub keys: BTreeMap<String, Value>,
}

/// The repository of plugin or skill `name` under `namespace`.
pub fn repository(
    namespace: &str,
    kind: ArtifactKind,
    name: &str,
) -> Result<Repository, RegistryError> {
    crate::name::check_name(name)?;
    let leaf = match kind {
        ArtifactKind::Plugin => name.to_owned(),
        ArtifactKind::Skill => format!("skills/{name}"),
    };
    let full = if namespace.is_empty() {
        leaf
    } else {
        format!("{namespace}/{leaf}")
    };
    Ok(full.parse()?)
}

/// A statement whose signature by a pinned key was checked, and those keys.
#[derive(Debug, Clone)]
pub(crate) struct Vouched {
    /// What the signature vouches for.
    pub statement: Statement,
    /// The pinned keys that signed it.
    pub keyids: Vec<String>,
}

impl Vouched {
    /// The installable target it describes, found at `location`.
    pub(crate) fn target(self, location: String) -> Target {
        let statement = self.statement;
        Target {
            kind: statement.kind,
            claims: statement.claims,
            length: Some(statement.length),
            sha256: statement.sha256,
            file: statement.file,
            location,
            signer: Signer::Signed {
                role: ROLE.to_owned(),
                keyids: self.keyids,
            },
        }
    }
}

/// Checks that `artifact` is a Bosun signature whose statement a key in `pinned` signed and
/// that vouches for the manifest `subject` as `kind` `name` `version` (in `repository`, when
/// given: an OCI registry binds it; an image layout, which may hold what was copied from any
/// registry, does not).
pub(crate) fn verify_signature(
    artifact: &Artifact,
    kind: ArtifactKind,
    repository: Option<&str>,
    subject: &Digest,
    (name, version): (&str, &str),
    pinned: &[String],
) -> Result<Vouched, RegistryError> {
    let signature = artifact.digest();
    let manifest = &artifact.manifest.manifest;
    let layer = match artifact.layers() {
        [layer]
            if manifest.effective_artifact_type() == SIGNATURE_ARTIFACT
                && layer.descriptor.media_type == SIGNATURE_LAYER
                && layer.descriptor.size <= MAX_SIGNATURE_BYTES =>
        {
            layer
        }
        _ => {
            return Err(RegistryError::malformed(
                ROLE,
                format!("{signature} is not a Bosun signature artifact"),
            ));
        }
    };
    let (statement, envelope) = read_statement(&layer.bytes)?;
    let ring = key_ring(ROLE, &statement.keys)?;
    verify_threshold(ROLE, &envelope, &ring, pinned, 1)?;
    let mismatch = |field: &str, signed: &str, wanted: &str| RegistryError::ClaimMismatch {
        field: field.to_owned(),
        catalog: crate::name::escape(signed),
        plugin: crate::name::escape(wanted),
    };
    if statement.kind != kind {
        return Err(mismatch("kind", kind_name(statement.kind), kind_name(kind)));
    }
    if let Some(repository) = repository
        && statement.repository != repository
    {
        return Err(mismatch("repository", &statement.repository, repository));
    }
    if statement.manifest != subject.to_string() {
        return Err(mismatch(
            "manifest",
            &statement.manifest,
            &subject.to_string(),
        ));
    }
    if statement.claims.name != name {
        return Err(mismatch("name", &statement.claims.name, name));
    }
    if statement.claims.version != version {
        return Err(mismatch("version", &statement.claims.version, version));
    }
    if !crate::artifact::is_artifact_file(&statement.file) {
        return Err(RegistryError::malformed(
            ROLE,
            format!(
                "`{}` is not a file a plugin travels as",
                crate::name::escape(&statement.file)
            ),
        ));
    }
    let sha256: Digest = format!("sha256:{}", statement.sha256)
        .parse()
        .map_err(bosun_oci::OciError::from)?;
    let keyids = envelope
        .signatures
        .iter()
        .filter(|s| pinned.contains(&s.keyid))
        .map(|s| s.keyid.clone())
        .collect();
    Ok(Vouched {
        statement: Statement {
            sha256: sha256.hex().to_owned(),
            ..statement
        },
        keyids,
    })
}

/// The statement in a signature layer and its envelope, not yet verified.
pub(crate) fn read_statement(layer: &[u8]) -> Result<(Statement, Envelope), RegistryError> {
    let envelope: Envelope =
        serde_json::from_slice(layer).map_err(|e| RegistryError::malformed(ROLE, e))?;
    let statement: Statement = signed_part(ROLE, &envelope)?;
    if statement.statement_type != STATEMENT_TYPE {
        return Err(RegistryError::malformed(
            ROLE,
            "not a bosun-oci-target statement",
        ));
    }
    Ok((statement, envelope))
}

/// The key ids that signed a signature layer, each checked against the key it names (for a
/// person to compare before pinning; not a verdict on what it vouches for).
pub(crate) fn self_signed_keyids(layer: &[u8]) -> Vec<String> {
    let Ok((statement, envelope)) = read_statement(layer) else {
        return Vec::new();
    };
    let Ok(ring) = key_ring(ROLE, &statement.keys) else {
        return Vec::new();
    };
    ring.keys()
        .filter(|id| verify_threshold(ROLE, &envelope, &ring, &[(*id).clone()], 1).is_ok())
        .cloned()
        .collect()
}

fn kind_name(kind: ArtifactKind) -> &'static str {
    match kind {
        ArtifactKind::Plugin => "plugin",
        ArtifactKind::Skill => "skill",
    }
}

/// The artifact a prepared plugin or skill travels as: a Wasm plugin as the standard Wasm
/// artifact, anything else as one layer under Bosun's artifact type, with the
/// `org.opencontainers.image.title` (its name), `.version` and `.description` annotations.
pub(crate) fn plugin_artifact(
    kind: ArtifactKind,
    file: &'static str,
    bytes: Vec<u8>,
    claims: &Claims,
) -> Result<(Artifact, &'static str), RegistryError> {
    let mut annotations = Annotations::new();
    annotations.insert(ANNOTATION_TITLE.to_owned(), claims.name.clone());
    annotations.insert(ANNOTATION_VERSION.to_owned(), claims.version.clone());
    if !claims.description.is_empty() {
        annotations.insert(
            "org.opencontainers.image.description".to_owned(),
            claims.description.clone(),
        );
    }
    let artifact = if file == "plugin.wasm" && kind == ArtifactKind::Plugin {
        bosun_oci::wasm_artifact(bytes, file, annotations)?
    } else {
        let media_type = match file {
            crate::artifact::TAR_FILE => bosun_oci::manifest::LAYER_TAR_GZIP,
            "SKILL.md" => "text/markdown",
            _ => "application/typescript",
        };
        let title: Annotations = [(ANNOTATION_TITLE.to_owned(), file.to_owned())]
            .into_iter()
            .collect();
        let artifact_type = match kind {
            ArtifactKind::Plugin => PLUGIN_ARTIFACT,
            ArtifactKind::Skill => bosun_oci::tarball::SKILL_ARTIFACT,
        };
        Artifact::builder(artifact_type)
            .layer(media_type, bytes, title)
            .annotations(annotations)
            .build()
    };
    Ok((artifact, file))
}

/// The signature artifact by `key` of `artifact` (pushed or written to `repository`) whose one
/// layer `layer` is the file `file`: its subject is the artifact's manifest.
pub(crate) fn signature_artifact(
    kind: ArtifactKind,
    repository: &str,
    artifact: &Artifact,
    file: &str,
    layer: &bosun_oci::Descriptor,
    claims: &Claims,
    key: &PrivateKey,
) -> Result<Artifact, RegistryError> {
    let public = key.public();
    let statement = Statement {
        statement_type: STATEMENT_TYPE.to_owned(),
        kind,
        repository: repository.to_owned(),
        manifest: artifact.digest().to_string(),
        file: file.to_owned(),
        length: layer.size,
        sha256: layer.digest.hex().to_owned(),
        claims: claims.clone(),
        keys: BTreeMap::from([(public.keyid(), public.to_json())]),
    };
    let signed = serde_json::to_value(&statement).map_err(|e| RegistryError::malformed(ROLE, e))?;
    let envelope = sign(&signed, &[key])?;
    let envelope = serde_json::to_vec(&envelope).map_err(|e| RegistryError::malformed(ROLE, e))?;
    Ok(Artifact::builder(SIGNATURE_ARTIFACT)
        .layer(SIGNATURE_LAYER, envelope, Annotations::new())
        .subject(artifact.manifest.descriptor())
        .build())
}
