//! The seam every registry kind plugs into: resolve `NAME[@VERSION]` to a [`Target`] — its
//! length, SHA-256, where to fetch it and what the catalog claims about it — and fetch it with a
//! size cap and a timeout, verified against that length and digest. Reef, Bosun's signed
//! catalogs and offline folders implement it here; an OCI registry implements it in its own
//! crate. The install path above it is the same for all.

use std::collections::BTreeSet;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::error::RegistryError;
use crate::fetch::Progress;
use crate::name::Requested;

/// What a registry entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ArtifactKind {
    /// A plugin (installed under `$BOSUN_HOME/plugins`).
    Plugin,
    /// An Agent Skill (installed under `$BOSUN_HOME/skills`).
    Skill,
}

impl ArtifactKind {
    /// `plugins` or `skills`: the folder of each in a catalog and at home.
    pub fn dir(self) -> &'static str {
        match self {
            Self::Plugin => "plugins",
            Self::Skill => "skills",
        }
    }
}

/// What a catalog says about one version of a plugin or skill. Every field the plugin itself
/// declares is compared with it after verification; a disagreement refuses the install.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claims {
    /// Its name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// One line on what it does.
    #[serde(default)]
    pub description: String,
    /// Who published it.
    #[serde(default)]
    pub author: String,
    /// Search tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// `native`, `forge`, `triggerfish`, `chock` or `skill`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// Tools it declares (none for JavaScript plugins, whose code registers them).
    #[serde(default)]
    pub tools: BTreeSet<String>,
    /// Capabilities it declares, as trust records them.
    #[serde(default)]
    pub capabilities: BTreeSet<String>,
    /// Network endpoints it declares.
    #[serde(default)]
    pub endpoints: BTreeSet<String>,
    /// The classification it asks for (a request policy may lower, never raise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub classification: Option<String>,
    /// The trust it asks for (Reef's `trusted`/`sandboxed`: a request, never granted by itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trust: Option<String>,
}

/// Who vouches for a target's digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Signer {
    /// Nobody: the digest comes from the same place as the bytes (Reef).
    Unsigned {
        /// Where the catalog and the bytes come from.
        origin: String,
    },
    /// A role of a signed catalog whose root the user pinned.
    Signed {
        /// `targets` or the delegated role that lists it.
        role: String,
        /// The ids of that role's keys.
        keyids: Vec<String>,
    },
}

impl Signer {
    /// How the trust review and every listing show it.
    pub fn describe(&self) -> String {
        match self {
            Self::Unsigned { origin } => {
                format!("unsigned: checksum from the same origin ({origin})")
            }
            Self::Signed { role, keyids } => {
                let short: Vec<&str> = keyids.iter().map(|k| &k[..k.len().min(16)]).collect();
                format!("signed by the `{role}` role (key {})", short.join(", "))
            }
        }
    }
}

/// One installable version, resolved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Target {
    /// Plugin or skill.
    pub kind: ArtifactKind,
    /// The catalog's claims.
    pub claims: Claims,
    /// The exact length, when the catalog gives one (Reef does not: the download is capped).
    pub length: Option<u64>,
    /// The SHA-256 the bytes must have, lowercase hex.
    pub sha256: String,
    /// The artifact's file name: `plugin.wasm`, `mod.ts`, `plugin.tar.gz` or `SKILL.md`.
    pub file: String,
    /// Where it is, relative to the source's root (or a digest reference, for OCI).
    pub location: String,
    /// Who vouches for the digest.
    pub signer: Signer,
}

/// A source of plugins and skills.
#[async_trait]
pub trait Source: Send + Sync {
    /// The name it has in `[registries.<name>]`.
    fn name(&self) -> &str;

    /// How it is labelled everywhere: `signed`, or `unsigned: checksum from the same origin`.
    fn label(&self) -> String;

    /// Every entry of `kind` in its catalog (all versions), fetched or taken from the cache.
    async fn entries(
        &self,
        kind: ArtifactKind,
        now: DateTime<Utc>,
    ) -> Result<Vec<Target>, RegistryError>;

    /// Fetches the bytes of `target`, at most its length (or the source's cap), within the
    /// source's timeout, verified against its length and SHA-256.
    async fn fetch(
        &self,
        target: &Target,
        progress: &dyn Progress,
    ) -> Result<Vec<u8>, RegistryError>;

    /// The version of `requested` to install: the exact one asked for, else the newest
    /// release (a pre-release only when no release exists).
    async fn resolve(
        &self,
        kind: ArtifactKind,
        requested: &Requested,
        now: DateTime<Utc>,
    ) -> Result<Target, RegistryError> {
        let entries = self.entries(kind, now).await?;
        pick(entries, requested).ok_or_else(|| RegistryError::NotFound {
            what: format!(
                "{} `{requested}` in the source `{}`",
                kind_word(kind),
                self.name()
            ),
        })
    }
}

fn kind_word(kind: ArtifactKind) -> &'static str {
    match kind {
        ArtifactKind::Plugin => "the plugin",
        ArtifactKind::Skill => "the skill",
    }
}

/// The entry `requested` names among `entries`.
pub fn pick(entries: Vec<Target>, requested: &Requested) -> Option<Target> {
    let mut versions: Vec<(semver::Version, Target)> = entries
        .into_iter()
        .filter(|t| t.claims.name == requested.name)
        .filter_map(|t| {
            semver::Version::parse(&t.claims.version)
                .ok()
                .map(|v| (v, t))
        })
        .collect();
    if let Some(wanted) = &requested.version {
        return versions
            .into_iter()
            .find(|(v, _)| v == wanted)
            .map(|(_, t)| t);
    }
    versions.sort_by(|a, b| a.0.cmp(&b.0));
    let newest_release = versions.iter().rposition(|(v, _)| v.pre.is_empty());
    let index = newest_release.or(versions.len().checked_sub(1))?;
    Some(versions.swap_remove(index).1)
}

/// The newest version of each name among `entries` whose name, description, tags or author
/// contain `query` (case-insensitive; an empty query matches all), sorted by name, at most
/// `limit`.
pub fn search(entries: Vec<Target>, query: &str, limit: usize) -> Vec<Target> {
    let query = query.to_lowercase();
    let mut newest: std::collections::BTreeMap<String, (semver::Version, Target)> =
        std::collections::BTreeMap::new();
    for target in entries {
        let c = &target.claims;
        let hit = query.is_empty()
            || c.name.to_lowercase().contains(&query)
            || c.description.to_lowercase().contains(&query)
            || c.author.to_lowercase().contains(&query)
            || c.tags.iter().any(|t| t.to_lowercase().contains(&query));
        let Ok(version) = semver::Version::parse(&c.version) else {
            continue;
        };
        if !hit {
            continue;
        }
        match newest.get(&c.name) {
            Some((kept, _)) if *kept >= version => {}
            _ => {
                newest.insert(c.name.clone(), (version, target));
            }
        }
    }
    newest.into_values().map(|(_, t)| t).take(limit).collect()
}
