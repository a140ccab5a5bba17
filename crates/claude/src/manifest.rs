//! `.claude-plugin/plugin.json`, typed as Claude Code reads it: only `name` is required;
//! unknown top-level keys are dropped with a warning; an unknown key inside `userConfig`,
//! `channels` or an inline `monitors` entry refuses the plugin.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::ClaudeError;

/// The top-level keys Claude Code's manifest schema knows.
pub const MANIFEST_KEYS: &[&str] = &[
    "$schema",
    "name",
    "version",
    "description",
    "author",
    "homepage",
    "repository",
    "license",
    "keywords",
    "dependencies",
    "hooks",
    "commands",
    "agents",
    "skills",
    "outputStyles",
    "themes",
    "channels",
    "mcpServers",
    "lspServers",
    "monitors",
    "settings",
    "userConfig",
];

/// Who wrote a plugin or runs a marketplace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Author {
    /// Their name.
    pub name: String,
    /// Their address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    /// Their page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// One or more `./` paths (`"./x"` or `["./x", "./y"]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Paths {
    /// One path.
    One(String),
    /// Several.
    Many(Vec<String>),
}

impl Paths {
    /// The paths, in order.
    pub fn list(&self) -> Vec<&str> {
        match self {
            Self::One(p) => vec![p.as_str()],
            Self::Many(v) => v.iter().map(String::as_str).collect(),
        }
    }
}

/// The type of a `userConfig` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UserConfigType {
    /// Text.
    String,
    /// A number.
    Number,
    /// `true` or `false`.
    Boolean,
    /// A directory's path.
    Directory,
    /// A file's path.
    File,
}

/// One `userConfig` entry: asked when the plugin is enabled. Strict, as in Claude Code.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserConfigOption {
    /// Its type.
    #[serde(rename = "type")]
    pub kind: UserConfigType,
    /// The label shown.
    pub title: String,
    /// The help text shown.
    pub description: String,
    /// An empty answer is refused.
    #[serde(default)]
    pub required: bool,
    /// The value when nothing is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    /// A list of strings.
    #[serde(default)]
    pub multiple: bool,
    /// A secret: kept out of every file a model can read and out of traces.
    #[serde(default)]
    pub sensitive: bool,
    /// Least number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    /// Greatest number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
}

/// One `channels` entry (strict). Bosun reports channels as found, not supported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Channel {
    /// The MCP server it belongs to.
    pub server: String,
    /// Its title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// Its own settings.
    #[serde(default)]
    pub user_config: BTreeMap<String, UserConfigOption>,
}

/// One inline `monitors` entry (strict). Bosun refuses plugins with monitors: they are
/// persistent processes Claude Code runs unsandboxed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Monitor {
    /// Its name.
    pub name: String,
    /// What it runs.
    pub command: String,
    /// What it watches.
    #[serde(default)]
    pub description: String,
    /// `always` or `on-skill-invoke:<skill>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<String>,
}

/// A plugin's manifest.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PluginManifest {
    /// Its name (kebab-case): the namespace of its skills and commands.
    pub name: String,
    /// Its version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// One line on what it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Who wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<Author>,
    /// Its page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub homepage: Option<String>,
    /// Its source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<String>,
    /// Its licence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub license: Option<String>,
    /// Search words.
    #[serde(default)]
    pub keywords: Vec<String>,
    /// Plugins it needs enabled (listed in the review; never installed by themselves).
    #[serde(default)]
    pub dependencies: Vec<Value>,
    /// More hooks: a `./….json` path or an inline `{"<Event>": [...]}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hooks: Option<Value>,
    /// More command files or folders.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commands: Option<Paths>,
    /// More agent files or folders.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agents: Option<Paths>,
    /// More skill folders.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skills: Option<Paths>,
    /// Output styles (found, not supported).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_styles: Option<Value>,
    /// Themes (found, not supported).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub themes: Option<Value>,
    /// Channels (found, not supported).
    #[serde(default)]
    pub channels: Vec<Channel>,
    /// More MCP servers: a `./….json` path, an `.mcpb`, an inline map, or a list of those.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_servers: Option<Value>,
    /// Language servers (found, not supported).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lsp_servers: Option<Value>,
    /// Monitors: a path or inline entries (refused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monitors: Option<Value>,
    /// Settings the plugin ships (not applied: Bosun's policy is the user's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<Value>,
    /// What to ask the person when the plugin is enabled.
    #[serde(default)]
    pub user_config: BTreeMap<String, UserConfigOption>,
}

/// A manifest read, with what was dropped.
#[derive(Debug, Clone)]
pub struct ReadManifest {
    /// The manifest.
    pub manifest: PluginManifest,
    /// Unknown top-level keys, dropped as Claude Code drops them.
    pub warnings: Vec<String>,
}

/// Reads a manifest from its JSON text. Unknown top-level keys warn; an unknown key in a strict
/// object, a missing name or a wrong type refuses.
pub fn parse_manifest(text: &str) -> Result<ReadManifest, ClaudeError> {
    let value: Value = serde_json::from_str(text).map_err(|e| ClaudeError::Manifest {
        what: "plugin.json".to_owned(),
        message: e.to_string(),
    })?;
    let Value::Object(object) = value else {
        return Err(ClaudeError::Manifest {
            what: "plugin.json".to_owned(),
            message: "must be a JSON object".to_owned(),
        });
    };
    let (known, warnings) = split_known(object, MANIFEST_KEYS, "plugin.json");
    let manifest: PluginManifest =
        serde_json::from_value(Value::Object(known)).map_err(|e| ClaudeError::Manifest {
            what: "plugin.json".to_owned(),
            message: e.to_string(),
        })?;
    check_name(&manifest.name, "plugin.json")?;
    if let Some(Value::Array(items)) = &manifest.monitors {
        for item in items {
            serde_json::from_value::<Monitor>(item.clone()).map_err(|e| ClaudeError::Manifest {
                what: "plugin.json monitors".to_owned(),
                message: e.to_string(),
            })?;
        }
    }
    Ok(ReadManifest { manifest, warnings })
}

/// Keeps the `known` keys of `object`; the others become warnings naming `what`.
pub(crate) fn split_known(
    object: Map<String, Value>,
    known: &[&str],
    what: &str,
) -> (Map<String, Value>, Vec<String>) {
    let mut kept = Map::new();
    let mut warnings = Vec::new();
    for (key, value) in object {
        if key == "$schema" {
            continue;
        }
        if known.contains(&key.as_str()) {
            kept.insert(key, value);
        } else {
            warnings.push(format!(
                "{what}: unknown key `{}` ignored",
                bosun_core::escape_hidden(&key)
            ));
        }
    }
    (kept, warnings)
}

/// A plugin or marketplace name: 1–64 of `A-Za-z0-9._-`, starting with a letter or digit,
/// so it is safe in a path and in `plugin:skill`.
pub fn check_name(name: &str, what: &str) -> Result<(), ClaudeError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.as_bytes()[0].is_ascii_alphanumeric()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && !name.contains("..");
    if ok {
        Ok(())
    } else {
        Err(ClaudeError::Manifest {
            what: what.to_owned(),
            message: format!(
                "the name `{}` is not 1-64 characters of A-Z, a-z, 0-9, `.`, `_` and `-` starting with a letter or digit",
                bosun_core::escape_hidden(name)
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_top_level_keys_warn_and_strict_objects_refuse() {
        let read = parse_manifest(r#"{"name":"x","flavour":"mint","version":"1.0.0"}"#).unwrap();
        assert_eq!(read.manifest.name, "x");
        assert_eq!(read.warnings.len(), 1);
        assert!(read.warnings[0].contains("flavour"), "{:?}", read.warnings);

        let strict = parse_manifest(
            r#"{"name":"x","userConfig":{"k":{"type":"string","title":"K","description":"d","colour":"red"}}}"#,
        )
        .unwrap_err();
        assert!(strict.to_string().contains("colour"), "{strict}");
        let monitors = parse_manifest(
            r#"{"name":"x","monitors":[{"name":"m","command":"tail -f x","extra":1}]}"#,
        )
        .unwrap_err();
        assert!(monitors.to_string().contains("extra"), "{monitors}");
        assert!(parse_manifest(r#"{"version":"1"}"#).is_err());
        assert!(parse_manifest(r#"{"name":"../up"}"#).is_err());
    }
}
