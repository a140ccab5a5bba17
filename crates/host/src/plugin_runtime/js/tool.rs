//! A JavaScript plugin's tools ([`JsTool`]) and `restrictPolicy` hooks as the chokepoint sees
//! them: each call is judged like any other, then granted exactly what was judged.

use std::collections::BTreeSet;
use std::sync::Arc;

use async_trait::async_trait;
use bosun_core::{
    Authority, Capability, CapabilityRequest, Classification, Risk, Scope, ToolError, ToolOutput,
    ToolSpec,
};
use bosun_js::{Format, JsTool as JsToolMeta, ToolOutcome, UnknownRisk};
use bosun_policy::{HookVerdict, Policy};
use bosun_sandbox::{CallOptions, JsProcesses, JsSession};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::chokepoint::{PolicyHook, ToolCall};
use crate::hooks::{HookFailure, SessionLabels};
use crate::plugin_runtime::call_report;
use crate::plugin_runtime::error::LeftOut;
use crate::plugin_runtime::granter;
use crate::plugin_runtime::js::plugin::JsRuntime;
use crate::plugin_runtime::js::processes::HostProcesses;
use crate::session::Session;
use crate::tool::{InstanceLabel, Tool, ToolContext};

/// The session a JavaScript call runs in, as the engine's `runtime` imports see it, and the
/// highest level the call escalated to: its result carries it, so the chokepoint records the
/// rise (`taint.raised`) and the trace's readers (the export) know the session's level.
/// A rise is the call's (`Session::raise_taint_in_call`), so it reaches the trace even when
/// the call then fails.
#[derive(Debug)]
struct SessionTaint(Arc<Session>, std::sync::Mutex<Classification>, String);

impl JsSession for SessionTaint {
    fn taint(&self) -> Classification {
        self.0.taint()
    }

    fn escalate(&self, level: Classification) {
        self.0.raise_taint_in_call(&self.2, level);
        let mut escalated = self
            .1
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *escalated = (*escalated).max(level);
    }
}

impl JsRuntime {
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
    ) -> Result<Option<JsTool>, LeftOut> {
        let name = self.spec.model_name(&meta.name)?;
        if self.spec.reserved.iter().any(|r| r == name.as_str()) {
            return Err(LeftOut::Reserved {
                name: name.to_string(),
            });
        }
        let risk = meta
            .risk
            .clone()
            .map_err(|UnknownRisk(risk)| LeftOut::UnknownRisk {
                tool: meta.name.clone(),
                risk,
            })?;
        let spec_error = |reason: String| LeftOut::Spec {
            tool: meta.name.clone(),
            reason,
        };
        let schema = normalise_schema(&meta.input_schema).map_err(|e| spec_error(e.to_string()))?;
        let mut builder = ToolSpec::builder(name, meta.description.clone())
            .input_schema(schema)
            .risk(risk)
            .classification(self.spec.classification);
        if risk == Risk::Network {
            builder = builder.capability(Capability::NetHttp);
        }
        let spec = builder.build().map_err(|e| spec_error(e.to_string()))?;
        let action = bosun_plugins::tool_action(&self.spec.local_name, &meta.name);
        if granter::withheld(policy, &action, risk, &spec.capabilities) {
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

/// Why a plugin tool's input schema cannot be a tool's input schema.
#[derive(Debug, thiserror::Error)]
enum SchemaError {
    /// The schema is not a JSON object.
    #[error("the input schema is not a JSON object")]
    NotAnObject,
    /// The schema describes something else than an object.
    #[error("the input schema's type is {0}, not object")]
    NotAnObjectType(Value),
}

/// Makes a JSON Schema from the engine acceptable as a tool input schema: no `$schema`, an
/// object at the root.
fn normalise_schema(schema: &Value) -> Result<Value, SchemaError> {
    let Value::Object(map) = schema else {
        return Err(SchemaError::NotAnObject);
    };
    let mut map = map.clone();
    map.remove("$schema");
    match map.get("type") {
        None => {
            map.insert("type".into(), Value::String("object".into()));
        }
        Some(Value::String(t)) if t == "object" => {}
        Some(other) => return Err(SchemaError::NotAnObjectType(other.clone())),
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
    /// The authorities this call may reach, from the plugin's grants and the input: a
    /// Triggerfish plugin's endpoints as its manifest was read; a Forge `hosts` entry that is not
    /// an authority reaches nothing.
    fn hosts(&self, input: &Value) -> Vec<Authority> {
        if !self.network {
            return Vec::new();
        }
        let spec = &self.runtime.spec;
        let mut hosts: Vec<Authority> = Vec::new();
        match spec.format {
            Format::Triggerfish => hosts.extend(spec.endpoints.iter().cloned()),
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

    fn judges_mid_call(&self, _input: &Value) -> bool {
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
        let net = granter::network(&ctx.granted, &self.policy);
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
                    traceparent: crate::telemetry::traceparent(ctx),
                }) as Arc<dyn JsProcesses>
            });
        let session = Arc::new(SessionTaint(
            ctx.session.clone(),
            Default::default(),
            ctx.call_id.clone(),
        ));
        let opts = CallOptions {
            cancel: ctx.cancel.clone(),
            net,
            session: Some(session.clone()),
            processes,
        };
        let input_json = input.to_string();
        let tool = self.tool.clone();
        let outcome = self
            .runtime
            .with_plugin(
                Some(ctx),
                Some(&ctx.instance_label),
                &SessionLabels::of(&ctx.session),
                async |p| {
                    // What the call left behind reaches the trace whether it succeeded or failed.
                    match p.call(&tool, &input_json, opts).await {
                        Ok((outcome, report)) => {
                            call_report::keep(ctx, &report);
                            Ok(outcome)
                        }
                        Err(error) => {
                            if let bosun_js::JsError::Call { source, .. } = &error {
                                call_report::keep(ctx, &source.report);
                            }
                            Err(error)
                        }
                    }
                },
            )
            .await?;
        let escalated = *session
            .1
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match outcome {
            ToolOutcome::Ok { output, truncated } => Ok(ToolOutput {
                value: output,
                truncated,
                // What a Triggerfish plugin returns is as sensitive as it says its data is, and
                // as what it escalated to; the chokepoint raises the session's taint to it.
                classification: (self.runtime.spec.format == Format::Triggerfish)
                    .then_some(self.runtime.spec.classification)
                    .max((!escalated.is_public()).then_some(escalated)),
            }),
            ToolOutcome::Err {
                code,
                message,
                thrown_at,
                retryable,
            } => Err(ToolError::from_plugin(
                &code,
                self.runtime.spec.place(&message, thrown_at.as_ref()),
                retryable,
            )),
        }
    }
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
        said_by: &InstanceLabel,
        cancel: &CancellationToken,
    ) -> Result<Option<HookVerdict>, HookFailure> {
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
        let answered = InstanceLabel::default();
        let restriction = self
            .runtime
            // The hook sees the call's input: the instance takes on the session's labels, and
            // its tools' results carry them to whichever session calls next.
            .with_plugin(None, Some(&answered), labels, async |p| {
                p.restrict(&payload, opts).await
            })
            .await;
        // A verdict's reason and a failure's message are the plugin's words, read by the
        // session (in the denial) and the person: they carry the instance's label. A hook that
        // says nothing hands the session no text.
        if !matches!(restriction, Ok(None)) {
            answered.pass_to(said_by);
        }
        let restriction = restriction.map_err(|cause| HookFailure {
            hook: self.runtime.spec.local_name.clone(),
            cause,
        })?;
        // The reason is the plugin's words inside Bosun's decision: framed under a header
        // naming the plugin, so it cannot pose as more of Bosun's text or another plugin's.
        // The engine prefixes the reason with the plugin's name, as Forge does; the header
        // names it already.
        let plugin = &self.runtime.spec.local_name;
        let prefix = format!("{}: ", self.runtime.spec.name);
        Ok(restriction.map(|r| HookVerdict {
            plugin: plugin.clone(),
            decision: r.decision,
            reason: bosun_core::text::framed(
                &format!("reason given by the plugin `{plugin}`"),
                r.reason.strip_prefix(&prefix).unwrap_or(&r.reason),
            ),
        }))
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
