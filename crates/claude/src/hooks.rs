//! A plugin's hooks (`hooks/hooks.json` and the manifest's `hooks`), as Claude Code writes them:
//! `{"hooks": {"<Event>": [{"matcher": "Bash|Write", "hooks": [{"type": "command", …}]}]}}`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The events Claude Code's schema names.
pub const EVENTS: &[&str] = &[
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PostToolBatch",
    "Notification",
    "UserPromptSubmit",
    "UserPromptExpansion",
    "SessionStart",
    "SessionEnd",
    "Stop",
    "StopFailure",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "PostCompact",
    "PermissionRequest",
    "PermissionDenied",
    "Setup",
    "TeammateIdle",
    "TaskCreated",
    "TaskCompleted",
    "Elicitation",
    "ElicitationResult",
    "ConfigChange",
    "WorktreeCreate",
    "WorktreeRemove",
    "InstructionsLoaded",
    "CwdChanged",
    "FileChanged",
];

/// One handler.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Handler {
    /// `command`, `prompt`, `agent`, `http` or `mcp_tool`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The command line (`command`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Seconds it may take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<f64>,
    /// A permission rule such as `Bash(git *)` that must match for it to run.
    #[serde(default, rename = "if", skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    /// `async`: runs without waiting (Bosun waits anyway: a hook decides before the call).
    #[serde(default, rename = "async")]
    pub background: bool,
}

/// Handlers for the tools a matcher names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Group {
    /// A regular expression over Claude Code's tool names; empty or absent matches all.
    #[serde(default)]
    pub matcher: Option<String>,
    /// Its handlers.
    #[serde(default)]
    pub hooks: Vec<Handler>,
}

/// Every hook of a plugin, by event.
pub type HookMap = BTreeMap<String, Vec<Group>>;

/// Reads a `hooks.json`-shaped value (`{"hooks": {...}}` or the map itself) into `into`.
pub fn read_hooks(value: &Value, what: &str, into: &mut HookMap, warnings: &mut Vec<String>) {
    let map = value.get("hooks").unwrap_or(value);
    let Some(object) = map.as_object() else {
        warnings.push(format!("{what}: not a map of events: left out"));
        return;
    };
    for (event, groups) in object {
        if event == "description" {
            continue;
        }
        if !EVENTS.contains(&event.as_str()) {
            warnings.push(format!(
                "{what}: unknown event `{}`: left out",
                bosun_core::escape_hidden(event)
            ));
            continue;
        }
        match serde_json::from_value::<Vec<Group>>(groups.clone()) {
            Ok(groups) => into.entry(event.clone()).or_default().extend(groups),
            Err(e) => warnings.push(format!("{what}: {event}: {e}: left out")),
        }
    }
}
