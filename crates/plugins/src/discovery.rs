//! Where plugins are: the user's (`$BOSUN_HOME/plugins/<dir>/`, enabled under a local name in
//! the user config) and the project's (`<workspace>/.bosun/plugins/<dir>/`), and which format
//! each is in. Discovery is shallow and sorted, skips symbolic links to directories and never
//! reads a plugin's bytes; [`crate::catalog`] does that, once.
//!
//! A plugin directory holds exactly one of `plugin.wasm` (a native component), `plugin.json`
//! (a Forge plugin) or `mod.ts` (a Triggerfish plugin). One holding more than one is invalid:
//! which code would run must never depend on a precedence rule the author did not see.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::PluginError;

/// The file a native plugin directory holds.
pub const PLUGIN_FILE: &str = "plugin.wasm";
/// The manifest a Forge plugin directory holds.
pub const FORGE_MANIFEST: &str = "plugin.json";
/// The entry module a Triggerfish plugin directory holds.
pub const TRIGGERFISH_ENTRY: &str = "mod.ts";
/// Longest per-call deadline a config may set, in milliseconds (one hour).
pub const MAX_TIMEOUT_MS: u64 = 3_600_000;
/// Largest per-instance memory a config may set, in MiB.
pub const MAX_MEMORY_MIB: u64 = 4096;

/// What a plugin is made of, told by the one file its directory holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PluginFormat {
    /// `plugin.wasm`: a WebAssembly component built against Bosun's WIT.
    Native,
    /// `plugin.json` and a JavaScript entry: a Forge plugin, run by Bosun's JS engine.
    Forge,
    /// `mod.ts`: a Triggerfish plugin, run by Bosun's JS engine.
    Triggerfish,
    /// A core WebAssembly module built for Chock's plugin ABI (in `plugin.wasm`, or named by
    /// `path` directly); told from a native component by its header when it is read.
    Chock,
}

impl PluginFormat {
    /// Every format with the file that marks it, in the order problems list them.
    pub const MARKERS: [(Self, &'static str); 3] = [
        (Self::Native, PLUGIN_FILE),
        (Self::Forge, FORGE_MANIFEST),
        (Self::Triggerfish, TRIGGERFISH_ENTRY),
    ];

    /// Whether Bosun's JavaScript engine runs it (Forge and Triggerfish).
    pub fn is_js(self) -> bool {
        matches!(self, Self::Forge | Self::Triggerfish)
    }

    /// The format of the plugin in `dir`: the one marker file present (of any kind; a linked
    /// one is refused when it is read). `Ok(None)` when there is none.
    pub fn detect(dir: &Path) -> Result<Option<Self>, PluginError> {
        let present: Vec<(Self, &str)> = Self::MARKERS
            .into_iter()
            .filter(|(_, file)| dir.join(file).symlink_metadata().is_ok())
            .collect();
        match present.as_slice() {
            [] => Ok(None),
            [(format, _)] => Ok(Some(*format)),
            several => Err(PluginError::AmbiguousFormat {
                dir: dir.to_owned(),
                files: and_list(several.iter().map(|(_, file)| *file)),
            }),
        }
    }
}

impl fmt::Display for PluginFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Native => "native",
            Self::Forge => "forge",
            Self::Triggerfish => "triggerfish",
            Self::Chock => "chock",
        })
    }
}

/// `a`, `a and b`, `a, b and c`.
fn and_list<'a>(items: impl Iterator<Item = &'a str>) -> String {
    let items: Vec<&str> = items.collect();
    match items.split_last() {
        None => String::new(),
        Some((last, [])) => (*last).to_owned(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

/// Where a plugin comes from; also the trust store's scope.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(tag = "scope", rename_all = "snake_case")]
pub enum PluginScope {
    /// `$BOSUN_HOME/plugins`, enabled in the user's config.
    User,
    /// `<workspace>/.bosun/plugins`, loaded only once trusted.
    Project {
        /// The canonical workspace root.
        workspace: PathBuf,
    },
}

impl PluginScope {
    /// The key of this scope in `trust.toml`: `user`, or the canonical workspace path.
    pub fn trust_key(&self) -> String {
        match self {
            Self::User => "user".to_owned(),
            Self::Project { workspace } => workspace.to_string_lossy().into_owned(),
        }
    }
}

impl fmt::Display for PluginScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::User => f.write_str("user"),
            Self::Project { .. } => f.write_str("project"),
        }
    }
}

/// `[plugins.<local-name>]` in the user's config.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PluginConfig {
    /// The plugin's directory: relative to `$BOSUN_HOME/plugins/`, or absolute.
    pub path: PathBuf,
    /// Whether to load it (default true).
    #[serde(default = "default_true")]
    pub enabled: bool,
    /// Per-call deadline in milliseconds (the sandbox's default when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Per-instance memory cap in MiB (the sandbox's default when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mib: Option<u64>,
    /// Values the plugin reads with `host.config(key)`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub config: BTreeMap<String, toml::Value>,
    /// Names of host environment variables a JavaScript plugin sees (`process.env`, a trusted
    /// plugin's `Deno.env`) and passes to the processes it starts; every other variable stays
    /// invisible to it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
}

fn default_true() -> bool {
    true
}

impl PluginConfig {
    /// A config entry for `path`, enabled, with defaults.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            enabled: true,
            timeout_ms: None,
            memory_mib: None,
            config: BTreeMap::new(),
            env: Vec::new(),
        }
    }

    /// Checks the entry `[plugins.<local>]`; errors name the dotted key.
    pub fn check(&self, local: &str) -> Result<(), PluginError> {
        let bad = |key: &str, message: &str| PluginError::Config {
            key: if key.is_empty() {
                format!("plugins.{}", bosun_core::escape_hidden(local))
            } else {
                format!("plugins.{local}.{key}")
            },
            message: message.to_owned(),
        };
        if !is_local_name(local) {
            return Err(bad(
                "",
                "invalid local name: use 1-64 characters a-z, 0-9, _ and -, starting with a letter",
            ));
        }
        if self.path.as_os_str().is_empty() {
            return Err(bad(
                "path",
                "empty: name a directory under $BOSUN_HOME/plugins or an absolute path",
            ));
        }
        if self.path.is_relative()
            && self
                .path
                .components()
                .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
        {
            return Err(bad(
                "path",
                "a relative path must stay inside $BOSUN_HOME/plugins: use an absolute path for a plugin elsewhere",
            ));
        }
        if self
            .timeout_ms
            .is_some_and(|t| t == 0 || t > MAX_TIMEOUT_MS)
        {
            return Err(bad("timeout_ms", "use a value between 1 and 3600000"));
        }
        if self
            .memory_mib
            .is_some_and(|m| m == 0 || m > MAX_MEMORY_MIB)
        {
            return Err(bad("memory_mib", "use a value between 1 and 4096"));
        }
        if let Some(name) = self
            .env
            .iter()
            .find(|n| n.is_empty() || n.len() > 128 || n.contains(['=', '\0']))
        {
            return Err(bad(
                "env",
                &format!(
                    "`{}` is not an environment variable name",
                    bosun_core::escape_hidden(name)
                ),
            ));
        }
        if let Some(key) = self.config.keys().find(|k| !is_config_key(k)) {
            return Err(bad(
                &format!("config.{}", bosun_core::escape_hidden(key)),
                "invalid key: use 1-64 characters A-Z, a-z, 0-9, _ and -",
            ));
        }
        Ok(())
    }

    /// A value of `[plugins.<local>.config]` as JSON, as `host.config(key)` returns it.
    /// TOML dates and times become RFC 3339 strings.
    pub fn config_json(&self, key: &str) -> Option<serde_json::Value> {
        self.config.get(key).map(toml_to_json)
    }
}

fn toml_to_json(value: &toml::Value) -> serde_json::Value {
    use serde_json::Value as J;
    match value {
        toml::Value::String(s) => J::String(s.clone()),
        toml::Value::Integer(i) => J::from(*i),
        toml::Value::Float(f) => serde_json::Number::from_f64(*f).map_or(J::Null, J::Number),
        toml::Value::Boolean(b) => J::Bool(*b),
        toml::Value::Datetime(d) => J::String(d.to_string()),
        toml::Value::Array(items) => J::Array(items.iter().map(toml_to_json).collect()),
        toml::Value::Table(table) => J::Object(
            table
                .iter()
                .map(|(k, v)| (k.clone(), toml_to_json(v)))
                .collect(),
        ),
    }
}

/// Checks every `[plugins.<local>]` entry; the first problem names its dotted key. Call it where
/// the user config is loaded, so a bad entry is reported with the file.
pub fn check_plugin_configs(plugins: &BTreeMap<String, PluginConfig>) -> Result<(), PluginError> {
    plugins
        .iter()
        .try_for_each(|(local, config)| config.check(local))
}

/// `^[a-z][a-z0-9_-]{0,63}$`: the name a plugin has in config and in policy actions.
pub fn is_local_name(name: &str) -> bool {
    let mut chars = name.chars();
    name.len() <= 64
        && chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

fn is_config_key(key: &str) -> bool {
    (1..=64).contains(&key.len())
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// A plugin found on disk (or named in config), before its bytes are read.
#[derive(Debug)]
pub struct Discovered {
    /// Its scope.
    pub scope: PluginScope,
    /// Its local name: the config key for user plugins, the directory name otherwise.
    pub local_name: String,
    /// Its directory.
    pub dir: PathBuf,
    /// Its format. [`PluginFormat::Native`] when the directory could not be told apart (it is
    /// then refused with a `problem`).
    pub format: PluginFormat,
    /// `<dir>/plugin.wasm` (a native plugin's component; absent for other formats).
    pub wasm: PathBuf,
    /// Its config entry (user plugins named in config).
    pub config: Option<PluginConfig>,
    /// Whether the user wants it loaded: a config entry with `enabled = true` for user
    /// plugins; always true for project plugins, which trust gates instead.
    pub wanted: bool,
    /// Why it cannot be used, found without reading it.
    pub problem: Option<PluginError>,
}

/// Something discovery could not look at; the rest of discovery goes on.
#[derive(Debug)]
pub struct DiscoveryWarning {
    /// The directory.
    pub path: PathBuf,
    /// What happened and what to do.
    pub message: String,
}

/// `$BOSUN_HOME/plugins`.
pub fn user_plugins_dir(home: &Path) -> PathBuf {
    home.join("plugins")
}

/// How the directory `bosun plugins install` stages its copy in, in `$BOSUN_HOME/plugins`,
/// begins (`.install-<name>-<pid>`): it is Bosun's, not a plugin, until it is renamed to the
/// plugin's name, and discovery never lists it.
pub const INSTALL_STAGING_PREFIX: &str = ".install-";

/// The file in an install's staging folder that the installing process holds locked while it
/// lives: the kernel drops the lock when the process dies, however it dies, so a free lock
/// means the install is dead and its folder can go at once.
pub const STAGING_OWNER_FILE: &str = ".owner";

/// Every name Bosun gives a plugin directory in flight, each followed by `<name>-<pid>`: an
/// install's staging copy, a replacement's new copy, the old version kept aside while it is
/// replaced, and a plugin moved aside while it is removed. None of them is a plugin.
pub const TRANSIENT_PREFIXES: [&str; 4] =
    [INSTALL_STAGING_PREFIX, ".new-", ".replaced-", ".removing-"];

/// What a directory Bosun left in flight was for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transient {
    /// A new copy being staged (`.install-`, `.new-`): never in place, deleted when abandoned.
    Staging,
    /// The previous version, moved aside while the new one goes in (`.replaced-`): put back
    /// when abandoned with nothing in its place, else deleted.
    Replaced,
    /// A plugin being removed (`.removing-`): deleted when abandoned.
    Removing,
}

/// The directory in `plugins` where process `pid` stages its install of `name`.
pub fn install_staging_dir(plugins: &Path, name: &str, pid: u32) -> PathBuf {
    plugins.join(format!("{INSTALL_STAGING_PREFIX}{name}-{pid}"))
}

/// Whether `name`, a directory of `$BOSUN_HOME/plugins`, is one Bosun has in flight (see
/// [`TRANSIENT_PREFIXES`]) rather than a plugin.
pub fn is_install_staging(name: &str) -> bool {
    transient(name).is_some()
}

/// What the in-flight directory `name` is for, the plugin it belongs to and the process that
/// made it; `None` for any other name.
pub fn transient(name: &str) -> Option<(Transient, &str, i32)> {
    let (kind, rest) = [
        (Transient::Staging, INSTALL_STAGING_PREFIX),
        (Transient::Staging, ".new-"),
        (Transient::Replaced, ".replaced-"),
        (Transient::Removing, ".removing-"),
    ]
    .into_iter()
    .find_map(|(kind, prefix)| name.strip_prefix(prefix).map(|rest| (kind, rest)))?;
    let (plugin, pid) = rest.rsplit_once('-')?;
    let pid = pid.parse::<i32>().ok().filter(|&p| p > 0)?;
    (!plugin.is_empty()).then_some((kind, plugin, pid))
}

/// `<workspace>/.bosun/plugins`.
pub fn project_plugins_dir(workspace: &Path) -> PathBuf {
    workspace.join(".bosun").join("plugins")
}

/// The user's plugins: every `[plugins.<local>]` entry (sorted by local name), then every real
/// directory of `$BOSUN_HOME/plugins` holding a plugin (`plugin.wasm`, `plugin.json` or
/// `mod.ts`) that no entry points at (sorted, not wanted). An install's staging copy
/// ([`INSTALL_STAGING_PREFIX`]) is not a plugin, whatever it holds so far.
pub fn discover_user(
    home: &Path,
    plugins: &BTreeMap<String, PluginConfig>,
) -> (Vec<Discovered>, Vec<DiscoveryWarning>) {
    let root = user_plugins_dir(home);
    let mut found = Vec::new();
    let mut claimed = Vec::new();
    for (local, config) in plugins {
        let dir = if config.path.is_absolute() {
            config.path.clone()
        } else {
            root.join(&config.path)
        };
        if let Ok(canonical) = dir.canonicalize() {
            claimed.push(canonical);
        }
        // Chock names a plugin by its module file (`module = "plugins/x.wasm"`): `path` may
        // name a `.wasm` file directly; its format is told when it is read.
        if is_module_file(&dir) {
            let problem = config.check(local).err();
            found.push(Discovered {
                scope: PluginScope::User,
                local_name: local.clone(),
                format: PluginFormat::Native,
                wasm: dir.clone(),
                dir: dir.parent().map(Path::to_path_buf).unwrap_or_default(),
                config: Some(config.clone()),
                wanted: config.enabled,
                problem,
            });
            continue;
        }
        let checked = config
            .check(local)
            .and_then(|()| check_dir(&dir, local))
            .and_then(|()| {
                PluginFormat::detect(&dir)?.ok_or_else(|| PluginError::NoPluginFile {
                    local: local.clone(),
                    dir: dir.clone(),
                })
            });
        let (format, problem) = split(checked);
        found.push(Discovered {
            scope: PluginScope::User,
            local_name: local.clone(),
            format,
            wasm: dir.join(PLUGIN_FILE),
            dir,
            config: Some(config.clone()),
            wanted: config.enabled,
            problem,
        });
    }
    let (dirs, warnings) = plugin_dirs(&root);
    for (name, dir, format) in dirs {
        if is_install_staging(&name) {
            continue;
        }
        let is_claimed = dir
            .canonicalize()
            .is_ok_and(|canonical| claimed.contains(&canonical));
        if !is_claimed {
            let (format, problem) = split(format);
            found.push(Discovered {
                scope: PluginScope::User,
                local_name: name,
                format,
                wasm: dir.join(PLUGIN_FILE),
                dir,
                config: None,
                wanted: false,
                problem,
            });
        }
    }
    (found, warnings)
}

/// The project's plugins: each real directory of `<workspace>/.bosun/plugins` holding a plugin
/// (`plugin.wasm`, `plugin.json` or `mod.ts`), sorted, named after the directory. `workspace`
/// must be canonical. A symbolic link at `.bosun` or `.bosun/plugins` disables project plugins
/// with a warning: a repository must not point Bosun at plugins outside it.
pub fn discover_project(workspace: &Path) -> (Vec<Discovered>, Vec<DiscoveryWarning>) {
    let scope = PluginScope::Project {
        workspace: workspace.to_owned(),
    };
    let dot_bosun = workspace.join(".bosun");
    let root = project_plugins_dir(workspace);
    for path in [&dot_bosun, &root] {
        if path.symlink_metadata().is_ok_and(|m| m.is_symlink()) {
            let warning = DiscoveryWarning {
                path: path.clone(),
                message:
                    "is a symbolic link: project plugins are not loaded; make it a real directory"
                        .to_owned(),
            };
            return (Vec::new(), vec![warning]);
        }
    }
    let (dirs, warnings) = plugin_dirs(&root);
    let found = dirs
        .into_iter()
        .map(|(name, dir, format)| {
            let (format, format_problem) = split(format);
            let name_problem = (!is_local_name(&name)).then(|| PluginError::Config {
                key: format!(".bosun/plugins/{}", bosun_core::escape_hidden(&name)),
                message: "the directory name is not a valid local name: use 1-64 characters a-z, 0-9, _ and -, starting with a letter".to_owned(),
            });
            Discovered {
                scope: scope.clone(),
                problem: name_problem.or(format_problem),
                local_name: name,
                format,
                wasm: dir.join(PLUGIN_FILE),
                dir,
                config: None,
                wanted: true,
            }
        })
        .collect();
    (found, warnings)
}

/// A detected format, or the problem with a directory holding several, with the format to list
/// it under.
fn split(format: Result<PluginFormat, PluginError>) -> (PluginFormat, Option<PluginError>) {
    match format {
        Ok(format) => (format, None),
        Err(e) => (PluginFormat::Native, Some(e)),
    }
}

/// A plugin directory found by [`plugin_dirs`]: its name, path and format (or why the format
/// cannot be told).
type PluginDir = (String, PathBuf, Result<PluginFormat, PluginError>);

/// The immediate subdirectories of `root` that hold a `plugin.wasm`, `plugin.json` or `mod.ts`
/// entry (of any kind: a symlinked one is refused later, with its reason), sorted by name;
/// symbolic links to directories and non-UTF-8 names are skipped. A missing root is empty.
fn plugin_dirs(root: &Path) -> (Vec<PluginDir>, Vec<DiscoveryWarning>) {
    let entries = match std::fs::read_dir(root) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (Vec::new(), Vec::new()),
        Err(e) => {
            let warning = DiscoveryWarning {
                path: root.to_owned(),
                message: format!("cannot be listed ({e}): its plugins are not loaded"),
            };
            return (Vec::new(), vec![warning]);
        }
    };
    let mut warnings = Vec::new();
    let mut dirs: Vec<PluginDir> = Vec::new();
    for entry in entries {
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                warnings.push(DiscoveryWarning {
                    path: root.to_owned(),
                    message: format!("cannot be listed completely ({e})"),
                });
                continue;
            }
        };
        // `DirEntry::file_type` does not follow symbolic links.
        let is_real_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        let dir = entry.path();
        if !is_real_dir {
            continue;
        }
        if let Some(format) = PluginFormat::detect(&dir).transpose() {
            dirs.push((name, dir, format));
        }
    }
    dirs.sort_by(|a, b| a.0.cmp(&b.0));
    (dirs, warnings)
}

/// The name of the plugin directory `dir`, which Forge and Triggerfish manifests must repeat: its
/// last component, or, for a path ending in `..`, the last component of its canonical form.
/// `None` when it has none or it is not UTF-8.
pub fn dir_name(dir: &Path) -> Option<String> {
    let name = match dir.file_name() {
        Some(name) => name.to_owned(),
        None => dir.canonicalize().ok()?.file_name()?.to_owned(),
    };
    name.into_string().ok()
}

/// Whether `path` is a regular file (not a link) whose name ends in `.wasm`.
fn is_module_file(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "wasm")
        && path.symlink_metadata().is_ok_and(|m| m.is_file())
}

/// A configured directory must exist and be a real directory.
fn check_dir(dir: &Path, local: &str) -> Result<(), PluginError> {
    match dir.symlink_metadata() {
        Ok(m) if m.is_symlink() => Err(PluginError::Symlink {
            path: dir.to_owned(),
            what: "directory",
        }),
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(PluginError::BadFile {
            path: dir.to_owned(),
            problem: "is not a directory: point `path` at the plugin's directory (holding plugin.wasm, plugin.json or mod.ts) or at a Chock module (a .wasm file)"
                .to_owned(),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(PluginError::Missing {
            local: local.to_owned(),
            path: dir.to_owned(),
        }),
        Err(source) => Err(PluginError::Read {
            path: dir.to_owned(),
            source,
        }),
    }
}
