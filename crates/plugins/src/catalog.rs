//! The catalog: every plugin Bosun can see, its state, and the names its tools are offered
//! under — computed from metadata alone.
//!
//! Each plugin is read once — a native plugin's `plugin.wasm`, a Forge or Triggerfish plugin's
//! whole directory as a [`SourceSnapshot`] — and the same bytes are hashed, parsed for metadata
//! and, for an enabled plugin, kept, so what was hashed and checked against the trust store is
//! exactly what the sandbox later loads. Nothing here compiles or runs plugin code, and one bad
//! plugin never stops the others from being listed or loaded.
//!
//! A JavaScript plugin's tools are registered by its code, which runs only in the sandbox after
//! trust: its entry has no [`ToolOffer`]s and [`Catalog::resolve`] does not know its tools; the
//! host names them once the plugin is activated. Its state is computed exactly as a native
//! plugin's, from the snapshot's hash and the capabilities its manifest declares
//! ([`JsManifest::capabilities`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::path::Path;
use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::PluginError;
use crate::chock::{ChockModule, RefusedTool};
use crate::digests::{Digests, Identity};
use crate::discovery::{
    Discovered, DiscoveryWarning, PluginConfig, PluginFormat, PluginScope, discover_project,
    discover_user,
};
use crate::lock::InstallLock;
use crate::metadata::{Manifest, PluginTool};
use crate::source::SourceSnapshot;
use crate::trust::{Declared, TrustRecord, TrustStore};

mod entry;

pub use entry::{
    Change, JsManifest, PluginContent, PluginEntry, PluginState, ToolOffer, tool_action,
};

/// Largest `plugin.wasm` read, in bytes (64 MiB).
pub const MAX_COMPONENT_BYTES: u64 = 64 * 1024 * 1024;

/// What the catalog is computed from.
#[derive(Debug, Clone, Copy)]
pub struct CatalogInput<'a> {
    /// `$BOSUN_HOME`.
    pub home: &'a Path,
    /// `[plugins.<local>]` of the user's config.
    pub user_plugins: &'a BTreeMap<String, PluginConfig>,
    /// The canonical workspace root, when project plugins are to be considered.
    pub workspace: Option<&'a Path>,
    /// The trust store.
    pub trust: &'a TrustStore,
    /// Names of the host's built-in tools, which no plugin may shadow.
    pub builtins: &'a [&'a str],
    /// For a listing only: components unchanged since they were last read are shown from
    /// what was kept, and their bytes are not kept for loading ([`Digests`]).
    pub digests: Option<&'a Digests>,
}

/// Something the catalog wants a person to know; nothing it stops.
#[derive(Debug)]
pub enum CatalogWarning {
    /// A plugin directory could not be looked at.
    Discovery(DiscoveryWarning),
    /// A tool was not offered because an earlier plugin offers one of the same name.
    ToolClash {
        /// The plugin that loses the tool.
        plugin: String,
        /// The tool.
        tool: String,
        /// The earlier plugin that keeps the name.
        kept_by: String,
    },
    /// A tool of a Chock plugin that cannot be offered.
    ToolRefused {
        /// The plugin.
        plugin: String,
        /// The tool and why.
        refused: RefusedTool,
    },
}

impl fmt::Display for CatalogWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Discovery(w) => write!(f, "{} {}", w.path.display(), w.message),
            Self::ToolClash {
                plugin,
                tool,
                kept_by,
            } => write!(
                f,
                "plugin `{plugin}`: tool `{tool}` is not offered because plugin `{kept_by}`, loaded earlier, has a tool of that name: rename one of them"
            ),
            Self::ToolRefused { plugin, refused } => write!(
                f,
                "plugin `{plugin}`: tool `{}` is not offered: {}",
                refused.tool, refused.reason
            ),
        }
    }
}

/// A tool found by its model-visible name.
#[derive(Debug, Clone, Copy)]
pub struct ResolvedTool<'a> {
    /// The plugin.
    pub entry: &'a PluginEntry,
    /// The tool.
    pub tool: &'a PluginTool,
    /// Its naming.
    pub offer: &'a ToolOffer,
}

/// Every plugin, in load order: user plugins (configured ones by local name, then unconfigured
/// directories), then project plugins, each sorted.
#[derive(Debug)]
pub struct Catalog {
    entries: Vec<PluginEntry>,
    warnings: Vec<CatalogWarning>,
    by_model_name: HashMap<String, (usize, usize)>,
}

/// Judges plugins on every available core, keeping load order. Reading, hashing and parsing
/// are independent per plugin and dominate listing time.
fn judge_all(
    found: Vec<Discovered>,
    input: &CatalogInput<'_>,
    lock: Option<&InstallLock>,
) -> Vec<PluginEntry> {
    // Under four plugins the count of cores is not asked for: that reads cgroup files, which
    // costs more than judging them (most commands have none).
    let workers = if found.len() < 4 {
        1
    } else {
        std::thread::available_parallelism()
            .map_or(1, std::num::NonZeroUsize::get)
            .min(8)
    };
    if workers <= 1 {
        return found.into_iter().map(|d| judge(d, input, lock)).collect();
    }
    let chunk = found.len().div_ceil(workers);
    let mut chunks: Vec<Vec<Discovered>> = Vec::new();
    let mut rest = found.into_iter().peekable();
    while rest.peek().is_some() {
        chunks.push(rest.by_ref().take(chunk).collect());
    }
    std::thread::scope(|scope| {
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                scope.spawn(move || {
                    chunk
                        .into_iter()
                        .map(|d| judge(d, input, lock))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        // A worker panicking would be a bug in judging; surface it rather than drop plugins.
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    })
}

impl Catalog {
    /// Discovers, reads and judges every plugin. Never fails: a plugin that cannot be used is
    /// listed as [`PluginState::Invalid`] with the reason.
    pub fn build(input: CatalogInput<'_>) -> Self {
        let (mut found, warnings) = discover_user(input.home, input.user_plugins);
        let mut warnings: Vec<CatalogWarning> = warnings
            .into_iter()
            .map(CatalogWarning::Discovery)
            .collect();
        if let Some(workspace) = input.workspace {
            let (project, project_warnings) = discover_project(workspace);
            found.extend(project);
            warnings.extend(project_warnings.into_iter().map(CatalogWarning::Discovery));
        }
        // Plugins installed from a registry are checked against their integrity record at
        // every load (`lock`); an unreadable lock is a warning (trust still pins every byte).
        let lock = match InstallLock::load(input.home) {
            Ok(lock) => Some(lock),
            Err(e) => {
                warnings.push(CatalogWarning::Discovery(
                    crate::discovery::DiscoveryWarning {
                        path: crate::lock::lock_path(input.home),
                        message: e.to_string(),
                    },
                ));
                None
            }
        };
        let entries = judge_all(found, &input, lock.as_ref());
        if let Some(digests) = input.digests {
            digests.save();
        }
        for entry in &entries {
            warnings.extend(entry.refused_tools().iter().map(|refused| {
                CatalogWarning::ToolRefused {
                    plugin: entry.local_name.clone(),
                    refused: refused.clone(),
                }
            }));
        }
        let mut catalog = Self {
            entries,
            warnings,
            by_model_name: HashMap::new(),
        };
        catalog.name_tools();
        catalog
    }

    /// Gives each enabled plugin's tools their model-visible names, in load order; a later
    /// plugin loses only the tool whose name is taken. Built-ins cannot clash: a plugin that
    /// shadows one is invalid.
    fn name_tools(&mut self) {
        let mut owner: HashMap<String, String> = HashMap::new();
        for (i, entry) in self.entries.iter_mut().enumerate() {
            if entry.state != PluginState::Enabled {
                continue;
            }
            for (j, offer) in entry.offers.iter_mut().enumerate() {
                match owner.get(&offer.tool) {
                    Some(kept_by) => self.warnings.push(CatalogWarning::ToolClash {
                        plugin: entry.local_name.clone(),
                        tool: offer.tool.clone(),
                        kept_by: kept_by.clone(),
                    }),
                    None => {
                        owner.insert(offer.tool.clone(), entry.local_name.clone());
                        self.by_model_name.insert(offer.tool.clone(), (i, j));
                        offer.model_name = Some(offer.tool.clone());
                    }
                }
            }
        }
    }

    /// Marks each entry `refuse` gives a reason for as [`PluginState::Invalid`] with that
    /// reason — a rule from outside the plugin, such as the machine's managed policy — and
    /// names the tools again, so a refused plugin's tools are neither offered nor take a name.
    pub fn refuse(&mut self, refuse: impl Fn(&PluginEntry) -> Option<String>) {
        let mut refused = false;
        for entry in &mut self.entries {
            if let Some(reason) = refuse(entry) {
                entry.state = PluginState::Invalid {
                    reason: bosun_core::escape_hidden(&reason),
                };
                refused = true;
            }
        }
        if !refused {
            return;
        }
        for offer in self.entries.iter_mut().flat_map(|e| e.offers.iter_mut()) {
            offer.model_name = None;
        }
        self.by_model_name.clear();
        self.warnings
            .retain(|w| !matches!(w, CatalogWarning::ToolClash { .. }));
        self.name_tools();
    }

    /// Every plugin, in load order.
    pub fn entries(&self) -> &[PluginEntry] {
        &self.entries
    }

    /// The enabled plugins, in load order.
    pub fn enabled(&self) -> impl Iterator<Item = &PluginEntry> {
        self.entries
            .iter()
            .filter(|e| e.state == PluginState::Enabled)
    }

    /// The plugin `local_name` of `scope`.
    pub fn get(&self, scope: &PluginScope, local_name: &str) -> Option<&PluginEntry> {
        self.entries
            .iter()
            .find(|e| &e.scope == scope && e.local_name == local_name)
    }

    /// What a person should be told.
    pub fn warnings(&self) -> &[CatalogWarning] {
        &self.warnings
    }

    /// The tool the model calls `model_name`, by exact name.
    pub fn resolve(&self, model_name: &str) -> Option<ResolvedTool<'_>> {
        let &(i, j) = self.by_model_name.get(model_name)?;
        let entry = self.entries.get(i)?;
        Some(ResolvedTool {
            entry,
            tool: entry.manifest()?.tools.get(j)?,
            offer: entry.offers.get(j)?,
        })
    }
}

/// What was read of a plugin, once: the component's (or Chock module's) bytes or the
/// directory's snapshot.
enum Content {
    Native(Vec<u8>),
    Chock(Vec<u8>),
    Js(SourceSnapshot),
    /// A component a listing saw unchanged: its digest and metadata section as kept.
    Listed {
        sha256: String,
        metadata: String,
    },
}

/// Reads one plugin and decides its state. Precedence: invalid, disabled, untrusted, changed,
/// enabled.
fn judge(found: Discovered, input: &CatalogInput<'_>, lock: Option<&InstallLock>) -> PluginEntry {
    let mut entry = PluginEntry {
        scope: found.scope,
        local_name: found.local_name,
        dir: found.dir,
        format: found.format,
        wasm: found.wasm,
        config: found.config,
        state: PluginState::Disabled,
        sha256: None,
        content: None,
        offers: Vec::new(),
    };
    // Reasons quote the plugin's own text; a person reads them, so nothing may stay hidden.
    let invalid = |e: PluginError| PluginState::Invalid {
        reason: bosun_core::escape_hidden(&e.to_string()),
    };
    if let Some(problem) = found.problem {
        entry.state = invalid(problem);
        return entry;
    }
    if matches!(entry.scope, PluginScope::Project { .. })
        && input.user_plugins.contains_key(&entry.local_name)
    {
        entry.state = invalid(PluginError::LocalNameTaken {
            local: entry.local_name.clone(),
        });
        return entry;
    }
    // The identity of the component file read, for a listing to keep.
    let mut read_identity: Option<Identity> = None;
    let content = match entry.format {
        // `plugin.wasm` holds a component (native) or a core module (Chock): the header tells.
        PluginFormat::Native | PluginFormat::Chock => {
            match input.digests.and_then(|d| d.lookup(&entry.wasm)) {
                Some(known) => {
                    entry.format = PluginFormat::Native;
                    Ok(Content::Listed {
                        sha256: known.sha256,
                        metadata: known.metadata,
                    })
                }
                None => {
                    read_component_file(&entry.wasm, &entry.local_name).map(|(bytes, identity)| {
                        read_identity = identity;
                        if crate::chock::is_core_module(&bytes) {
                            entry.format = PluginFormat::Chock;
                            Content::Chock(bytes)
                        } else {
                            entry.format = PluginFormat::Native;
                            Content::Native(bytes)
                        }
                    })
                }
            }
        }
        PluginFormat::Forge | PluginFormat::Triggerfish => {
            SourceSnapshot::read(&entry.dir).map(Content::Js)
        }
    };
    let content = match content {
        Ok(content) => content,
        Err(e) => {
            entry.state = invalid(e);
            return entry;
        }
    };
    let sha256 = match &content {
        Content::Native(bytes) | Content::Chock(bytes) => sha256_hex(bytes),
        Content::Js(snapshot) => snapshot.sha256().to_owned(),
        Content::Listed { sha256, .. } => sha256.clone(),
    };
    if let (Some(digests), Some(identity), Content::Native(bytes)) =
        (input.digests, read_identity, &content)
        && let Ok(section) = crate::metadata::metadata_section(bytes)
    {
        digests.learn(&entry.wasm, identity, &sha256, section);
    }
    entry.sha256 = Some(sha256.clone());
    let read = match &content {
        Content::Native(bytes) => Manifest::from_component(bytes, input.builtins).map(|manifest| {
            let declared = entry.name_tools(&manifest);
            let content = PluginContent::Native {
                manifest,
                bytes: None,
            };
            (declared, content)
        }),
        Content::Chock(bytes) => ChockModule::read(bytes).and_then(|module| {
            let (manifest, refused_tools) = module.manifest(input.builtins)?;
            let declared = entry.name_tools(&manifest);
            let content = PluginContent::Chock {
                manifest,
                module,
                refused_tools,
                bytes: None,
            };
            Ok((declared, content))
        }),
        Content::Js(snapshot) => JsManifest::read(entry.format, snapshot, &entry.dir).map(|js| {
            let declared = js.declared();
            let content = PluginContent::Js {
                manifest: js,
                source: None,
            };
            (declared, content)
        }),
        // Checked again from the kept section, exactly as from the component's.
        Content::Listed { metadata, .. } => {
            crate::metadata::PluginMetadata::from_json(metadata.as_bytes())
                .and_then(|meta| Manifest::from_metadata(meta, input.builtins))
                .map(|manifest| {
                    let declared = entry.name_tools(&manifest);
                    let content = PluginContent::Native {
                        manifest,
                        bytes: None,
                    };
                    (declared, content)
                })
        }
    };
    let declared = read.map(|(declared, read)| {
        entry.content = Some(read);
        declared
    });
    let declared = match declared {
        Ok(declared) => declared,
        Err(e) => {
            entry.state = invalid(e);
            return entry;
        }
    };
    if entry.scope == PluginScope::User
        && let Some(record) = lock.and_then(|l| l.plugin(&entry.local_name))
        && record.sha256 != sha256
    {
        let drift = crate::lock::drift(record, &entry.dir);
        entry.state = PluginState::Invalid {
            reason: format!(
                "changed on disk since version {} was installed from the registry `{}` ({}): reinstall it (bosun plugins install {} --from {} --force) or accept the change (bosun plugins verify {} --accept)",
                bosun_core::escape_hidden(&record.version),
                bosun_core::escape_hidden(&record.source),
                drift,
                entry.local_name,
                bosun_core::escape_hidden(&record.source),
                entry.local_name,
            ),
        };
        return entry;
    }
    entry.state = if !found.wanted {
        PluginState::Disabled
    } else {
        match input.trust.get(&entry.scope, &entry.local_name) {
            None => PluginState::Untrusted,
            Some(record) => match change(record, &sha256, &declared) {
                Some(what) => PluginState::Changed { what },
                None => PluginState::Enabled,
            },
        }
    };
    // A listing loads nothing: only a host keeps what it will run.
    if entry.state == PluginState::Enabled && input.digests.is_none() {
        match (content, &mut entry.content) {
            (
                Content::Native(read) | Content::Chock(read),
                Some(PluginContent::Native { bytes, .. } | PluginContent::Chock { bytes, .. }),
            ) => *bytes = Some(Arc::from(read)),
            (Content::Js(snapshot), Some(PluginContent::Js { source, .. })) => {
                *source = Some(Arc::new(snapshot));
            }
            _ => {}
        }
    }
    entry
}

/// `None` when the record covers the plugin as read: same hash, and no capability beyond those
/// trusted. The same for every format.
fn change(record: &TrustRecord, sha256: &str, declared: &Declared) -> Option<Change> {
    let now_caps = &declared.capabilities;
    let old_caps: BTreeSet<String> = record.capabilities.iter().cloned().collect();
    if record.sha256 == sha256 && now_caps.is_subset(&old_caps) {
        return None;
    }
    let now_tools = &declared.tools;
    let old_tools: BTreeSet<String> = record.tools.iter().cloned().collect();
    let diff = |a: &BTreeSet<String>, b: &BTreeSet<String>| a.difference(b).cloned().collect();
    Some(Change {
        old_sha256: record.sha256.clone(),
        new_sha256: sha256.to_owned(),
        old_version: record.version.clone(),
        new_version: declared.version.clone(),
        added_capabilities: diff(now_caps, &old_caps),
        removed_capabilities: diff(&old_caps, now_caps),
        added_tools: diff(now_tools, &old_tools),
        removed_tools: diff(&old_tools, now_tools),
    })
}

/// Lowercase hex SHA-256.
pub fn sha256_hex(bytes: &[u8]) -> String {
    bosun_core::text::hex(&Sha256::digest(bytes))
}

/// Reads `plugin.wasm` once: not through a symbolic link (checked by the open itself, so a
/// link swapped in after discovery is refused too), a regular file, at most 64 MiB.
pub fn read_component(path: &Path, local_name: &str) -> Result<Vec<u8>, PluginError> {
    read_component_file(path, local_name).map(|(bytes, _)| bytes)
}

/// As [`read_component`], with the identity of the file read (taken from the open file before
/// reading).
fn read_component_file(
    path: &Path,
    local_name: &str,
) -> Result<(Vec<u8>, Option<Identity>), PluginError> {
    let read_error = |source| PluginError::Read {
        path: path.to_owned(),
        source,
    };
    let (bytes, meta) = bosun_fsio::read_regular_with_metadata(path, MAX_COMPONENT_BYTES)
        .map_err(|e| match e {
            e if e.is_not_found() => PluginError::Missing {
                local: local_name.to_owned(),
                path: path.to_owned(),
            },
            bosun_fsio::OpenError::NotRegular {
                found: bosun_fsio::Found::Link,
                ..
            } => PluginError::Symlink {
                path: path.to_owned(),
                what: "plugin.wasm",
            },
            bosun_fsio::OpenError::NotRegular { found, .. } => PluginError::BadFile {
                path: path.to_owned(),
                problem: format!(
                    "is not a regular file ({found}): put the plugin's component there"
                ),
            },
            bosun_fsio::OpenError::TooLarge { .. } => PluginError::BadFile {
                path: path.to_owned(),
                problem: format!(
                    "is larger than {MAX_COMPONENT_BYTES} bytes: Bosun does not load plugins this large"
                ),
            },
            other => read_error(other.into_io()),
        })?;
    Ok((bytes, Identity::of(&meta)))
}
