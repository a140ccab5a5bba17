//! `bosun serve` with the MCP clients people bring — Codex CLI, Claude Code, the MCP Inspector —
//! and the official MCP conformance suite, all installed by `scripts/client-peers` into the
//! target directory, each started and stopped by its test, on loopback only.
//!
//! The agent clients talk to a scripted model on loopback
//! (`tests/peers/clients/model_standin.py`) that speaks their provider's wire format (the OpenAI
//! Responses API for Codex, the Anthropic Messages API for Claude Code): its first turns call
//! Bosun's tools through the client, its last answers with what they returned, so what the
//! client prints is what a user would read. The configurations are read from docs/mcp.md: the
//! documented ones are the tested ones.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::serve::HttpServer;
use super::{Env, code, stderr};

/// How long one client run may take before the test fails (a run takes a few seconds).
const CLIENT_LIMIT: Duration = Duration::from_secs(90);

/// Where `scripts/client-peers` installed the clients.
fn peers() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"),
        PathBuf::from,
    );
    let dir = target.join("client-peers");
    assert!(
        dir.join(".pinned").exists(),
        "the MCP clients are not installed in {}: run scripts/client-peers (scripts/test does)",
        dir.display()
    );
    dir
}

fn bin(name: &str) -> PathBuf {
    peers().join("node_modules/.bin").join(name)
}

/// `PATH` with the clients' Node.js 22 first (Claude Code and the Inspector need it).
fn path() -> OsString {
    let mut paths = vec![peers().join("node_modules/.bin")];
    paths.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(paths).unwrap()
}

fn bosun() -> String {
    env!("CARGO_BIN_EXE_bosun").to_owned()
}

/// The fenced block after `<!-- tested: NAME -->` in docs/mcp.md.
fn doc_block(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/mcp.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let marker = format!("<!-- tested: {name} -->");
    let after = doc
        .split_once(&marker)
        .unwrap_or_else(|| panic!("docs/mcp.md has no {marker}"))
        .1;
    let fenced = after.split_once("```").unwrap().1;
    let body = fenced.split_once('\n').unwrap().1;
    body.split_once("```").unwrap().0.to_owned()
}

/// Reads a pipe to its end on a thread; what it read so far stays readable.
fn drain(
    mut from: impl Read + Send + 'static,
) -> (Arc<Mutex<Vec<u8>>>, std::thread::JoinHandle<()>) {
    let buffer = Arc::new(Mutex::new(Vec::new()));
    let into = buffer.clone();
    let thread = std::thread::spawn(move || {
        let mut chunk = [0u8; 8192];
        while let Ok(n) = from.read(&mut chunk) {
            if n == 0 {
                break;
            }
            into.lock().unwrap().extend_from_slice(&chunk[..n]);
        }
    });
    (buffer, thread)
}

/// Runs `command` to its end within `limit`; past it, kills it and fails the test. A server the
/// client started and left holding its pipes does not hold the test: the pipes are read for at
/// most two seconds after the client exits.
fn bounded(mut command: Command, limit: Duration) -> Output {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {command:?}: {e}"));
    let (out, out_thread) = drain(child.stdout.take().unwrap());
    let (err, err_thread) = drain(child.stderr.take().unwrap());
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{command:?} did not finish in {limit:?}; it printed:\n{}\n{}",
                String::from_utf8_lossy(&out.lock().unwrap()),
                String::from_utf8_lossy(&err.lock().unwrap())
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let drained = Instant::now() + Duration::from_secs(2);
    while !(out_thread.is_finished() && err_thread.is_finished()) && Instant::now() < drained {
        std::thread::sleep(Duration::from_millis(10));
    }
    let stdout = out.lock().unwrap().clone();
    let stderr = err.lock().unwrap().clone();
    Output {
        status,
        stdout,
        stderr,
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The scripted model on loopback, stopped on drop.
struct Standin {
    child: Child,
    url: String,
    log: PathBuf,
}

impl Standin {
    fn start(env: &Env, wire: &str, script: Value) -> Self {
        let log = env.dir.path().join(format!("model-{wire}.jsonl"));
        let _ = std::fs::remove_file(&log);
        let plan = json!({"wire": wire, "script": script, "log": log, "idle_secs": 120});
        let script =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/peers/clients/model_standin.py");
        let mut child = Command::new("python3")
            .arg(script)
            .arg(plan.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .strip_prefix("listening ")
            .unwrap_or_else(|| panic!("the model stand-in said {line:?}"))
            .to_owned();
        Self {
            child,
            url: format!("http://127.0.0.1:{port}"),
            log,
        }
    }

    /// What the model answered in the client's main conversation, in order: `["tool", [namespace,
    /// name], arguments]` or `["say", text]`.
    fn answers(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter_map(|e| e.get("answer").cloned())
            .filter(|a| a[1] != "stand-in")
            .collect()
    }
}

impl Drop for Standin {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Every event of every trace Bosun wrote, in order of the runs.
fn events(env: &Env) -> Vec<Value> {
    env.runs()
        .iter()
        .flat_map(|run| {
            std::fs::read_to_string(run)
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str::<Value>(l).unwrap()["event"].clone())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The events of `kind` about `tool`.
fn about<'a>(events: &'a [Value], kind: &str, tool: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["type"] == kind && (e["tool"] == tool || tool.is_empty()))
        .collect()
}

/// The workspace the agent clients work in: a file with a word only the file knows, and a
/// policy that lets `touch` run and refuses `create_file`.
fn agent_env() -> Env {
    let env = Env::new();
    std::fs::write(env.ws().join("notes.txt"), "the secret word is pelican\n").unwrap();
    env
}

const ALLOW_TOUCH: &str = "[[policy.rules]]\naction = \"builtin.tool.run_command\"\ndecision = \"allow\"\n\n[[policy.rules]]\naction = \"process.spawn\"\nprogram = \"touch\"\ndecision = \"allow\"\n";
const DENY_CREATE: &str =
    "[[policy.rules]]\naction = \"builtin.tool.create_file\"\ndecision = \"deny\"\n";

/// Read a file, run a program Bosun allows, answer with both results.
fn read_then_run() -> Value {
    json!([
        {"tool": "read_file", "arguments": {"path": "notes.txt"}},
        {"tool": "run_command", "arguments": {"program": "touch", "args": ["made.txt"]}},
        {"say": "Here is what I found:\n{results}"},
    ])
}

/// Write a file policy denies, run a program policy asks about, answer with both results.
fn denied_then_asked() -> Value {
    json!([
        {"tool": "create_file", "arguments": {"path": "planted.txt", "content": "x"}},
        {"tool": "run_command", "arguments": {"program": "touch", "args": ["asked.txt"]}},
        {"say": "What Bosun said:\n{results}"},
    ])
}

/// The checks every agent client's happy path shares: the answer carries the file's content,
/// both calls reached Bosun, were allowed, ran and are in its trace as `bosun inspect` shows it.
fn assert_read_then_ran(env: &Env, out: &Output, model: &Standin) {
    let said = text(&out.stdout);
    assert!(out.status.success(), "{said}\n{}", text(&out.stderr));
    assert!(
        said.contains("the secret word is pelican"),
        "{said}\n{}",
        text(&out.stderr)
    );
    let answers = model.answers();
    assert_eq!(answers.len(), 3, "{answers:?}");
    assert!(env.ws().join("made.txt").exists(), "{said}");
    let events = events(env);
    for tool in ["read_file", "run_command"] {
        assert_eq!(about(&events, "tool.proposed", tool).len(), 1, "{events:?}");
        assert_eq!(
            about(&events, "tool.completed", tool).len(),
            1,
            "{events:?}"
        );
    }
    let inspect = env.bosun(&["inspect", "last"]);
    assert_eq!(code(&inspect), 0, "{}", stderr(&inspect));
    let shown = text(&inspect.stdout);
    for needle in [
        "proposed read_file",
        "proposed run_command",
        "decided allow",
    ] {
        assert!(shown.contains(needle), "{needle} missing from\n{shown}");
    }
}

/// The checks of the denied and the asked call: the model (and so the user) reads why each was
/// refused, and neither had any effect.
fn assert_denied_and_not_run(env: &Env, out: &Output) -> Vec<Value> {
    let said = text(&out.stdout);
    assert!(out.status.success(), "{said}\n{}", text(&out.stderr));
    assert!(said.contains("denied: "), "{said}");
    assert!(said.contains("builtin.tool.create_file"), "{said}");
    assert!(!env.ws().join("planted.txt").exists());
    assert!(!env.ws().join("asked.txt").exists(), "{said}");
    let events = events(env);
    let decided = about(&events, "tool.decided", "create_file");
    assert_eq!(decided.len(), 1, "{events:?}");
    assert_eq!(decided[0]["explanation"]["decision"], "deny", "{events:?}");
    assert!(about(&events, "tool.started", "").is_empty(), "{events:?}");
    assert!(
        !about(&events, "approval.asked", "run_command").is_empty(),
        "{events:?}"
    );
    events
}

// ---------------------------------------------------------------------------------------------
// Codex CLI

/// Runs `codex exec TASK` in `env`'s workspace with Bosun as its MCP server, configured as
/// docs/mcp.md says, and the stand-in as its model.
fn codex(env: &Env, script: Value) -> (Output, Standin) {
    let model = Standin::start(env, "responses", script);
    let codex_home = env.dir.path().join("codex-home");
    std::fs::create_dir_all(&codex_home).unwrap();
    let server = doc_block("codex")
        .replace("command = \"bosun\"", &format!("command = {:?}", bosun()))
        .replace("/path/to/project", &env.ws().display().to_string());
    // The model provider is the stand-in; Codex's own tools never need asking about here.
    let config = format!(
        "model = \"stand-in\"\nmodel_provider = \"standin\"\napproval_policy = \"never\"\nsandbox_mode = \"read-only\"\n\n[model_providers.standin]\nname = \"scripted stand-in\"\nbase_url = \"{}/v1\"\nwire_api = \"responses\"\n\n{server}env = {{ BOSUN_HOME = {:?} }}\n",
        model.url,
        env.home().display().to_string()
    );
    std::fs::write(codex_home.join("config.toml"), config).unwrap();
    let mut command = Command::new(bin("codex"));
    command
        .args(["exec", "--skip-git-repo-check", "Do the task."])
        .current_dir(env.ws())
        .env("CODEX_HOME", &codex_home)
        .env("HOME", env.dir.path())
        .env("PATH", path())
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL");
    (bounded(command, CLIENT_LIMIT), model)
}

#[test]
fn codex_exec_reads_and_runs_through_bosun_and_answers_with_the_file() {
    let env = agent_env();
    env.user_config(ALLOW_TOUCH);
    let (out, model) = codex(&env, read_then_run());
    assert_read_then_ran(&env, &out, &model);
    // Codex offers a server's tools in one namespace, named after the server.
    assert_eq!(model.answers()[0][1], json!(["mcp__bosun", "read_file"]));
}

#[test]
fn codex_exec_shows_the_model_a_denial_and_declines_every_question() {
    let env = agent_env();
    env.user_config(DENY_CREATE);
    let (out, _model) = codex(&env, denied_then_asked());
    let events = assert_denied_and_not_run(&env, &out);
    // Codex declares elicitation; `codex exec` has nobody to show the question to and answers
    // it `decline` itself, which Bosun reads as the refusal it is.
    let said = text(&out.stdout);
    assert!(
        said.contains("denied: the person declined run_command"),
        "{said}"
    );
    let answered = about(&events, "approval.answered", "");
    assert_eq!(answered.len(), 1, "{events:?}");
    assert_eq!(answered[0]["answer"], "deny", "{events:?}");
}

// ---------------------------------------------------------------------------------------------
// Claude Code

/// Runs `claude -p TASK` as docs/mcp.md says, with `mcp_config` (the JSON of one of its blocks,
/// made to this test's binary and home) and the stand-in as its model.
fn claude(env: &Env, mcp_config: &Value, script: Value) -> (Output, Standin) {
    let model = Standin::start(env, "anthropic", script);
    let config = env.dir.path().join("bosun-mcp.json");
    std::fs::write(&config, mcp_config.to_string()).unwrap();
    let home = env.dir.path().join("claude-home");
    std::fs::create_dir_all(&home).unwrap();
    // `claude -p "…" --mcp-config bosun.json --allowedTools mcp__bosun`, as documented.
    let line = doc_block("claude-command");
    let (head, rest) = line.split_once('"').unwrap();
    assert_eq!(
        head.split_whitespace().collect::<Vec<_>>(),
        ["claude", "-p"],
        "{line}"
    );
    let options = rest.split_once('"').unwrap().1;
    let mut command = Command::new(bin("claude"));
    command.args(["-p", "Do the task."]);
    for word in options.split_whitespace() {
        if word == "bosun.json" {
            command.arg(&config);
        } else {
            command.arg(word);
        }
    }
    command
        .current_dir(env.ws())
        .env("HOME", &home)
        .env("PATH", path())
        .env("ANTHROPIC_BASE_URL", &model.url)
        .env("ANTHROPIC_API_KEY", "sk-ant-stand-in")
        .env_remove("ANTHROPIC_AUTH_TOKEN")
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CLAUDECODE")
        // No telemetry, update checks or other calls beyond the model on loopback.
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        // Offer the MCP tools to the model directly rather than behind a tool search the
        // scripted model would have to go through first.
        .env("ENABLE_TOOL_SEARCH", "false");
    (bounded(command, CLIENT_LIMIT), model)
}

/// docs/mcp.md's stdio configuration for Claude Code, with this test's binary and home.
fn claude_stdio(env: &Env) -> Value {
    let mut config: Value = serde_json::from_str(&doc_block("claude-stdio")).unwrap();
    assert_eq!(
        config["mcpServers"]["bosun"]["command"], "bosun",
        "{config}"
    );
    let server = &mut config["mcpServers"]["bosun"];
    server["command"] = json!(bosun());
    server["env"] = json!({"BOSUN_HOME": env.home()});
    config
}

/// docs/mcp.md's HTTP configuration for Claude Code, pointed at `server`.
fn claude_http(server: &HttpServer) -> Value {
    let text = doc_block("claude-http").replace("http://127.0.0.1:8765/mcp", &server.url);
    serde_json::from_str(&text).unwrap()
}

/// What Claude Code under `-p` does with Bosun's question: it declares elicitation, is sent the
/// question, and dismisses it (`cancel`) with nobody to show it to. The user reads that the call
/// needs approval and how to give it; the call never runs.
fn assert_dismissed(env: &Env, out: &Output, events: &[Value]) {
    let said = text(&out.stdout);
    assert!(said.contains("needs_approval: "), "{said}");
    assert!(said.contains("gave no answer"), "{said}");
    assert!(said.contains("`builtin.tool.run_command`"), "{said}");
    assert!(!said.contains("person declined"), "{said}");
    let answered = about(events, "approval.answered", "");
    assert!(!answered.is_empty(), "{events:?}");
    assert!(
        answered.iter().all(|a| a["answer"] == "unavailable"),
        "{events:?}"
    );
    assert!(!env.ws().join("asked.txt").exists());
}

#[test]
fn claude_code_over_stdio_reads_and_runs_through_bosun_and_answers_with_the_file() {
    let env = agent_env();
    env.user_config(ALLOW_TOUCH);
    let (out, model) = claude(&env, &claude_stdio(&env), read_then_run());
    assert_read_then_ran(&env, &out, &model);
    // Claude Code names a server's tools mcp__SERVER__TOOL.
    assert_eq!(
        model.answers()[0][1],
        json!([null, "mcp__bosun__read_file"])
    );
}

#[test]
fn claude_code_over_stdio_shows_the_model_a_denial_and_needs_approval_it_cannot_give() {
    let env = agent_env();
    env.user_config(DENY_CREATE);
    let (out, _model) = claude(&env, &claude_stdio(&env), denied_then_asked());
    let events = assert_denied_and_not_run(&env, &out);
    assert_dismissed(&env, &out, &events);
}

#[test]
fn claude_code_over_http_reads_and_runs_through_bosun_and_answers_with_the_file() {
    let env = agent_env();
    env.user_config(ALLOW_TOUCH);
    let server = HttpServer::start(&env, &[], &[]);
    let (out, model) = claude(&env, &claude_http(&server), read_then_run());
    drop(server);
    assert_read_then_ran(&env, &out, &model);
}

#[test]
fn claude_code_over_http_shows_the_model_a_denial_and_needs_approval_it_cannot_give() {
    let env = agent_env();
    env.user_config(DENY_CREATE);
    let server = HttpServer::start(&env, &[], &[]);
    let (out, _model) = claude(&env, &claude_http(&server), denied_then_asked());
    // The trace is complete once the server stopped.
    drop(server);
    let events = assert_denied_and_not_run(&env, &out);
    assert_dismissed(&env, &out, &events);
}

// ---------------------------------------------------------------------------------------------
// MCP Inspector

/// Runs each `mcp-inspector --cli` line of docs/mcp.md (the stdio ones against `bosun serve
/// --stdio` in `env`, the HTTP ones against `url`), then `extra` arguments on the first line of
/// each transport; returns each run's output.
fn inspector(env: &Env, url: &str, line: &str) -> Output {
    let mut command = Command::new(bin("mcp-inspector"));
    let words: Vec<String> = line
        .split_whitespace()
        .map(|w| match w {
            "bosun" => bosun(),
            "http://127.0.0.1:8765/mcp" => url.to_owned(),
            other => other.to_owned(),
        })
        .collect();
    assert_eq!(words[..2], ["mcp-inspector", "--cli"], "{line}");
    // The Inspector hands a stdio server only a few variables of its own environment; Bosun's
    // home is given as the server's.
    command
        .arg("--cli")
        .arg("-e")
        .arg(format!("BOSUN_HOME={}", env.home().display()))
        .args(&words[2..])
        .current_dir(env.ws())
        .env("HOME", env.dir.path())
        .env("PATH", path());
    bounded(command, CLIENT_LIMIT)
}

fn inspector_json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: the Inspector printed {}\n{}",
            text(&out.stdout),
            text(&out.stderr)
        )
    })
}

/// The Inspector's lines from docs/mcp.md for one transport, with the list, the call and the
/// failing call the test adds to each.
fn inspector_checks(env: &Env, url: &str, transport: &str) {
    let lines: Vec<String> = doc_block("inspector")
        .lines()
        .filter(|l| l.starts_with("mcp-inspector"))
        .filter(|l| l.contains(transport))
        .map(str::to_owned)
        .collect();
    assert!(
        !lines.is_empty(),
        "docs/mcp.md shows the Inspector over {transport}"
    );
    let base = lines[0].split(" --method").next().unwrap().to_owned();

    // tools/list: every built-in, with its schema and annotations.
    let list = inspector(env, url, &format!("{base} --method tools/list"));
    assert_eq!(code(&list), 0, "{}", text(&list.stderr));
    let tools = inspector_json(&list)["tools"].as_array().unwrap().clone();
    let read = tools.iter().find(|t| t["name"] == "read_file").unwrap();
    assert_eq!(read["inputSchema"]["type"], "object", "{read}");
    assert_eq!(read["annotations"]["readOnlyHint"], true, "{read}");
    assert!(tools.iter().any(|t| t["name"] == "run_command"));

    // The documented calls, each with typed arguments.
    for line in &lines {
        let out = inspector(env, url, line);
        assert_eq!(code(&out), 0, "{line}: {}", text(&out.stderr));
        let result = inspector_json(&out);
        if line.contains("tools/call") {
            assert_eq!(result["isError"], false, "{result}");
            assert!(
                result["structuredContent"]["content"]
                    .as_str()
                    .is_some_and(|c| c.starts_with("pub fn answer()")),
                "{result}"
            );
        }
    }
    let paged = inspector(
        env,
        url,
        &format!(
            "{base} --method tools/call --tool-name read_file --tool-arg path=src/lib.rs offset=1 limit=1"
        ),
    );
    assert_eq!(code(&paged), 0, "{}", text(&paged.stderr));
    let paged = inspector_json(&paged);
    assert_eq!(paged["structuredContent"]["lines"], 1, "{paged}");

    // An error result: shown to the user as the tool's error, with what to do; the Inspector
    // exits non-zero.
    let missing = inspector(
        env,
        url,
        &format!("{base} --method tools/call --tool-name read_file --tool-arg path=nope.rs"),
    );
    assert_ne!(code(&missing), 0);
    let result = inspector_json(&missing);
    assert_eq!(result["isError"], true, "{result}");
    let said = result["content"][0]["text"].as_str().unwrap_or_default();
    assert!(said.starts_with("not_found: "), "{result}");
    assert!(said.contains("list_files"), "{result}");

    // A call policy asks about: the Inspector's CLI declares no elicitation, so nobody can be
    // asked; the call is refused with how to allow it, and nothing runs.
    let asked = inspector(
        env,
        url,
        &format!(
            "{base} --method tools/call --tool-name run_command --tool-arg program=touch args=[\"inspected.txt\"]"
        ),
    );
    let result = inspector_json(&asked);
    assert_eq!(result["isError"], true, "{result}");
    let said = result["content"][0]["text"].as_str().unwrap_or_default();
    assert!(said.starts_with("needs_approval: "), "{result}");
    assert!(
        said.contains("did not declare form elicitation"),
        "{result}"
    );
    assert!(!env.ws().join("inspected.txt").exists());
}

#[test]
fn mcp_inspector_cli_lists_calls_and_sees_errors_over_stdio() {
    let env = Env::new();
    inspector_checks(&env, "", "--stdio");
    let events = events(&env);
    assert!(
        !about(&events, "tool.completed", "read_file").is_empty(),
        "{events:?}"
    );
    assert!(
        !about(&events, "tool.failed", "read_file").is_empty(),
        "{events:?}"
    );
}

#[test]
fn mcp_inspector_cli_lists_calls_and_sees_errors_over_http() {
    let env = Env::new();
    let server = HttpServer::start(&env, &[], &[]);
    inspector_checks(&env, &server.url, "http://");
    drop(server);
    let events = events(&env);
    assert!(
        !about(&events, "tool.completed", "read_file").is_empty(),
        "{events:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// The MCP conformance suite

/// The suite's server scenarios that apply to a server of tools (and prompts) over Streamable
/// HTTP. Resources, completion, logging, sampling and tasks are not offered by Bosun.
const SCENARIOS: &[&str] = &[
    "server-initialize",
    "server-session-lifecycle",
    "server-stateless",
    "ping",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-error",
    "json-schema-2020-12",
    "dns-rebinding-protection",
    "http-header-validation",
    "http-custom-header-server-validation",
    "caching",
    "server-sse-multiple-streams",
    "prompts-list",
    "input-required-result-basic-elicitation",
];

/// Why a failed check does not apply to Bosun, when it does not: the check exercises one of the
/// suite's own fixture tools (a server under test is expected to carry `test_*` tools, which
/// Bosun, serving its host's tools, does not), or a feature Bosun does not offer. Anything else
/// is a failure of Bosun.
fn not_applicable(message: &str) -> Option<&'static str> {
    if message.starts_with("Not testable: server does not list the diagnostic tool")
        || message.starts_with("Not testable: server exposes no tool with x-mcp-header")
        || message.contains("Unknown tool: there is no tool named `test_")
        || message.starts_with("Tool 'json_schema_2020_12_tool' not found")
    {
        return Some("the suite's fixture tool, which Bosun does not carry");
    }
    // -32601 is the right answer to a method of a capability the server does not declare.
    if message.contains("returned JSON-RPC error -32601: resources/") {
        return Some("resources, which Bosun does not offer");
    }
    None
}

#[test]
fn the_mcp_conformance_suite_finds_no_failure_in_bosun_serve_over_http() {
    let env = Env::new();
    let server = HttpServer::start(&env, &[], &[]);
    let results = env.dir.path().join("conformance");
    let mut failures = Vec::new();
    let mut passed = 0;
    for scenario in SCENARIOS {
        let dir = results.join(scenario);
        let mut command = Command::new(bin("conformance"));
        command
            .args(["server", "--url", &server.url, "--scenario", scenario, "-o"])
            .arg(&dir)
            .env("PATH", path())
            .env("HOME", env.dir.path());
        let out = bounded(command, CLIENT_LIMIT);
        let checks = checks_of(&dir);
        assert!(
            !checks.is_empty(),
            "{scenario}: the suite wrote no results\n{}\n{}",
            text(&out.stdout),
            text(&out.stderr)
        );
        for check in checks {
            let id = check["id"].as_str().unwrap_or_default().to_owned();
            match check["status"].as_str() {
                Some("SUCCESS") => passed += 1,
                Some("FAILURE") => {
                    let message = check["errorMessage"].as_str().unwrap_or_default();
                    if not_applicable(message).is_none() {
                        failures.push(format!("{scenario} {id}: {message}"));
                    }
                }
                _ => {}
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Not vacuous: the bulk of the checks ran and passed.
    assert!(passed >= 50, "only {passed} checks passed");
}

/// The checks the suite wrote under `dir` (one `checks.json` per scenario run).
fn checks_of(dir: &Path) -> Vec<Value> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .map(|e| e.path().join("checks.json"))
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .filter_map(|t| serde_json::from_str::<Vec<Value>>(&t).ok())
        .flatten()
        .collect()
}

#[test]
fn only_fixture_tools_and_unoffered_features_excuse_a_conformance_failure() {
    assert!(not_applicable("Not testable: server does not list the diagnostic tool 'test_logging_tool' in tools/list").is_some());
    assert!(not_applicable("Failed: Unknown tool: there is no tool named `test_simple_text`; use one of the tools offered").is_some());
    assert!(
        not_applicable("resources/list returned JSON-RPC error -32601: resources/list").is_some()
    );
    // A real failure of a tool Bosun has, or of the protocol, is never excused.
    assert!(not_applicable("Failed: Unknown tool: there is no tool named `read_file`").is_none());
    assert!(not_applicable("Expected HTTP 400, got 200").is_none());
    assert!(not_applicable("tools/list returned JSON-RPC error -32601: tools/list").is_none());
}
