//! `bosun run`, `bosun sessions list` and `bosun models list` against a scripted model served on
//! loopback by this test process: real HTTP and SSE between the `bosun` binary and the server.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};

use bosun_agent::scripted::{Script, ScriptedModel, ScriptedServer, Step};
use bosun_agent::session_store::SessionStore;
use bosun_core::{ErrorCode, Event};
use bosun_models::Message;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::{Env, code, json, stderr};

/// A runtime that keeps serving while the test thread waits on the `bosun` process.
pub(super) fn serve(
    steps: impl IntoIterator<Item = Step>,
) -> (tokio::runtime::Runtime, ScriptedServer) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = runtime
        .block_on(ScriptedModel::serve(Script::new(steps)))
        .unwrap();
    (runtime, server)
}

pub(super) fn model_config(server: &ScriptedServer, extra: &str) -> String {
    format!(
        "default_model = \"scripted\"\n{extra}\n[models.scripted]\nprovider = \"openai-chat\"\nbase_url = \"{}\"\nmodel = \"bosun-scripted\"\n",
        server.base_url()
    )
}

fn json_lines(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn run_answers_on_stdout_and_a_session_resumes() {
    let env = Env::new();
    let (_runtime, server) = serve([
        Step::call("read_file", json!({"path": "src/lib.rs"})),
        Step::text("answer() returns 42."),
        Step::text("Still 42."),
    ]);
    env.user_config(&model_config(&server, ""));

    let out = env.bosun(&["run", "What does answer() return?"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "answer() returns 42.\n"
    );
    assert!(
        stderr(&out).contains("→ read_file {\"path\":\"src/lib.rs\"}"),
        "{}",
        stderr(&out)
    );

    let listed = env.bosun(&["sessions", "list", "--json"]);
    assert_eq!(code(&listed), 0, "{}", stderr(&listed));
    let sessions = json(&listed);
    assert_eq!(sessions.as_array().unwrap().len(), 1);
    let id = sessions[0]["id"].as_str().unwrap().to_owned();
    assert_eq!(sessions[0]["title"], "What does answer() return?");
    assert_eq!(sessions[0]["model"], "scripted");

    let out = env.bosun(&["run", "--resume", &id, "--json", "And now?"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let lines = json_lines(&out.stdout);
    let types: Vec<&str> = lines
        .iter()
        .map(|l| l["event"]["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        [
            "run.started",
            "prompt.assembled",
            "model.started",
            "model.text",
            "model.completed",
            "run.finished",
            "run.result"
        ]
    );
    // Every line is an envelope of the run, the result numbered after its last event.
    let run_id = lines[0]["run_id"].as_str().unwrap();
    assert!(lines.iter().all(|l| l["run_id"] == run_id), "{lines:?}");
    let last = lines.len() - 1;
    assert_eq!(
        lines[last]["sequence"].as_u64().unwrap(),
        lines[last - 1]["sequence"].as_u64().unwrap() + 1
    );
    // One number per line: the streamed text does not share the number of the event after it.
    let numbers: Vec<u64> = lines
        .iter()
        .map(|l| l["sequence"].as_u64().unwrap())
        .collect();
    assert_eq!(numbers, (0..lines.len() as u64).collect::<Vec<_>>());
    assert!(lines[last]["timestamp"].is_string());
    let result = &lines[last]["event"];
    assert_eq!(result["outcome"], "completed");
    assert_eq!(result["exit_code"], 0);
    assert_eq!(result["model_entry"], "scripted");
    assert_eq!(result["text"], "Still 42.");
    assert_eq!(result["session_id"], id.as_str());

    // The resumed request carried the first turn.
    let third = &server.requests()[2];
    let contents: Vec<&str> = third["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert!(contents.contains(&"What does answer() return?"));
    assert!(contents.contains(&"answer() returns 42."));
    assert_eq!(contents.last(), Some(&"And now?"));
    assert_eq!(env.runs().len(), 2);
}

#[test]
fn run_without_a_model_says_how_to_add_one() {
    let env = Env::new();
    let out = env.bosun(&["run", "Do something."]);
    assert_eq!(code(&out), 2);
    let err = stderr(&out);
    assert!(err.contains("no model configured"), "{err}");
    assert!(
        err.contains(r#"models.local = { provider = "openai-chat", base_url = "http://127.0.0.1:11434/v1", model = "qwen3:8b" }"#),
        "{err}"
    );
    assert!(env.runs().is_empty());
}

#[test]
fn run_exit_codes_for_budgets_and_provider_errors() {
    let env = Env::new();
    let (_runtime, server) = serve([
        Step::call("read_file", json!({"path": "src/lib.rs"})),
        Step::text("never reached"),
    ]);
    env.user_config(&model_config(&server, "[agent]\nmax_steps = 1\n"));
    let out = env.bosun(&["run", "Read."]);
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("budget of 1 model steps"),
        "{}",
        stderr(&out)
    );

    // A server that refuses every request (the script is empty): a provider error.
    let (_runtime2, empty) = serve([]);
    env.user_config(&model_config(&empty, ""));
    let out = env.bosun(&["run", "--json", "Anything."]);
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    let result = json_lines(&out.stdout).pop().unwrap()["event"].clone();
    assert_eq!(result["outcome"], "failed");
    assert!(
        result["error"]
            .as_str()
            .unwrap()
            .contains("script is exhausted"),
        "{result}"
    );
}

#[test]
fn sigint_cancels_the_run_the_tool_sees_cancelled_and_the_session_is_saved() {
    let env = Env::new();
    let (_runtime, server) = serve([
        Step::call("run_command", json!({"program": "sleep", "args": ["30"]})),
        Step::text("never reached"),
    ]);
    env.user_config(&model_config(&server, ""));
    let mut child = Command::new(env!("CARGO_BIN_EXE_bosun"))
        .args(["run", "--json", "--yes", "Wait a while."])
        .current_dir(env.ws())
        .env("BOSUN_HOME", env.home())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The trace streams on stdout: wait until the command is running, then interrupt.
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut lines = Vec::new();
    loop {
        let mut line = String::new();
        assert_ne!(
            stdout.read_line(&mut line).unwrap(),
            0,
            "bosun ended before the command started: {lines:?}"
        );
        let started = line.contains("\"tool.started\"");
        lines.push(line);
        if started {
            break;
        }
    }
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    let status = child.wait().unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(err.contains("cancelling the run"), "{err}");

    let result = json_lines(rest.as_bytes()).pop().unwrap()["event"].clone();
    assert_eq!(result["outcome"], "cancelled", "{result}");
    assert_eq!(result["exit_code"], 130);
    let session_id = result["session_id"].as_str().unwrap().to_owned();

    // The trace on disk: the tool was cancelled, and so was the run.
    let runs = env.runs();
    assert_eq!(runs.len(), 1);
    let events: Vec<Event> = bosun_host::trace::read_run(&runs[0])
        .unwrap()
        .into_iter()
        .map(|e| e.event)
        .collect();
    assert!(
        events.iter().any(|e| matches!(
            e,
            Event::ToolFailed { tool, error, .. }
                if tool == "run_command" && error.code == ErrorCode::Cancelled
        )),
        "{events:?}"
    );
    assert!(matches!(
        events.last(),
        Some(Event::RunFinished { outcome }) if *outcome == bosun_core::RunOutcome::Cancelled
    ));

    // The session holds the task, the call and its cancelled result: it can be resumed.
    let stored = SessionStore::in_home(&env.home())
        .load(&session_id)
        .unwrap();
    assert_eq!(stored.messages.len(), 3, "{:?}", stored.messages);
    let Message::Tool(result) = &stored.messages[2] else {
        panic!("{:?}", stored.messages[2]);
    };
    assert!(result.is_error);
    assert!(
        result.content.contains("\"cancelled\""),
        "{}",
        result.content
    );
    assert_eq!(server.steps_played(), 1);
}

#[test]
fn models_list_shows_entries_and_never_a_key() {
    let env = Env::new();
    env.user_config(
        "default_model = \"cloud\"\n[models.cloud]\nprovider = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\napi_key_env = \"BOSUN_TEST_KEY\"\n",
    );
    let out = env.bosun_with_env(
        &["models", "list", "--json"],
        &[("BOSUN_TEST_KEY", "sk-ant-do-not-print")],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let listed = json(&out);
    assert_eq!(listed[0]["name"], "cloud");
    assert_eq!(listed[0]["key"], "present");
    assert_eq!(listed[0]["is_default"], true);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("sk-ant-do-not-print"));
}

#[test]
fn sessions_belong_to_their_workspace_and_a_failed_first_call_keeps_none() {
    let env = Env::new();
    let other = env.dir.path().join("other");
    std::fs::create_dir_all(other.join(".git")).unwrap();
    let other = other.canonicalize().unwrap();
    let (_runtime, server) = serve([
        Step::text("here one."),
        Step::text("there one."),
        Step::text("here again."),
    ]);
    env.user_config(&model_config(&server, ""));
    let bosun_in = |dir: &std::path::Path, args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_bosun"))
            .args(args)
            .current_dir(dir)
            .env("BOSUN_HOME", env.home())
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let here = env.ws();
    assert_eq!(code(&bosun_in(&here, &["run", "First here."])), 0);
    assert_eq!(code(&bosun_in(&other, &["run", "First there."])), 0);
    // `last` here is this workspace's, although the other one ran since.
    let out = bosun_in(&here, &["run", "--resume", "last", "--json", "Again."]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let third = &server.requests()[2];
    assert!(third.to_string().contains("First here."), "{third}");
    assert!(!third.to_string().contains("First there."), "{third}");

    let listed = |dir: &std::path::Path, all: bool| -> Vec<Value> {
        let mut args = vec!["sessions", "list", "--json"];
        if all {
            args.push("--all");
        }
        let out = bosun_in(dir, &args);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        json(&out).as_array().unwrap().clone()
    };
    let mine = listed(&here, false);
    assert_eq!(mine.len(), 1, "{mine:?}");
    assert_eq!(mine[0]["workspace"], here.display().to_string());
    assert_eq!(listed(&other, false).len(), 1);
    assert_eq!(listed(&here, true).len(), 2);
    let text = String::from_utf8_lossy(&bosun_in(&here, &["sessions", "list", "--all"]).stdout)
        .into_owned();
    assert!(text.contains(&other.display().to_string()), "{text}");

    // A third workspace with no session: `last` says so and how to see the others.
    let empty = env.dir.path().join("empty");
    std::fs::create_dir_all(empty.join(".git")).unwrap();
    let out = bosun_in(&empty, &["run", "--resume", "last", "Hm."]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("no session in this workspace"),
        "{}",
        stderr(&out)
    );

    // The model fails before answering anything: no empty session is left behind.
    let (_runtime2, refusing) = serve([]);
    env.user_config(&model_config(&refusing, ""));
    let out = bosun_in(&empty, &["run", "Anything."]);
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    assert!(listed(&empty, false).is_empty());
    assert_eq!(listed(&here, true).len(), 2);
}

#[test]
fn json_runs_show_each_steps_text_stream_on_request_and_errors_as_json() {
    let env = Env::new();
    let (_runtime, server) = serve([
        Step {
            text: Some("Let me look.".into()),
            ..Step::call("read_file", json!({"path": "src/lib.rs"}))
        },
        Step::text("It returns 42."),
        Step::text("Streamed answer."),
    ]);
    env.user_config(&model_config(&server, ""));
    let out = env.bosun(&["run", "--json", "What?"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let lines = json_lines(&out.stdout);
    let texts: Vec<&str> = lines
        .iter()
        .filter(|l| l["event"]["type"] == "model.text")
        .filter_map(|l| l["event"]["text"].as_str())
        .collect();
    assert_eq!(texts, ["Let me look.", "It returns 42."]);
    // Each step's text comes before that step's model.completed.
    let kinds: Vec<&str> = lines
        .iter()
        .filter_map(|l| l["event"]["type"].as_str())
        .collect();
    let text_at = kinds.iter().position(|k| *k == "model.text").unwrap();
    assert_eq!(kinds[text_at + 1], "model.completed", "{kinds:?}");
    // --stream: the pieces as they came, joined they are the answer.
    let out = env.bosun(&["run", "--json", "--stream", "Again?"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let pieces: String = json_lines(&out.stdout)
        .iter()
        .filter(|l| l["event"]["type"] == "model.text")
        .filter_map(|l| l["event"]["text"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(pieces, "Streamed answer.");
    // Usage and configuration errors are a JSON object on stdout too.
    let out = env.bosun(&["run", "--json", "--no-such-flag", "x"]);
    assert_eq!(code(&out), 2);
    let error: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (error["type"].as_str(), error["exit_code"].as_u64()),
        (Some("error"), Some(2))
    );
    let fresh = Env::new();
    let out = fresh.bosun(&["run", "--json", "Anything."]);
    assert_eq!(code(&out), 2);
    let error: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        error["error"]
            .as_str()
            .unwrap()
            .contains("no model configured"),
        "{error}"
    );
    // inspect --kind keeps only those events.
    let first = env.runs()[0]
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let out = env.bosun(&["inspect", &first, "--json", "--kind", "tool."]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let kept = json_lines(&out.stdout);
    assert!(kept.len() >= 4, "{kept:?}");
    for line in kept {
        assert!(
            line["event"]["type"].as_str().unwrap().starts_with("tool."),
            "{line}"
        );
    }
}

/// Answer keys typed into the real terminal while the model still streams, and up to the moment
/// the approval box is drawn, never answer it: the call waits for a key pressed once the box
/// has been on screen, here `d`.
#[test]
fn keys_typed_before_the_approval_box_never_approve_the_call() {
    let env = Env::new();
    let (_runtime, server) = serve([
        Step {
            text: Some("Let me run that command for you, one moment.".into()),
            delay_ms: 150,
            ..Step::call("run_command", json!({"program": "echo", "args": ["hi"]}))
        },
        Step::text("It printed hi.").or_on_tool_error(Step::text("Declined.")),
    ]);
    env.user_config(&model_config(&server, ""));
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/pty_session.py");
    let out = Command::new("/usr/bin/python3")
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_bosun"))
        .arg(env.ws())
        .arg("typeahead")
        .env("BOSUN_HOME", env.home())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{}\n{shown}", stderr(&out));
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    let reply = requests[1].to_string();
    assert!(reply.contains("denied"), "{reply}");
    assert!(!shown.contains("It printed hi."), "{shown}");
}

/// The real binary in a pseudo-terminal (`tests/peers/pty_session.py`): a pasted and typed
/// task, an approval answered with a key, the answer on screen, Ctrl-C twice to leave — and the
/// conversation left in the terminal's scrollback.
#[test]
fn the_terminal_ui_in_a_real_pseudo_terminal() {
    let env = Env::new();
    let (_runtime, server) = serve([
        Step::call("run_command", json!({"program": "echo", "args": ["hi"]})),
        Step::text("It printed hi."),
    ]);
    env.user_config(&model_config(&server, ""));
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/pty_session.py");
    let out = Command::new("/usr/bin/python3")
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_bosun"))
        .arg(env.ws())
        .env("BOSUN_HOME", env.home())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{}\n{shown}", stderr(&out));
    // The paste and the typed rest were one task.
    let first = server.requests()[0].to_string();
    assert!(first.contains("Run echo hi."), "{first}");
    assert!(shown.contains("It printed hi."), "{shown}");
    // After leaving, the transcript is printed as plain lines into the scrollback.
    assert!(shown.contains("› Run echo hi."), "{shown}");
    assert!(shown.contains("✓ exit 0"), "{shown}");
    assert!(shown.contains("bosun --resume"), "{shown}");
}

/// `bosun run` on a terminal (`script` gives it one): a spinner says what the run waits on
/// while a command runs, its marks are coloured, and `NO_COLOR` keeps the spinner but drops the
/// colour.
#[test]
fn run_on_a_terminal_spins_while_it_waits_and_honours_no_color() {
    let on_a_terminal = |no_color: bool| {
        let env = Env::new();
        let (_runtime, server) = serve([
            Step::call("run_command", json!({"program": "sleep", "args": ["1"]})),
            Step::text("Slept."),
        ]);
        env.user_config(&model_config(
            &server,
            "[[policy.rules]]\naction = \"builtin.tool.run_command\"\ndecision = \"allow\"\n\n[[policy.rules]]\naction = \"process.spawn\"\ndecision = \"allow\"\n",
        ));
        let mut cmd = Command::new("script");
        cmd.args(["-qec"])
            .arg(format!(
                "{} run 'Sleep a second.'",
                env!("CARGO_BIN_EXE_bosun")
            ))
            .arg("/dev/null")
            .current_dir(env.ws())
            .env("BOSUN_HOME", env.home())
            .env_remove("NO_COLOR")
            .stdin(Stdio::null());
        if no_color {
            cmd.env("NO_COLOR", "1");
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let coloured = on_a_terminal(false);
    assert!(coloured.contains("running run_command"), "{coloured:?}");
    assert!(coloured.contains("(Ctrl-C cancels)"), "{coloured:?}");
    assert!(coloured.contains("\u{1b}[36m→\u{1b}[0m"), "{coloured:?}");
    // The spinner's line is erased before the answer: it never ends up in it.
    assert!(coloured.contains("Slept."), "{coloured:?}");
    let plain = on_a_terminal(true);
    assert!(plain.contains("running run_command"), "{plain:?}");
    assert!(!plain.contains("\u{1b}[36m"), "{plain:?}");
    assert!(plain.contains("→ run_command"), "{plain:?}");
}

/// A run waiting for approval rings the terminal's bell (outside any escape sequence), in the
/// real binary on a pseudo-terminal.
#[test]
fn the_bell_rings_when_a_run_waits_for_approval() {
    let env = Env::new();
    let (_runtime, server) = serve([
        Step::call("run_command", json!({"program": "echo", "args": ["hi"]})),
        Step::text("It printed hi."),
    ]);
    env.user_config(&model_config(&server, ""));
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/pty_session.py");
    let out = Command::new("/usr/bin/python3")
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_bosun"))
        .arg(env.ws())
        .env("BOSUN_HOME", env.home())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    // An OSC sequence may end with BEL; the bell is a BEL outside of one.
    let mut shown = out.stdout.clone();
    while let Some(start) = shown.windows(2).position(|w| w == b"\x1b]") {
        let end = shown[start..]
            .iter()
            .position(|b| *b == 0x07 || *b == b'\\')
            .map_or(shown.len(), |e| start + e + 1);
        shown.drain(start..end);
    }
    assert!(
        shown.contains(&0x07),
        "no bell in {:?}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// `bosun run` shows the plan the model keeps each time it changes, and `--json` carries it in
/// the call's `tool.completed` event; a plan that breaks the rules is refused to the model.
#[test]
fn run_prints_the_plan_and_json_carries_it() {
    let env = Env::new();
    let plan = json!({"explanation": "Small change.", "plan": [
        {"step": "Read the code", "status": "completed"},
        {"step": "Fix the answer", "status": "in_progress"},
        {"step": "Run the tests", "status": "pending"}
    ]});
    let two_at_once = json!({"plan": [
        {"step": "Fix", "status": "in_progress"},
        {"step": "Test", "status": "in_progress"}
    ]});
    let steps = || {
        [
            Step::call("update_plan", plan.clone()),
            Step::call("update_plan", two_at_once.clone()),
            Step::text("Planned."),
        ]
    };
    let (_runtime, server) = serve(steps());
    env.user_config(&model_config(&server, ""));
    let out = env.bosun(&["run", "Fix the answer."]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let shown = stderr(&out);
    for line in [
        "  Plan (1 of 3 steps done):",
        "    Small change.",
        "    ✓ Read the code",
        "    → Fix the answer",
        "    ○ Run the tests",
        "✗ invalid_input: 2 steps are in_progress",
    ] {
        assert!(shown.contains(line), "{line:?} missing from\n{shown}");
    }
    // The refusal went back to the model, saying what to fix.
    let reply = server.requests()[2].to_string();
    assert!(reply.contains("at most one step in_progress"), "{reply}");

    let (_runtime2, server2) = serve(steps());
    env.user_config(&model_config(&server2, ""));
    let out = env.bosun(&["run", "--json", "Fix the answer."]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let lines = json_lines(&out.stdout);
    let completed: Vec<&Value> = lines
        .iter()
        .map(|l| &l["event"])
        .filter(|e| e["type"] == "tool.completed" && e["tool"] == "update_plan")
        .collect();
    assert_eq!(completed.len(), 1, "{lines:#?}");
    assert_eq!(completed[0]["output"], plan);
    let decided = lines
        .iter()
        .map(|l| &l["event"])
        .find(|e| e["type"] == "tool.decided" && e["tool"] == "update_plan")
        .unwrap();
    assert_eq!(decided["explanation"]["decision"], "allow", "{decided}");
}

/// The terminal UI's switches in the real binary on a pseudo-terminal
/// (`tests/peers/pty_features.py`, which reads the screen as it stands): Shift-Tab cycles the
/// four modes, `@` lists the workspace's files and Enter writes the path, `!cmd` runs and its
/// output reaches the model with the next message, `/undo` puts back the exact bytes of the file
/// a run patched and removes the one it created (touching nothing else), and Esc interrupts a
/// running command, its partial output kept and the task queued behind it back at the prompt.
#[test]
fn mode_cycle_mentions_commands_undo_and_esc_in_a_real_pseudo_terminal() {
    let env = Env::new();
    let original = std::fs::read(env.ws().join("src/lib.rs")).unwrap();
    // A file the run does not touch, with bytes no text tool would keep as they are.
    let untouched = b"keep\r\nme \xff as I am\n".to_vec();
    std::fs::write(env.ws().join("other.bin"), &untouched).unwrap();
    let (_runtime, server) = serve([
        Step {
            tool_calls: vec![
                bosun_agent::scripted::ScriptedCall {
                    name: "apply_patch".into(),
                    arguments: json!({"path": "src/lib.rs", "edits": [{"oldText": "42", "newText": "43"}]}),
                    id: None,
                },
                bosun_agent::scripted::ScriptedCall {
                    name: "create_file".into(),
                    arguments: json!({"path": "notes.txt", "content": "a note\n"}),
                    id: None,
                },
            ],
            ..Step::default()
        },
        Step::text("Changed it."),
        Step::call(
            "run_command",
            json!({"program": "sh", "args": ["-c", "echo partial-output-1; sleep 60; echo never-$((6*7))"]}),
        ),
        Step::text("never reached"),
    ]);
    env.user_config(&model_config(
        &server,
        "[[policy.rules]]\naction = \"builtin.tool.run_command\"\ndecision = \"allow\"\n\n[[policy.rules]]\naction = \"process.spawn\"\nprogram = \"sh\"\ndecision = \"allow\"\n",
    ));
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/pty_features.py");
    let screens = tempfile::tempdir().unwrap();
    let out = Command::new("timeout")
        .arg("300")
        .arg("/usr/bin/python3")
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_bosun"))
        .arg(env.ws())
        .arg(screens.path())
        .env("BOSUN_HOME", env.home())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{}\n{shown}", stderr(&out));
    // The line cleared with Ctrl-U was never sent; the person's command went with the task.
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "{requests:#?}");
    let first = requests[0].to_string();
    assert!(first.contains("from-the-shell-42"), "{first}");
    assert!(!first.contains("Look at"), "{first}");
    // Undone: the patched file has its exact bytes back, the created one is gone, the rest is
    // as it was; the model hears of it with the next task.
    assert_eq!(
        std::fs::read(env.ws().join("src/lib.rs")).unwrap(),
        original
    );
    assert!(!env.ws().join("notes.txt").exists());
    assert_eq!(
        std::fs::read(env.ws().join("other.bin")).unwrap(),
        untouched
    );
    let last = requests[2].to_string();
    assert!(last.contains("notes.txt"), "{last}");
    // The task queued behind the cancelled run was returned, then dropped: never sent.
    for request in &requests {
        assert!(!request.to_string().contains("Then the next thing."));
    }
    // The command was stopped: it never got to its last line.
    assert!(!shown.contains("never-42"), "{shown}");
    // One session, stored with the interrupted run.
    // (Beside it, the session's writers' lock: a dotfile.)
    let sessions: Vec<String> = std::fs::read_dir(env.home().join("sessions"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| !name.starts_with('.'))
        .collect();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    // What the screen showed, as a person saw it (the session's id masked).
    let id: String = sessions[0].chars().take(13).collect();
    for moment in ["modes", "mention", "resized"] {
        let screen = std::fs::read_to_string(screens.path().join(format!("{moment}.txt")))
            .unwrap()
            .replace(&id, "xxxxxxxx-xxxx");
        insta::assert_snapshot!(format!("pty_{moment}"), screen);
    }
}

/// `bosun run` on a pseudo-terminal (`tests/peers/pty_run.py`): a command's output shows under
/// its call while it still runs, and Ctrl-C cancels the run (exit 130) with that output kept on
/// screen and the session stored.
#[test]
fn run_on_a_terminal_streams_a_commands_output_and_keeps_it_on_ctrl_c() {
    let env = Env::new();
    let (_runtime, server) = serve([
        Step::call(
            "run_command",
            json!({"program": "sh", "args": ["-c", "echo partial-output-1; sleep 60; echo never-$((6*7))"]}),
        ),
        Step::text("never reached"),
    ]);
    env.user_config(&model_config(
        &server,
        "[[policy.rules]]\naction = \"builtin.tool.run_command\"\ndecision = \"allow\"\n\n[[policy.rules]]\naction = \"process.spawn\"\nprogram = \"sh\"\ndecision = \"allow\"\n",
    ));
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/pty_run.py");
    let out = Command::new("timeout")
        .arg("120")
        .arg("/usr/bin/python3")
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_bosun"))
        .arg(env.ws())
        .env("BOSUN_HOME", env.home())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{:?}\n{}\n{shown}",
        out.status,
        stderr(&out)
    );
    assert!(!shown.contains("never-42"), "{shown}");
    assert_eq!(server.requests().len(), 1);
    let (sessions, _) = SessionStore::in_home(&env.home()).list().unwrap();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
}

/// A provider that answers that the request is over its window: the run compacts the earlier
/// turns once (a request with no tools) and sends the step again; still over, it fails saying
/// what to do.
#[test]
fn an_overflow_compacts_once_and_then_says_what_to_do() {
    let env = Env::new();
    let over = || Step {
        refuse: Some(413),
        ..Step::default()
    };
    let (_runtime, server) = serve([
        Step::text("Hello."),
        over(),
        Step::text("Summary: the person said hello."),
        over(),
    ]);
    env.user_config(&model_config(&server, ""));
    let out = env.bosun(&["run", "Hi."]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = env.bosun(&["run", "--resume", "last", "And again."]);
    assert_eq!(code(&out), 6, "{}", stderr(&out));
    let said = stderr(&out);
    assert!(
        said.contains("over the model's context window even after compacting")
            && said.contains("context_window"),
        "{said}"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 4, "{requests:#?}");
    // The summary was asked with no tools offered; the retry carried the summary.
    assert!(requests[2].get("tools").is_none(), "{}", requests[2]);
    assert!(
        requests[3].to_string().contains("the person said hello"),
        "{}",
        requests[3]
    );
}
