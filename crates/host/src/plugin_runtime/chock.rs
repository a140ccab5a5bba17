//! Chock plugins as tools: core WebAssembly modules whose metadata `bosun-plugins` read without
//! running them (`bosun_plugins::chock`), called through Chock's ABI in the same wasmtime
//! sandbox as every other plugin.
//!
//! A module is compiled and instantiated lazily, on the first call that passed policy, from the
//! exact bytes the catalog hashed; it is linked with nothing (Chock plugins import nothing), so
//! its capabilities are priced — judged by policy on every call, as Chock does — but grant it
//! nothing to reach. Arguments become Chock's binary record (ABI 2) or stay the raw argument
//! text (ABI 1); the answer's text is cleaned for the model. An instance that traps, runs out
//! of time or memory, or answers outside its memory is discarded; the next call gets a fresh one.

use std::sync::Arc;

use async_trait::async_trait;
use bosun_core::ErrorCode;
use bosun_core::{Capability, CapabilityRequest, Scope, ToolError, ToolOutput, ToolSpec};
use bosun_plugins::chock::{ChockAbi, Property, encode_arguments, text_for_model};
use bosun_plugins::{CapabilityDecl, PluginContent, PluginEntry};
use bosun_policy::Policy;
use bosun_sandbox::{CallOptions, Grants, Instance, Loaded, Sandbox};
use serde_json::Value;

use crate::hooks::SessionLabels;
use crate::plugin_runtime::contract::{Assembly, Offer, Runtime};
use crate::plugin_runtime::error::{RuntimeError, call_error, plugin_error, sandbox_error};
use crate::plugin_runtime::granter;
use crate::plugin_runtime::slot::InstanceSlot;
use crate::tool::{Tool, ToolContext};

/// One enabled Chock plugin: its bytes, limits and (once used) its compiled form and instance.
struct ChockPlugin {
    local_name: String,
    bytes: Arc<[u8]>,
    tools: u32,
    sandbox: Sandbox,
    grants: Grants,
    loaded: tokio::sync::OnceCell<Loaded>,
    instance: InstanceSlot<Instance>,
}

impl ChockPlugin {
    fn error(&self, message: impl std::fmt::Display) -> ToolError {
        plugin_error(&self.local_name, message)
    }

    async fn loaded(&self) -> Result<&Loaded, ToolError> {
        self.loaded
            .get_or_try_init(|| async {
                let sandbox = self.sandbox.clone();
                let bytes = self.bytes.clone();
                let label = self.local_name.clone();
                let tools = self.tools;
                tokio::task::spawn_blocking(move || {
                    sandbox
                        .load_chock(&bytes, tools)
                        .map(|l| l.with_label(label))
                })
                .await
                .map_err(|e| self.error(format!("loading failed: {e}")))?
                .map_err(|e| self.error(e))
            })
            .await
    }

    async fn call(&self, index: u32, args: &[u8], ctx: &ToolContext) -> Result<String, ToolError> {
        let loaded = self.loaded().await?;
        let opts = CallOptions {
            cancel: ctx.cancel.clone(),
            ..CallOptions::default()
        };
        let (result, reached) = self
            .instance
            .with(
                loaded.slots(),
                &SessionLabels::of(&ctx.session),
                |_| true,
                || loaded.instantiate(self.grants.clone()),
                async |instance| instance.call_chock(index, args, opts).await,
                |note| {
                    ctx.log_lines([("info".to_owned(), note.line())]);
                    true
                },
            )
            .await
            .map_err(|e| sandbox_error(&self.local_name, &e))?;
        ctx.instance_label.record(&self.local_name, &reached);
        // A poisoned instance was already dropped by its slot.
        result
            .map(|out| out.output_json)
            .map_err(|error| call_error(&self.local_name, &error.kind))
    }
}

/// One Chock tool as the chokepoint sees it.
pub struct ChockTool {
    runtime: Arc<ChockPlugin>,
    spec: ToolSpec,
    action: String,
    index: u32,
    /// The argument fields (ABI 2); `None` under ABI 1, whose tools get the raw text.
    properties: Option<Vec<Property>>,
    capabilities: Vec<CapabilityDecl>,
}

impl std::fmt::Debug for ChockTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChockTool")
            .field("action", &self.action)
            .field("index", &self.index)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl Tool for ChockTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn action(&self) -> &str {
        &self.action
    }

    /// Each declared capability, priced on every call as Chock prices it: `net.connect.<host>`
    /// as `net.http` to that host, `fs.read`/`fs.write` on the whole workspace (a Chock tool
    /// names no path), the others as they are. Nothing is granted for them (the module is
    /// linked with nothing), so nothing beyond the named scope needs judging.
    fn capability_requests(
        &self,
        _input: &Value,
        _ctx: &ToolContext,
    ) -> Result<Vec<CapabilityRequest>, ToolError> {
        let mut requests = Vec::new();
        for decl in &self.capabilities {
            match (&decl.capability, &decl.hosts) {
                (Capability::NetHttp, Some(hosts)) => {
                    requests.extend(hosts.iter().map(|host| CapabilityRequest {
                        capability: Capability::NetHttp,
                        scope: Scope {
                            host: Some(host.clone()),
                            ..Scope::default()
                        },
                    }));
                }
                (Capability::FsRead | Capability::FsWrite, _) => {
                    requests.push(CapabilityRequest {
                        capability: decl.capability.clone(),
                        scope: Scope {
                            path: Some(".".to_owned()),
                            ..Scope::default()
                        },
                    });
                }
                (capability, _) => requests.push(CapabilityRequest::bare(capability.clone())),
            }
        }
        Ok(requests)
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args = match &self.properties {
            Some(properties) => encode_arguments(properties, &input).map_err(|e| {
                ToolError::new(ErrorCode::InvalidInput, format!("{}: {e}", self.spec.name))
            })?,
            None => input.to_string().into_bytes(),
        };
        if args.len() > bosun_plugins::chock::MAX_ARGUMENT_BYTES {
            return Err(ToolError::new(
                ErrorCode::InvalidInput,
                format!(
                    "the arguments are {} bytes, and a Chock plugin's buffer holds {}: send less",
                    args.len(),
                    bosun_plugins::chock::MAX_ARGUMENT_BYTES
                ),
            ));
        }
        let text = self.runtime.call(self.index, &args, ctx).await?;
        Ok(ToolOutput::new(Value::String(text_for_model(&text))))
    }
}

/// Builds the runtimes and tools of every enabled Chock plugin in the catalog. A tool whose
/// action, or one of whose capabilities, policy denies outright is left out of the session.
pub fn plugin_tools(
    entries: impl IntoIterator<Item = impl std::ops::Deref<Target = PluginEntry>>,
    sandbox: &Sandbox,
    policy: &Arc<Policy>,
) -> Vec<Arc<dyn Tool>> {
    let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
    for entry in entries {
        let Some(PluginContent::Chock {
            manifest,
            module,
            bytes: Some(bytes),
            ..
        }) = &entry.content
        else {
            continue;
        };
        let config = entry.config.as_ref();
        let runtime = Arc::new(ChockPlugin {
            local_name: entry.local_name.clone(),
            bytes: bytes.clone(),
            tools: u32::try_from(module.tools.len()).unwrap_or(u32::MAX),
            sandbox: sandbox.clone(),
            grants: Grants {
                memory_bytes: granter::memory_bytes(config),
                timeout: granter::timeout(config),
                ..Grants::default()
            },
            loaded: tokio::sync::OnceCell::new(),
            instance: InstanceSlot::empty(&entry.local_name),
        });
        for (tool, offer) in manifest.tools.iter().zip(&entry.offers) {
            if offer.model_name.is_none() {
                continue;
            }
            let Some(declared) = module
                .tools
                .iter()
                .find(|t| t.name == tool.spec.name.as_str())
            else {
                continue;
            };
            if granter::withheld(
                policy,
                &offer.action,
                tool.spec.risk,
                tool.capabilities.iter().map(|d| &d.capability),
            ) {
                continue;
            }
            tools.push(Arc::new(ChockTool {
                runtime: runtime.clone(),
                spec: tool.spec.clone(),
                action: offer.action.clone(),
                index: declared.index,
                properties: match module.abi {
                    ChockAbi::V1 => None,
                    ChockAbi::V2 => declared.properties.clone(),
                },
                capabilities: tool.capabilities.clone(),
            }));
        }
    }
    tools
}

/// The runtime of Chock plugins: each enabled module's tools, built lazily on their first call.
#[derive(Debug, Default)]
pub struct ChockRuntime;

#[async_trait]
impl Runtime for ChockRuntime {
    fn offer(&mut self, at: &Assembly<'_>) -> Result<Offer, RuntimeError> {
        let chock = || {
            at.enabled()
                .filter(|e| matches!(e.content, Some(PluginContent::Chock { .. })))
        };
        if chock().next().is_none() {
            return Ok(Offer::default());
        }
        Ok(Offer {
            tools: plugin_tools(chock(), at.sandbox.get()?, at.policy),
            ..Offer::default()
        })
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
