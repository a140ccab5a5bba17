//! `bosun serve` with the official Python MCP SDK (`mcp` from PyPI, installed by
//! `scripts/mcp-peers`) as the client, over stdio and Streamable HTTP: what a client lists and
//! calls, that every call is judged by the same policy and traced, and that `ask` reaches the
//! client's user only through elicitation, never as a silent allow.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::{Env, code, stderr};

/// The Python with the MCP SDK: `$BOSUN_MCP_PYTHON`, else the one `scripts/mcp-peers` made.
pub fn python() -> PathBuf {
    if let Some(python) = std::env::var_os("BOSUN_MCP_PYTHON") {
        return python.into();
    }
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"),
        PathBuf::from,
    );
    let python = target.join("mcp-peers/venv/bin/python");
    assert!(
        python.exists(),
        "the MCP peers are not installed: run scripts/mcp-peers (scripts/test does), or set BOSUN_MCP_PYTHON"
    );
    python
}

/// `[mcp.<server>.sandbox]` letting a peer server read what it runs from: the repository (its
/// script), the virtual environment and the Python it was made from, and the TypeScript SDK.
pub fn peer_sandbox(server: &str) -> String {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let python = python();
    let venv = python
        .parent()
        .and_then(|bin| bin.parent())
        .map(PathBuf::from);
    let real = std::fs::canonicalize(&python)
        .ok()
        .and_then(|p| p.parent().and_then(|bin| bin.parent()).map(PathBuf::from));
    let modules = node_modules();
    let reads: Vec<String> = [Some(repo), venv, real, modules.parent().map(PathBuf::from)]
        .into_iter()
        .flatten()
        .filter_map(|p| std::fs::canonicalize(p).ok())
        .map(|p| format!("{:?}", p.display().to_string()))
        .collect();
    format!("\n[mcp.{server}.sandbox]\nread = [{}]\n", reads.join(", "))
}

/// The TypeScript SDK's `node_modules`, as `scripts/mcp-peers` installed it.
pub fn node_modules() -> PathBuf {
    let python = python();
    let peers = python.ancestors().nth(3).unwrap().to_path_buf();
    let modules = peers.join("node/node_modules");
    assert!(
        modules.join("@modelcontextprotocol/sdk").exists(),
        "the TypeScript MCP SDK is not installed: run scripts/mcp-peers (scripts/test does)"
    );
    modules
}

/// Runs the Python client with `plan`, bounded in time, and returns what it printed.
pub(crate) fn peer(plan: &Value) -> Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/peers/mcp_client.py");
    let mut command = Command::new(python());
    command.arg(script);
    run_peer(command, plan)
}

/// Runs the TypeScript client with `plan`.
fn ts_peer(plan: &Value) -> Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/peers/mcp_client.mjs");
    let mut command = Command::new("node");
    command
        .arg(script)
        .env("BOSUN_MCP_NODE_MODULES", node_modules());
    run_peer(command, plan)
}

fn run_peer(mut command: Command, plan: &Value) -> Value {
    let mut child = command
        .arg(plan.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        assert!(
            std::time::Instant::now() < deadline,
            "the MCP client did not finish in 60 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut out = String::new();
    let mut err = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    serde_json::from_str(out.trim())
        .unwrap_or_else(|e| panic!("{e}: client printed {out:?}; stderr:\n{err}"))
}

/// A plan that starts `bosun serve --stdio` in `env`'s workspace.
pub(crate) fn stdio_plan(env: &Env, mode: &str, elicit: Option<&str>, calls: Value) -> Value {
    json!({
        "stdio": {
            "command": env!("CARGO_BIN_EXE_bosun"),
            "args": ["serve", "--stdio"],
            "env": {"BOSUN_HOME": env.home(), "PATH": std::env::var("PATH").unwrap_or_default()},
            "cwd": env.ws(),
        },
        "mode": mode,
        "elicit": elicit,
        "calls": calls,
    })
}

pub(crate) fn text_of(result: &Value) -> String {
    result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

pub(crate) fn is_error(result: &Value) -> bool {
    result["isError"] == true
}

fn install_hello(env: &Env) {
    let target = env.home().join("plugins/hello");
    std::fs::create_dir_all(&target).unwrap();
    std::fs::copy(bosun_test_programs::HELLO, target.join("plugin.wasm")).unwrap();
    let out = env.bosun(&["plugins", "enable", "hi", "--path", "hello", "--yes"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

fn trace_kinds(env: &Env) -> Vec<Vec<String>> {
    env.runs()
        .iter()
        .map(|run| {
            std::fs::read_to_string(run)
                .unwrap()
                .lines()
                .map(|l| {
                    let v: Value = serde_json::from_str(l).unwrap();
                    v["event"]["type"].as_str().unwrap().to_owned()
                })
                .collect()
        })
        .collect()
}

#[test]
fn stdio_client_lists_and_calls_builtins_and_a_plugin_through_policy() {
    let env = Env::new();
    env.user_config(
        "[[policy.rules]]\naction = \"builtin.tool.create_file\"\ndecision = \"deny\"\n",
    );
    install_hello(&env);
    let out = peer(&stdio_plan(
        &env,
        "auto",
        None,
        json!([
            {"name": "read_file", "arguments": {"path": "src/lib.rs"}},
            {"name": "greet", "arguments": {"name": "Ada"}},
            {"name": "create_file", "arguments": {"path": "new.txt", "content": "x"}},
            {"name": "run_command", "arguments": {"program": "touch", "args": ["made.txt"]}},
            {"name": "no_such_tool", "arguments": {}},
            {"name": "read_file", "arguments": {"path": "../../etc/passwd"}},
        ]),
    ));
    // The 2026-07-28 revision, negotiated through server/discover.
    assert_eq!(out["protocol"], "2026-07-28", "{out}");
    assert_eq!(out["server"]["name"], "bosun");

    let tools = out["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    for name in ["read_file", "create_file", "run_command", "greet"] {
        assert!(names.contains(&name), "{name} is listed: {names:?}");
    }
    let read = tools.iter().find(|t| t["name"] == "read_file").unwrap();
    assert_eq!(read["annotations"]["readOnlyHint"], true);
    assert_eq!(read["inputSchema"]["type"], "object");
    let run = tools.iter().find(|t| t["name"] == "run_command").unwrap();
    assert_eq!(run["annotations"]["destructiveHint"], true);

    let calls = out["calls"].as_array().unwrap();
    assert!(!is_error(&calls[0]), "{}", calls[0]);
    assert!(text_of(&calls[0]).contains("pub fn answer() -> u32 { 42 }"));
    assert_eq!(
        calls[0]["structuredContent"]["content"],
        "pub fn answer() -> u32 { 42 }\n"
    );
    // A WebAssembly plugin, in the sandbox.
    assert!(!is_error(&calls[1]), "{}", calls[1]);
    assert_eq!(calls[1]["structuredContent"]["message"], "Hello, Ada!");
    // Denied by the user's rule: a tool error the client's model can read.
    assert!(is_error(&calls[2]));
    assert!(text_of(&calls[2]).starts_with("denied: "), "{}", calls[2]);
    assert!(!env.ws().join("new.txt").exists());
    // `ask` with a client that cannot be asked: refused, with the way to pre-approve it.
    assert!(is_error(&calls[3]));
    assert!(
        text_of(&calls[3]).starts_with("needs_approval: "),
        "{}",
        calls[3]
    );
    assert!(!env.ws().join("made.txt").exists());
    // A name that is no tool: the specification's JSON-RPC error, not a tool result.
    let raised = calls[4]["raised"].as_str().unwrap_or_default();
    assert!(raised.contains("Unknown tool"), "{}", calls[4]);
    assert!(
        text_of(&calls[5]).starts_with("outside_workspace: "),
        "{}",
        calls[5]
    );
    assert_eq!(out["elicited"], json!([]));

    // One trace for the session, with every call judged in it.
    let kinds = trace_kinds(&env);
    let served: Vec<&Vec<String>> = kinds
        .iter()
        .filter(|k| k.first().map(String::as_str) == Some("run.started"))
        .filter(|k| k.iter().filter(|e| *e == "tool.proposed").count() == 6)
        .collect();
    assert_eq!(served.len(), 1, "{kinds:?}");
    assert_eq!(served[0].iter().filter(|e| *e == "tool.decided").count(), 4);
    assert_eq!(served[0].last().unwrap(), "run.finished");
    let inspect = env.bosun(&["inspect", "last"]);
    assert!(
        String::from_utf8_lossy(&inspect.stdout).contains("serve --stdio"),
        "{}",
        String::from_utf8_lossy(&inspect.stdout)
    );
}

#[test]
fn typescript_sdk_client_lists_calls_and_answers_approvals() {
    let env = Env::new();
    env.user_config(
        "[[policy.rules]]\naction = \"builtin.tool.create_file\"\ndecision = \"deny\"\n",
    );
    install_hello(&env);
    let calls = json!([
        {"name": "greet", "arguments": {"name": "Ada"}},
        {"name": "create_file", "arguments": {"path": "new.txt", "content": "x"}},
        {"name": "run_command", "arguments": {"program": "touch", "args": ["made.txt"]}},
    ]);
    let declined = ts_peer(&stdio_plan(&env, "legacy", Some("decline"), calls.clone()));
    assert_eq!(declined["server"]["name"], "bosun", "{declined}");
    assert!(
        declined["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "greet")
    );
    assert_eq!(
        declined["calls"][0]["structuredContent"]["message"], "Hello, Ada!",
        "{declined}"
    );
    assert!(
        text_of(&declined["calls"][1]).starts_with("denied: "),
        "{declined}"
    );
    assert!(
        text_of(&declined["calls"][2]).starts_with("denied: "),
        "{declined}"
    );
    assert_eq!(declined["elicited"].as_array().unwrap().len(), 1);
    assert!(!env.ws().join("made.txt").exists());

    let accepted = ts_peer(&stdio_plan(&env, "legacy", Some("accept"), calls));
    assert!(!is_error(&accepted["calls"][2]), "{accepted}");
    assert!(env.ws().join("made.txt").exists());
    assert!(
        !env.ws().join("new.txt").exists(),
        "an elicitation never overrides a deny"
    );

    // Over Streamable HTTP, with no way to ask: refused, not run.
    let server = HttpServer::start(&env, &[], &[]);
    let out = ts_peer(&json!({"url": server.url, "calls": [
        {"name": "read_file", "arguments": {"path": "src/lib.rs"}},
        {"name": "run_command", "arguments": {"program": "touch", "args": ["http.txt"]}},
    ]}));
    assert!(text_of(&out["calls"][0]).contains("pub fn answer"), "{out}");
    assert!(
        text_of(&out["calls"][1]).starts_with("needs_approval: "),
        "{out}"
    );
    assert!(!env.ws().join("http.txt").exists());
}

#[test]
fn ask_becomes_an_elicitation_the_client_user_answers() {
    let env = Env::new();
    // The handshake revision: servers may ask the client's user.
    let calls =
        json!([{"name": "run_command", "arguments": {"program": "touch", "args": ["made.txt"]}}]);
    let declined = peer(&stdio_plan(&env, "legacy", Some("decline"), calls.clone()));
    assert_eq!(declined["protocol"], "2025-11-25", "{declined}");
    let elicited = declined["elicited"].as_array().unwrap();
    assert_eq!(elicited.len(), 1);
    let question = elicited[0].as_str().unwrap();
    assert!(
        question.contains("run_command") && question.contains("touch"),
        "{question}"
    );
    assert!(
        text_of(&declined["calls"][0]).starts_with("denied: "),
        "{declined}"
    );
    assert!(!env.ws().join("made.txt").exists());

    let accepted = peer(&stdio_plan(&env, "legacy", Some("accept"), calls));
    assert!(!is_error(&accepted["calls"][0]), "{accepted}");
    assert!(env.ws().join("made.txt").exists());
    // Answered once, asked once.
    assert_eq!(
        accepted["elicited"].as_array().unwrap().len(),
        1,
        "{accepted}"
    );

    // "For this session": the second call of the same tool is not asked about again.
    let twice = json!([
        {"name": "run_command", "arguments": {"program": "touch", "args": ["a.txt"]}},
        {"name": "run_command", "arguments": {"program": "touch", "args": ["b.txt"]}},
    ]);
    let session = peer(&stdio_plan(&env, "legacy", Some("accept_session"), twice));
    assert_eq!(
        session["elicited"].as_array().unwrap().len(),
        1,
        "{session}"
    );
    assert!(env.ws().join("a.txt").exists() && env.ws().join("b.txt").exists());

    // Under 2026-07-28 a server may not ask mid-call: the question ends the call as
    // `input_required`, and the client's retry carries its user's answer.
    let touch = |file: &str| json!([{"name": "run_command", "arguments": {"program": "touch", "args": [file]}}]);
    let declined = peer(&stdio_plan(&env, "auto", Some("decline"), touch("c.txt")));
    assert_eq!(declined["protocol"], "2026-07-28", "{declined}");
    assert_eq!(
        declined["elicited"].as_array().unwrap().len(),
        1,
        "{declined}"
    );
    assert!(
        text_of(&declined["calls"][0]).starts_with("denied: "),
        "{declined}"
    );
    assert!(!env.ws().join("c.txt").exists());
    let accepted = peer(&stdio_plan(&env, "auto", Some("accept"), touch("c.txt")));
    let question = accepted["elicited"][0].as_str().unwrap_or_default();
    assert!(
        question.contains("touch") && question.contains("c.txt"),
        "{accepted}"
    );
    assert!(!is_error(&accepted["calls"][0]), "{accepted}");
    assert!(env.ws().join("c.txt").exists());
    // The retry carried the answer: the question it answered is not asked again (the call
    // runs from the start, and its question finds the answer instead of a new elicitation).
    assert_eq!(
        accepted["elicited"].as_array().unwrap().len(),
        1,
        "{accepted}"
    );
    // No answer lasts beyond its call (the revision has no sessions): the next call asks again.
    let twice = json!([
        {"name": "run_command", "arguments": {"program": "touch", "args": ["d.txt"]}},
        {"name": "run_command", "arguments": {"program": "touch", "args": ["e.txt"]}},
    ]);
    let session = peer(&stdio_plan(&env, "auto", Some("accept_session"), twice));
    assert_eq!(
        session["elicited"].as_array().unwrap().len(),
        2,
        "{session}"
    );
    // A client that cannot elicit is never asked, and nothing runs.
    let mute = peer(&stdio_plan(&env, "auto", None, touch("f.txt")));
    assert!(
        text_of(&mute["calls"][0]).starts_with("needs_approval: "),
        "{mute}"
    );
    assert!(!env.ws().join("f.txt").exists());
}

/// `bosun serve --http` on a free loopback port, stopped on drop.
pub struct HttpServer {
    child: Child,
    pub url: String,
    addr: String,
}

impl HttpServer {
    pub fn start(env: &Env, extra: &[&str], vars: &[(&str, &str)]) -> Self {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_bosun"));
        cmd.args(["serve", "--http", "127.0.0.1:0"])
            .args(extra)
            .current_dir(env.ws())
            .env("BOSUN_HOME", env.home())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (k, v) in vars {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let url = loop {
            let line = lines
                .next()
                .expect("bosun serve --http exited before listening")
                .unwrap();
            if let Some(at) = line.find("http://") {
                break line[at..].trim().to_owned();
            }
        };
        let addr = url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .to_owned();
        Self { child, url, addr }
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// One raw HTTP/1.1 POST to /mcp; returns the status code.
    fn post(&self, headers: &[(&str, &str)]) -> u16 {
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;
        let mut stream = TcpStream::connect(&self.addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut request = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
            self.addr,
            body.len()
        );
        for (k, v) in headers {
            request.push_str(&format!("{k}: {v}\r\n"));
        }
        request.push_str("\r\n");
        request.push_str(body);
        stream.write_all(request.as_bytes()).unwrap();
        let mut head = String::new();
        BufReader::new(stream).read_line(&mut head).unwrap();
        head.split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or_else(|| panic!("not an HTTP response: {head:?}"))
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn http_client_calls_through_the_same_chokepoint() {
    let env = Env::new();
    install_hello(&env);
    let server = HttpServer::start(&env, &[], &[]);
    let out = peer(&json!({
        "url": server.url,
        "mode": "auto",
        "calls": [
            {"name": "greet", "arguments": {"name": "Grace"}},
            {"name": "run_command", "arguments": {"program": "touch", "args": ["made.txt"]}},
        ],
    }));
    assert!(
        out["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "greet")
    );
    assert_eq!(
        out["calls"][0]["structuredContent"]["message"], "Hello, Grace!",
        "{out}"
    );
    assert!(
        text_of(&out["calls"][1]).starts_with("needs_approval: "),
        "{out}"
    );
    assert!(!env.ws().join("made.txt").exists());

    // The legacy handshake over HTTP works too.
    let legacy = peer(&json!({"url": server.url, "mode": "legacy", "calls": [
        {"name": "read_file", "arguments": {"path": "src/lib.rs"}},
    ]}));
    assert_eq!(legacy["protocol"], "2025-11-25");
    assert!(!is_error(&legacy["calls"][0]), "{legacy}");
}

#[test]
fn http_refuses_other_origins_and_hosts_and_wants_its_token() {
    let env = Env::new();
    let token = "0123456789abcdef0123456789abcdef";
    let server = HttpServer::start(
        &env,
        &[
            "--token-env",
            "SERVE_TOKEN",
            "--allow-origin",
            "https://app.example.com:443",
        ],
        &[("SERVE_TOKEN", token)],
    );
    let bearer = format!("Bearer {token}");
    assert_eq!(server.post(&[("Authorization", &bearer)]), 200);
    assert_eq!(server.post(&[]), 401);
    assert_eq!(server.post(&[("Authorization", "Bearer wrong")]), 401);
    // A web page (DNS rebinding, or any local web server's) is refused even with the token,
    // unless its origin was allowed.
    for origin in ["https://evil.example", "http://localhost:3000"] {
        assert_eq!(
            server.post(&[("Authorization", &bearer), ("Origin", origin)]),
            403,
            "{origin}"
        );
    }
    assert_eq!(
        server.post(&[
            ("Authorization", &bearer),
            ("Origin", "https://app.example.com")
        ]),
        200
    );
    // The client with the token gets through.
    let out = peer(&json!({"url": server.url, "token": token, "calls": [
        {"name": "read_file", "arguments": {"path": "src/lib.rs"}},
    ]}));
    assert!(!is_error(&out["calls"][0]), "{out}");
}

#[test]
fn serve_refuses_unsafe_listening_and_bad_input() {
    let env = Env::new();
    let out = env.bosun(&["serve", "--http", "0.0.0.0:0"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("--allow-remote"), "{}", stderr(&out));
    let out = env.bosun_with_env(
        &[
            "serve",
            "--http",
            "0.0.0.0:0",
            "--allow-remote",
            "--token-env",
            "T",
        ],
        &[("T", "short")],
    );
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("16 characters"), "{}", stderr(&out));

    // Garbage instead of a handshake: a clear error, no panic, no trace.
    let mut child = Command::new(env!("CARGO_BIN_EXE_bosun"))
        .args(["serve", "--stdio"])
        .current_dir(env.ws())
        .env("BOSUN_HOME", env.home())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"this is not json-rpc\n{\"jsonrpc\": \"2.0\"}\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(env.runs().is_empty());
}

#[test]
fn a_plugin_installed_through_mcp_is_announced_and_listed() {
    let env = Env::new();
    let dir = env.ws().join(".bosun/plugins/word-tools");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("mod.ts"), super::js::MOD_TS).unwrap();
    let out = peer(&stdio_plan(
        &env,
        "legacy",
        Some("accept"),
        json!([
            {"name": "plugin_scan", "arguments": {"path": ".bosun/plugins/word-tools"}},
            {"name": "plugin_install", "arguments": {"name": "word-tools"}},
            {"name": "plugin_word-tools_count_words", "arguments": {"text": "one two three"}},
        ]),
    ));
    assert!(!is_error(&out["calls"][1]), "{out}");
    assert!(
        out["notifications"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n == "notifications/tools/list_changed"),
        "{out}"
    );
    let before: Vec<&Value> = out["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| &t["name"])
        .collect();
    assert!(!before.iter().any(|n| *n == "plugin_word-tools_count_words"));
    assert!(
        out["tools_after"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n == "plugin_word-tools_count_words"),
        "{out}"
    );
    assert!(text_of(&out["calls"][2]).contains('3'), "{out}");
}

#[test]
fn skills_are_offered_as_prompts_and_a_prompt_carries_the_skill() {
    let env = Env::new();
    let dir = env.home().join("skills/deploy");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        "---\nname: deploy\ndescription: How this team deploys.\ndisable-model-invocation: true\n---\nRun the tests, then tag.\n",
    )
    .unwrap();
    let mut plan = stdio_plan(&env, "auto", None, json!([]));
    plan["prompts"] = json!(["deploy", "nonexistent"]);
    let out = peer(&plan);
    let names: Vec<&str> = out["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    // A person picking a prompt selects it: explicit-only skills are listed too.
    assert!(
        names.contains(&"deploy") && names.contains(&"bosun-plugin-author"),
        "{out}"
    );
    let got = out["got"][0].to_string();
    assert!(got.contains("Run the tests, then tag."), "{got}");
    assert!(
        got.contains("ship it"),
        "the task argument follows the skill: {got}"
    );
    assert!(
        out["got"][1]["raised"]
            .as_str()
            .unwrap()
            .contains("no skill"),
        "{out}"
    );
}

/// A 2026-07-28 client hears of a changed tool set only on a `subscriptions/listen` stream it
/// opened: Bosun accepts the stream and announces a plugin installed by a call on it.
#[test]
fn a_listening_client_of_the_newest_revision_hears_the_tool_set_change() {
    let env = Env::new();
    env.user_config(
        "[[policy.rules]]\naction = \"builtin.tool.plugin_*\"\ndecision = \"allow\"\n\n\
         [[policy.rules]]\naction = \"plugin.word-tools.tool.*\"\ndecision = \"allow\"\n",
    );
    let dir = env.ws().join(".bosun/plugins/word-tools");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("mod.ts"), super::js::MOD_TS).unwrap();
    let mut plan = stdio_plan(
        &env,
        "auto",
        None,
        json!([
            {"name": "plugin_scan", "arguments": {"path": ".bosun/plugins/word-tools"}},
            {"name": "plugin_install", "arguments": {"name": "word-tools"}},
        ]),
    );
    plan["listen"] = json!(true);
    let out = peer(&plan);
    assert_eq!(out["protocol"], "2026-07-28", "{out}");
    assert!(!is_error(&out["calls"][1]), "{out}");
    assert!(
        out["listened"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e.as_str().unwrap().contains("Tools")),
        "{out}"
    );
    assert!(
        out["tools_after"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n == "plugin_word-tools_count_words"),
        "{out}"
    );
}

/// `bosun serve --stdio` driven by hand, one JSON-RPC line at a time: for what an SDK client
/// will not send (a request claiming another revision inside a session) and to see exactly what
/// the server sends (a request the client never declared it could answer).
struct RawSession {
    child: Child,
    stdin: std::process::ChildStdin,
    lines: std::sync::mpsc::Receiver<Value>,
    next: u64,
    /// Requests the server sent, by method.
    asked: Vec<Value>,
    /// How this client answers `elicitation/create`; `None` ignores it, as a client that never
    /// declared elicitation would.
    elicit: Option<Value>,
}

impl RawSession {
    /// A session opened with `initialize` (2025-11-25) declaring `capabilities`.
    fn open(env: &Env, capabilities: Value, elicit: Option<Value>) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_bosun"))
            .args(["serve", "--stdio"])
            .current_dir(env.ws())
            .env("BOSUN_HOME", env.home())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (send, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Ok(message) = serde_json::from_str::<Value>(&line)
                    && send.send(message).is_err()
                {
                    break;
                }
            }
        });
        let mut session = Self {
            child,
            stdin,
            lines,
            next: 0,
            asked: Vec::new(),
            elicit,
        };
        let opened = session.request(
            "initialize",
            json!({
                "protocolVersion": "2025-11-25",
                "capabilities": capabilities,
                "clientInfo": {"name": "raw", "version": "1.0.0"},
            }),
        );
        assert_eq!(
            opened["result"]["protocolVersion"], "2025-11-25",
            "{opened}"
        );
        session.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        session
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Sends `method` and waits for its answer, noting (and answering, if told how) every
    /// request the server sends meanwhile.
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let message = self
                .lines
                .recv_timeout(Duration::from_secs(30))
                .unwrap_or_else(|_| {
                    panic!(
                        "no answer to `{method}` within 30 s; the server asked meanwhile: {:?}",
                        self.asked
                    )
                });
            if message["id"] == id && message.get("method").is_none() {
                return message;
            }
            if let Some(asked) = message
                .get("method")
                .filter(|_| message.get("id").is_some())
            {
                self.asked.push(message.clone());
                if asked == "elicitation/create"
                    && let Some(answer) = self.elicit.clone()
                {
                    let reply = json!({"jsonrpc": "2.0", "id": message["id"], "result": answer});
                    self.send(&reply);
                }
            }
        }
    }

    /// Calls `tool`; `meta` goes in the request's `_meta` as sent.
    fn call(&mut self, tool: &str, arguments: Value, meta: Option<Value>) -> Value {
        let mut params = json!({"name": tool, "arguments": arguments});
        if let Some(meta) = meta {
            params["_meta"] = meta;
        }
        self.request("tools/call", params)
    }
}

impl Drop for RawSession {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn an_unknown_tool_is_the_specs_invalid_params_error() {
    let env = Env::new();
    let mut session = RawSession::open(&env, json!({}), None);
    // Never guessed: another case, a prefix, a name with a hidden character, a withheld MCP name.
    for name in [
        "no_such_tool",
        "READ_FILE",
        "read_fil",
        "read_file\u{200b}",
        "mcp__nowhere__tool",
    ] {
        let answer = session.call(name, json!({"path": "src/lib.rs"}), None);
        assert_eq!(answer["error"]["code"], -32602, "{name}: {answer}");
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(message.starts_with("Unknown tool: "), "{name}: {answer}");
        assert!(answer.get("result").is_none(), "{name}: {answer}");
    }
    // A real tool's failure stays a result the client's model can read.
    let failed = session.call("read_file", json!({"path": "missing.txt"}), None);
    assert_eq!(failed["result"]["isError"], true, "{failed}");
}

#[test]
fn only_a_client_that_declared_elicitation_is_sent_one() {
    let env = Env::new();
    let touch = |file: &str| json!({"program": "touch", "args": [file]});
    // No elicitation declared, or only the URL mode: refused at once, never asked — a client
    // that ignores a request it never said it could answer would otherwise hold the call.
    for (capabilities, file) in [
        (json!({}), "a.txt"),
        (json!({"elicitation": {"url": {}}}), "b.txt"),
        (json!({"roots": {"listChanged": true}}), "c.txt"),
    ] {
        let mut session = RawSession::open(&env, capabilities.clone(), None);
        let started = std::time::Instant::now();
        let answer = session.call("run_command", touch(file), None);
        let text = text_of(&answer["result"]);
        assert!(
            text.starts_with("needs_approval: "),
            "{capabilities}: {answer}"
        );
        assert!(
            text.contains("did not declare form elicitation"),
            "{capabilities}: {text}"
        );
        assert_eq!(session.asked, Vec::<Value>::new(), "{capabilities}");
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{capabilities}"
        );
        assert!(!env.ws().join(file).exists(), "{capabilities}");
    }
    // Declared (form, or the modeless form of earlier revisions): asked, and the answer holds.
    for (capabilities, answer, file, made) in [
        (
            json!({"elicitation": {}}),
            json!({"action": "decline"}),
            "d.txt",
            false,
        ),
        (
            json!({"elicitation": {"form": {}}}),
            json!({"action": "accept", "content": {}}),
            "e.txt",
            true,
        ),
    ] {
        let mut session = RawSession::open(&env, capabilities.clone(), Some(answer));
        session.call("run_command", touch(file), None);
        let asked: Vec<&Value> = session.asked.iter().map(|m| &m["method"]).collect();
        assert_eq!(asked, vec!["elicitation/create"], "{capabilities}");
        assert_eq!(env.ws().join(file).exists(), made, "{capabilities}");
    }
}

#[test]
fn a_request_claiming_the_newest_revision_inside_a_session_keeps_the_sessions_labels() {
    let env = Env::new();
    env.user_config(
        r#"
[classification]
write_down = "deny"

[[classification.paths]]
glob = "secrets/**"
level = "RESTRICTED"

[[classification.paths]]
glob = "public/**"
level = "PUBLIC"

[[classification.paths]]
glob = "downloads/**"
untrusted = true

[[policy.rules]]
action = "builtin.tool.create_file"
decision = "allow"

[[policy.rules]]
action = "builtin.tool.run_command"
decision = "allow"

[[policy.rules]]
action = "process.spawn"
program = "touch"
decision = "allow"
"#,
    );
    for dir in ["secrets", "public", "downloads"] {
        std::fs::create_dir_all(env.ws().join(dir)).unwrap();
    }
    std::fs::write(env.ws().join("secrets/key.txt"), "hunter2\n").unwrap();
    std::fs::write(env.ws().join("downloads/page.txt"), "run this\n").unwrap();
    // A claim the SDK accepts carries the revision's whole envelope (a bare protocolVersion is
    // refused by rmcp before Bosun sees it).
    let claims = [
        json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "other", "version": "9"},
            "io.modelcontextprotocol/clientCapabilities": {},
        }),
        json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "other", "version": "9"},
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
        }),
    ];
    for (n, claim) in claims.iter().enumerate() {
        let leak = format!("public/leak{n}.txt");
        let ran = format!("ran{n}.txt");

        // A workspace holding RESTRICTED data makes every program a write-down (denied here),
        // so the parts about programs run while the secret is elsewhere.
        let secret = env.ws().join("secrets/key.txt");
        let aside = env.dir.path().join("key.txt");
        std::fs::rename(&secret, &aside).unwrap();

        // The control: a fresh session's write to public/ and its command are allowed.
        let mut fresh = RawSession::open(&env, json!({}), None);
        let control = format!("public/control{n}.txt");
        let answer = fresh.call(
            "create_file",
            json!({"path": control, "content": "x"}),
            Some(claim.clone()),
        );
        assert!(
            answer.get("result").is_some() && answer["result"]["isError"] != true,
            "{answer}"
        );
        assert!(env.ws().join(&control).exists(), "{answer}");
        let control_ran = format!("control{n}.txt");
        let answer = fresh.call(
            "run_command",
            json!({"program": "touch", "args": [control_ran]}),
            Some(claim.clone()),
        );
        assert!(
            answer.get("result").is_some() && answer["result"]["isError"] != true,
            "{answer}"
        );
        assert!(env.ws().join(&control_ran).exists(), "{answer}");

        // Confidentiality: after a RESTRICTED read, writing down is denied in the session,
        // whatever revision the writing request claims.
        std::fs::rename(&aside, &secret).unwrap();
        let mut session = RawSession::open(&env, json!({}), None);
        let read = session.call("read_file", json!({"path": "secrets/key.txt"}), None);
        assert!(text_of(&read["result"]).contains("hunter2"), "{read}");
        let answer = session.call(
            "create_file",
            json!({"path": leak, "content": "hunter2"}),
            Some(claim.clone()),
        );
        let text = text_of(&answer["result"]);
        assert!(text.starts_with("denied: "), "{claim}: {answer}");
        assert!(text.contains("RESTRICTED"), "{text}");
        assert!(!env.ws().join(&leak).exists(), "{claim}");

        // Integrity: after untrusted input, starting a program asks — here nobody can answer.
        std::fs::rename(&secret, &aside).unwrap();
        let mut session = RawSession::open(&env, json!({}), None);
        session.call("read_file", json!({"path": "downloads/page.txt"}), None);
        let answer = session.call(
            "run_command",
            json!({"program": "touch", "args": [ran]}),
            Some(claim.clone()),
        );
        assert!(
            text_of(&answer["result"]).starts_with("needs_approval: "),
            "{claim}: {answer}"
        );
        assert!(!env.ws().join(&ran).exists(), "{claim}");
        assert_eq!(session.asked, Vec::<Value>::new(), "{claim}");
        std::fs::rename(&aside, &secret).unwrap();
    }
}
