//! `bosun acp` with the official TypeScript ACP SDK (`@agentclientprotocol/sdk` from npm,
//! installed by `scripts/acp-peers`) as the editor (`tests/peers/acp_editor.mjs`), against the
//! scripted model: a prompt that reads (through the editor's unsaved buffer), patches (the diff
//! arrives, the edit lands in the buffer), runs a command (asked, allowed once, the output
//! arrives); a rejected command that never runs; a cancel mid-command; the session loaded back
//! in a new connection; read-only mode refusing a write without asking; an MCP server from the
//! editor approved before its tools are offered; garbage and unknown sessions answered clearly.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use bosun_agent::scripted::{Script, ScriptedCall, ScriptedModel, ScriptedServer, Step};
use serde_json::{Value, json};

use super::Env;
use super::run::model_config;

/// The TypeScript ACP SDK's `node_modules`, as `scripts/acp-peers` installed it.
fn acp_modules() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"),
        PathBuf::from,
    );
    let modules = target.join("acp-peers/node/node_modules");
    assert!(
        modules.join("@agentclientprotocol/sdk").exists(),
        "the TypeScript ACP SDK is not installed: run scripts/acp-peers (scripts/test does)"
    );
    modules
}

pub(crate) fn serve(steps: Vec<Step>) -> (tokio::runtime::Runtime, ScriptedServer) {
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

pub(crate) fn call(name: &str, arguments: Value) -> Step {
    Step {
        tool_calls: vec![ScriptedCall {
            name: name.to_owned(),
            arguments,
            id: None,
        }],
        ..Step::default()
    }
}

/// Plays `plan` with the scripted editor and returns its report.
pub(crate) fn editor(env: &Env, mut plan: Value) -> Value {
    plan["bosun"] = json!(env!("CARGO_BIN_EXE_bosun"));
    plan["cwd"] = json!(env.ws());
    let mut extra = plan["env"].as_object().cloned().unwrap_or_default();
    extra.insert("BOSUN_HOME".to_owned(), json!(env.home()));
    plan["env"] = Value::Object(extra);
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/peers/acp_editor.mjs");
    let child = Command::new("node")
        .arg(script)
        .arg(plan.to_string())
        .env("BOSUN_ACP_NODE_MODULES", acp_modules())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (done, output) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(child.wait_with_output());
    });
    let output = output
        .recv_timeout(Duration::from_secs(120))
        .expect("the scripted editor did not finish in 120 s")
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "{e}: the editor printed {stdout}\nstderr: {}",
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

/// The updates of one kind, in order.
pub(crate) fn updates<'a>(report: &'a Value, kind: &str) -> Vec<&'a Value> {
    report["updates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| &n["update"])
        .filter(|u| u["sessionUpdate"] == kind)
        .collect()
}

/// The responses of one step kind, in order.
pub(crate) fn responses<'a>(report: &'a Value, step: &str) -> Vec<&'a Value> {
    report["responses"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["step"] == step)
        .collect()
}

pub(crate) fn text_of(updates: &[&Value]) -> String {
    updates
        .iter()
        .filter_map(|u| u["content"]["text"].as_str())
        .collect()
}

/// An offered option's id without its question's tag (`allow-once#5f0c…` → `allow-once`).
pub(crate) fn option_of(id: &Value) -> &str {
    let id = id.as_str().unwrap();
    let (option, tag) = id
        .split_once('#')
        .unwrap_or_else(|| panic!("{id} has no tag"));
    assert_eq!(tag.len(), 16, "{id}");
    option
}

fn stored_session(home: &Path, id: &str) -> Value {
    let text = std::fs::read_to_string(home.join("sessions").join(format!("{id}.json"))).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn an_editor_reads_patches_runs_is_asked_rejects_cancels_and_loads_the_session_back() {
    let env = Env::new();
    let lib = env.ws().join("src/lib.rs");
    let (_runtime, model) = serve(vec![
        // Prompt 1: read (the unsaved buffer), patch, run a command (asked, allowed once).
        Step {
            text: Some("Let me look.".to_owned()),
            ..call("read_file", json!({"path": "src/lib.rs"}))
        },
        call(
            "apply_patch",
            json!({"path": "src/lib.rs", "edits": [{"oldText": "42", "newText": "43"}]}),
        ),
        call(
            "run_command",
            json!({"program": "echo", "args": ["hello-from-bosun"]}),
        ),
        Step::text("Patched and ran it."),
        // Prompt 2: a command the person rejects.
        call(
            "run_command",
            json!({"program": "touch", "args": ["rejected.txt"]}),
        ),
        Step::text("Understood, not touching it."),
        // Prompt 3: a long command cancelled as soon as its first line arrives.
        call(
            "run_command",
            json!({"program": "sh", "args": ["-c", "echo started; sleep 30; touch late.txt"]}),
        ),
        Step::text("never sent"),
    ]);
    env.user_config(&model_config(&model, ""));
    let report = editor(
        &env,
        json!({
            "fs": true,
            "buffers": {lib.display().to_string(): "pub fn answer() -> u32 { 42 } // unsaved\n"},
            "answers": ["allow-once", "reject", "allow-once"],
            "steps": [
                {"initialize": true},
                {"new": {}},
                {"prompt": "Read the answer, make it 43 and say hello."},
                {"prompt": "Now touch rejected.txt."},
                {"prompt": "Run the long one.", "cancelOn": "started"},
            ],
        }),
    );
    let stderr = report["stderr"].as_str().unwrap_or_default();

    // initialize: loadSession, embedded context, HTTP MCP servers, Bosun named.
    let init = &responses(&report, "initialize")[0]["result"];
    assert_eq!(init["protocolVersion"], 1, "{report:#}");
    assert_eq!(init["agentCapabilities"]["loadSession"], true);
    assert_eq!(
        init["agentCapabilities"]["promptCapabilities"]["embeddedContext"],
        true
    );
    assert_eq!(init["agentCapabilities"]["mcpCapabilities"]["http"], true);
    assert_eq!(init["agentInfo"]["name"], "bosun");

    // session/new: the modes and the model option.
    let new = &responses(&report, "new")[0]["result"];
    let session = new["sessionId"].as_str().expect("a session id").to_owned();
    assert_eq!(new["modes"]["currentModeId"], "workspace-write");
    let modes: Vec<&str> = new["modes"]["availableModes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(modes, ["read-only", "workspace-write", "full"]);
    assert_eq!(new["configOptions"][0]["id"], "model");
    assert_eq!(new["configOptions"][0]["currentValue"], "scripted");
    let commands = updates(&report, "available_commands_update");
    assert!(
        commands[0]["availableCommands"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["name"] == "compact"),
        "{commands:?}"
    );

    // The three prompts end: completed, completed after the rejection, cancelled.
    let prompts = responses(&report, "prompt");
    let stops: Vec<&Value> = prompts.iter().map(|p| &p["result"]["stopReason"]).collect();
    assert_eq!(
        stops,
        [&json!("end_turn"), &json!("end_turn"), &json!("cancelled")],
        "{report:#}\n{stderr}"
    );

    // The model's text streamed as message chunks.
    let said = text_of(&updates(&report, "agent_message_chunk"));
    assert!(
        said.contains("Let me look.") && said.contains("Patched and ran it."),
        "{said}"
    );

    // The read went through the editor and saw the unsaved buffer.
    assert!(
        report["reads"].as_array().unwrap().contains(&json!(lib)),
        "{report:#}"
    );
    let sent = serde_json::to_string(&model.requests()).unwrap();
    assert!(
        sent.contains("// unsaved"),
        "the model saw the disk, not the buffer"
    );

    // The patch: announced as an edit with its diff, written into the buffer, not the disk.
    let calls = updates(&report, "tool_call");
    let patch = calls
        .iter()
        .find(|c| c["rawInput"]["edits"].is_array())
        .expect("the apply_patch call");
    assert_eq!(patch["kind"], "edit");
    assert_eq!(patch["locations"][0]["path"], json!(lib));
    assert_eq!(
        patch["content"][0],
        json!({"type": "diff", "path": lib, "oldText": "42", "newText": "43"})
    );
    assert_eq!(
        report["writes"][0],
        json!({"path": lib, "content": "pub fn answer() -> u32 { 43 } // unsaved\n"})
    );
    assert_eq!(
        std::fs::read_to_string(&lib).unwrap(),
        "pub fn answer() -> u32 { 42 }\n",
        "the edit lands in the editor's buffer, not behind its back"
    );

    // The command: asked with Bosun's options, then its output arrived as it ran.
    let asked = report["permissions"].as_array().unwrap();
    assert_eq!(asked.len(), 3, "{asked:#?}");
    let options: Vec<&str> = asked[0]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| option_of(&o["optionId"]))
        .collect();
    assert_eq!(
        options,
        [
            "allow-once",
            "allow-session",
            "allow-always",
            "reject",
            "reject-explain"
        ]
    );
    let always = &asked[0]["options"][2]["name"];
    assert!(
        always
            .as_str()
            .unwrap()
            .contains("allow process.spawn program=echo"),
        "the rules are shown before they are written: {always}"
    );
    assert_eq!(asked[0]["toolCall"]["kind"], "execute");
    let run_updates = updates(&report, "tool_call_update");
    assert!(
        run_updates
            .iter()
            .any(|u| u["content"].to_string().contains("hello-from-bosun")),
        "the command's output arrives: {run_updates:#?}"
    );

    // The rejected command never ran, and its call failed as denied.
    assert!(!env.ws().join("rejected.txt").exists());
    assert!(
        run_updates
            .iter()
            .any(|u| u["status"] == "failed" && u["content"].to_string().contains("denied")),
        "{run_updates:#?}"
    );

    // The cancelled command saw `cancelled` and never finished.
    assert!(!env.ws().join("late.txt").exists());
    assert!(
        run_updates
            .iter()
            .any(|u| u["status"] == "failed" && u["content"].to_string().contains("cancelled")),
        "{run_updates:#?}"
    );

    // Saved after every turn, the cancelled one included, and each run is traced.
    let stored = stored_session(&env.home(), &session);
    // The cancelled command's partial output is in the session, with how it ended.
    let last_result = stored["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .map(ToString::to_string)
        .find(|m| m.contains("cancelled"))
        .unwrap_or_default();
    assert!(
        last_result.contains("started"),
        "the output so far is kept with the cancellation: {stored:#}"
    );
    let runs = stored["run_ids"].as_array().unwrap();
    assert_eq!(runs.len(), 3, "{stored:#}");
    let inspect = env.bosun(&["inspect", runs[0].as_str().unwrap()]);
    assert_eq!(
        inspect.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&inspect.stderr)
    );
    let shown = String::from_utf8_lossy(&inspect.stdout);
    assert!(
        shown.contains("apply_patch") && shown.contains("run_command"),
        "{shown}"
    );

    // A new connection loads the session back as updates, then read-only refuses a write
    // without asking.
    let (_runtime2, model2) = serve(vec![
        call("create_file", json!({"path": "new.txt", "content": "x"})),
        Step::text("I may not write here."),
    ]);
    env.user_config(&model_config(&model2, ""));
    let loaded = editor(
        &env,
        json!({
            "answers": [],
            "steps": [
                {"initialize": true},
                {"load": session},
                {"mode": "read-only"},
                {"prompt": "Create new.txt."},
            ],
        }),
    );
    assert!(
        responses(&loaded, "load")[0]["result"].is_object(),
        "{loaded:#}"
    );
    let replayed = text_of(&updates(&loaded, "user_message_chunk"));
    assert!(replayed.contains("Read the answer") && replayed.contains("touch rejected.txt"));
    assert!(
        updates(&loaded, "tool_call")
            .iter()
            .any(|c| c["rawInput"]["edits"].is_array() && c["content"][0]["type"] == "diff"),
        "the replay shows the patch's diff"
    );
    assert!(responses(&loaded, "mode")[0]["result"].is_object());
    assert_eq!(
        responses(&loaded, "prompt")[0]["result"]["stopReason"],
        "end_turn"
    );
    assert_eq!(
        loaded["permissions"],
        json!([]),
        "deny is never sent as a question"
    );
    assert!(!env.ws().join("new.txt").exists());
    assert!(
        updates(&loaded, "tool_call_update")
            .iter()
            .any(|u| u["status"] == "failed" && u["content"].to_string().contains("denied")),
        "{loaded:#}"
    );
    assert_eq!(
        stored_session(&env.home(), &session)["run_ids"]
            .as_array()
            .unwrap()
            .len(),
        4
    );
}

#[test]
fn an_editor_mcp_server_is_approved_before_its_tools_are_offered() {
    let env = Env::new();
    // The server and the SDK it runs on, inside the workspace: the OS sandbox lets a server
    // read the workspace and nothing the config does not name.
    let peers = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/peers");
    std::fs::copy(
        peers.join("mcp_server.mjs"),
        env.ws().join("mcp_server.mjs"),
    )
    .unwrap();
    let modules = super::serve::node_modules();
    let copied = env.ws().join("node_modules");
    let status = Command::new("cp")
        .arg("-r")
        .arg(&modules)
        .arg(&copied)
        .status()
        .unwrap();
    assert!(status.success());
    let (_runtime, model) = serve(vec![
        call("mcp__peer__add", json!({"a": 2, "b": 3})),
        Step::text("It is 5."),
    ]);
    env.user_config(&model_config(&model, ""));
    let modules_value = copied.display().to_string();
    let report = editor(
        &env,
        json!({
            "env": {"BOSUN_MCP_NODE_MODULES": modules_value},
            "answers": ["approve", "allow-once"],
            "steps": [
                {"initialize": true},
                {"new": {"mcpServers": [{
                    "name": "peer",
                    "command": "node",
                    "args": ["mcp_server.mjs"],
                    "env": [{"name": "BOSUN_MCP_NODE_MODULES", "value": modules_value}],
                }]}},
                {"prompt": "Add 2 and 3 with the peer."},
            ],
        }),
    );
    let stderr = report["stderr"].as_str().unwrap_or_default();
    let asked = report["permissions"].as_array().unwrap();
    assert_eq!(asked.len(), 2, "{report:#}\n{stderr}");
    // First the server's tools, exactly as listed, before any model request offers them.
    let review = asked[0]["toolCall"]["content"].to_string();
    assert!(
        review.contains("mcp__peer__add") && review.contains("Add two numbers."),
        "{review}"
    );
    // Then the call itself (an untrusted server's tool is judged as a process).
    assert!(
        asked[1]["toolCall"]["title"]
            .as_str()
            .unwrap()
            .contains("mcp__peer__add"),
        "{:#}",
        asked[1]
    );
    assert_eq!(
        responses(&report, "prompt")[0]["result"]["stopReason"],
        "end_turn"
    );
    let requests = model.requests();
    let offered = requests[0]["tools"].to_string();
    assert!(offered.contains("mcp__peer__add"), "{offered}");
    let results = serde_json::to_string(&requests[1]["messages"]).unwrap();
    assert!(results.contains('5'), "{results}");
    // The approval is pinned like `bosun mcp trust`.
    let pins = std::fs::read_to_string(env.home().join("mcp/pins.json")).unwrap();
    assert!(pins.contains("\"peer\""));
}

#[test]
fn garbage_and_unknown_sessions_get_clear_errors_and_the_connection_lives_on() {
    let env = Env::new();
    let (_runtime, model) = serve(vec![Step::text("Still here.")]);
    env.user_config(&model_config(&model, ""));
    let report = editor(
        &env,
        json!({
            "steps": [
                {"initialize": true},
                {"raw": "this is not JSON"},
                {"raw": "{\"jsonrpc\": \"2.0\", \"id\": 99, \"method\": \"session/prompt\", \"params\": 7}"},
                {"prompt": "hello", "session": "no-such-session"},
                {"request": {"method": "session/load", "params": {"sessionId": "0190aaaa-0000-7000-8000-000000000000", "cwd": env.ws(), "mcpServers": []}}},
                {"new": {}},
                {"prompt": "hello"},
            ],
        }),
    );
    let prompts = responses(&report, "prompt");
    let unknown = &prompts[0]["error"];
    assert!(
        unknown["message"]
            .as_str()
            .unwrap()
            .contains("no session `no-such-session`"),
        "{report:#}"
    );
    let load = &responses(&report, "session/load")[0]["error"];
    assert!(
        load["message"].as_str().unwrap().contains("0190aaaa"),
        "{load}"
    );
    // After all that, the connection still serves a session.
    assert_eq!(prompts[1]["result"]["stopReason"], "end_turn", "{report:#}");
}

/// Enforcement: `bosun_acp`'s `wire` filter. The protocol crate drops a line that is not JSON, or
/// a request whose `params` is not an object, without a word, leaving the editor waiting; over
/// `bosun acp`'s stdio each gets JSON-RPC's own error, and the connection goes on.
#[test]
fn lines_that_are_not_requests_are_answered_over_stdio_and_the_connection_goes_on() {
    use std::io::{BufRead, Write};
    let env = Env::new();
    let mut child = Command::new(env!("CARGO_BIN_EXE_bosun"))
        .arg("acp")
        .current_dir(env.ws())
        .env("BOSUN_HOME", env.home())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let child_out = child.stdout.take().unwrap();
    let (lines_tx, lines_rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(child_out).lines() {
            let Ok(line) = line else { break };
            if lines_tx.send(line).is_err() {
                break;
            }
        }
    });
    stdin
        .write_all(
            concat!(
                "this is not JSON\n",
                "{\"jsonrpc\": \"2.0\", \"id\": 99, \"method\": \"session/prompt\", \"params\": 7}\n",
                "{\"jsonrpc\": \"2.0\", \"id\": \"no-method\"}\n",
                "[1, 2, 3]\n",
                "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"initialize\", \"params\": {\"protocolVersion\": 1, \"clientCapabilities\": {}}}\n",
            )
            .as_bytes(),
        )
        .unwrap();
    stdin.flush().unwrap();
    // An editor keeps its side open while it waits: read until the real request is answered.
    let mut seen = Vec::new();
    let answered_one = |lines: &[String]| {
        lines.iter().any(|l| {
            serde_json::from_str::<Value>(l)
                .is_ok_and(|v| v["id"] == 1 && v.get("method").is_none())
        })
    };
    while !answered_one(&seen) {
        match lines_rx.recv_timeout(Duration::from_secs(60)) {
            Ok(line) => seen.push(line),
            Err(e) => panic!("bosun acp stopped answering ({e}) after: {seen:#?}"),
        }
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
    let stdout = seen.join("\n");
    let lines: Vec<Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    let answer = |id: Value| {
        lines
            .iter()
            .find(|line| line["id"] == id)
            .unwrap_or_else(|| panic!("no answer to {id}: {stdout}"))
    };
    assert_eq!(answer(Value::Null)["error"]["code"], -32700, "{stdout}");
    assert_eq!(answer(json!(99))["error"]["code"], -32602, "{stdout}");
    assert_eq!(
        answer(json!("no-method"))["error"]["code"],
        -32600,
        "{stdout}"
    );
    assert_eq!(
        lines
            .iter()
            .filter(|l| l["error"]["code"] == -32600)
            .count(),
        2,
        "{stdout}"
    );
    // The editor's real request after all that is served.
    assert!(
        answer(json!(1))["result"]["protocolVersion"].is_number(),
        "{stdout}"
    );
}

/// The plan the model keeps (`update_plan`) reaches the editor as `plan` updates, the whole
/// list each time, in order; a session loaded back shows the plan as it last stood.
#[test]
fn the_plan_the_model_keeps_reaches_the_editor_as_plan_updates() {
    let env = Env::new();
    let plan = |first: &str, second: &str| {
        call(
            "update_plan",
            json!({"plan": [
                {"step": "Read the code", "status": first},
                {"step": "Fix the answer", "status": second}
            ]}),
        )
    };
    let (_runtime, model) = serve(vec![
        plan("in_progress", "pending"),
        plan("completed", "in_progress"),
        Step::text("On it."),
    ]);
    env.user_config(&model_config(&model, ""));
    let report = editor(
        &env,
        json!({"steps": [{"initialize": true}, {"new": {}}, {"prompt": "Fix the answer."}]}),
    );
    assert_eq!(
        responses(&report, "prompt")[0]["result"]["stopReason"],
        "end_turn",
        "{report:#}"
    );
    let plans = updates(&report, "plan");
    let entries: Vec<&Value> = plans.iter().map(|p| &p["entries"]).collect();
    assert_eq!(
        entries,
        [
            &json!([
                {"content": "Read the code", "priority": "medium", "status": "in_progress"},
                {"content": "Fix the answer", "priority": "medium", "status": "pending"}
            ]),
            &json!([
                {"content": "Read the code", "priority": "medium", "status": "completed"},
                {"content": "Fix the answer", "priority": "medium", "status": "in_progress"}
            ]),
        ],
        "{report:#}"
    );
    // The call itself is a `think` call, allowed without a question.
    assert!(
        updates(&report, "tool_call")
            .iter()
            .all(|c| c["kind"] == "think"),
        "{report:#}"
    );
    assert_eq!(report["permissions"], json!([]));

    let session = responses(&report, "new")[0]["result"]["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let loaded = editor(
        &env,
        json!({"steps": [{"initialize": true}, {"load": session}]}),
    );
    let replayed = updates(&loaded, "plan");
    assert_eq!(replayed.len(), 2, "{loaded:#}");
    assert_eq!(replayed[1]["entries"][0]["status"], "completed");
}

/// The Python SDK's keyed server (`tests/peers/mcp_keyed_server.py`) over `transport` (`sse`
/// or `http`) on a free loopback port, answering only requests carrying `key`; stopped on drop.
pub(crate) struct KeyedPeer {
    child: std::process::Child,
    pub(crate) port: u16,
    dir: tempfile::TempDir,
}

impl KeyedPeer {
    pub(crate) fn start(transport: &str, key: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let script =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/peers/mcp_keyed_server.py");
        let child = Command::new(super::serve::python())
            .arg(script)
            .args([transport, &port.to_string()])
            .env("BOSUN_TEST_API_KEY", key)
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "the keyed MCP server did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Self { child, port, dir }
    }

    /// How many requests it refused for a missing or wrong key.
    pub(crate) fn refused(&self) -> usize {
        std::fs::read_to_string(self.dir.path().join("refused.txt"))
            .map(|text| text.lines().count())
            .unwrap_or(0)
    }
}

impl Drop for KeyedPeer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Every file beneath `dir` whose bytes hold `needle`.
fn files_holding(dir: &Path, needle: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files_holding(&path, needle));
        } else if std::fs::read(&path)
            .is_ok_and(|bytes| bytes.windows(needle.len()).any(|w| w == needle.as_bytes()))
        {
            found.push(path);
        }
    }
    found
}

/// An editor passes an SSE server and a Streamable HTTP server, each with the header value
/// the server demands. Both are listed with the header (the servers refuse every request
/// without it), the person approves the SSE one and declines the other: only the approved
/// server's tools are offered, its call reaches the server, and the header value is in no
/// file of `$BOSUN_HOME` (traces, session, pins) nor anything the editor was sent.
#[test]
fn editor_mcp_servers_over_sse_and_http_send_their_headers_and_only_approved_ones_offer_tools() {
    const KEY: &str = "editor-secret-5b1e9f27";
    let sse = KeyedPeer::start("sse", KEY);
    let http = KeyedPeer::start("http", KEY);
    let env = Env::new();
    let (_runtime, model) = serve(vec![
        call("mcp__keyed__whoami", json!({})),
        Step::text("The key was accepted."),
    ]);
    env.user_config(&model_config(
        &model,
        "[[policy.rules]]\naction = \"mcp.keyed.tool.*\"\ndecision = \"allow\"\n\n[[policy.rules]]\naction = \"net.http\"\nhost = \"127.0.0.1\"\ndecision = \"allow\"\n",
    ));
    let header = json!([{"name": "X-Api-Key", "value": KEY}]);
    let report = editor(
        &env,
        json!({
            "answers": ["approve", "decline"],
            "steps": [
                {"initialize": true},
                {"new": {"mcpServers": [
                    {"type": "sse", "name": "keyed", "url": format!("http://127.0.0.1:{}/sse", sse.port), "headers": header},
                    {"type": "http", "name": "declined", "url": format!("http://127.0.0.1:{}/mcp", http.port), "headers": header},
                ]}},
                {"prompt": "Who am I to the keyed server?"},
            ],
        }),
    );
    let stderr = report["stderr"].as_str().unwrap_or_default();
    let init = &responses(&report, "initialize")[0]["result"];
    assert_eq!(init["agentCapabilities"]["mcpCapabilities"]["sse"], true);
    assert_eq!(
        responses(&report, "prompt")[0]["result"]["stopReason"],
        "end_turn",
        "{report:#}\n{stderr}"
    );
    // Both servers were listed (with the header: they refuse without it) and asked about.
    let asked = report["permissions"].as_array().unwrap();
    assert_eq!(asked.len(), 2, "{report:#}");
    assert!(
        asked[0]["toolCall"]["content"]
            .to_string()
            .contains("mcp__keyed__whoami"),
        "{:#}",
        asked[0]
    );
    assert!(
        asked[1]["toolCall"]["content"]
            .to_string()
            .contains("mcp__declined__add"),
        "{:#}",
        asked[1]
    );
    assert_eq!(
        (sse.refused(), http.refused()),
        (0, 0),
        "every request carried the header"
    );
    // Only the approved server's tools were offered, and its call went through.
    let requests = model.requests();
    let offered = requests[0]["tools"].to_string();
    assert!(offered.contains("mcp__keyed__whoami"), "{offered}");
    assert!(
        !offered.contains("mcp__declined__"),
        "a declined server offers no tool: {offered}"
    );
    let results = serde_json::to_string(&requests[1]["messages"]).unwrap();
    assert!(
        results.contains("accepted: the editor's key reached the server"),
        "{results}"
    );
    // The value is nowhere: not in a trace, the session, the pins, nor what the editor saw.
    assert!(env.home().join("mcp/pins.json").exists());
    assert_eq!(files_holding(&env.home(), KEY), Vec::<PathBuf>::new());
    assert!(!report["updates"].to_string().contains(KEY));
    assert!(!report["permissions"].to_string().contains(KEY));
}

/// A prompt with an image, from the TypeScript SDK's editor: a model that takes images gets the
/// provider's image part on its loopback server; a text-only one refuses it naming the key to
/// set, and nothing reaches it.
#[test]
fn an_editor_image_reaches_a_model_that_takes_images_and_a_text_only_one_refuses_it() {
    const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAACklEQVR4nGMAAQAABQABDQottAAAAABJRU5ErkJggg==";
    let image = json!([{"type": "image", "mimeType": "image/png", "data": PNG}]);
    let plan = json!({"steps": [
        {"initialize": true},
        {"new": {}},
        {"prompt": "What is this?", "blocks": image},
    ]});

    let env = Env::new();
    let (_runtime, model) = serve(vec![Step::text("A single dot.")]);
    env.user_config(&format!("{}images = true\n", model_config(&model, "")));
    let report = editor(&env, plan.clone());
    let init = &responses(&report, "initialize")[0]["result"];
    assert_eq!(
        init["agentCapabilities"]["promptCapabilities"]["image"], true,
        "{report:#}"
    );
    assert_eq!(
        responses(&report, "prompt")[0]["result"]["stopReason"],
        "end_turn",
        "{report:#}"
    );
    let requests = model.requests();
    let user = requests[0]["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(
        user["content"],
        json!([
            {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG}")}},
            {"type": "text", "text": "What is this?"},
        ])
    );

    let env = Env::new();
    let (_runtime2, model2) = serve(vec![Step::text("never")]);
    env.user_config(&model_config(&model2, ""));
    let report = editor(&env, plan);
    let init = &responses(&report, "initialize")[0]["result"];
    assert_ne!(
        init["agentCapabilities"]["promptCapabilities"]["image"], true,
        "a text-only model: no image capability"
    );
    let refused = &responses(&report, "prompt")[0]["error"];
    assert!(
        refused["message"]
            .as_str()
            .unwrap_or_default()
            .contains("set `images = true` in [models.scripted]"),
        "{report:#}"
    );
    assert!(model2.requests().is_empty(), "nothing reached the model");
}

/// Every answer the editor can give maps to Bosun's: allow once (the same call in the next turn
/// is asked again), allow for this session (the same call later in the session is not asked; a
/// new session is), always in this workspace (the narrow rule the option's name showed is
/// written under `$BOSUN_HOME/approvals/`, and a fresh session is not asked), reject (nothing
/// ran), reject with a sentence (the model reads it as the tool result at once), reject to
/// explain later (the turn ends; the next message tells the model why), and a turn cancelled
/// while a question is open withdraws it (`$/cancel_request`), nothing runs, the turn ends
/// `cancelled` and is stored.
#[test]
fn each_approval_answer_of_the_editor_becomes_bosuns() {
    let env = Env::new();
    let touch = |file: &str| call("run_command", json!({"program": "touch", "args": [file]}));
    let echo = |word: &str| call("run_command", json!({"program": "echo", "args": [word]}));
    let mkdir = |dir: &str| {
        call(
            "run_command",
            json!({"program": "mkdir", "args": ["-p", dir]}),
        )
    };
    let (_runtime, model) = serve(vec![
        // 1, 2: allowed once, then the same call in the next turn is asked again.
        touch("once.txt"),
        Step::text("Touched once."),
        touch("once.txt"),
        Step::text("Touched again."),
        // 3: allowed for the session, then the same call again without a question. (A
        // session grant covers the program with any arguments, so the later questions name
        // another program.)
        mkdir("made"),
        mkdir("made"),
        Step::text("Made it twice."),
        // 4: always in this workspace; 5: a later turn is not asked.
        echo("one"),
        Step::text("Said one."),
        echo("two"),
        Step::text("Said two."),
        // 6: rejected: nothing runs.
        touch("r.txt"),
        Step::text("Not touched."),
        // 7: rejected with a sentence the model reads at once.
        touch("b.txt"),
        Step::text("Then the Makefile."),
        // 8: rejected to explain later: the turn ends; 9: the reason arrives.
        touch("c.txt"),
        Step::text("Understood."),
        // 10: cancelled while asked.
        touch("d.txt"),
        Step::text("never sent"),
    ]);
    env.user_config(&model_config(&model, ""));
    let report = editor(
        &env,
        json!({
            "answers": [
                "allow-once",
                "allow-once",
                "allow-session",
                "allow-always",
                "reject",
                "reject|Use the Makefile instead",
                "reject-explain",
                "cancel-turn",
            ],
            "steps": [
                {"initialize": true},
                {"new": {}},
                {"prompt": "Touch once.txt."},
                {"prompt": "Touch once.txt again."},
                {"prompt": "Make the directory twice."},
                {"prompt": "Say one."},
                {"prompt": "Say two."},
                {"prompt": "Touch r.txt."},
                {"prompt": "Touch b.txt."},
                {"prompt": "Touch c.txt."},
                {"prompt": "Because c.txt is generated."},
                {"prompt": "Touch d.txt."},
            ],
        }),
    );
    let stderr = report["stderr"].as_str().unwrap_or_default();
    let stops: Vec<&Value> = responses(&report, "prompt")
        .iter()
        .map(|p| &p["result"]["stopReason"])
        .collect();
    let mut expected = vec!["end_turn"; 9];
    expected.push("cancelled");
    assert_eq!(stops, expected, "{report:#}\n{stderr}");
    let asked = report["permissions"].as_array().unwrap();
    let titles: Vec<&str> = asked
        .iter()
        .map(|p| p["toolCall"]["title"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(titles.len(), 8, "one question per answer: {titles:#?}");
    for (title, word) in titles.iter().zip([
        "once.txt", "once.txt", "made", "one", "r.txt", "b.txt", "c.txt", "d.txt",
    ]) {
        assert!(title.contains(word), "{title} should name {word}");
    }

    // Allowed once: ran, and the same call in the next turn was asked again (above).
    assert!(env.ws().join("once.txt").exists());
    // Allowed for the session: ran both times, asked once.
    assert!(env.ws().join("made").is_dir());
    assert!(text_of(&updates(&report, "agent_message_chunk")).contains("Made it twice."));
    // Always: exactly the rule the option's name showed is written, and turn 5's echo ran
    // unasked.
    let shown = asked[3]["options"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| option_of(&o["optionId"]) == "allow-always")
        .and_then(|o| o["name"].as_str())
        .expect("always is offered for a whole call")
        .to_owned();
    assert!(
        shown.contains("allow process.spawn program=echo"),
        "{shown}"
    );
    let approvals = env.home().join("approvals");
    let written = files_holding(&approvals, "echo");
    assert_eq!(
        written.len(),
        1,
        "the rule is written under {}",
        approvals.display()
    );
    let rules = std::fs::read_to_string(&written[0]).unwrap();
    assert!(
        rules.contains("program = \"echo\"") && !rules.contains("touch"),
        "only the narrow rule for echo: {rules}"
    );
    let said = text_of(&updates(&report, "agent_message_chunk"));
    assert!(said.contains("Said two."), "{said}");
    // Rejected: nothing ran, the model was told the person declined.
    assert!(!env.ws().join("r.txt").exists());
    let requests = model.requests();
    let after_r = serde_json::to_string(&requests[12]["messages"]).unwrap();
    assert!(
        after_r.contains("the person declined run_command"),
        "{after_r}"
    );
    // Rejected with a sentence: nothing ran, and the model read the sentence as the call's
    // result in the same turn.
    assert!(!env.ws().join("b.txt").exists());
    let after_b = serde_json::to_string(&requests[14]["messages"]).unwrap();
    assert!(
        after_b.contains("said: Use the Makefile instead"),
        "{after_b}"
    );
    // Rejected to explain later: the turn ended without another model request, and the next
    // message is what the model reads with the refusal.
    assert!(!env.ws().join("c.txt").exists());
    assert_eq!(
        requests.len(),
        18,
        "no request after the explained rejection until the person spoke"
    );
    let reason = serde_json::to_string(&requests[16]["messages"]).unwrap();
    assert!(reason.contains("Because c.txt is generated."), "{reason}");
    // Cancelled while asked: the open question was withdrawn and nothing ran.
    assert_eq!(report["withdrawn"], json!([true]), "{report:#}");
    assert!(!env.ws().join("d.txt").exists());
    let session = responses(&report, "new")[0]["result"]["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        stored_session(&env.home(), &session)["run_ids"]
            .as_array()
            .unwrap()
            .len(),
        10,
        "every turn is stored, the cancelled one included"
    );

    // A fresh session: the session grant is gone (mkdir is asked again), the workspace rule
    // holds (echo is not asked).
    let (_runtime2, model2) = serve(vec![echo("three"), mkdir("made"), Step::text("Done.")]);
    env.user_config(&model_config(&model2, ""));
    let fresh = editor(
        &env,
        json!({
            "answers": ["reject"],
            "steps": [
                {"initialize": true},
                {"new": {}},
                {"prompt": "Say three, then make the directory."},
            ],
        }),
    );
    let asked = fresh["permissions"].as_array().unwrap();
    assert_eq!(asked.len(), 1, "{fresh:#}");
    assert!(
        asked[0]["toolCall"]["title"]
            .as_str()
            .unwrap_or_default()
            .contains("mkdir"),
        "{fresh:#}"
    );
    let ran = updates(&fresh, "tool_call_update");
    assert!(
        ran.iter()
            .any(|u| u["content"].to_string().contains("three")),
        "echo ran unasked: {fresh:#}"
    );
}

/// Keys and models: `initialize` lists an authentication method per missing key, named after
/// its variable, and `authenticate` says which variable to set; the model option switches to
/// another `[models.<name>]` entry for the next turn (its requests go to that model), while an
/// unknown entry or one whose key is missing is refused at once, naming what to fix.
#[test]
fn the_editor_is_told_which_key_to_set_and_switches_between_configured_models() {
    const MISSING: &str = "BOSUN_TEST_ACP_MISSING_KEY";
    let env = Env::new();
    let (_runtime, first) = serve(vec![Step::text("never")]);
    let (_runtime2, other) = serve(vec![Step::text("From the other model.")]);
    env.user_config(&format!(
        "{}\n[models.other]\nprovider = \"openai-chat\"\nbase_url = \"{}\"\nmodel = \"bosun-scripted\"\n\n[models.keyed]\nprovider = \"openai-chat\"\nbase_url = \"{}\"\nmodel = \"bosun-scripted\"\napi_key_env = \"{MISSING}\"\n",
        model_config(&first, ""),
        other.base_url(),
        other.base_url()
    ));
    let method = format!("env:{MISSING}");
    let report = editor(
        &env,
        json!({
            "steps": [
                {"initialize": true},
                {"request": {"method": "authenticate", "params": {"methodId": method}}},
                {"new": {}},
                {"model": "keyed"},
                {"model": "nope"},
                {"model": "other"},
                {"prompt": "Hello."},
            ],
        }),
    );
    let init = &responses(&report, "initialize")[0]["result"];
    let methods: Vec<&str> = init["authMethods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(methods, [method.as_str()], "{init:#}");
    let refused = &responses(&report, "authenticate")[0]["error"];
    assert_eq!(refused["code"], -32000, "auth_required: {report:#}");
    assert!(
        refused["message"].as_str().unwrap().contains(MISSING),
        "{refused}"
    );
    let models = responses(&report, "model");
    let keyed = models[0]["error"]["message"].as_str().unwrap_or_default();
    assert!(keyed.contains(MISSING), "{report:#}");
    let unknown = models[1]["error"]["message"].as_str().unwrap_or_default();
    assert!(
        unknown.contains("no [models.nope]") && unknown.contains("other"),
        "{unknown}"
    );
    let chosen = &models[2]["result"]["configOptions"][0];
    assert_eq!(chosen["currentValue"], "other", "{report:#}");
    assert_eq!(
        responses(&report, "prompt")[0]["result"]["stopReason"],
        "end_turn"
    );
    assert!(first.requests().is_empty(), "the first model was left");
    assert_eq!(other.requests().len(), 1);
    assert!(text_of(&updates(&report, "agent_message_chunk")).contains("From the other model."));
}

/// Bosun's slash commands typed in the panel: `/mode read-only` switches the mode (the editor
/// is told with `current_mode_update`) and `/status` names the session, the model, the mode
/// and the last run's trace; neither reaches the model.
#[test]
fn slash_commands_in_the_panel_switch_the_mode_and_report_status() {
    let env = Env::new();
    let (_runtime, model) = serve(vec![Step::text("Hi.")]);
    env.user_config(&model_config(&model, ""));
    let report = editor(
        &env,
        json!({"steps": [
            {"initialize": true},
            {"new": {}},
            {"prompt": "Hello."},
            {"prompt": "/mode read-only"},
            {"prompt": "/status"},
        ]}),
    );
    let stops: Vec<&Value> = responses(&report, "prompt")
        .iter()
        .map(|p| &p["result"]["stopReason"])
        .collect();
    assert_eq!(stops, ["end_turn", "end_turn", "end_turn"], "{report:#}");
    let switched = updates(&report, "current_mode_update");
    assert_eq!(switched.len(), 1, "{report:#}");
    assert_eq!(switched[0]["currentModeId"], "read-only");
    let said = text_of(&updates(&report, "agent_message_chunk"));
    let session = responses(&report, "new")[0]["result"]["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let run = stored_session(&env.home(), &session)["run_ids"][0]
        .as_str()
        .unwrap()
        .to_owned();
    for expected in [
        format!("Session {session}"),
        "model: scripted".to_owned(),
        "mode: read-only".to_owned(),
        format!("bosun inspect {run}"),
    ] {
        assert!(said.contains(&expected), "{expected} in {said}");
    }
    assert_eq!(model.requests().len(), 1, "commands never reach the model");
}

/// A signed catalog folder holding the plugin `weather` 1.0.0, made and signed by the binary
/// in the test; returns the config lines that add it as the registry `corp`. Its key is pinned
/// (`bosun registry trust`) once the config names it.
fn weather_catalog(env: &Env) -> String {
    let run = |args: &[&str]| {
        let out = env.bosun(args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let key = env.dir.path().join("key.json");
    let catalog = env.dir.path().join("catalog");
    let src = env.dir.path().join("src/weather");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(
        src.join("mod.ts"),
        "export const manifest = {\n  name: \"weather\",\n  version: \"1.0.0\",\n  description: \"Weather by city\",\n  classification: \"PUBLIC\",\n  trust: \"sandboxed\",\n  declaredEndpoints: [\"https://api.weather.example\"],\n};\nexport async function activate(ctx) {}\n",
    )
    .unwrap();
    run(&["registry", "keygen", key.to_str().unwrap()]);
    run(&[
        "registry",
        "init",
        catalog.to_str().unwrap(),
        "--key",
        key.to_str().unwrap(),
    ]);
    run(&[
        "plugins",
        "publish",
        src.to_str().unwrap(),
        "--to",
        catalog.to_str().unwrap(),
        "--key",
        key.to_str().unwrap(),
    ]);
    format!(
        "\n[registries.corp]\nkind = \"dir\"\npath = \"{}\"\n",
        catalog.display()
    )
}

/// Hostile: an install is one question with its own review, so the editor is offered yes or
/// no only. An editor that answers `allow-always` or `allow-session` anyway (options Bosun did
/// not offer for it) gets a refusal: nothing is installed, no rule is written, and the next
/// install is asked again; only an offered yes installs.
#[test]
fn an_editor_answering_always_to_an_install_gets_no_rule_and_no_unasked_install() {
    let env = Env::new();
    let install = || {
        call(
            "plugin_install",
            json!({"name": "weather", "registry": "corp"}),
        )
    };
    let (_runtime, model) = serve(vec![
        install(),
        Step::text("Not installed."),
        install(),
        Step::text("Still not."),
        install(),
        Step::text("Installed."),
    ]);
    let registry = weather_catalog(&env);
    env.user_config(&format!("{}{registry}", model_config(&model, "")));
    let trusted = env.bosun(&["registry", "trust", "corp", "--yes"]);
    assert_eq!(
        trusted.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&trusted.stderr)
    );
    let report = editor(
        &env,
        json!({
            "answers": ["allow-always", "allow-session", "allow-once"],
            "steps": [
                {"initialize": true},
                {"new": {}},
                {"prompt": "Install weather from corp."},
                {"prompt": "Install it again."},
                {"prompt": "Once more."},
            ],
        }),
    );
    let stderr = report["stderr"].as_str().unwrap_or_default();
    let asked = report["permissions"].as_array().unwrap();
    assert_eq!(
        asked.len(),
        3,
        "every install is asked: {report:#}\n{stderr}"
    );
    for question in asked {
        let offered: Vec<&str> = question["options"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| option_of(&o["optionId"]))
            .collect();
        assert_eq!(offered, ["allow-once", "reject", "reject-explain"]);
        let shown = question["toolCall"]["content"].to_string();
        assert!(
            shown.contains("one install at a time") && shown.contains("weather"),
            "{shown}"
        );
    }
    let requests = model.requests();
    for (index, after) in [(1, "always"), (3, "session")] {
        let said = serde_json::to_string(&requests[index]["messages"]).unwrap();
        assert!(
            said.contains("the person declined plugin_install"),
            "the {after} answer refused the install: {said}"
        );
    }
    assert!(
        !env.home().join("approvals").exists(),
        "no rule was written: {:?}",
        files_holding(&env.home().join("approvals"), "plugin")
    );
    // Only the offered yes installed it.
    let list = env.bosun(&["plugins", "list", "--json"]);
    let listed: Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(listed["plugins"][0]["local_name"], "weather", "{listed:#}");
    assert_eq!(
        responses(&report, "prompt")
            .iter()
            .map(|p| &p["result"]["stopReason"])
            .collect::<Vec<_>>(),
        ["end_turn", "end_turn", "end_turn"]
    );
}

/// Hostile: a careless HTTP MCP server repeats the header value the editor passed into its
/// tool result. The value is a secret: the stored session holds it redacted as the trace does,
/// so no file under `$BOSUN_HOME` holds it, the model's next turn (which reads the session
/// back) never receives it, and a `session/load` replays the redacted result.
#[test]
fn a_header_value_an_mcp_server_echoes_is_redacted_from_the_session_it_lands_in() {
    const KEY: &str = "editor-secret-d41c7a90";
    let http = KeyedPeer::start("http", KEY);
    let env = Env::new();
    let (_runtime, model) = serve(vec![
        call("mcp__keyed__echo_key", json!({})),
        Step::text("It echoed something."),
        Step::text("Second turn."),
    ]);
    env.user_config(&model_config(
        &model,
        "[[policy.rules]]\naction = \"mcp.keyed.tool.*\"\ndecision = \"allow\"\n\n[[policy.rules]]\naction = \"net.http\"\nhost = \"127.0.0.1\"\ndecision = \"allow\"\n",
    ));
    let server = json!({
        "type": "http",
        "name": "keyed",
        "url": format!("http://127.0.0.1:{}/mcp", http.port),
        "headers": [{"name": "X-Api-Key", "value": KEY}],
    });
    let report = editor(
        &env,
        json!({
            "answers": ["approve"],
            "steps": [
                {"initialize": true},
                {"new": {"mcpServers": [server]}},
                {"prompt": "What does the keyed server echo?"},
                {"prompt": "And now?"},
            ],
        }),
    );
    let stderr = report["stderr"].as_str().unwrap_or_default();
    let stops: Vec<&Value> = responses(&report, "prompt")
        .iter()
        .map(|p| &p["result"]["stopReason"])
        .collect();
    assert_eq!(stops, ["end_turn", "end_turn"], "{report:#}\n{stderr}");
    let requests = model.requests();
    assert_eq!(requests.len(), 3, "{report:#}");
    // The server did echo it (the call's result in the same turn carried it) …
    let in_turn = serde_json::to_string(&requests[1]["messages"]).unwrap();
    assert!(in_turn.contains("you sent"), "the echo arrived: {in_turn}");
    // … but the session it was stored in holds it redacted, like the trace.
    let session = responses(&report, "new")[0]["result"]["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let stored = stored_session(&env.home(), &session).to_string();
    assert!(stored.contains("[REDACTED:mcp.keyed]"), "{stored}");
    assert_eq!(files_holding(&env.home(), KEY), Vec::<PathBuf>::new());
    // The next turn reads the session back: the value is not in what the model receives.
    let next_turn = serde_json::to_string(&requests[2]["messages"]).unwrap();
    assert!(
        !next_turn.contains(KEY) && next_turn.contains("[REDACTED:mcp.keyed]"),
        "{next_turn}"
    );
    // Loaded back in a new connection, the replay shows the redacted result.
    let loaded = editor(
        &env,
        json!({"steps": [{"initialize": true}, {"load": session}]}),
    );
    assert!(
        responses(&loaded, "load")[0]["result"].is_object(),
        "{loaded:#}"
    );
    let replayed = loaded["updates"].to_string();
    assert!(!replayed.contains(KEY), "{replayed}");
    assert!(replayed.contains("you sent"), "{replayed}");
}
