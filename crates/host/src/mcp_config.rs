//! `[mcp.<name>]` in the user's config: an MCP server whose tools Bosun offers under its own
//! policy. Only the user's file may name servers — a project's config cannot make Bosun start a
//! program. What the fields mean, and what Bosun does with the server, is in `bosun-mcp`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// How long one request to a server may take, by default.
pub const DEFAULT_MCP_TIMEOUT_MS: u64 = 60_000;

/// One configured MCP server: exactly one of `command` (stdio) or `url` (Streamable HTTP, or
/// the older HTTP+SSE transport with `transport = "sse"`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// The program to start (stdio transport), found on `PATH` when not a path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Its working directory (default: the workspace root).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// Names of this process's environment variables to pass on. Nothing else is passed but
    /// `PATH`, `HOME`, `LANG` and `TMPDIR`: never the whole environment.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    /// The endpoint (Streamable HTTP transport), `http://` or `https://`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// How a `url` server is spoken to: Streamable HTTP (the default) or the older HTTP+SSE
    /// transport (the URL is then the SSE stream's, which names where to post).
    #[serde(default, skip_serializing_if = "UrlTransport::is_default")]
    pub transport: UrlTransport,
    /// HTTP headers to send: header name → the name of the environment variable holding the
    /// value (values never live in the config file).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// Header values handed over in memory by the face that opened the session (the headers an
    /// editor passes with an HTTP or SSE server over ACP): sent on every request like
    /// `headers`, never read from or written to a file, left out of the pin's identity (only
    /// their names count) and redacted from traces ([`McpServerConfig::secret_values`]).
    #[serde(skip)]
    pub given_headers: BTreeMap<String, String>,
    /// The environment variable holding a bearer token for `Authorization`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_token_env: Option<String>,
    /// Whether the server's tool annotations (`readOnlyHint`, ...) may set the risk policy
    /// judges its tools by. Untrusted (the default), every tool is judged as `process`.
    #[serde(default)]
    pub trusted: bool,
    /// Set to `false` to keep the entry without using the server.
    #[serde(default = "enabled_by_default")]
    pub enabled: bool,
    /// How long one request may take, in milliseconds (default 60,000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// What a command server's process may use beyond the workspace (it starts in the OS
    /// sandbox like every child): `[mcp.<name>.sandbox]`.
    #[serde(default, skip_serializing_if = "McpSandbox::is_empty")]
    pub sandbox: McpSandbox,
    /// The level of data the server may be sent (`PUBLIC` by default): a session holding data
    /// above it cannot call the server's tools without a person (write-down protection).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub classification: Option<bosun_core::Classification>,
    /// Set for a server an installed plugin provides (never read from a config file: only the
    /// plugin layer makes one), with what it runs in and the values it is given.
    #[serde(skip)]
    pub provided: Option<ProvidedServer>,
}

/// How a `url` server is reached.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum UrlTransport {
    /// Streamable HTTP (MCP 2025-03-26 and later): one endpoint, POST and GET.
    #[default]
    StreamableHttp,
    /// The HTTP+SSE transport of MCP 2024-11-05: a GET opens an event stream whose first
    /// `endpoint` event names the URL messages are POSTed to; answers arrive on the stream.
    Sse,
}

impl UrlTransport {
    /// Whether it is Streamable HTTP (left out of a written config).
    pub fn is_default(&self) -> bool {
        *self == Self::StreamableHttp
    }
}

impl McpServerConfig {
    /// The secret values this entry carries in memory (header values an editor gave, a
    /// plugin's expanded secrets), for the trace's redaction.
    pub fn secret_values(&self) -> impl Iterator<Item = &String> {
        self.given_headers
            .values()
            .chain(self.provided.iter().flat_map(|p| &p.secrets))
    }
}

/// What a plugin-provided server (a Claude Code plugin's `.mcp.json`) is given besides its
/// command line. Such a server is named `<plugin>:<server>` ([`plugin_server_name`]), a name
/// no `[mcp.<name>]` entry can take, and runs confined to its plugin: it reads the plugin's
/// folder and the workspace, writes only its data folder, and reaches no network.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProvidedServer {
    /// The plugin's id (`name@marketplace`).
    pub plugin: String,
    /// The plugin's folder (`${CLAUDE_PLUGIN_ROOT}`): readable.
    pub root: PathBuf,
    /// The plugin's data folder (`${CLAUDE_PLUGIN_DATA}`): its one writable folder, and its
    /// `HOME`.
    pub data: PathBuf,
    /// Where the label of the data folder is kept (`crate::data_folder`): raised by every call's
    /// session, carried by every answer.
    pub label: PathBuf,
    /// Environment values, expanded (they may hold the plugin's secrets: never shown, never
    /// hashed).
    pub env: BTreeMap<String, String>,
    /// HTTP header values, expanded (a URL server's; secrets too).
    pub headers: BTreeMap<String, String>,
    /// The server as a person reviews it and the approval's identity covers it: its command
    /// line or URL, environment and headers, with the plugin's folders and non-secret values
    /// expanded and its secrets left as the `${user_config.KEY}` it wrote.
    pub declared: String,
    /// The secret values it is given, to keep out of traces.
    pub secrets: Vec<String>,
}

/// `[mcp.<name>.sandbox]`: the paths and hosts a command server's process is given.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct McpSandbox {
    /// Absolute paths it may read (its own installation, say).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read: Vec<PathBuf>,
    /// Absolute paths it may write; never a protected path ([`bosun_policy::is_protected`]):
    /// such a grant is a config error, as it could do nothing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub write: Vec<PathBuf>,
    /// Hosts it may reach, `host` or `host:port` (ports 80 and 443 when none is given); none
    /// by default.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub network: Vec<String>,
}

impl McpSandbox {
    /// Whether it grants nothing.
    pub fn is_empty(&self) -> bool {
        self.read.is_empty() && self.write.is_empty() && self.network.is_empty()
    }

    /// The TCP ports its hosts name (80 and 443 for a host without a port).
    pub fn ports(&self) -> Vec<u16> {
        let mut ports: Vec<u16> = self
            .network
            .iter()
            .filter_map(|h| bosun_core::Authority::parse(h).ok())
            .flat_map(|a| a.port.map_or_else(|| vec![80, 443], |p| vec![p]))
            .collect();
        ports.sort_unstable();
        ports.dedup();
        ports
    }
}

fn enabled_by_default() -> bool {
    true
}

/// Whether `name` may name a server: 1–32 of `a-z`, `0-9`, `-`, starting with a letter. It
/// becomes part of tool names and policy actions.
pub fn valid_server_name(name: &str) -> bool {
    (1..=32).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// The name of `server` of the plugin `plugin`: `<plugin>:<server>`, when both are valid
/// server names ([`valid_server_name`]). Only plugin-provided servers carry a `:`, so no
/// `[mcp.<name>]` entry can take or shadow one.
pub fn plugin_server_name(plugin: &str, server: &str) -> Option<String> {
    (valid_server_name(plugin) && valid_server_name(server)).then(|| format!("{plugin}:{server}"))
}

/// Whether `name` is a plugin-provided server's name: exactly one `:` between two valid
/// server names.
pub fn valid_plugin_server_name(name: &str) -> bool {
    name.split_once(':')
        .is_some_and(|(plugin, server)| plugin_server_name(plugin, server).is_some())
}

/// Checks every `[mcp.<name>]` entry; the error names the key and says what to write.
pub fn check_mcp_configs(
    servers: &BTreeMap<String, McpServerConfig>,
) -> Result<(), (String, String)> {
    for (name, server) in servers {
        let key = format!("mcp.{name}");
        if !valid_server_name(name) {
            return Err((
                key,
                "a server name is 1-32 of a-z, 0-9 and -, starting with a letter (it becomes part of tool names)".to_owned(),
            ));
        }
        match (&server.command, &server.url) {
            (Some(_), Some(_)) => {
                return Err((
                    key,
                    "set either command (stdio) or url (HTTP), not both".to_owned(),
                ));
            }
            (None, None) => {
                return Err((
                    key,
                    "set command = \"program\" (stdio) or url = \"https://...\" (HTTP)".to_owned(),
                ));
            }
            (Some(command), None) => {
                if command.trim().is_empty() {
                    return Err((format!("{key}.command"), "the command is empty".to_owned()));
                }
                if !server.headers.is_empty() || server.bearer_token_env.is_some() {
                    return Err((
                        key,
                        "headers and bearer_token_env are for url servers".to_owned(),
                    ));
                }
                if !server.transport.is_default() {
                    return Err((
                        format!("{key}.transport"),
                        "transport is for url servers (a command server speaks stdio)".to_owned(),
                    ));
                }
            }
            (None, Some(url)) => {
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err((
                        format!("{key}.url"),
                        format!("`{url}` is not an http:// or https:// URL"),
                    ));
                }
                if !server.args.is_empty() || server.cwd.is_some() || !server.env.is_empty() {
                    return Err((key, "args, cwd and env are for command servers".to_owned()));
                }
            }
        }
        if !server.sandbox.is_empty() && server.command.is_none() {
            return Err((
                format!("{key}.sandbox"),
                "sandbox is for command servers: a url server runs elsewhere".to_owned(),
            ));
        }
        for path in server.sandbox.read.iter().chain(&server.sandbox.write) {
            if !path.is_absolute() {
                return Err((
                    format!("{key}.sandbox"),
                    format!("`{}` is relative: give an absolute path", path.display()),
                ));
            }
        }
        // The launcher keeps every protected path read-only for the child whatever it is
        // granted, so such a grant would be accepted and do nothing: say so now.
        for path in &server.sandbox.write {
            if bosun_policy::is_protected(&path.to_string_lossy()) {
                return Err((
                    format!("{key}.sandbox.write"),
                    format!(
                        "`{}` is a protected path (.git, .bosun, .agents, AGENTS.md and the like, anywhere): no process Bosun starts may write it, so this grant would do nothing; remove it (change such files yourself)",
                        path.display()
                    ),
                ));
            }
        }
        for host in &server.sandbox.network {
            if let Err(e) = bosun_core::Authority::parse(host) {
                return Err((
                    format!("{key}.sandbox.network"),
                    format!("`{host}` is not a host or host:port: {e}"),
                ));
            }
        }
        if server.timeout_ms == Some(0) {
            return Err((format!("{key}.timeout_ms"), "must be at least 1".to_owned()));
        }
        for var in server
            .env
            .iter()
            .chain(server.headers.values())
            .chain(server.bearer_token_env.iter())
        {
            if var.is_empty() || var.contains(['=', '\0']) {
                return Err((
                    key.clone(),
                    format!("`{var}` is not an environment variable name"),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command_server(write: &[&str]) -> BTreeMap<String, McpServerConfig> {
        let toml = format!(
            "command = \"srv\"\n[sandbox]\nwrite = {:?}\n",
            write.iter().map(|w| w.to_string()).collect::<Vec<_>>()
        );
        let config: McpServerConfig = toml::from_str(&toml).unwrap();
        BTreeMap::from([("peer".to_owned(), config)])
    }

    /// Enforcement: `valid_server_name` in `check_mcp_configs`. A config file can never name
    /// a server the way the plugin layer names a plugin's (`<plugin>:<server>`), so it can
    /// neither take one's pin nor shadow it.
    #[test]
    fn only_the_plugin_layer_names_a_server_with_a_colon() {
        let config: McpServerConfig = toml::from_str("command = \"srv\"\n").unwrap();
        for name in ["toolbox:echo", "toolbox_echo", "plugin_toolbox_echo"] {
            let servers = BTreeMap::from([(name.to_owned(), config.clone())]);
            let (key, _) = check_mcp_configs(&servers).expect_err(name);
            assert_eq!(key, format!("mcp.{name}"));
        }
        // `provided` is never read from a file.
        let read: McpServerConfig =
            toml::from_str("command = \"srv\"\nprovided = { plugin = \"x\" }\n").unwrap_or(config);
        assert!(read.provided.is_none());
        assert_eq!(
            plugin_server_name("toolbox", "echo").as_deref(),
            Some("toolbox:echo")
        );
        assert!(valid_plugin_server_name("toolbox:echo"));
        for bad in [
            "toolbox",
            "a:b:c",
            "Tool:echo",
            "toolbox:",
            ":echo",
            "tool_box:echo",
        ] {
            assert!(!valid_plugin_server_name(bad), "{bad}");
        }
    }

    /// Enforcement: the protected-path check in `check_mcp_configs`. Every spelling of a
    /// protected directory or file, at any depth, is refused naming the key and the path.
    #[test]
    fn a_sandbox_write_grant_to_a_protected_path_is_refused_at_load() {
        for path in [
            "/home/me/project/.git",
            "/home/me/project/.git/hooks",
            "/srv/vendor/lib/.GIT/config",
            "/home/me/.bosun",
            "/home/me/project/.agents/skills",
            "/home/me/project/.husky",
            "/home/me/project/.vscode/tasks.json",
            "/home/me/project/.idea",
            "/home/me/project/.envrc",
            "/home/me/project/.gitmodules",
            "/home/me/project/.pre-commit-config.yaml",
            "/home/me/project/AGENTS.md",
        ] {
            let (key, message) =
                check_mcp_configs(&command_server(&["/tmp/out", path])).expect_err(path);
            assert_eq!(key, "mcp.peer.sandbox.write", "{path}");
            assert!(
                message.contains(path) && message.contains("remove it"),
                "{path}: {message}"
            );
        }
        // Near misses are ordinary grants.
        for path in [
            "/tmp/out",
            "/home/me/project/.github",
            "/home/me/gitdir",
            "/srv/agents",
        ] {
            assert_eq!(
                check_mcp_configs(&command_server(&[path])),
                Ok(()),
                "{path}"
            );
        }
    }
}
