//! One plugin as the catalog sees it ([`PluginEntry`]): its state against trust, how its tools
//! are offered, and what was read of it by format ([`PluginContent`]), which each plugin
//! runtime matches.

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bosun_core::Classification;
use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::PluginError;
use crate::chock::{ChockModule, RefusedTool};
use crate::discovery::{PluginConfig, PluginFormat, PluginScope, TRIGGERFISH_ENTRY};
use crate::forge::ForgeManifest;
use crate::metadata::{Manifest, PluginTool};
use crate::source::SourceSnapshot;
use crate::triggerfish::TriggerfishManifest;
use crate::trust::{Declared, TrustRecord};

/// What differs between a plugin and its trust record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    /// SHA-256 the user trusted.
    pub old_sha256: String,
    /// SHA-256 of the bytes on disk now.
    pub new_sha256: String,
    /// Version the user trusted.
    pub old_version: String,
    /// Version on disk now.
    pub new_version: String,
    /// Capabilities declared now but not trusted.
    pub added_capabilities: Vec<String>,
    /// Capabilities trusted but no longer declared.
    pub removed_capabilities: Vec<String>,
    /// Tools declared now but not trusted.
    pub added_tools: Vec<String>,
    /// Tools trusted but no longer declared.
    pub removed_tools: Vec<String>,
}

/// Whether and why a plugin loads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum PluginState {
    /// Wanted, valid and trusted exactly as it is: its tools are offered.
    Enabled,
    /// Not wanted: `enabled = false`, or a user plugin directory no config entry points at.
    Disabled,
    /// Wanted and valid, but never trusted: `bosun plugins trust` reviews and records it.
    Untrusted,
    /// Trusted once, but its bytes changed or it declares capabilities beyond the record.
    Changed {
        /// What changed, for the review.
        what: Change,
    },
    /// Cannot be used.
    Invalid {
        /// Why, and what to do.
        reason: String,
    },
}

impl fmt::Display for PluginState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Enabled => f.write_str("enabled"),
            Self::Disabled => f.write_str("disabled"),
            Self::Untrusted => f.write_str("untrusted"),
            Self::Changed { .. } => f.write_str("changed"),
            Self::Invalid { .. } => f.write_str("invalid"),
        }
    }
}

/// How one tool of a plugin is offered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolOffer {
    /// The tool's own name.
    pub tool: String,
    /// Its policy action, `plugin.<local-name>.tool.<tool>`.
    pub action: String,
    /// The name the model calls it by; `None` when the plugin is not enabled or an earlier
    /// plugin already offers a tool of that name.
    pub model_name: Option<String>,
}

/// A Forge or Triggerfish plugin's manifest, read without running the plugin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum JsManifest {
    /// `plugin.json`.
    Forge(ForgeManifest),
    /// The `manifest` literal of `mod.ts`.
    Triggerfish(TriggerfishManifest),
}

impl JsManifest {
    /// Reads the manifest of a plugin of `format` (Forge or Triggerfish) from its snapshot;
    /// `dir` is the plugin's directory, whose name the manifest must repeat.
    pub fn read(
        format: PluginFormat,
        snapshot: &SourceSnapshot,
        dir: &Path,
    ) -> Result<Self, PluginError> {
        match format {
            PluginFormat::Forge => ForgeManifest::from_snapshot(snapshot, dir).map(Self::Forge),
            PluginFormat::Triggerfish => {
                TriggerfishManifest::from_snapshot(snapshot, dir).map(Self::Triggerfish)
            }
            PluginFormat::Native | PluginFormat::Chock => Err(PluginError::ManifestInvalid {
                path: dir.to_owned(),
                message: "is a WebAssembly plugin: its metadata is in plugin.wasm".to_owned(),
            }),
        }
    }

    /// Its format.
    pub fn format(&self) -> PluginFormat {
        match self {
            Self::Forge(_) => PluginFormat::Forge,
            Self::Triggerfish(_) => PluginFormat::Triggerfish,
        }
    }

    /// The plugin's name (equal to its directory's).
    pub fn name(&self) -> &str {
        match self {
            Self::Forge(m) => &m.name,
            Self::Triggerfish(m) => &m.name,
        }
    }

    /// Its version as declared.
    pub fn version(&self) -> &str {
        match self {
            Self::Forge(m) => &m.version,
            Self::Triggerfish(m) => &m.version,
        }
    }

    /// The module the engine loads, relative to the plugin directory: Forge's normalised
    /// `entry`, or `mod.ts`.
    pub fn entry(&self) -> &str {
        match self {
            Self::Forge(m) => &m.entry,
            Self::Triggerfish(_) => TRIGGERFISH_ENTRY,
        }
    }

    /// The capabilities trust records: Forge's prefixed `forge:` (`forge:network:access`);
    /// Triggerfish's `net.http:<authority>` per endpoint and `triggerfish:trusted` when the
    /// manifest asks for trust.
    pub fn capabilities(&self) -> BTreeSet<String> {
        match self {
            Self::Forge(m) => m.trust_capabilities(),
            Self::Triggerfish(m) => m.trust_capabilities(),
        }
    }

    /// Whether the manifest asks to build code from strings (`eval`, `Function`).
    pub fn code_from_strings(&self) -> bool {
        match self {
            Self::Forge(m) => m.code_from_strings,
            Self::Triggerfish(m) => m.code_from_strings,
        }
    }

    /// The classification the manifest gives its tools' results (Triggerfish); `None` for Forge,
    /// whose manifest has none.
    pub fn classification(&self) -> Option<Classification> {
        match self {
            Self::Forge(_) => None,
            Self::Triggerfish(m) => Some(m.classification),
        }
    }

    /// What trust pins besides the hash: the version and the capabilities; no tools.
    pub fn declared(&self) -> Declared {
        Declared {
            version: self.version().to_owned(),
            tools: BTreeSet::new(),
            capabilities: self.capabilities(),
        }
    }
}

/// What was read and checked of a plugin, by format: each plugin runtime matches its own
/// variant. The bytes or files to run are kept for enabled plugins only.
#[derive(Debug, Clone)]
pub enum PluginContent {
    /// A WebAssembly component with Bosun's metadata section.
    Native {
        /// Its checked metadata.
        manifest: Manifest,
        /// The exact bytes that were hashed and checked.
        bytes: Option<Arc<[u8]>>,
    },
    /// A Chock core module.
    Chock {
        /// Its tools as Bosun offers them.
        manifest: Manifest,
        /// The module's metadata as read from it.
        module: ChockModule,
        /// Tools that are not offered, with the reason (Chock refuses a tool it cannot use and
        /// keeps the others).
        refused_tools: Vec<RefusedTool>,
        /// The exact bytes that were hashed and checked.
        bytes: Option<Arc<[u8]>>,
    },
    /// A Forge or Triggerfish plugin, whose code names its tools when it runs.
    Js {
        /// Its checked manifest.
        manifest: JsManifest,
        /// The exact files that were hashed and checked; the engine loads these, never the
        /// directory again.
        source: Option<Arc<SourceSnapshot>>,
    },
}

/// One plugin as the catalog sees it.
#[derive(Debug, Clone)]
pub struct PluginEntry {
    /// Its scope.
    pub scope: PluginScope,
    /// Its local name (config key, or directory name).
    pub local_name: String,
    /// Its directory.
    pub dir: PathBuf,
    /// Its format ([`PluginFormat::Native`] for a directory whose format cannot be told; it is
    /// then invalid).
    pub format: PluginFormat,
    /// Its `plugin.wasm` (native plugins; the path is kept for every format).
    pub wasm: PathBuf,
    /// Its config entry, for user plugins named in config.
    pub config: Option<PluginConfig>,
    /// Its state.
    pub state: PluginState,
    /// Lowercase hex SHA-256 of what was read, when it could be read: `plugin.wasm`'s bytes,
    /// or the source snapshot's hash.
    pub sha256: Option<String>,
    /// What was read and checked, by format; `None` when its metadata is unusable.
    pub content: Option<PluginContent>,
    /// Naming of each tool, in the manifest's order (none for JavaScript plugins, whose tools
    /// are registered when they run).
    pub offers: Vec<ToolOffer>,
}

/// The entry as `bosun plugins list --json` and `info --json` print it: one key per format's
/// part, as before the parts became one enum.
#[derive(Serialize)]
struct EntryJson<'a> {
    #[serde(flatten)]
    scope: &'a PluginScope,
    local_name: &'a str,
    dir: &'a Path,
    format: PluginFormat,
    wasm: &'a Path,
    #[serde(flatten)]
    state: &'a PluginState,
    sha256: &'a Option<String>,
    manifest: Option<&'a Manifest>,
    #[serde(skip_serializing_if = "Option::is_none")]
    js: Option<&'a JsManifest>,
    #[serde(skip_serializing_if = "Option::is_none")]
    chock: Option<&'a ChockModule>,
    #[serde(skip_serializing_if = "<[RefusedTool]>::is_empty")]
    refused_tools: &'a [RefusedTool],
    offers: &'a [ToolOffer],
}

impl Serialize for PluginEntry {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        EntryJson {
            scope: &self.scope,
            local_name: &self.local_name,
            dir: &self.dir,
            format: self.format,
            wasm: &self.wasm,
            state: &self.state,
            sha256: &self.sha256,
            manifest: self.manifest(),
            js: self.js(),
            chock: self.chock(),
            refused_tools: self.refused_tools(),
            offers: &self.offers,
        }
        .serialize(serializer)
    }
}

impl PluginEntry {
    /// A WebAssembly plugin's exact bytes that were hashed and checked; kept for enabled
    /// plugins only.
    pub fn bytes(&self) -> Option<&Arc<[u8]>> {
        match &self.content {
            Some(PluginContent::Native { bytes, .. } | PluginContent::Chock { bytes, .. }) => {
                bytes.as_ref()
            }
            _ => None,
        }
    }

    /// A JavaScript plugin's exact files that were hashed and checked; kept for enabled plugins
    /// only. The engine loads these, never the directory again.
    pub fn source(&self) -> Option<&Arc<SourceSnapshot>> {
        match &self.content {
            Some(PluginContent::Js { source, .. }) => source.as_ref(),
            _ => None,
        }
    }

    /// The checked metadata of a plugin whose tools are known without running it (native,
    /// Chock).
    pub fn manifest(&self) -> Option<&Manifest> {
        match &self.content {
            Some(
                PluginContent::Native { manifest, .. } | PluginContent::Chock { manifest, .. },
            ) => Some(manifest),
            _ => None,
        }
    }

    /// A Forge or Triggerfish plugin's checked manifest.
    pub fn js(&self) -> Option<&JsManifest> {
        match &self.content {
            Some(PluginContent::Js { manifest, .. }) => Some(manifest),
            _ => None,
        }
    }

    /// A Chock plugin's metadata as read from its module.
    pub fn chock(&self) -> Option<&ChockModule> {
        match &self.content {
            Some(PluginContent::Chock { module, .. }) => Some(module),
            _ => None,
        }
    }

    /// Tools of the plugin that are not offered, with the reason.
    pub fn refused_tools(&self) -> &[RefusedTool] {
        match &self.content {
            Some(PluginContent::Chock { refused_tools, .. }) => refused_tools,
            _ => &[],
        }
    }

    /// Its version as declared, when its metadata could be read.
    pub fn version(&self) -> Option<String> {
        match &self.content {
            Some(
                PluginContent::Native { manifest, .. } | PluginContent::Chock { manifest, .. },
            ) => Some(manifest.version.to_string()),
            Some(PluginContent::Js { manifest, .. }) => Some(manifest.version().to_owned()),
            None => None,
        }
    }

    /// Where its code lies for a person to review: a JavaScript plugin's directory (every file
    /// of it is hashed), a WebAssembly plugin's `plugin.wasm`.
    pub fn reviewed_path(&self) -> &Path {
        if self.format.is_js() {
            &self.dir
        } else {
            &self.wasm
        }
    }

    /// Whether running it needs Bosun's JavaScript engine.
    pub fn needs_js_engine(&self) -> bool {
        matches!(self.content, Some(PluginContent::Js { .. }))
            || (self.content.is_none() && self.format.is_js())
    }

    /// Names the tools of a checked manifest (native or Chock); returns what trust pins.
    pub(crate) fn name_tools(&mut self, manifest: &Manifest) -> Declared {
        self.offers = manifest
            .tools
            .iter()
            .map(|t| ToolOffer {
                tool: t.spec.name.as_str().to_owned(),
                action: tool_action(&self.local_name, t.spec.name.as_str()),
                model_name: None,
            })
            .collect();
        Declared::from(manifest)
    }

    /// What trust pins besides the hash, from whichever manifest the plugin has.
    pub fn declared(&self) -> Option<Declared> {
        match (self.manifest(), self.js()) {
            (Some(manifest), _) => Some(Declared::from(manifest)),
            (None, Some(js)) => Some(js.declared()),
            (None, None) => None,
        }
    }

    /// Each tool with its offer.
    pub fn tools(&self) -> impl Iterator<Item = (&PluginTool, &ToolOffer)> {
        self.manifest()
            .into_iter()
            .flat_map(|m| m.tools.iter())
            .zip(self.offers.iter())
    }

    /// The record that trusts this plugin exactly as read; `None` when it is invalid.
    pub fn trust_record(&self, trusted_at: DateTime<Utc>) -> Option<TrustRecord> {
        let (Some(sha256), Some(declared)) = (&self.sha256, self.declared()) else {
            return None;
        };
        if matches!(self.state, PluginState::Invalid { .. }) {
            return None;
        }
        Some(TrustRecord::of(sha256.clone(), &declared, trusted_at))
    }
}

/// The policy action of a plugin tool.
pub fn tool_action(local_name: &str, tool: &str) -> String {
    format!("plugin.{local_name}.tool.{tool}")
}
