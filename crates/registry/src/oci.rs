//! `kind = "oci"`: plugins in an OCI distribution registry, through `bosun-oci`.
//!
//! ```toml
//! [registries.corp-oci]
//! kind = "oci"
//! url = "registry.example.com/acme/bosun"   # registry, then the namespace of the repositories
//! keys = ["<publisher key id, confirmed with the publisher>"]
//! ```
//!
//! A plugin `NAME` lives in the repository `<namespace>/NAME`, each version under its semver
//! tag: a native or Chock plugin as the standard Wasm artifact (so `oras` and `wkg` pull it), a
//! JS/TS plugin as one layer (`mod.ts`, or the packed `plugin.tar`) under the artifact type
//! `application/vnd.bosun.plugin.v1`. A tag is only where to look: what is installed is the
//! manifest digest and file digest a **signature by a pinned key** names. The signature is an
//! artifact of type [`SIGNATURE_ARTIFACT`] whose subject is the plugin's manifest, found through
//! the referrers API (or its tag fallback) or the `sha256-<hex>.sig` tag; its one layer is a
//! signed envelope (the catalog's Ed25519 signing over canonical JSON, [`crate::metadata`])
//! of a [`Statement`]: the repository, manifest digest, file, length, SHA-256 and claims. A
//! registry can hide a signature, never forge one; without a valid one nothing resolves.
//!
//! An OCI registry has no catalog, so this source lists nothing for search: a plugin is
//! installed by name.

use std::collections::BTreeMap;
use std::path::Path;

use async_trait::async_trait;
use bosun_oci::manifest::ANNOTATION_TITLE;
use bosun_oci::{Annotations, Artifact, Client, Digest, Repository, Tag};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::config::RegistryConfig;
use crate::error::RegistryError;
use crate::fetch::Progress;
use crate::key::PrivateKey;
use crate::metadata::{Envelope, key_ring, sign, signed_part, verify_threshold};
use crate::name::Requested;
use crate::publish::Prepared;
use crate::source::{ArtifactKind, Claims, Signer, Source, Target};

/// The artifact type of a Bosun signature of an OCI artifact.
pub const SIGNATURE_ARTIFACT: &str = "application/vnd.bosun.signature.v1";
/// The media type of its one layer: a signed envelope of a [`Statement`].
pub const SIGNATURE_LAYER: &str = "application/vnd.bosun.signature.v1+json";
/// The artifact type of a JS/TS plugin that is not Wasm.
pub const PLUGIN_ARTIFACT: &str = bosun_oci::tarball::PLUGIN_ARTIFACT;
/// The role name signatures are checked and reported under.
const ROLE: &str = "oci-signature";
/// The `_type` of a statement.
const STATEMENT_TYPE: &str = "bosun-oci-target";
/// How many candidate signatures are tried before giving up.
const MAX_CANDIDATES: usize = 16;
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
    /// The file it installs as (`plugin.wasm`, `mod.ts`, `plugin.tar`).
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

/// A source reading an OCI registry.
pub struct OciSource {
    name: String,
    client: Client,
    namespace: String,
    pinned: Vec<String>,
}

/// Opens `[registries.<name>]` of kind `oci` (the [`crate::config::Opener`] for it).
pub fn open(
    name: &str,
    config: &RegistryConfig,
    _home: &Path,
) -> Result<Box<dyn Source>, RegistryError> {
    let bad = |message: String| RegistryError::Config {
        source_name: name.to_owned(),
        message,
    };
    let url = config
        .url
        .as_deref()
        .ok_or_else(|| bad("needs url = \"registry.example.com/namespace\"".to_owned()))?;
    if config.keys.is_empty() {
        return Err(bad(
            "an OCI source is trusted through signatures: pin the publisher's key id in keys = [\"…\"]"
                .to_owned(),
        ));
    }
    let (client, namespace) =
        client_for(url, config.timeout_secs).map_err(|e| bad(e.to_string()))?;
    Ok(Box::new(OciSource {
        name: name.to_owned(),
        client,
        namespace,
        pinned: config.keys.clone(),
    }))
}

/// Credentials for a registry that needs a login (publishing, mostly).
pub use bosun_oci::Credentials;

/// The anonymous client of `url`'s registry and its namespace (`host[:port]/a/b` or
/// `https://host/a/b`).
pub fn client_for(
    url: &str,
    timeout_secs: Option<u64>,
) -> Result<(Client, String), bosun_oci::OciError> {
    client_with(url, timeout_secs, Credentials::Anonymous)
}

/// The client of `url`'s registry with `credentials` (kept on that registry's origin by the
/// client), and its namespace.
pub fn client_with(
    url: &str,
    timeout_secs: Option<u64>,
    credentials: Credentials,
) -> Result<(Client, String), bosun_oci::OciError> {
    let (scheme, rest) = match url.split_once("://") {
        Some((scheme, rest)) => (Some(scheme), rest),
        None => (None, url),
    };
    let (host, namespace) = rest.split_once('/').unwrap_or((rest, ""));
    let namespace = namespace.trim_matches('/').to_owned();
    if !namespace.is_empty() {
        // Checked with the repository grammar, so a namespace cannot leave the registry's URL.
        namespace.parse::<Repository>()?;
    }
    let registry = match scheme {
        Some(scheme) => format!("{scheme}://{host}").parse()?,
        None => host.parse()?,
    };
    let mut limits = bosun_oci::Limits::default();
    if let Some(seconds) = timeout_secs {
        limits.idle_timeout = std::time::Duration::from_secs(seconds);
    }
    let client = Client::builder(registry)
        .limits(limits)
        .credentials(credentials)
        .build()?;
    Ok((client, namespace))
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

impl OciSource {
    /// The target `digest` is, if a signature by a pinned key vouches for it as `name`
    /// `version` in `repository`.
    async fn verified(
        &self,
        kind: ArtifactKind,
        repository: &Repository,
        digest: &Digest,
        requested: (&str, &str),
    ) -> Result<Target, RegistryError> {
        let candidates = self
            .client
            .signatures(repository, digest, SIGNATURE_ARTIFACT)
            .await?;
        let mut last = None;
        for candidate in candidates.into_iter().take(MAX_CANDIDATES) {
            match self
                .check_signature(kind, repository, digest, &candidate.digest, requested)
                .await
            {
                Ok(target) => return Ok(target),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or(RegistryError::Threshold {
            role: format!("{ROLE} of {repository}@{digest}"),
            valid: 0,
            threshold: 1,
        }))
    }

    async fn check_signature(
        &self,
        kind: ArtifactKind,
        repository: &Repository,
        subject: &Digest,
        signature: &Digest,
        (name, version): (&str, &str),
    ) -> Result<Target, RegistryError> {
        let artifact = self.client.pull_artifact(repository, signature).await?;
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
        let envelope: Envelope =
            serde_json::from_slice(&layer.bytes).map_err(|e| RegistryError::malformed(ROLE, e))?;
        let statement: Statement = signed_part(ROLE, &envelope)?;
        let ring = key_ring(ROLE, &statement.keys)?;
        verify_threshold(ROLE, &envelope, &ring, &self.pinned, 1)?;
        let mismatch = |field: &str, signed: &str, wanted: &str| RegistryError::ClaimMismatch {
            field: field.to_owned(),
            catalog: crate::name::escape(signed),
            plugin: crate::name::escape(wanted),
        };
        if statement.statement_type != STATEMENT_TYPE {
            return Err(RegistryError::malformed(
                ROLE,
                "not a bosun-oci-target statement",
            ));
        }
        if statement.kind != kind {
            return Err(mismatch("kind", kind_name(statement.kind), kind_name(kind)));
        }
        if statement.repository != repository.as_str() {
            return Err(mismatch(
                "repository",
                &statement.repository,
                repository.as_str(),
            ));
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
        if !crate::artifact::SINGLE_FILES.contains(&statement.file.as_str())
            && statement.file != crate::artifact::TAR_FILE
        {
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
            .filter(|s| self.pinned.contains(&s.keyid))
            .map(|s| s.keyid.clone())
            .collect();
        Ok(Target {
            kind,
            claims: statement.claims,
            length: Some(statement.length),
            sha256: sha256.hex().to_owned(),
            file: statement.file,
            location: format!("{repository}@{subject}"),
            signer: Signer::Signed {
                role: ROLE.to_owned(),
                keyids,
            },
        })
    }
}

fn kind_name(kind: ArtifactKind) -> &'static str {
    match kind {
        ArtifactKind::Plugin => "plugin",
        ArtifactKind::Skill => "skill",
    }
}

#[async_trait]
impl Source for OciSource {
    fn name(&self) -> &str {
        &self.name
    }

    fn label(&self) -> String {
        "signed (OCI signatures by a pinned key)".to_owned()
    }

    /// An OCI registry has no catalog: nothing is listed (install names the plugin).
    async fn entries(
        &self,
        _kind: ArtifactKind,
        _now: DateTime<Utc>,
    ) -> Result<Vec<Target>, RegistryError> {
        Ok(Vec::new())
    }

    async fn fetch(
        &self,
        target: &Target,
        progress: &dyn Progress,
    ) -> Result<Vec<u8>, RegistryError> {
        let (repository, digest) = target
            .location
            .split_once('@')
            .ok_or_else(|| RegistryError::malformed(ROLE, "the location names no digest"))?;
        let repository: Repository = repository.parse()?;
        let digest: Digest = digest.parse().map_err(bosun_oci::OciError::from)?;
        let manifest = self.client.pull_manifest(&repository, &digest).await?;
        let layer = manifest
            .manifest
            .layers
            .iter()
            .find(|l| l.digest.hex() == target.sha256 && Some(l.size) == target.length)
            .ok_or_else(|| RegistryError::NotFound {
                what: format!(
                    "the signed layer sha256:{} in {repository}@{digest}",
                    target.sha256
                ),
            })?;
        progress.start(&target.file, Some(layer.size));
        let mut bytes = Vec::new();
        let mut seen = 0u64;
        let result = self
            .client
            .pull_blob_to(&repository, layer, &mut bytes, |p| {
                progress.advance(p.received - seen);
                seen = p.received;
            })
            .await;
        progress.finish();
        result?;
        Ok(bytes)
    }

    async fn resolve(
        &self,
        kind: ArtifactKind,
        requested: &Requested,
        _now: DateTime<Utc>,
    ) -> Result<Target, RegistryError> {
        let repository = repository(&self.namespace, kind, &requested.name)?;
        let tags = match self.client.list_tags(&repository).await {
            Ok(tags) => tags,
            Err(bosun_oci::OciError::NotFound { .. }) => Vec::new(),
            Err(e) => return Err(e.into()),
        };
        let mut versions: Vec<(semver::Version, Tag)> = tags
            .into_iter()
            .filter_map(|t| semver::Version::parse(t.as_str()).ok().map(|v| (v, t)))
            .collect();
        versions.sort_by(|a, b| a.0.cmp(&b.0));
        let chosen = match &requested.version {
            Some(wanted) => versions.into_iter().find(|(v, _)| v == wanted),
            None => {
                let newest = versions.iter().rposition(|(v, _)| v.pre.is_empty());
                newest
                    .or(versions.len().checked_sub(1))
                    .map(|i| versions.swap_remove(i))
            }
        };
        let (version, tag) = chosen.ok_or_else(|| RegistryError::NotFound {
            what: format!(
                "`{requested}` in the OCI source `{}` ({repository})",
                self.name
            ),
        })?;
        let descriptor = self.client.resolve(&repository, &tag).await?;
        self.verified(
            kind,
            &repository,
            &descriptor.digest,
            (&requested.name, &version.to_string()),
        )
        .await
    }
}

/// What [`publish`] pushed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishedOci {
    /// `registry/repository:version@digest`.
    pub reference: String,
    /// The plugin manifest's digest.
    pub manifest: Digest,
    /// The signature artifact's digest.
    pub signature: Digest,
    /// What it declares.
    pub claims: Claims,
}

/// Pushes a prepared plugin to `<namespace>/<name>:<version>` and its signature by `key` as a
/// referrer of it. A version already there is never replaced.
pub async fn publish(
    client: &Client,
    namespace: &str,
    prepared: Prepared,
    key: &PrivateKey,
) -> Result<PublishedOci, RegistryError> {
    let claims = prepared.claims;
    crate::name::parse_version(&claims.version)?;
    let repository = repository(namespace, ArtifactKind::Plugin, &claims.name)?;
    let tag: Tag = claims.version.parse()?;
    match client.resolve(&repository, &tag).await {
        Ok(existing) => {
            return Err(RegistryError::Config {
                source_name: client.registry().to_string(),
                message: format!(
                    "{repository}:{tag} is already published ({}): a published version is never replaced; raise the version",
                    existing.digest
                ),
            });
        }
        Err(bosun_oci::OciError::NotFound { .. }) => {}
        Err(e) => return Err(e.into()),
    }
    let mut annotations = Annotations::new();
    annotations.insert(
        "org.opencontainers.image.title".to_owned(),
        claims.name.clone(),
    );
    annotations.insert(
        "org.opencontainers.image.version".to_owned(),
        claims.version.clone(),
    );
    if !claims.description.is_empty() {
        annotations.insert(
            "org.opencontainers.image.description".to_owned(),
            claims.description.clone(),
        );
    }
    let artifact = if prepared.file == "plugin.wasm" {
        bosun_oci::wasm_artifact(prepared.bytes, prepared.file, annotations)?
    } else {
        let media_type = if prepared.file == crate::artifact::TAR_FILE {
            "application/vnd.oci.image.layer.v1.tar"
        } else {
            "application/typescript"
        };
        let title: Annotations = [(ANNOTATION_TITLE.to_owned(), prepared.file.to_owned())]
            .into_iter()
            .collect();
        Artifact::builder(PLUGIN_ARTIFACT)
            .layer(media_type, prepared.bytes, title)
            .annotations(annotations)
            .build()
    };
    let layer = &artifact.layers()[0].descriptor;
    let manifest = client
        .push_artifact(&repository, &artifact, Some(&tag))
        .await?;
    let public = key.public();
    let statement = Statement {
        statement_type: STATEMENT_TYPE.to_owned(),
        kind: ArtifactKind::Plugin,
        repository: repository.to_string(),
        manifest: manifest.to_string(),
        file: prepared.file.to_owned(),
        length: layer.size,
        sha256: layer.digest.hex().to_owned(),
        claims: claims.clone(),
        keys: BTreeMap::from([(public.keyid(), public.to_json())]),
    };
    let signed = serde_json::to_value(&statement).map_err(|e| RegistryError::malformed(ROLE, e))?;
    let envelope = sign(&signed, &[key])?;
    let envelope = serde_json::to_vec(&envelope).map_err(|e| RegistryError::malformed(ROLE, e))?;
    let signature = Artifact::builder(SIGNATURE_ARTIFACT)
        .layer(SIGNATURE_LAYER, envelope, Annotations::new())
        .subject(artifact.manifest.descriptor())
        .build();
    let signature = client.push_artifact(&repository, &signature, None).await?;
    Ok(PublishedOci {
        reference: format!(
            "{}/{repository}:{tag}@{manifest}",
            client.registry().host_port()
        ),
        manifest,
        signature,
        claims,
    })
}
