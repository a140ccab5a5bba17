//! A plugin's MCP servers (`.mcp.json` and the manifest's `mcpServers`), named
//! `<plugin>:<server>` in Bosun, with `${CLAUDE_PLUGIN_ROOT}` and `${user_config.KEY}` expanded.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One MCP server as the plugin declares it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpServer {
    /// `stdio` (the default), `http`, `sse` or `ws`.
    #[serde(default = "stdio", rename = "type")]
    pub kind: String,
    /// The program (stdio).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Its environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Its address (http, sse, ws).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Headers sent to it.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
}

fn stdio() -> String {
    "stdio".to_owned()
}

impl McpServer {
    /// How the review shows it.
    pub fn describe(&self) -> String {
        match (&self.command, &self.url) {
            (Some(command), _) => {
                let mut line = bosun_core::escape_hidden(command);
                for arg in &self.args {
                    line.push(' ');
                    line.push_str(&bosun_core::escape_hidden(arg));
                }
                format!("stdio: {line}")
            }
            (None, Some(url)) => format!("{}: {}", self.kind, bosun_core::escape_hidden(url)),
            (None, None) => format!("{}: (no command or url)", self.kind),
        }
    }
}

/// Reads the servers of one `.mcp.json`-shaped value: `{"mcpServers": {...}}` or the map itself.
/// A server that cannot be read is a warning.
pub fn servers_of(
    value: &Value,
    what: &str,
    warnings: &mut Vec<String>,
) -> BTreeMap<String, McpServer> {
    let map = value.get("mcpServers").unwrap_or(value);
    let mut out = BTreeMap::new();
    let Some(object) = map.as_object() else {
        warnings.push(format!("{what}: not a map of servers: left out"));
        return out;
    };
    for (name, server) in object {
        if crate::manifest::check_name(name, what).is_err() {
            warnings.push(format!(
                "{what}: the server name `{}` is not usable: left out",
                bosun_core::escape_hidden(name)
            ));
            continue;
        }
        match serde_json::from_value::<McpServer>(server.clone()) {
            Ok(s) if s.command.is_some() || s.url.is_some() => {
                out.insert(name.clone(), s);
            }
            Ok(_) => warnings.push(format!(
                "{what}: the server `{name}` has neither command nor url: left out"
            )),
            Err(e) => warnings.push(format!("{what}: the server `{name}`: {e}: left out")),
        }
    }
    out
}

/// Expands `${CLAUDE_PLUGIN_ROOT}`, `${CLAUDE_PLUGIN_DATA}` and `${user_config.KEY}` in `text`.
/// Other `${…}` (the user's environment) are left as written: Bosun passes no environment of
/// its own to a plugin's processes.
pub fn expand(text: &str, root: &Path, data: &Path, config: &BTreeMap<String, String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return out;
        };
        let key = &after[..end];
        match key {
            "CLAUDE_PLUGIN_ROOT" => out.push_str(&root.to_string_lossy()),
            "CLAUDE_PLUGIN_DATA" => out.push_str(&data.to_string_lossy()),
            _ => match key.strip_prefix("user_config.").and_then(|k| config.get(k)) {
                Some(value) => out.push_str(value),
                None => {
                    out.push_str("${");
                    out.push_str(key);
                    out.push('}');
                }
            },
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_expand_and_others_stay() {
        let config = BTreeMap::from([("token".to_owned(), "s3".to_owned())]);
        assert_eq!(
            expand(
                "${CLAUDE_PLUGIN_ROOT}/x --t=${user_config.token} ${HOME} ${user_config.none}",
                Path::new("/p"),
                Path::new("/d"),
                &config
            ),
            "/p/x --t=s3 ${HOME} ${user_config.none}"
        );
        // One pass: a value holding a variable or shell syntax is put in as it is, never
        // expanded again (a server's arguments reach it as argv, never through a shell).
        let hostile = BTreeMap::from([(
            "dir".to_owned(),
            "${CLAUDE_PLUGIN_DATA}$(id);`id`".to_owned(),
        )]);
        assert_eq!(
            expand(
                "--dir=${user_config.dir}",
                Path::new("/p"),
                Path::new("/d"),
                &hostile
            ),
            "--dir=${CLAUDE_PLUGIN_DATA}$(id);`id`"
        );
        let mut w = Vec::new();
        let servers = servers_of(
            &serde_json::json!({"mcpServers": {"a": {"command": "python3", "args": ["s.py"]}, "b": {"type": "http"}, "../c": {"command": "x"}}}),
            ".mcp.json",
            &mut w,
        );
        assert_eq!(servers.keys().collect::<Vec<_>>(), ["a"]);
        assert_eq!(w.len(), 2, "{w:?}");
    }
}
