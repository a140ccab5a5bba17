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

/// The collector's level is one of the four, read strictly (a typo is a config error, never
/// `PUBLIC` or more), `PUBLIC` when left out; a project has no `[telemetry]` to raise it with.
#[test]
fn the_collectors_level_is_parsed_strictly_and_public_by_default() {
    let on = "[telemetry]\ntraces = { otlp-http = { endpoint = \"http://127.0.0.1:4318/v1/traces\" } }\n";
    let level = |config: &LoadedConfig| {
        config
            .telemetry()
            .resolve(&|_| None)
            .unwrap()
            .classification
    };
    assert_eq!(
        level(&load(Some(on), None).unwrap()),
        bosun_core::Classification::Public
    );
    let labelled = format!("{on}classification = \"CONFIDENTIAL\"\n");
    assert_eq!(
        level(&load(Some(&labelled), None).unwrap()),
        bosun_core::Classification::Confidential
    );
    let typo = format!("{on}classification = \"restricted\"\n");
    let error = load(Some(&typo), None).unwrap_err();
    assert!(error.contains("RESTRICTED"), "{error}");
    let project = load(None, Some("[telemetry]\nclassification = \"RESTRICTED\"\n")).unwrap_err();
    assert!(project.contains("a project cannot"), "{project}");
}

/// Watches a trace: as lines when `lines`, else as envelopes.
#[derive(Default)]
struct Watcher {
    lines: bool,
    seen_lines: std::sync::Mutex<Vec<String>>,
    seen: std::sync::Mutex<Vec<bosun_core::Envelope>>,
}

impl bosun_host::trace::Observer for Watcher {
    fn observe(&self, envelope: &bosun_core::Envelope) {
        self.seen.lock().unwrap().push(envelope.clone());
    }
    fn reads_lines(&self) -> bool {
        self.lines
    }
    fn observe_line(&self, line: &[u8]) {
        self.seen_lines
            .lock()
            .unwrap()
            .push(String::from_utf8(line.to_vec()).unwrap());
    }
}

/// The exporter takes a run's recorded events as the lines the trace writes (projected later,
/// on its own thread): each line is the envelope another observer gets, redacted the same way,
/// and live events still come as envelopes.
#[test]
fn a_line_observer_gets_the_written_lines_redacted_and_live_events_typed() {
    use bosun_core::{Event, Redactor};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let lines = Arc::new(Watcher {
        lines: true,
        ..Watcher::default()
    });
    let typed = Arc::new(Watcher::default());
    let redactor = Arc::new(Redactor::new([("T_KEY", "sk-line-secret-value")]));
    let trace = bosun_host::trace::Trace::create(dir.path(), "run-lines".into(), None, redactor)
        .unwrap()
        .observe(lines.clone())
        .observe(typed.clone());
    trace.record(Event::RunStarted {
        command: "test".into(),
        workspace: "/w".into(),
        mode: "workspace-write".into(),
        sandbox: String::new(),
        level: Default::default(),
    });
    trace.record(Event::ToolProposed {
        call_id: "c1".into(),
        tool: "read_file".into(),
        input: serde_json::json!({"path": "sk-line-secret-value"}),
    });
    trace.record(Event::ModelText {
        step: 1,
        text: "streamed".into(),
    });
    trace.finish().unwrap();
    let written = std::fs::read_to_string(trace.path().unwrap()).unwrap();
    let seen_lines = lines.seen_lines.lock().unwrap().clone();
    assert_eq!(seen_lines, written.lines().collect::<Vec<_>>());
    assert!(!written.contains("sk-line-secret-value"), "{written}");
    let typed_seen = typed.seen.lock().unwrap();
    let as_lines: Vec<String> = typed_seen
        .iter()
        .filter(|e| !e.event.is_live())
        .map(|e| serde_json::to_string(e).unwrap())
        .collect();
    assert_eq!(seen_lines, as_lines);
    let live_to_lines = lines.seen.lock().unwrap();
    assert_eq!(live_to_lines.len(), 1);
    assert!(matches!(live_to_lines[0].event, Event::ModelText { .. }));
}
