//! `[registries.<name>]` in the user's config, and the project's narrowing of them.
//!
//! ```toml
//! [registries.reef]
//! kind = "reef"
//! url = "https://reef.trigger.fish"
//!
//! [registries.corp]
//! kind = "bosun"
//! url = "https://plugins.example.com/catalog"
//! keys = ["<root key id, confirmed with the publisher>"]
//!
//! [registries.offline]
//! kind = "dir"
//! path = "/media/bundle"
//! keys = ["…"]
//! ```
//!
//! An OCI source may say where its login comes from (`auth`, [`RegistryAuth`]); the secret
//! itself is never written here.
//!
//! Only the user's config names sources and pins their keys. A project's `.bosun/config.toml`
//! may narrow them (`[registries] allow = ["corp"]`): a name it lists that the user did not
//! configure is ignored with a warning, never added.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::RegistryError;
use crate::fetch::{METADATA_TIMEOUT, Origin};
use crate::layout::{LayoutSource, is_layout};
use crate::reef::ReefSource;
use crate::signed::SignedSource;
use crate::source::Source;

/// What a source is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RegistryKind {
    /// Triggerfish's Reef (unsigned).
    Reef,
    /// Bosun's signed catalog, over HTTPS (`url`) or from a folder (`path`).
    Bosun,
    /// An offline bundle folder: an OCI image layout (it holds `oci-layout`), else a signed
    /// catalog.
    Dir,
    /// An OCI distribution registry (opened by the OCI crate through [`Registries::with_opener`]).
    Oci,
    /// A Claude Code marketplace (`path` or a git `url`; opened by the `bosun-claude` crate
    /// through [`Registries::with_opener`]).
    #[serde(rename = "claude-marketplace")]
    ClaudeMarketplace,
}

impl std::fmt::Display for RegistryKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Reef => "reef",
            Self::Bosun => "bosun",
            Self::Dir => "dir",
            Self::Oci => "oci",
            Self::ClaudeMarketplace => "claude-marketplace",
        })
    }
}

/// One `[registries.<name>]` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegistryConfig {
    /// What it is.
    pub kind: RegistryKind,
    /// Its address (`reef`, `bosun`, `oci`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Its folder (`dir`, or `bosun` from a folder).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    /// The root key ids pinned for it (signed kinds), as a person confirmed them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keys: Vec<String>,
    /// Seconds one request may take (default 30 for catalogs, 300 for downloads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
    /// How an OCI source logs in to pull (default: a login `docker login` stored for its
    /// registry in the Docker config, else anonymous).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<RegistryAuth>,
}

/// `auth` of an OCI source: where its login comes from. Secrets are never written in Bosun's
/// config; they stay where the person keeps them.
///
/// ```toml
/// auth = "docker"                                           # Docker config, helpers included
/// auth = "none"                                             # anonymous
/// auth = { username_env = "CORP_USER", password_env = "CORP_TOKEN" }
/// auth = { token_env = "CORP_BEARER" }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RegistryAuth {
    /// `"docker"` or `"none"`.
    Mode(AuthMode),
    /// A user name and password (or access token) from two environment variables.
    Env {
        /// The variable holding the user name.
        username_env: String,
        /// The variable holding the password or access token.
        password_env: String,
    },
    /// A bearer token from an environment variable, sent as-is.
    Token {
        /// The variable holding the token.
        token_env: String,
    },
}

/// The named ways of logging in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthMode {
    /// The Docker config (`$DOCKER_CONFIG/config.json` or `~/.docker/config.json`): stored
    /// logins, `credHelpers` and `credsStore` (their programs run to answer).
    Docker,
    /// No login.
    None,
}

/// A project's `[registries]`: which of the user's sources it uses.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectRegistries {
    /// The user's sources this project may use; absent means all.
    #[serde(default)]
    pub allow: Option<Vec<String>>,
}

/// Opens a source of a kind this crate does not implement (OCI).
pub type Opener =
    fn(name: &str, config: &RegistryConfig, home: &Path) -> Result<Box<dyn Source>, RegistryError>;

/// The sources in effect: the user's, narrowed by the project's.
#[derive(Debug, Clone)]
pub struct Registries {
    sources: BTreeMap<String, RegistryConfig>,
    openers: BTreeMap<RegistryKind, Opener>,
    warnings: Vec<String>,
}

fn is_key_id(id: &str) -> bool {
    id.len() == 64
        && id
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Checks every entry; the first problem names its key and the fix.
pub fn check(sources: &BTreeMap<String, RegistryConfig>) -> Result<(), RegistryError> {
    for (name, config) in sources {
        let bad = |message: &str| RegistryError::Config {
            source_name: name.clone(),
            message: message.to_owned(),
        };
        if !bosun_plugins::is_local_name(name) {
            return Err(bad(
                "the name must be 1-64 characters a-z, 0-9, _ and -, starting with a letter",
            ));
        }
        match config.kind {
            RegistryKind::Reef | RegistryKind::Oci if config.url.is_none() => {
                return Err(bad("needs url = \"https://…\""));
            }
            RegistryKind::ClaudeMarketplace if config.url.is_none() == config.path.is_none() => {
                return Err(bad(
                    "needs exactly one of path = \"/the/marketplace\" or url = \"https://host/repo.git\"",
                ));
            }
            RegistryKind::Dir if config.path.is_none() => {
                return Err(bad("needs path = \"/the/bundle\""));
            }
            RegistryKind::Bosun if config.url.is_none() == config.path.is_none() => {
                return Err(bad(
                    "needs exactly one of url = \"https://…\" or path = \"/the/catalog\"",
                ));
            }
            _ => {}
        }
        if config.kind == RegistryKind::Reef && !config.keys.is_empty() {
            return Err(bad("a Reef signs nothing: remove keys"));
        }
        if let Some(id) = config.keys.iter().find(|k| !is_key_id(k)) {
            return Err(bad(&format!(
                "`{}` is not a key id (64 lowercase hex digits, as `bosun registry trust` shows)",
                crate::name::escape(id)
            )));
        }
        if config.timeout_secs.is_some_and(|s| s == 0 || s > 3600) {
            return Err(bad("timeout_secs must be between 1 and 3600"));
        }
        if let Some(auth) = &config.auth {
            if config.kind != RegistryKind::Oci {
                return Err(bad(
                    "auth is for kind = \"oci\" sources: remove it (catalogs are public, trusted through their keys)",
                ));
            }
            let names: Vec<&String> = match auth {
                RegistryAuth::Mode(_) => Vec::new(),
                RegistryAuth::Env {
                    username_env,
                    password_env,
                } => vec![username_env, password_env],
                RegistryAuth::Token { token_env } => vec![token_env],
            };
            if names
                .iter()
                .any(|n| n.is_empty() || !n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
            {
                return Err(bad(
                    "auth names environment variables (letters, digits and _), never the secret itself",
                ));
            }
        }
    }
    Ok(())
}

impl Registries {
    /// The user's sources, narrowed by the project's `allow` (which can only remove).
    pub fn new(
        user: &BTreeMap<String, RegistryConfig>,
        project: Option<&ProjectRegistries>,
    ) -> Result<Self, RegistryError> {
        check(user)?;
        let mut sources = user.clone();
        let mut warnings = Vec::new();
        if let Some(allow) = project.and_then(|p| p.allow.as_ref()) {
            for name in allow {
                if !user.contains_key(name) {
                    warnings.push(format!(
                        "the project allows the registry `{}`, which your config does not define: ignored (a project can only narrow your sources)",
                        crate::name::escape(name)
                    ));
                }
            }
            sources.retain(|name, _| allow.contains(name));
        }
        Ok(Self {
            sources,
            openers: BTreeMap::new(),
            warnings,
        })
    }

    /// Lets `opener` open sources of `kind` (how the OCI crate plugs in).
    pub fn with_opener(mut self, kind: RegistryKind, opener: Opener) -> Self {
        self.openers.insert(kind, opener);
        self
    }

    /// What narrowing ignored.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The sources in effect, by name.
    pub fn sources(&self) -> &BTreeMap<String, RegistryConfig> {
        &self.sources
    }

    /// The names in effect.
    pub fn names(&self) -> BTreeSet<String> {
        self.sources.keys().cloned().collect()
    }

    /// Opens source `name`, keeping its state and cache under `home`.
    pub fn open(&self, name: &str, home: &Path) -> Result<Box<dyn Source>, RegistryError> {
        let config = self.sources.get(name).ok_or_else(|| RegistryError::Config {
            source_name: name.to_owned(),
            message: format!(
                "no such source in effect (configured: {}); add [registries.{name}] to your config",
                if self.sources.is_empty() {
                    "none".to_owned()
                } else {
                    self.sources.keys().cloned().collect::<Vec<_>>().join(", ")
                }
            ),
        })?;
        let timeout = config
            .timeout_secs
            .map_or(METADATA_TIMEOUT, Duration::from_secs);
        let origin = || -> Result<Origin, RegistryError> {
            match (&config.url, &config.path) {
                (Some(url), _) => Origin::http(url, timeout),
                (None, Some(path)) => Ok(Origin::dir(path).with_timeout(timeout)),
                (None, None) => Err(RegistryError::Config {
                    source_name: name.to_owned(),
                    message: "has neither url nor path".to_owned(),
                }),
            }
        };
        match config.kind {
            RegistryKind::Reef => Ok(Box::new(ReefSource::new(name, origin()?, home))),
            RegistryKind::Dir if config.path.as_deref().is_some_and(is_layout) => {
                Ok(Box::new(LayoutSource::new(
                    name,
                    config.path.as_deref().unwrap_or(Path::new("")),
                    config.keys.clone(),
                )))
            }
            RegistryKind::Bosun | RegistryKind::Dir => Ok(Box::new(SignedSource::new(
                name,
                origin()?,
                config.keys.clone(),
                home,
            ))),
            kind => match self.openers.get(&kind) {
                Some(opener) => opener(name, config, home),
                None => Err(RegistryError::Config {
                    source_name: name.to_owned(),
                    message: format!("kind = \"{kind}\" is not supported by this build of Bosun"),
                }),
            },
        }
    }

    /// The OCI image layout source `name` (a `dir` whose folder holds `oci-layout`), if it is
    /// one: for pinning its signers and publishing into it.
    pub fn layout(&self, name: &str) -> Option<LayoutSource> {
        let config = self.sources.get(name)?;
        let path = config.path.as_deref()?;
        (config.kind == RegistryKind::Dir && is_layout(path))
            .then(|| LayoutSource::new(name, path, config.keys.clone()))
    }

    /// The signed source `name` (for pinning and publishing), if it is one.
    pub fn signed(&self, name: &str, home: &Path) -> Result<SignedSource, RegistryError> {
        let config = self
            .sources
            .get(name)
            .ok_or_else(|| RegistryError::Config {
                source_name: name.to_owned(),
                message: "no such source in effect".to_owned(),
            })?;
        let timeout = config
            .timeout_secs
            .map_or(METADATA_TIMEOUT, Duration::from_secs);
        let origin = match (&config.kind, &config.url, &config.path) {
            (RegistryKind::Bosun, Some(url), _) => Origin::http(url, timeout)?,
            (RegistryKind::Bosun | RegistryKind::Dir, None, Some(path)) => Origin::dir(path),
            _ => {
                return Err(RegistryError::Config {
                    source_name: name.to_owned(),
                    message: format!(
                        "is kind = \"{}\", not a signed catalog (bosun or dir)",
                        config.kind
                    ),
                });
            }
        };
        Ok(SignedSource::new(name, origin, config.keys.clone(), home))
    }
}
