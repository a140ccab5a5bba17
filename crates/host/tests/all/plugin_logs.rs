//! A plugin's log lines reach the trace by one path whatever its format: a native component's
//! `host.log` and a JavaScript plugin's `console` land as the same `tool.log` event, with the
//! same fields, the same level words, the same redaction and the same cut-line mark.

use std::collections::BTreeMap;
use std::sync::Arc;

use bosun_core::{Redactor, ToolResult};
use bosun_host::plugin_runtime::js::{JsEngine, JsPluginSpec, JsPlugins};
use bosun_host::plugin_runtime::native;
use bosun_host::{Chokepoint, Session, ToolCall, Trace, Workspace};
use bosun_js::ENGINE;
use bosun_plugins::{Catalog, CatalogInput, PluginConfig, TrustStore};
use bosun_policy::{Mode, Policy, PolicyFile, Source};
use bosun_sandbox::{Sandbox, SandboxConfig};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// Logs what the native `log-flood` program logs: `flood` one info line per `lines`,
/// `giant_line` one warning of `megabytes` MB of `y`.
const LOGGING_PLUGIN: &str = r#"
export default function activate(api) {
  api.registerTool({
    name: "js_flood",
    description: "Logs numbered lines.",
    risk: "read",
    inputSchema: api.z.object({ lines: api.z.number().int() }),
    execute: async (input) => {
      for (let i = 0; i < input.lines; i++) console.info(`flood line ${i} of ${input.lines}`);
      return { ok: true, output: { logged: input.lines }, truncated: false };
    },
  });
  api.registerTool({
    name: "js_giant_line",
    description: "Logs one long warning.",
    risk: "read",
    inputSchema: api.z.object({ megabytes: api.z.number().int() }),
    execute: async (input) => {
      console.warn("y".repeat(input.megabytes * 1000000));
      return { ok: true, output: {}, truncated: false };
    },
  });
  api.registerTool({
    name: "js_log_then_throw",
    description: "Logs a line, then fails.",
    risk: "read",
    inputSchema: api.z.object({}),
    execute: async () => {
      console.error("flood line 0 of 1");
      throw new Error("gave up");
    },
  });
}
"#;

fn policy() -> Arc<Policy> {
    let rules = "";
    Arc::new(
        Policy::builder(Mode::WorkspaceWrite)
            .user(
                PolicyFile::parse(rules).unwrap(),
                Source::with_text("test.toml", rules),
            )
            .unwrap()
            .build(),
    )
}

fn js_spec() -> JsPluginSpec {
    crate::support::forge_spec(
        "logger",
        vec![("index.mjs".into(), LOGGING_PLUGIN.into())],
        &["tools:register"],
    )
}

/// The native `log-flood` program installed, trusted and enabled as `bosun plugins enable`
/// would, in `home`.
fn native_catalog(home: &std::path::Path) -> Catalog {
    let plugin_dir = home.join("plugins/log-flood");
    std::fs::create_dir_all(&plugin_dir).unwrap();
    std::fs::copy(
        bosun_test_programs::LOG_FLOOD,
        plugin_dir.join("plugin.wasm"),
    )
    .unwrap();
    let plugins = BTreeMap::from([("log-flood".to_owned(), PluginConfig::new("log-flood"))]);
    let mut trust = TrustStore::empty(TrustStore::default_path(home));
    let build = |trust: &TrustStore| {
        Catalog::build(CatalogInput {
            home,
            user_plugins: &plugins,
            workspace: None,
            trust,
            builtins: &["read_file"],
            digests: None,
        })
    };
    let first = build(&trust);
    let entry = &first.entries()[0];
    trust.record(
        &entry.scope,
        &entry.local_name,
        entry.trust_record(chrono::Utc::now()).unwrap(),
    );
    let catalog = build(&trust);
    assert!(
        catalog.enabled().next().is_some(),
        "log-flood is not enabled"
    );
    catalog
}

/// The `tool.log` events of the run, without the call id and tool that tell them apart.
fn logged(runs: &std::path::Path, call_id: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(runs.join("run-1.jsonl")).unwrap();
    text.lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap()["event"].clone())
        .filter(|event| event["type"] == "tool.log" && event["call_id"] == call_id)
        .map(|mut event| {
            let object = event.as_object_mut().unwrap();
            object.remove("call_id");
            object.remove("tool");
            event
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_native_and_a_js_plugins_log_lines_land_the_same_way_in_the_trace() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let sandbox = Sandbox::new(SandboxConfig {
        cache_dir: Some(std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("js-cache")),
        ..SandboxConfig::default()
    })
    .unwrap();
    let engine = JsEngine::new(sandbox.clone(), ENGINE, None);
    let policy = policy();
    let js = JsPlugins::start(vec![js_spec()], &engine, &policy, None).await;
    assert!(js.warnings.is_empty(), "{:?}", js.warnings);
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    let workspace = Arc::new(Workspace::discover(&ws).unwrap());
    let catalog = native_catalog(&home);
    let chokepoint = Chokepoint::builder(policy.clone(), workspace.clone())
        .tools(native::plugin_tools(
            catalog.enabled(),
            &sandbox,
            &policy,
            workspace.root(),
        ))
        .tools(js.tools)
        .build()
        .unwrap();
    let runs = dir.path().join(".runs");
    // The secret is what both plugins log: each line must reach the trace redacted.
    let trace = Trace::create(
        &runs,
        "run-1".into(),
        None,
        Arc::new(Redactor::new([("FLOOD_KEY", "line 0 of 2")])),
    )
    .unwrap();
    let session = Arc::new(Session::new("s"));
    let cancel = CancellationToken::new();
    for (id, name, input) in [
        ("native-flood", "flood", json!({"lines": 2})),
        ("js-flood", "js_flood", json!({"lines": 2})),
        ("native-giant", "giant_line", json!({"megabytes": 1})),
        ("js-giant", "js_giant_line", json!({"megabytes": 1})),
    ] {
        let outcome = chokepoint
            .call(
                ToolCall {
                    id: id.into(),
                    name: name.into(),
                    input,
                },
                &session,
                &trace,
                &cancel,
            )
            .await;
        assert!(
            matches!(outcome.result, ToolResult::Ok { .. }),
            "{name}: {:?}",
            outcome.result
        );
    }
    let failed = chokepoint
        .call(
            ToolCall {
                id: "js-failed".into(),
                name: "js_log_then_throw".into(),
                input: json!({}),
            },
            &session,
            &trace,
            &cancel,
        )
        .await;
    assert!(matches!(failed.result, ToolResult::Err { .. }));
    drop(trace);

    let flood = logged(&runs, "native-flood");
    assert_eq!(
        flood,
        [
            json!({"type": "tool.log", "level": "info", "message": "flood [REDACTED:FLOOD_KEY]"}),
            json!({"type": "tool.log", "level": "info", "message": "flood line 1 of 2"}),
        ]
    );
    assert_eq!(logged(&runs, "js-flood"), flood);

    let giant = logged(&runs, "native-giant");
    assert_eq!(giant.len(), 1, "{giant:?}");
    assert_eq!(giant[0]["level"], "warn");
    let message = giant[0]["message"].as_str().unwrap();
    assert!(
        message.starts_with("yyyy") && message.ends_with(" … [cut at the line bound]"),
        "{}",
        &message[message.len() - 40..]
    );
    assert_eq!(logged(&runs, "js-giant"), giant);

    // A failed call's lines are kept too.
    assert_eq!(
        logged(&runs, "js-failed"),
        [json!({"type": "tool.log", "level": "error", "message": "flood line 0 of 1"})]
    );
}
