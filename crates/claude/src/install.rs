//! Installing a Claude Code plugin: the marketplace is opened, the plugin's source fetched into
//! a staging folder (git through the sandbox launcher, a third-party source only at a pinned
//! commit unless the person allows otherwise), read without running anything, and reviewed;
//! on commit it moves into a cache keyed by its content digest and `installed.json` records that
//! digest and every file. At every load the files are checked against the record: a plugin whose
//! files changed after it was trusted is refused until it is installed (and reviewed) again.
//!
//! Layout under `$BOSUN_HOME/claude/`: `cache/<digest>/` (the plugins, read-only to their own
//! processes), `installed.json`, `config/<plugin@marketplace>.json` (non-sensitive
//! `userConfig`), `secrets/<plugin@marketplace>.json` (mode 0600, sensitive values), `data/`
//! (`${CLAUDE_PLUGIN_DATA}`) and `staging/`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use bosun_launch::Launcher;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::ClaudeError;
use crate::layout::{Executable, PluginLayout};
use crate::marketplace::{
    Marketplace, MarketplaceEntry, PluginSource, RemoteSource, parse_marketplace,
};
use crate::tree::{Tree, copy_tree};

/// `$BOSUN_HOME/claude`.
pub fn claude_home(home: &Path) -> PathBuf {
    home.join("claude")
}

/// Where a marketplace is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MarketplaceLocation {
    /// A folder holding `.claude-plugin/marketplace.json` (or that file itself).
    Dir(PathBuf),
    /// A git repository holding one.
    Git(String),
    /// A `marketplace.json` fetched over HTTPS ([`crate::http`]) within `timeout`: its
    /// relative sources cannot be installed.
    Https {
        /// Its address.
        url: String,
        /// How long the fetch may take.
        timeout: std::time::Duration,
    },
}

/// A marketplace read, with the folder its relative sources are in.
#[derive(Debug)]
pub struct OpenedMarketplace {
    /// What it lists.
    pub marketplace: Marketplace,
    /// Its root folder, where `./relative` sources are; `None` for a marketplace fetched as
    /// one file over HTTPS.
    pub root: Option<PathBuf>,
    /// Where it came from, as shown.
    pub origin: String,
    /// The commit, for a git marketplace.
    pub commit: Option<String>,
    _clone: Option<tempfile::TempDir>,
}

/// Most bytes of a marketplace's listing.
const MAX_LISTING_BYTES: u64 = 4 * 1024 * 1024;

/// `relative` under `root`, with every link resolved, if it stays inside `root`: what a
/// marketplace or a repository names (a plugin folder, its listing) is read only from inside
/// it, never through a link it holds to somewhere else on the machine.
fn inside(root: &Path, relative: impl AsRef<Path>, what: &str) -> Result<PathBuf, ClaudeError> {
    let relative = relative.as_ref();
    let canonical_root = root
        .canonicalize()
        .map_err(|e| ClaudeError::io(format!("reading {}", root.display()), e))?;
    let canonical = root
        .join(relative)
        .canonicalize()
        .map_err(|e| ClaudeError::io(format!("reading {what} {}", relative.display()), e))?;
    if !canonical.starts_with(&canonical_root) {
        return Err(ClaudeError::Source {
            message: format!(
                "{what} `{}` leads outside {}: a link to elsewhere on this machine is not part of it",
                bosun_core::escape_hidden(&relative.display().to_string()),
                root.display()
            ),
        });
    }
    Ok(canonical)
}

/// The plugin folder `relative` of the source at `root` (`shown` as the marketplace wrote it):
/// a folder inside `root` once every link is resolved.
fn plugin_folder(root: &Path, relative: &Path, shown: &str) -> Result<PathBuf, ClaudeError> {
    let canonical = inside(root, relative, "the plugin folder").map_err(|e| match e {
        ClaudeError::Source { message } => ClaudeError::Source {
            message: format!(
                "the source `{}` is not a folder inside the marketplace or repository: {message}",
                bosun_core::escape_hidden(shown)
            ),
        },
        other => other,
    })?;
    if !canonical.is_dir() {
        return Err(ClaudeError::Source {
            message: format!(
                "the source `{}` is not a folder inside the marketplace or repository",
                bosun_core::escape_hidden(shown)
            ),
        });
    }
    Ok(canonical)
}

fn scratch(home: &Path) -> Result<tempfile::TempDir, ClaudeError> {
    let dir = claude_home(home).join("staging");
    std::fs::create_dir_all(&dir)
        .map_err(|e| ClaudeError::io(format!("creating {}", dir.display()), e))?;
    tempfile::Builder::new()
        .prefix(&format!("{}-", std::process::id()))
        .tempdir_in(&dir)
        .map_err(|e| ClaudeError::io(format!("creating a folder in {}", dir.display()), e))
}

/// Opens the marketplace at `location`; a git one is cloned (sandboxed) into a scratch folder
/// under `home` that lives as long as the result.
pub async fn open_marketplace(
    location: &MarketplaceLocation,
    launcher: &Launcher,
    home: &Path,
) -> Result<OpenedMarketplace, ClaudeError> {
    let (root, origin, commit, clone) = match location {
        MarketplaceLocation::Dir(path) => {
            let root = if path.is_file() {
                let parent = path.parent().unwrap_or(Path::new("/"));
                if parent.file_name().is_some_and(|n| n == ".claude-plugin") {
                    parent.parent().unwrap_or(parent).to_path_buf()
                } else {
                    parent.to_path_buf()
                }
            } else {
                path.clone()
            };
            (root, path.display().to_string(), None, None)
        }
        MarketplaceLocation::Git(url) => {
            let work = scratch(home)?;
            let (repo, commit) =
                crate::fetch::clone_at(launcher, work.path(), url, None, None).await?;
            (repo, url.clone(), Some(commit), Some(work))
        }
        MarketplaceLocation::Https { url, timeout } => {
            let bytes = crate::http::fetch_marketplace(url, *timeout).await?;
            let text = String::from_utf8(bytes).map_err(|_| ClaudeError::Manifest {
                what: url.clone(),
                message: "is not UTF-8 text".to_owned(),
            })?;
            let marketplace = parse_marketplace(&text, url)?;
            return Ok(OpenedMarketplace {
                marketplace,
                root: None,
                origin: url.clone(),
                commit: None,
                _clone: None,
            });
        }
    };
    let file = [".claude-plugin/marketplace.json", "marketplace.json"]
        .into_iter()
        .find(|p| root.join(p).symlink_metadata().is_ok())
        .ok_or_else(|| ClaudeError::Source {
            message: format!("{origin} holds no .claude-plugin/marketplace.json"),
        })?;
    // The listing is read only from inside the marketplace, and only so much of it: a link to
    // a file elsewhere (the user's own, `/dev/zero`) is not the marketplace's to show.
    let file = inside(&root, file, "the marketplace's listing")?;
    let text = bosun_fsio::read_text(&file, MAX_LISTING_BYTES).map_err(|e| match e {
        bosun_fsio::OpenError::Io { source, .. } => {
            ClaudeError::io(format!("reading {}", file.display()), source)
        }
        bosun_fsio::OpenError::TooLarge { .. } => ClaudeError::Source {
            message: format!(
                "{} is larger than {} MiB: not a marketplace listing",
                file.display(),
                MAX_LISTING_BYTES >> 20
            ),
        },
        refused => ClaudeError::Source {
            message: refused.to_string(),
        },
    })?;
    let marketplace = parse_marketplace(&text, &origin)?;
    Ok(OpenedMarketplace {
        marketplace,
        root: Some(root),
        origin,
        commit,
        _clone: clone,
    })
}

/// One installed plugin, as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InstalledPlugin {
    /// `name@marketplace`.
    pub id: String,
    /// Its name.
    pub name: String,
    /// Its marketplace (the `[registries.<name>]`).
    pub marketplace: String,
    /// Its version, as it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Where it was fetched from.
    pub source: String,
    /// The git commit, for a git source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// The content digest: its folder is `cache/<digest>`.
    pub digest: String,
    /// Every file as reviewed.
    pub files: Tree,
    /// What runs code, as the review listed it.
    pub executables: Vec<Executable>,
    /// The marketplace entry's manifest fields (the manifest itself when `strict` is false).
    #[serde(default)]
    pub entry_fields: serde_json::Map<String, serde_json::Value>,
    /// Whether `plugin.json` is the authority.
    #[serde(default = "yes")]
    pub strict: bool,
    /// The `userConfig` keys that are secrets.
    #[serde(default)]
    pub sensitive: Vec<String>,
    /// Whether the person installed it with its `bin/` granted (`[claude.plugins."<id>"] bin =
    /// true` when they reviewed it): only then, and only while the grant stays in their config,
    /// is `bin/` on `run_command`'s PATH.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub bin_granted: bool,
    /// When the person decided.
    pub installed_at: DateTime<Utc>,
}

fn yes() -> bool {
    true
}

/// `installed.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Installed {
    /// By id.
    #[serde(default)]
    pub plugins: BTreeMap<String, InstalledPlugin>,
}

/// Writes `bytes` to `path` whole or not at all, with `mode` ([`bosun_fsio::write_atomic_with_mode`]).
pub(crate) fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> Result<(), ClaudeError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)
        .map_err(|e| ClaudeError::io(format!("creating {}", dir.display()), e))?;
    bosun_fsio::write_atomic_with_mode(path, bytes, mode)
        .map_err(|e| ClaudeError::io(format!("writing {}", path.display()), e))
}

impl Installed {
    /// `$BOSUN_HOME/claude/installed.json`.
    pub fn path(home: &Path) -> PathBuf {
        claude_home(home).join("installed.json")
    }

    /// Reads the record (empty when there is none).
    pub fn load(home: &Path) -> Result<Installed, ClaudeError> {
        let path = Self::path(home);
        match bosun_fsio::read_state_text(&path) {
            Ok(Some(text)) => serde_json::from_str(&text).map_err(|e| ClaudeError::Manifest {
                what: path.display().to_string(),
                message: format!("{e}; reinstall the Claude plugins or restore the file"),
            }),
            Ok(None) => Ok(Installed::default()),
            Err(e) => Err(ClaudeError::io(format!("reading {}", path.display()), e)),
        }
    }

    /// Changes the record as it is on disk now, under its lock ([`bosun_plugins::state_lock`]):
    /// reads it, lets `change` change it and writes it atomically, so another Bosun installing
    /// or removing a plugin at the same moment keeps its change. `change` returns whether to
    /// write and a value to hand back.
    ///
    /// # Errors
    /// The lock stayed held by another process; the record cannot be read, parsed or written
    /// (it is then unchanged).
    pub fn update<T>(
        home: &Path,
        change: impl FnOnce(&mut Installed) -> (bool, T),
    ) -> Result<T, ClaudeError> {
        let path = Self::path(home);
        let _lock = bosun_plugins::state_lock::lock(&path)
            .map_err(|e| ClaudeError::io(format!("changing {}", path.display()), e))?;
        let mut installed = Self::load(home)?;
        let (write, value) = change(&mut installed);
        if write {
            let text =
                serde_json::to_vec_pretty(&installed).map_err(|e| ClaudeError::Manifest {
                    what: "installed.json".to_owned(),
                    message: e.to_string(),
                })?;
            write_atomic(&path, &text, 0o644)?;
        }
        Ok(value)
    }

    /// The folder of `plugin`.
    pub fn dir_of(home: &Path, plugin: &InstalledPlugin) -> PathBuf {
        claude_home(home).join("cache").join(&plugin.digest)
    }
}

/// What a person allows for one install.
#[derive(Debug, Clone, Copy, Default)]
pub struct InstallOptions {
    /// Allow a third-party source with no pinned commit.
    pub allow_unpinned: bool,
    /// Put the plugin's `bin/` on `run_command`'s PATH (the person's `[claude.plugins."<id>"]
    /// bin = true`): shown in the review and recorded with the decision.
    pub grant_bin: bool,
}

/// A plugin fetched and read, not yet installed.
#[derive(Debug)]
pub struct Staged {
    /// `name@marketplace`.
    pub id: String,
    /// The marketplace's entry.
    pub entry: MarketplaceEntry,
    /// The marketplace's name.
    pub marketplace: String,
    /// What it holds.
    pub layout: PluginLayout,
    /// Its files.
    pub tree: Tree,
    /// Its content digest.
    pub digest: String,
    /// The commit it was fetched at (git).
    pub commit: Option<String>,
    /// What is installed under this id now.
    pub previous: Option<InstalledPlugin>,
    /// Whether its `bin/` is granted in this decision (it has one and the person grants it).
    pub bin_granted: bool,
    work: tempfile::TempDir,
}

/// Fetches and reads `name` from `opened` into a staging folder. Refuses a third-party source
/// with no pinned commit (unless allowed), an npm source, a relative source that leaves the
/// marketplace, and a plugin with monitors.
/// `registry` is the name the person's config gives the marketplace: the `@MARKETPLACE` of
/// the plugin's id.
pub async fn stage(
    opened: &OpenedMarketplace,
    registry: &str,
    name: &str,
    options: InstallOptions,
    launcher: &Launcher,
    home: &Path,
) -> Result<Staged, ClaudeError> {
    let m = &opened.marketplace;
    let entry = m
        .plugins
        .iter()
        .find(|p| p.name == name)
        .cloned()
        .ok_or_else(|| ClaudeError::NotFound {
            what: format!(
                "the plugin `{}` in the marketplace `{}` (it lists: {})",
                bosun_core::escape_hidden(name),
                m.name,
                m.plugins
                    .iter()
                    .map(|p| p.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        })?;
    let work = scratch(home)?;
    let staged_dir = work.path().join("plugin");
    let mut commit = opened.commit.clone();
    match &entry.source {
        PluginSource::Relative(rel) => {
            let Some(root) = &opened.root else {
                return Err(ClaudeError::Source {
                    message: format!(
                        "the plugin `{}` has the relative source `{}`, and the marketplace {} was fetched as one file over HTTPS: HTTP has no folder to copy it from (a web server lists no directories, so the plugin's files cannot be known), and Claude Code does not resolve relative sources of a URL marketplace either; ask the marketplace to publish as a git repository (url = \"https://host/repo.git\") or to give the plugin a github, url or git-subdir source",
                        bosun_core::escape_hidden(name),
                        bosun_core::escape_hidden(rel),
                        bosun_core::escape_hidden(&opened.origin)
                    ),
                });
            };
            let from = match &m.plugin_root {
                Some(plugin_root) if !rel.starts_with("./") => {
                    Path::new(plugin_root.trim_start_matches("./")).join(rel)
                }
                _ => PathBuf::from(rel),
            };
            let canonical = plugin_folder(root, &from, rel)?;
            copy_tree(&canonical, &staged_dir)?;
        }
        PluginSource::Remote(RemoteSource::Npm { package, .. }) => {
            return Err(ClaudeError::Source {
                message: format!(
                    "the plugin comes from the npm package `{}`: npm sources are not supported (installing one runs its scripts)",
                    bosun_core::escape_hidden(package)
                ),
            });
        }
        PluginSource::Remote(remote) => {
            if remote.sha().is_none() && !options.allow_unpinned {
                return Err(ClaudeError::Unpinned {
                    plugin: name.to_owned(),
                    source_text: entry.source.to_string(),
                });
            }
            let url = remote.git_url().unwrap_or_default();
            let (repo, head) = crate::fetch::clone_at(
                launcher,
                &work.path().join("git"),
                &url,
                remote.reference(),
                remote.sha(),
            )
            .await?;
            let from = match remote.subdir() {
                Some(sub) => {
                    let path = Path::new(sub.trim_start_matches("./"));
                    if path
                        .components()
                        .any(|c| !matches!(c, std::path::Component::Normal(_)))
                    {
                        return Err(ClaudeError::Source {
                            message: format!(
                                "the folder `{}` leaves the repository",
                                bosun_core::escape_hidden(sub)
                            ),
                        });
                    }
                    // A folder of the clone, followed through the clone's own links only: a
                    // link to the user's files is not part of the repository.
                    plugin_folder(&repo, path, sub)?
                }
                None => repo.clone(),
            };
            copy_tree(&from, &staged_dir)?;
            commit = Some(head);
        }
    }
    let layout = PluginLayout::read(
        &staged_dir,
        name,
        Some(&entry.manifest_fields),
        entry.strict,
    )?;
    if !layout.refused.is_empty() {
        return Err(ClaudeError::Refused {
            plugin: name.to_owned(),
            why: layout.refused.join("; "),
        });
    }
    let tree = Tree::read(&staged_dir)?;
    let digest = tree.digest();
    let id = format!("{name}@{registry}");
    let previous = Installed::load(home)?.plugins.get(&id).cloned();
    let bin_granted = options.grant_bin && !layout.bin.is_empty();
    Ok(Staged {
        id,
        entry,
        marketplace: registry.to_owned(),
        layout,
        tree,
        digest,
        commit,
        previous,
        bin_granted,
        work,
    })
}

impl Staged {
    /// Whether this is exactly what is installed already, with the same `bin/` grant.
    pub fn unchanged(&self) -> bool {
        self.previous
            .as_ref()
            .is_some_and(|p| p.digest == self.digest && p.bin_granted == self.bin_granted)
    }

    /// The trust review: every part that runs code, what is not supported, the digest.
    pub fn review(&self) -> String {
        let m = &self.layout.manifest;
        let mut text = format!(
            "{} {} (Claude Code plugin) from the marketplace `{}`\n  source: {}\n",
            self.id,
            m.version.as_deref().unwrap_or("(no version)"),
            self.marketplace,
            bosun_core::escape_hidden(&self.entry.source.to_string()),
        );
        if let Some(commit) = &self.commit {
            text.push_str(&format!("  commit: {commit}\n"));
        }
        text.push_str(&format!(
            "  content sha256: {} ({} files)\n",
            self.digest,
            self.tree.files.len()
        ));
        if let Some(about) = &m.description {
            text.push_str(&format!("  about: {}\n", bosun_core::escape_hidden(about)));
        }
        let names = |map: &BTreeMap<String, PathBuf>| {
            if map.is_empty() {
                "none".to_owned()
            } else {
                map.keys()
                    .map(|k| format!("{}:{k}", m.name))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        };
        text.push_str(&format!("  skills: {}\n", names(&self.layout.skills)));
        text.push_str(&format!("  commands: {}\n", names(&self.layout.commands)));
        text.push_str(&format!("  agents: {}\n", names(&self.layout.agents)));
        let executables = self.layout.executables();
        if executables.is_empty() {
            text.push_str("  runs code: nothing\n");
        } else {
            text.push_str("  runs code (each in the OS sandbox, judged by your policy):\n");
            for part in &executables {
                let digest = (part.kind == "bin")
                    .then(|| self.tree.files.get(&format!("bin/{}", part.name)))
                    .flatten()
                    .map(|f| format!(" (sha256 {})", f.sha256))
                    .unwrap_or_default();
                text.push_str(&format!(
                    "    {} {}{digest}: {}\n",
                    part.kind, part.name, part.runs
                ));
            }
        }
        if !self.layout.bin.is_empty() {
            text.push_str(&if self.bin_granted {
                "  bin/: GRANTED — its programs are on run_command's PATH, run in the OS sandbox (bin/ read-only) and judged by your policy, while `bin = true` stays in your config\n".to_owned()
            } else {
                format!(
                    "  bin/: not granted — its programs are not run (to grant it: `bin = true` under [claude.plugins.\"{}\"] in config.toml, then install again to review it so)\n",
                    self.id
                )
            });
        }
        for (key, option) in &m.user_config {
            text.push_str(&format!(
                "  asks for: {key} ({}{})\n",
                bosun_core::escape_hidden(&option.title),
                if option.sensitive { ", secret" } else { "" }
            ));
        }
        for dep in &m.dependencies {
            text.push_str(&format!(
                "  needs the plugin: {} (not installed by this)\n",
                bosun_core::escape_hidden(&dep.to_string())
            ));
        }
        for item in &self.layout.unsupported {
            text.push_str(&format!("  found, not supported: {item}\n"));
        }
        for warning in &self.layout.warnings {
            text.push_str(&format!("  warning: {warning}\n"));
        }
        match &self.previous {
            Some(p) if p.digest == self.digest => {
                text.push_str("  the same content is installed already\n")
            }
            Some(p) => {
                let drift = p.files.drift(&self.tree);
                text.push_str(&format!(
                    "  replaces the installed content {} ({} file changes: {})\n",
                    &p.digest[..16.min(p.digest.len())],
                    drift.len(),
                    drift
                        .iter()
                        .take(10)
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            None => {}
        }
        text
    }

    /// Moves the plugin into the cache under its digest and records it. The previous content
    /// stays in the cache (another marketplace may share it) until `bosun plugins` prunes it.
    pub fn commit(self, home: &Path, now: DateTime<Utc>) -> Result<InstalledPlugin, ClaudeError> {
        let cache = claude_home(home).join("cache");
        std::fs::create_dir_all(&cache)
            .map_err(|e| ClaudeError::io(format!("creating {}", cache.display()), e))?;
        let target = cache.join(&self.digest);
        let staged_dir = self.work.path().join("plugin");
        if target.exists() {
            // Same digest, same content — unless someone changed it: then replace it.
            let intact = Tree::read(&target).is_ok_and(|t| t.digest() == self.digest);
            if !intact {
                let aside = cache.join(format!(".replaced-{}-{}", self.digest, std::process::id()));
                std::fs::rename(&target, &aside).map_err(|e| {
                    ClaudeError::io(format!("moving {} aside", target.display()), e)
                })?;
                let _ = make_writable_and_remove(&aside);
                std::fs::rename(&staged_dir, &target).map_err(|e| {
                    ClaudeError::io(format!("moving the plugin to {}", target.display()), e)
                })?;
            }
        } else {
            std::fs::rename(&staged_dir, &target).map_err(|e| {
                ClaudeError::io(format!("moving the plugin to {}", target.display()), e)
            })?;
        }
        // What moved must still be what was reviewed.
        let now_tree = Tree::read(&target)?;
        if now_tree.digest() != self.digest {
            return Err(ClaudeError::Changed {
                plugin: self.id.clone(),
                drift: self.tree.drift(&now_tree).join(", "),
            });
        }
        let record = InstalledPlugin {
            id: self.id.clone(),
            name: self.layout.manifest.name.clone(),
            marketplace: self.marketplace.clone(),
            version: self.layout.manifest.version.clone(),
            source: self.entry.source.to_string(),
            commit: self.commit.clone(),
            digest: self.digest.clone(),
            files: self.tree.clone(),
            executables: self.layout.executables(),
            entry_fields: self.entry.manifest_fields.clone(),
            strict: self.entry.strict,
            sensitive: self
                .layout
                .manifest
                .user_config
                .iter()
                .filter(|(_, o)| o.sensitive)
                .map(|(k, _)| k.clone())
                .collect(),
            bin_granted: self.bin_granted,
            installed_at: now,
        };
        Installed::update(home, |installed| {
            installed.plugins.insert(self.id.clone(), record.clone());
            (true, ())
        })?;
        Ok(record)
    }
}

fn make_writable_and_remove(dir: &Path) -> std::io::Result<()> {
    std::fs::remove_dir_all(dir)
}

/// Removes `id` from the record, with its config, secrets and data folder (as Claude Code
/// deletes `${CLAUDE_PLUGIN_DATA}` at uninstall) and the folder's label; its cached content
/// stays for other ids sharing it.
///
/// # Errors
/// The record cannot be changed, or the data folder cannot be removed (its label then stays).
pub fn uninstall(home: &Path, id: &str) -> Result<bool, ClaudeError> {
    let removed = Installed::update(home, |installed| {
        let removed = installed.plugins.remove(id).is_some();
        (removed, removed)
    })?;
    if removed {
        let _ = std::fs::remove_file(claude_home(home).join("config").join(format!("{id}.json")));
        let _ = std::fs::remove_file(claude_home(home).join("secrets").join(format!("{id}.json")));
        crate::data_label::remove_data(&claude_home(home), id)?;
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plugin(id: &str) -> InstalledPlugin {
        serde_json::from_value(serde_json::json!({
            "id": id,
            "name": id,
            "marketplace": "fixtures",
            "source": "./plugins/x",
            "digest": "00".repeat(32),
            "files": { "files": {} },
            "executables": [],
            "installed_at": "2025-06-01T12:00:00Z",
        }))
        .unwrap()
    }

    /// Eight installs at once each add their record: every one is kept, and each change runs
    /// under the file's lock (no other opener can take it meanwhile).
    #[test]
    fn concurrent_installs_keep_every_record() {
        let home = tempfile::tempdir().unwrap();
        let writers = 8;
        let start = std::sync::Arc::new(std::sync::Barrier::new(writers));
        let handles: Vec<_> = (0..writers)
            .map(|i| {
                let home = home.path().to_owned();
                let start = std::sync::Arc::clone(&start);
                std::thread::spawn(move || {
                    start.wait();
                    Installed::update(&home, |installed| {
                        let locked = bosun_plugins::state_lock::lock_within(
                            &Installed::path(&home),
                            std::time::Duration::ZERO,
                        );
                        assert!(locked.is_err(), "changed without holding the lock");
                        let id = format!("p{i}@fixtures");
                        installed.plugins.insert(id.clone(), plugin(&id));
                        (true, ())
                    })
                    .unwrap();
                })
            })
            .collect();
        for handle in handles {
            handle.join().unwrap();
        }
        let ids: Vec<String> = Installed::load(home.path())
            .unwrap()
            .plugins
            .into_keys()
            .collect();
        let expected: Vec<String> = (0..writers).map(|i| format!("p{i}@fixtures")).collect();
        assert_eq!(ids, expected);
    }

    /// An uninstall reads the record as it is when it runs: a plugin installed by another
    /// process after this one started is kept.
    #[test]
    fn an_uninstall_keeps_what_another_process_installed() {
        let home = tempfile::tempdir().unwrap();
        for id in ["a@fixtures", "b@fixtures"] {
            Installed::update(home.path(), |installed| {
                installed.plugins.insert(id.to_owned(), plugin(id));
                (true, ())
            })
            .unwrap();
        }
        assert!(uninstall(home.path(), "a@fixtures").unwrap());
        assert!(!uninstall(home.path(), "a@fixtures").unwrap());
        let ids: Vec<String> = Installed::load(home.path())
            .unwrap()
            .plugins
            .into_keys()
            .collect();
        assert_eq!(ids, ["b@fixtures"]);
    }

    /// Uninstalling takes the plugin's data folder and then its label; another plugin's stay.
    #[test]
    fn an_uninstall_removes_the_data_folder_with_its_label() {
        let home = tempfile::tempdir().unwrap();
        let secret = crate::data_label::DataLabel {
            level: bosun_core::Classification::Restricted,
            untrusted: None,
        };
        for id in ["a@fixtures", "b@fixtures"] {
            Installed::update(home.path(), |installed| {
                installed.plugins.insert(id.to_owned(), plugin(id));
                (true, ())
            })
            .unwrap();
            let data = claude_home(home.path()).join("data").join(id);
            std::fs::create_dir_all(&data).unwrap();
            std::fs::write(data.join("kept"), "PRIVATE").unwrap();
            let label = crate::data_label::label_path(&claude_home(home.path()), id);
            crate::data_label::raise(&label, &secret).unwrap();
        }
        assert!(uninstall(home.path(), "a@fixtures").unwrap());
        let label = |id| {
            crate::data_label::read(&crate::data_label::label_path(
                &claude_home(home.path()),
                id,
            ))
        };
        assert!(!claude_home(home.path()).join("data/a@fixtures").exists());
        assert_eq!(label("a@fixtures").unwrap(), Default::default());
        assert!(
            claude_home(home.path())
                .join("data/b@fixtures/kept")
                .exists()
        );
        assert_eq!(label("b@fixtures").unwrap(), secret);
    }
}
