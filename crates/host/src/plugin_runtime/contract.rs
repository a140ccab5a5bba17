//! The contract every plugin format implements ([`Runtime`]), what a runtime is given to offer
//! its plugins ([`Assembly`]) and what it offers ([`Offer`]). The host loops over runtimes and
//! never asks which format a plugin has.

use std::any::Any;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use bosun_plugins::{Catalog, PluginEntry};
use bosun_policy::Policy;
use bosun_sandbox::{Sandbox, SandboxConfig, SandboxError};

use crate::chokepoint::PolicyHook;
use crate::labels::{InstanceLabel, Reader};
use crate::plugin_runtime::error::RuntimeError;
use crate::tool::Tool;
use crate::trace::Observer;

/// The plugins' prompt contributions for one task.
#[derive(Debug, Default)]
pub struct Prompts {
    /// Each contribution as `(plugin local name, text)`, in load order.
    pub texts: Vec<(String, String)>,
    /// Why any was left out.
    pub warnings: Vec<String>,
    /// The labels of the plugin instances whose code wrote the contributions (their module
    /// state may hold what any session handed them): the session whose system prompt takes
    /// the contributions takes them on ([`Prompts::carry_to`]).
    pub carried: InstanceLabel,
}

impl Prompts {
    /// Raises `session`, whose system prompt holds these contributions, to the labels of the
    /// instances that wrote them, each rise and mark in `trace`.
    pub fn carry_to(&self, session: &dyn Reader, trace: &crate::trace::Trace) {
        for event in session.take_on(
            &self.carried,
            "system-prompt",
            "a plugin's prompt contribution",
        ) {
            trace.record(event);
        }
    }
}

/// The wasmtime sandbox every format shares, built on first need: a host with no WebAssembly
/// plugin enabled, that never runs JavaScript, never builds a wasmtime engine.
#[derive(Debug)]
pub struct LazySandbox {
    built: OnceLock<Sandbox>,
    config: SandboxConfig,
}

impl LazySandbox {
    /// A sandbox to be built from `config` when first needed.
    pub fn new(config: SandboxConfig) -> Self {
        Self {
            built: OnceLock::new(),
            config,
        }
    }

    /// A sandbox already built.
    pub fn ready(sandbox: Sandbox) -> Self {
        Self {
            built: OnceLock::from(sandbox),
            config: SandboxConfig::default(),
        }
    }

    /// The sandbox, built now if it is not yet.
    ///
    /// # Errors
    /// The wasmtime engine or the artefact cache could not be set up.
    pub fn get(&self) -> Result<&Sandbox, SandboxError> {
        if let Some(sandbox) = self.built.get() {
            return Ok(sandbox);
        }
        let built = Sandbox::new(self.config.clone())?;
        // Two first uses at once: the one set first is used, the other dropped.
        Ok(self.built.get_or_init(|| built))
    }
}

/// What a runtime is given to offer its plugins.
#[derive(Debug, Clone, Copy)]
pub struct Assembly<'a> {
    /// The catalog: a runtime offers its own format's enabled entries.
    pub catalog: &'a Catalog,
    /// The policy in force: a tool it denies outright is withheld
    /// ([`granter::withheld`](crate::plugin_runtime::granter)).
    pub policy: &'a Arc<Policy>,
    /// The workspace root the plugins' directories come from.
    pub workspace: &'a Path,
    /// The shared sandbox.
    pub sandbox: &'a LazySandbox,
    /// Names no plugin tool may take (built-ins and the plugin manager's tools).
    pub reserved: &'a [String],
    /// `$BOSUN_HOME`, whose `cache/` keeps what activations registered.
    pub home: &'a Path,
    /// The host's `[limits]`, which a plugin's tool context reports.
    pub limits: &'a bosun_core::Limits,
    /// What starts processes in the OS sandbox (a Claude Code plugin's command hooks).
    pub launcher: &'a Arc<bosun_launch::Launcher>,
    /// The user's choices for installed Claude Code plugins (`[claude]`).
    pub claude: &'a crate::claude_config::ClaudeConfig,
    /// The machine's managed policy, which a plugin found outside the catalog (a Claude Code
    /// plugin) must pass at every load.
    pub managed: Option<&'a crate::managed::ManagedGate>,
}

impl<'a> Assembly<'a> {
    /// The enabled entries of the catalog.
    pub fn enabled(&self) -> impl Iterator<Item = &'a PluginEntry> + use<'a> {
        self.catalog.enabled()
    }
}

/// A plugin as the plugin manager lists it.
#[derive(Debug, Clone)]
pub struct Listed {
    /// Its local name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// Its format, as a person reads it.
    pub format: String,
    /// Its tools, as the model calls them.
    pub tools: Vec<String>,
}

/// What a runtime's plugins contribute to a host.
#[derive(Default)]
pub struct Offer {
    /// Their tools, checked against policy.
    pub tools: Vec<Arc<dyn Tool>>,
    /// Their policy hooks.
    pub hooks: Vec<Arc<dyn PolicyHook>>,
    /// The plugins the plugin manager's `plugin_list` shows as loaded from configuration.
    pub listed: Vec<Listed>,
    /// What a person should know (plugins left out and why).
    pub warnings: Vec<String>,
    /// MCP servers the plugins provide, by their `<plugin>:<server>` names: the MCP layer
    /// offers their tools once a person approved them, like `[mcp.<name>]` servers'.
    pub mcp_servers: Vec<(String, crate::mcp_config::McpServerConfig)>,
}

impl std::fmt::Debug for Offer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Offer")
            .field("tools", &self.tools.len())
            .field("hooks", &self.hooks.len())
            .field("warnings", &self.warnings)
            .field("mcp_servers", &self.mcp_servers.len())
            .finish_non_exhaustive()
    }
}

/// One plugin format: how its catalog entries become tools, hooks, prompt contributions and
/// observers in the sandbox. It never decides anything: the chokepoint is the only caller of a
/// plugin tool, and a tool is granted what the chokepoint judged for that call.
#[async_trait]
pub trait Runtime: Send + Sync + Any {
    /// Warms up for its format's enabled entries (whatever must exist before the first call:
    /// the sandbox, plugins whose code names their tools activated) and offers what they
    /// contribute. A plugin that fails is left out with a warning.
    ///
    /// # Errors
    /// The runtime itself cannot start (the sandbox, the activating thread).
    fn offer(&mut self, at: &Assembly<'_>) -> Result<Offer, RuntimeError>;

    /// Its plugins' prompt contributions for `task`, in load order.
    async fn prompts(&self, _task: &str) -> Prompts {
        Prompts::default()
    }

    /// What delivers the run events of `session` to its plugins that observe them (whose
    /// instances take on the session's labels); `None` when none does.
    fn observer(&self, _session: &Arc<crate::session::Session>) -> Option<Arc<dyn Observer>> {
        None
    }

    /// The runtime as [`Any`], for a caller that needs one format's own features (a
    /// JavaScript plugin's commands, say).
    fn as_any(&self) -> &dyn Any;
}

/// Runs `future` to completion on a runtime of its own, on a thread of its own, so it works
/// whether or not the caller is inside a runtime.
///
/// # Errors
/// The thread or its runtime could not run.
pub fn run_to_completion<T: Send>(
    future: impl std::future::Future<Output = T> + Send,
) -> Result<T, RuntimeError> {
    std::thread::scope(|scope| {
        scope
            .spawn(|| -> Result<T, RuntimeError> {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| RuntimeError::Activation(e.to_string()))?;
                Ok(runtime.block_on(future))
            })
            .join()
            .map_err(|_| RuntimeError::Activation("the activating thread panicked".to_owned()))?
    })
}
