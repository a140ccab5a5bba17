//! A person's plugins: finding one in the catalog, the review read before trusting it, and
//! enabling, trusting, disabling, untrusting and removing it — each a change of
//! `$BOSUN_HOME/config.toml` (through [`crate::config_edit`]) and of the trust store, all or
//! nothing. What `bosun plugins …` and the terminal UI's `/plugins` call.
//!
//! Runs no plugin code (the catalog reads metadata only) and never asks anyone: where a person
//! must decide, the caller is handed the review and answers.

use std::path::{Path, PathBuf};

use bosun_plugins::{
    Catalog, JsManifest, PluginEntry, PluginError, PluginScope, PluginState, TrustRecord,
    TrustStore,
};

use crate::config::{ConfigError, LoadedConfig};
use crate::config_edit::{ConfigEditError, UserConfigEdit};
use crate::host::{Host, HostError};
use crate::workspace::Workspace;

/// Why a plugin could not be enabled, trusted, disabled or removed.
#[derive(Debug, thiserror::Error)]
pub enum UserPluginError {
    /// Not a name a plugin can have in config.
    #[error("`{name}` is not a valid local name: use a-z, 0-9, - and _, starting with a letter")]
    InvalidName {
        /// The name given.
        name: String,
    },
    /// No plugin of that name in the catalog.
    #[error("no plugin named `{name}`; `bosun plugins list` shows them")]
    NotFound {
        /// The name given.
        name: String,
    },
    /// Neither configured nor installed for the user.
    #[error("no user plugin `{name}`: neither [plugins.{name}] in {config} nor {copy}")]
    NoUserPlugin {
        /// The name given.
        name: String,
        /// The user's config file.
        config: String,
        /// Where its installed copy would be.
        copy: String,
    },
    /// The catalog says it cannot be loaded.
    #[error("`{name}` is invalid and cannot be trusted: {reason}")]
    Invalid {
        /// Its local name.
        name: String,
        /// Why.
        reason: String,
    },
    /// Just enabled, and it cannot be loaded from where the config points.
    #[error("the plugin at {path} cannot be used: {reason}")]
    Unusable {
        /// The configured path.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// No readable plugin behind the entry, so nothing to pin.
    #[error("`{name}` has no readable plugin")]
    Unreadable {
        /// Its local name.
        name: String,
    },
    /// Enabling failed at a later step: its entry in the config was taken back.
    #[error("`{name}` was not enabled: its entry in config.toml was taken back")]
    NotEnabled {
        /// Its local name.
        name: String,
        /// The step that failed.
        #[source]
        source: Box<UserPluginError>,
    },
    /// The config could not be edited.
    #[error(transparent)]
    ConfigEdit(#[from] ConfigEditError),
    /// The config, once edited, does not load.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The catalog could not be built.
    #[error(transparent)]
    Host(#[from] HostError),
    /// The trust store could not be read or written.
    #[error(transparent)]
    Trust(#[from] PluginError),
    /// The registry's install lock could not be read or written.
    #[error(transparent)]
    Lock(#[from] bosun_plugins::lock::LockError),
    /// The installed copy could not be moved or deleted.
    #[error("{doing} {path}: {source}")]
    Files {
        /// `moving aside`, `deleting`.
        doing: &'static str,
        /// The path.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The person could not be asked (the terminal went away).
    #[error("asking for confirmation: {0}")]
    Ask(#[source] std::io::Error),
}

/// `user` or `project`.
pub fn scope_label(scope: &PluginScope) -> &'static str {
    match scope {
        PluginScope::User => "user",
        PluginScope::Project { .. } => "project",
    }
}

/// A plugin's state for a person, with what changed since it was trusted.
pub fn state_detail(state: &PluginState) -> String {
    match state {
        PluginState::Invalid { reason } => format!("invalid: {reason}"),
        PluginState::Changed { what } => {
            let mut parts = vec![format!(
                "changed since trusted ({} → {})",
                short(&what.old_sha256),
                short(&what.new_sha256)
            )];
            if !what.added_capabilities.is_empty() {
                parts.push(format!(
                    "new capabilities: {}",
                    what.added_capabilities.join(", ")
                ));
            }
            if !what.added_tools.is_empty() {
                parts.push(format!("new tools: {}", what.added_tools.join(", ")));
            }
            parts.join("; ")
        }
        other => other.to_string(),
    }
}

fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

/// The catalog entry named `name`.
///
/// # Errors
/// There is none.
pub fn find<'a>(catalog: &'a Catalog, name: &str) -> Result<&'a PluginEntry, UserPluginError> {
    catalog
        .entries()
        .iter()
        .find(|e| e.local_name == name)
        .ok_or_else(|| UserPluginError::NotFound {
            name: name.to_owned(),
        })
}

/// A JavaScript plugin's capabilities as trust records them, for a person.
pub fn js_capabilities(js: &JsManifest) -> String {
    let caps: Vec<String> = js.capabilities().into_iter().collect();
    if caps.is_empty() {
        "no capabilities".to_owned()
    } else {
        format!("capabilities: {}", caps.join(", "))
    }
}

/// What a person reads before trusting `entry`: where it is, what it is, what it may reach.
pub fn review(entry: &PluginEntry) -> String {
    let mut text = format!(
        "{} ({} {} plugin) at {}\n",
        entry.local_name,
        scope_label(&entry.scope),
        entry.format,
        entry.reviewed_path().display()
    );
    if let Some(js) = entry.js() {
        text.push_str(&format!(
            "  {}@{}  entry {}  sha256 {} (every file of the directory)\n",
            js.name(),
            js.version(),
            js.entry(),
            entry.sha256.as_deref().unwrap_or("?")
        ));
        if let JsManifest::Triggerfish(m) = js {
            text.push_str(&format!(
                "  classification {}  trust {}  endpoints: {}\n",
                m.classification,
                m.trust,
                if m.declared_endpoints.is_empty() {
                    "none".to_owned()
                } else {
                    m.declared_endpoints.join(", ")
                }
            ));
        }
        text.push_str(&format!("  {}\n", js_capabilities(js)));
        if js.code_from_strings() {
            text.push_str(
                "  runs code built from strings (eval, Function): its manifest asks for it, so code the scan and this review did not see can run inside the sandbox\n",
            );
        }
        text.push_str(
            "  tools: registered at activation, by the plugin's code running in the sandbox once trusted\n",
        );
        let env = entry
            .config
            .as_ref()
            .map(|c| c.env.clone())
            .unwrap_or_default();
        text.push_str(&format!(
            "  environment it sees: {}\n",
            if env.is_empty() {
                "none".to_owned()
            } else {
                format!(
                    "{} ([plugins.{}] env; values redacted in traces)",
                    env.join(", "),
                    entry.local_name
                )
            }
        ));
        text.push_str(
            "  processes: a tool of risk `process` may start programs, each judged as process.spawn (asked by default) and run in the OS sandbox\n",
        );
    }
    if let Some(m) = entry.manifest() {
        text.push_str(&format!(
            "  {}@{}  sha256 {}\n",
            m.name,
            m.version,
            entry.sha256.as_deref().unwrap_or("?")
        ));
        if let Some(module) = entry.chock() {
            text.push_str(&format!(
                "  Chock plugin ABI {}  author {}  imports nothing: its capabilities are judged on every call and give it nothing to reach\n",
                module.abi.number(),
                if module.author.is_empty() {
                    "(none)"
                } else {
                    module.author.as_str()
                }
            ));
        }
        for tool in &m.tools {
            let caps: Vec<String> = tool.grants().into_iter().collect();
            text.push_str(&format!(
                "  tool {:<20} risk {:<8} {}\n",
                tool.spec.name.as_str(),
                tool.spec.risk.to_string(),
                if caps.is_empty() {
                    "no capabilities".to_owned()
                } else {
                    caps.join(", ")
                }
            ));
        }
    }
    for refused in entry.refused_tools() {
        text.push_str(&format!(
            "  tool {:<20} not offered: {}\n",
            refused.tool, refused.reason
        ));
    }
    text.push_str(&format!("  state: {}\n", state_detail(&entry.state)));
    text
}

/// Plugins reviewed for trust: the text a person reads before deciding, and the records
/// (content hashes) that trusting them writes — the bytes that were reviewed, nothing read later.
#[derive(Debug)]
pub struct TrustReview {
    /// Each plugin's review, then what trust means.
    pub text: String,
    /// The plugins' local names.
    pub names: Vec<String>,
    records: Vec<(PluginScope, String, TrustRecord)>,
}

impl TrustReview {
    /// Records this reviewed decision in `store` and saves it.
    ///
    /// # Errors
    /// The store cannot be written.
    pub fn record(self, store: &mut TrustStore) -> Result<(), UserPluginError> {
        for (scope, name, record) in self.records {
            store.record(&scope, &name, record);
        }
        store.save()?;
        Ok(())
    }
}

/// Reviews `name`, or without it every project plugin here that is not trusted as it is.
/// `None` when there is nothing to trust.
///
/// # Errors
/// No plugin is named `name`, or one to review is invalid or unreadable.
pub fn review_trust(
    catalog: &Catalog,
    name: Option<&str>,
) -> Result<Option<TrustReview>, UserPluginError> {
    let wanted: Vec<&PluginEntry> = match name {
        Some(name) => vec![find(catalog, name)?],
        // Without a name: every project plugin of this workspace that is not trusted as it is.
        None => catalog
            .entries()
            .iter()
            .filter(|e| matches!(e.scope, PluginScope::Project { .. }))
            .filter(|e| {
                matches!(
                    e.state,
                    PluginState::Untrusted | PluginState::Changed { .. }
                )
            })
            .collect(),
    };
    if wanted.is_empty() {
        return Ok(None);
    }
    let now = chrono::Utc::now();
    let mut text = String::new();
    let mut records = Vec::new();
    for entry in &wanted {
        if let PluginState::Invalid { reason } = &entry.state {
            return Err(UserPluginError::Invalid {
                name: entry.local_name.clone(),
                reason: reason.clone(),
            });
        }
        text.push_str(&review(entry));
        let record = entry
            .trust_record(now)
            .ok_or_else(|| UserPluginError::Unreadable {
                name: entry.local_name.clone(),
            })?;
        records.push((entry.scope.clone(), entry.local_name.clone(), record));
    }
    text.push_str(
        "Trusted plugins run sandboxed, with the capabilities listed above, as your policy decides each call.\n",
    );
    Ok(Some(TrustReview {
        text,
        names: wanted.iter().map(|e| e.local_name.clone()).collect(),
        records,
    }))
}

/// The trust store of `$BOSUN_HOME`.
///
/// # Errors
/// It exists and cannot be read.
pub fn trust_store(config: &LoadedConfig) -> Result<TrustStore, UserPluginError> {
    Ok(TrustStore::load(TrustStore::default_path(&config.home))?)
}

/// How trusting came out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trusted {
    /// These plugins are trusted now, as reviewed.
    Now(Vec<String>),
    /// Every plugin asked about was trusted as it is already.
    Already,
    /// The person did not confirm: nothing was recorded.
    Declined,
}

/// Reviews `name` (or every untrusted project plugin) of `workspace`, hands the review to
/// `confirm`, and records it when confirmed.
///
/// # Errors
/// As [`review_trust`]; the store cannot be read or written; `confirm` fails.
pub fn trust(
    workspace: &Workspace,
    config: &LoadedConfig,
    name: Option<&str>,
    confirm: impl FnOnce(&TrustReview) -> std::io::Result<bool>,
) -> Result<Trusted, UserPluginError> {
    let (mut store, catalog) = Host::catalog_for(workspace, config)?;
    let Some(review) = review_trust(&catalog, name)? else {
        return Ok(Trusted::Already);
    };
    if !confirm(&review).map_err(UserPluginError::Ask)? {
        return Ok(Trusted::Declined);
    }
    let names = review.names.clone();
    review.record(&mut store)?;
    Ok(Trusted::Now(names))
}

/// Forgets the trust of the plugin `name`; whether it was trusted.
///
/// # Errors
/// No plugin is named `name`; the store cannot be read or written.
pub fn untrust(
    workspace: &Workspace,
    config: &LoadedConfig,
    name: &str,
) -> Result<bool, UserPluginError> {
    let (mut store, catalog) = Host::catalog_for(workspace, config)?;
    let entry = find(&catalog, name)?;
    if store.remove(&entry.scope, name).is_none() {
        return Ok(false);
    }
    store.save()?;
    Ok(true)
}

fn check_name(name: &str) -> Result<(), UserPluginError> {
    if bosun_plugins::is_local_name(name) {
        Ok(())
    } else {
        Err(UserPluginError::InvalidName {
            name: name.to_owned(),
        })
    }
}

/// Enables the user plugin `name` — `[plugins.NAME] enabled = true`, with `path` when one is
/// given (see [`UserConfigEdit::enable_plugin`]) — and trusts it, which for a user plugin is
/// the same decision: `confirm` is handed its review. Declined, or failing at any step (the
/// plugin missing or invalid where the config points), the entry is taken back
/// ([`crate::config_edit::ConfigBefore::restore`]) on the config as it is then, keeping what another process changed.
///
/// # Errors
/// An invalid name; the config cannot be edited or restored; a later step failed
/// ([`UserPluginError::NotEnabled`], its entry then taken back).
pub fn enable(
    workspace: &Workspace,
    home: &Path,
    name: &str,
    path: Option<&Path>,
    confirm: impl FnOnce(&TrustReview) -> std::io::Result<bool>,
) -> Result<Trusted, UserPluginError> {
    check_name(name)?;
    // Nothing is written before the save: an edit refused until then needs no taking back.
    let (shown, before) = {
        let mut edit = UserConfigEdit::open(home)?;
        let (shown, before) = edit.enable_plugin_undoably(name, path)?;
        edit.save()?;
        (shown, before)
    };
    let outcome = (|| {
        // Enabling is the trust decision for a user plugin: review and record its hash now. A
        // plugin that cannot be loaded (missing, invalid manifest) fails here, before trust.
        let config = LoadedConfig::load(home, workspace)?;
        let (_, catalog) = Host::catalog_for(workspace, &config)?;
        if let Some(entry) = catalog.entries().iter().find(|e| e.local_name == name)
            && let PluginState::Invalid { reason } = &entry.state
        {
            return Err(UserPluginError::Unusable {
                path: shown,
                reason: reason.clone(),
            });
        }
        trust(workspace, &config, Some(name), confirm)
    })();
    match outcome {
        Ok(Trusted::Declined) => {
            before.restore()?;
            Ok(Trusted::Declined)
        }
        Ok(done) => {
            drop(before);
            Ok(done)
        }
        Err(e) => {
            before.restore()?;
            Err(UserPluginError::NotEnabled {
                name: name.to_owned(),
                source: Box::new(e),
            })
        }
    }
}

/// Sets `[plugins.NAME] enabled = false`.
///
/// # Errors
/// There is no such entry, or the config cannot be edited.
pub fn disable(home: &Path, name: &str) -> Result<(), UserPluginError> {
    let mut edit = UserConfigEdit::open(home)?;
    edit.disable_plugin(name)?;
    edit.save()?;
    Ok(())
}

/// A user plugin about to be removed: what will go, for the person to confirm.
#[derive(Debug)]
pub struct Removal {
    name: String,
    home: PathBuf,
    /// Its installed copy under `$BOSUN_HOME/plugins`, when that is the plugin's own directory
    /// (a linked plugin's directory is never deleted).
    pub copy: Option<PathBuf>,
    configured: bool,
}

impl Removal {
    /// Plans removing the user plugin `name`: its `[plugins.NAME]` entry, its trust, and its
    /// installed copy when it owns one.
    ///
    /// # Errors
    /// An invalid name, or neither an entry nor a copy of that name.
    pub fn plan(config: &LoadedConfig, name: &str) -> Result<Self, UserPluginError> {
        check_name(name)?;
        let plugins = bosun_plugins::discovery::user_plugins_dir(&config.home);
        let copy = plugins.join(name);
        let configured = config.user.plugins.get(name);
        // The installed copy is deleted only when it is the plugin's directory (not a linked one).
        let owns_copy = copy.is_dir()
            && !copy.is_symlink()
            && configured.is_none_or(|c| c.path == Path::new(name) || c.path == copy);
        if configured.is_none() && !owns_copy {
            return Err(UserPluginError::NoUserPlugin {
                name: name.to_owned(),
                config: config.home.join("config.toml").display().to_string(),
                copy: copy.display().to_string(),
            });
        }
        Ok(Self {
            name: name.to_owned(),
            home: config.home.clone(),
            copy: owns_copy.then_some(copy),
            configured: configured.is_some(),
        })
    }

    /// The question to put to the person.
    pub fn question(&self) -> String {
        let name = &self.name;
        match &self.copy {
            Some(copy) => format!(
                "Remove the plugin `{name}`: delete {}, its trust and its entry?",
                copy.display()
            ),
            None => format!(
                "Remove the plugin `{name}`: its trust and its entry (its directory stays)?"
            ),
        }
    }

    /// Removes it: the copy is moved aside first (so it is never half there), then the entry
    /// and the trust go, then the copy is deleted. A failure before the deletion puts the copy
    /// back.
    ///
    /// # Errors
    /// The copy cannot be moved or deleted; the config or the trust store cannot be written.
    pub fn carry_out(self) -> Result<(), UserPluginError> {
        let aside = self.copy.as_ref().map(|copy| {
            copy.with_file_name(format!(".removing-{}-{}", self.name, std::process::id()))
        });
        if let (Some(copy), Some(aside)) = (&self.copy, &aside) {
            std::fs::rename(copy, aside).map_err(|source| UserPluginError::Files {
                doing: "moving aside",
                path: copy.clone(),
                source,
            })?;
        }
        let forgotten = (|| -> Result<(), UserPluginError> {
            if self.configured {
                let mut edit = UserConfigEdit::open(&self.home)?;
                edit.remove_plugin(&self.name);
                edit.save()?;
            }
            let mut store = TrustStore::load(TrustStore::default_path(&self.home))?;
            if store.remove(&PluginScope::User, &self.name).is_some() {
                store.save()?;
            }
            // A registry plugin's integrity record goes with its copy: left behind, `plugins
            // update` would still offer it and a later install would be judged against it.
            if self.copy.is_some() {
                let mut lock = bosun_plugins::lock::InstallLock::load(&self.home)?;
                if lock.remove_plugin(&self.name).is_some() {
                    lock.save()?;
                }
            }
            Ok(())
        })();
        if let Err(e) = forgotten {
            if let (Some(copy), Some(aside)) = (&self.copy, &aside) {
                let _ = std::fs::rename(aside, copy);
            }
            return Err(e);
        }
        if let Some(aside) = aside {
            std::fs::remove_dir_all(&aside).map_err(|source| UserPluginError::Files {
                doing: "deleting",
                path: aside.clone(),
                source,
            })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINE: &str = "# my settings\nmode = \"read-only\"\n";

    /// A workspace, a `$BOSUN_HOME` with `MINE` as its config, and a Forge plugin `tiny` in it.
    fn setup() -> (tempfile::TempDir, Workspace, PathBuf) {
        let root = tempfile::tempdir().unwrap();
        let work = root.path().join("work");
        std::fs::create_dir_all(work.join(".git")).unwrap();
        let home = root.path().join("home");
        let tiny = bosun_plugins::discovery::user_plugins_dir(&home).join("tiny");
        std::fs::create_dir_all(&tiny).unwrap();
        std::fs::write(home.join("config.toml"), MINE).unwrap();
        std::fs::write(
            tiny.join("plugin.json"),
            r#"{"schemaVersion": 1, "apiVersion": "1", "name": "tiny", "version": "1.0.0", "entry": "./index.mjs", "capabilities": ["tools:register"]}"#,
        )
        .unwrap();
        std::fs::write(tiny.join("index.mjs"), "export function activate() {}\n").unwrap();
        let workspace = Workspace::discover(&work).unwrap();
        (root, workspace, home)
    }

    fn config_text(home: &Path) -> String {
        std::fs::read_to_string(home.join("config.toml")).unwrap()
    }

    #[test]
    fn enabling_trusts_what_was_reviewed_and_keeps_the_config() {
        let (_root, workspace, home) = setup();
        let mut shown = String::new();
        let outcome = enable(&workspace, &home, "tiny", None, |review| {
            shown = review.text.clone();
            Ok(true)
        })
        .unwrap();
        assert_eq!(outcome, Trusted::Now(vec!["tiny".to_owned()]));
        assert!(shown.contains("tiny (user forge plugin)"), "{shown}");
        assert!(
            config_text(&home).starts_with(MINE),
            "{}",
            config_text(&home)
        );
        let config = LoadedConfig::load(&home, &workspace).unwrap();
        let (_, catalog) = Host::catalog_for(&workspace, &config).unwrap();
        assert_eq!(find(&catalog, "tiny").unwrap().state, PluginState::Enabled);
        // Without a name, only project plugins not trusted as they are would be reviewed.
        let again = trust(&workspace, &config, None, |_| Ok(true)).unwrap();
        assert_eq!(again, Trusted::Already);
    }

    #[test]
    fn a_declined_or_failed_enable_leaves_the_config_byte_for_byte() {
        let (_root, workspace, home) = setup();
        let declined = enable(&workspace, &home, "tiny", None, |_| Ok(false)).unwrap();
        assert_eq!(declined, Trusted::Declined);
        assert_eq!(config_text(&home), MINE);
        let missing = Path::new("/nonexistent/ghost");
        let err = enable(&workspace, &home, "ghost", Some(missing), |_| Ok(true)).unwrap_err();
        assert!(
            matches!(&err, UserPluginError::NotEnabled { source, .. }
                if matches!(**source, UserPluginError::Unusable { .. })),
            "{err:?}"
        );
        assert_eq!(config_text(&home), MINE);
        let err = enable(&workspace, &home, "Bad Name", None, |_| Ok(true)).unwrap_err();
        assert!(
            matches!(err, UserPluginError::InvalidName { .. }),
            "{err:?}"
        );
        assert_eq!(config_text(&home), MINE);
    }

    /// Another Bosun edits the config while this one asks about trust: a declined enable
    /// takes back only its own entry, and the other change stays (putting the old bytes back
    /// dropped it).
    #[test]
    fn a_declined_enable_keeps_a_change_made_meanwhile_by_another_process() {
        let (_root, workspace, home) = setup();
        let declined = enable(&workspace, &home, "tiny", None, |_| {
            let mut other = UserConfigEdit::open(&home).unwrap();
            other.trust_workspace(Path::new("/work/other")).unwrap();
            other.save().unwrap();
            Ok(false)
        })
        .unwrap();
        assert_eq!(declined, Trusted::Declined);
        let text = config_text(&home);
        assert!(text.starts_with(MINE), "{text}");
        assert!(
            text.contains("\"/work/other\""),
            "the other change was lost: {text}"
        );
        assert!(!text.contains("tiny"), "{text}");
    }

    /// Another Bosun changes the very entry being enabled: nothing is taken back, the other
    /// change stays, and the error says so instead of dropping it in silence.
    #[test]
    fn a_failed_enable_does_not_take_back_an_entry_another_process_changed() {
        let (_root, workspace, home) = setup();
        let err = enable(&workspace, &home, "tiny", None, |_| {
            let mut other = UserConfigEdit::open(&home).unwrap();
            other.disable_plugin("tiny").unwrap();
            other.save().unwrap();
            Ok(false)
        })
        .unwrap_err();
        assert!(
            matches!(
                err,
                UserPluginError::ConfigEdit(ConfigEditError::ChangedMeanwhile { .. })
            ),
            "{err:?}"
        );
        assert!(err.to_string().contains("plugins.tiny"), "{err}");
        assert!(err.to_string().contains("another Bosun process"), "{err}");
        let text = config_text(&home);
        assert!(text.contains("enabled = false"), "{text}");
    }

    #[test]
    fn removing_forgets_the_entry_and_the_trust_and_deletes_only_an_owned_copy() {
        let (_root, workspace, home) = setup();
        enable(&workspace, &home, "tiny", None, |_| Ok(true)).unwrap();
        let config = LoadedConfig::load(&home, &workspace).unwrap();
        let removal = Removal::plan(&config, "tiny").unwrap();
        let copy = removal.copy.clone().unwrap();
        assert!(
            removal.question().contains("delete"),
            "{}",
            removal.question()
        );
        removal.carry_out().unwrap();
        assert!(!copy.exists());
        assert_eq!(config_text(&home).trim_end(), MINE.trim_end());
        let store = TrustStore::load(TrustStore::default_path(&home)).unwrap();
        let config = LoadedConfig::load(&home, &workspace).unwrap();
        assert!(config.user.plugins.is_empty());
        drop(store);
        assert!(matches!(
            Removal::plan(&config, "tiny"),
            Err(UserPluginError::NoUserPlugin { .. })
        ));
    }
}
