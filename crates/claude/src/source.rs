//! `[registries.<name>] kind = "claude-marketplace"`: a marketplace as a registry source, so
//! `bosun plugins search` lists its plugins beside every other source's. Installing goes
//! through [`crate::install`] (`bosun plugins install NAME@MARKETPLACE`), not [`Source::fetch`]:
//! a Claude Code plugin is a folder with parts that run, reviewed as such.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use bosun_launch::{Launcher, SandboxConfig};
use bosun_registry::config::RegistryConfig;
use bosun_registry::fetch::Progress;
use bosun_registry::{ArtifactKind, Claims, RegistryError, Signer, Source, Target};
use chrono::{DateTime, Utc};

use crate::install::{MarketplaceLocation, open_marketplace};
use crate::marketplace::PluginSource;

/// The format name a marketplace's entries carry.
pub const FORMAT: &str = "claude";

/// Where `config` says the marketplace is: `path` (a folder), or `url`: a `marketplace.json`
/// over HTTPS when its path ends in `.json`, else a git repository.
pub fn location(name: &str, config: &RegistryConfig) -> Result<MarketplaceLocation, RegistryError> {
    match (&config.path, &config.url) {
        (Some(path), None) => Ok(MarketplaceLocation::Dir(path.clone())),
        (None, Some(url)) if crate::http::is_json_url(url) => {
            crate::http::check_url(url).map_err(|e| RegistryError::Config {
                source_name: name.to_owned(),
                message: e.to_string(),
            })?;
            Ok(MarketplaceLocation::Https {
                url: url.clone(),
                timeout: config.timeout_secs.map_or(
                    crate::http::MARKETPLACE_TIMEOUT,
                    std::time::Duration::from_secs,
                ),
            })
        }
        (None, Some(url)) => {
            crate::fetch::port_of(url).map_err(|e| RegistryError::Config {
                source_name: name.to_owned(),
                message: e.to_string(),
            })?;
            Ok(MarketplaceLocation::Git(url.clone()))
        }
        _ => Err(RegistryError::Config {
            source_name: name.to_owned(),
            message: "needs exactly one of path = \"/the/marketplace\", url = \"https://host/repo.git\" (a git repository) or url = \"https://host/path/marketplace.json\"".to_owned(),
        }),
    }
}

/// A marketplace, as a registry source.
#[derive(Debug)]
pub struct MarketplaceSource {
    name: String,
    location: MarketplaceLocation,
    home: PathBuf,
}

/// The opener for `Registries::with_opener(RegistryKind::ClaudeMarketplace, open)`.
pub fn open(
    name: &str,
    config: &RegistryConfig,
    home: &Path,
) -> Result<Box<dyn Source>, RegistryError> {
    Ok(Box::new(MarketplaceSource {
        name: name.to_owned(),
        location: location(name, config)?,
        home: home.to_path_buf(),
    }))
}

#[async_trait]
impl Source for MarketplaceSource {
    fn name(&self) -> &str {
        &self.name
    }

    fn label(&self) -> String {
        "Claude Code marketplace: install NAME@".to_owned() + &self.name
    }

    async fn entries(
        &self,
        kind: ArtifactKind,
        _now: DateTime<Utc>,
    ) -> Result<Vec<Target>, RegistryError> {
        if kind != ArtifactKind::Plugin {
            return Ok(Vec::new());
        }
        let launcher = Launcher::new(SandboxConfig::default()).private(&self.home);
        let opened = open_marketplace(&self.location, &launcher, &self.home)
            .await
            .map_err(|e| RegistryError::Malformed {
                role: format!("the marketplace `{}`", self.name),
                message: e.to_string(),
            })?;
        Ok(opened
            .marketplace
            .plugins
            .iter()
            .map(|p| Target {
                kind: ArtifactKind::Plugin,
                claims: Claims {
                    name: p.name.clone(),
                    version: p
                        .version
                        .clone()
                        .filter(|v| semver::Version::parse(v).is_ok())
                        .unwrap_or_else(|| "0.0.0".to_owned()),
                    description: p.description.clone(),
                    author: p.author.clone().unwrap_or_default(),
                    tags: p.tags.clone(),
                    format: Some(FORMAT.to_owned()),
                    ..Claims::default()
                },
                length: None,
                sha256: String::new(),
                file: "plugin".to_owned(),
                location: match &p.source {
                    PluginSource::Relative(rel) => rel.clone(),
                    other => other.to_string(),
                },
                signer: Signer::Unsigned {
                    origin: opened.origin.clone(),
                },
            })
            .collect())
    }

    async fn fetch(
        &self,
        target: &Target,
        _progress: &dyn Progress,
    ) -> Result<Vec<u8>, RegistryError> {
        Err(RegistryError::Config {
            source_name: self.name.clone(),
            message: format!(
                "is a Claude Code marketplace: install with `bosun plugins install {}@{}`",
                target.claims.name, self.name
            ),
        })
    }
}
