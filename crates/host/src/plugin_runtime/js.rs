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
//!
//! The modules: [`spec`] (what starts a plugin), [`engine`] (the engine and the kept
//! descriptors), [`plugin`] (one plugin and its instance), [`tool`] (its tools and hooks),
//! [`processes`] (what its tools start), [`observer`] (run events it observes).

use std::collections::BTreeSet;
use std::sync::Arc;

use async_trait::async_trait;
use bosun_policy::Policy;

use crate::chokepoint::PolicyHook;
use crate::plugin_runtime::contract::{
    Assembly, Listed, Offer, Prompts, Runtime, run_to_completion,
};
use crate::plugin_runtime::error::RuntimeError;
use crate::tool::Tool;

pub mod engine;
pub mod observer;
pub mod plugin;
mod processes;
pub mod spec;
pub mod tool;

use engine::KeptAt;
pub use engine::{DescriptorCache, EngineNotice, JS_ENGINE_NOTICE, JsEngine};
pub use observer::JsObserver;
pub use plugin::JsRuntime;
pub use spec::{JsBounds, JsManifestRef, JsPluginSpec, specs_from_catalog};
pub use tool::JsTool;

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
    /// with the same inputs was kept there (nothing runs now), else by activating it (and,
    /// with a cache, keeping what it registered and dropping the instance until first use:
    /// starting holds at most one instance at a time, whatever the number of plugins). A
    /// plugin that fails to activate is left out with a warning.
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
                (_, kept) => JsRuntime::start(spec, engine)
                    .await
                    .map(|runtime| match kept {
                        // What it registered is kept and its instance released: it is
                        // activated again at first use, like a plugin listed from the cache.
                        Some(kept) => {
                            kept.cache.put(&kept.key, &runtime.descriptor);
                            JsRuntime::released(runtime, kept)
                        }
                        None => runtime,
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
}

/// The runtime of Forge and Triggerfish plugins: activates the enabled ones (or takes what an
/// earlier activation registered from the cache) and offers their tools, hooks, prompt
/// contributions and observers.
pub struct JavaScriptRuntime {
    engine: Arc<JsEngine>,
    runtimes: Vec<Arc<JsRuntime>>,
}

impl std::fmt::Debug for JavaScriptRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JavaScriptRuntime")
            .field("plugins", &self.runtimes.len())
            .finish_non_exhaustive()
    }
}

impl JavaScriptRuntime {
    /// A runtime whose plugins run in `engine`.
    pub fn new(engine: Arc<JsEngine>) -> Self {
        Self {
            engine,
            runtimes: Vec::new(),
        }
    }

    /// The activated plugins (for their commands and subagents).
    pub fn plugins(&self) -> &[Arc<JsRuntime>] {
        &self.runtimes
    }
}

#[async_trait]
impl Runtime for JavaScriptRuntime {
    fn offer(&mut self, at: &Assembly<'_>) -> Result<Offer, RuntimeError> {
        let (specs, mut warnings) = specs_from_catalog(at.enabled(), at.reserved, at.limits);
        // Loaded only when a plugin runs: listing what was kept needs no engine.
        if specs.is_empty() {
            return Ok(Offer {
                warnings,
                ..Offer::default()
            });
        }
        let cache = DescriptorCache::new(at.home.join("cache").join("js-plugins"));
        let started = run_to_completion(JsPlugins::start(
            specs,
            &self.engine,
            at.policy,
            Some(&cache),
        ))?;
        let mut listed = Vec::new();
        for runtime in &started.runtimes {
            let spec = runtime.spec();
            let prefix = format!("plugin.{}.", spec.local_name);
            listed.push(Listed {
                name: spec.local_name.clone(),
                version: at
                    .enabled()
                    .find(|e| e.local_name == spec.local_name)
                    .and_then(|e| e.js().map(|m| m.version().to_owned()))
                    .unwrap_or_default(),
                format: format!("{:?}", spec.format).to_lowercase(),
                tools: started
                    .tools
                    .iter()
                    .filter(|t| t.action().starts_with(&prefix))
                    .map(|t| t.spec().name.to_string())
                    .collect(),
            });
        }
        warnings.extend(started.warnings);
        self.runtimes = started.runtimes;
        Ok(Offer {
            tools: started.tools,
            hooks: started.hooks,
            listed,
            warnings,
            ..Offer::default()
        })
    }

    async fn prompts(&self, task: &str) -> Prompts {
        let mut prompts = Vec::new();
        let mut warnings = Vec::new();
        let carried = crate::tool::InstanceLabel::default();
        for runtime in &self.runtimes {
            let local = &runtime.spec().local_name;
            match runtime.prompts(task, &carried).await {
                Ok(texts) => {
                    for text in texts {
                        // What reaches the model's system prompt passes the same hidden-character
                        // check as every other string a plugin shows a model.
                        if let Some(hidden) = bosun_core::find_hidden(&text) {
                            warnings.push(format!(
                                "plugin `{local}`: its prompt contribution holds the hidden character {hidden} and is left out"
                            ));
                        } else {
                            prompts.push((local.clone(), text));
                        }
                    }
                }
                Err(e) => warnings.push(format!(
                    "plugin `{local}`: its prompt contribution failed and is left out: {}",
                    e.message
                )),
            }
        }
        // A contribution left out still told the instance's label to `carried`: raising the
        // session for words it never reads only errs on the safe side.
        Prompts {
            texts: prompts,
            warnings,
            carried,
        }
    }

    fn observer(
        &self,
        session: &Arc<crate::session::Session>,
    ) -> Option<Arc<dyn crate::trace::Observer>> {
        JsObserver::for_runtimes(&self.runtimes, session)
            .map(|o| o as Arc<dyn crate::trace::Observer>)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
