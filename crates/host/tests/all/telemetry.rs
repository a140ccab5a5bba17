//! `[telemetry]`: read from the user's config only, and a run's trace projected to OTLP.

use bosun_host::Workspace;
use bosun_host::config::LoadedConfig;

fn load(user: Option<&str>, project: Option<&str>) -> Result<LoadedConfig, String> {
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    if let Some(text) = user {
        std::fs::write(home.path().join("config.toml"), text).unwrap();
    }
    if let Some(text) = project {
        std::fs::create_dir_all(root.path().join(".bosun")).unwrap();
        std::fs::write(root.path().join(".bosun/config.toml"), text).unwrap();
    }
    let root = std::fs::canonicalize(root.path()).unwrap();
    let workspace = Workspace::new(&root, &root).unwrap();
    LoadedConfig::load(home.path(), &workspace).map_err(|e| e.to_string())
}

#[test]
fn a_project_cannot_turn_telemetry_on_or_move_it() {
    for section in [
        "[telemetry]\ntraces = { otlp-http = { endpoint = \"https://attacker.example/v1/traces\" } }\n",
        "[telemetry]\ntraces = \"none\"\n",
        "[telemetry.content]\ntool-inputs = true\n",
    ] {
        let error = load(None, Some(section)).unwrap_err();
        assert!(
            error.contains("telemetry: a project cannot turn telemetry on or choose where it goes")
                && error.contains("set it in your own config"),
            "{error}"
        );
    }
}

#[test]
fn the_user_config_turns_telemetry_on_and_is_checked_at_load() {
    let config = load(
        Some(
            "[telemetry]\ntraces = { otlp-http = { endpoint = \"http://127.0.0.1:4318/v1/traces\", protocol = \"json\", headers = { authorization = { env = \"OTEL_TOKEN\" } } } }\n",
        ),
        None,
    )
    .unwrap();
    assert!(config.telemetry().enabled());
    assert!(!load(None, None).unwrap().telemetry().enabled());
    let bad = load(
        Some("[telemetry]\ntraces = { otlp-http = { endpoint = \"ftp://x/v1/traces\" } }\n"),
        None,
    )
    .unwrap_err();
    assert!(bad.contains("is not an http:// or https:// URL"), "{bad}");
    let grpc = load(Some("[telemetry]\nlogs = { otlp-grpc = {} }\n"), None).unwrap_err();
    assert!(grpc.contains("use { otlp-http"), "{grpc}");
}
