//! Steps 7 and 8 of the chokepoint, after a tool returned: the post-response hooks act on the
//! result, and the session takes on what the result carries (its level, untrusted input, the
//! label of the plugin instance it came from). The session's taint only ever rises here.

use bosun_core::{Capability, Classification, ErrorCode, Event, Risk, ToolError};
use serde_json::Value;

use super::{Chokepoint, ToolCall};
use crate::hooks::PostEffect;
use crate::labels::Reader as _;
use crate::session::Session;
use crate::trace::Trace;
use crate::{Tool, ToolContext};

impl Chokepoint {
    /// Step 7: the post-response hooks redact the result, raise its level or mark it untrusted
    /// before anyone sees it; recorded when one matched.
    pub(super) fn post_hooks(
        &self,
        call: &ToolCall,
        value: &mut Value,
        trace: &Trace,
    ) -> PostEffect {
        let effect = self.result_hooks.post(&call.name, value);
        if !effect.hooks.is_empty() {
            trace.record(Event::HookApplied {
                call_id: call.id.clone(),
                tool: call.name.clone(),
                hooks: effect.hooks.clone(),
                redactions: effect.redactions,
                level: effect.level,
                untrusted: effect.untrusted.is_some(),
            });
        }
        effect
    }

    /// Step 8: raises the session's taint to the result's level — the highest of the tool's,
    /// the result's, the hooks' and the labels of what it read: the paths it named, each file
    /// it returned content of beneath them (a search's matches), and every file they share an
    /// inode with. It never falls. A program could read the whole workspace: what it returns
    /// carries the highest label of the workspace's labelled files.
    ///
    /// Returns where the untrusted input the call read came from, if it read any; or, when the
    /// result is above what the session's model may be sent, the error the model reads in its
    /// place (the session does not rise, and `model.withheld` is recorded).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn raise_taint(
        &self,
        call: &ToolCall,
        tool: &dyn Tool,
        ctx: &ToolContext,
        (classification, level_at_start): (Option<Classification>, Classification),
        effect: &PostEffect,
        session: &Session,
        trace: &Trace,
    ) -> Result<Option<String>, ToolError> {
        let root = self.workspace.root();
        let crate::flow::Read {
            level: read_level,
            untrusted: read_untrusted,
            file: read_file,
        } = self
            .flow
            .read_levels(Some(root), &ctx.granted, &ctx.read_files.take());
        let mut level = classification
            .unwrap_or(tool.spec().classification)
            .max(tool.spec().classification)
            .max(read_level.unwrap_or_default())
            .max(effect.level.unwrap_or_default());
        let ran_program = tool.spec().risk == Risk::Process
            || ctx
                .granted
                .iter()
                .any(|r| r.capability == Capability::ProcessSpawn);
        let mut readable = None;
        if ran_program
            && let Some((at, path)) = self.flow.workspace_level(root, level.max(session.taint()))
        {
            level = level.max(at);
            readable = Some(path);
        }
        if let Some(model) = session.model()
            && level > model.allowed
        {
            trace.record(Event::ModelWithheld {
                call_id: Some(call.id.clone()),
                model: model.name.clone(),
                what: "result".to_owned(),
                level,
                allowed: model.allowed,
            });
            let read = match (&readable, &read_file) {
                (Some(path), _) => format!(" (a program that could read {path})"),
                (None, Some(path)) => format!(" (it read {path})"),
                (None, None) => String::new(),
            };
            return Err(ToolError::new(
                ErrorCode::Denied,
                format!(
                    "the result of {} was withheld: it holds {level} data{read} and the model {name} may be sent {} at most, so the session did not take it in; go on without it, or ask the person to set `classification = \"{level}\"` in [models.{name}] of their own config if this model may hold such data",
                    call.name,
                    model.allowed,
                    name = model.name,
                ),
            ));
        }
        // A rise the call made while it ran has reached the session already (a subagent's
        // session absorbed by the call that started it, a plugin's escalation): it is this
        // call's when its own level reaches it, and is recorded from where the call began. A
        // rise by another call running beside it is that call's.
        let now = session.taint();
        let before = if level >= now {
            level_at_start.min(now)
        } else {
            now
        };
        let after = session.raise_taint(level);
        if after > now {
            session.set_taint_source(match (readable, read_file) {
                (Some(path), _) => format!(
                    "{} ({}), a program that could read {path}",
                    call.name, call.id
                ),
                (None, Some(path)) => {
                    format!("{} ({}), which read {path}", call.name, call.id)
                }
                (None, None) => format!("{} ({})", call.name, call.id),
            });
        }
        if after > before {
            trace.record(Event::TaintRaised {
                call_id: call.id.clone(),
                tool: call.name.clone(),
                from: before,
                to: after,
            });
        }
        Ok(read_untrusted)
    }

    /// Step 8b: marks the session when the result is untrusted input — anything from the
    /// network, a tool's own untrusted source, a file read that was, or a result a hook marks.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn mark_untrusted(
        &self,
        call: &ToolCall,
        tool: &dyn Tool,
        ctx: &ToolContext,
        read_untrusted: Option<String>,
        hook_untrusted: Option<String>,
        session: &Session,
        trace: &Trace,
    ) {
        let network: Vec<String> = ctx
            .granted
            .iter()
            .filter(|r| r.capability == Capability::NetHttp)
            .filter_map(|r| r.scope.as_authority().map(|a| a.host))
            .collect();
        let untrusted = if network.is_empty() {
            tool.untrusted_source()
                .or(read_untrusted)
                .or(hook_untrusted.map(|hook| format!("a result {hook} marks")))
        } else {
            Some(format!("the network ({})", network.join(", ")))
        };
        if let Some(source) = untrusted {
            let source = format!("{source}, read by {} ({})", call.name, call.id);
            if session.mark_untrusted(source.clone()) {
                trace.record(Event::UntrustedInput {
                    call_id: call.id.clone(),
                    tool: call.name.clone(),
                    source,
                });
            }
        }
    }

    /// The session takes on the label of the kept plugin instance the call (or a hook asked
    /// about it) ran in: the highest level and the first untrusted input of every session whose
    /// data reached the instance (its module state may hold any of it), naming the instance as
    /// the source.
    pub(super) fn carry_instance_label(
        &self,
        call: &ToolCall,
        ctx: &ToolContext,
        session: &Session,
        trace: &Trace,
    ) {
        for event in session.take_on(&ctx.instance_label, &call.id, &call.name) {
            trace.record(event);
        }
    }
}
