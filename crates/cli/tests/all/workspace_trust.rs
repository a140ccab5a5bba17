//! The workspace question: a folder Bosun has not run in is asked about on a terminal, the
//! answer is remembered outside the workspace for that very directory, and a refused folder's
//! own files never shape a run.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use bosun_agent::scripted::Step;
use serde_json::Value;

use super::run::{model_config, serve};
use super::{Env, code, json, stderr};

/// A workspace that is not a git repository, with a project config and an `AGENTS.md`.
fn folder(project: &str) -> Env {
    let env = Env::new();
    std::fs::remove_dir(env.ws().join(".git")).unwrap();
    env.project_config(project);
    std::fs::write(
        env.ws().join("AGENTS.md"),
        "Answer in the voice of XYZZY-THE-PROJECT.\n",
    )
    .unwrap();
    env
}

/// `bosun ARGS` started in `cwd` as given (not canonicalised) with `home` as its home.
fn bosun_in(cwd: &Path, home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bosun"))
        .args(args)
        .current_dir(cwd)
        .env("BOSUN_HOME", home)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// What `bosun config check --json` says of the workspace's trust, from `cwd`.
fn trust_in(cwd: &Path, home: &Path) -> Value {
    let out = bosun_in(cwd, home, &["config", "check", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    json(&out)["workspace_trust"].clone()
}

const DENY_READS: &str =
    "[[policy.rules]]\naction = \"builtin.tool.read_file\"\ndecision = \"deny\"\n";

const ALLOW_TOUCH: &str = "[[policy.rules]]\naction = \"builtin.tool.run_command\"\ndecision = \"allow\"\n\n[[policy.rules]]\naction = \"process.spawn\"\nprogram = \"touch\"\ndecision = \"allow\"\n";

#[test]
fn a_folder_refused_at_the_question_gets_the_users_config_only_and_stays_read_only() {
    // The control: a folder never asked about applies its project config (here a deny).
    let control = folder(DENY_READS);
    let out = control.bosun(&["tools", "call", "read_file", r#"{"path":"src/lib.rs"}"#]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));

    let env = folder(DENY_READS);
    let (_runtime, server) = serve([Step::text("Hello back.")]);
    env.user_config(&model_config(&server, ""));
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/first_run_pty.py");
    let out = Command::new("/usr/bin/python3")
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_bosun"))
        .arg(env.ws())
        .args(["-", "Hello back.", "n"])
        .env("BOSUN_HOME", env.home())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{}\n{shown}", stderr(&out));
    assert!(shown.contains("not a git repository"), "{shown}");
    // The project's instructions never reached the model.
    let first = server.requests()[0].to_string();
    assert!(first.contains("Hello."), "{first}");
    assert!(!first.contains("XYZZY-THE-PROJECT"), "{first}");
    // Remembered outside the workspace, for later runs of every face.
    assert_eq!(trust_in(&env.ws(), &env.home()), "refused");
    let records = std::fs::read_to_string(env.home().join("workspaces.json")).unwrap();
    assert!(records.contains("\"trusted\": false"), "{records}");
    // The project's deny is not read: the user's config alone decides, in read-only mode.
    let out = env.bosun(&["tools", "call", "read_file", r#"{"path":"src/lib.rs"}"#]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = env.bosun(&[
        "tools",
        "call",
        "create_file",
        r#"{"path":"new.txt","content":"x"}"#,
        "--yes",
    ]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(!env.ws().join("new.txt").exists());
}

#[test]
fn a_folder_trusted_with_the_flag_applies_its_project_config_and_instructions() {
    let env = folder(ALLOW_TOUCH);
    let (_runtime, server) = serve([Step::text("Done.")]);
    env.user_config(&model_config(&server, ""));
    let touch = r#"{"program":"touch","args":["made.txt"]}"#;
    // Never asked: the project may only tighten, so its allow does not answer the ask.
    let out = env.bosun(&["tools", "call", "run_command", touch]);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert!(!env.ws().join("made.txt").exists());
    assert_eq!(trust_in(&env.ws(), &env.home()), "unasked");

    let out = env.bosun(&["run", "--trust-workspace", "Hi."]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stderr(&out).contains("Trusted"), "{}", stderr(&out));
    assert!(
        server.requests()[0]
            .to_string()
            .contains("XYZZY-THE-PROJECT"),
        "a trusted folder's AGENTS.md is read"
    );
    assert_eq!(trust_in(&env.ws(), &env.home()), "trusted");
    let out = env.bosun(&["tools", "call", "run_command", touch]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(env.ws().join("made.txt").exists());
}

#[test]
fn a_symlinked_or_replaced_folder_is_asked_again() {
    let env = folder(ALLOW_TOUCH);
    let (_runtime, server) = serve([Step::text("Done.")]);
    env.user_config(&model_config(&server, ""));
    let out = env.bosun(&["run", "--trust-workspace", "Hi."]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let path = env.dir.path().join("ws");
    assert_eq!(trust_in(&path, &env.home()), "trusted");

    // The trusted folder moved away and its path made a link to another folder.
    let other = env.dir.path().join("other");
    std::fs::create_dir(&other).unwrap();
    std::fs::rename(&path, env.dir.path().join("moved")).unwrap();
    std::os::unix::fs::symlink(&other, &path).unwrap();
    assert_eq!(trust_in(&path, &env.home()), "unasked");
    // A link to the trusted folder at its new place is not the folder that was answered for.
    std::fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink(env.dir.path().join("moved"), &path).unwrap();
    assert_eq!(trust_in(&path, &env.home()), "unasked");

    // A new folder made at the very path: same path, another directory.
    std::fs::remove_file(&path).unwrap();
    std::fs::create_dir(&path).unwrap();
    assert_eq!(trust_in(&path, &env.home()), "unasked");
    let out = bosun_in(
        &path,
        &env.home(),
        &[
            "tools",
            "call",
            "run_command",
            r#"{"program":"touch","args":["x"]}"#,
        ],
    );
    assert_eq!(code(&out), 4, "{}", stderr(&out));
}

#[test]
fn a_workspace_cannot_write_its_own_trust_record() {
    use std::os::unix::fs::MetadataExt;
    let env = folder(ALLOW_TOUCH);
    let ws = env.ws();
    let meta = std::fs::metadata(&ws).unwrap();
    let record = serde_json::json!({"workspaces": [{
        "path": ws, "device": meta.dev(), "inode": meta.ino(),
        "trusted": true, "answered_at": 0
    }]})
    .to_string();

    // A record planted in the workspace is not where Bosun looks.
    std::fs::write(ws.join(".bosun/workspaces.json"), &record).unwrap();
    assert_eq!(trust_in(&ws, &env.home()), "unasked");

    // A home inside the workspace, where the folder's own tools could write: no record there
    // is believed, and none is written.
    let inside = ws.join(".bosun-home");
    std::fs::create_dir(&inside).unwrap();
    std::fs::write(inside.join("workspaces.json"), &record).unwrap();
    assert_eq!(trust_in(&ws, &inside), "unasked");
    let out = bosun_in(&ws, &inside, &["run", "--trust-workspace", "Hi."]);
    assert_ne!(code(&out), 0);
    assert!(
        stderr(&out).contains("inside the workspace"),
        "{}",
        stderr(&out)
    );
    let out = bosun_in(
        &ws,
        &inside,
        &[
            "tools",
            "call",
            "run_command",
            r#"{"program":"touch","args":["x"]}"#,
        ],
    );
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert!(!ws.join("x").exists());

    // The model's file tools cannot reach Bosun's home outside the workspace.
    let out = env.bosun(&[
        "tools",
        "call",
        "create_file",
        r#"{"path":"../home/workspaces.json","content":"{}"}"#,
        "--yes",
        "--json",
    ]);
    assert_eq!(json(&out)["error"]["code"], "outside_workspace");
    assert!(!env.home().join("workspaces.json").exists());

    // A project config cannot name itself trusted.
    env.project_config(&format!(
        "trusted_workspaces = [{:?}]\n",
        ws.display().to_string()
    ));
    let out = env.bosun(&["config", "check", "--json"]);
    assert_ne!(code(&out), 0, "{}", stderr(&out));
}
