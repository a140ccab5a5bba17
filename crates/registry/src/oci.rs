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
//! JS/TS plugin as one layer (`mod.ts`, or the packed `plugin.tar.gz`) under the artifact type
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

use std::path::Path;

use async_trait::async_trait;
use bosun_oci::{Client, Digest, Repository, Tag};
use chrono::{DateTime, Utc};

use crate::config::{AuthMode, RegistryAuth, RegistryConfig};
use crate::error::RegistryError;
use crate::fetch::Progress;
use crate::key::PrivateKey;
use crate::name::Requested;
use crate::publish::Prepared;
pub use crate::signature::{
    ANNOTATION_VERSION, MAX_CANDIDATES, PLUGIN_ARTIFACT, SIGNATURE_ARTIFACT, SIGNATURE_LAYER,
    Statement, repository,
};
use crate::signature::{ROLE, plugin_artifact, signature_artifact, verify_signature};
use crate::source::{ArtifactKind, Claims, Source, Target};

/// A source reading an OCI registry.
pub struct OciSource {
    name: String,
    url: String,
    timeout_secs: Option<u64>,
    auth: Option<RegistryAuth>,
    /// Built at the first request, with the login found then: opening a source (a search
    /// opens every one) reads no secret and runs no credential helper.
    client: tokio::sync::OnceCell<Client>,
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
    // Checked now, so a bad address is said at once; the client is built at first use.
    let (_, namespace) = client_for(url, config.timeout_secs).map_err(|e| bad(e.to_string()))?;
    Ok(Box::new(OciSource {
        name: name.to_owned(),
        url: url.to_owned(),
        timeout_secs: config.timeout_secs,
        auth: config.auth.clone(),
        client: tokio::sync::OnceCell::new(),
        namespace,
        pinned: config.keys.clone(),
    }))
}

/// The login `auth` names for the registry `host_port`, read from where the person keeps it
/// (see [`RegistryAuth`]); with no `auth`, a login stored in the Docker config for that
/// registry (no helper program is run), else anonymous. Blocking: a credential helper may run.
///
/// # Errors
/// An environment variable that is not set, or a Docker config or helper that fails (the
/// error never holds the secret).
pub fn credentials(
    auth: Option<&RegistryAuth>,
    host_port: &str,
) -> Result<Credentials, bosun_oci::OciError> {
    credentials_with(
        auth,
        host_port,
        bosun_oci::docker_config::default_path().as_deref(),
        |name| std::env::var(name).ok(),
    )
}

/// [`credentials`] with the Docker config at `docker_config` and the environment `env`.
///
/// # Errors
/// As [`credentials`].
pub fn credentials_with(
    auth: Option<&RegistryAuth>,
    host_port: &str,
    docker_config: Option<&Path>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Credentials, bosun_oci::OciError> {
    use bosun_oci::docker_config::{Helpers, credentials_for};
    let var = |name: &str| {
        env(name)
            .filter(|v| !v.is_empty())
            .ok_or_else(|| bosun_oci::OciError::Login {
                registry: host_port.to_owned(),
                reason: format!("the environment variable {name} is not set"),
            })
    };
    let docker = |helpers| match docker_config {
        Some(path) => credentials_for(path, host_port, helpers),
        None => Ok(Credentials::Anonymous),
    };
    match auth {
        None => docker(Helpers::Never),
        Some(RegistryAuth::Mode(AuthMode::Docker)) => docker(Helpers::Run),
        Some(RegistryAuth::Mode(AuthMode::None)) => Ok(Credentials::Anonymous),
        Some(RegistryAuth::Env {
            username_env,
            password_env,
        }) => Ok(Credentials::Basic {
            username: var(username_env)?,
            password: var(password_env)?,
        }),
        Some(RegistryAuth::Token { token_env }) => Ok(Credentials::Bearer(var(token_env)?)),
    }
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
    // `timeout_secs` is how long one request may take: no wait for a byte, and no whole body,
    // lasts longer.
    if let Some(seconds) = timeout_secs {
        limits.idle_timeout = std::time::Duration::from_secs(seconds);
        limits.body_timeout = std::time::Duration::from_secs(seconds);
    }
    let client = Client::builder(registry)
        .limits(limits)
        .credentials(credentials)
        .build()?;
    Ok((client, namespace))
}

impl OciSource {
    /// The client, built with the login at the first request.
    async fn client(&self) -> Result<&Client, RegistryError> {
        self.client
            .get_or_try_init(|| async {
                let (anonymous, _) = client_for(&self.url, self.timeout_secs)?;
                let host_port = anonymous.registry().host_port();
                let auth = self.auth.clone();
                let credentials =
                    tokio::task::spawn_blocking(move || credentials(auth.as_ref(), &host_port))
                        .await
                        .map_err(|e| bosun_oci::OciError::Login {
                            registry: self.url.clone(),
                            reason: e.to_string(),
                        })??;
                let (client, _) = client_with(&self.url, self.timeout_secs, credentials)?;
                Ok::<_, bosun_oci::OciError>(client)
            })
            .await
            .map_err(RegistryError::from)
    }

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
            .client()
            .await?
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
        requested: (&str, &str),
    ) -> Result<Target, RegistryError> {
        let artifact = self
            .client()
            .await?
            .pull_artifact(repository, signature)
            .await?;
        let checked = verify_signature(
            &artifact,
            kind,
            Some(repository.as_str()),
            subject,
            requested,
            &self.pinned,
        )?;
        Ok(checked.target(format!("{repository}@{subject}")))
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
        let client = self.client().await?;
        let manifest = client.pull_manifest(&repository, &digest).await?;
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
        let result = client
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
        let tags = match self.client().await?.list_tags(&repository).await {
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
        let descriptor = self.client().await?.resolve(&repository, &tag).await?;
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
    publish_kind(client, namespace, ArtifactKind::Plugin, prepared, key).await
}

/// Pushes a prepared plugin or skill (`kind`) to `<namespace>/<name>:<version>` (a skill to
/// `<namespace>/skills/<name>:<version>`, under the artifact type
/// `application/vnd.bosun.skill.v1`) and its signature by `key` as a referrer of it. A version
/// already there is never replaced.
pub async fn publish_kind(
    client: &Client,
    namespace: &str,
    kind: ArtifactKind,
    prepared: Prepared,
    key: &PrivateKey,
) -> Result<PublishedOci, RegistryError> {
    let claims = prepared.claims;
    crate::name::parse_version(&claims.version)?;
    let repository = repository(namespace, kind, &claims.name)?;
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
    let (artifact, file) = plugin_artifact(kind, prepared.file, prepared.bytes, &claims)?;
    let layer = artifact.layers()[0].descriptor.clone();
    let manifest = client
        .push_artifact(&repository, &artifact, Some(&tag))
        .await?;
    let signature = signature_artifact(
        kind,
        repository.as_str(),
        &artifact,
        file,
        &layer,
        &claims,
        key,
    )?;
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "CORP_USER" => Some("robot".to_owned()),
            "CORP_TOKEN" => Some("hunter2".to_owned()),
            _ => None,
        }
    }

    #[test]
    fn a_pull_login_comes_from_where_auth_says_and_never_shows_its_secret() {
        let from_env = RegistryAuth::Env {
            username_env: "CORP_USER".to_owned(),
            password_env: "CORP_TOKEN".to_owned(),
        };
        let got = credentials_with(Some(&from_env), "r.example", None, env).unwrap();
        assert!(
            matches!(&got, Credentials::Basic { username, password } if username == "robot" && password == "hunter2")
        );
        assert!(!format!("{got:?}").contains("hunter2"));
        let token = RegistryAuth::Token {
            token_env: "CORP_TOKEN".to_owned(),
        };
        assert!(matches!(
            credentials_with(Some(&token), "r.example", None, env).unwrap(),
            Credentials::Bearer(t) if t == "hunter2"
        ));
        let unset = RegistryAuth::Token {
            token_env: "NOT_SET".to_owned(),
        };
        let error = credentials_with(Some(&unset), "r.example", None, env).unwrap_err();
        assert!(error.to_string().contains("NOT_SET"), "{error}");

        // No `auth`: the login the Docker config stores for this registry, and no other's.
        let dir = tempfile::tempdir().unwrap();
        let docker = dir.path().join("config.json");
        std::fs::write(
            &docker,
            r#"{"auths":{"r.example":{"username":"me","password":"s3cret"}},"credsStore":"would-run"}"#,
        )
        .unwrap();
        assert!(matches!(
            credentials_with(None, "r.example", Some(&docker), env).unwrap(),
            Credentials::Basic { username, .. } if username == "me"
        ));
        assert!(matches!(
            credentials_with(None, "elsewhere.example", Some(&docker), env).unwrap(),
            Credentials::Anonymous
        ));
        let none = RegistryAuth::Mode(AuthMode::None);
        assert!(matches!(
            credentials_with(Some(&none), "r.example", Some(&docker), env).unwrap(),
            Credentials::Anonymous
        ));
    }

    #[test]
    fn auth_names_variables_only_and_only_for_oci_sources() {
        let parse = |text: &str| -> Result<(), RegistryError> {
            let sources: BTreeMap<String, RegistryConfig> = toml::from_str(text).unwrap();
            crate::config::check(&sources)
        };
        let key = "a".repeat(64);
        parse(&format!(
            "[corp]\nkind = \"oci\"\nurl = \"r.example/acme\"\nkeys = [\"{key}\"]\nauth = {{ username_env = \"CORP_USER\", password_env = \"CORP_TOKEN\" }}\n"
        ))
        .unwrap();
        parse(&format!(
            "[corp]\nkind = \"oci\"\nurl = \"r.example/acme\"\nkeys = [\"{key}\"]\nauth = \"docker\"\n"
        ))
        .unwrap();
        assert!(
            parse(&format!(
                "[corp]\nkind = \"oci\"\nurl = \"r.example/acme\"\nkeys = [\"{key}\"]\nauth = {{ token_env = \"ghp_secret value\" }}\n"
            ))
            .is_err()
        );
        assert!(
            parse("[reef]\nkind = \"reef\"\nurl = \"https://reef.example\"\nauth = \"docker\"\n")
                .is_err()
        );
    }
}
