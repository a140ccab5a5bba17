//! `[claude.plugins."<name>@<marketplace>"]` in the user's config: what a person chose for an
//! installed Claude Code plugin: its `userConfig` answers that are not secrets, and the network
//! its MCP servers may reach (`[claude.plugins."<id>".mcp.<server>] network`; none unless
//! granted), whether its `bin/` goes on `run_command`'s PATH (`bin = true`; a grant the
//! person reviewed at install, see [`ClaudeConfig::bin`]), and the level of the places its
//! processes may write (`classification`, a sink's level). Only the user's file holds it (a
//! project's config cannot), and a plugin's secrets never do: they are kept under
//! `$BOSUN_HOME/claude/secrets/`, which no tool reads.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// `[claude]`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ClaudeConfig {
    /// By plugin id (`name@marketplace`).
    #[serde(default)]
    pub plugins: BTreeMap<String, ClaudePluginConfig>,
}

/// `[claude.plugins."<id>"]`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ClaudePluginConfig {
    /// Its `userConfig` answers that are not secrets, by key.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub config: BTreeMap<String, toml::Value>,
    /// What a person granted its MCP servers, by the server's own name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub mcp: BTreeMap<String, ClaudeServerGrant>,
    /// Its `bin/` on `run_command`'s PATH (read-only, inside the OS sandbox). Part of the trust
    /// decision: it takes effect once the plugin is installed (reviewed) with it set, and ends
    /// when it is removed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub bin: bool,
    /// The level of the places its processes may put what they are handed, as a sink (as
    /// `[mcp.<name>] classification`): its MCP servers', and its hooks' when the OS sandbox
    /// does not keep them to their data folder. Unset: `PUBLIC`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub classification: Option<bosun_core::Classification>,
}

/// `[claude.plugins."<id>".mcp.<server>]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ClaudeServerGrant {
    /// `host:port` (or `host`, for 80 and 443) the server may reach, as `[mcp.<name>.sandbox]
    /// network` grants a configured server; the OS sandbox enforces the ports.
    #[serde(default)]
    pub network: Vec<String>,
}

impl ClaudeConfig {
    /// The non-secret answers stored for `id`, as text (`${user_config.KEY}` expands to it):
    /// a string as written, a number or boolean as TOML writes it, a list joined with `,`.
    pub fn values(&self, id: &str) -> BTreeMap<String, String> {
        self.plugins
            .get(id)
            .map(|plugin| {
                plugin
                    .config
                    .iter()
                    .map(|(key, value)| (key.clone(), text_of(value)))
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl ClaudeConfig {
    /// Whether a person grants the plugin `id` its `bin/` (`[claude.plugins."<id>"] bin`).
    pub fn bin(&self, id: &str) -> bool {
        self.plugins.get(id).is_some_and(|p| p.bin)
    }

    /// The level a person gave the plugin `id`'s processes as a sink
    /// (`[claude.plugins."<id>"] classification`), if any.
    pub fn classification(&self, id: &str) -> Option<bosun_core::Classification> {
        self.plugins.get(id).and_then(|p| p.classification)
    }

    /// The network a person granted the server `server` of the plugin `id`.
    pub fn network(&self, id: &str, server: &str) -> &[String] {
        self.plugins
            .get(id)
            .and_then(|p| p.mcp.get(server))
            .map_or(&[], |g| g.network.as_slice())
    }
}

/// A stored answer as the text it expands to.
pub fn text_of(value: &toml::Value) -> String {
    match value {
        toml::Value::String(text) => text.clone(),
        toml::Value::Array(items) => items.iter().map(text_of).collect::<Vec<_>>().join(","),
        other => other.to_string(),
    }
}
