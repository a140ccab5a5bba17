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
