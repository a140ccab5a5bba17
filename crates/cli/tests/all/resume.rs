//! A session's labels survive the end of the process: a conversation carried on — `bosun run
//! --resume`, an editor's `session/load` — starts at the level its history holds and names what
//! raised it, so what an earlier turn read cannot be written down by a later one. A session
//! stored without labels (by an older Bosun) is carried on at the top level, never `PUBLIC`.

use bosun_agent::scripted::Step;
use serde_json::{Value, json};

use super::acp::{call, editor, responses, updates};
use super::run::{model_config, serve};
use super::{Env, code, stderr};

/// What the labelled file holds.
const KEY: &str = "resume-key-7c2f-heron";

/// `secrets/**` is `RESTRICTED`, `public/**` is `PUBLIC`; `extra` goes in `[classification]`.
fn labels(extra: &str) -> String {
    format!(
        "[classification]\n{extra}\n[[classification.paths]]\nglob = \"secrets/**\"\nlevel = \"RESTRICTED\"\n\n[[classification.paths]]\nglob = \"public/**\"\nlevel = \"PUBLIC\"\n"
    )
}

fn workspace() -> Env {
    let env = Env::new();
    std::fs::create_dir_all(env.ws().join("secrets")).unwrap();
    std::fs::create_dir_all(env.ws().join("public")).unwrap();
    std::fs::write(env.ws().join("secrets/key.txt"), format!("{KEY}\n")).unwrap();
    env
}

/// The trace of the last run, as `bosun inspect --json` gives its envelopes.
fn last_trace(env: &Env) -> Vec<Value> {
    let out = env.bosun(&["inspect", "last", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn session_file(env: &Env) -> std::path::PathBuf {
    let sessions: Vec<_> = std::fs::read_dir(env.home().join("sessions"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    sessions[0].clone()
}

/// Run 1 writes `public/before.txt` (allowed: the session holds nothing yet), reads the
/// `RESTRICTED` key and ends; `between` changes the stored session; run 2, `--resume last`,
/// writes the key to `public/leak.txt`. Returns run 2's trace and its stderr.
fn resume_and_write_down(between: impl FnOnce(&Env)) -> (Env, Vec<Value>, String) {
    let env = workspace();
    let (_runtime, server) = serve([
        Step::call(
            "create_file",
            json!({"path": "public/before.txt", "content": "nothing secret"}),
        ),
        Step::call("read_file", json!({"path": "secrets/key.txt"})),
        Step::text("I have read the key."),
        Step::call(
            "create_file",
            json!({"path": "public/leak.txt", "content": KEY}),
        ),
        Step::text("Done."),
    ]);
    env.user_config(&model_config(&server, &labels("")));
    let out = env.bosun(&["run", "Read secrets/key.txt"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        env.ws().join("public/before.txt").exists(),
        "a write to public/ is allowed before the key is read: {}",
        stderr(&out)
    );
    between(&env);
    let out = env.bosun(&["run", "--resume", "last", "Put the key in public/leak.txt"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let trace = last_trace(&env);
    (env, trace, stderr(&out))
}

fn run_started_level(trace: &[Value]) -> Value {
    trace
        .iter()
        .map(|e| &e["event"])
        .find(|e| e["type"] == "run.started")
        .map(|e| e["level"].clone())
        .unwrap_or_default()
}

/// The second process carries the conversation on at the level its history holds: the write of
/// the key to a `PUBLIC` path is a write-down, refused headless, naming the first run's read
/// that raised the level; `run.started` records `RESTRICTED`.
#[test]
fn a_resumed_run_holds_the_level_its_history_holds_and_cannot_write_it_down() {
    let (env, trace, err) = resume_and_write_down(|env| {
        let stored: Value =
            serde_json::from_slice(&std::fs::read(session_file(env)).unwrap()).unwrap();
        assert_eq!(stored["labels"]["level"], "RESTRICTED", "{stored:#}");
    });
    assert!(
        !env.ws().join("public/leak.txt").exists(),
        "the key was written down: {err}"
    );
    assert_eq!(run_started_level(&trace), "RESTRICTED");
    let text = serde_json::to_string(&trace).unwrap();
    // What raised the level is named: the first run's read (its second step's call).
    assert!(
        text.contains(
            "write-down: the session holds RESTRICTED data (from read_file (call_2_1)) and this sink is PUBLIC"
        ),
        "{text}"
    );
}

/// A session file without labels — as an older Bosun wrote it — is carried on as holding
/// `RESTRICTED` data and untrusted input, saying why; never at `PUBLIC`.
#[test]
fn a_session_stored_without_labels_is_not_resumed_at_public() {
    let (env, trace, err) = resume_and_write_down(|env| {
        let path = session_file(env);
        let mut stored: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert!(stored.as_object_mut().unwrap().remove("labels").is_some());
        std::fs::write(&path, serde_json::to_vec_pretty(&stored).unwrap()).unwrap();
    });
    assert!(
        !env.ws().join("public/leak.txt").exists(),
        "the key was written down: {err}"
    );
    assert_eq!(run_started_level(&trace), "RESTRICTED");
    let text = serde_json::to_string(&trace).unwrap();
    assert!(text.contains("stored without its labels"), "{text}");
    // Stored again, it keeps the level it was carried on at.
    let stored: Value =
        serde_json::from_slice(&std::fs::read(session_file(&env)).unwrap()).unwrap();
    assert_eq!(stored["labels"]["level"], "RESTRICTED", "{stored:#}");
    let shown = env.bosun(&["sessions", "show", "last"]);
    assert!(
        String::from_utf8_lossy(&shown.stdout).contains("labels:    RESTRICTED"),
        "{}",
        String::from_utf8_lossy(&shown.stdout)
    );
}

/// An editor's `session/load` carries the conversation on in a new `bosun acp` process at the
/// level its history holds: with `write_down = "deny"`, the key read in the first connection
/// is refused its way to a `PUBLIC` path in the second, naming the file.
#[test]
fn a_session_loaded_by_an_editor_holds_the_level_its_history_holds() {
    let env = workspace();
    let (_runtime, model) = serve(vec![
        call("read_file", json!({"path": "secrets/key.txt"})),
        Step::text("I have read the key."),
    ]);
    let config = labels("write_down = \"deny\"");
    env.user_config(&model_config(&model, &config));
    let first = editor(
        &env,
        json!({
            "answers": [],
            "steps": [{"initialize": true}, {"new": {}}, {"prompt": "Read secrets/key.txt."}],
        }),
    );
    let session = responses(&first, "new")[0]["result"]["sessionId"]
        .as_str()
        .expect("a session id")
        .to_owned();

    let (_runtime2, model2) = serve(vec![
        call(
            "create_file",
            json!({"path": "public/leak.txt", "content": KEY}),
        ),
        Step::text("Refused."),
    ]);
    env.user_config(&model_config(&model2, &config));
    let loaded = editor(
        &env,
        json!({
            "answers": [],
            "steps": [
                {"initialize": true},
                {"load": session},
                {"prompt": "Put the key in public/leak.txt."},
            ],
        }),
    );
    assert!(
        responses(&loaded, "load")[0]["result"].is_object(),
        "{loaded:#}"
    );
    assert!(!env.ws().join("public/leak.txt").exists(), "{loaded:#}");
    let failed: Vec<String> = updates(&loaded, "tool_call_update")
        .iter()
        .filter(|u| u["status"] == "failed")
        .map(|u| u["content"].to_string())
        .collect();
    // What raised the level is named: the first connection's read.
    assert!(
        failed.iter().any(|c| c
            .contains("write-down: the session holds RESTRICTED data (from read_file (call_1_1))")),
        "{loaded:#}"
    );
}
