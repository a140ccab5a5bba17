//! bosun-host's integration tests: one binary, a module per concern.

// Helpers in a test binary may panic like the tests themselves: a failed unwrap is a failed
// test (clippy.toml allows it only inside `#[test]` functions).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod bosun_home;
mod builtin;
mod checkpoint;
mod chokepoint;
mod disclosure;
mod flow;
mod hostile_files;
mod instance_labels;
mod instance_slots;
mod js_plugins;
mod managed;
mod plugin_logs;
mod plugin_preopens;
mod redaction;
mod registry_install;
mod remembered;
mod skills;
mod support;
mod telemetry;

/// A tool context over the workspace `root`, as the chokepoint makes one, with nothing granted.
pub fn builtin_context(root: &std::path::Path) -> bosun_host::ToolContext {
    use std::sync::Arc;
    bosun_host::ToolContext {
        workspace: Arc::new(bosun_host::Workspace::new(root, root).unwrap()),
        cancel: tokio_util::sync::CancellationToken::new(),
        limits: bosun_core::Limits::default(),
        env: Arc::default(),
        launcher: Arc::new(bosun_launch::Launcher::new(Default::default())),
        broker: bosun_host::tool::Broker(Arc::new(bosun_host::NonInteractive)),
        run: Arc::new(bosun_host::trace::RunInfo {
            run_id: "run-1".to_owned(),
            parent_run_id: None,
            runs_dir: None,
            redactor: Arc::new(bosun_core::Redactor::new(Vec::<(String, String)>::new())),
            observers: Vec::new(),
            next_sequence: Arc::default(),
        }),
        session: Arc::new(bosun_host::Session::new("test-session")),
        call_id: "call-1".to_owned(),
        logs: Default::default(),
        reads: bosun_host::tool::ReadJudge::unrestricted(),
        read_files: Default::default(),
        instance_label: Default::default(),
        granted: Vec::new(),
        judge: None,
    }
}
