//! The trust store, `$BOSUN_HOME/trust.toml`: for each scope (`user`, or a canonical workspace
//! path) and each plugin local name, the SHA-256 of the exact bytes the user trusted, the
//! capabilities and tools they saw, and when.
//!
//! The hash is of `plugin.wasm` for a native plugin and of the source snapshot
//! ([`crate::source::SourceSnapshot::sha256`]) for a Forge or Triggerfish plugin. A JavaScript
//! plugin's tools are registered by its code once it runs, so its record lists no tools; its
//! capabilities are Forge's declared capabilities prefixed `forge:` (`forge:network:access`), or
//! for Triggerfish `net.http:<authority>` per declared endpoint and `triggerfish:trusted` when the
//! manifest asks for trust.
//!
//! It lives outside every repository, so a project can never trust itself. It is read strictly
//! (unknown keys are errors naming the file and line) and written atomically: a failed write
//! leaves the previous file as it was.
//!
//! ```toml
//! version = 1
//!
//! [scopes.user.web]
//! sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
//! version = "0.1.0"
//! tools = ["web_fetch"]
//! capabilities = ["net.http:<from input /url>"]
//! trusted_at = "2025-06-01T12:00:00Z"
//!
//! [scopes."/home/me/src/app".formatter]
//! sha256 = "..."
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::atomic::write_atomic;
use crate::discovery::{PluginScope, is_local_name};
use crate::metadata::Manifest;
use crate::{PluginError, line_col};

/// The format version this host reads and writes.
pub const TRUST_VERSION: u32 = 1;

/// What the user trusted about one plugin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrustRecord {
    /// Lowercase hex SHA-256 of the exact bytes of `plugin.wasm`, or of a JavaScript plugin's
    /// source snapshot.
    pub sha256: String,
    /// The plugin's version as its metadata gave it.
    pub version: String,
    /// The tools it declared (none for a JavaScript plugin, whose code registers them).
    pub tools: Vec<String>,
    /// The capabilities granted, as canonical strings with their declared scopes
    /// (`fs.read`, `net.http:api.example.com`, `net.http:<from input /url>`), sorted.
    pub capabilities: Vec<String>,
    /// When the user trusted it.
    pub trusted_at: DateTime<Utc>,
}

impl TrustRecord {
    /// The record for a plugin whose bytes hash to `sha256` and whose metadata is `manifest`.
    pub fn new(sha256: impl Into<String>, manifest: &Manifest, trusted_at: DateTime<Utc>) -> Self {
        Self::of(sha256, &Declared::from(manifest), trusted_at)
    }

    /// The record for a plugin of any format whose content hashes to `sha256` and which
    /// declares `declared`.
    pub fn of(sha256: impl Into<String>, declared: &Declared, trusted_at: DateTime<Utc>) -> Self {
        Self {
            sha256: sha256.into(),
            version: declared.version.clone(),
            tools: declared.tools.iter().cloned().collect(),
            capabilities: declared.capabilities.iter().cloned().collect(),
            trusted_at,
        }
    }
}

/// What a plugin declares that trust pins besides its hash, in every format alike.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Declared {
    /// Its version as declared.
    pub version: String,
    /// Its tools (empty for JavaScript plugins).
    pub tools: BTreeSet<String>,
    /// Its capabilities as canonical strings.
    pub capabilities: BTreeSet<String>,
}

impl From<&Manifest> for Declared {
    fn from(manifest: &Manifest) -> Self {
        Self {
            version: manifest.version.to_string(),
            tools: manifest.tool_names(),
            capabilities: manifest.grants(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TrustFile {
    version: u32,
    #[serde(default)]
    scopes: BTreeMap<String, BTreeMap<String, TrustRecord>>,
}

/// The trust store, as loaded from one file.
#[derive(Debug, Clone)]
pub struct TrustStore {
    path: PathBuf,
    file: TrustFile,
}

impl TrustStore {
    /// `$BOSUN_HOME/trust.toml`.
    pub fn default_path(home: &Path) -> PathBuf {
        home.join("trust.toml")
    }

    /// An empty store that will be saved at `path`.
    pub fn empty(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            file: TrustFile {
                version: TRUST_VERSION,
                scopes: BTreeMap::new(),
            },
        }
    }

    /// Reads the store; a missing file is an empty store.
    pub fn load(path: impl Into<PathBuf>) -> Result<Self, PluginError> {
        let path = path.into();
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::empty(path)),
            Err(source) => return Err(PluginError::Read { path, source }),
        };
        let file: TrustFile = toml::from_str(&text).map_err(|e| {
            let (line, column) = e.span().map(|s| line_col(&text, s.start)).unwrap_or((1, 1));
            PluginError::TrustParse {
                path: path.clone(),
                line,
                column,
                message: e.message().trim().to_owned(),
            }
        })?;
        check_file(&file, &path)?;
        Ok(Self { path, file })
    }

    /// Where the store is saved.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The record of the plugin `local_name` in `scope`.
    pub fn get(&self, scope: &PluginScope, local_name: &str) -> Option<&TrustRecord> {
        self.file.scopes.get(&scope.trust_key())?.get(local_name)
    }

    /// Records (or replaces) a plugin's trust. Takes effect on disk at [`TrustStore::save`].
    pub fn record(&mut self, scope: &PluginScope, local_name: &str, record: TrustRecord) {
        self.file
            .scopes
            .entry(scope.trust_key())
            .or_default()
            .insert(local_name.to_owned(), record);
    }

    /// Forgets a plugin's trust; returns the record it had.
    pub fn remove(&mut self, scope: &PluginScope, local_name: &str) -> Option<TrustRecord> {
        let key = scope.trust_key();
        let plugins = self.file.scopes.get_mut(&key)?;
        let removed = plugins.remove(local_name);
        if plugins.is_empty() {
            self.file.scopes.remove(&key);
        }
        removed
    }

    /// Every record: scope key, local name, record; sorted.
    pub fn records(&self) -> impl Iterator<Item = (&str, &str, &TrustRecord)> {
        self.file.scopes.iter().flat_map(|(scope, plugins)| {
            plugins
                .iter()
                .map(move |(name, record)| (scope.as_str(), name.as_str(), record))
        })
    }

    /// Writes the store atomically: a temporary file in the same directory (mode 0600) is
    /// written and synced, renamed over the old file, and the directory is synced. The directory
    /// is created with mode 0700 if missing. On any failure the old file is left as it was.
    pub fn save(&self) -> Result<(), PluginError> {
        let text = toml::to_string(&self.file).map_err(|e| PluginError::Write {
            path: self.path.clone(),
            source: std::io::Error::other(e),
        })?;
        write_atomic(&self.path, text.as_bytes()).map_err(|source| PluginError::Write {
            path: self.path.clone(),
            source,
        })
    }
}

fn check_file(file: &TrustFile, path: &Path) -> Result<(), PluginError> {
    let bad = |key: String, message: &str| PluginError::TrustInvalid {
        path: path.to_owned(),
        key,
        message: message.to_owned(),
    };
    if file.version != TRUST_VERSION {
        return Err(bad(
            "version".to_owned(),
            "unsupported version: this Bosun reads version 1; update Bosun",
        ));
    }
    for (scope, plugins) in &file.scopes {
        if scope != "user" && !Path::new(scope).is_absolute() {
            return Err(bad(
                format!("scopes.{scope:?}"),
                "a scope is `user` or an absolute workspace path",
            ));
        }
        for (name, record) in plugins {
            let key = |field: &str| format!("scopes.{scope:?}.{name}{field}");
            if !is_local_name(name) {
                return Err(bad(key(""), "not a valid plugin local name"));
            }
            let hex = record.sha256.len() == 64
                && record
                    .sha256
                    .chars()
                    .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c));
            if !hex {
                return Err(bad(
                    key(".sha256"),
                    "not a lowercase hex SHA-256: run `bosun plugins trust` again",
                ));
            }
        }
    }
    Ok(())
}
