//! What the trace's redaction knows: secret-looking variables, those named in config, and the
//! secrets a person gave installed Claude Code plugins (kept outside every config file).

use bosun_host::Workspace;
use bosun_host::config::LoadedConfig;

#[test]
fn a_claude_plugins_secrets_are_redacted_from_traces() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let secrets = home.path().join("claude/secrets");
    std::fs::create_dir_all(&secrets).unwrap();
    std::fs::write(
        secrets.join("toolbox@team.json"),
        r#"{"api_token": "tb-0f3a9c-live", "short": "abc"}"#,
    )
    .unwrap();
    // A damaged file of another plugin does not take the others' redaction with it.
    std::fs::write(secrets.join("broken@team.json"), "{not json").unwrap();
    let root = std::fs::canonicalize(root.path()).unwrap();
    let workspace = Workspace::new(&root, &root).unwrap();
    let config = LoadedConfig::load(home.path(), &workspace).unwrap();
    let redactor = config.redactor();
    assert_eq!(
        redactor.redact_str("sent tb-0f3a9c-live to the server"),
        "sent [REDACTED:claude:toolbox@team:api_token] to the server"
    );
    assert!(
        redactor
            .names()
            .contains(&"claude:toolbox@team:api_token".to_owned())
    );
    // Values too short to redact usefully are left, as for every secret.
    assert!(!redactor.finds("abc"));
}

/// Enforcement: `McpServerConfig::secret_values` in `LoadedConfig::redactor`. The header values
/// an editor hands over with an MCP server live only in memory; once the server is part of a
/// turn's config, the trace redacts them like any secret.
#[test]
fn header_values_an_mcp_entry_holds_in_memory_are_redacted_from_traces() {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(root.path()).unwrap();
    let workspace = Workspace::new(&root, &root).unwrap();
    let mut config = LoadedConfig::load(home.path(), &workspace).unwrap();
    let mut server: bosun_host::mcp_config::McpServerConfig =
        toml::from_str("url = \"https://mcp.example.com/mcp\"\n").unwrap();
    server
        .given_headers
        .insert("X-Api-Key".to_owned(), "editor-key-7731".to_owned());
    config.user.mcp.insert("docs".to_owned(), server);
    let redactor = config.redactor();
    assert_eq!(
        redactor.redact_str("the server echoed editor-key-7731"),
        "the server echoed [REDACTED:mcp.docs]"
    );
}
