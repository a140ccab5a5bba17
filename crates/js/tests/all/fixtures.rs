//! The fixtures the JavaScript layer's Node tests use (`crates/js/engine/js/test/fixtures/`),
//! now through the real engine in the real sandbox: the Forge guide's count-text, plugins in the
//! style of Forge's stricter-policy, todos, code-review-subagent, commands and web-tools
//! examples, Triggerfish's weather (the guide's TypeScript in `tests/fixtures/weather`, stripped
//! by `bosun_plugins::typescript`) and system-info examples, and taint through a session.
//!
//! Network tests reach only loopback servers started here, granted per call through
//! `CallOptions.net` with 127.0.0.1 named in `private_allowed`, as a user's literal policy rule
//! would name it.

use std::path::Path;

use bosun_core::{Decision, Risk};
use bosun_js::{Descriptor, HookCounts, JsCommand, JsSubagent, JsSubagentLimits, Restriction};
use bosun_plugins::typescript::strip_types;
use bosun_sandbox::{CallErrorKind, CallOptions, Grants, JsGrants};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::support::{
    LOOPBACK, LoopbackServer, PluginSource, RecordingSession, call, call_error, call_with,
    fixture_dir, http_grants, net, ok, tool_error, web_fetch_plugin,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn count_text_from_the_forge_guide_counts_code_points() {
    let mut plugin = PluginSource::fixture("count-text").start().await;
    let tool = &plugin.descriptor().tools[0];
    assert_eq!(
        (
            tool.name.as_str(),
            tool.risk.clone(),
            tool.description.as_str()
        ),
        (
            "count_text",
            Ok(Risk::Read),
            "Count Unicode characters in supplied text."
        )
    );
    assert_eq!(
        tool.input_schema,
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {"text": {"type": "string", "maxLength": 10000}},
            "required": ["text"],
            "additionalProperties": false,
        })
    );
    assert_eq!(plugin.descriptor().hooks, HookCounts::default());

    assert_eq!(
        call(&mut plugin, "count_text", json!({"text": "héllo 👋"})).await,
        ok(json!({"characters": 7}))
    );
    let bosun_js::ToolOutcome::Err { code, message, .. } =
        call(&mut plugin, "count_text", json!({"text": 5})).await
    else {
        panic!("a number is not text");
    };
    assert_eq!(code, "invalid_input");
    assert!(
        message.starts_with("Invalid input for count_text: text: "),
        "{message}"
    );
    assert_eq!(
        call(&mut plugin, "nope", json!({})).await,
        tool_error(
            "unknown_tool",
            "Plugin \"count-text\" has no tool \"nope\".",
            false
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policy_guard_confirms_package_managers_and_denies_other_commands() {
    let mut plugin = PluginSource::fixture("policy-guard").start().await;
    assert_eq!(plugin.descriptor().hooks.restrict, 1);
    let ask = |tool: &str, input: Value| {
        json!({
            "tool": {"name": tool, "risk": if tool == "run_command" { "process" } else { "read" }},
            "call": {"id": "call_1", "name": tool, "input": input},
            "input": input,
        })
    };
    let verdict = |kind: &str, reason: &str| {
        Some(Restriction {
            decision: if kind == "deny" {
                Decision::Deny
            } else {
                Decision::Ask
            },
            reason: reason.to_owned(),
        })
    };
    for (program, expected) in [
        (
            "npm",
            verdict(
                "confirm",
                "policy-guard: package manager commands are reviewed one at a time.",
            ),
        ),
        (
            "pnpm",
            verdict(
                "confirm",
                "policy-guard: package manager commands are reviewed one at a time.",
            ),
        ),
        (
            "rm",
            verdict(
                "deny",
                "policy-guard: only pnpm or npm may run in this project.",
            ),
        ),
    ] {
        let payload = ask("run_command", json!({"program": program, "args": ["x"]}));
        let got = plugin
            .restrict(&payload, CallOptions::default())
            .await
            .unwrap();
        assert_eq!(got, expected, "{program}");
    }
    let payload = ask("read_file", json!({"path": "README.md"}));
    assert_eq!(
        plugin
            .restrict(&payload, CallOptions::default())
            .await
            .unwrap(),
        None
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn task_list_keeps_state_in_its_instance_and_contributes_a_prompt() {
    let mut plugin = PluginSource::fixture("task-list").start().await;
    assert_eq!(plugin.descriptor().hooks.prompt, 1);
    assert_eq!(
        plugin.descriptor().tools[0].input_schema["oneOf"]
            .as_array()
            .map(Vec::len),
        Some(5)
    );

    assert_eq!(
        call(
            &mut plugin,
            "task",
            json!({"action": "add", "text": "  Inspect  "})
        )
        .await,
        ok(json!({
            "tasks": [{"id": 1, "text": "Inspect", "status": "pending"}],
            "summary": "0/1 done",
        }))
    );
    call(
        &mut plugin,
        "task",
        json!({"action": "add", "text": "Test"}),
    )
    .await;
    call(
        &mut plugin,
        "task",
        json!({"action": "update", "id": 1, "status": "in_progress"}),
    )
    .await;
    // The one-in-progress rule is the plugin's own.
    assert_eq!(
        call(
            &mut plugin,
            "task",
            json!({"action": "update", "id": 2, "status": "in_progress"})
        )
        .await,
        tool_error("invalid_input", "Only one task may be in_progress.", false)
    );
    call(
        &mut plugin,
        "task",
        json!({"action": "update", "id": 1, "status": "done"}),
    )
    .await;
    // State persisted across the calls (module state, one instance), and the helper module
    // next to the entry was imported.
    assert_eq!(
        call(&mut plugin, "task", json!({"action": "list"})).await,
        ok(json!({
            "tasks": [
                {"id": 1, "text": "Inspect", "status": "done"},
                {"id": 2, "text": "Test", "status": "pending"},
            ],
            "summary": "1/2 done",
        }))
    );

    let prompt = |text: &str| json!({"prompt": text, "workspaceRoot": "/workspace", "workingDirectory": "/workspace"});
    let texts = plugin
        .prompt(&prompt("plan the refactor"), CallOptions::default())
        .await
        .unwrap();
    assert_eq!(
        texts,
        vec![
            "A task tool is available for work with several steps; keep one task in_progress at a time."
        ]
    );
    let texts = plugin
        .prompt(&prompt("quick fix"), CallOptions::default())
        .await
        .unwrap();
    assert_eq!(texts, Vec::<String>::new());

    // A second instance of the same plugin starts empty.
    let mut fresh = PluginSource::fixture("task-list").start().await;
    assert_eq!(
        call(&mut fresh, "task", json!({"action": "list"})).await,
        ok(json!({"tasks": [], "summary": "0/0 done"}))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn review_subagent_is_recorded_in_the_descriptor() {
    let plugin = PluginSource::fixture("review-subagent").start().await;
    assert_eq!(
        plugin.descriptor(),
        &Descriptor {
            subagents: vec![
                JsSubagent {
                    name: "code-reviewer".into(),
                    tool_name: "delegate_code_review".into(),
                    description: "Delegate a focused, read-only review of part of the workspace."
                        .into(),
                    instructions: "You review code. Report concrete correctness and security findings with file and line.".into(),
                    tools: vec!["list_files".into(), "read_file".into(), "search".into()],
                    limits: JsSubagentLimits {
                        max_model_steps: Some(3),
                        max_tool_calls: Some(6),
                    },
                },
                JsSubagent {
                    name: "summariser".into(),
                    tool_name: "delegate_summary".into(),
                    description: "Delegate a summary of a set of files.".into(),
                    instructions: "Summarise what the listed files do.".into(),
                    tools: vec!["read_file".into()],
                    limits: JsSubagentLimits {
                        max_model_steps: Some(4),
                        max_tool_calls: Some(8),
                    },
                },
            ],
            ..Descriptor::default()
        }
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn info_command_writes_output_and_returns_its_exit_code() {
    let mut plugin = PluginSource::fixture("info-command").start().await;
    let names: Vec<&str> = plugin
        .descriptor()
        .commands
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(names, ["plugin-info", "flood", "crash", "odd-exit"]);
    assert_eq!(
        plugin.descriptor().commands[0],
        JsCommand {
            name: "plugin-info".into(),
            description: "Print what this plugin offers.".into(),
        }
    );
    let run = |name: &str, args: &[&str]| json!({"name": name, "args": args, "cwd": "/workspace/src", "workspaceRoot": "/workspace"});

    let out = plugin
        .command(&run("plugin-info", &["a", "b"]), CallOptions::default())
        .await
        .unwrap();
    assert_eq!(
        (out.exit_code, out.stdout.as_str(), out.stderr.as_str()),
        (
            0,
            "info-command in /workspace/src (workspace /workspace)\nargs: a b\nfrozen args: true, signal: true\n",
            ""
        )
    );
    let out = plugin
        .command(&run("plugin-info", &["--fail"]), CallOptions::default())
        .await
        .unwrap();
    assert_eq!((out.exit_code, out.stderr.as_str()), (3, "asked to fail\n"));

    // Each stream is bounded at 1 MiB, then marked.
    let out = plugin
        .command(&run("flood", &[]), CallOptions::default())
        .await
        .unwrap();
    assert_eq!(out.exit_code, 0);
    assert!(out.stdout.len() <= (1 << 20) + 100, "{}", out.stdout.len());
    assert!(
        out.stdout
            .ends_with("[output truncated at 1048576 bytes]\n")
    );

    let out = plugin
        .command(&run("crash", &[]), CallOptions::default())
        .await
        .unwrap();
    assert_eq!(
        (out.exit_code, out.stdout.as_str(), out.stderr.as_str()),
        (
            1,
            "before the crash\n",
            "The command \"crash\" of plugin \"info-command\" failed: RangeError: the command broke (at index.mjs:31:17)\n"
        )
    );
}

/// A fetch from the loopback server, with 127.0.0.1 named as a policy rule would name it.
fn loopback_grant(server: &LoopbackServer, host: &str) -> CallOptions {
    net(&[server.authority(host)], &[LOOPBACK])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn web_fetch_reaches_a_granted_loopback_server() {
    let server = LoopbackServer::start(LOOPBACK).await;
    let mut plugin = web_fetch_plugin()
        .activate_with(http_grants())
        .await
        .unwrap();
    assert_eq!(plugin.descriptor().tools[0].risk, Ok(Risk::Network));

    let url = format!("http://{}/docs/page", server.authority("127.0.0.1"));
    let (outcome, report) = call_with(
        &mut plugin,
        "web_fetch",
        json!({"url": url}),
        loopback_grant(&server, "127.0.0.1"),
    )
    .await
    .unwrap();
    assert_eq!(
        outcome,
        ok(json!({
            "status": 200,
            "contentType": "text/html; charset=utf-8",
            "redirected": false,
            "finalUrl": url,
            "text": "<p>page /docs/page</p>",
        }))
    );
    assert_eq!(report.refused_requests, vec![]);

    // A name is resolved by the host and connected to at its checked address; a redirect on
    // the same granted authority is followed, each hop through the host's guard.
    let named = server.authority("docs.public.test");
    let target = format!("http://{named}/moved");
    let (outcome, _) = call_with(
        &mut plugin,
        "web_fetch",
        json!({"url": format!("http://{named}/redirect?to={target}")}),
        loopback_grant(&server, "docs.public.test"),
    )
    .await
    .unwrap();
    assert_eq!(
        outcome,
        ok(json!({
            "status": 200,
            "contentType": "text/html; charset=utf-8",
            "redirected": true,
            "finalUrl": target,
            "text": "<p>page /moved</p>",
        }))
    );
    assert_eq!(
        server.paths(),
        ["/docs/page", &format!("/redirect?to={target}"), "/moved"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn page_fetch_checks_destinations_through_the_host_resolver() {
    // The fixture refuses private destinations itself, as Forge's web-tools does; its DNS
    // lookups go to the host, which answers only for names the call is granted.
    let server = LoopbackServer::start(LOOPBACK).await;
    let mut plugin = PluginSource::fixture("page-fetch")
        .activate_with(http_grants())
        .await
        .unwrap();
    let named = server.authority("docs.public.test");
    let (outcome, _) = call_with(
        &mut plugin,
        "page_fetch",
        json!({"url": format!("http://{named}/")}),
        loopback_grant(&server, "docs.public.test"),
    )
    .await
    .unwrap();
    assert_eq!(
        outcome,
        tool_error(
            "invalid_input",
            "The host resolves to a private address.",
            false
        )
    );
    let (outcome, _) = call_with(
        &mut plugin,
        "page_fetch",
        json!({"url": format!("http://{}/", server.authority("127.0.0.1"))}),
        loopback_grant(&server, "127.0.0.1"),
    )
    .await
    .unwrap();
    assert_eq!(
        outcome,
        tool_error("invalid_input", "Private addresses are blocked.", false)
    );
    // A name the call is not granted is not even resolved.
    let (outcome, _) = call_with(
        &mut plugin,
        "page_fetch",
        json!({"url": "http://api.weather.test/"}),
        loopback_grant(&server, "docs.public.test"),
    )
    .await
    .unwrap();
    let bosun_js::ToolOutcome::Err { code, message, .. } = outcome else {
        panic!("an ungranted name was resolved");
    };
    assert_eq!(code, "io_error");
    assert!(
        message.contains("api.weather.test is not granted to this call"),
        "{message}"
    );
    assert_eq!(server.connections(), 0);
}

/// Triggerfish's weather plugin as the host hands it over (types stripped), with the guide's
/// endpoint pointed at the loopback server.
fn weather(server: &LoopbackServer) -> PluginSource {
    let source = std::fs::read_to_string(fixture_dir("weather").join("mod.ts")).unwrap();
    let base = format!("http://{}", server.authority("api.weather.test"));
    PluginSource::triggerfish(
        "weather",
        &source.replace("https://api.weather.example", &base),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn triggerfish_weather_fetches_its_declared_endpoint() {
    let server = LoopbackServer::start(LOOPBACK).await;
    let mut plugin = weather(&server).activate_with(http_grants()).await.unwrap();
    let descriptor = plugin.descriptor().clone();
    assert_eq!(
        descriptor.manifest,
        Some(json!({
            "name": "weather", "version": "1.0.0", "description": "Weather forecasts",
            "classification": "PUBLIC", "trust": "sandboxed",
            "declaredEndpoints": [format!("http://{}", server.authority("api.weather.test"))],
        }))
    );
    assert_eq!(
        descriptor.system_prompt.as_deref(),
        Some("Use `forecast` to get the weather for any city.")
    );
    assert_eq!(
        descriptor.tools[0].input_schema,
        json!({
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name"},
                "days": {"type": "integer", "description": "How many days"},
                "units": {"type": "string", "description": "Units", "enum": ["metric", "imperial"]},
            },
            "required": ["city"],
            "additionalProperties": true,
        })
    );
    assert!(descriptor.tools.iter().all(|t| t.risk == Ok(Risk::Network)));

    let (outcome, report) = call_with(
        &mut plugin,
        "forecast",
        json!({"city": "Göteborg"}),
        loopback_grant(&server, "api.weather.test"),
    )
    .await
    .unwrap();
    let authority = server.authority("api.weather.test");
    assert_eq!(
        outcome,
        ok(json!(
            json!({"path": "/v1/forecast?city=G%C3%B6teborg", "host": authority, "forecast": "sun"})
                .to_string()
        ))
    );
    let logs: Vec<String> = report.logs.iter().map(|l| l.message.clone()).collect();
    assert_eq!(logs, ["Fetching forecast {\"city\":\"Göteborg\"}"]);

    assert_eq!(
        call(&mut plugin, "alerts", json!({})).await,
        tool_error(
            "plugin_error",
            "Plugin weather error: no alert service for weather",
            false
        )
    );
    assert_eq!(
        plugin
            .prompt(&json!({}), CallOptions::default())
            .await
            .unwrap(),
        ["Use `forecast` to get the weather for any city."]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn triggerfish_weather_from_the_guide_runs_once_its_types_are_stripped() {
    let server = LoopbackServer::start(LOOPBACK).await;
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/weather/mod.ts");
    let base = format!("http://{}", server.authority("api.weather.test"));
    let typescript = std::fs::read_to_string(&path)
        .unwrap()
        .replace("https://api.weather.com", &base);

    // The engine runs JavaScript only: the guide's TypeScript as written does not load.
    let error = PluginSource::triggerfish("weather", &typescript)
        .activate_with(http_grants())
        .await
        .unwrap_err();
    let message = call_error(error).to_string();
    assert!(
        message.contains("Plugin \"weather\" could not load its entry \"mod.ts\": SyntaxError"),
        "{message}"
    );

    let javascript = strip_types(Path::new("mod.ts"), &typescript).unwrap();
    let mut plugin = PluginSource::triggerfish("weather", &javascript)
        .activate_with(http_grants())
        .await
        .unwrap();
    let descriptor = plugin.descriptor().clone();
    assert_eq!(
        descriptor.manifest,
        Some(json!({
            "name": "weather", "version": "1.0.0", "description": "Väderprognosfrågor",
            "classification": "PUBLIC", "trust": "sandboxed", "declaredEndpoints": [base],
        }))
    );
    assert_eq!(
        descriptor.system_prompt.as_deref(),
        Some("Använd `forecast` för att hämta väder för valfri stad.")
    );
    assert_eq!(descriptor.tools.len(), 1);
    assert_eq!(
        (
            descriptor.tools[0].name.as_str(),
            descriptor.tools[0].risk.clone()
        ),
        ("forecast", Ok(Risk::Network))
    );

    let (outcome, report) = call_with(
        &mut plugin,
        "forecast",
        json!({"city": "Göteborg"}),
        loopback_grant(&server, "api.weather.test"),
    )
    .await
    .unwrap();
    let body = json!({
        "path": "/v1/forecast?city=G%C3%B6teborg",
        "host": server.authority("api.weather.test"),
        "forecast": "sun",
    });
    assert_eq!(outcome, ok(json!(body.to_string())));
    let logs: Vec<String> = report.logs.iter().map(|l| l.message.clone()).collect();
    assert_eq!(logs, ["Hämtar prognos {\"city\":\"Göteborg\"}"]);
    assert_eq!(server.connections(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trusted_triggerfish_plugin_reads_host_facts_through_the_host() {
    let source = PluginSource::fixture("system-facts").trusted();
    let grants = Grants {
        js: JsGrants { host_info: true },
        ..Grants::default()
    };
    let mut plugin = source.activate_with(grants).await.unwrap();
    assert_eq!(plugin.descriptor().tools[0].risk, Ok(Risk::Read));
    let session = RecordingSession::new("INTERNAL");
    let opts = CallOptions {
        session: Some(session.clone()),
        ..CallOptions::default()
    };
    let (outcome, _) = call_with(&mut plugin, "system_facts", json!({}), opts)
        .await
        .unwrap();
    let bosun_js::ToolOutcome::Ok {
        output: Value::String(text),
        ..
    } = outcome
    else {
        panic!("system_facts failed: {outcome:?}");
    };
    let facts: Value = serde_json::from_str(&text).unwrap();
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_owned();
    assert_eq!(facts["hostname"], hostname.as_str());
    assert_eq!(facts["hostAtLoad"], hostname.as_str());
    assert_eq!(facts["os"], std::env::consts::OS);
    assert_eq!(facts["version"]["bosun"], env!("CARGO_PKG_VERSION"));
    assert_eq!(facts["version"]["engine"], "quickjs-ng");
    assert!(
        facts["version"]["deno"]
            .as_str()
            .unwrap()
            .contains("not Deno"),
        "{facts}"
    );
    // What the instance's memory limiter counts, not the host process's.
    assert!(facts["memory"].as_u64().unwrap() > 0);
    assert_eq!(
        facts["members"],
        json!([
            "Command",
            "build",
            "env",
            "hostname",
            "memoryUsage",
            "version"
        ])
    );
    assert_eq!(facts["env"], "object");
    assert_eq!(facts["taint"], "INTERNAL");
    // `export let systemPrompt` is read again for every prompt.
    assert_eq!(
        plugin
            .prompt(&json!({}), CallOptions::default())
            .await
            .unwrap(),
        ["The host facts were already read once."]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sandboxed_triggerfish_plugin_is_refused_deno() {
    // The same plugin, sandboxed: it reads `Deno.hostname()` while loading, and Triggerfish's
    // proxy throws, so activation fails with Triggerfish's message.
    let grants = Grants {
        js: JsGrants { host_info: true },
        ..Grants::default()
    };
    let error = PluginSource::fixture("system-facts")
        .activate_with(grants)
        .await
        .unwrap_err();
    let error = call_error(error);
    let CallErrorKind::Tool { code, message, .. } = &error.kind else {
        panic!("{error}");
    };
    assert_eq!(code, "plugin_error");
    assert!(
        message.contains(
            "Plugin \"system-facts\" could not load its entry \"mod.ts\": Error: Sandbox: access to Deno.hostname is blocked"
        ),
        "{message}"
    );

    // Trusted by the manifest and the user but not granted host facts by the host: the facts
    // are unavailable, not invented.
    let error = PluginSource::fixture("system-facts")
        .trusted()
        .activate_with(Grants::default())
        .await
        .unwrap_err();
    let message = call_error(error).to_string();
    assert!(
        message.contains("Deno.hostname() is not available: the host did not provide it"),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn escalate_taint_reaches_the_session_and_refuses_unknown_labels() {
    let source = PluginSource::triggerfish(
        "classifier",
        r#"
export const manifest = { name: "classifier", version: "1.0.0", description: "Raises taint",
  classification: "INTERNAL", trust: "sandboxed", declaredEndpoints: [] };
export const toolDefinitions = [{ name: "raise", description: "Raise the session's taint.",
  parameters: { level: { type: "string", required: true } } }];
export function createExecutor(context) {
  return async (name, input) => {
    if (name !== "raise") return null;
    context.escalateTaint(input.level);
    return context.getSessionTaint();
  };
}
"#,
    );
    let mut plugin = source.start().await;
    let session = RecordingSession::new("PUBLIC");
    let with_session = || CallOptions {
        session: Some(session.clone()),
        ..CallOptions::default()
    };
    let raise = |level: &str| json!({"level": level});

    let (outcome, _) = call_with(&mut plugin, "raise", raise("CONFIDENTIAL"), with_session())
        .await
        .unwrap();
    assert_eq!(outcome, ok(json!("CONFIDENTIAL")));
    // Taint never falls.
    let (outcome, _) = call_with(&mut plugin, "raise", raise("PUBLIC"), with_session())
        .await
        .unwrap();
    assert_eq!(outcome, ok(json!("CONFIDENTIAL")));
    let (outcome, _) = call_with(&mut plugin, "raise", raise("SECRET"), with_session())
        .await
        .unwrap();
    assert_eq!(
        outcome,
        tool_error(
            "plugin_error",
            "Plugin classifier error: unknown classification \"SECRET\"",
            false
        )
    );
    assert_eq!(session.raises(), ["CONFIDENTIAL", "PUBLIC"]);

    // Outside a session there is nothing to raise: the plugin sees an error, not a silent no-op.
    let outcome = call(&mut plugin, "raise", raise("RESTRICTED")).await;
    let bosun_js::ToolOutcome::Err { code, message, .. } = outcome else {
        panic!("escalation outside a session succeeded");
    };
    assert_eq!(code, "plugin_error");
    assert!(message.contains("outside a session"), "{message}");
}
