//! Installed Claude Code plugins in the host: their `PreToolUse` command hooks as policy hooks
//! (which can only tighten: a hook's `allow` never loosens a decision), run in the OS sandbox
//! with Claude Code's stdin JSON, exit codes and JSON answers. They enter the host as one more
//! [`Runtime`]: installed plugins are checked against what was reviewed at every assembly, and a
//! changed one is left out with a warning. The plugins found intact are kept for the turn: their
//! skills, commands and agents are read from them by `skills.rs`, `plugin_commands.rs` and
//! `plugin_agents.rs`.

use std::path::PathBuf;
use std::sync::Arc;

use bosun_claude::LoadedPlugin;
use bosun_claude::hooks::{Group, HookOutcome, HookPlace, matches, run_handler};
use bosun_core::{Decision, ToolCall};
use bosun_policy::HookVerdict;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::hooks::{HookFailure, PolicyHook, SessionLabels};
use crate::plugin_runtime::contract::{Assembly, Offer, Runtime};
use crate::plugin_runtime::error::RuntimeError;
use crate::tool::Tool;

/// One plugin's `PreToolUse` hooks, asked about every call.
pub struct PreToolUse {
    plugin: LoadedPlugin,
    groups: Vec<Group>,
    launcher: Arc<bosun_launch::Launcher>,
    workspace: PathBuf,
}

impl std::fmt::Debug for PreToolUse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreToolUse")
            .field("plugin", &self.plugin.record.id)
            .finish_non_exhaustive()
    }
}

/// Installed Claude Code plugins (`$BOSUN_HOME/claude`), as a runtime: they offer policy
/// hooks, never tools. The plugins it found intact are kept for the turn's skills, commands
/// and subagents ([`crate::Host::claude_plugins`]).
#[derive(Debug, Default)]
pub struct ClaudeRuntime {
    plugins: Vec<LoadedPlugin>,
}

impl ClaudeRuntime {
    /// The plugins checked against what was reviewed at this assembly.
    pub fn plugins(&self) -> &[LoadedPlugin] {
        &self.plugins
    }
}

#[async_trait::async_trait]
impl Runtime for ClaudeRuntime {
    fn offer(&mut self, at: &Assembly<'_>) -> Result<Offer, RuntimeError> {
        let loaded = bosun_claude::Loaded::load(at.home);
        let offer = Offer {
            hooks: pre_tool_use_hooks(&loaded.plugins, at.launcher, at.workspace),
            warnings: loaded.refused,
            ..Offer::default()
        };
        self.plugins = loaded.plugins;
        Ok(offer)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The policy hooks of `plugins`' `PreToolUse` command hooks.
pub fn pre_tool_use_hooks(
    plugins: &[LoadedPlugin],
    launcher: &Arc<bosun_launch::Launcher>,
    workspace: &std::path::Path,
) -> Vec<Arc<dyn PolicyHook>> {
    plugins
        .iter()
        .filter_map(|plugin| {
            let groups = plugin.layout.hooks.get("PreToolUse")?.clone();
            (!groups.is_empty()).then(|| {
                Arc::new(PreToolUse {
                    plugin: plugin.clone(),
                    groups,
                    launcher: launcher.clone(),
                    workspace: workspace.to_path_buf(),
                }) as Arc<dyn PolicyHook>
            })
        })
        .collect()
}

/// A Bosun call's input as Claude Code's tools name their fields (`file_path` beside `path`).
fn claude_input(input: &Value) -> Value {
    let mut input = input.clone();
    // `run_command` takes a program and its arguments; Bash hooks read one `command` line.
    if let Value::Object(map) = &mut input
        && let Some(program) = map
            .get("program")
            .and_then(Value::as_str)
            .map(str::to_owned)
        && !map.contains_key("command")
    {
        let mut line = program;
        for arg in map
            .get("args")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            line.push(' ');
            line.push_str(arg.as_str().unwrap_or_default());
        }
        map.insert("command".to_owned(), Value::String(line));
    }
    if let Value::Object(map) = &mut input
        && let Some(path) = map.get("path").cloned()
        && !map.contains_key("file_path")
    {
        map.insert("file_path".to_owned(), path);
    }
    input
}

#[async_trait::async_trait]
impl PolicyHook for PreToolUse {
    async fn verdict(
        &self,
        call: &ToolCall,
        _tool: &dyn Tool,
        _labels: &SessionLabels,
        cancel: &CancellationToken,
    ) -> Result<Option<HookVerdict>, HookFailure> {
        let tool_name = bosun_claude::tools::to_claude(&call.name);
        let input = json!({
            "session_id": "bosun",
            "transcript_path": "",
            "cwd": self.workspace,
            "permission_mode": "default",
            "hook_event_name": "PreToolUse",
            "tool_name": tool_name,
            "tool_input": claude_input(&call.input),
            "tool_use_id": call.id,
        });
        let place = HookPlace {
            launcher: &self.launcher,
            root: &self.plugin.root,
            data: &self.plugin.data,
            workspace: &self.workspace,
        };
        let mut strictest: Option<HookVerdict> = None;
        for group in self
            .groups
            .iter()
            .filter(|g| matches(g.matcher.as_deref(), &tool_name))
        {
            for handler in &group.hooks {
                let outcome = tokio::select! {
                    outcome = run_handler(place, handler, &input) => outcome,
                    () = cancel.cancelled() => return Ok(None),
                };
                let verdict = match outcome {
                    HookOutcome::Block(reason) => Some((Decision::Deny, reason)),
                    HookOutcome::Ask(reason) => Some((Decision::Ask, reason)),
                    // As in Claude Code, a hook that fails without exit 2 does not block; policy
                    // still decides.
                    HookOutcome::Failed(_) | HookOutcome::Continue | HookOutcome::Context(_) => {
                        None
                    }
                };
                if let Some((decision, reason)) = verdict {
                    let stricter = strictest
                        .as_ref()
                        .is_none_or(|s| s.decision == Decision::Ask && decision == Decision::Deny);
                    if stricter {
                        strictest = Some(HookVerdict {
                            plugin: self.plugin.record.id.clone(),
                            decision,
                            reason,
                        });
                    }
                    if decision == Decision::Deny {
                        return Ok(strictest);
                    }
                }
            }
        }
        Ok(strictest)
    }
}
