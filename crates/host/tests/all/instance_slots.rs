//! More plugins in use than the engine has instance slots: when the pool is full, the least
//! recently used idle instance of any plugin is released for the next one, whatever the format;
//! an instance in a call is never taken, and only when every slot is in a running call does a
//! call fail — with `limit_reached` and the fix. A released plugin starts afresh (its module
//! state lost, as after a poisoning), and the call that released it says so in the trace.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bosun_core::{ErrorCode, Redactor, ToolOutput, ToolResult};
use bosun_host::plugin_runtime::js::{JsEngine, JsPluginSpec, JsPlugins};
use bosun_host::plugin_runtime::native;
use bosun_host::tool::Tool;
use bosun_host::{Chokepoint, Session, ToolCall, Trace, Workspace};
use bosun_js::ENGINE;
use bosun_plugins::{Catalog, CatalogInput, PluginConfig, TrustStore};
use bosun_policy::{Mode, Policy, PolicyFile, Source};
use bosun_sandbox::{EngineLimits, Sandbox, SandboxConfig};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// A sandbox whose pool has `slots` instance slots.
pub(crate) fn sandbox(slots: u32) -> Sandbox {
    Sandbox::new(SandboxConfig {
        cache_dir: Some(std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("js-cache")),
        engine: EngineLimits {
            max_instances: slots,
            ..EngineLimits::default()
        },
        ..SandboxConfig::default()
    })
    .unwrap()
}

pub(crate) fn policy() -> Arc<Policy> {
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

/// Polls until a call holds the instance of `plugin` (bounded: a test that never sees it fails).
async fn until_in_call(sandbox: &Sandbox, plugin: &str) {
    for _ in 0..3000 {
        if sandbox.slots().in_call().iter().any(|p| p == plugin) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!(
        "no call of `{plugin}` began: {:?}",
        sandbox.slots().in_call()
    );
}

// ---- native plugins ----

/// The tools of the native program `wasm`, installed, trusted and enabled as `local` in a home
/// of its own under `dir`.
pub(crate) fn native_tools(
    dir: &std::path::Path,
    wasm: &str,
    local: &str,
    sandbox: &Sandbox,
    policy: &Arc<Policy>,
) -> Vec<Arc<dyn Tool>> {
    let home = dir.join("homes").join(local);
    let plugin_dir = home.join("plugins").join(local);
    std::fs::create_dir_all(&plugin_dir).unwrap();
    std::fs::copy(wasm, plugin_dir.join("plugin.wasm")).unwrap();
    let plugins = BTreeMap::from([(local.to_owned(), PluginConfig::new(local))]);
    let mut trust = TrustStore::empty(TrustStore::default_path(&home));
    let build = |trust: &TrustStore| {
        Catalog::build(CatalogInput {
            home: &home,
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
    assert!(catalog.enabled().next().is_some(), "{local} is not enabled");
    native::plugin_tools(catalog.enabled(), sandbox, policy, dir)
}

pub(crate) fn named(tools: &[Arc<dyn Tool>], name: &str) -> Arc<dyn Tool> {
    tools
        .iter()
        .find(|t| t.spec().name.as_str() == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
        .clone()
}

/// Calls `tool` directly (policy is not what is tested here) with its own context; returns the
/// result and the lines the call left for the trace.
async fn call_native(
    tool: &Arc<dyn Tool>,
    root: &std::path::Path,
    input: Value,
    cancel: CancellationToken,
) -> (
    Result<ToolOutput, bosun_core::ToolError>,
    Vec<(String, String)>,
) {
    let mut ctx = crate::builtin_context(root);
    ctx.cancel = cancel;
    let result = tool.call(input, &ctx).await;
    let lines = ctx.logs.lock().unwrap().clone();
    (result, lines)
}

/// Whether the call's trace says its own plugin starts afresh after a release.
fn started_afresh(lines: &[(String, String)]) -> bool {
    lines
        .iter()
        .any(|(_, message)| message.contains("had been released to make room"))
}

fn releases(lines: &[(String, String)]) -> Vec<String> {
    lines
        .iter()
        .filter(|(_, message)| message.contains("was released for this call"))
        .map(|(_, message)| {
            let start = message.find("plugin `").unwrap() + "plugin `".len();
            message[start..][..message[start..].find('`').unwrap()].to_owned()
        })
        .collect()
}

/// Four native plugins on a two-slot engine, called in turn twice: every call answers, each
/// past the second releases the least recently used idle instance (the plugin called longest
/// ago) and its trace names it. Before, the third plugin's call failed with "all 2 plugin
/// instance slots are in use", and so did every later call of a new plugin, for good.
#[tokio::test(flavor = "multi_thread")]
async fn native_plugins_past_the_instance_slots_all_answer_in_turn() {
    let dir = tempfile::tempdir().unwrap();
    let sandbox = sandbox(2);
    let policy = policy();
    let names = ["flood-a", "flood-b", "flood-c", "flood-d"];
    let tools: Vec<_> = names
        .iter()
        .map(|local| {
            let tools = native_tools(
                dir.path(),
                bosun_test_programs::LOG_FLOOD,
                local,
                &sandbox,
                &policy,
            );
            named(&tools, "flood")
        })
        .collect();
    let mut released = Vec::new();
    for round in 0..2 {
        for (local, tool) in names.iter().zip(&tools) {
            let (result, lines) = call_native(
                tool,
                dir.path(),
                json!({"lines": 1}),
                CancellationToken::new(),
            )
            .await;
            assert!(result.is_ok(), "{local}, round {round}: {result:?}");
            released.extend(releases(&lines));
            // In the second round every plugin's instance had been released for another's
            // call: its own call says it starts afresh. Never in the first.
            assert_eq!(started_afresh(&lines), round == 1, "{local}, round {round}");
        }
    }
    // Each call after the first two needed a slot and released the instance idle longest.
    assert_eq!(
        released,
        [
            "flood-a", "flood-b", "flood-c", "flood-d", "flood-a", "flood-b"
        ]
    );
}

/// A call that is running keeps its instance while three other plugins come and go through the
/// one slot left; when both slots are in running calls, the next call gets `limit_reached`
/// naming the fix, and neither running call is disturbed: each ends as its own cancellation
/// says. A poisoned (cancelled) instance is replaced at the plugin's next call.
#[tokio::test(flavor = "multi_thread")]
async fn a_running_native_call_keeps_its_instance_and_a_full_pool_of_running_calls_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_owned();
    let sandbox = sandbox(2);
    let policy = policy();
    let spin = |local: &str| {
        named(
            &native_tools(
                &root,
                bosun_test_programs::SPIN_FOREVER,
                local,
                &sandbox,
                &policy,
            ),
            "spin",
        )
    };
    let (spin_a, spin_b) = (spin("spin-a"), spin("spin-b"));
    let floods: Vec<_> = ["flood-a", "flood-b", "flood-c"]
        .iter()
        .map(|local| {
            named(
                &native_tools(
                    &root,
                    bosun_test_programs::LOG_FLOOD,
                    local,
                    &sandbox,
                    &policy,
                ),
                "flood",
            )
        })
        .collect();

    let start = |tool: &Arc<dyn Tool>, cancel: &CancellationToken| {
        let (tool, root, cancel) = (tool.clone(), root.clone(), cancel.clone());
        tokio::spawn(async move { call_native(&tool, &root, json!({}), cancel).await })
    };
    let cancel_a = CancellationToken::new();
    let running_a = start(&spin_a, &cancel_a);
    until_in_call(&sandbox, "spin-a").await;
    for (i, flood) in floods.iter().enumerate() {
        let (result, lines) =
            call_native(flood, &root, json!({"lines": 1}), CancellationToken::new()).await;
        assert!(result.is_ok(), "flood {i}: {result:?}");
        // Only the flood plugins gave up their instances; the running one was never a candidate.
        assert!(
            !releases(&lines).contains(&"spin-a".to_owned()),
            "{lines:?}"
        );
    }
    assert!(
        !running_a.is_finished(),
        "spin-a's call ended while others came and went"
    );

    let cancel_b = CancellationToken::new();
    let running_b = start(&spin_b, &cancel_b);
    until_in_call(&sandbox, "spin-b").await;
    let (refused, _) = call_native(
        &floods[0],
        &root,
        json!({"lines": 1}),
        CancellationToken::new(),
    )
    .await;
    let error = refused.unwrap_err();
    assert_eq!(error.code, ErrorCode::LimitReached, "{error:?}");
    assert!(error.retryable, "{error:?}");
    for fix in [
        "all 2 plugin instance slots are in use by calls still running",
        "wait for one to finish",
        "`plugin_instances` in the [sandbox] table",
    ] {
        assert!(error.message.contains(fix), "{fix}: {}", error.message);
    }
    assert!(!running_a.is_finished() && !running_b.is_finished());

    // Each running call ends as its own cancellation says, not through a lost instance.
    for (cancel, running) in [(cancel_a, running_a), (cancel_b, running_b)] {
        cancel.cancel();
        let (result, _) = running.await.unwrap();
        assert_eq!(result.unwrap_err().code, ErrorCode::Cancelled);
    }
    // The cancelled (poisoned) instances were dropped: their slots serve the refused plugin,
    // and a cancelled plugin gets a fresh instance that runs again.
    let (result, _) = call_native(
        &floods[0],
        &root,
        json!({"lines": 1}),
        CancellationToken::new(),
    )
    .await;
    assert!(result.is_ok(), "{result:?}");
    let cancel_again = CancellationToken::new();
    let again = start(&spin_a, &cancel_again);
    until_in_call(&sandbox, "spin-a").await;
    cancel_again.cancel();
    let (result, _) = again.await.unwrap();
    assert_eq!(result.unwrap_err().code, ErrorCode::Cancelled);
}

// ---- JavaScript plugins ----

/// A Forge plugin whose one tool, `tool`, runs `body` (an async function's body).
fn forge(local: &str, tool: &str, body: &str) -> JsPluginSpec {
    let source = format!(
        r#"
let calls = 0;
export default function activate(api) {{
  api.registerTool({{
    name: "{tool}",
    description: "A test tool.",
    risk: "read",
    inputSchema: api.z.object({{}}),
    execute: async () => {{ {body} }},
  }});
}}
"#
    );
    JsPluginSpec {
        timeout: Duration::from_secs(60),
        ..crate::support::forge_spec(
            local,
            vec![("index.mjs".into(), source)],
            &["tools:register"],
        )
    }
}

/// Counts its calls in module state.
fn counter(local: &str, tool: &str) -> JsPluginSpec {
    forge(
        local,
        tool,
        "calls += 1; return { ok: true, output: { calls }, truncated: false };",
    )
}

/// Never returns until stopped.
fn spinner(local: &str, tool: &str) -> JsPluginSpec {
    forge(local, tool, "for (;;) {}")
}

struct Host {
    chokepoint: Chokepoint,
    session: Arc<Session>,
    trace: Trace,
    runs: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

/// A host with `specs` started on `sandbox`, nothing kept between starts (every plugin holds
/// the instance it was activated in, until it is released).
async fn js_host(sandbox: &Sandbox, specs: Vec<JsPluginSpec>) -> Host {
    let policy = policy();
    let engine = JsEngine::new(sandbox.clone(), ENGINE, None);
    let plugins = JsPlugins::start(specs, &engine, &policy, None).await;
    assert!(plugins.warnings.is_empty(), "{:?}", plugins.warnings);
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    let workspace = Arc::new(Workspace::discover(dir.path()).unwrap());
    let chokepoint = Chokepoint::builder(policy, workspace)
        .tools(plugins.tools)
        .build()
        .unwrap();
    let runs = dir.path().join(".runs");
    let trace = Trace::create(
        &runs,
        "run-1".into(),
        None,
        Arc::new(Redactor::new(Vec::<(String, String)>::new())),
    )
    .unwrap();
    Host {
        chokepoint,
        session: Arc::new(Session::new("s")),
        trace,
        runs,
        _dir: dir,
    }
}

impl Host {
    async fn call(&self, id: &str, name: &str, cancel: &CancellationToken) -> ToolResult {
        self.chokepoint
            .call(
                ToolCall {
                    id: id.into(),
                    name: name.into(),
                    input: json!({}),
                },
                &self.session,
                &self.trace,
                cancel,
            )
            .await
            .result
    }

    /// The plugins whose instance the call `id` released, as its trace says.
    fn released_by(&self, id: &str) -> Vec<String> {
        releases(&self.logs_of(id))
    }

    /// Whether the trace of the call `id` says its plugin starts afresh after a release.
    fn started_afresh(&self, id: &str) -> bool {
        started_afresh(&self.logs_of(id))
    }

    /// The log lines the trace holds for the call `id`.
    fn logs_of(&self, id: &str) -> Vec<(String, String)> {
        let text = std::fs::read_to_string(self.runs.join("run-1.jsonl")).unwrap();
        let lines: Vec<(String, String)> = text
            .lines()
            .map(|line| serde_json::from_str::<Value>(line).unwrap()["event"].clone())
            .filter(|event| event["type"] == "tool.log" && event["call_id"] == id)
            .map(|event| {
                (
                    event["level"].as_str().unwrap().to_owned(),
                    event["message"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        lines
    }
}

fn calls_of(result: &ToolResult) -> u64 {
    match result {
        ToolResult::Ok { output, .. } => output["calls"].as_u64().unwrap(),
        other => panic!("{other:?}"),
    }
}

/// Three JavaScript plugins on a two-slot engine, with nothing kept between starts: all three
/// start (the third's activation released the first's idle instance — before, it was left out
/// with "all 2 plugin instance slots are in use"), and called in turn each answers, released
/// plugins starting afresh with their module state lost, as the plugin guide says. Two plugins
/// called in turn within the slots keep theirs.
#[tokio::test(flavor = "multi_thread")]
async fn js_plugins_past_the_instance_slots_all_start_and_answer_in_turn() {
    let sandbox = sandbox(2);
    let host = js_host(
        &sandbox,
        vec![
            counter("count-a", "count_a"),
            counter("count-b", "count_b"),
            counter("count-c", "count_c"),
        ],
    )
    .await;
    let cancel = CancellationToken::new();
    // Started with count-b and count-c live: count-a starts again (releasing count-b), then
    // count-b (releasing count-c), then count-c (releasing count-a) — each from a fresh state.
    for (round, expected) in [
        (1, ["count-b", "count-c", "count-a"]),
        (2, ["count-b", "count-c", "count-a"]),
    ] {
        for (tool, released) in ["count_a", "count_b", "count_c"].into_iter().zip(expected) {
            let id = format!("{tool}-{round}");
            let result = host.call(&id, tool, &cancel).await;
            assert_eq!(
                calls_of(&result),
                1,
                "{id}: module state survived a release"
            );
            assert_eq!(host.released_by(&id), [released], "{id}");
            // Its own instance had been released (count-a's by count-c's activation, which
            // had no call to tell): the call says so.
            assert!(host.started_afresh(&id), "{id}");
        }
    }
    // Within the slots nothing is released and module state lives on.
    for round in 2..=3 {
        for tool in ["count_b", "count_c"] {
            let id = format!("{tool}-within-{round}");
            assert_eq!(
                calls_of(&host.call(&id, tool, &cancel).await),
                round,
                "{id}"
            );
            assert!(host.released_by(&id).is_empty(), "{id}");
            assert!(!host.started_afresh(&id), "{id}");
        }
    }
}

/// A running JavaScript call (a loop with no end) keeps its instance while other plugins come
/// and go; with both slots in running calls the next call is refused with `limit_reached` and
/// the fix; the running calls end only as their cancellation says, and a plugin stopped at its
/// deadline answers its next call.
#[tokio::test(flavor = "multi_thread")]
async fn a_running_js_call_keeps_its_instance_and_a_full_pool_of_running_calls_is_refused() {
    let sandbox = sandbox(2);
    let mut short = spinner("spin-short", "spin_short");
    short.timeout = Duration::from_secs(1);
    let host = Arc::new(
        js_host(
            &sandbox,
            vec![
                spinner("spin-a", "spin_a"),
                spinner("spin-b", "spin_b"),
                counter("count-a", "count_a"),
                counter("count-b", "count_b"),
                counter("count-c", "count_c"),
                short,
            ],
        )
        .await,
    );
    let start = |tool: &'static str, cancel: &CancellationToken| {
        let (host, cancel) = (host.clone(), cancel.clone());
        tokio::spawn(async move { host.call(tool, tool, &cancel).await })
    };
    let cancel_a = CancellationToken::new();
    let running_a = start("spin_a", &cancel_a);
    until_in_call(&sandbox, "spin-a").await;
    let cancel = CancellationToken::new();
    for tool in ["count_a", "count_b", "count_c", "count_a"] {
        let result = host.call(tool, tool, &cancel).await;
        assert_eq!(calls_of(&result), 1, "{tool}");
        assert!(!host.released_by(tool).contains(&"spin-a".to_owned()));
    }
    assert!(
        !running_a.is_finished(),
        "spin-a's call ended while others came and went"
    );

    let cancel_b = CancellationToken::new();
    let running_b = start("spin_b", &cancel_b);
    until_in_call(&sandbox, "spin-b").await;
    match host.call("refused", "count_b", &cancel).await {
        ToolResult::Err { error, .. } => {
            assert_eq!(error.code, ErrorCode::LimitReached, "{error:?}");
            assert!(
                error.message.contains("in use by calls still running")
                    && error
                        .message
                        .contains("`plugin_instances` in the [sandbox] table"),
                "{}",
                error.message
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(!running_a.is_finished() && !running_b.is_finished());
    for (cancel, running) in [(cancel_a, running_a), (cancel_b, running_b)] {
        cancel.cancel();
        match running.await.unwrap() {
            ToolResult::Err { error, .. } => assert_eq!(error.code, ErrorCode::Cancelled),
            other => panic!("{other:?}"),
        }
    }

    // A call stopped at its deadline leaves the plugin usable: the next call runs its loop
    // again and meets its deadline again, rather than a dead instance.
    for id in ["short-1", "short-2"] {
        match host.call(id, "spin_short", &cancel).await {
            ToolResult::Err { error, .. } => {
                assert!(error.message.contains("deadline"), "{id}: {error:?}")
            }
            other => panic!("{id}: {other:?}"),
        }
    }
    assert_eq!(calls_of(&host.call("after", "count_b", &cancel).await), 1);
}
