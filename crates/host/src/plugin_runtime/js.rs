//! JavaScript plugins (Forge and Triggerfish formats) as tools, policy hooks and prompt
//! contributions — the bridge between a plugin's source snapshot, the JavaScript engine in the
//! sandbox and the chokepoint.
//!
//! Unlike a native plugin, a JavaScript plugin names its tools in code (`api.registerTool`,
//! `toolDefinitions`), so it must be activated once to be listed: in its own engine instance,
//! linked with the grants its declared capabilities allow and nothing else (no filesystem; HTTP
//! only for Forge's `network:access` or Triggerfish's `declaredEndpoints`), under the plugin's
//! deadline and memory cap. Activation failing never stops the host: the plugin is left out with
//! a warning.
//!
//! What an activation registered (its [`Descriptor`]) is kept in `$BOSUN_HOME/cache/js-plugins`,
//! keyed by everything activation depends on (the engine's digest, the plugin's files, config,
//! trust, limits, environment, reserved names). A later host with the same key offers the tools
//! without loading the engine or running plugin code; the engine is loaded and the plugin
//! activated on its first call, hook or observed event ([`JsEngine`]). Every activation — the
//! first of a host and each after a poisoned instance — must register exactly the kept
//! descriptor; one that differs is refused (and the kept entry replaced for the next start), so
//! a kept descriptor can only ever name tools the plugin's code really has.
//!
//! Every call then passes the chokepoint like any other: the action is
//! `plugin.<local-name>.tool.<tool>`, each host the call may reach is a `net.http` capability
//! request judged by policy, and the instance is granted exactly those hosts for that call.
//! - Forge network tools reach the hosts in the plugin's config (`hosts = [...]` in
//!   `[plugins.<name>.config]`) and the host of the input's `url` field when it has one.
//! - Triggerfish tools reach their plugin's `declaredEndpoints` only.
//!
//! Triggerfish tools are offered as `plugin_<plugin>_<tool>` (Triggerfish's own naming), Forge
//! tools under their own names. A Triggerfish result raises the session's taint to the plugin's
//! classification; `escalateTaint` raises it too (it really does, unlike in Triggerfish).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bosun_core::{
    Authority, Capability, CapabilityRequest, Classification, Decision, ErrorCode, Risk, Scope,
    ToolError, ToolName, ToolOutput, ToolSpec,
};
use bosun_js::{
    ActivationRequest, Descriptor, Format, JsError, JsLimits, JsPlugin, JsTool as JsToolMeta,
    ToolOutcome, Trust,
};
use bosun_policy::{HookVerdict, Policy};
use bosun_sandbox::{
    CallErrorKind, CallOptions, Grants, JsEngineImage, JsGrants, JsProcesses, JsSession, Loaded,
    Sandbox, SandboxConfig, SandboxError, SpawnRequest, Spawned, StartFuture,
};
use serde_json::{Value, json};
use tokio::sync::{Mutex, OnceCell};
use tokio_util::sync::CancellationToken;

use crate::chokepoint::{PolicyHook, ToolCall};
use crate::session::Session;
use crate::tool::{Tool, ToolContext};

/// Where the workspace appears to a JavaScript plugin (its `context.workspace`).
const GUEST_WORKSPACE: &str = "/workspace";

/// Everything needed to start one JavaScript plugin, independent of where it came from (the
/// catalog, or a plugin the model built during the run).
#[derive(Debug, Clone)]
pub struct JsPluginSpec {
    /// The local name: policy actions are `plugin.<local_name>.tool.<tool>`.
    pub local_name: String,
    /// The format.
    pub format: Format,
    /// The plugin's own name (Forge `plugin.json` name, Triggerfish directory name).
    pub name: String,
    /// The entry file, relative to the plugin directory.
    pub entry: String,
    /// The plugin's JavaScript files (TypeScript already stripped): relative path, source.
    pub files: Vec<(String, String)>,
    /// Every file of the plugin's directory as the trust review hashed it, relative path →
    /// standard base64: what `node:fs` reads (read-only; nothing of the host's file system).
    pub directory: BTreeMap<String, String>,
    /// The `.js` files that are CommonJS, as Node decides (`forge::commonjs_files`).
    pub commonjs: Vec<String>,
    /// Forge capabilities as declared (`tools:register`, `network:access`, ...).
    pub capabilities: Vec<String>,
    /// Triggerfish `declaredEndpoints` as authorities (`host` or `host:port`).
    pub endpoints: Vec<String>,
    /// Classification of the plugin's results (Triggerfish manifest; Forge: `PUBLIC`).
    pub classification: Classification,
    /// Triggerfish effective trust.
    pub trust: Trust,
    /// The plugin's config table.
    pub config: Value,
    /// Per-call deadline.
    pub timeout: Duration,
    /// Memory cap of the instance.
    pub memory_bytes: usize,
    /// Limits the tool context reports.
    pub limits: JsLimits,
    /// Names no plugin tool may take (built-ins and host tools).
    pub reserved: Vec<String>,
    /// Triggerfish: the manifest read statically; the one the module exports must agree.
    pub static_manifest: Option<bosun_plugins::TriggerfishManifest>,
    /// The manifest asks to build code from strings (and trust recorded that).
    pub code_from_strings: bool,
    /// The host variables the user passes to it (`[plugins.<name>] env`), with their values
    /// now; nothing else of the environment reaches it.
    pub env: BTreeMap<String, String>,
    /// Why its results are untrusted input, when they are (a plugin the agent built: no person
    /// reviewed its code). A call's result then marks the session as having read untrusted input.
    pub untrusted_output: Option<String>,
    /// For each TypeScript file, where the JavaScript it became came from: an error's
    /// `(at file:line:column)` names the line the author wrote, not the stripped one.
    pub positions: BTreeMap<String, bosun_plugins::typescript::SourcePositions>,
}

/// A JavaScript plugin's manifest, as the catalog read it without running code.
#[derive(Debug, Clone, Copy)]
pub enum JsManifestRef<'a> {
    /// `plugin.json`.
    Forge(&'a bosun_plugins::ForgeManifest),
    /// The static `manifest` of `mod.ts`.
    Triggerfish(&'a bosun_plugins::TriggerfishManifest),
}

/// Where a plugin's limits come from.
#[derive(Debug, Clone, Copy)]
pub struct JsBounds {
    /// Per-call deadline.
    pub timeout: Duration,
    /// Memory cap of the instance.
    pub memory_bytes: usize,
    /// What the plugin's tool context reports as limits (Forge's `context.limits`).
    pub limits: JsLimits,
}

impl Default for JsBounds {
    fn default() -> Self {
        Self {
            timeout: crate::plugin_runtime::native::DEFAULT_TIMEOUT,
            memory_bytes: usize::try_from(crate::plugin_runtime::native::DEFAULT_MEMORY_MIB << 20)
                .unwrap_or(usize::MAX),
            limits: JsLimits::default(),
        }
    }
}

impl JsBounds {
    /// The context limits of the host's own `[limits]`.
    pub fn with_host_limits(mut self, limits: &bosun_core::Limits) -> Self {
        self.limits = JsLimits {
            max_output_bytes: u64::try_from(limits.max_output_bytes).unwrap_or(u64::MAX),
            max_entries: u64::try_from(limits.max_entries).unwrap_or(u64::MAX),
            command_timeout_ms: limits.command_timeout_ms,
        };
        self
    }
}

impl JsPluginSpec {
    /// The spec for a plugin whose files are `snapshot` (exactly the bytes that were hashed,
    /// and scanned when the model installs it). TypeScript files are stripped of their types
    /// here; every other file the engine may import must be UTF-8 JavaScript.
    ///
    /// `config_trusted` is the user's half of Triggerfish's trust rule (the manifest's is the
    /// other half): a plugin is trusted only when both say so.
    ///
    /// # Errors
    /// A file that is not UTF-8 or does not parse as TypeScript, named with the reason.
    #[allow(clippy::too_many_arguments)]
    pub fn from_snapshot(
        local_name: &str,
        snapshot: &bosun_plugins::SourceSnapshot,
        manifest: JsManifestRef<'_>,
        config: Value,
        config_trusted: bool,
        bounds: JsBounds,
        reserved: Vec<String>,
    ) -> Result<Self, String> {
        let mut files = Vec::new();
        let mut positions = BTreeMap::new();
        let mut directory = BTreeMap::new();
        for file in snapshot.files() {
            let path = file.path.as_str();
            directory.insert(
                path.to_owned(),
                base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &file.bytes),
            );
            let is_ts = [".ts", ".mts", ".cts"].iter().any(|e| path.ends_with(e))
                && !path.ends_with(".d.ts");
            let is_js = [".js", ".mjs", ".cjs"].iter().any(|e| path.ends_with(e));
            if !is_ts && !is_js {
                continue;
            }
            let text = std::str::from_utf8(&file.bytes)
                .map_err(|e| format!("{path} is not UTF-8 ({e}); save it as UTF-8"))?;
            let text = if is_ts {
                let stripped =
                    bosun_plugins::typescript::strip_types_mapped(std::path::Path::new(path), text)
                        .map_err(|e| e.to_string())?;
                positions.insert(path.to_owned(), stripped.positions);
                stripped.code
            } else {
                text.to_owned()
            };
            files.push((path.to_owned(), text));
        }
        let spec = match manifest {
            JsManifestRef::Forge(m) => Self {
                local_name: local_name.to_owned(),
                format: Format::Forge,
                name: m.name.clone(),
                entry: m.entry.clone(),
                files,
                directory,
                commonjs: bosun_plugins::forge::commonjs_files(snapshot),
                capabilities: m.capabilities.clone(),
                endpoints: Vec::new(),
                classification: Classification::Public,
                trust: Trust::Sandboxed,
                config,
                timeout: bounds.timeout,
                memory_bytes: bounds.memory_bytes,
                limits: bounds.limits,
                reserved,
                static_manifest: None,
                code_from_strings: m.code_from_strings,
                env: BTreeMap::new(),
                untrusted_output: None,
                positions,
            },
            JsManifestRef::Triggerfish(m) => Self {
                local_name: local_name.to_owned(),
                format: Format::Triggerfish,
                name: m.name.clone(),
                entry: "mod.ts".to_owned(),
                files,
                directory,
                commonjs: Vec::new(),
                capabilities: Vec::new(),
                endpoints: m.endpoint_authorities.clone(),
                classification: m.classification,
                trust: if m.trust == bosun_plugins::ManifestTrust::Trusted && config_trusted {
                    Trust::Trusted
                } else {
                    Trust::Sandboxed
                },
                config,
                timeout: bounds.timeout,
                memory_bytes: bounds.memory_bytes,
                limits: bounds.limits,
                reserved,
                static_manifest: Some(m.clone()),
                code_from_strings: m.code_from_strings,
                env: BTreeMap::new(),
                untrusted_output: None,
                positions,
            },
        };
        Ok(spec)
    }

    /// `message` with its closing `(at file:line:column)` moved from the stripped JavaScript of
    /// a TypeScript file to the TypeScript the author wrote. Other messages are returned as
    /// they are.
    pub fn place(&self, message: &str) -> String {
        let Some(open) = message.rfind("(at ") else {
            return message.to_owned();
        };
        let inner = &message[open + 4..];
        let Some(close) = inner.find(')') else {
            return message.to_owned();
        };
        let mut parts = inner[..close].rsplitn(3, ':');
        let (Some(last), Some(middle)) = (parts.next(), parts.next()) else {
            return message.to_owned();
        };
        // `file:line:column`, or `file:line` when the engine knew no column.
        let (file, line, column) = match parts.next() {
            Some(file) => (file, middle, Some(last)),
            None => (middle, last, None),
        };
        let Some(map) = self.positions.get(file) else {
            return message.to_owned();
        };
        let (Ok(line), Ok(column)) = (line.parse::<u32>(), column.map_or(Ok(1), str::parse::<u32>))
        else {
            return message.to_owned();
        };
        match map.original(line, column) {
            Some((line, column)) => format!(
                "{}(at {file}:{line}:{column}){}",
                &message[..open],
                &inner[close + 1..]
            ),
            None => message.to_owned(),
        }
    }

    fn network(&self) -> bool {
        match self.format {
            Format::Forge => self.capabilities.iter().any(|c| c == "network:access"),
            Format::Triggerfish => !self.endpoints.is_empty(),
        }
    }

    fn config_hosts(&self) -> Vec<String> {
        self.config
            .get("hosts")
            .and_then(Value::as_array)
            .map(|hosts| {
                hosts
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_ascii_lowercase)
                    .collect()
            })
            .unwrap_or_default()
    }

    fn grants(&self) -> Grants {
        Grants {
            fs: Vec::new(),
            http: self.network(),
            config: match &self.config {
                Value::Object(map) => map
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_string()))
                    .collect(),
                _ => BTreeMap::new(),
            },
            memory_bytes: self.memory_bytes,
            timeout: self.timeout,
            js: JsGrants {
                host_info: self.format == Format::Triggerfish && self.trust == Trust::Trusted,
            },
        }
    }

    fn request(&self) -> ActivationRequest {
        ActivationRequest {
            format: self.format,
            name: self.name.clone(),
            entry: self.entry.clone(),
            capabilities: self.capabilities.clone(),
            trust: self.trust,
            config: self.config.clone(),
            limits: self.limits,
            reserved_tool_names: self.reserved.clone(),
            code_from_strings: self.code_from_strings,
            env: self.env.clone(),
            directory: self.directory.clone(),
            commonjs: self.commonjs.clone(),
        }
    }

    /// The name the model calls `tool` by.
    fn model_name(&self, tool: &str) -> Result<ToolName, String> {
        let result = match self.format {
            Format::Forge => ToolName::new(tool),
            Format::Triggerfish => ToolName::namespaced(format!("plugin_{}_{tool}", self.name)),
        };
        result.map_err(|e| format!("tool `{tool}` cannot be offered: {e}"))
    }
}

/// The session a JavaScript call runs in, as the engine's `runtime` imports see it.
#[derive(Debug)]
struct SessionTaint(Arc<Session>);

impl JsSession for SessionTaint {
    fn taint(&self) -> String {
        self.0.taint().to_string()
    }

    fn escalate(&self, level: &str) -> Result<(), String> {
        let level: Classification = level.parse().map_err(|e| format!("{e}"))?;
        self.0.raise_taint(level);
        Ok(())
    }
}

/// Bosun's JavaScript engine for one host, loaded when a plugin first needs it and then shared
/// by every JavaScript plugin (and the plugin manager's tools).
pub struct JsEngine {
    /// The sandbox it loads into: given, or built at first load from `config`.
    sandbox: std::sync::OnceLock<Sandbox>,
    config: Option<SandboxConfig>,
    image: JsEngineImage<'static>,
    loaded: OnceCell<Loaded>,
    /// Told [`JS_ENGINE_NOTICE`] just before the engine is compiled (not when it is loaded
    /// from the artefact cache).
    notice: Option<EngineNotice>,
}

/// What a person is told before Bosun's JavaScript engine is compiled for this machine.
pub const JS_ENGINE_NOTICE: &str =
    "preparing Bosun's JavaScript engine for this machine (once; a few seconds)…";

/// Called with [`JS_ENGINE_NOTICE`] when the engine is about to be compiled.
pub type EngineNotice = Arc<dyn Fn(&str) + Send + Sync>;

impl std::fmt::Debug for JsEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsEngine")
            .field("loaded", &self.loaded.initialized())
            .finish_non_exhaustive()
    }
}

impl JsEngine {
    /// The engine `image` in `sandbox`, not loaded yet; `notice` is told just before it is
    /// compiled (once per machine; seconds), never when it is loaded from the artefact cache.
    pub fn new(
        sandbox: Sandbox,
        image: JsEngineImage<'static>,
        notice: Option<EngineNotice>,
    ) -> Arc<Self> {
        Arc::new(Self {
            sandbox: std::sync::OnceLock::from(sandbox),
            config: None,
            image,
            loaded: OnceCell::new(),
            notice,
        })
    }

    /// As [`JsEngine::new`], in a sandbox built from `config` when it is first loaded: a host
    /// that never runs JavaScript (nor any other plugin) never builds a wasmtime engine.
    pub fn lazy(
        config: SandboxConfig,
        image: JsEngineImage<'static>,
        notice: Option<EngineNotice>,
    ) -> Arc<Self> {
        Arc::new(Self {
            sandbox: std::sync::OnceLock::new(),
            config: Some(config),
            image,
            loaded: OnceCell::new(),
            notice,
        })
    }

    fn sandbox(&self) -> Result<&Sandbox, SandboxError> {
        if let Some(sandbox) = self.sandbox.get() {
            return Ok(sandbox);
        }
        let config = self.config.clone().unwrap_or_default();
        let built = Sandbox::new(config)?;
        // Two first loads at once: the one set first is used, the other dropped.
        Ok(self.sandbox.get_or_init(|| built))
    }

    /// The loaded engine, loading it (from the artefact cache, or compiling it) on first use.
    ///
    /// # Errors
    /// The engine could not be compiled or linked.
    pub async fn get(&self) -> Result<&Loaded, SandboxError> {
        self.loaded
            .get_or_try_init(|| async {
                let sandbox = self.sandbox()?;
                if let Some(notice) = &self.notice
                    && !sandbox.js_engine_cached(&self.image)
                {
                    notice(JS_ENGINE_NOTICE);
                }
                sandbox.load_js_engine(&self.image).await
            })
            .await
    }

    /// Whether it has been loaded.
    pub fn is_loaded(&self) -> bool {
        self.loaded.initialized()
    }
}

/// What activations registered, kept by everything activation depends on (see the module
/// documentation). Entries are written whole (temporary file, then rename); one that cannot be
/// read or parsed is a miss.
#[derive(Debug, Clone)]
pub struct DescriptorCache {
    dir: std::path::PathBuf,
}

impl DescriptorCache {
    /// A cache in `dir` (created, mode 0700, when first written).
    pub fn new(dir: impl Into<std::path::PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The key of `spec` activated in `engine`: a digest of every input activation reads.
    fn key(spec: &JsPluginSpec, engine: &JsEngineImage<'_>) -> String {
        use sha2::Digest;
        let mut hasher = sha2::Sha256::new();
        let mut field = |bytes: &[u8]| {
            hasher.update(u64::try_from(bytes.len()).unwrap_or(u64::MAX).to_le_bytes());
            hasher.update(bytes);
        };
        field(b"bosun-js-descriptor-v1");
        field(&engine.sha256());
        let request = serde_json::to_vec(&spec.request()).unwrap_or_default();
        field(&request);
        field(spec.local_name.as_bytes());
        field(spec.classification.to_string().as_bytes());
        field(&spec.memory_bytes.to_le_bytes());
        field(
            &u64::try_from(spec.timeout.as_millis())
                .unwrap_or(u64::MAX)
                .to_le_bytes(),
        );
        for endpoint in &spec.endpoints {
            field(endpoint.as_bytes());
        }
        field(b"files");
        for (path, text) in &spec.files {
            field(path.as_bytes());
            field(text.as_bytes());
        }
        let digest: [u8; 32] = hasher.finalize().into();
        digest.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn path(&self, key: &str) -> std::path::PathBuf {
        self.dir.join(format!("{key}.json"))
    }

    fn get(&self, key: &str) -> Option<Descriptor> {
        let bytes = std::fs::read(self.path(key)).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Keeps `descriptor` under `key`; a failure only means the next start activates again.
    fn put(&self, key: &str, descriptor: &Descriptor) {
        if let Ok(bytes) = serde_json::to_vec(descriptor) {
            let _ = bosun_plugins::write_atomic(&self.path(key), &bytes);
        }
    }
}

/// Where a runtime's descriptor is kept, to replace it when an activation disagrees.
#[derive(Debug, Clone)]
struct KeptAt {
    cache: DescriptorCache,
    key: String,
}

/// One plugin, shared by its tools and hooks. Its instance is activated on first use (or was
/// at start, when nothing was kept); a poisoned instance (trap, deadline, memory) is replaced
/// by activating the plugin again on the next call, and module state is lost.
pub struct JsRuntime {
    spec: JsPluginSpec,
    engine: Arc<JsEngine>,
    plugin: Mutex<Option<JsPlugin>>,
    descriptor: Descriptor,
    kept: Option<KeptAt>,
}

impl std::fmt::Debug for JsRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsRuntime")
            .field("local_name", &self.spec.local_name)
            .finish_non_exhaustive()
    }
}

fn js_error(local: &str, error: &JsError) -> ToolError {
    match error {
        JsError::Call { source, .. } => {
            let mut error = crate::plugin_runtime::native::call_error(local, &source.kind);
            if matches!(source.kind, CallErrorKind::Tool { .. }) {
                // The engine's own errors (activation, a promise that cannot settle) name no
                // plugin; say which.
                error.message = format!("plugin `{local}`: {}", error.message);
            }
            error
        }
        other => ToolError::new(ErrorCode::PluginError, format!("plugin `{local}`: {other}")),
    }
}

/// Why activation failed, said once: the plugin's own error without the layers that each
/// named the plugin again (`plugin x: tool error plugin_error: the promise was rejected:
/// Activation failed for plugin "x": TypeError: …` becomes `activate() threw TypeError: …`).
fn activation_failure(name: &str, error: &JsError) -> String {
    let JsError::Call { source, .. } = error else {
        return error.to_string();
    };
    let bosun_sandbox::CallErrorKind::Tool { message, .. } = &source.kind else {
        return source.kind.to_string();
    };
    let message = message
        .strip_prefix("the promise was rejected: ")
        .unwrap_or(message);
    match message.strip_prefix(&format!("Activation failed for plugin \"{name}\": ")) {
        Some(thrown) => format!("its activate() threw {thrown}"),
        None => message.to_owned(),
    }
}

impl JsRuntime {
    /// Activates the plugin in a fresh engine instance, loading the engine if it is not yet.
    ///
    /// # Errors
    /// Why activation failed, in words for a person.
    pub async fn start(spec: JsPluginSpec, engine: &Arc<JsEngine>) -> Result<Arc<Self>, String> {
        let loaded = engine
            .get()
            .await
            .map_err(|e| format!("the JavaScript engine could not be loaded: {e}"))?;
        let plugin = JsPlugin::activate(
            loaded,
            spec.grants(),
            &spec.files,
            &spec.request(),
            CallOptions::default(),
        )
        .await
        .map_err(|e| spec.place(&activation_failure(&spec.name, &e)))?;
        let descriptor = plugin.descriptor().clone();
        if let Some(expected) = &spec.static_manifest {
            // What was reviewed is the manifest read without running code; a module that
            // exports something else is not the plugin that was reviewed.
            let exported = descriptor.manifest.clone().unwrap_or(Value::Null);
            expected.check_runtime(&exported)?;
        }
        Ok(Arc::new(Self {
            spec,
            engine: Arc::clone(engine),
            plugin: Mutex::new(Some(plugin)),
            descriptor,
            kept: None,
        }))
    }

    /// The plugin as an earlier activation with the same inputs described it; nothing runs
    /// until its first call, hook or observed event.
    fn kept(
        spec: JsPluginSpec,
        engine: &Arc<JsEngine>,
        descriptor: Descriptor,
        kept: KeptAt,
    ) -> Arc<Self> {
        Arc::new(Self {
            spec,
            engine: Arc::clone(engine),
            plugin: Mutex::new(None),
            descriptor,
            kept: Some(kept),
        })
    }

    /// Whether an instance of the plugin is live now (it was activated and not poisoned).
    pub async fn is_active(&self) -> bool {
        self.plugin
            .lock()
            .await
            .as_ref()
            .is_some_and(|p| !p.is_poisoned())
    }

    /// What the plugin registered.
    pub fn descriptor(&self) -> &Descriptor {
        &self.descriptor
    }

    /// The spec it was started from.
    pub fn spec(&self) -> &JsPluginSpec {
        &self.spec
    }

    /// Runs `f` on the live instance, activating a fresh one first if the last was poisoned.
    async fn with_plugin<T>(
        &self,
        f: impl AsyncFnOnce(&mut JsPlugin) -> Result<T, JsError>,
    ) -> Result<T, ToolError> {
        let local = &self.spec.local_name;
        let mut slot = self.plugin.lock().await;
        if slot.as_ref().is_none_or(JsPlugin::is_poisoned) {
            *slot = None;
            let engine = self.engine.get().await.map_err(|e| {
                ToolError::new(
                    ErrorCode::PluginError,
                    format!("plugin `{local}`: the JavaScript engine could not be loaded: {e}"),
                )
            })?;
            let plugin = JsPlugin::activate(
                engine,
                self.spec.grants(),
                &self.spec.files,
                &self.spec.request(),
                CallOptions::default(),
            )
            .await
            .map_err(|e| self.placed(js_error(local, &e)))?;
            // Its tools, schemas and hooks were offered as described; an instance that
            // registers anything else is not the plugin those offers name.
            if *plugin.descriptor() != self.descriptor {
                if let Some(kept) = &self.kept {
                    kept.cache.put(&kept.key, plugin.descriptor());
                }
                return Err(ToolError::new(
                    ErrorCode::PluginError,
                    format!(
                        "plugin `{local}` registered other tools or hooks than when it was \
                         listed, so its calls are refused in this run; the next start lists \
                         what it registers now"
                    ),
                ));
            }
            *slot = Some(plugin);
        }
        let Some(plugin) = slot.as_mut() else {
            return Err(ToolError::new(
                ErrorCode::PluginError,
                format!("plugin `{local}` has no instance"),
            ));
        };
        let result = f(plugin).await;
        if plugin.is_poisoned() {
            *slot = None;
        }
        result.map_err(|e| self.placed(js_error(local, &e)))
    }

    /// `error` with its position placed in the TypeScript (see [`JsPluginSpec::place`]).
    fn placed(&self, mut error: ToolError) -> ToolError {
        error.message = self.spec.place(&error.message);
        error
    }

    /// The plugin's prompt contributions (Forge `contributePrompt`, Triggerfish `systemPrompt`).
    ///
    /// # Errors
    /// The plugin's hook failed or returned more than 32 KiB.
    pub async fn prompts(&self, task: &str) -> Result<Vec<String>, ToolError> {
        if self.descriptor.hooks.prompt == 0 && self.descriptor.system_prompt.is_none() {
            return Ok(Vec::new());
        }
        let payload = json!({
            "prompt": task,
            "workspaceRoot": GUEST_WORKSPACE,
            "workingDirectory": GUEST_WORKSPACE,
        });
        self.with_plugin(async |p| p.prompt(&payload, CallOptions::default()).await)
            .await
    }

    /// Hands one (already redacted) run event to the plugin's observers; returns their warnings.
    ///
    /// # Errors
    /// The engine failed (the observers' own throws are warnings, not errors).
    pub async fn observe(&self, event: &Value) -> Result<Vec<String>, ToolError> {
        self.with_plugin(async |p| p.observe(event, CallOptions::default()).await)
            .await
    }

    /// Runs one of the plugin's commands (`bosun plugins run`).
    ///
    /// # Errors
    /// The command failed in the sandbox.
    pub async fn command(
        &self,
        name: &str,
        args: &[String],
        cancel: CancellationToken,
    ) -> Result<bosun_js::CommandOutput, ToolError> {
        let payload = json!({
            "name": name,
            "args": args,
            "cwd": GUEST_WORKSPACE,
            "workspaceRoot": GUEST_WORKSPACE,
        });
        self.with_plugin(async |p| {
            p.command(
                &payload,
                CallOptions {
                    cancel,
                    ..CallOptions::default()
                },
            )
            .await
        })
        .await
    }

    /// The tools to offer, checked against `reserved` names and the policy (a tool whose action
    /// policy denies outright is left out). Problems come back as warnings.
    pub fn tools(self: &Arc<Self>, policy: &Arc<Policy>) -> (Vec<Arc<dyn Tool>>, Vec<String>) {
        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        let mut warnings = Vec::new();
        let mut seen = BTreeSet::new();
        for meta in &self.descriptor.tools {
            match self.tool(meta, policy) {
                Ok(Some(tool)) => {
                    if seen.insert(tool.spec.name.to_string()) {
                        tools.push(Arc::new(tool));
                    }
                }
                Ok(None) => {}
                Err(reason) => {
                    warnings.push(format!("plugin `{}`: {reason}", self.spec.local_name))
                }
            }
        }
        (tools, warnings)
    }

    fn tool(
        self: &Arc<Self>,
        meta: &JsToolMeta,
        policy: &Arc<Policy>,
    ) -> Result<Option<JsTool>, String> {
        let name = self.spec.model_name(&meta.name)?;
        if self.spec.reserved.iter().any(|r| r == name.as_str()) {
            return Err(format!(
                "tool `{name}` would shadow a built-in tool and is not offered"
            ));
        }
        let risk = match meta.risk.as_str() {
            "read" => Risk::Read,
            "write" => Risk::Write,
            "process" => Risk::Process,
            "network" => Risk::Network,
            other => {
                return Err(format!(
                    "tool `{}` has an unknown risk `{other}`",
                    meta.name
                ));
            }
        };
        let schema = normalise_schema(&meta.input_schema)
            .map_err(|e| format!("tool `{}`: {e}", meta.name))?;
        let mut builder = ToolSpec::builder(name, meta.description.clone())
            .input_schema(schema)
            .risk(risk)
            .classification(self.spec.classification);
        if risk == Risk::Network {
            builder = builder.capability(Capability::NetHttp);
        }
        let spec = builder
            .build()
            .map_err(|e| format!("tool `{}`: {e}", meta.name))?;
        let action = bosun_plugins::tool_action(&self.spec.local_name, &meta.name);
        let denied = policy
            .decide(&[bosun_policy::Subject::tool(&action, risk)], &[], &[])
            .decision
            == Decision::Deny;
        if denied {
            return Ok(None);
        }
        Ok(Some(JsTool {
            runtime: Arc::clone(self),
            spec,
            tool: meta.name.clone(),
            action,
            network: risk == Risk::Network,
            policy: Arc::clone(policy),
        }))
    }

    /// The plugin's `restrictPolicy` hooks as a chokepoint hook, when it has any.
    pub fn policy_hook(self: &Arc<Self>) -> Option<Arc<dyn PolicyHook>> {
        (self.descriptor.hooks.restrict > 0).then(|| {
            Arc::new(JsPolicyHook {
                runtime: Arc::clone(self),
            }) as Arc<dyn PolicyHook>
        })
    }
}

/// Makes a JSON Schema from the engine acceptable as a tool input schema: no `$schema`, an
/// object at the root.
fn normalise_schema(schema: &Value) -> Result<Value, String> {
    let Value::Object(map) = schema else {
        return Err("the input schema is not a JSON object".into());
    };
    let mut map = map.clone();
    map.remove("$schema");
    match map.get("type") {
        None => {
            map.insert("type".into(), Value::String("object".into()));
        }
        Some(Value::String(t)) if t == "object" => {}
        Some(other) => return Err(format!("the input schema's type is {other}, not object")),
    }
    Ok(Value::Object(map))
}

/// One tool of a JavaScript plugin.
pub struct JsTool {
    runtime: Arc<JsRuntime>,
    spec: ToolSpec,
    tool: String,
    action: String,
    network: bool,
    /// Tells whether a rule names a literal private address (only then is it reachable).
    policy: Arc<Policy>,
}

impl std::fmt::Debug for JsTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsTool")
            .field("action", &self.action)
            .finish_non_exhaustive()
    }
}

impl JsTool {
    /// The authorities this call may reach, from the plugin's grants and the input. A grant
    /// that is not an authority reaches nothing.
    fn hosts(&self, input: &Value) -> Vec<Authority> {
        if !self.network {
            return Vec::new();
        }
        let spec = &self.runtime.spec;
        let mut hosts: Vec<Authority> = Vec::new();
        match spec.format {
            Format::Triggerfish => {
                hosts.extend(
                    spec.endpoints
                        .iter()
                        .filter_map(|a| Authority::parse(a).ok()),
                );
            }
            Format::Forge => {
                hosts.extend(
                    spec.config_hosts()
                        .iter()
                        .filter_map(|a| Authority::parse(a).ok()),
                );
                if let Some(url) = input.get("url").and_then(Value::as_str)
                    && let Ok(url) = url::Url::parse(url)
                    && matches!(url.scheme(), "http" | "https")
                    && let Some(host) = url.host_str()
                {
                    hosts.push(Authority::new(host, url.port()));
                }
            }
        }
        hosts.sort();
        hosts.dedup();
        hosts
    }
}

#[async_trait]
impl Tool for JsTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn action(&self) -> &str {
        &self.action
    }

    fn capability_requests(
        &self,
        input: &Value,
        _ctx: &ToolContext,
    ) -> Result<Vec<CapabilityRequest>, ToolError> {
        if !self.network {
            return Ok(Vec::new());
        }
        let hosts = self.hosts(input);
        if hosts.is_empty() {
            // Policy is still asked about the network, even with nowhere granted to go.
            return Ok(vec![CapabilityRequest::bare(Capability::NetHttp)]);
        }
        Ok(hosts
            .into_iter()
            .map(|authority| CapabilityRequest {
                capability: Capability::NetHttp,
                scope: Scope::authority(authority),
            })
            .collect())
    }

    fn judges_mid_call(&self) -> bool {
        self.spec.risk == Risk::Process
    }

    fn untrusted_source(&self) -> Option<String> {
        self.runtime.spec.untrusted_output.clone()
    }

    /// A Triggerfish plugin is a sink at its manifest's level (Triggerfish's integration
    /// write-down): a session holding data above it cannot hand the plugin that data without a
    /// person. Forge has no levels: its plugins reach nothing but the hosts policy grants, each
    /// a sink of its own.
    fn sink_level(&self) -> Option<Classification> {
        (self.runtime.spec.format == Format::Triggerfish)
            .then_some(self.runtime.spec.classification)
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let net = crate::plugin_runtime::native::net_grant(&ctx.granted, &self.policy);
        // Only a tool of risk `process` may start processes, each judged when it asks.
        let processes: Option<Arc<dyn JsProcesses>> =
            (self.spec.risk == Risk::Process).then(|| {
                Arc::new(HostProcesses {
                    plugin: self.runtime.spec.local_name.clone(),
                    judge: ctx.judge.clone(),
                    workspace: ctx.workspace.clone(),
                    launcher: ctx.launcher.clone(),
                    env: ctx.env.clone(),
                    plugin_env: self.runtime.spec.env.clone(),
                    granted: ctx.granted.clone(),
                    timeout_ms: ctx.limits.command_timeout_ms,
                }) as Arc<dyn JsProcesses>
            });
        let opts = CallOptions {
            cancel: ctx.cancel.clone(),
            net,
            session: Some(Arc::new(SessionTaint(ctx.session.clone()))),
            processes,
        };
        let input_json = input.to_string();
        let tool = self.tool.clone();
        let (outcome, report) = self
            .runtime
            .with_plugin(async |p| p.call(&tool, &input_json, opts).await)
            .await?;
        ctx.log_lines(
            report
                .logs
                .iter()
                .map(|l| (format!("{:?}", l.level).to_lowercase(), l.message.clone())),
        );
        for refused in &report.refused_requests {
            ctx.log_lines([("warn".to_owned(), format!("refused request: {refused:?}"))]);
        }
        match outcome {
            ToolOutcome::Ok { output, truncated } => Ok(ToolOutput {
                value: output,
                truncated,
                // What a Triggerfish plugin returns is as sensitive as it says its data is; the
                // chokepoint raises the session's taint to it.
                classification: (self.runtime.spec.format == Format::Triggerfish)
                    .then_some(self.runtime.spec.classification),
            }),
            ToolOutcome::Err {
                code,
                message,
                retryable,
            } => Err(ToolError::from_plugin(
                &code,
                self.runtime.spec.place(&message),
                retryable,
            )),
        }
    }
}

/// Starts the processes one call of a JavaScript tool of risk `process` asks for: each is
/// judged as `process.spawn` of its program by the chokepoint running the call (a person may
/// be asked, shown the plugin and the command line), then started in the OS sandbox with the
/// workspace as its directory, the scrubbed environment plus the plugin's own variables, and
/// the network this call was granted.
#[derive(Debug)]
struct HostProcesses {
    plugin: String,
    judge: Option<crate::tool::MidCallJudge>,
    workspace: Arc<crate::Workspace>,
    launcher: Arc<bosun_launch::Launcher>,
    env: Arc<BTreeMap<String, String>>,
    plugin_env: BTreeMap<String, String>,
    granted: Vec<CapabilityRequest>,
    timeout_ms: u64,
}

impl JsProcesses for HostProcesses {
    fn start(&self, request: SpawnRequest) -> StartFuture<'_> {
        Box::pin(async move {
            let program = &request.program;
            if program.chars().count() > 512
                || program
                    .chars()
                    .any(|c| c.is_whitespace() || c.is_control() || "|&;<>()$`".contains(c))
            {
                return Err(format!(
                    "`{}` is not a program name or path: Bosun runs no shell",
                    crate::builtin::display_text(program)
                ));
            }
            if request.args.len() > 1000 || request.args.iter().any(|a| a.len() > 65_536) {
                return Err("too many or too long arguments".to_owned());
            }
            let line = crate::builtin::display_text(&command_line(&request));
            let capability = CapabilityRequest {
                capability: Capability::ProcessSpawn,
                scope: Scope {
                    program: Some(program.clone()),
                    ..Scope::default()
                },
            };
            crate::tool::judge(
                self.judge.as_ref(),
                capability,
                format!("plugin `{}` starts: $ {line}", self.plugin),
            )
            .await
            .map_err(|e| format!("starting `{program}` was denied: {}", e.message))?;
            let cwd = self.cwd(request.cwd.as_deref())?;
            // The scrubbed environment and the plugin's own variables; what the plugin passes
            // may set those names only (no LD_PRELOAD, no secrets it made up a name for).
            let mut env: BTreeMap<String, String> = (*self.env).clone();
            env.extend(self.plugin_env.clone());
            for (name, value) in request.env {
                if env.contains_key(&name) {
                    env.insert(name, value);
                }
            }
            let mut command = tokio::process::Command::new(program);
            command
                .args(&request.args)
                .current_dir(&cwd)
                .env_clear()
                .envs(&env)
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .kill_on_drop(true);
            let mut confinement = crate::process::confinement(
                self.workspace.root(),
                &self.granted,
                self.timeout_ms.div_ceil(1000) + 1,
            );
            // The files the approved command line names are its to read.
            confinement.name_arguments(std::iter::once(program).chain(&request.args));
            // The launcher starts it in a session (and so a process group) of its own.
            let (child, jail) =
                self.launcher
                    .spawn(command, &confinement)
                    .map_err(|e| match e {
                        bosun_launch::LaunchError::Spawn(e)
                            if e.kind() == std::io::ErrorKind::NotFound =>
                        {
                            format!("no such program `{program}` on PATH or at that path")
                        }
                        bosun_launch::LaunchError::Spawn(e) => {
                            format!("could not start `{program}`: {e}")
                        }
                        other => other.to_string(),
                    })?;
            Ok(Spawned {
                child,
                guard: Box::new(jail),
            })
        })
    }
}

impl HostProcesses {
    /// The directory to start in: the workspace (as the plugin sees it, `/workspace/...`, or
    /// relative to it); never outside.
    fn cwd(&self, asked: Option<&str>) -> Result<std::path::PathBuf, String> {
        let Some(asked) = asked else {
            return Ok(self.workspace.cwd().to_path_buf());
        };
        let guest = bosun_sandbox::WORKSPACE_GUEST_PATH;
        let relative = match asked.strip_prefix(guest) {
            Some(rest) if rest.is_empty() || rest.starts_with('/') => {
                rest.trim_start_matches('/').to_owned()
            }
            _ => asked.to_owned(),
        };
        let relative = if relative.is_empty() { "." } else { &relative };
        let dir = self.workspace.resolve(relative).map_err(|e| e.message)?;
        if !dir.is_dir() {
            return Err(format!("cwd `{asked}` is not a directory in the workspace"));
        }
        Ok(dir)
    }
}

/// `program 'arg' …` as a person reads it.
fn command_line(request: &SpawnRequest) -> String {
    let mut line = request.program.clone();
    for arg in &request.args {
        line.push_str(" '");
        line.push_str(&arg.replace('\'', r"'\''"));
        line.push('\'');
    }
    line
}

/// A plugin's `restrictPolicy` hooks, asked about every call.
struct JsPolicyHook {
    runtime: Arc<JsRuntime>,
}

#[async_trait]
impl PolicyHook for JsPolicyHook {
    async fn verdict(
        &self,
        call: &ToolCall,
        tool: &dyn Tool,
        labels: &crate::SessionLabels,
        cancel: &CancellationToken,
    ) -> Result<Option<HookVerdict>, String> {
        let risk = serde_json::to_value(tool.spec().risk).unwrap_or(Value::Null);
        // Forge's snapshot, plus what the session has seen: its level and whether it has read
        // untrusted input (a hook may decide on them; a Forge plugin ignores the extra key).
        let payload = json!({
            "tool": { "name": call.name, "risk": risk },
            "call": { "id": call.id, "name": call.name, "input": call.input },
            "input": call.input,
            "session": {
                "classification": labels.level,
                "untrustedInput": labels.untrusted.is_some(),
            },
        });
        let opts = CallOptions {
            cancel: cancel.clone(),
            ..CallOptions::default()
        };
        let restriction = self
            .runtime
            .with_plugin(async |p| p.restrict(&payload, opts).await)
            .await
            .map_err(|e| e.message)?;
        Ok(restriction.map(|r| HookVerdict {
            plugin: self.runtime.spec.local_name.clone(),
            decision: if r.kind == "deny" {
                Decision::Deny
            } else {
                Decision::Ask
            },
            reason: r.reason,
        }))
    }
}

/// The specs of the enabled Forge and Triggerfish plugins among `entries`, built from the exact
/// snapshots the catalog hashed. `reserved` are the built-in tool names. A plugin whose files
/// cannot be prepared is left out with a warning.
pub fn specs_from_catalog<'a>(
    entries: impl IntoIterator<Item = &'a bosun_plugins::PluginEntry>,
    reserved: &[String],
    host_limits: &bosun_core::Limits,
) -> (Vec<JsPluginSpec>, Vec<String>) {
    let mut specs = Vec::new();
    let mut warnings = Vec::new();
    for entry in entries {
        let (Some(snapshot), Some(js)) = (entry.source(), entry.js.as_ref()) else {
            continue;
        };
        let manifest = match js {
            bosun_plugins::JsManifest::Forge(m) => JsManifestRef::Forge(m),
            bosun_plugins::JsManifest::Triggerfish(m) => JsManifestRef::Triggerfish(m),
        };
        let config = entry.config.as_ref();
        let table: serde_json::Map<String, Value> = config
            .map(|c| {
                c.config
                    .keys()
                    .filter_map(|k| c.config_json(k).map(|v| (k.clone(), v)))
                    .collect()
            })
            .unwrap_or_default();
        // The user's half of Triggerfish's trust: `trust = "trusted"` in the plugin's config.
        let config_trusted = table.get("trust").and_then(Value::as_str) == Some("trusted");
        let bounds = JsBounds {
            timeout: config
                .and_then(|c| c.timeout_ms)
                .map_or(JsBounds::default().timeout, Duration::from_millis),
            memory_bytes: config
                .and_then(|c| c.memory_mib)
                .and_then(|mib| usize::try_from(mib << 20).ok())
                .unwrap_or(JsBounds::default().memory_bytes),
            limits: JsLimits::default(),
        }
        .with_host_limits(host_limits);
        match JsPluginSpec::from_snapshot(
            &entry.local_name,
            snapshot,
            manifest,
            Value::Object(table),
            config_trusted,
            bounds,
            reserved.to_vec(),
        ) {
            Ok(mut spec) => {
                // The variables the user named, read now; an unset one is simply absent.
                spec.env = config
                    .map(|c| {
                        c.env
                            .iter()
                            .filter_map(|name| std::env::var(name).ok().map(|v| (name.clone(), v)))
                            .collect()
                    })
                    .unwrap_or_default();
                specs.push(spec);
            }
            Err(reason) => warnings.push(format!(
                "plugin `{}` was not loaded: {reason}",
                entry.local_name
            )),
        }
    }
    (specs, warnings)
}

/// Events waiting for one plugin's observers; beyond this the newest are dropped and counted.
const OBSERVER_QUEUE: usize = 1024;

/// Delivers every event of a run to the plugins that registered `observeRunEvents` observers.
///
/// The trace hands events over already redacted; each plugin gets them in order on a worker
/// thread of its own, through a bounded queue, so a slow or stuck observer never stalls the run
/// (Forge awaits observers inline). Its warnings (an observer threw) and the events a full queue
/// dropped are logged.
pub struct JsObserver {
    queues: Vec<(String, std::sync::mpsc::SyncSender<Value>)>,
    dropped: std::sync::atomic::AtomicU64,
    warnings: Arc<std::sync::Mutex<Vec<String>>>,
}

/// Warnings kept for a person; more are dropped.
const MAX_OBSERVER_WARNINGS: usize = 100;

fn push_warning(warnings: &std::sync::Mutex<Vec<String>>, warning: String) {
    let mut warnings = warnings
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if warnings.len() < MAX_OBSERVER_WARNINGS {
        warnings.push(warning);
    }
}

impl std::fmt::Debug for JsObserver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsObserver")
            .field("plugins", &self.queues.len())
            .finish_non_exhaustive()
    }
}

impl JsObserver {
    /// An observer for the runtimes with observers; `None` when no plugin has one.
    pub fn for_runtimes(runtimes: &[Arc<JsRuntime>]) -> Option<Arc<Self>> {
        let mut queues = Vec::new();
        let warnings: Arc<std::sync::Mutex<Vec<String>>> = Arc::default();
        for runtime in runtimes.iter().filter(|r| r.descriptor.hooks.observe > 0) {
            let sink = Arc::clone(&warnings);
            let (sender, receiver) = std::sync::mpsc::sync_channel::<Value>(OBSERVER_QUEUE);
            let name = runtime.spec.local_name.clone();
            let runtime = Arc::clone(runtime);
            let spawned = std::thread::Builder::new()
                .name(format!("observe-{}", runtime.spec.local_name))
                .spawn(move || {
                    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                    else {
                        return;
                    };
                    // Ends when the observer (the sender) is dropped with the trace.
                    while let Ok(event) = receiver.recv() {
                        match rt.block_on(runtime.observe(&event)) {
                            Ok(found) => {
                                for warning in found {
                                    push_warning(&sink, warning);
                                }
                            }
                            Err(e) => push_warning(
                                &sink,
                                format!(
                                    "plugin `{}`: its observers failed: {}",
                                    runtime.spec.local_name, e.message
                                ),
                            ),
                        }
                    }
                });
            if spawned.is_ok() {
                queues.push((name, sender));
            }
        }
        (!queues.is_empty()).then(|| {
            Arc::new(Self {
                queues,
                dropped: std::sync::atomic::AtomicU64::new(0),
                warnings,
            })
        })
    }

    /// The observers' warnings so far (an observer threw, or failed), taken.
    pub fn take_warnings(&self) -> Vec<String> {
        std::mem::take(
            &mut *self
                .warnings
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    /// Events dropped because a plugin's queue was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl crate::trace::Observer for JsObserver {
    fn observe(&self, envelope: &bosun_core::Envelope) {
        // Plugins observe what the trace records; streamed text is not recorded.
        if envelope.event.is_live() {
            return;
        }
        let Ok(event) = serde_json::to_value(envelope) else {
            return;
        };
        for (_, queue) in &self.queues {
            if queue.try_send(event.clone()).is_err() {
                self.dropped
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }
}

/// Everything the enabled JavaScript plugins contribute to a host.
#[derive(Default)]
pub struct JsPlugins {
    /// Activated plugins, in load order.
    pub runtimes: Vec<Arc<JsRuntime>>,
    /// Their tools.
    pub tools: Vec<Arc<dyn Tool>>,
    /// Their policy hooks.
    pub hooks: Vec<Arc<dyn PolicyHook>>,
    /// What a person should know (plugins left out and why).
    pub warnings: Vec<String>,
}

impl JsPlugins {
    /// Collects what every plugin in `specs` offers: from `cache` when an earlier activation
    /// with the same inputs was kept there (nothing runs now), else by activating it (and
    /// keeping what it registered). A plugin that fails to activate is left out with a warning.
    pub async fn start(
        specs: Vec<JsPluginSpec>,
        engine: &Arc<JsEngine>,
        policy: &Arc<Policy>,
        cache: Option<&DescriptorCache>,
    ) -> Self {
        let mut out = Self::default();
        let mut taken: BTreeSet<String> = BTreeSet::new();
        for spec in specs {
            let local = spec.local_name.clone();
            let kept = cache.map(|cache| KeptAt {
                cache: cache.clone(),
                key: DescriptorCache::key(&spec, &engine.image),
            });
            let described = kept.as_ref().and_then(|k| k.cache.get(&k.key));
            let started = match (described, kept) {
                (Some(descriptor), Some(kept)) => {
                    Ok(JsRuntime::kept(spec, engine, descriptor, kept))
                }
                (_, kept) => JsRuntime::start(spec, engine).await.inspect(|runtime| {
                    if let Some(kept) = kept {
                        kept.cache.put(&kept.key, &runtime.descriptor);
                    }
                }),
            };
            let runtime = match started {
                Ok(runtime) => runtime,
                Err(reason) => {
                    out.warnings
                        .push(format!("plugin `{local}` was not loaded: {reason}"));
                    continue;
                }
            };
            let (tools, warnings) = runtime.tools(policy);
            out.warnings.extend(warnings);
            for tool in tools {
                let name = tool.spec().name.to_string();
                if taken.insert(name.clone()) {
                    out.tools.push(tool);
                } else {
                    out.warnings.push(format!(
                        "plugin `{local}`: tool `{name}` is not offered because an earlier plugin has a tool of that name"
                    ));
                }
            }
            out.hooks.extend(runtime.policy_hook());
            out.runtimes.push(runtime);
        }
        out
    }

    /// Every plugin's prompt contributions for `task`, as (local name, text).
    pub async fn prompts(&self, task: &str) -> (Vec<(String, String)>, Vec<String>) {
        let mut prompts = Vec::new();
        let mut warnings = Vec::new();
        for runtime in &self.runtimes {
            match runtime.prompts(task).await {
                Ok(texts) => prompts.extend(
                    texts
                        .into_iter()
                        .map(|t| (runtime.spec.local_name.clone(), t)),
                ),
                Err(e) => warnings.push(format!(
                    "plugin `{}`: its prompt contribution failed and is left out: {}",
                    runtime.spec.local_name, e.message
                )),
            }
        }
        (prompts, warnings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_are_made_objects_without_their_dialect() {
        let schema =
            json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "oneOf": []});
        assert_eq!(
            normalise_schema(&schema).unwrap(),
            json!({"oneOf": [], "type": "object"})
        );
        assert!(normalise_schema(&json!({"type": "string"})).is_err());
        assert!(normalise_schema(&json!(true)).is_err());
    }
}
