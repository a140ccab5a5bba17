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
//! leaves the previous file as it was. A save is a merge ([`crate::state_lock`]): under the
//! file's lock it reads the file as it is now and applies only the records and removals this
//! store made since it was loaded, so another Bosun's decisions in the meantime are kept.
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

use crate::discovery::{PluginScope, is_local_name};
use crate::metadata::Manifest;
use crate::state_lock::{UpdateError, replay};
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

/// One change this store made since it was loaded, replayed on the file at save.
#[derive(Debug, Clone)]
enum Change {
    Record {
        scope: String,
        name: String,
        record: TrustRecord,
    },
    Remove {
        scope: String,
        name: String,
    },
}

impl TrustFile {
    fn apply(&mut self, change: Change) -> Option<TrustRecord> {
        match change {
            Change::Record {
                scope,
                name,
                record,
            } => self.scopes.entry(scope).or_default().insert(name, record),
            Change::Remove { scope, name } => {
                let plugins = self.scopes.get_mut(&scope)?;
                let removed = plugins.remove(&name);
                if plugins.is_empty() {
                    self.scopes.remove(&scope);
                }
                removed
            }
        }
    }
}

/// The trust store, as loaded from one file, with the changes made since.
#[derive(Debug, Clone)]
pub struct TrustStore {
    path: PathBuf,
    file: TrustFile,
    /// The records and removals not yet saved, in order.
    changes: Vec<Change>,
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
            changes: Vec::new(),
        }
    }

    /// Reads the store; a missing file is an empty store.
    pub fn load(path: impl Into<PathBuf>) -> Result<Self, PluginError> {
        let path = path.into();
        // Not through a link planted in its place: its records would be taken as this home's.
        let bytes = match bosun_fsio::read_state(&path) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return Ok(Self::empty(path)),
            Err(source) => return Err(PluginError::Read { path, source }),
        };
        let file = parse(&bytes, &path)?;
        Ok(Self {
            path,
            file,
            changes: Vec::new(),
        })
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
        self.change(Change::Record {
            scope: scope.trust_key(),
            name: local_name.to_owned(),
            record,
        });
    }

    /// Forgets a plugin's trust; returns the record it had. Takes effect on disk at
    /// [`TrustStore::save`].
    pub fn remove(&mut self, scope: &PluginScope, local_name: &str) -> Option<TrustRecord> {
        self.change(Change::Remove {
            scope: scope.trust_key(),
            name: local_name.to_owned(),
        })
    }

    fn change(&mut self, change: Change) -> Option<TrustRecord> {
        self.changes.push(change.clone());
        self.file.apply(change)
    }

    /// Every record: scope key, local name, record; sorted.
    pub fn records(&self) -> impl Iterator<Item = (&str, &str, &TrustRecord)> {
        self.file.scopes.iter().flat_map(|(scope, plugins)| {
            plugins
                .iter()
                .map(move |(name, record)| (scope.as_str(), name.as_str(), record))
        })
    }

    /// Saves the records and removals made since the store was loaded: under the file's lock
    /// ([`crate::state_lock`]) it reads the file as it is on disk now, applies this store's
    /// changes in order and writes the result atomically (a temporary file of mode 0600 renamed
    /// over the old one; the directory is created with mode 0700 if missing). A record another
    /// process wrote meanwhile is kept; for the plugins this store changed, its change wins.
    /// Afterwards the store holds what was written. With nothing changed, nothing is written.
    ///
    /// # Errors
    /// The file on disk no longer parses (it is left as it is, and the error names it), the
    /// lock stayed held by another process, or the write failed; the file is then unchanged.
    pub fn save(&mut self) -> Result<(), PluginError> {
        if self.changes.is_empty() {
            return Ok(());
        }
        let path = self.path.clone();
        let merged = replay(
            &path,
            &self.changes,
            |current| match current {
                Some(bytes) => parse(bytes, &path),
                None => Ok(TrustFile {
                    version: TRUST_VERSION,
                    scopes: BTreeMap::new(),
                }),
            },
            |file, change| {
                file.apply(change);
            },
            |file| {
                toml::to_string(file)
                    .map(String::into_bytes)
                    .map_err(|e| PluginError::Write {
                        path: path.clone(),
                        source: std::io::Error::other(e),
                    })
            },
        );
        self.file = match merged {
            Ok(file) => file,
            Err(UpdateError::Change(e)) => return Err(e),
            Err(UpdateError::Io(source)) => return Err(PluginError::Write { path, source }),
        };
        self.changes.clear();
        Ok(())
    }
}

/// The store's text, read strictly and checked.
fn parse(bytes: &[u8], path: &Path) -> Result<TrustFile, PluginError> {
    let text = std::str::from_utf8(bytes).map_err(|e| PluginError::TrustParse {
        path: path.to_owned(),
        line: 1,
        column: 1,
        message: format!("not UTF-8: {e}"),
    })?;
    let file: TrustFile = toml::from_str(text).map_err(|e| {
        let (line, column) = e.span().map(|s| line_col(text, s.start)).unwrap_or((1, 1));
        PluginError::TrustParse {
            path: path.to_owned(),
            line,
            column,
            message: e.message().trim().to_owned(),
        }
    })?;
    check_file(&file, path)?;
    Ok(file)
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
