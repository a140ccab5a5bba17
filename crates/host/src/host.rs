//! [`Host`]: the one place where Bosun is assembled. Configuration, trust and the plugin catalog
//! are read once; built-in tools are built once; plugin runtimes turn enabled plugins into tools
//! in the same registry; every caller (the CLI, the terminal UI, the agent, an embedding
//! program) asks the host for a chokepoint over that registry.
//!
//! Nothing here decides a call or prints: decisions are the chokepoint's, and what went wrong
//! while assembling (a plugin left out, a broken prompt contribution) is returned as warnings.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bosun_core::Risk;
use bosun_plugins::{Catalog, CatalogInput, PluginError, TrustStore};
use bosun_policy::Policy;
use bosun_sandbox::{EngineLimits, Sandbox, SandboxConfig, SandboxError};

use crate::approval::ApprovalBroker;
use crate::builtin;
use crate::chokepoint::{Chokepoint, PolicyHook, ToolRegistry};
use crate::config::{ConfigError, LoadedConfig, bosun_home};
use crate::plugin_runtime::install::{ListedPlugin, MANAGER_TOOLS, PluginManager};
use crate::plugin_runtime::js::{EngineNotice, JavaScriptRuntime, JsEngine, JsRuntime};
use crate::plugin_runtime::{self, Assembly, LazySandbox, Runtime, RuntimeError};
use crate::session::Session;
use crate::tool::Tool;
use crate::trace::Observer;
use crate::workspace::Workspace;

/// Why a host could not be assembled. A plugin that fails is never one of these: it is left out
/// with a warning, and the rest of the host works.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// The workspace holding the directory could not be found or read.
    #[error("finding the workspace of {cwd}: {source}")]
    Workspace {
        /// The directory asked about.
        cwd: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A configuration file (user or project) is unusable; the error names file, line and key.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The trust store cannot be read.
    #[error("{0}")]
    Trust(#[from] PluginError),
    /// The WebAssembly sandbox could not start (engine, artefact cache).
    #[error("starting the plugin sandbox: {0}")]
    Sandbox(#[from] SandboxError),
    /// A tool of the host itself is broken (a bug in Bosun, never a plugin's doing).
    #[error("assembling the host's tools: {0}")]
    Tools(String),
    /// The thread that activates JavaScript plugins could not run.
    #[error("activating the JavaScript plugins: {0}")]
    Activation(String),
    /// A child chokepoint was asked for tools this host does not have.
    #[error("it references unknown tool(s): {}", names.join(", "))]
    UnknownTools {
        /// The names that are no tool of this host (`bosun tools list` shows those it has).
        names: Vec<String>,
    },
}

impl From<RuntimeError> for HostError {
    fn from(error: RuntimeError) -> Self {
        match error {
            RuntimeError::Sandbox(e) => Self::Sandbox(e),
            RuntimeError::Activation(why) => Self::Activation(why),
        }
    }
}

/// Prompt contributions as `(plugin local name, text)`, and warnings about those left out.
pub type Prompts = plugin_runtime::Prompts;

/// Builds a [`Host`]: where it runs and what it loads. Start with [`Host::builder`].
pub struct HostBuilder {
    cwd: Option<PathBuf>,
    home: Option<PathBuf>,
    workspace: Option<Arc<Workspace>>,
    config: Option<Arc<LoadedConfig>>,
    plugins: bool,
    notice: Option<EngineNotice>,
    one_command: bool,
}

impl std::fmt::Debug for HostBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostBuilder")
            .field("cwd", &self.cwd)
            .field("home", &self.home)
            .field("workspace", &self.workspace)
            .field("config", &self.config)
            .field("plugins", &self.plugins)
            .field("notice", &self.notice.is_some())
            .field("one_command", &self.one_command)
            .finish()
    }
}

impl HostBuilder {
    /// The workspace is the one holding `cwd` (the nearest ancestor with `.git`, else `cwd`).
    pub fn workspace_of(mut self, cwd: &Path) -> Self {
        self.cwd = Some(cwd.to_owned());
        self
    }

    /// An already discovered workspace.
    pub fn workspace(mut self, workspace: Arc<Workspace>) -> Self {
        self.workspace = Some(workspace);
        self
    }

    /// `$BOSUN_HOME` (default: the `BOSUN_HOME` variable, else `~/.bosun`).
    pub fn home(mut self, home: &Path) -> Self {
        self.home = Some(home.to_owned());
        self
    }

    /// Configuration already loaded (its home wins over [`home`](Self::home)).
    pub fn config(mut self, config: Arc<LoadedConfig>) -> Self {
        self.config = Some(config);
        self
    }

    /// Calls `notice` with what to tell a person just before Bosun's JavaScript engine is
    /// compiled for this machine (it takes seconds, once); loading it from the cache says nothing.
    pub fn on_js_engine_compile(mut self, notice: EngineNotice) -> Self {
        self.notice = Some(notice);
        self
    }

    /// Leaves every plugin out (built-in tools only): for callers that must not start a sandbox.
    pub fn without_plugins(mut self) -> Self {
        self.plugins = false;
        self
    }

    /// For a process that runs one command and exits (`bosun tools call`, `tools list`, a
    /// plugin's command): its sandbox makes each plugin instance's memory, tables and stack when
    /// the instance is made, instead of reserving the whole pool of instance slots — address
    /// space and a guarded fiber stack for each of `[sandbox] plugin_instances` — when the
    /// engine is built. Every bound stays: the cap on live instances is counted by the sandbox
    /// instead of the pool, memory by each instance's limiter as before. Long-lived hosts
    /// (`bosun serve`, a session) keep the pool, which makes repeated instances cheaper.
    pub fn for_one_command(mut self) -> Self {
        self.one_command = true;
        self
    }

    /// Reads configuration and trust, builds the tools and activates the enabled JavaScript
    /// plugins (in the sandbox, under their grants). Native plugins stay lazy.
    ///
    /// # Errors
    /// A [`HostError`] when the workspace, configuration, trust store or sandbox is unusable.
    /// A plugin that fails is left out with a warning instead.
    pub fn build(self) -> Result<Host, HostError> {
        let workspace = match self.workspace {
            Some(workspace) => workspace,
            None => {
                let cwd = match self.cwd {
                    Some(cwd) => cwd,
                    None => std::env::current_dir().map_err(|source| HostError::Workspace {
                        cwd: PathBuf::from("."),
                        source,
                    })?,
                };
                let workspace = Workspace::discover(&cwd)
                    .map_err(|source| HostError::Workspace { cwd, source })?;
                Arc::new(workspace)
            }
        };
        let config = match self.config {
            Some(config) => config,
            None => {
                let home = match self.home {
                    Some(home) => home,
                    None => bosun_home()?,
                };
                Arc::new(LoadedConfig::load(&home, &workspace)?)
            }
        };
        Host::assemble(
            workspace,
            config,
            self.plugins,
            self.notice,
            !self.one_command,
        )
    }
}

/// Bosun assembled for one workspace: policy, every tool in one registry, the plugins' policy
/// hooks and prompt contributions, and what went wrong on the way.
pub struct Host {
    workspace: Arc<Workspace>,
    config: Arc<LoadedConfig>,
    catalog: Catalog,
    policy: Arc<Policy>,
    /// Built-ins, enabled plugins' tools and the plugin-installing tools; shared with the
    /// latter, which add tools during a run.
    registry: Arc<ToolRegistry>,
    hooks: Vec<Arc<dyn PolicyHook>>,
    /// `[hooks]` of the user's and the project's config.
    config_hooks: Arc<crate::hooks::Hooks>,
    /// Every format's runtime, with what it started.
    runtimes: Vec<Box<dyn Runtime>>,
    /// Every child process starts through it.
    launcher: Arc<bosun_launch::Launcher>,
    /// MCP servers installed plugins provide (`<plugin>:<server>`), for the MCP layer.
    plugin_mcp: Vec<(String, crate::mcp_config::McpServerConfig)>,
    warnings: Vec<String>,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("workspace", &self.workspace.root())
            .field("registry", &self.registry)
            .finish_non_exhaustive()
    }
}

/// Several runtimes' observers as one, each handed every event in turn.
struct Observers(Vec<Arc<dyn Observer>>);

impl Observer for Observers {
    fn observe(&self, envelope: &bosun_core::Envelope) {
        for observer in &self.0 {
            observer.observe(envelope);
        }
    }

    fn child_run(&self, run_id: &str, session: Arc<dyn crate::labels::Reader>) {
        for observer in &self.0 {
            observer.child_run(run_id, session.clone());
        }
    }
}

/// Why the machine's managed policy refuses a plugin the catalog found: every plugin, user
/// or project, installed by hand or from a registry, is judged where it is loaded from.
fn managed_refusal(
    managed: &crate::managed::Managed,
    entry: &bosun_plugins::PluginEntry,
    home: &std::path::Path,
) -> Option<String> {
    let how = match entry.scope {
        bosun_plugins::PluginScope::User => crate::managed::PluginPath::UserConfig,
        bosun_plugins::PluginScope::Project { .. } => crate::managed::PluginPath::Project,
    };
    managed
        .check_plugin(
            &crate::managed::PluginArrival {
                name: &entry.local_name,
                how,
                dir: Some(&entry.dir),
                source: None,
            },
            home,
        )
        .err()
        .map(|refusal| refusal.to_string())
}

/// The names of the built-in tools: no plugin tool may take one.
pub(crate) fn builtin_names(builtins: &[Arc<dyn Tool>]) -> Vec<String> {
    builtins.iter().map(|t| t.spec().name.to_string()).collect()
}

/// The risk of every tool action known without running plugin code: built-ins and enabled
/// plugins' tools from their metadata.
fn known_risks(builtins: &[Arc<dyn Tool>], catalog: &Catalog) -> Vec<(String, Risk)> {
    let mut risks: Vec<(String, Risk)> = builtins
        .iter()
        .map(|t| (t.action().to_owned(), t.spec().risk))
        .collect();
    for entry in catalog.enabled() {
        risks.extend(
            entry
                .tools()
                .map(|(tool, offer)| (offer.action.clone(), tool.spec.risk)),
        );
    }
    risks
}

/// Runs `future` to completion on a runtime of its own, on a thread of its own.
fn run_to_completion<T: Send>(
    future: impl std::future::Future<Output = T> + Send,
) -> Result<T, HostError> {
    Ok(plugin_runtime::run_to_completion(future)?)
}

/// Whether Bosun's JavaScript engine is compiled for this machine in `home`'s cache (its first
/// load otherwise takes seconds).
pub fn js_engine_ready(home: &std::path::Path) -> bool {
    Sandbox::new(SandboxConfig {
        cache_dir: Some(home.join("cache")),
        ..Default::default()
    })
    .is_ok_and(|sandbox| sandbox.js_engine_cached(&bosun_js::ENGINE))
}

/// When an enabled JavaScript plugin of `workspace` will need Bosun's JavaScript engine and the
/// engine is not compiled for this machine yet: what to tell a person before the seconds it
/// takes ([`JS_ENGINE_NOTICE`](crate::JS_ENGINE_NOTICE)).
pub fn js_engine_notice(workspace: &Workspace, config: &LoadedConfig) -> Option<&'static str> {
    // Most hosts have no plugin at all: no catalog (which hashes every plugin's files) then.
    let project = bosun_plugins::discovery::project_plugins_dir(workspace.root());
    if config.user.plugins.is_empty() && !project.is_dir() {
        return None;
    }
    let (_, catalog) = Host::catalog_for(workspace, config).ok()?;
    let js = catalog
        .enabled()
        .any(bosun_plugins::PluginEntry::needs_js_engine);
    (js && !js_engine_ready(&config.home)).then_some(crate::plugin_runtime::js::JS_ENGINE_NOTICE)
}

/// Compiles Bosun's JavaScript engine for this machine into `home`'s cache, ahead of the first
/// JavaScript plugin's call.
///
/// # Errors
/// The engine could not be compiled or cached.
pub fn prepare_js_engine(home: &std::path::Path) -> Result<(), HostError> {
    let sandbox = Sandbox::new(SandboxConfig {
        cache_dir: Some(home.join("cache")),
        ..Default::default()
    })?;
    run_to_completion(async { sandbox.load_js_engine(&bosun_js::ENGINE).await.map(|_| ()) })??;
    Ok(())
}

impl Host {
    /// Starts a [`HostBuilder`] for the workspace of the current directory and `$BOSUN_HOME`.
    pub fn builder() -> HostBuilder {
        HostBuilder {
            cwd: None,
            home: None,
            workspace: None,
            config: None,
            plugins: true,
            notice: None,
            one_command: false,
        }
    }

    /// The trust store and the catalog of every plugin in every scope, with its state. Reads
    /// metadata only: no plugin code runs.
    ///
    /// # Errors
    /// The trust store cannot be read.
    pub fn catalog_for(
        workspace: &Workspace,
        config: &LoadedConfig,
    ) -> Result<(TrustStore, Catalog), HostError> {
        Self::catalog_with(workspace, config, &builtin_names(&builtin::tools()), None)
    }

    /// The catalog for showing a person, never for loading: a component unchanged since it was
    /// last read (same file, size and times) is shown from the digest and metadata kept in
    /// `$BOSUN_HOME/cache/plugin-digests.json`, and no entry holds bytes to run.
    ///
    /// # Errors
    /// The trust store cannot be read.
    pub fn catalog_for_listing(
        workspace: &Workspace,
        config: &LoadedConfig,
    ) -> Result<(TrustStore, Catalog), HostError> {
        let digests =
            bosun_plugins::digests::Digests::load(config.home.join("cache/plugin-digests.json"));
        Self::catalog_with(
            workspace,
            config,
            &builtin_names(&builtin::tools()),
            Some(&digests),
        )
    }

    fn catalog_with(
        workspace: &Workspace,
        config: &LoadedConfig,
        names: &[String],
        digests: Option<&bosun_plugins::digests::Digests>,
    ) -> Result<(TrustStore, Catalog), HostError> {
        let trust = TrustStore::load(TrustStore::default_path(&config.home))?;
        let builtins: Vec<&str> = names.iter().map(String::as_str).collect();
        let mut catalog = Catalog::build(CatalogInput {
            home: &config.home,
            user_plugins: &config.user.plugins,
            // A folder the person refused to trust offers none of its plugins.
            workspace: (config.workspace_trust != crate::workspace_trust::WorkspaceTrust::Refused)
                .then(|| workspace.root()),
            trust: &trust,
            builtins: &builtins,
            digests,
        });
        if let Some(managed) = &config.managed {
            catalog.refuse(|entry| managed_refusal(managed, entry, &config.home));
        }
        Ok((trust, catalog))
    }

    fn assemble(
        workspace: Arc<Workspace>,
        config: Arc<LoadedConfig>,
        plugins: bool,
        notice: Option<EngineNotice>,
        pooling: bool,
    ) -> Result<Self, HostError> {
        // Bosun's home holds tokens and secrets: when it lies inside the workspace (run in
        // `$HOME`, say), no tool of this host reads, writes, lists or searches it.
        let held = (*workspace).clone().withholding(&config.home);
        let workspace = if held == *workspace {
            workspace
        } else {
            Arc::new(held)
        };
        let builtins = builtin::tools();
        let (_, catalog) =
            Self::catalog_with(&workspace, &config, &builtin_names(&builtins), None)?;
        let policy = Arc::new(config.policy(known_risks(&builtins, &catalog))?);
        let registry = Arc::new(ToolRegistry::default());
        let mut warnings = Vec::new();
        let config_hooks = Arc::new(
            config
                .hooks()
                .map_err(|e| HostError::Tools(e.to_string()))?,
        );
        // Bosun's home is private to children: no command line opens it up.
        let launcher = Arc::new(
            bosun_launch::Launcher::new(config.user.sandbox.clone())
                .private(&config.home)
                .cache_in(config.home.join("cache")),
        );
        for tool in &builtins {
            registry
                .register(tool.clone())
                .map_err(|e| HostError::Tools(e.message))?;
        }
        let mut host = Self {
            workspace,
            config,
            catalog,
            policy,
            registry,
            hooks: Vec::new(),
            config_hooks,
            runtimes: Vec::new(),
            launcher,
            plugin_mcp: Vec::new(),
            warnings: Vec::new(),
        };
        if !plugins {
            return Ok(host);
        }
        warnings.extend(host.catalog.warnings().iter().map(ToString::to_string));
        // The wasmtime engine (its instance pool and epoch thread) is built only for a host
        // with a WebAssembly plugin enabled, or when JavaScript first runs.
        let sandbox = Arc::new(LazySandbox::new(SandboxConfig {
            cache_dir: Some(host.config.home.join("cache")),
            engine: EngineLimits {
                max_instances: host.config.user.sandbox.plugin_instances,
                pooling,
                ..EngineLimits::default()
            },
            ..Default::default()
        }));
        let engine = JsEngine::in_sandbox(sandbox.clone(), bosun_js::ENGINE, notice);
        let mut reserved = builtin_names(&builtins);
        reserved.extend(MANAGER_TOOLS.iter().map(|t| (*t).to_owned()));

        let gate = host
            .config
            .managed
            .clone()
            .map(|managed| crate::managed::ManagedGate {
                managed,
                home: host.config.home.clone(),
            });
        let mut runtimes = plugin_runtime::runtimes(&engine);
        let mut listed: Vec<ListedPlugin> = Vec::new();
        for runtime in &mut runtimes {
            let offer = runtime.offer(&Assembly {
                catalog: &host.catalog,
                policy: &host.policy,
                workspace: host.workspace.root(),
                sandbox: &sandbox,
                reserved: &reserved,
                home: &host.config.home,
                limits: &host.config.user.limits,
                launcher: &host.launcher,
                claude: &host.config.user.claude,
                managed: gate.as_ref(),
            })?;
            warnings.extend(offer.warnings);
            host.register_plugin_tools(offer.tools, &mut warnings);
            host.hooks.extend(offer.hooks);
            host.plugin_mcp.extend(offer.mcp_servers);
            listed.extend(offer.listed.into_iter().map(|l| ListedPlugin {
                name: l.name,
                version: l.version,
                format: l.format,
                source: "configured".to_owned(),
                tools: l.tools,
            }));
        }
        host.runtimes = runtimes;
        // Tools of plugins held back until the user looks at them again: a call names why.
        for entry in host.catalog.entries() {
            let why = match &entry.state {
                bosun_plugins::PluginState::Changed { .. } => format!(
                    "its plugin `{}` changed since you trusted it; review the change with \
                     `bosun plugins trust {}`",
                    entry.local_name, entry.local_name
                ),
                bosun_plugins::PluginState::Untrusted => format!(
                    "its plugin `{}` is not trusted yet; review it with `bosun plugins trust {}`",
                    entry.local_name, entry.local_name
                ),
                _ => continue,
            };
            for offer in &entry.offers {
                if !host.registry.contains(&offer.tool) {
                    host.registry.withhold(offer.tool.clone(), why.clone());
                }
            }
        }
        // The registries `plugin_install` may install from; the configuration was checked at
        // load, so an error here only leaves registry installs out.
        let registries = plugin_runtime::install::registry::registries(&host.config)
            .ok()
            .map(|registries| plugin_runtime::install::RegistryAccess {
                registries,
                home: host.config.home.clone(),
                live: plugin_runtime::install::LiveAssembly {
                    sandbox: sandbox.clone(),
                    launcher: host.launcher.clone(),
                    limits: host.config.user.limits,
                    claude: host.config.user.claude.clone(),
                    workspace: host.workspace.root().to_owned(),
                },
            });
        let manager = PluginManager::new(
            engine,
            host.policy.clone(),
            host.registry.clone(),
            reserved,
            listed,
            registries,
            gate,
        );
        for tool in manager.tools() {
            host.registry
                .register(tool)
                .map_err(|e| HostError::Tools(e.message))?;
        }
        host.warnings = warnings;
        Ok(host)
    }

    /// Adds plugin tools one by one: a tool whose name is
    /// taken is left out with a warning, and never stops the other tools.
    fn register_plugin_tools(&self, tools: Vec<Arc<dyn Tool>>, warnings: &mut Vec<String>) {
        for tool in tools {
            let action = tool.action().to_owned();
            if let Err(e) = self.registry.register(tool) {
                warnings.push(format!("{action} is not offered: {}", e.message));
            }
        }
    }

    /// A chokepoint over this host's registry, policy and hooks, asking `broker` when policy
    /// says to ask. Cheap: every chokepoint of a host shares its tools.
    ///
    /// # Errors
    /// Never today; kept fallible so a chokepoint that cannot be built is reported, not hidden.
    pub fn chokepoint(&self, broker: Arc<dyn ApprovalBroker>) -> Result<Chokepoint, HostError> {
        self.chokepoint_reviewed(broker, None)
    }

    /// As [`Host::chokepoint`], with `reviewer` deciding `review` decisions before a person.
    ///
    /// # Errors
    /// As [`Host::chokepoint`].
    pub fn chokepoint_reviewed(
        &self,
        broker: Arc<dyn ApprovalBroker>,
        reviewer: Option<Arc<dyn crate::review::Reviewer>>,
    ) -> Result<Chokepoint, HostError> {
        let mut builder = Chokepoint::builder(self.policy.clone(), self.workspace.clone())
            .registry(self.registry.clone())
            .hooks(self.hooks.iter().cloned())
            .broker(broker)
            .limits(self.config.user.limits)
            .env(self.config.scrubbed_env())
            .launcher(self.launcher.clone())
            .flow(self.flow())
            .config_hooks(self.config_hooks.clone())
            .remember_in(&self.config.home);
        if let Some(reviewer) = reviewer {
            builder = builder
                .reviewer(reviewer)
                .review_asks(self.config.user.policy.review_asks);
        }
        builder.build().map_err(|e| HostError::Tools(e.message))
    }

    /// A chokepoint factory for a child run (a subagent) over only `tools`, by name: the
    /// host's policy, hooks, workspace, limits, environment and launcher.
    ///
    /// # Errors
    /// [`HostError::UnknownTools`]: names that are no tool of this host.
    pub fn child_chokepoint(&self, tools: &[String]) -> Result<crate::ChildChokepoint, HostError> {
        let all = self.registry.tools();
        let mut chosen = Vec::new();
        let mut unknown = Vec::new();
        for name in tools {
            match all.iter().find(|t| t.spec().name.as_str() == name) {
                Some(tool) if !chosen.iter().any(|c: &Arc<dyn Tool>| Arc::ptr_eq(c, tool)) => {
                    chosen.push(tool.clone());
                }
                Some(_) => {}
                None => unknown.push(name.clone()),
            }
        }
        if !unknown.is_empty() {
            return Err(HostError::UnknownTools { names: unknown });
        }
        Ok(crate::ChildChokepoint {
            tools: chosen,
            hooks: self.hooks.clone(),
            policy: self.policy.clone(),
            workspace: self.workspace.clone(),
            limits: self.config.user.limits,
            env: self.config.scrubbed_env(),
            launcher: self.launcher.clone(),
            flow: self.flow(),
            config_hooks: self.config_hooks.clone(),
            home: self.config.home.clone(),
        })
    }

    /// The information-flow rules of the user's `[classification]`, with the project's path
    /// labels as sources.
    pub fn flow(&self) -> Arc<crate::flow::Flow> {
        Arc::new(self.config.flow())
    }

    /// The launcher every child process starts through: `run_command`'s, and MCP servers'.
    pub fn launcher(&self) -> &Arc<bosun_launch::Launcher> {
        &self.launcher
    }

    /// The MCP servers installed plugins provide, by their `<plugin>:<server>` names: the MCP
    /// layer offers their tools once a person approved them, like `[mcp.<name>]` servers'.
    pub fn plugin_mcp_servers(&self) -> &[(String, crate::mcp_config::McpServerConfig)] {
        &self.plugin_mcp
    }

    /// The sandbox's one-line state when it is not full (`sandbox: degraded — …` or
    /// `sandbox: off — …`), for the start-up warning and the trace. Probes the machine once.
    pub fn sandbox_warning(&self) -> Option<String> {
        let status = self.launcher.status();
        (!status.is_full()).then(|| status.summary())
    }

    /// Adds warnings about what a caller attached to the host (MCP servers left out, say), shown
    /// with the host's own.
    pub fn add_warnings(&mut self, warnings: impl IntoIterator<Item = String>) {
        self.warnings.extend(warnings);
    }

    /// Changes whenever the host's set of tools changes (a plugin installed or reloaded during a
    /// run, a tool registered): see [`ToolRegistry::generation`].
    pub fn tools_generation(&self) -> u64 {
        self.registry.generation()
    }

    /// Adds a tool from outside the host's own runtimes (an MCP server's, a program embedding
    /// Bosun's) to the registry every chokepoint of this host shares.
    ///
    /// # Errors
    /// The name is taken; nothing changes.
    pub fn register_tool(&self, tool: Arc<dyn Tool>) -> Result<(), bosun_core::ToolError> {
        self.registry.register(tool)
    }

    /// The prompt contributions of the enabled plugins for `task`, as `(local name, text)`,
    /// runtime by runtime: native plugins' manifest prompts, then what each JavaScript plugin
    /// contributes for this task (run in its sandbox). A contribution that fails is left out
    /// with a warning. The session whose system prompt takes them must take on their labels
    /// ([`Prompts::carry_to`]): a plugin's instance may hold what any session handed it.
    pub async fn prompts(&self, task: &str) -> Prompts {
        let mut all = Prompts::default();
        for runtime in &self.runtimes {
            let prompts = runtime.prompts(task).await;
            all.texts.extend(prompts.texts);
            all.warnings.extend(prompts.warnings);
            prompts.carried.pass_to(&all.carried);
        }
        all
    }

    /// [`prompts`](Self::prompts) for callers outside an async context (or inside one that
    /// must not be re-entered): runs on a thread and runtime of its own.
    ///
    /// # Errors
    /// The thread could not run.
    pub fn prompts_blocking(&self, task: &str) -> Result<Prompts, HostError> {
        run_to_completion(self.prompts(task))
    }

    /// An observer that delivers the redacted events of a run of `session` to the plugins that
    /// asked for them (`observeRunEvents`), off the run's path; `None` when no plugin asked.
    /// Their instances take on the session's labels with each event.
    pub fn observer(&self, session: &Arc<Session>) -> Option<Arc<dyn Observer>> {
        let mut observers: Vec<Arc<dyn Observer>> = self
            .runtimes
            .iter()
            .filter_map(|r| r.observer(session))
            .collect();
        match observers.len() {
            0 => None,
            1 => observers.pop(),
            _ => Some(Arc::new(Observers(observers))),
        }
    }

    /// As [`observer`](Self::observer).
    pub fn js_observer(&self, session: &Arc<Session>) -> Option<Arc<dyn Observer>> {
        self.observer(session)
    }

    /// The activated JavaScript plugins (for their commands and subagents).
    pub fn js_runtimes(&self) -> &[Arc<JsRuntime>] {
        self.runtimes
            .iter()
            .find_map(|r| r.as_any().downcast_ref::<JavaScriptRuntime>())
            .map_or(&[], JavaScriptRuntime::plugins)
    }

    /// Narrows this host to what one prompt may use (a plugin command's `allowed-tools`): every
    /// chokepoint built after this, and every subagent's, denies a call outside it, and the
    /// tools it leaves out are no longer offered. It never widens: policy still judges every
    /// call it allows. Call it before the chokepoint is built and again after tools are added,
    /// to leave those out too.
    pub fn narrow(&mut self, allowed: &Arc<crate::allowed_tools::AllowedTools>) {
        let hook: Arc<dyn PolicyHook> = allowed.clone();
        if !self.hooks.iter().any(|h| Arc::ptr_eq(h, &hook)) {
            self.hooks.push(hook);
        }
        let why = "the command this prompt runs does not allow it (its allowed-tools)";
        self.registry.retain(|name| allowed.offers(name), why);
    }

    /// The installed Claude Code plugins found intact at this assembly (for their skills,
    /// commands and agents); none for a host built without plugins.
    pub fn claude_plugins(&self) -> &[bosun_claude::LoadedPlugin] {
        self.runtimes
            .iter()
            .find_map(|r| {
                r.as_any()
                    .downcast_ref::<crate::plugin_runtime::claude::ClaudeRuntime>()
            })
            .map_or(&[], crate::plugin_runtime::claude::ClaudeRuntime::plugins)
    }

    /// The `bin/` folders of installed Claude Code plugins a person granted and reviewed, for
    /// `run_command`'s PATH (none for a host built without plugins).
    pub fn claude_bins(&self) -> Vec<std::path::PathBuf> {
        self.runtimes
            .iter()
            .find_map(|r| {
                r.as_any()
                    .downcast_ref::<crate::plugin_runtime::claude::ClaudeRuntime>()
            })
            .map_or_else(Vec::new, |r| r.bins().to_vec())
    }

    /// The installed Claude Code plugins this assembly did not load (changed since review, or
    /// refused), so a face refuses what names them instead of passing it on as text.
    pub fn claude_withheld(&self) -> &[bosun_claude::Withheld] {
        self.runtimes
            .iter()
            .find_map(|r| {
                r.as_any()
                    .downcast_ref::<crate::plugin_runtime::claude::ClaudeRuntime>()
            })
            .map_or(&[], crate::plugin_runtime::claude::ClaudeRuntime::withheld)
    }

    /// Every tool, in registration order: built-ins, configured plugins' tools, the
    /// plugin-installing tools (a snapshot: plugins installed later add to it).
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.registry.tools()
    }

    /// Ends every process the host's tools keep between calls (stdio MCP servers): each gets
    /// a moment to leave once its input is closed, then what is left of it is killed and its
    /// private `TMPDIR` removed. Call it before the program that built the host returns.
    pub async fn shutdown(&self) {
        for tool in self.registry.tools() {
            tool.shutdown().await;
        }
    }

    /// The policy in force.
    pub fn policy(&self) -> &Arc<Policy> {
        &self.policy
    }

    /// The workspace.
    pub fn workspace(&self) -> &Arc<Workspace> {
        &self.workspace
    }

    /// The loaded configuration.
    pub fn config(&self) -> &Arc<LoadedConfig> {
        &self.config
    }

    /// The plugin catalog this host was built from.
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// What a person should know: plugins left out and why, tools not offered.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The risk of every tool action in `catalog`'s session known without running plugin code:
    /// built-ins and enabled plugins' tools from their metadata.
    pub fn known_risks_in(catalog: &Catalog) -> Vec<(String, Risk)> {
        known_risks(&builtin::tools(), catalog)
    }
}
