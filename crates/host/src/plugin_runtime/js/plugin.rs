//! [`JsRuntime`]: one JavaScript plugin shared by its tools, hooks and observers — its spec,
//! what it registered, and its one instance, activated again after it is poisoned.

use std::sync::Arc;

use bosun_core::{ErrorCode, ToolError};
use bosun_js::{Descriptor, JsError, JsPlugin};
use bosun_sandbox::{CallErrorKind, CallOptions, Loaded};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::hooks::SessionLabels;
use crate::plugin_runtime::error::{LeftOut, call_error, plugin_error, sandbox_error};
use crate::plugin_runtime::js::engine::{JsEngine, KeptAt};
use crate::plugin_runtime::js::spec::JsPluginSpec;
use crate::plugin_runtime::slot::{Creation, InstanceSlot};
use crate::tool::{InstanceLabel, ToolContext};

/// Where the workspace appears to a JavaScript plugin (its `context.workspace`).
const GUEST_WORKSPACE: &str = "/workspace";

/// One plugin, shared by its tools and hooks. Its instance is activated on first use (or was
/// at start, when nothing was kept); a poisoned instance (trap, deadline, memory) is replaced
/// by activating the plugin again on the next call, and module state is lost.
pub struct JsRuntime {
    pub(super) spec: JsPluginSpec,
    engine: Arc<JsEngine>,
    plugin: InstanceSlot<JsPlugin>,
    pub(super) descriptor: Descriptor,
    kept: Option<KeptAt>,
}

impl std::fmt::Debug for JsRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsRuntime")
            .field("local_name", &self.spec.local_name)
            .finish_non_exhaustive()
    }
}

/// The tool error for a failed engine call of the plugin `spec`: the plugin's own message
/// placed in the TypeScript its author wrote.
fn js_error(spec: &JsPluginSpec, error: &JsError) -> ToolError {
    let local = &spec.local_name;
    match error {
        JsError::Call {
            source, thrown_at, ..
        } => {
            let mut error = call_error(local, &source.kind);
            if matches!(source.kind, CallErrorKind::Tool { .. }) {
                // The engine's own errors (activation, a promise that cannot settle) name no
                // plugin; say which.
                error.message = format!(
                    "plugin `{local}`: {}",
                    spec.place(&error.message, thrown_at.as_ref())
                );
            }
            error
        }
        JsError::Sandbox(error) => sandbox_error(local, error),
        other => ToolError::new(ErrorCode::PluginError, format!("plugin `{local}`: {other}")),
    }
}

/// Why activation failed, said once and placed in the TypeScript its author wrote: the
/// plugin's own error without the layers that each named the plugin again (`plugin x: tool
/// error plugin_error: the promise was rejected: Activation failed for plugin "x": TypeError:
/// …` becomes `activate() threw TypeError: …`).
fn activation_failure(spec: &JsPluginSpec, error: &JsError) -> String {
    let JsError::Call {
        source, thrown_at, ..
    } = error
    else {
        return error.to_string();
    };
    let bosun_sandbox::CallErrorKind::Tool { message, .. } = &source.kind else {
        return source.kind.to_string();
    };
    let placed = spec.place(message, thrown_at.as_ref());
    let message = placed
        .strip_prefix("the promise was rejected: ")
        .unwrap_or(&placed);
    match message.strip_prefix(&format!("Activation failed for plugin \"{}\": ", spec.name)) {
        Some(thrown) => format!("its activate() threw {thrown}"),
        None => message.to_owned(),
    }
}

/// Why a fresh instance of a listed plugin is not there.
enum Reactivation {
    /// Activation failed (the pool may be full).
    Failed(Box<JsError>),
    /// The instance registered something other than what was listed.
    Refused(ToolError),
}

impl Creation for Reactivation {
    fn pool_full(&self) -> bool {
        matches!(self, Reactivation::Failed(e) if e.pool_full())
    }
}

impl JsRuntime {
    /// Activates the plugin in a fresh engine instance, loading the engine if it is not yet.
    ///
    /// # Errors
    /// Why activation failed, in words for a person.
    pub async fn start(spec: JsPluginSpec, engine: &Arc<JsEngine>) -> Result<Arc<Self>, LeftOut> {
        let loaded = engine.get().await.map_err(LeftOut::Engine)?;
        let slot = InstanceSlot::empty(&spec.local_name);
        let (descriptor, _) = slot
            .with(
                loaded.slots(),
                // Activation hands the plugin no session's data.
                &SessionLabels::default(),
                |_| true,
                || {
                    let (grants, request) = (spec.grants(), spec.request());
                    let files = &spec.files;
                    async move {
                        JsPlugin::activate(loaded, grants, files, &request, CallOptions::default())
                            .await
                    }
                },
                async |plugin| plugin.descriptor().clone(),
                // No call to tell: the plugin released says so at its next call.
                |_| false,
            )
            .await
            .map_err(|e| LeftOut::Activation(activation_failure(&spec, &e)))?;
        if let Some(expected) = &spec.static_manifest {
            // What was reviewed is the manifest read without running code; a module that
            // exports something else is not the plugin that was reviewed.
            let exported = descriptor.manifest.clone().unwrap_or(Value::Null);
            expected
                .check_runtime(&exported)
                .map_err(|e| LeftOut::Activation(e.to_string()))?;
        }
        Ok(Arc::new(Self {
            spec,
            engine: Arc::clone(engine),
            plugin: slot,
            descriptor,
            kept: None,
        }))
    }

    /// The plugin as an earlier activation with the same inputs described it; nothing runs
    /// until its first call, hook or observed event.
    pub(super) fn kept(
        spec: JsPluginSpec,
        engine: &Arc<JsEngine>,
        descriptor: Descriptor,
        kept: KeptAt,
    ) -> Arc<Self> {
        Arc::new(Self {
            plugin: InstanceSlot::empty(&spec.local_name),
            spec,
            engine: Arc::clone(engine),
            descriptor,
            kept: Some(kept),
        })
    }

    /// The plugin as [`JsRuntime::kept`] makes it, from a runtime [`JsRuntime::start`] just
    /// activated whose descriptor is now kept at `kept`: its instance is dropped, and the plugin
    /// is activated again at its first call, hook or observed event, as at every later start.
    /// So a host starting with many plugins and nothing kept yet holds no instance for a
    /// plugin it never calls, and never needs more instances at once than it calls plugins
    /// (the engine has a fixed number of instance slots). A runtime shared already is returned
    /// as it is.
    pub(super) fn released(runtime: Arc<Self>, kept: KeptAt) -> Arc<Self> {
        match Arc::try_unwrap(runtime) {
            Ok(this) => Self::kept(this.spec, &this.engine, this.descriptor, kept),
            Err(shared) => shared,
        }
    }

    /// Whether an instance of the plugin is live now (it was activated and not poisoned).
    pub async fn is_active(&self) -> bool {
        self.plugin.is_live().await
    }

    /// What the plugin registered.
    pub fn descriptor(&self) -> &Descriptor {
        &self.descriptor
    }

    /// The spec it was started from.
    pub fn spec(&self) -> &JsPluginSpec {
        &self.spec
    }

    /// Runs `f` on the live instance, activating a fresh one first if there is none (the last
    /// was poisoned, or released while idle for another plugin). The instance's label first
    /// rises to `from`, the labels of the session whose data `f` hands the plugin. `ctx`, the
    /// tool call this runs for, is told when another plugin's idle instance was released to
    /// make room. `carried` is given the instance's label after the call, for what the plugin
    /// answered (a result, an error, a hook's reason, a prompt) to carry to the session that
    /// reads it; `None` only where the answer reaches no session (a person's command, an
    /// observer's warnings).
    pub(super) async fn with_plugin<T>(
        &self,
        ctx: Option<&ToolContext>,
        carried: Option<&InstanceLabel>,
        from: &SessionLabels,
        f: impl AsyncFnOnce(&mut JsPlugin) -> Result<T, JsError>,
    ) -> Result<T, ToolError> {
        let local = &self.spec.local_name;
        let engine = self.engine.get().await.map_err(|e| {
            plugin_error(
                local,
                format!("the JavaScript engine could not be loaded: {e}"),
            )
        })?;
        let (result, reached) = self
            .plugin
            .with(
                engine.slots(),
                from,
                |_| true,
                || self.activate_again(engine),
                f,
                |note| {
                    if let Some(ctx) = ctx {
                        ctx.log_lines([("info".to_owned(), note.line())]);
                    }
                    ctx.is_some()
                },
            )
            .await
            .map_err(|e| match e {
                Reactivation::Failed(e) => js_error(&self.spec, &e),
                Reactivation::Refused(e) => e,
            })?;
        if let Some(carried) = carried {
            carried.record(local, &reached);
        }
        result.map_err(|e| js_error(&self.spec, &e))
    }

    /// A fresh instance of the plugin, which must register exactly what it was offered as.
    async fn activate_again(&self, engine: &Loaded) -> Result<JsPlugin, Reactivation> {
        let local = &self.spec.local_name;
        let plugin = JsPlugin::activate(
            engine,
            self.spec.grants(),
            &self.spec.files,
            &self.spec.request(),
            CallOptions::default(),
        )
        .await
        .map_err(|e| Reactivation::Failed(Box::new(e)))?;
        // Its tools, schemas and hooks were offered as described; an instance that
        // registers anything else is not the plugin those offers name.
        if *plugin.descriptor() != self.descriptor {
            if let Some(kept) = &self.kept {
                kept.cache.put(&kept.key, plugin.descriptor());
            }
            return Err(Reactivation::Refused(ToolError::new(
                ErrorCode::PluginError,
                format!(
                    "plugin `{local}` registered other tools or hooks than when it was \
                     listed, so its calls are refused in this run; the next start lists \
                     what it registers now"
                ),
            )));
        }
        Ok(plugin)
    }

    /// The plugin's prompt contributions (Forge `contributePrompt`, Triggerfish `systemPrompt`).
    /// `carried` is given the instance's label: the contributions come from its module state,
    /// which may hold what any session handed it, and the session whose system prompt they
    /// join takes it on.
    ///
    /// # Errors
    /// The plugin's hook failed or returned more than 32 KiB.
    pub async fn prompts(
        &self,
        task: &str,
        carried: &InstanceLabel,
    ) -> Result<Vec<String>, ToolError> {
        if self.descriptor.hooks.prompt == 0 && self.descriptor.system_prompt.is_none() {
            return Ok(Vec::new());
        }
        let payload = json!({
            "prompt": task,
            "workspaceRoot": GUEST_WORKSPACE,
            "workingDirectory": GUEST_WORKSPACE,
        });
        // The task is the person's words, no session's data: the instance's label does not
        // rise, but what comes back carries it.
        self.with_plugin(None, Some(carried), &SessionLabels::default(), async |p| {
            p.prompt(&payload, CallOptions::default()).await
        })
        .await
    }

    /// Hands one (already redacted) run event of a session labelled `from` to the plugin's
    /// observers, raising the instance's label to it; returns their warnings.
    ///
    /// # Errors
    /// The engine failed (the observers' own throws are warnings, not errors).
    pub async fn observe(
        &self,
        event: &Value,
        from: &SessionLabels,
    ) -> Result<Vec<String>, ToolError> {
        // Observers answer nothing a session reads (their warnings go to the person).
        self.with_plugin(None, None, from, async |p| {
            p.observe(event, CallOptions::default()).await
        })
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
        // Run for a person outside any session: no session's data goes in, and the output goes
        // to the person.
        self.with_plugin(None, None, &SessionLabels::default(), async |p| {
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
}
