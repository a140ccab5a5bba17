//! The MCP servers an editor passes with `session/new` or `session/load`: added as
//! `[mcp.<name>]` servers are (run in the OS sandbox, each tool judged by the chokepoint), and —
//! like those — offered only once the person approved their tools exactly as listed, which Bosun
//! asks through the editor (`session/request_permission`) before the first turn that would
//! offer them, and pins. A changed server is asked about again.
//!
//! Servers over stdio, Streamable HTTP and the older HTTP+SSE transport are taken. The header
//! values an editor passes with a URL server are held in memory only: sent on every request,
//! redacted from the traces like any secret, never written (the pin names the headers, not
//! their values). What Bosun cannot honour is said, never silently dropped: environment values
//! Bosun's own environment does not hold, a header that cannot be sent, and names that are not
//! valid `[mcp.<name>]` names or that a server of the user's config already uses.

use std::path::Path;
use std::sync::Arc;

use agent_client_protocol::v1::schema::{
    HttpHeader, McpServer, PermissionOption, PermissionOptionKind, RequestPermissionOutcome,
    RequestPermissionRequest, SessionId, SessionUpdate, ToolCall, ToolCallStatus, ToolCallUpdate,
    ToolCallUpdateFields, ToolKind,
};
use bosun_host::config::LoadedConfig;
use bosun_host::mcp_config::{McpServerConfig, UrlTransport, valid_server_name};
use bosun_mcp::client::ServerReview;
use bosun_mcp::pins::{PinStore, identity};

use crate::client::ClientLink;
use crate::updates::{fenced, safe, text_content};

/// The option that approves a server's tools.
pub const APPROVE: &str = "approve";
/// The option that leaves them out.
pub const DECLINE: &str = "decline";

/// The servers an editor passed that Bosun can run, as config entries, and what it could not
/// take as given.
pub fn from_editor(
    servers: &[McpServer],
    user: &LoadedConfig,
) -> (Vec<(String, McpServerConfig)>, Vec<String>) {
    let mut taken = Vec::new();
    let mut notes = Vec::new();
    for server in servers {
        let (name, config) = match server {
            McpServer::Stdio(stdio) => {
                // A variable is passed on by name when Bosun's own environment holds the same
                // value: the editor cannot hand a server values the person did not set for Bosun.
                let mut env = Vec::new();
                for variable in &stdio.env {
                    if std::env::var(&variable.name).is_ok_and(|own| own == variable.value) {
                        env.push(variable.name.clone());
                    } else {
                        notes.push(format!(
                            "MCP server `{}`: {} is not passed (Bosun passes only variables its own environment holds with the same value); set it where the editor starts `bosun acp`",
                            stdio.name,
                            bosun_core::escape_hidden(&variable.name)
                        ));
                    }
                }
                (
                    stdio.name.clone(),
                    McpServerConfig {
                        command: Some(stdio.command.display().to_string()),
                        args: stdio.args.clone(),
                        env,
                        ..empty_config()
                    },
                )
            }
            McpServer::Http(http) => (
                http.name.clone(),
                McpServerConfig {
                    url: Some(http.url.clone()),
                    given_headers: given_headers(&http.name, &http.headers, &mut notes),
                    ..empty_config()
                },
            ),
            McpServer::Sse(sse) => (
                sse.name.clone(),
                McpServerConfig {
                    url: Some(sse.url.clone()),
                    transport: UrlTransport::Sse,
                    given_headers: given_headers(&sse.name, &sse.headers, &mut notes),
                    ..empty_config()
                },
            ),
            _ => {
                notes.push(
                    "an MCP server of a transport Bosun does not know is left out".to_owned(),
                );
                continue;
            }
        };
        if !valid_server_name(&name) {
            notes.push(format!(
                "MCP server `{}` is left out: a name is 1–32 of a-z, 0-9 and -, starting with a letter",
                bosun_core::escape_hidden(&name)
            ));
            continue;
        }
        let one = std::collections::BTreeMap::from([(name.clone(), config.clone())]);
        if let Err((key, message)) = bosun_host::mcp_config::check_mcp_configs(&one) {
            notes.push(format!(
                "MCP server `{name}` from the editor is left out: {key}: {}",
                bosun_core::escape_hidden(&message)
            ));
            continue;
        }
        // The machine's managed policy allows MCP servers by name and identity: what it does
        // not allow from the user's config it does not allow from an editor either.
        if let Some(managed) = &user.managed
            && let Err(refusal) = managed.check_mcp(&one)
        {
            notes.push(format!(
                "MCP server `{name}` from the editor is left out: the managed policy does not allow it ({}: {})",
                refusal.rule, refusal.message
            ));
            continue;
        }
        if user.user.mcp.contains_key(&name) {
            notes.push(format!(
                "MCP server `{name}` from the editor is left out: [mcp.{name}] of your config already uses the name"
            ));
            continue;
        }
        taken.push((name, config));
    }
    (taken, notes)
}

/// The header values an editor gave a URL server, kept in memory (sent on every request,
/// redacted from traces, never written): a name that is not an HTTP header name, or a value
/// that cannot be sent in one, is left out with a note that never shows the value.
fn given_headers(
    server: &str,
    headers: &[HttpHeader],
    notes: &mut Vec<String>,
) -> std::collections::BTreeMap<String, String> {
    let mut given = std::collections::BTreeMap::new();
    for header in headers {
        let name_ok = http_header_name(&header.name);
        let value_ok = header
            .value
            .bytes()
            .all(|b| b == b'\t' || (0x20..0x7f).contains(&b) || b >= 0x80)
            && !header.value.is_empty();
        if name_ok && value_ok {
            given.insert(header.name.clone(), header.value.clone());
        } else {
            notes.push(format!(
                "MCP server `{}`: header {} is not sent ({}); fix it in the editor's settings",
                bosun_core::escape_hidden(server),
                bosun_core::escape_hidden(&header.name),
                if name_ok {
                    "its value cannot be sent in an HTTP header"
                } else {
                    "not an HTTP header name"
                }
            ));
        }
    }
    given
}

/// Whether `name` is an HTTP header name (a token: RFC 9110 §5.6.2).
fn http_header_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// A config entry with nothing set (every field at its default).
fn empty_config() -> McpServerConfig {
    McpServerConfig {
        command: None,
        args: Vec::new(),
        cwd: None,
        env: Vec::new(),
        url: None,
        transport: UrlTransport::StreamableHttp,
        headers: std::collections::BTreeMap::new(),
        given_headers: std::collections::BTreeMap::new(),
        bearer_token_env: None,
        trusted: false,
        enabled: true,
        timeout_ms: None,
        sandbox: bosun_host::mcp_config::McpSandbox::default(),
        classification: None,
        provided: None,
    }
}

/// Whether `name` with `config` is approved as it is now.
pub fn approved(home: &Path, name: &str, config: &McpServerConfig) -> bool {
    PinStore::load(home)
        .ok()
        .and_then(|pins| {
            pins.servers
                .get(name)
                .map(|pin| pin.identity == identity(config))
        })
        .unwrap_or(false)
}

/// Starts the server, lists its tools (the step `bosun mcp trust` takes,
/// [`ServerReview::list`]), asks the person in the editor to approve them exactly as listed and
/// pins them when they do. Returns what to tell the person. With `guard` (why, the session's
/// labels), the question's URLs are withheld, as everywhere the editor draws.
pub async fn ask_and_pin(
    link: &ClientLink,
    session: &SessionId,
    config: &LoadedConfig,
    root: &Path,
    name: &str,
    server_config: &McpServerConfig,
    guard: Option<&str>,
) -> Result<String, String> {
    let launcher = Arc::new(
        bosun_launch::Launcher::new(config.user.sandbox.clone())
            .private(&config.home)
            .cache_in(config.home.join("cache")),
    );
    let reviewed = ServerReview::list(name, server_config, root, &config.home, launcher)
        .await
        .map_err(|e| format!("MCP server `{name}` could not be listed: {e}"))?;
    let mut review = Vec::new();
    for tool in &reviewed.tools {
        match &tool.offered {
            None => review.push(format!(
                "✗ {} — not offered: {}",
                bosun_core::escape_hidden(&tool.name),
                bosun_core::escape_hidden(tool.refused.as_deref().unwrap_or_default())
            )),
            Some((offered_as, pinned)) => {
                review.push(format!("• {offered_as}\n{}", pinned.review()));
            }
        }
    }
    if !server_config.trusted {
        review.push(
            "Every tool is judged by policy as `process` risk (the server is not marked trusted)."
                .to_owned(),
        );
    }
    // The server's own words (its tools' descriptions) are shown as code, not rendered: a
    // description cannot hide a part of itself from the person (an HTML comment, a fence).
    let review = review.join("\n");
    let call_id = format!("mcp-approval-{name}");
    let title = safe(
        &format!(
            "Offer the {} tool(s) of MCP server `{name}` ({}) to the model?",
            reviewed.count(),
            server_config
                .command
                .as_deref()
                .or(server_config.url.as_deref())
                .unwrap_or_default()
        ),
        guard,
    );
    link.update(
        session,
        SessionUpdate::ToolCall(
            ToolCall::new(call_id.clone(), title.clone())
                .kind(ToolKind::Other)
                .status(ToolCallStatus::Pending)
                .content(vec![text_content(fenced("", &review), guard)]),
        ),
    );
    let request = RequestPermissionRequest::new(
        session.clone(),
        ToolCallUpdate::new(
            call_id.clone(),
            ToolCallUpdateFields::new()
                .title(title)
                .content(vec![text_content(fenced("", &review), guard)]),
        ),
        vec![
            PermissionOption::new(
                APPROVE,
                "Approve these tools exactly as listed",
                PermissionOptionKind::AllowAlways,
            ),
            PermissionOption::new(
                DECLINE,
                "Do not offer them",
                PermissionOptionKind::RejectOnce,
            ),
        ],
    );
    let answer = link.request_permission(request).await;
    let approved = matches!(
        answer.as_ref().map(|r| &r.outcome),
        Ok(RequestPermissionOutcome::Selected(selected)) if &*selected.option_id.0 == APPROVE
    );
    let status = if approved {
        ToolCallStatus::Completed
    } else {
        ToolCallStatus::Failed
    };
    link.update(
        session,
        SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            call_id,
            ToolCallUpdateFields::new().status(status),
        )),
    );
    if !approved {
        return Err(format!(
            "MCP server `{name}`: not approved, so its tools are not offered in this session"
        ));
    }
    let count = reviewed.record(&config.home).map_err(|e| e.to_string())?;
    Ok(format!("approved {count} tool(s) of MCP server `{name}`"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::{McpServerHttp, McpServerStdio};

    /// Enforcement: the managed check in `from_editor`. An editor passing a server the managed
    /// policy does not allow — an unknown name, or an allowed name with another command or URL —
    /// gets it left out with the rule named; the allowed one is taken.
    #[test]
    fn an_editor_server_the_managed_policy_does_not_allow_is_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let root = dir.path().join("ws");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&root).unwrap();
        let managed = dir.path().join("requirements.toml");
        std::fs::write(
            &managed,
            "[[mcp.allowed]]\nname = \"docs\"\ncommand = \"/usr/local/bin/docs-mcp\"\n\n[[mcp.allowed]]\nname = \"search\"\nurl = \"https://mcp.example.com/mcp\"\n",
        )
        .unwrap();
        let root = std::fs::canonicalize(&root).unwrap();
        let workspace = bosun_host::Workspace::new(&root, &root).unwrap();
        let config = LoadedConfig::load_with(&home, &workspace, Some(&managed)).unwrap();
        let stdio = |name: &str, command: &str| {
            McpServer::Stdio(McpServerStdio::new(name, std::path::PathBuf::from(command)))
        };
        let http = |name: &str, url: &str| McpServer::Http(McpServerHttp::new(name, url));
        let (taken, notes) = from_editor(
            &[
                stdio("docs", "/usr/local/bin/docs-mcp"),
                stdio("docs2", "/usr/local/bin/docs-mcp"),
                stdio("search", "/tmp/evil-mcp"),
                http("search", "https://attacker.example/mcp"),
            ],
            &config,
        );
        let names: Vec<&str> = taken.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(names, ["docs"], "{notes:?}");
        assert_eq!(notes.len(), 3, "{notes:?}");
        for note in &notes {
            assert!(
                note.contains("the managed policy does not allow it")
                    && note.contains("requirements.toml"),
                "{note}"
            );
        }
    }

    /// An HTTP and an SSE server from the editor are taken with their header values held in
    /// memory (what the transport sends); a header that cannot be sent is left out with a note
    /// that never shows its value, and a URL that is not http(s) leaves the server out.
    #[test]
    fn editor_url_servers_keep_their_header_values_in_memory_only() {
        use agent_client_protocol::v1::schema::{McpServerHttp, McpServerSse};
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let root = dir.path().join("ws");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&root).unwrap();
        let root = std::fs::canonicalize(&root).unwrap();
        let workspace = bosun_host::Workspace::new(&root, &root).unwrap();
        let config = LoadedConfig::load(&home, &workspace).unwrap();
        let key = HttpHeader::new("X-Api-Key", "editor-key-31337");
        let (taken, notes) = from_editor(
            &[
                McpServer::Http(
                    McpServerHttp::new("web", "https://mcp.example.com/mcp")
                        .headers(vec![key.clone()]),
                ),
                McpServer::Sse(
                    McpServerSse::new("old", "http://127.0.0.1:9/sse").headers(vec![
                        key.clone(),
                        HttpHeader::new("X-Broken", "line\nbreak-secret-value"),
                        HttpHeader::new("Bad Name", "another-secret-value"),
                    ]),
                ),
                McpServer::Sse(McpServerSse::new("local", "file:///etc/passwd")),
            ],
            &config,
        );
        let names: Vec<&str> = taken.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(names, ["web", "old"], "{notes:?}");
        for (_, server) in &taken {
            assert_eq!(
                server.given_headers,
                std::collections::BTreeMap::from([(
                    "X-Api-Key".to_owned(),
                    "editor-key-31337".to_owned()
                )])
            );
            assert!(server.headers.is_empty(), "no variable is named");
        }
        assert_eq!(taken[0].1.transport, UrlTransport::StreamableHttp);
        assert_eq!(taken[1].1.transport, UrlTransport::Sse);
        assert_eq!(notes.len(), 3, "{notes:?}");
        assert!(notes[0].contains("X-Broken") && notes[1].contains("Bad Name"));
        assert!(notes[2].contains("`local`") && notes[2].contains("file:///etc/passwd"));
        for note in &notes {
            assert!(
                !note.contains("secret-value"),
                "a value is never shown: {note}"
            );
        }
        // The pin's identity names the headers, never their values.
        let mut other = taken[0].1.clone();
        other
            .given_headers
            .insert("X-Api-Key".to_owned(), "another-value".to_owned());
        assert_eq!(identity(&taken[0].1), identity(&other));
        other
            .given_headers
            .insert("X-More".to_owned(), "v".to_owned());
        assert_ne!(identity(&taken[0].1), identity(&other));
    }
}
