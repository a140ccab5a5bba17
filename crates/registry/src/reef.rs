//! Triggerfish's Reef, read unchanged: `/plugins/index/catalog.json` and `/index/catalog.json`
//! (`{"entries": [...], "generatedAt": …}`), `/plugins/<name>/<version>/mod.ts` and
//! `/skills/<name>/<version>/SKILL.md`, each checked against the catalog's `checksum` (SHA-256
//! of the file). Nothing is signed: the checksum comes from the same origin as the bytes, and
//! every listing and review says so.
//!
//! The catalog is cached for an hour in `$BOSUN_HOME/cache/registry/<source>/`; when the
//! origin fails, the stale cache is used with a warning. Entries whose name or version break
//! the rules ([`crate::name`]) are left out before any URL is built from them.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::RegistryError;
use crate::fetch::{Origin, Progress, Quiet};
use crate::source::{ArtifactKind, Claims, Signer, Source, Target};
use crate::trusted::fetch_target;

/// How long a fetched catalog is used before it is fetched again (Triggerfish's
/// `DEFAULT_CACHE_TTL_MS`).
pub const CACHE_TTL: Duration = Duration::from_secs(3600);
/// Largest catalog read.
pub const MAX_CATALOG_BYTES: u64 = 32 * 1024 * 1024;
/// Largest `mod.ts` or `SKILL.md` read (a Triggerfish plugin is one file).
pub const MAX_FILE_BYTES: u64 = bosun_plugins::source::MAX_SOURCE_FILE_BYTES;

/// A Reef origin.
#[derive(Debug)]
pub struct ReefSource {
    name: String,
    origin: Origin,
    cache: PathBuf,
    warnings: Mutex<Vec<String>>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Cached {
    fetched_at: DateTime<Utc>,
    catalog: Value,
}

impl ReefSource {
    /// The Reef at `origin`, caching under `home`.
    pub fn new(name: &str, origin: Origin, home: &Path) -> Self {
        Self {
            cache: home.join("cache").join("registry").join(name),
            name: name.to_owned(),
            origin,
            warnings: Mutex::new(Vec::new()),
        }
    }

    /// Warnings gathered so far (a stale cache used), taken.
    pub fn take_warnings(&self) -> Vec<String> {
        std::mem::take(
            &mut *self
                .warnings
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    fn catalog_path(kind: ArtifactKind) -> &'static str {
        match kind {
            ArtifactKind::Plugin => "plugins/index/catalog.json",
            ArtifactKind::Skill => "index/catalog.json",
        }
    }

    fn cache_file(&self, kind: ArtifactKind) -> PathBuf {
        self.cache.join(format!("{}.json", kind.dir()))
    }

    /// The catalog: from the cache when younger than [`CACHE_TTL`], else fetched (and the stale
    /// cache used, with a warning, when fetching fails).
    async fn catalog(
        &self,
        kind: ArtifactKind,
        now: DateTime<Utc>,
    ) -> Result<Value, RegistryError> {
        let cache_file = self.cache_file(kind);
        let cached: Option<Cached> = std::fs::read(&cache_file)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok());
        let fresh = |c: &Cached| {
            let age = now.signed_duration_since(c.fetched_at);
            age >= chrono::Duration::zero() && age.to_std().is_ok_and(|a| a < CACHE_TTL)
        };
        let cached = match cached {
            // Taken, not copied: a 10,000-entry catalog is tens of thousands of allocations.
            Some(c) if fresh(&c) => return Ok(c.catalog),
            other => other,
        };
        let path = Self::catalog_path(kind);
        let fetched = match self.origin.get(path, MAX_CATALOG_BYTES, &Quiet).await {
            Ok(Some(bytes)) => serde_json::from_slice::<Value>(&bytes)
                .map_err(|e| RegistryError::malformed(self.origin.describe(path), e))
                .and_then(|v| {
                    if v.get("entries").is_some_and(Value::is_array) {
                        Ok(v)
                    } else {
                        Err(RegistryError::malformed(
                            self.origin.describe(path),
                            "it has no `entries` array",
                        ))
                    }
                }),
            Ok(None) => Err(RegistryError::NotFound {
                what: self.origin.describe(path),
            }),
            Err(e) => Err(e),
        };
        match (fetched, cached) {
            (Ok(catalog), _) => {
                let cached = Cached {
                    fetched_at: now,
                    catalog,
                };
                if let Ok(text) = serde_json::to_vec(&cached) {
                    let _ = bosun_plugins::atomic::write_atomic(&cache_file, &text);
                }
                Ok(cached.catalog)
            }
            (Err(e), Some(stale)) => {
                self.warnings
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push(format!(
                        "{e}; using the catalog fetched at {}",
                        stale.fetched_at
                    ));
                Ok(stale.catalog)
            }
            (Err(e), None) => Err(e),
        }
    }

    fn origin_label(&self) -> String {
        self.origin.describe("")
    }
}

/// The strings of a JSON array field, or none.
fn strings(value: &Value, key: &str) -> Vec<String> {
    value
        .get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn text(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// A Reef catalog entry as a target; `None` when its name, version or checksum is unusable.
pub fn entry_target(kind: ArtifactKind, entry: &Value, origin: &str) -> Option<Target> {
    let name = text(entry, "name")?;
    let version = text(entry, "version")?;
    crate::name::check_name(&name).ok()?;
    crate::name::parse_version(&version).ok()?;
    let checksum = text(entry, "checksum")?.to_ascii_lowercase();
    if checksum.len() != 64 || !checksum.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let mut tags = strings(entry, "tags");
    if let Some(category) = text(entry, "category") {
        tags.push(category);
    }
    let (file, format, classification, endpoints) = match kind {
        ArtifactKind::Plugin => (
            "mod.ts",
            "triggerfish",
            text(entry, "classification"),
            strings(entry, "declaredEndpoints"),
        ),
        ArtifactKind::Skill => (
            "SKILL.md",
            "skill",
            text(entry, "classificationCeiling"),
            Vec::new(),
        ),
    };
    let claims = Claims {
        description: text(entry, "description").unwrap_or_default(),
        author: text(entry, "author").unwrap_or_default(),
        tags,
        format: Some(format.to_owned()),
        endpoints: endpoints.into_iter().collect(),
        classification,
        trust: text(entry, "trust"),
        ..Claims {
            name: name.clone(),
            version: version.clone(),
            ..Claims::default()
        }
    };
    Some(Target {
        kind,
        claims,
        length: None,
        sha256: checksum,
        file: file.to_owned(),
        location: format!("{}/{name}/{version}/{file}", kind.dir()),
        signer: Signer::Unsigned {
            origin: origin.to_owned(),
        },
    })
}

#[async_trait]
impl Source for ReefSource {
    fn name(&self) -> &str {
        &self.name
    }

    fn label(&self) -> String {
        "unsigned: checksum from the same origin".to_owned()
    }

    async fn entries(
        &self,
        kind: ArtifactKind,
        now: DateTime<Utc>,
    ) -> Result<Vec<Target>, RegistryError> {
        let catalog = self.catalog(kind, now).await?;
        let origin = self.origin_label();
        Ok(catalog["entries"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|e| entry_target(kind, e, &origin))
            .collect())
    }

    async fn fetch(
        &self,
        target: &Target,
        progress: &dyn Progress,
    ) -> Result<Vec<u8>, RegistryError> {
        fetch_target(&self.origin, target, MAX_FILE_BYTES, progress).await
    }
}
