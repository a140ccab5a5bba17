//! JavaScript plugins through the whole chokepoint: activation in the sandbox, tool calls under
//! policy, `restrictPolicy` hooks tightening decisions.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bosun_core::{Classification, ErrorCode, Redactor, ToolResult};
use bosun_host::plugin_runtime::js::{JsPluginSpec, JsPlugins};
use bosun_host::{Chokepoint, Session, ToolCall, Trace, Workspace};
use bosun_js::{ENGINE_WASM, Format, Trust};
use bosun_policy::{Mode, Policy, PolicyFile, Source};
use bosun_sandbox::{Loaded, Sandbox, SandboxConfig};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

static ENGINE: tokio::sync::OnceCell<Loaded> = tokio::sync::OnceCell::const_new();

async fn engine() -> &'static Loaded {
    ENGINE
        .get_or_init(|| async {
            // Every test process shares the pre-initialised engine's artefact.
            let sandbox = Sandbox::new(SandboxConfig {
                cache_dir: Some(
                    std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("js-cache"),
                ),
                ..SandboxConfig::default()
            })
            .unwrap();
            sandbox.load_js_engine(ENGINE_WASM).await.unwrap()
        })
        .await
}

fn fixture(name: &str) -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../js/engine/js/test/fixtures")
        .join(name);
    let mut files = Vec::new();
    if !dir.is_dir() {
        return files;
    }
    for entry in std::fs::read_dir(&dir).unwrap() {
        let entry = entry.unwrap();
        let file = entry.file_name().to_string_lossy().into_owned();
        if file.ends_with(".mjs") || file.ends_with(".js") {
            files.push((file, std::fs::read_to_string(entry.path()).unwrap()));
        }
    }
    files
}

fn forge(name: &str, capabilities: &[&str]) -> JsPluginSpec {
    JsPluginSpec {
        local_name: name.into(),
        format: Format::Forge,
        name: name.into(),
        entry: "index.mjs".into(),
        files: fixture(name),
        capabilities: capabilities.iter().map(|c| (*c).to_owned()).collect(),
        endpoints: Vec::new(),
        classification: Classification::Public,
        trust: Trust::Sandboxed,
        config: json!({}),
        timeout: Duration::from_secs(10),
        memory_bytes: 256 << 20,
        limits: bosun_js::JsLimits::default(),
        reserved: vec!["read_file".into(), "run_command".into()],
        static_manifest: None,
        code_from_strings: false,
    }
}

fn policy(rules: &str) -> Arc<Policy> {
    let file = PolicyFile::parse(rules).unwrap();
    Arc::new(
        Policy::builder(Mode::WorkspaceWrite)
            .user(file, Source::with_text("test.toml", rules))
            .unwrap()
            .build(),
    )
}

struct Host {
    chokepoint: Chokepoint,
    session: Arc<Session>,
    trace: Trace,
    _dir: tempfile::TempDir,
}

async fn host(specs: Vec<JsPluginSpec>, rules: &str) -> (Host, Vec<String>) {
    let policy = policy(rules);
    let plugins = JsPlugins::start(specs, engine().await, &policy).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    let workspace = Arc::new(Workspace::discover(dir.path()).unwrap());
    let chokepoint = Chokepoint::builder(policy, workspace)
        .tools(bosun_host::builtin::tools())
        .tools(plugins.tools)
        .hooks(plugins.hooks)
        .build()
        .unwrap();
    let trace = Trace::create(
        &dir.path().join(".runs"),
        "run-1".into(),
        None,
        Arc::new(Redactor::new(Vec::<(String, String)>::new())),
    )
    .unwrap();
    (
        Host {
            chokepoint,
            session: Arc::new(Session::new("s")),
            trace,
            _dir: dir,
        },
        plugins.warnings,
    )
}

impl Host {
    async fn call(&self, name: &str, input: Value) -> ToolResult {
        self.chokepoint
            .call(
                ToolCall {
                    id: "c".into(),
                    name: name.into(),
                    input,
                },
                &self.session,
                &self.trace,
                &CancellationToken::new(),
            )
            .await
            .result
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_forge_tool_runs_through_the_chokepoint_under_its_plugin_action() {
    let (host, warnings) = host(vec![forge("count-text", &["tools:register"])], "").await;
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(
        host.chokepoint.action_of("count_text").as_deref(),
        Some("plugin.count-text.tool.count_text")
    );
    let result = host.call("count_text", json!({"text": "a😀b"})).await;
    match &result {
        ToolResult::Ok { output, .. } => assert_eq!(output, &json!({"characters": 3})),
        other => panic!("{other:?}"),
    }

    // The chokepoint's own schema check comes first: the plugin never sees a bad input.
    let result = host.call("count_text", json!({"text": 7})).await;
    assert_eq!(
        result.error().map(|e| e.code),
        Some(ErrorCode::InvalidInput)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_policy_denying_the_plugin_action_keeps_the_tool_out() {
    let rules = r#"
[policy]
[[policy.rules]]
action = "plugin.count-text.*"
decision = "deny"
"#;
    let (host, _) = host(vec![forge("count-text", &["tools:register"])], rules).await;
    assert_eq!(host.chokepoint.action_of("count_text"), None);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_restrict_policy_hook_tightens_built_in_decisions() {
    let rules = r#"
[policy]
[[policy.rules]]
action = "run_command"
decision = "allow"
"#;
    let (host, warnings) = host(vec![forge("policy-guard", &["policy:restrict"])], rules).await;
    assert!(warnings.is_empty(), "{warnings:?}");
    // Policy allows run_command; the plugin denies anything but a package manager.
    let result = host
        .call("run_command", json!({"program": "ls", "args": []}))
        .await;
    let error = result.error().unwrap();
    assert_eq!(error.code, ErrorCode::Denied, "{error:?}");
    assert!(
        error.message.contains("only pnpm or npm"),
        "{}",
        error.message
    );
    // npm is only confirmed: with nobody to ask, the call needs approval.
    let result = host
        .call(
            "run_command",
            json!({"program": "npm", "args": ["--version"]}),
        )
        .await;
    assert_eq!(
        result.error().map(|e| e.code),
        Some(ErrorCode::NeedsApproval),
        "{result:?}"
    );
}

const OBSERVER_PLUGIN: &str = r#"
const seen = [];
let leaked = false;
let mutable = false;
export function activate(api) {
  api.observeRunEvents((envelope) => {
    const text = JSON.stringify(envelope);
    if (text.includes("sk-observe-secret-42")) leaked = true;
    try { envelope.event = null; } catch {}
    if (envelope.event === null) mutable = true;
    seen.push(envelope.event.type);
  });
  api.registerTool({
    name: "seen_events",
    description: "The run events this plugin observed so far.",
    risk: "read",
    inputSchema: api.z.object({}).strict(),
    execute: async () => ({ ok: true, output: { seen: [...seen], leaked, mutable }, truncated: false }),
  });
}
"#;

#[tokio::test(flavor = "multi_thread")]
async fn observers_get_every_event_redacted_and_frozen_without_stalling_the_run() {
    let mut spec = forge("observer", &["tools:register", "events:observe"]);
    spec.files = vec![("index.mjs".into(), OBSERVER_PLUGIN.into())];
    let policy = policy("");
    let plugins = JsPlugins::start(vec![spec], engine().await, &policy).await;
    assert!(plugins.warnings.is_empty(), "{:?}", plugins.warnings);
    let observer =
        bosun_host::plugin_runtime::js::JsObserver::for_runtimes(&plugins.runtimes).unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    let workspace = Arc::new(Workspace::discover(dir.path()).unwrap());
    let chokepoint = Chokepoint::builder(policy, workspace)
        .tools(bosun_host::builtin::tools())
        .tools(plugins.tools)
        .build()
        .unwrap();
    let trace = Trace::create(
        &dir.path().join(".runs"),
        "run-1".into(),
        None,
        Arc::new(Redactor::new([("OBSERVE_KEY", "sk-observe-secret-42")])),
    )
    .unwrap()
    .observe(observer.clone());
    let session = Arc::new(Session::new("s"));
    let call = |name: &str, input: Value| ToolCall {
        id: "c".into(),
        name: name.into(),
        input,
    };
    let cancel = CancellationToken::new();
    chokepoint
        .call(
            call("search", json!({"query": "sk-observe-secret-42"})),
            &session,
            &trace,
            &cancel,
        )
        .await;
    // Delivery is asynchronous: ask until the search's completion has arrived.
    let mut last = Value::Null;
    for _ in 0..100 {
        let result = chokepoint
            .call(call("seen_events", json!({})), &session, &trace, &cancel)
            .await
            .result;
        let ToolResult::Ok { output, .. } = result else {
            panic!("{result:?}");
        };
        last = output;
        let seen: Vec<&str> = last["seen"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        if seen.contains(&"tool.completed") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let seen: Vec<&str> = last["seen"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(
        &seen[..4],
        [
            "tool.proposed",
            "tool.decided",
            "tool.started",
            "tool.completed"
        ],
        "{last}"
    );
    assert_eq!(last["leaked"], false, "the observer saw the secret: {last}");
    assert_eq!(
        last["mutable"], false,
        "the observer could change the event: {last}"
    );
    assert!(observer.take_warnings().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_forge_tool_context_reports_the_hosts_limits() {
    let mut spec = forge("limits-probe", &["tools:register"]);
    spec.files = vec![(
        "index.mjs".into(),
        r#"export function activate(api) {
  api.registerTool({ name: "limits_probe", description: "Reports its context limits.", risk: "read",
    inputSchema: api.z.object({}).strict(),
    execute: async (_input, context) => ({ ok: true, output: context.limits, truncated: false }) });
}"#
        .into(),
    )];
    let host_limits = bosun_core::Limits {
        max_output_bytes: 4096,
        max_entries: 7,
        command_timeout_ms: 1234,
        ..bosun_core::Limits::default()
    };
    spec.limits = bosun_host::plugin_runtime::js::JsBounds::default()
        .with_host_limits(&host_limits)
        .limits;
    let (host, warnings) = host(vec![spec], "").await;
    assert!(warnings.is_empty(), "{warnings:?}");
    match host.call("limits_probe", json!({})).await {
        ToolResult::Ok { output, .. } => assert_eq!(
            output,
            json!({"maxOutputBytes": 4096, "maxEntries": 7, "commandTimeoutMs": 1234})
        ),
        other => panic!("{other:?}"),
    }
}
