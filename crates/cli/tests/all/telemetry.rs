//! OpenTelemetry export against a real OTLP receiver: PyPI's `oteltap` (installed by
//! `scripts/otel-peers`), started on 127.0.0.1 with a free port and stopped by each test. It
//! decodes what Bosun sends with the official protobuf definitions and prints every span,
//! metric and log record as a JSON line.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bosun_agent::scripted::Step;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::run::{model_config, serve};
use super::{Env, code, stderr};

/// `oteltap` as `scripts/otel-peers` installed it.
fn oteltap() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    let bin = target.join("tools/oteltap/venv/bin/oteltap");
    assert!(
        bin.exists(),
        "the OTLP receiver is not installed at {}: run scripts/otel-peers (scripts/test does)",
        bin.display()
    );
    bin
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A running `oteltap`; [`Collector::received`] stops it and returns what it printed.
struct Collector {
    child: Child,
    port: u16,
}

impl Collector {
    fn start() -> Self {
        let port = free_port();
        let child = Command::new(oteltap())
            .args(["--port", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "oteltap did not listen on {port}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Self { child, port }
    }

    fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Everything received, once `count(lines)` is satisfied or 20 s passed.
    fn received(mut self, enough: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let mut stdout = self.child.stdout.take().unwrap();
        let (send, lines) = std::sync::mpsc::channel::<Value>();
        std::thread::spawn(move || {
            let mut text = String::new();
            let mut buf = [0u8; 8192];
            while let Ok(n) = stdout.read(&mut buf) {
                if n == 0 {
                    break;
                }
                text.push_str(&String::from_utf8_lossy(&buf[..n]));
                while let Some(at) = text.find('\n') {
                    let line: String = text.drain(..=at).collect();
                    if let Ok(value) = serde_json::from_str::<Value>(line.trim()) {
                        let _ = send.send(value);
                    }
                }
            }
        });
        let mut got = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(20);
        while !enough(&got) && Instant::now() < deadline {
            if let Ok(value) = lines.recv_timeout(Duration::from_millis(200)) {
                got.push(value);
            }
        }
        // What else was already printed.
        std::thread::sleep(Duration::from_millis(300));
        got.extend(lines.try_iter());
        got
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn telemetry_config(base: &str, content: &str) -> String {
    format!(
        "[telemetry]\ntraces = {{ otlp-http = {{ endpoint = \"{base}/v1/traces\", headers = {{ authorization = {{ env = \"OTEL_TEST_TOKEN\" }} }} }} }}\nmetrics = {{ otlp-http = {{ endpoint = \"{base}/v1/metrics\" }} }}\nlogs = {{ otlp-http = {{ endpoint = \"{base}/v1/logs\" }} }}\n{content}\n"
    )
}

fn spans(received: &[Value]) -> Vec<&Value> {
    received
        .iter()
        .filter(|v| v.get("spanId").is_some())
        .collect()
}

fn span<'a>(received: &'a [Value], name: &str) -> &'a Value {
    spans(received)
        .into_iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no span `{name}` in {received:#?}"))
}

fn attr<'a>(span: &'a Value, key: &str) -> Option<&'a Value> {
    span["attributes"]
        .as_array()?
        .iter()
        .find(|a| a["key"] == key)
        .map(|a| &a["value"])
}

fn attr_str(span: &Value, key: &str) -> String {
    attr(span, key)
        .and_then(|v| v["stringValue"].as_str())
        .unwrap_or_else(|| panic!("no string attribute {key} on {span:#}"))
        .to_owned()
}

const SECRET: &str = "sk-live-telemetry-canary-4242";
const HEADER_SECRET: &str = "Bearer otlp-header-canary-7777";

fn has_all_spans(received: &[Value]) -> bool {
    let names: Vec<&str> = spans(received)
        .iter()
        .filter_map(|s| s["name"].as_str())
        .collect();
    names.contains(&"invoke_agent bosun")
        && names.contains(&"execute_tool read_file")
        && received.iter().any(|v| v["name"] == "bosun.tool.calls")
        && received.iter().any(|v| v.get("eventName").is_some())
}

#[test]
fn a_run_exports_genai_spans_metrics_and_logs_without_content_or_secrets() {
    let env = Env::new();
    std::fs::write(
        env.ws().join("src/lib.rs"),
        format!("pub fn answer() -> u32 {{ 42 }} // key {SECRET}\n"),
    )
    .unwrap();
    let collector = Collector::start();
    let (_runtime, server) = serve([
        Step::call("read_file", json!({"path": "src/lib.rs"})),
        Step::text("answer() returns 42."),
    ]);
    env.user_config(&format!(
        "{}{}",
        model_config(&server, ""),
        telemetry_config(&collector.base(), "")
    ));
    let out = env.bosun_with_env(
        &["run", "What does answer() return?"],
        &[("OTEL_TEST_TOKEN", HEADER_SECRET), ("DEMO_API_KEY", SECRET)],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(!stderr(&out).contains("telemetry"), "{}", stderr(&out));
    let received = collector.received(has_all_spans);
    assert!(has_all_spans(&received), "{received:#?}");

    let root = span(&received, "invoke_agent bosun");
    let chat = span(&received, "chat bosun-scripted");
    let tool = span(&received, "execute_tool read_file");
    let trace_id = root["traceId"].as_str().unwrap();
    for child in [chat, tool] {
        assert_eq!(child["traceId"], trace_id);
        assert_eq!(child["parentSpanId"], root["spanId"]);
    }
    assert_eq!(root["parentSpanId"], "");
    assert_eq!(attr_str(root, "gen_ai.operation.name"), "invoke_agent");
    assert_eq!(attr_str(root, "bosun.run.outcome"), "completed");
    assert!(attr_str(root, "bosun.sandbox").starts_with("sandbox: "));
    assert_eq!(attr_str(chat, "gen_ai.operation.name"), "chat");
    assert_eq!(attr_str(chat, "gen_ai.request.model"), "bosun-scripted");
    // The scripted model speaks Chat Completions: the provider is named as its client knows it.
    assert_eq!(attr_str(chat, "gen_ai.provider.name"), "openai");
    assert_eq!(attr_str(chat, "bosun.model.api"), "openai-chat");
    assert_eq!(attr_str(root, "gen_ai.provider.name"), "openai");
    assert!(
        attr(chat, "gen_ai.usage.input_tokens").is_some(),
        "{chat:#}"
    );
    assert_eq!(chat["kind"], 3);
    assert_eq!(attr_str(tool, "gen_ai.operation.name"), "execute_tool");
    assert_eq!(attr_str(tool, "gen_ai.tool.name"), "read_file");
    assert_eq!(attr_str(tool, "gen_ai.tool.type"), "function");
    assert!(!attr_str(tool, "gen_ai.tool.call.id").is_empty());
    assert_eq!(attr_str(tool, "bosun.policy.decision"), "allow");
    assert!(
        attr_str(tool, "bosun.policy.rule").contains("rule"),
        "{tool:#}"
    );
    assert_eq!(tool["status"]["code"], 1);
    // Content is off: neither the call's input nor its output, nor the model's text, left.
    assert!(attr(tool, "gen_ai.tool.call.arguments").is_none());
    assert!(attr(tool, "gen_ai.tool.call.result").is_none());
    let everything = serde_json::to_string(&received).unwrap();
    for leaked in [
        SECRET,
        HEADER_SECRET,
        "answer() returns 42",
        "src/lib.rs",
        "pub fn answer",
    ] {
        assert!(
            !everything.contains(leaked),
            "`{leaked}` reached the collector"
        );
    }
    // Metrics and logs.
    let calls = received
        .iter()
        .find(|v| v["name"] == "bosun.tool.calls")
        .unwrap();
    assert_eq!(calls["sum"]["dataPoints"][0]["asInt"], 1, "{calls:#}");
    assert!(received.iter().any(|v| v["name"] == "bosun.tool.duration"));
    assert!(
        received
            .iter()
            .any(|v| v["eventName"] == "bosun.tool.decided" && v["traceId"] != ""),
        "{received:#?}"
    );
}

#[test]
fn content_goes_only_behind_its_switch_and_redacted_as_the_trace_is() {
    let env = Env::new();
    std::fs::write(
        env.ws().join("src/lib.rs"),
        format!("pub fn answer() -> u32 {{ 42 }} // key {SECRET}\n"),
    )
    .unwrap();
    let collector = Collector::start();
    let (_runtime, server) = serve([
        Step::call("read_file", json!({"path": "src/lib.rs"})),
        Step::text("answer() returns 42."),
    ]);
    env.user_config(&format!(
        "{}{}",
        model_config(&server, ""),
        telemetry_config(
            &collector.base(),
            "[telemetry.content]\ntool-inputs = true\ntool-outputs = true\nmodel-output = true\n"
        )
    ));
    let out = env.bosun_with_env(
        &["run", "What does answer() return?"],
        &[("OTEL_TEST_TOKEN", HEADER_SECRET), ("DEMO_API_KEY", SECRET)],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let received = collector.received(has_all_spans);
    let tool = span(&received, "execute_tool read_file");
    assert!(attr_str(tool, "gen_ai.tool.call.arguments").contains("src/lib.rs"));
    let result = attr_str(tool, "gen_ai.tool.call.result");
    assert!(result.contains("pub fn answer"), "{result}");
    // The secret the file holds is redacted in the export as in the trace file.
    let everything = serde_json::to_string(&received).unwrap();
    assert!(
        !everything.contains(SECRET),
        "the secret reached the collector"
    );
    assert!(!everything.contains(HEADER_SECRET));
    let text: String = std::fs::read_to_string(&env.runs()[0]).unwrap();
    assert!(!text.contains(SECRET));
    let chat = spans(&received)
        .into_iter()
        .find(|s| s["name"] == "chat bosun-scripted" && attr(s, "gen_ai.output.messages").is_some())
        .unwrap_or_else(|| panic!("no chat span with the model's text: {received:#?}"));
    assert!(attr_str(chat, "gen_ai.output.messages").contains("answer() returns 42."));
}

/// What a labelled file holds: the words a collector below its level must never receive.
const HUSHED: &str = "hush-7f3a9c-orchard";

/// A run that reads a `RESTRICTED` file, then calls a tool named after what it read (no tool
/// answers to it), then a tool with it in its arguments (which fails naming it), then says it,
/// with every content switch on and the collector at `collector_level` (none: the default).
fn run_holding_restricted_data(collector_level: Option<&str>) -> Vec<Value> {
    let env = Env::new();
    std::fs::create_dir_all(env.ws().join("secrets")).unwrap();
    std::fs::write(env.ws().join("secrets/plan.txt"), format!("{HUSHED}\n")).unwrap();
    let collector = Collector::start();
    let (_runtime, server) = serve([
        Step::call("read_file", json!({"path": "secrets/plan.txt"})),
        Step::call(format!("send_{HUSHED}"), json!({})),
        Step::call("read_file", json!({"path": format!("{HUSHED}.txt")})),
        Step::text(format!("The plan says {HUSHED}.")),
    ]);
    let level = collector_level
        .map(|l| format!("classification = \"{l}\"\n"))
        .unwrap_or_default();
    env.user_config(&format!(
        "{}{}",
        model_config(
            &server,
            "[[classification.paths]]\nglob = \"secrets/**\"\nlevel = \"RESTRICTED\"\n"
        ),
        telemetry_config(
            &collector.base(),
            &format!(
                "{level}[telemetry.content]\ntool-inputs = true\ntool-outputs = true\nmodel-output = true\n"
            )
        )
    ));
    let out = env.bosun_with_env(&["run", "Read the plan"], &[("OTEL_TEST_TOKEN", "t")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    collector.received(has_all_spans)
}

/// The `execute_tool` spans of `received`, in the order their calls started.
fn tool_spans(received: &[Value]) -> Vec<&Value> {
    let mut tools: Vec<&Value> = spans(received)
        .into_iter()
        .filter(|s| {
            attr(s, "gen_ai.operation.name").and_then(|v| v["stringValue"].as_str())
                == Some("execute_tool")
        })
        .collect();
    tools.sort_by_key(|s| {
        s["startTimeUnixNano"]
            .as_str()
            .and_then(|t| t.parse::<u128>().ok())
            .or_else(|| s["startTimeUnixNano"].as_u64().map(u128::from))
    });
    tools
}

/// A collector is a sink at its `[telemetry] classification`, `PUBLIC` unless labelled: with
/// every content switch on, what a session holding `RESTRICTED` data exports — a result, the
/// arguments the model wrote, a failed call's message, the model's words — is a marker naming
/// the level, never the data; a tool name the model made up is content too, never a span's
/// name, a metric's or a log record's attribute. Labelled `RESTRICTED`, the collector gets it.
#[test]
fn a_collector_below_the_sessions_level_gets_markers_not_the_data() {
    let received = run_holding_restricted_data(None);
    let everything = serde_json::to_string(&received).unwrap();
    assert!(
        !everything.contains(HUSHED),
        "RESTRICTED data reached a PUBLIC collector: {received:#?}"
    );
    let tools = tool_spans(&received);
    assert_eq!(tools.len(), 3, "{received:#?}");
    // The first call's arguments were written while the session held nothing.
    assert!(attr_str(tools[0], "gen_ai.tool.call.arguments").contains("secrets/plan.txt"));
    let marker = "[withheld: the session holds RESTRICTED data and this collector is PUBLIC]";
    assert_eq!(attr_str(tools[0], "gen_ai.tool.call.result"), marker);
    assert_eq!(tools[1]["name"], "execute_tool", "{:#}", tools[1]);
    assert_eq!(attr_str(tools[1], "gen_ai.tool.name"), "_OTHER");
    assert_eq!(attr_str(tools[1], "bosun.tool.proposed_name"), marker);
    assert_eq!(attr_str(tools[2], "gen_ai.tool.call.arguments"), marker);
    assert_eq!(tools[2]["status"]["message"], marker, "{:#}", tools[2]);
    let said = spans(&received)
        .into_iter()
        .filter_map(|s| attr(s, "gen_ai.output.messages"))
        .map(|v| v["stringValue"].as_str().unwrap_or_default().to_owned())
        .collect::<Vec<_>>();
    assert!(
        said.iter().any(|m| m.contains(marker)),
        "the model's words were not withheld: {said:?}"
    );

    // A collector labelled RESTRICTED is sent what the session holds.
    let received = run_holding_restricted_data(Some("RESTRICTED"));
    let tools = tool_spans(&received);
    assert!(attr_str(tools[0], "gen_ai.tool.call.result").contains(HUSHED));
    assert!(attr_str(tools[1], "bosun.tool.proposed_name").contains(HUSHED));
    // A made-up name is never a span's name, whatever the collector's level.
    assert_eq!(tools[1]["name"], "execute_tool");
    assert!(
        !received
            .iter()
            // Metrics and log records (which carry their span's id, and an event name).
            .filter(|v| v.get("spanId").is_none() || v.get("eventName").is_some())
            .any(|v| v.to_string().contains(HUSHED)),
        "a made-up tool name reached a metric or a log record"
    );
}

/// A collector that accepts and then answers `status`, or never answers when `None`.
fn bad_collector(status: Option<u16>) -> (u16, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let handle = std::thread::spawn(move || {
        let mut held = Vec::new();
        listener.set_nonblocking(true).unwrap();
        let until = Instant::now() + Duration::from_secs(60);
        while Instant::now() < until {
            match listener.accept() {
                Ok((mut stream, _)) => {
                    stream.set_nonblocking(false).unwrap();
                    let mut buf = [0u8; 65536];
                    let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
                    let _ = stream.read(&mut buf);
                    match status {
                        Some(status) => {
                            let _ = stream.write_all(
                                format!("HTTP/1.1 {status} Oops\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                                    .as_bytes(),
                            );
                        }
                        None => held.push(stream),
                    }
                }
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    });
    (port, handle)
}

#[test]
fn a_collector_that_is_down_slow_or_failing_costs_one_warning_not_the_run() {
    let down = free_port();
    let (failing, _a) = bad_collector(Some(500));
    let (hanging, _b) = bad_collector(None);
    for (what, port) in [("down", down), ("500", failing), ("hanging", hanging)] {
        let env = Env::new();
        let (_runtime, server) = serve([
            Step::call("read_file", json!({"path": "src/lib.rs"})),
            Step::call("read_file", json!({"path": "src/lib.rs"})),
            Step::text("answer() returns 42."),
        ]);
        env.user_config(&format!(
            "{}[telemetry]\ntraces = {{ otlp-http = {{ endpoint = \"http://127.0.0.1:{port}/v1/traces\", timeout-ms = 1000 }} }}\n",
            model_config(&server, "")
        ));
        let started = Instant::now();
        let out = env.bosun(&["run", "What does answer() return?"]);
        let took = started.elapsed();
        assert_eq!(code(&out), 0, "{what}: {}", stderr(&out));
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "answer() returns 42.\n",
            "{what}"
        );
        let err = stderr(&out);
        assert_eq!(
            err.matches("telemetry: cannot export traces").count(),
            1,
            "{what}: {err}"
        );
        // The exit waits a bounded time for a collector that never answers.
        assert!(took < Duration::from_secs(30), "{what}: {took:?}");
        // The trace file keeps the run.
        assert_eq!(env.runs().len(), 1, "{what}");
    }
}

/// JSON-RPC over `bosun serve --stdio`: a handshake, then a `tools/call` whose `_meta` carries
/// the caller's `traceparent`.
#[test]
fn a_serve_call_joins_the_callers_trace() {
    let env = Env::new();
    let collector = Collector::start();
    env.user_config(&telemetry_config(&collector.base(), ""));
    let caller = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let mut child = Command::new(env!("CARGO_BIN_EXE_bosun"))
        .args(["serve", "--stdio"])
        .current_dir(env.ws())
        .env("BOSUN_HOME", env.home())
        .env("OTEL_TEST_TOKEN", HEADER_SECRET)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for message in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "trace-test", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "read_file", "arguments": {"path": "src/lib.rs"},
            "_meta": {"traceparent": caller}}}),
    ] {
        writeln!(stdin, "{message}").unwrap();
    }
    // Wait for the call's answer before closing the session.
    let mut stdout = child.stdout.take().unwrap();
    let mut seen = String::new();
    let mut buf = [0u8; 4096];
    let deadline = Instant::now() + Duration::from_secs(30);
    while !seen.contains("\"id\":2") && Instant::now() < deadline {
        let n = stdout.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    assert!(seen.contains("pub fn answer"), "{seen}");
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(status.success());
    let received = collector.received(|r| {
        spans(r)
            .iter()
            .any(|s| s["name"] == "execute_tool read_file")
            && spans(r).iter().any(|s| s["name"] == "invoke_agent bosun")
    });
    let tool = span(&received, "execute_tool read_file");
    assert_eq!(tool["traceId"], "0af7651916cd43dd8448eb211c80319c");
    assert_eq!(tool["parentSpanId"], "b7ad6b7169203331");
    assert_eq!(tool["kind"], 2);
    assert_eq!(attr_str(tool, "bosun.policy.decision"), "allow");
    let session = span(&received, "invoke_agent bosun");
    assert_eq!(
        attr_str(tool, "bosun.run.span_id"),
        session["spanId"].as_str().unwrap()
    );
}

#[test]
fn a_command_gets_its_calls_traceparent() {
    let env = Env::new();
    let collector = Collector::start();
    let (_runtime, server) = serve([
        Step::call(
            "run_command",
            json!({"program": "printenv", "args": ["TRACEPARENT"]}),
        ),
        Step::text("done"),
    ]);
    env.user_config(&format!(
        "{}{}",
        model_config(&server, ""),
        telemetry_config(&collector.base(), "")
    ));
    let out = env.bosun_with_env(&["run", "--yes", "print it"], &[("OTEL_TEST_TOKEN", "x")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let received = collector.received(|r| {
        spans(r)
            .iter()
            .any(|s| s["name"] == "execute_tool run_command")
    });
    let tool = span(&received, "execute_tool run_command");
    let expected = format!(
        "00-{}-{}-01",
        tool["traceId"].as_str().unwrap(),
        tool["spanId"].as_str().unwrap()
    );
    // What the model saw as the command's output.
    let seen = server.requests().last().unwrap().to_string();
    assert!(seen.contains(&expected), "{expected} not in {seen}");
}

/// Bosun's MCP client hands the call's span on in the request's `_meta` (SEP-414), so the
/// server's own spans join the run's trace: the Python SDK server reads it back.
#[test]
fn an_mcp_server_gets_the_calls_traceparent_in_meta() {
    let env = Env::new();
    let collector = Collector::start();
    let (_runtime, server) = serve([
        Step::call("mcp__peer__traced", json!({})),
        Step::text("done"),
    ]);
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/peers/mcp_server.py");
    env.user_config(&format!(
        "{}{}[mcp.peer]\ncommand = {:?}\nargs = [{:?}]\n{}",
        model_config(&server, ""),
        telemetry_config(&collector.base(), ""),
        super::serve::python().display().to_string(),
        script.display().to_string(),
        super::serve::peer_sandbox("peer")
    ));
    let trusted = env.bosun(&["mcp", "trust", "peer", "--yes"]);
    assert_eq!(code(&trusted), 0, "{}", stderr(&trusted));
    let out = env.bosun_with_env(&["run", "--yes", "trace it"], &[("OTEL_TEST_TOKEN", "x")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let received = collector.received(|r| {
        spans(r)
            .iter()
            .any(|s| s["name"] == "execute_tool mcp__peer__traced")
    });
    let tool = span(&received, "execute_tool mcp__peer__traced");
    assert_eq!(attr_str(tool, "mcp.method.name"), "tools/call");
    let expected = format!(
        "00-{}-{}-01",
        tool["traceId"].as_str().unwrap(),
        tool["spanId"].as_str().unwrap()
    );
    // What the server answered, as the model saw it.
    let seen = server.requests().last().unwrap().to_string();
    assert!(seen.contains(&expected), "{expected} not in {seen}");
}

#[test]
fn inspect_exports_a_saved_run() {
    let env = Env::new();
    let (_runtime, server) = serve([
        Step::call("read_file", json!({"path": "src/lib.rs"})),
        Step::text("answer() returns 42."),
    ]);
    env.user_config(&model_config(&server, ""));
    let out = env.bosun(&["run", "What does answer() return?"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));

    let off = env.bosun(&["inspect", "last", "--export"]);
    assert_eq!(code(&off), 2);
    assert!(
        stderr(&off).contains("telemetry is off: set `[telemetry] traces"),
        "{}",
        stderr(&off)
    );

    let collector = Collector::start();
    env.user_config(&format!(
        "{}{}",
        model_config(&server, ""),
        telemetry_config(&collector.base(), "")
    ));
    let out = env.bosun_with_env(
        &["inspect", "last", "--export"],
        &[("OTEL_TEST_TOKEN", "x")],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("exported run "));
    let received = collector.received(has_all_spans);
    let root = span(&received, "invoke_agent bosun");
    let tool = span(&received, "execute_tool read_file");
    assert_eq!(tool["parentSpanId"], root["spanId"]);
    // The run's own times, not the export's.
    let trace = std::fs::read_to_string(&env.runs()[0]).unwrap();
    let first: Value = serde_json::from_str(trace.lines().next().unwrap()).unwrap();
    let started: chrono::DateTime<chrono::Utc> =
        serde_json::from_value(first["timestamp"].clone()).unwrap();
    assert_eq!(
        root["startTimeUnixNano"],
        started.timestamp_nanos_opt().unwrap().to_string()
    );

    // A collector that is gone: the export fails, saying so.
    // The collector stopped when it handed over what it received.
    let out = env.bosun_with_env(
        &["inspect", "last", "--export"],
        &[("OTEL_TEST_TOKEN", "x")],
    );
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("was not exported"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn managed_telemetry_reaches_the_collector_whatever_the_user_and_environment_say() {
    let env = Env::new();
    let collector = Collector::start();
    let (_runtime, server) = serve([
        Step::call("read_file", json!({"path": "src/lib.rs"})),
        Step::text("answer() returns 42."),
    ]);
    let managed = env.dir.path().join("requirements.toml");
    std::fs::write(
        &managed,
        format!(
            "[telemetry]\ntraces = {{ otlp-http = {{ endpoint = \"{}/v1/traces\" }} }}\nservice-name = \"corp-agents\"\n",
            collector.base()
        ),
    )
    .unwrap();
    let managed_env = managed.display().to_string();
    // A user who tries to turn traces off, or send them elsewhere, is refused at load, and
    // told which managed line holds.
    for hostile in [
        "[telemetry]\ntraces = \"none\"\n".to_owned(),
        "[telemetry]\ntraces = { otlp-http = { endpoint = \"http://127.0.0.1:9/v1/traces\" } }\n"
            .to_owned(),
    ] {
        env.user_config(&format!("{}{hostile}", model_config(&server, "")));
        let out = env.bosun_with_env(
            &["run", "What does answer() return?"],
            &[
                ("BOSUN_MANAGED_CONFIG", &managed_env),
                ("DEMO_API_KEY", SECRET),
            ],
        );
        assert_eq!(code(&out), 2, "{}", stderr(&out));
        assert!(
            stderr(&out).contains(&format!("{managed_env}:2")),
            "{}",
            stderr(&out)
        );
        assert!(
            stderr(&out).contains("telemetry.traces"),
            "{}",
            stderr(&out)
        );
        assert!(env.runs().is_empty(), "nothing ran");
    }
    // A user who writes nothing, with every off switch of the environment set: the spans still
    // reach the managed collector, under the managed service name.
    env.user_config(&model_config(&server, ""));
    let out = env.bosun_with_env(
        &["run", "What does answer() return?"],
        &[
            ("BOSUN_MANAGED_CONFIG", &managed_env),
            ("DEMO_API_KEY", SECRET),
            ("OTEL_SDK_DISABLED", "true"),
            ("OTEL_TRACES_EXPORTER", "none"),
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "http://127.0.0.1:9/v1/traces",
            ),
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let received =
        collector.received(|got| spans(got).iter().any(|s| s["name"] == "invoke_agent bosun"));
    span(&received, "execute_tool read_file");
    span(&received, "invoke_agent bosun");
    // `config check` says where each setting came from: the forced signal is the managed file's.
    let out = env.bosun_with_env(
        &["config", "check", "--json"],
        &[("BOSUN_MANAGED_CONFIG", &managed_env)],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let traces = report["settings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["key"] == "telemetry.traces")
        .unwrap_or_else(|| panic!("{report:#}"));
    assert_eq!(traces["layer"], "managed", "{traces:#}");
    assert_eq!(traces["at"], format!("{managed_env}:2"), "{traces:#}");
}
