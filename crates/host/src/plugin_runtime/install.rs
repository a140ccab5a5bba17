//! Plugins the model builds during a conversation: the tools `plugin_scan`, `plugin_install`,
//! `plugin_reload` and `plugin_list`.
//!
//! The model writes a Forge or Triggerfish plugin into the workspace (with `create_file` /
//! `apply_patch`), scans it, installs it and calls its tools a moment later. Every step passes the
//! chokepoint like any call, and the rules are the sandbox's, not the model's:
//!
//! - **What is scanned is what runs.** `plugin_install` and `plugin_reload` read the plugin
//!   directory once into a [`SourceSnapshot`], scan exactly those bytes, and hand exactly those
//!   bytes to the engine. Changing a file after the scan changes nothing that runs.
//! - **Agent-built plugins are untrusted.** They run sandboxed (Triggerfish's `trusted` is never
//!   honoured, no host facts), with no filesystem, HTTP only to what they declare and policy
//!   allows per call, under the default deadline and memory cap. Nothing is written to the trust
//!   store: the plugin lives for this session. Installing asks by default (`plugin_install` is a
//!   `process`-risk action: it runs code), as does every network call its tools make.
//! - **Reload swaps atomically.** The new version is read, scanned and activated beside the old;
//!   only then are the tools swapped in one step. Any failure leaves the old version serving.
//!
//! Plugins the model installs contribute tools only: their prompt contributions and policy hooks
//! are not applied to the run already under way.
//!
//! `plugin_install` may also name a plugin of a registry the user configured (`registry`, with
//! an optional `version`). That takes the one registry install path ([`registry`]) and asks only
//! once the person can judge: the call itself only fetches and stages (risk `read`: no code
//! runs, nothing is in place), then the plugin is resolved, fetched, verified, read by the
//! loader's own reader, scanned and compared with the catalog's claims, and only then does the
//! call ask the chokepoint for the action `plugin.install` (scope `host` = the registry's name;
//! risk `process`, so it asks in the default mode) with the trust review in the question. A
//! refusal, a denial or a failure drops the staging folder; only a yes swaps the plugin in,
//! enabled, trusted and locked like `bosun plugins install`. A registry only the project names
//! cannot be used (a project narrows the user's sources, never adds one).
//!
//! A plugin a person installs (`bosun plugins install`) is copied into `$BOSUN_HOME/plugins` by
//! [`directory`], under the same loader's bounds as the snapshot these tools read.

pub mod directory;
pub mod registry;

pub use directory::{InstallError, InstallSource, InstalledDir, Replaced};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use bosun_core::{
    Capability, CapabilityRequest, ErrorCode, Risk, Scope, ToolError, ToolName, ToolOutput,
    ToolSpec,
};
use bosun_plugins::scan::scan_snapshot;
use bosun_plugins::{ForgeManifest, SourceSnapshot, TriggerfishManifest};
use bosun_policy::Policy;
use serde_json::{Value, json};
use tokio::sync::Mutex;

use crate::chokepoint::ToolRegistry;
use crate::managed::ManagedGate;
use crate::plugin_runtime::js::{JsBounds, JsEngine, JsManifestRef, JsPluginSpec, JsRuntime};
use crate::tool::{ActionAsk, Tool, ToolContext};

/// Where a plugin is looked for when `plugin_install` names no path: the project's plugin
/// directory, so that a plugin the model built can later be reviewed and trusted like any other.
pub const DEFAULT_PLUGIN_DIR: &str = ".bosun/plugins";

/// The names of the four tools.
pub const MANAGER_TOOLS: [&str; 4] = [
    "plugin_scan",
    "plugin_install",
    "plugin_reload",
    "plugin_list",
];

/// One plugin the model installed.
struct Installed {
    dir: PathBuf,
    version: String,
    format: &'static str,
    sha256: String,
    tools: Vec<String>,
    /// Kept alive while its tools are registered.
    _runtime: Arc<JsRuntime>,
}

/// A plugin loaded from configuration, as `plugin_list` shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ListedPlugin {
    /// Its local name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// `native`, `forge` or `triggerfish`.
    pub format: String,
    /// `user` or `project`.
    pub source: String,
    /// Its tools, as the model calls them.
    pub tools: Vec<String>,
}

/// What `plugin_install` needs to install from a registry.
#[derive(Debug, Clone)]
pub struct RegistryAccess {
    /// The registries in effect: the user's, narrowed by the project's
    /// ([`registry::registries`]).
    pub registries: bosun_registry::Registries,
    /// `$BOSUN_HOME`, where plugins, the trust store and the lock live.
    pub home: PathBuf,
    /// What the host's runtimes were given, so a plugin installed while a run is under way
    /// is offered by the same runtimes' code at once (its tools in the same turn).
    pub live: LiveAssembly,
}

/// The owned parts of an [`Assembly`](crate::plugin_runtime::Assembly) a host kept for plugins
/// installed after it was built.
#[derive(Debug, Clone)]
pub struct LiveAssembly {
    /// The shared sandbox.
    pub sandbox: Arc<crate::plugin_runtime::LazySandbox>,
    /// What starts processes in the OS sandbox.
    pub launcher: Arc<bosun_launch::Launcher>,
    /// The host's `[limits]`.
    pub limits: bosun_core::Limits,
    /// The user's `[claude]`.
    pub claude: crate::claude_config::ClaudeConfig,
    /// The workspace root.
    pub workspace: PathBuf,
}

/// The policy action of installing a plugin from a registry.
pub const INSTALL_ACTION: &str = "plugin.install";

/// The state behind the four tools.
pub struct PluginManager {
    engine: Arc<JsEngine>,
    policy: Arc<Policy>,
    registry: Arc<ToolRegistry>,
    reserved: Vec<String>,
    configured: Vec<ListedPlugin>,
    installed: Mutex<BTreeMap<String, Installed>>,
    /// Each installed plugin's directory, for the capability request of `plugin_reload`.
    dirs: std::sync::Mutex<BTreeMap<String, PathBuf>>,
    /// The registries `plugin_install` may install from; `None` when none could be read.
    registries: Option<RegistryAccess>,
    /// The runtimes of plugins installed from a registry while this host lives, by plugin:
    /// kept alive while their tools are registered.
    live: std::sync::Mutex<BTreeMap<String, Vec<Box<dyn crate::plugin_runtime::Runtime>>>>,
    /// The machine's managed policy, which every plugin installed here must pass.
    managed: Option<ManagedGate>,
}

/// Refuses a plugin the managed policy does not allow, naming its rule.
fn check_managed(
    gate: Option<&ManagedGate>,
    name: &str,
    how: crate::managed::PluginPath,
    dir: &Path,
) -> Result<(), ToolError> {
    let Some(gate) = gate else { return Ok(()) };
    gate.check(&crate::managed::PluginArrival {
        name,
        how,
        dir: Some(dir),
        source: None,
    })
    .map_err(|refusal| {
        ToolError::new(
            ErrorCode::Denied,
            format!("nothing was installed: {refusal}"),
        )
    })
}

impl std::fmt::Debug for PluginManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginManager").finish_non_exhaustive()
    }
}

fn owner(name: &str) -> String {
    format!("agent-plugin:{name}")
}

/// The owner of the tools of a plugin installed from a registry during a run.
fn registry_owner(name: &str) -> String {
    format!("registry-plugin:{name}")
}

fn invalid(message: impl Into<String>) -> ToolError {
    ToolError::new(ErrorCode::InvalidInput, message)
}

fn failed(message: impl Into<String>) -> ToolError {
    ToolError::new(ErrorCode::PluginError, message)
}

impl PluginManager {
    /// A manager that registers tools into `registry` (the chokepoint's), judged by `policy`.
    /// `reserved` are names no plugin tool may take; `configured` lists the plugins loaded from
    /// configuration, for `plugin_list`; `registries` are what `plugin_install` may install
    /// from.
    pub fn new(
        engine: Arc<JsEngine>,
        policy: Arc<Policy>,
        registry: Arc<ToolRegistry>,
        mut reserved: Vec<String>,
        configured: Vec<ListedPlugin>,
        registries: Option<RegistryAccess>,
        managed: Option<ManagedGate>,
    ) -> Arc<Self> {
        reserved.extend(MANAGER_TOOLS.iter().map(|t| (*t).to_owned()));
        Arc::new(Self {
            engine,
            policy,
            registry,
            reserved,
            configured,
            installed: Mutex::new(BTreeMap::new()),
            dirs: std::sync::Mutex::new(BTreeMap::new()),
            registries,
            live: std::sync::Mutex::new(BTreeMap::new()),
            managed,
        })
    }

    /// The four tools.
    pub fn tools(self: &Arc<Self>) -> Vec<Arc<dyn Tool>> {
        [Op::Scan, Op::Install, Op::Reload, Op::List]
            .into_iter()
            .filter_map(|op| {
                let spec = op.spec().ok()?;
                let action = format!("builtin.tool.{}", spec.name);
                Some(Arc::new(ManagerTool {
                    manager: Arc::clone(self),
                    op,
                    spec,
                    action,
                }) as Arc<dyn Tool>)
            })
            .collect()
    }

    /// Reads, scans and activates the plugin in `dir`; nothing is registered yet.
    async fn prepare(
        &self,
        name: &str,
        dir: &Path,
    ) -> Result<(Arc<JsRuntime>, SourceSnapshot, &'static str, String), ToolError> {
        let snapshot = SourceSnapshot::read(dir).map_err(|e| invalid(e.to_string()))?;
        let report = scan_snapshot(&snapshot);
        if report.refused {
            return Err(ToolError::new(
                ErrorCode::Denied,
                format!(
                    "plugin \"{name}\" failed the security scan: {}",
                    summarise_findings(&report)
                ),
            ));
        }
        let dir_name = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if dir_name != name {
            return Err(invalid(format!(
                "the plugin directory is named \"{dir_name}\", not \"{name}\": a plugin's directory carries its name"
            )));
        }
        let forge;
        let triggerfish;
        let (manifest, format, version) = if snapshot.get("mod.ts").is_some() {
            triggerfish = TriggerfishManifest::from_snapshot(&snapshot, dir)
                .map_err(|e| invalid(e.to_string()))?;
            (
                JsManifestRef::Triggerfish(&triggerfish),
                "triggerfish",
                triggerfish.version.clone(),
            )
        } else if snapshot.get("plugin.json").is_some() {
            forge =
                ForgeManifest::from_snapshot(&snapshot, dir).map_err(|e| invalid(e.to_string()))?;
            (JsManifestRef::Forge(&forge), "forge", forge.version.clone())
        } else {
            return Err(invalid(
                "the directory holds neither mod.ts (Triggerfish) nor plugin.json (Forge)",
            ));
        };
        let mut spec = JsPluginSpec::from_snapshot(
            name,
            &snapshot,
            manifest,
            json!({}),
            // An agent-built plugin is never trusted, whatever its manifest says.
            false,
            JsBounds::default(),
            self.reserved.clone(),
        )
        .map_err(|e| invalid(e.to_string()))?;
        // Nor does it build code from strings: no person reviewed its manifest's request.
        spec.code_from_strings = false;
        // And what it returns is untrusted input: the agent wrote its code.
        spec.untrusted_output = Some(format!("plugin \"{name}\", which the agent built"));
        let runtime = JsRuntime::start(spec, &self.engine)
            .await
            .map_err(|e| failed(format!("plugin \"{name}\" did not load: {e}")))?;
        Ok((runtime, snapshot, format, version))
    }

    async fn install(
        &self,
        name: &str,
        path: Option<&str>,
        ctx: &ToolContext,
    ) -> Result<Value, ToolError> {
        if !bosun_plugins::metadata::is_plugin_name(name) {
            return Err(invalid(format!(
                "\"{name}\" is not a plugin name: use 1-64 characters a-z, 0-9 and -, starting with a letter"
            )));
        }
        let mut installed = self.installed.lock().await;
        if installed.contains_key(name) {
            return Err(invalid(format!(
                "plugin \"{name}\" is already installed; use plugin_reload to update it"
            )));
        }
        let dir = plugin_dir(name, path, ctx)?;
        check_managed(
            self.managed.as_ref(),
            name,
            crate::managed::PluginPath::AgentBuilt,
            &dir,
        )?;
        let (runtime, snapshot, format, version) = self.prepare(name, &dir).await?;
        let (tools, warnings) = runtime.tools(&self.policy);
        let names: Vec<String> = tools.iter().map(|t| t.spec().name.to_string()).collect();
        self.registry.replace_owned(&owner(name), tools)?;
        self.dirs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(name.to_owned(), dir.clone());
        installed.insert(
            name.to_owned(),
            Installed {
                dir,
                version: version.clone(),
                format,
                sha256: snapshot.sha256().to_owned(),
                tools: names.clone(),
                _runtime: runtime,
            },
        );
        Ok(json!({
            "message": format!(
                "Plugin \"{name}@{version}\" installed (sandboxed, untrusted). Tools: {}",
                names.join(", ")
            ),
            "tools": names,
            "sha256": snapshot.sha256(),
            "warnings": warnings,
        }))
    }

    /// `plugin_install` naming a registry: staged and reviewed first, asked once, then swapped
    /// in (see the module doc).
    async fn install_from_registry(
        &self,
        name: &str,
        registry: &str,
        version: Option<&str>,
        ctx: &ToolContext,
    ) -> Result<Value, ToolError> {
        // The name and version are checked before any path or address is built from them.
        let spec = match version {
            Some(v) => format!("{name}@{v}"),
            None => name.to_owned(),
        };
        let requested =
            bosun_registry::Requested::parse(&spec).map_err(|e| invalid(e.to_string()))?;
        let Some(access) = &self.registries else {
            return Err(ToolError::new(
                ErrorCode::NotFound,
                "no registry can be used here: the person adds one to their config ([registries.<name>])",
            ));
        };
        if !access.registries.names().contains(registry) {
            let configured: Vec<String> = access.registries.names().into_iter().collect();
            return Err(ToolError::new(
                ErrorCode::Denied,
                format!(
                    "`{}` is not a registry the person configured ({}): only the person's own config adds registries; install from one of those or ask them",
                    bosun_core::escape_hidden(registry),
                    if configured.is_empty() {
                        "none is".to_owned()
                    } else {
                        format!("configured: {}", configured.join(", "))
                    }
                ),
            ));
        }
        let source = access
            .registries
            .open(registry, &access.home)
            .map_err(|e| failed(e.to_string()))?;
        // Judged before anything is fetched: where it would be installed, under its name.
        check_managed(
            self.managed.as_ref(),
            &requested.name,
            crate::managed::PluginPath::Registry,
            &registry::installed_root(&access.home, bosun_registry::ArtifactKind::Plugin)
                .join(&requested.name),
        )?;
        let builtins: Vec<&str> = self.reserved.iter().map(String::as_str).collect();
        let staged = tokio::select! {
            staged = registry::stage(
                &access.home,
                source.as_ref(),
                &requested,
                chrono::Utc::now(),
                &bosun_registry::fetch::Quiet,
                false,
                &builtins,
            ) => staged.map_err(|e| ToolError::new(ErrorCode::PluginError, format!("nothing was installed: {e}")))?,
            () = ctx.cancel.cancelled() => {
                return Err(ToolError::new(ErrorCode::Cancelled, "the install was cancelled; nothing was installed"));
            }
        };
        let version = staged.target.claims.version.clone();
        let ask = ActionAsk {
            action: INSTALL_ACTION.to_owned(),
            scope: Scope {
                host: Some(registry.to_owned()),
                ..Scope::default()
            },
            review: staged.review(),
        };
        let summary = format!(
            "install the plugin {} {version} from the registry `{registry}`",
            staged.name()
        );
        // Dropping `staged` on a refusal removes its staging folder: nothing is left.
        ctx.judge_action(ask, summary).await?;
        let record = staged
            .commit(&ctx.workspace, &access.home, chrono::Utc::now())
            .map_err(|e| failed(format!("nothing was installed: {e}")))?;
        // Offered now, by the runtimes' own code from what is in place (trusted, locked), so
        // the model's next request in this turn lists the tools; each call still passes the
        // chokepoint.
        let offered = self
            .offer_installed(access, &record.name, &ctx.workspace)
            .await;
        let listed = |tools: &[String]| {
            if tools.is_empty() {
                "none declared".to_owned()
            } else {
                tools.join(", ")
            }
        };
        let (when, tools, note) = match offered {
            Ok(tools) => ("offered now", tools, None),
            Err(why) => (
                "offered from the next turn",
                record.tools.iter().cloned().collect(),
                Some(why),
            ),
        };
        Ok(json!({
            "message": format!(
                "Plugin \"{}@{}\" installed from the registry `{}` ({}), enabled and trusted after the person's review. Its tools are {when}: {}{}",
                record.name,
                record.version,
                record.source,
                record.signer,
                listed(&tools),
                note.as_deref().map(|n| format!(" ({n})")).unwrap_or_default(),
            ),
            "tools": tools,
            "installed": record,
        }))
    }

    /// Offers the tools of plugin `name`, just installed from a registry, in this host's
    /// registry: the catalog read again for that plugin alone (its lock and trust checked as at
    /// every load) and each runtime's `offer` run on it. Its tool names, or why they wait for
    /// the next run.
    async fn offer_installed(
        &self,
        access: &RegistryAccess,
        name: &str,
        workspace: &crate::workspace::Workspace,
    ) -> Result<Vec<String>, String> {
        let entry = crate::config::LoadedConfig::load(&access.home, workspace)
            .ok()
            .and_then(|c| c.user.plugins.get(name).cloned())
            .unwrap_or_else(|| bosun_plugins::discovery::PluginConfig::new(name));
        let live = access.live.clone();
        let home = access.home.clone();
        let engine = Arc::clone(&self.engine);
        let policy = Arc::clone(&self.policy);
        let reserved = self.reserved.clone();
        let gate = self.managed.clone();
        let plugin = name.to_owned();
        // Activating a JavaScript plugin blocks on a thread of its own: off the async workers.
        let offered = tokio::task::spawn_blocking(move || {
            let trust =
                bosun_plugins::TrustStore::load(bosun_plugins::TrustStore::default_path(&home))
                    .map_err(|e| e.to_string())?;
            let user_plugins = BTreeMap::from([(plugin.clone(), entry)]);
            let builtins: Vec<&str> = reserved.iter().map(String::as_str).collect();
            let catalog = bosun_plugins::Catalog::build(bosun_plugins::catalog::CatalogInput {
                home: &home,
                user_plugins: &user_plugins,
                workspace: None,
                trust: &trust,
                builtins: &builtins,
                digests: None,
            });
            if catalog.enabled().all(|e| e.local_name != plugin) {
                return Err("it is not loadable as installed".to_owned());
            }
            let mut runtimes = crate::plugin_runtime::runtimes(&engine);
            let mut tools = Vec::new();
            for runtime in &mut runtimes {
                let offer = runtime
                    .offer(&crate::plugin_runtime::Assembly {
                        catalog: &catalog,
                        policy: &policy,
                        workspace: &live.workspace,
                        sandbox: &live.sandbox,
                        reserved: &reserved,
                        home: &home,
                        limits: &live.limits,
                        launcher: &live.launcher,
                        claude: &live.claude,
                        managed: gate.as_ref(),
                    })
                    .map_err(|e| e.to_string())?;
                if let Some(warning) = offer.warnings.first() {
                    return Err(warning.clone());
                }
                tools.extend(offer.tools);
            }
            Ok((runtimes, tools))
        })
        .await
        .map_err(|e| e.to_string())??;
        let (runtimes, tools) = offered;
        let names: Vec<String> = tools.iter().map(|t| t.spec().name.to_string()).collect();
        self.registry
            .replace_owned(&registry_owner(name), tools)
            .map_err(|e| e.message)?;
        self.live
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(name.to_owned(), runtimes);
        Ok(names)
    }

    async fn reload(&self, name: &str) -> Result<Value, ToolError> {
        let mut installed = self.installed.lock().await;
        let Some(current) = installed.get(name) else {
            return Err(invalid(format!(
                "plugin \"{name}\" is not installed; use plugin_install first"
            )));
        };
        let dir = current.dir.clone();
        let keep = |e: ToolError| ToolError {
            message: format!(
                "plugin \"{name}\" reload failed; the old version keeps serving: {}",
                e.message
            ),
            ..e
        };
        let (runtime, snapshot, format, version) = self.prepare(name, &dir).await.map_err(keep)?;
        let (tools, warnings) = runtime.tools(&self.policy);
        let names: Vec<String> = tools.iter().map(|t| t.spec().name.to_string()).collect();
        // One swap: calls see the old tools or the new ones, never neither.
        self.registry
            .replace_owned(&owner(name), tools)
            .map_err(keep)?;
        installed.insert(
            name.to_owned(),
            Installed {
                dir,
                version: version.clone(),
                format,
                sha256: snapshot.sha256().to_owned(),
                tools: names.clone(),
                _runtime: runtime,
            },
        );
        Ok(json!({
            "message": format!(
                "Plugin \"{name}@{version}\" reloaded (sandboxed, untrusted). Tools: {}",
                names.join(", ")
            ),
            "tools": names,
            "sha256": snapshot.sha256(),
            "warnings": warnings,
        }))
    }

    async fn list(&self) -> Value {
        let installed = self.installed.lock().await;
        let mut plugins: Vec<Value> = self
            .configured
            .iter()
            .map(|p| serde_json::to_value(p).unwrap_or(Value::Null))
            .collect();
        for (name, p) in installed.iter() {
            plugins.push(json!({
                "name": name,
                "version": p.version,
                "format": p.format,
                "source": "installed in this session",
                "trust": "sandboxed",
                "sha256": p.sha256,
                "tools": p.tools,
            }));
        }
        json!({ "plugins": plugins })
    }

    fn scan(&self, path: &str, ctx: &ToolContext) -> Result<Value, ToolError> {
        let dir = ctx.workspace.resolve(path)?;
        let snapshot = SourceSnapshot::read(&dir).map_err(|e| invalid(e.to_string()))?;
        let report = scan_snapshot(&snapshot);
        let message = if report.refused {
            "Plugin failed security scan."
        } else {
            "Plugin passed security scan."
        };
        Ok(json!({
            "ok": !report.refused,
            "message": message,
            "report": report,
        }))
    }
}

fn summarise_findings(report: &bosun_plugins::scan::ScanReport) -> String {
    report
        .findings
        .iter()
        .take(10)
        .map(|f| {
            format!(
                "{}:{}:{} {} (weight {}): {}",
                f.file, f.line, f.column, f.category, f.weight, f.message
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The plugin directory: `path` (workspace-relative) or `.bosun/plugins/<name>`, confined to the
/// workspace.
fn plugin_dir(name: &str, path: Option<&str>, ctx: &ToolContext) -> Result<PathBuf, ToolError> {
    let relative = path.map_or_else(|| format!("{DEFAULT_PLUGIN_DIR}/{name}"), str::to_owned);
    ctx.workspace.resolve(&relative)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Scan,
    Install,
    Reload,
    List,
}

impl Op {
    fn spec(self) -> Result<ToolSpec, bosun_core::SpecError> {
        let (name, description, schema, risk) = match self {
            Op::Scan => (
                "plugin_scan",
                "Scan a plugin directory in the workspace (every .js/.mjs/.cjs/.ts file) for risky code: code execution, subprocesses, environment and filesystem access, listeners, remote imports, obfuscation, prompt-injection text, hidden characters. Reports findings with weights; a weight-3 finding or a total of 4 fails.",
                json!({
                    "type": "object",
                    "properties": { "path": { "type": "string", "description": "The plugin directory, relative to the workspace." } },
                    "required": ["path"],
                    "additionalProperties": false
                }),
                Risk::Read,
            ),
            Op::Install => (
                "plugin_install",
                "Install a Forge (plugin.json + index.mjs) or Triggerfish (mod.ts) plugin from a workspace directory for this session: it is scanned, then loaded sandboxed and untrusted, and its tools become available. The directory must be named like the plugin. With `registry`, install the plugin `name` from one of the person's configured registries instead: it is fetched, verified and reviewed, the person is asked with the review, and its tools are offered at once (the result says when they could only be offered from the next turn).",
                json!({
                    "type": "object",
                    "properties": {
                        "name": { "type": "string", "description": "The plugin's name (its directory's name, or its name in the registry)." },
                        "path": { "type": "string", "description": "The plugin directory relative to the workspace; default .bosun/plugins/<name>." },
                        "registry": { "type": "string", "description": "A registry the person configured, to install from it instead of the workspace." },
                        "version": { "type": "string", "description": "With `registry`: the version to install; default the newest." }
                    },
                    "required": ["name"],
                    "additionalProperties": false
                }),
                Risk::Process,
            ),
            Op::Reload => (
                "plugin_reload",
                "Reload a plugin installed with plugin_install after editing it: the new version is scanned and loaded, then replaces the old in one step; if anything fails the old version keeps serving.",
                json!({
                    "type": "object",
                    "properties": { "name": { "type": "string" } },
                    "required": ["name"],
                    "additionalProperties": false
                }),
                Risk::Process,
            ),
            Op::List => (
                "plugin_list",
                "List the plugins of this session: those loaded from configuration and those installed with plugin_install, with their tools.",
                json!({ "type": "object", "properties": {}, "additionalProperties": false }),
                Risk::Read,
            ),
        };
        let mut builder = ToolSpec::builder(ToolName::new(name)?, description)
            .input_schema(schema)
            .risk(risk);
        if matches!(self, Op::Scan | Op::Install | Op::Reload) {
            builder = builder.capability(Capability::FsRead);
        }
        // A constant of the source, compiled by `every_manager_schema_is_a_valid_json_schema`.
        builder.build_builtin()
    }
}

/// One of the four tools.
struct ManagerTool {
    manager: Arc<PluginManager>,
    op: Op,
    spec: ToolSpec,
    /// `builtin.tool.<name>`: these are Bosun's own tools.
    action: String,
}

impl std::fmt::Debug for ManagerTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ManagerTool").field("op", &self.op).finish()
    }
}

fn str_field<'a>(input: &'a Value, key: &str) -> Option<&'a str> {
    input.get(key).and_then(Value::as_str)
}

#[async_trait]
impl Tool for ManagerTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn action(&self) -> &str {
        &self.action
    }

    fn capability_requests(
        &self,
        input: &Value,
        ctx: &ToolContext,
    ) -> Result<Vec<CapabilityRequest>, ToolError> {
        let path = match self.op {
            Op::List => return Ok(Vec::new()),
            Op::Scan => str_field(input, "path").unwrap_or(".").to_owned(),
            // From a registry: nothing in the workspace is read.
            Op::Install if input.get("registry").is_some() => return Ok(Vec::new()),
            Op::Install => {
                let name = str_field(input, "name").unwrap_or_default();
                str_field(input, "path")
                    .map_or_else(|| format!("{DEFAULT_PLUGIN_DIR}/{name}"), str::to_owned)
            }
            Op::Reload => {
                let name = str_field(input, "name").unwrap_or_default();
                let known = self
                    .manager
                    .dirs
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .get(name)
                    .cloned();
                match known {
                    Some(dir) => dir.to_string_lossy().into_owned(),
                    None => format!("{DEFAULT_PLUGIN_DIR}/{name}"),
                }
            }
        };
        Ok(vec![CapabilityRequest {
            capability: Capability::FsRead,
            scope: ctx.workspace.judged_scope(&path)?,
        }])
    }

    /// Installing from a registry asks mid-call, once the review exists.
    fn judges_mid_call(&self, input: &Value) -> bool {
        self.op == Op::Install && input.get("registry").is_some()
    }

    /// Installing from a registry only fetches and stages before it asks for `plugin.install`.
    fn risk_of_call(&self, input: &Value) -> Risk {
        if self.judges_mid_call(input) {
            Risk::Read
        } else {
            self.spec.risk
        }
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let value = match self.op {
            Op::Scan => {
                let path = str_field(&input, "path")
                    .ok_or_else(|| invalid("plugin_scan needs a \"path\""))?;
                self.manager.scan(path, ctx)?
            }
            Op::Install => {
                let name = str_field(&input, "name")
                    .ok_or_else(|| invalid("plugin_install needs a \"name\""))?;
                match str_field(&input, "registry") {
                    Some(registry) => {
                        if input.get("path").is_some() {
                            return Err(invalid(
                                "plugin_install takes either \"registry\" or \"path\", not both",
                            ));
                        }
                        self.manager
                            .install_from_registry(
                                name,
                                registry,
                                str_field(&input, "version"),
                                ctx,
                            )
                            .await?
                    }
                    None if input.get("version").is_some() => {
                        return Err(invalid(
                            "\"version\" goes with \"registry\": a workspace plugin's version is its manifest's",
                        ));
                    }
                    None => {
                        self.manager
                            .install(name, str_field(&input, "path"), ctx)
                            .await?
                    }
                }
            }
            Op::Reload => {
                let name = str_field(&input, "name")
                    .ok_or_else(|| invalid("plugin_reload needs a \"name\""))?;
                self.manager.reload(name).await?
            }
            Op::List => self.manager.list().await,
        };
        Ok(ToolOutput::new(value))
    }
}

#[cfg(test)]
mod spec_tests {
    use super::Op;

    /// The manager's tools skip compiling their schemas at start-up (`build_builtin`); this is
    /// where each is checked as a plugin's would be.
    #[test]
    fn every_manager_schema_is_a_valid_json_schema() {
        for op in [Op::Scan, Op::Install, Op::Reload, Op::List] {
            let spec = op
                .spec()
                .expect("a manager tool's spec is within every bound");
            if let Err(e) = bosun_core::check_schema(&spec.input_schema) {
                panic!(
                    "the manager tool {}'s input schema is refused: {e}",
                    spec.name
                );
            }
        }
    }
}
