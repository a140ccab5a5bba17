//! Hostile editors: what an editor driving `bosun acp` asks for that the person or the machine
//! did not allow. The editor is the person's, so it may answer approvals and choose the mode —
//! but only among the modes this folder and this machine allow.

use serde_json::json;

use super::Env;
use super::acp::{call, editor, responses, serve, text_of, updates};
use super::run::model_config;
use bosun_agent::scripted::Step;

#[test]
fn an_editor_cannot_lift_a_refused_folder_out_of_read_only() {
    let env = Env::new();
    let write = || {
        call(
            "create_file",
            json!({"path": "made.txt", "content": "written"}),
        )
    };
    let (_runtime, model) = serve(vec![
        write(),
        Step::text("Tried."),
        write(),
        Step::text("Tried again."),
    ]);
    env.user_config(&model_config(&model, "mode = \"full\""));
    // The person answered "no" to trusting this folder in a terminal.
    bosun_host::workspace_trust::record(&env.home(), &env.ws(), false).unwrap();
    let report = editor(
        &env,
        json!({"steps": [
            {"initialize": true},
            {"new": {}},
            {"mode": "full"},
            {"mode": "workspace-write"},
            {"prompt": "Write made.txt."},
            {"prompt": "/mode full"},
            {"prompt": "Write made.txt again."},
        ]}),
    );
    assert_eq!(
        responses(&report, "new")[0]["result"]["modes"]["currentModeId"],
        "read-only",
        "{report:#}"
    );
    for refused in responses(&report, "mode") {
        let message = refused["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("not trusted"), "{report:#}");
    }
    let said = text_of(&updates(&report, "agent_message_chunk"));
    assert!(said.contains("Mode not changed"), "{said}");
    assert!(
        updates(&report, "current_mode_update").is_empty(),
        "{report:#}"
    );
    // Neither prompt wrote anything: not on disk, not into the editor's buffers.
    assert_eq!(report["writes"], json!([]), "{report:#}");
    assert!(!env.ws().join("made.txt").exists());
}
