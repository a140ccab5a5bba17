//! The model's `plugin_install` naming a registry: resolved, fetched, verified, read and compared
//! before the one question, which carries the trust review; swapped in only after a yes, and
//! nothing left behind after a no. The registry is a signed catalog folder made in the test with
//! a key made in the test, pinned in the user's config.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bosun_core::{ApprovalAnswer, ErrorCode, Redactor, ToolResult};
use bosun_host::approval::{ApprovalBroker, ApprovalRequest};
use bosun_host::{Host, Session, ToolCall, Trace};
use bosun_registry::ArtifactKind;
use bosun_registry::key::PrivateKey;
use bosun_registry::publish::{Expiry, Signing};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

fn weather(name: &str, version: &str, endpoint: &str) -> String {
    format!(
        r#"export const manifest = {{
  name: "{name}",
  version: "{version}",
  description: "Weather by city",
  classification: "INTERNAL",
  trust: "sandboxed",
  declaredEndpoints: ["{endpoint}"],
}};
export async function activate(ctx) {{}}
"#
    )
}

/// Answers every question with `answer`, keeping what it was asked.
struct Recorder {
    answer: ApprovalAnswer,
    asked: Mutex<Vec<ApprovalRequest>>,
}

impl Recorder {
    fn new(answer: ApprovalAnswer) -> Arc<Self> {
        Arc::new(Self {
            answer,
            asked: Mutex::default(),
        })
    }
    fn asked(&self) -> Vec<ApprovalRequest> {
        self.asked.lock().unwrap().clone()
    }
}

#[async_trait]
impl ApprovalBroker for Recorder {
    async fn ask(&self, request: &ApprovalRequest) -> ApprovalAnswer {
        self.asked.lock().unwrap().push(request.clone());
        self.answer
    }
}

/// A home, a workspace and a signed catalog `corp` holding weather 1.0.0, pinned.
struct Setup {
    root: tempfile::TempDir,
    key: PrivateKey,
}

impl Setup {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("ws/.git")).unwrap();
        std::fs::create_dir_all(root.path().join("home")).unwrap();
        let key = PrivateKey::generate().unwrap();
        let setup = Self { root, key };
        bosun_registry::publish::init(&setup.catalog(), &setup.signing()).unwrap();
        setup.publish("weather", "1.0.0", "https://api.weather.example");
        setup.user("");
        setup
    }
    fn signing(&self) -> Signing<'_> {
        Signing {
            key: &self.key,
            now: chrono::Utc::now(),
            expiry: Expiry::default(),
        }
    }
    fn home(&self) -> PathBuf {
        self.root.path().join("home")
    }
    fn ws(&self) -> PathBuf {
        self.root.path().join("ws")
    }
    fn catalog(&self) -> PathBuf {
        self.root.path().join("catalog")
    }
    fn source_dir(&self, name: &str, version: &str) -> PathBuf {
        self.root.path().join(format!("src-{version}")).join(name)
    }
    fn publish(&self, name: &str, version: &str, endpoint: &str) {
        let dir = self.source_dir(name, version);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("mod.ts"), weather(name, version, endpoint)).unwrap();
        bosun_registry::publish::publish_plugin(&self.catalog(), &dir, &self.signing()).unwrap();
    }
    /// The user's config: `extra` (top-level keys and tables), then `corp` pinned.
    fn user(&self, extra: &str) {
        std::fs::write(
            self.home().join("config.toml"),
            format!(
                "{extra}\n[registries.corp]\nkind = \"dir\"\npath = \"{}\"\nkeys = [\"{}\"]\n",
                self.catalog().display(),
                self.key.public().keyid()
            ),
        )
        .unwrap();
    }
    fn project(&self, text: &str) {
        let dir = self.ws().join(".bosun");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("config.toml"), text).unwrap();
    }
    fn host(&self) -> Host {
        Host::builder()
            .workspace_of(&self.ws())
            .home(&self.home())
            .build()
            .unwrap()
    }
    /// Calls `plugin_install` with `input` through a chokepoint asking `broker`.
    async fn install(&self, broker: Arc<dyn ApprovalBroker>, input: Value) -> ToolResult {
        self.install_in(&Arc::new(Session::new("s")), broker, input)
            .await
    }
    async fn install_in(
        &self,
        session: &Arc<Session>,
        broker: Arc<dyn ApprovalBroker>,
        input: Value,
    ) -> ToolResult {
        let host = self.host();
        let chokepoint = host.chokepoint(broker).unwrap();
        let trace = Trace::create(
            &self.root.path().join("runs"),
            format!(
                "run-{}",
                RUNS.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            ),
            None,
            Arc::new(Redactor::new(Vec::<(String, String)>::new())),
        )
        .unwrap();
        chokepoint
            .call(
                ToolCall {
                    id: "c".into(),
                    name: "plugin_install".into(),
                    input,
                },
                session,
                &trace,
                &CancellationToken::new(),
            )
            .await
            .result
    }
    /// Every entry of the user's plugins folder, staging and aside folders included.
    fn plugin_entries(&self) -> Vec<String> {
        entries(&self.home().join("plugins"))
    }
    fn locked(&self) -> bool {
        bosun_plugins::lock::InstallLock::load(&self.home())
            .unwrap()
            .plugin("weather")
            .is_some()
    }
    fn artifact_sha256(&self, name: &str, version: &str) -> String {
        let prepared =
            bosun_registry::publish::prepare_plugin(&self.source_dir(name, version)).unwrap();
        use sha2::Digest as _;
        hex(&sha2::Sha256::digest(&prepared.bytes))
    }
}

static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

fn error(result: &ToolResult) -> (ErrorCode, String) {
    let e = result
        .error()
        .unwrap_or_else(|| panic!("expected an error: {result:?}"));
    (e.code, e.message.clone())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_registry_install_asks_once_with_the_trust_review_then_installs() {
    let setup = Setup::new();
    let broker = Recorder::new(ApprovalAnswer::AllowOnce);
    let result = setup
        .install(
            broker.clone(),
            json!({"name": "weather", "registry": "corp"}),
        )
        .await;
    assert!(matches!(result, ToolResult::Ok { .. }), "{result:?}");

    // One question, about the action `plugin.install`, carrying the whole review.
    let asked = broker.asked();
    assert_eq!(asked.len(), 1, "{asked:#?}");
    let request = &asked[0];
    assert_eq!(request.action, "plugin.install");
    assert_eq!(request.tool, "plugin_install");
    // One install, one question: no session or workspace grant is offered for it.
    assert_eq!(request.reach, bosun_host::approval::AnswerReach::Once);
    let review = request
        .review
        .as_deref()
        .expect("the question carries the review");
    let sha = setup.artifact_sha256("weather", "1.0.0");
    for needle in [
        "weather 1.0.0 (triggerfish) from the registry `corp`",
        "signer: signed by the `targets` role",
        &format!("sha256: {sha}"),
        "capabilities: ",
        "endpoints: https://api.weather.example",
        "classification: INTERNAL",
        "tools: ",
    ] {
        assert!(review.contains(needle), "`{needle}` is not in:\n{review}");
    }
    // The text a terminal shows has it too.
    let prompt = bosun_host::approval::render_prompt(request);
    assert!(prompt.contains(&format!("sha256: {sha}")), "{prompt}");

    // In place, enabled, trusted and locked; no staging left.
    assert_eq!(setup.plugin_entries(), ["weather"]);
    assert!(setup.locked());
    let config = std::fs::read_to_string(setup.home().join("config.toml")).unwrap();
    assert!(config.contains("weather"), "{config}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_declined_or_unanswered_registry_install_leaves_nothing() {
    let setup = Setup::new();
    for (broker, code) in [
        (
            Recorder::new(ApprovalAnswer::Deny) as Arc<dyn ApprovalBroker>,
            ErrorCode::Denied,
        ),
        (
            Arc::new(bosun_host::NonInteractive),
            ErrorCode::NeedsApproval,
        ),
    ] {
        let result = setup
            .install(broker, json!({"name": "weather", "registry": "corp"}))
            .await;
        assert_eq!(error(&result).0, code, "{result:?}");
        // Not in place, not locked, not enabled, and no staging folder behind.
        assert_eq!(setup.plugin_entries(), Vec::<String>::new());
        assert!(!setup.locked());
        let config = std::fs::read_to_string(setup.home().join("config.toml")).unwrap();
        assert!(!config.contains("[plugins"), "{config}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_model_cannot_install_from_a_registry_the_user_did_not_configure() {
    let setup = Setup::new();
    // The project names another registry, allows installing in a workspace the user trusts:
    // it still cannot add a source.
    let ws = std::fs::canonicalize(setup.ws()).unwrap();
    setup.user(&format!("trusted_workspaces = [\"{}\"]\n", ws.display()));
    let elsewhere = tempfile::tempdir().unwrap();
    setup.project(&format!(
        "[registries]\nallow = [\"corp\", \"evil\"]\n\n[policy]\n[[policy.rules]]\naction = \"plugin.install\"\ndecision = \"allow\"\n# {}\n",
        elsewhere.path().display()
    ));
    let broker = Recorder::new(ApprovalAnswer::AllowOnce);
    let result = setup
        .install(
            broker.clone(),
            json!({"name": "weather", "registry": "evil"}),
        )
        .await;
    let (code, message) = error(&result);
    assert_eq!(code, ErrorCode::Denied, "{message}");
    assert!(message.contains("configured: corp"), "{message}");
    assert!(broker.asked().is_empty());
    assert_eq!(setup.plugin_entries(), Vec::<String>::new());

    // A project that narrows the sources to none leaves the user's `corp` out too.
    setup.project("[registries]\nallow = []\n");
    let result = setup
        .install(
            broker.clone(),
            json!({"name": "weather", "registry": "corp"}),
        )
        .await;
    assert_eq!(error(&result).0, ErrorCode::Denied, "{result:?}");
    assert!(broker.asked().is_empty());
    assert_eq!(setup.plugin_entries(), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_project_rule_cannot_make_a_registry_install_skip_the_question() {
    let setup = Setup::new();
    // The workspace is not trusted: its rule allowing `plugin.install` cannot loosen the
    // question away.
    setup
        .project("[policy]\n[[policy.rules]]\naction = \"plugin.install\"\ndecision = \"allow\"\n");
    let broker = Recorder::new(ApprovalAnswer::Deny);
    let result = setup
        .install(
            broker.clone(),
            json!({"name": "weather", "registry": "corp"}),
        )
        .await;
    assert_eq!(error(&result).0, ErrorCode::Denied, "{result:?}");
    assert_eq!(broker.asked().len(), 1);
    assert_eq!(setup.plugin_entries(), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_model_cannot_skip_the_review() {
    let setup = Setup::new();
    setup.publish("forecast", "1.0.0", "https://api.forecast.example");
    let broker = Recorder::new(ApprovalAnswer::AllowSession);
    // No field of the input answers for the person.
    let result = setup
        .install(
            broker.clone(),
            json!({"name": "weather", "registry": "corp", "yes": true}),
        )
        .await;
    assert_eq!(error(&result).0, ErrorCode::InvalidInput, "{result:?}");
    assert!(broker.asked().is_empty());

    // "For this session" allows that install only: the next one is asked with its own review.
    let session = Arc::new(Session::new("s"));
    let first = setup
        .install_in(
            &session,
            broker.clone(),
            json!({"name": "weather", "registry": "corp"}),
        )
        .await;
    assert!(matches!(first, ToolResult::Ok { .. }), "{first:?}");
    let second = setup
        .install_in(
            &session,
            Recorder::new(ApprovalAnswer::Deny),
            json!({"name": "forecast", "registry": "corp"}),
        )
        .await;
    assert_eq!(error(&second).0, ErrorCode::Denied, "{second:?}");
    assert_eq!(setup.plugin_entries(), ["weather"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_catalog_entry_whose_metadata_disagrees_is_refused_before_the_question() {
    let setup = Setup::new();
    // The catalog claims fewer endpoints than the plugin declares.
    let dir = setup.source_dir("liar", "1.0.0");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("mod.ts"),
        weather("liar", "1.0.0", "https://exfiltrate.example"),
    )
    .unwrap();
    let mut prepared = bosun_registry::publish::prepare_plugin(&dir).unwrap();
    prepared.claims.endpoints = std::collections::BTreeSet::new();
    bosun_registry::publish::add(
        &setup.catalog(),
        ArtifactKind::Plugin,
        prepared.claims,
        prepared.file,
        &prepared.bytes,
        &setup.signing(),
    )
    .unwrap();
    let broker = Recorder::new(ApprovalAnswer::AllowOnce);
    let result = setup
        .install(broker.clone(), json!({"name": "liar", "registry": "corp"}))
        .await;
    let (code, message) = error(&result);
    assert_eq!(code, ErrorCode::PluginError, "{message}");
    assert!(message.contains("endpoints"), "{message}");
    assert!(broker.asked().is_empty(), "asked before the comparison");
    assert_eq!(setup.plugin_entries(), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread")]
async fn hostile_names_and_versions_are_refused_before_any_fetch() {
    let setup = Setup::new();
    let broker = Recorder::new(ApprovalAnswer::AllowOnce);
    for input in [
        json!({"name": "../weather", "registry": "corp"}),
        json!({"name": "weather", "registry": "corp", "version": "../../1.0.0"}),
        json!({"name": "weather", "registry": "corp", "path": ".bosun/plugins/weather"}),
    ] {
        let result = setup.install(broker.clone(), input.clone()).await;
        assert_eq!(
            error(&result).0,
            ErrorCode::InvalidInput,
            "{input}: {result:?}"
        );
    }
    assert!(broker.asked().is_empty());
    assert_eq!(setup.plugin_entries(), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread")]
async fn plan_mode_and_a_deny_rule_refuse_a_registry_install() {
    let setup = Setup::new();
    setup.user("[policy]\n[[policy.rules]]\naction = \"plugin.install\"\ndecision = \"deny\"\n");
    let broker = Recorder::new(ApprovalAnswer::AllowOnce);
    let result = setup
        .install(
            broker.clone(),
            json!({"name": "weather", "registry": "corp"}),
        )
        .await;
    assert_eq!(error(&result).0, ErrorCode::Denied, "{result:?}");
    assert!(broker.asked().is_empty());
    assert_eq!(setup.plugin_entries(), Vec::<String>::new());

    setup.user("");
    let session = Arc::new(Session::new("s"));
    session.set_plan(true);
    let result = setup
        .install_in(
            &session,
            broker.clone(),
            json!({"name": "weather", "registry": "corp"}),
        )
        .await;
    assert_eq!(error(&result).0, ErrorCode::Denied, "{result:?}");
    assert!(broker.asked().is_empty());
    assert_eq!(setup.plugin_entries(), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_user_rule_may_allow_installs_from_one_named_registry() {
    let setup = Setup::new();
    setup.user(
        "[policy]\n[[policy.rules]]\naction = \"plugin.install\"\nhost = \"other\"\ndecision = \"allow\"\n",
    );
    // A rule for another registry does not cover this one.
    let broker = Recorder::new(ApprovalAnswer::Deny);
    let result = setup
        .install(
            broker.clone(),
            json!({"name": "weather", "registry": "corp"}),
        )
        .await;
    assert_eq!(error(&result).0, ErrorCode::Denied, "{result:?}");
    assert_eq!(broker.asked().len(), 1);

    setup.user(
        "[policy]\n[[policy.rules]]\naction = \"plugin.install\"\nhost = \"corp\"\ndecision = \"allow\"\n",
    );
    let broker = Recorder::new(ApprovalAnswer::Deny);
    let result = setup
        .install(
            broker.clone(),
            json!({"name": "weather", "registry": "corp"}),
        )
        .await;
    assert!(matches!(result, ToolResult::Ok { .. }), "{result:?}");
    assert!(broker.asked().is_empty());
    assert_eq!(setup.plugin_entries(), ["weather"]);
}

/// Every event of every trace the setup's runs wrote, as JSON.
fn trace_events(setup: &Setup) -> Vec<Value> {
    let mut events = Vec::new();
    for file in entries(&setup.root.path().join("runs")) {
        let text = std::fs::read_to_string(setup.root.path().join("runs").join(file)).unwrap();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let envelope: Value = serde_json::from_str(line).unwrap();
            events.push(envelope["event"].clone());
        }
    }
    events
}

#[tokio::test(flavor = "multi_thread")]
async fn a_registry_install_records_one_decision_for_the_call_and_one_for_the_install() {
    let setup = Setup::new();
    let broker = Recorder::new(ApprovalAnswer::AllowOnce);
    let result = setup
        .install(broker, json!({"name": "weather", "registry": "corp"}))
        .await;
    assert!(matches!(result, ToolResult::Ok { .. }), "{result:?}");
    let events = trace_events(&setup);
    let of = |kind: &str| -> Vec<&Value> { events.iter().filter(|e| e["type"] == kind).collect() };
    let decided = of("tool.decided");
    assert_eq!(decided.len(), 1, "{events:#?}");
    assert_eq!(decided[0]["call_id"], "c");
    assert_eq!(decided[0]["action"], "builtin.tool.plugin_install");
    let action = of("action.decided");
    assert_eq!(action.len(), 1, "{events:#?}");
    assert_eq!(action[0]["call_id"], "c");
    assert_eq!(action[0]["action"], "plugin.install");
    assert_eq!(action[0]["scope"]["host"], "corp");
    assert_eq!(action[0]["explanation"]["decision"], "ask");
    assert_eq!(of("approval.asked").len(), 1, "{events:#?}");
    assert_eq!(of("approval.answered").len(), 1, "{events:#?}");
}

const GREETER: &str = r#"export const manifest = {
  name: "greeter",
  version: "1.0.0",
  description: "Greets",
  classification: "PUBLIC",
  trust: "sandboxed",
  declaredEndpoints: [],
};

export const toolDefinitions = [
  {
    name: "greet",
    description: "Greets someone by name.",
    parameters: { who: { type: "string", description: "Whom", required: true } },
  },
];

export function createExecutor(context) {
  return async (name, input) => {
    if (name !== "greet") return null;
    return `hello, ${input.who}`;
  };
}
"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_plugin_installed_from_a_registry_offers_its_tools_in_the_same_turn() {
    let setup = Setup::new();
    let dir = setup.source_dir("greeter", "1.0.0");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("mod.ts"), GREETER).unwrap();
    bosun_registry::publish::publish_plugin(&setup.catalog(), &dir, &setup.signing()).unwrap();

    // One host and one chokepoint, as one turn of a run holds them.
    let host = setup.host();
    let broker = Recorder::new(ApprovalAnswer::AllowOnce);
    let chokepoint = host.chokepoint(broker.clone()).unwrap();
    let offered = |chokepoint: &bosun_host::Chokepoint| -> Vec<String> {
        chokepoint
            .specs()
            .iter()
            .map(|s| s.name.to_string())
            .filter(|n| n.contains("greet"))
            .collect()
    };
    assert!(offered(&chokepoint).is_empty());
    let trace = Trace::create(
        &setup.root.path().join("runs"),
        "turn".to_owned(),
        None,
        Arc::new(Redactor::new(Vec::<(String, String)>::new())),
    )
    .unwrap();
    let session = Arc::new(Session::new("s"));
    let installed = chokepoint
        .call(
            ToolCall {
                id: "install".into(),
                name: "plugin_install".into(),
                input: json!({"name": "greeter", "registry": "corp"}),
            },
            &session,
            &trace,
            &CancellationToken::new(),
        )
        .await
        .result;
    let ToolResult::Ok { output, .. } = &installed else {
        panic!("{installed:?}");
    };
    let text = serde_json::to_string(output).unwrap();
    assert!(text.contains("offered now"), "{text}");

    // The tool list the next model request of this turn is built from has the new tool.
    let tools = offered(&chokepoint);
    assert_eq!(tools.len(), 1, "{tools:?}");
    let called = chokepoint
        .call(
            ToolCall {
                id: "greet".into(),
                name: tools[0].clone(),
                input: json!({"who": "Ada"}),
            },
            &session,
            &trace,
            &CancellationToken::new(),
        )
        .await
        .result;
    let ToolResult::Ok { output, .. } = &called else {
        panic!("{called:?}");
    };
    assert!(
        serde_json::to_string(output)
            .unwrap()
            .contains("hello, Ada"),
        "{output:?}"
    );
    // Through the chokepoint as always: the call was decided and traced.
    drop(trace);
    let events = trace_events(&setup);
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "tool.decided" && e["call_id"] == "greet"),
        "{events:#?}"
    );
}

// The machine's managed policy (`requirements.toml`) holds for every way a plugin arrives: each
// test below shows the same plugin arriving without the managed file (it works) and with it
// (refused, naming the managed rule's file:line), so removing a check fails its test.

impl Setup {
    /// Writes `text` as the managed file and returns its path.
    fn managed(&self, text: &str) -> PathBuf {
        let path = self.root.path().join("requirements.toml");
        std::fs::write(&path, text).unwrap();
        path
    }
    /// A host whose configuration is read under the managed file `managed` (none: unmanaged).
    fn host_under(&self, managed: Option<&Path>) -> Host {
        let workspace = Arc::new(bosun_host::Workspace::new(self.ws(), self.ws()).unwrap());
        let config =
            bosun_host::config::LoadedConfig::load_with(&self.home(), &workspace, managed).unwrap();
        Host::builder()
            .workspace(workspace)
            .config(Arc::new(config))
            .build()
            .unwrap()
    }
    /// A project plugin `name` in `.bosun/plugins/`, the greeter under that name.
    fn project_plugin(&self, name: &str) -> PathBuf {
        let dir = self.ws().join(".bosun/plugins").join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("mod.ts"),
            GREETER.replace("name: \"greeter\"", &format!("name: \"{name}\"")),
        )
        .unwrap();
        dir
    }
}

/// Calls `name` with `input` on `host` through a chokepoint asking `broker`.
async fn call_on(
    setup: &Setup,
    host: &Host,
    broker: Arc<dyn ApprovalBroker>,
    name: &str,
    input: Value,
) -> ToolResult {
    let trace = Trace::create(
        &setup.root.path().join("runs"),
        format!(
            "run-{}",
            RUNS.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
        ),
        None,
        Arc::new(Redactor::new(Vec::<(String, String)>::new())),
    )
    .unwrap();
    host.chokepoint(broker)
        .unwrap()
        .call(
            ToolCall {
                id: "c".into(),
                name: name.into(),
                input,
            },
            &Arc::new(Session::new("s")),
            &trace,
            &CancellationToken::new(),
        )
        .await
        .result
}

/// The line of `text` holding `needle`, 1-based.
fn line_in(text: &str, needle: &str) -> usize {
    text.lines().position(|l| l.contains(needle)).unwrap() + 1
}

const MANAGED_PLUGINS: &str =
    "# managed\n[plugins]\nallowed_dirs = [\"/opt/bosun/plugins\"]\nblocked = [\"weather\"]\n";

#[tokio::test(flavor = "multi_thread")]
async fn a_registry_install_the_managed_policy_refuses_fetches_nothing_and_names_the_rule() {
    let setup = Setup::new();
    let managed = setup.managed(MANAGED_PLUGINS);
    let at = |needle: &str| format!("{}:{}", managed.display(), line_in(MANAGED_PLUGINS, needle));
    // weather is blocked by name; greeter would live outside the allowed folders.
    let dir = setup.source_dir("greeter", "1.0.0");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("mod.ts"), GREETER).unwrap();
    bosun_registry::publish::publish_plugin(&setup.catalog(), &dir, &setup.signing()).unwrap();
    for (name, rule) in [("weather", at("blocked")), ("greeter", at("allowed_dirs"))] {
        let broker = Recorder::new(ApprovalAnswer::AllowOnce);
        let result = call_on(
            &setup,
            &setup.host_under(Some(&managed)),
            broker.clone(),
            "plugin_install",
            json!({"name": name, "registry": "corp"}),
        )
        .await;
        let (code, message) = error(&result);
        assert_eq!(code, ErrorCode::Denied, "{name}: {message}");
        assert!(message.contains(&rule), "{name}: names {rule}: {message}");
        assert!(message.contains("managed policy"), "{message}");
        assert!(broker.asked().is_empty(), "nobody is asked about {name}");
        assert!(
            setup.plugin_entries().is_empty(),
            "nothing staged or installed"
        );
    }
    // Unmanaged, the same install goes through.
    let result = call_on(
        &setup,
        &setup.host_under(None),
        Recorder::new(ApprovalAnswer::AllowOnce),
        "plugin_install",
        json!({"name": "weather", "registry": "corp"}),
    )
    .await;
    assert!(matches!(result, ToolResult::Ok { .. }), "{result:?}");
    assert!(setup.locked());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plugin_the_model_builds_is_refused_by_the_managed_policy_before_it_loads() {
    let setup = Setup::new();
    let managed = setup.managed(MANAGED_PLUGINS);
    setup.project_plugin("greeter");
    setup.project_plugin("weather");
    let install = |host: Host, name: &'static str| {
        let setup = &setup;
        async move {
            call_on(
                setup,
                &host,
                Recorder::new(ApprovalAnswer::AllowOnce),
                "plugin_install",
                json!({ "name": name }),
            )
            .await
        }
    };
    for (name, needle) in [("greeter", "allowed_dirs"), ("weather", "blocked")] {
        let result = install(setup.host_under(Some(&managed)), name).await;
        let (code, message) = error(&result);
        assert_eq!(code, ErrorCode::Denied, "{message}");
        let rule = format!("{}:{}", managed.display(), line_in(MANAGED_PLUGINS, needle));
        assert!(message.contains(&rule), "{name}: names {rule}: {message}");
        // Without the managed file the model's plugin loads and offers its tool.
        let result = install(setup.host_under(None), name).await;
        let ToolResult::Ok { output, .. } = &result else {
            panic!("{result:?}");
        };
        assert!(output.to_string().contains("greet"), "{output}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_trusted_project_plugin_outside_the_managed_dirs_is_not_offered_and_cannot_be_trusted() {
    let setup = Setup::new();
    let managed = setup.managed(MANAGED_PLUGINS);
    setup.project_plugin("greeter");
    let workspace = bosun_host::Workspace::new(setup.ws(), setup.ws()).unwrap();
    let unmanaged =
        bosun_host::config::LoadedConfig::load_with(&setup.home(), &workspace, None).unwrap();
    let trusted =
        bosun_host::user_plugins::trust(&workspace, &unmanaged, Some("greeter"), |_| Ok(true))
            .unwrap();
    assert!(
        matches!(trusted, bosun_host::user_plugins::Trusted::Now(_)),
        "{trusted:?}"
    );
    let names = |host: &Host| -> Vec<String> {
        host.tools()
            .iter()
            .map(|t| t.spec().name.to_string())
            .collect()
    };
    let greets = |host: &Host| names(host).iter().any(|n| n.ends_with("greet"));
    let unmanaged_host = setup.host_under(None);
    assert!(
        greets(&unmanaged_host),
        "trusted, it is offered: {:?} {:?}",
        names(&unmanaged_host),
        unmanaged_host.warnings()
    );

    // Under the managed file it is not offered, the listing says why, and trusting it again
    // is refused naming the rule.
    let host = setup.host_under(Some(&managed));
    assert!(!greets(&host));
    let rule = format!(
        "{}:{}",
        managed.display(),
        line_in(MANAGED_PLUGINS, "allowed_dirs")
    );
    let managed_config =
        bosun_host::config::LoadedConfig::load_with(&setup.home(), &workspace, Some(&managed))
            .unwrap();
    let (_, catalog) = Host::catalog_for(&workspace, &managed_config).unwrap();
    let entry = catalog
        .entries()
        .iter()
        .find(|e| e.local_name == "greeter")
        .unwrap();
    let bosun_plugins::PluginState::Invalid { reason } = &entry.state else {
        panic!("{:?}", entry.state);
    };
    assert!(reason.contains(&rule), "{reason}");
    let refused =
        bosun_host::user_plugins::trust(&workspace, &managed_config, Some("greeter"), |_| Ok(true))
            .unwrap_err();
    assert!(refused.to_string().contains(&rule), "{refused}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_user_plugin_linked_out_of_an_allowed_dir_is_refused() {
    // A link inside the allowed folder that leads outside it is outside.
    let setup = Setup::new();
    let outside = setup.project_plugin("greeter");
    let allowed = setup.root.path().join("allowed");
    std::fs::create_dir_all(&allowed).unwrap();
    std::os::unix::fs::symlink(&outside, allowed.join("greeter")).unwrap();
    let text = format!("[plugins]\nallowed_dirs = [\"{}\"]\n", allowed.display());
    let managed = setup.managed(&text);
    setup.user(&format!(
        "[plugins.greeter]\npath = \"{}\"\n",
        allowed.join("greeter").display()
    ));
    let workspace = bosun_host::Workspace::new(setup.ws(), setup.ws()).unwrap();
    let error =
        bosun_host::config::LoadedConfig::load_with(&setup.home(), &workspace, Some(&managed))
            .unwrap_err()
            .to_string();
    assert!(
        error.contains(&format!("{}:2", managed.display())),
        "{error}"
    );
    // The same folder reached without the link is allowed.
    std::fs::remove_file(allowed.join("greeter")).unwrap();
    std::fs::rename(&outside, allowed.join("greeter")).unwrap();
    bosun_host::config::LoadedConfig::load_with(&setup.home(), &workspace, Some(&managed)).unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plugin_not_on_the_managed_allowlist_is_refused_wherever_it_comes_from() {
    let setup = Setup::new();
    setup.project_plugin("greeter");
    let workspace = bosun_host::Workspace::new(setup.ws(), setup.ws()).unwrap();
    let state = |text: &str| {
        let managed = setup.managed(text);
        let config =
            bosun_host::config::LoadedConfig::load_with(&setup.home(), &workspace, Some(&managed))
                .unwrap();
        let (_, catalog) = Host::catalog_for(&workspace, &config).unwrap();
        let entry = catalog
            .entries()
            .iter()
            .find(|e| e.local_name == "greeter")
            .unwrap();
        (managed, entry.state.clone())
    };
    let (managed, refused) = state("[plugins]\nallowed = [\"weather\"]\n");
    let bosun_plugins::PluginState::Invalid { reason } = &refused else {
        panic!("{refused:?}");
    };
    assert!(
        reason.contains(&format!("{}:2", managed.display())),
        "{reason}"
    );
    let (_, listed) = state("[plugins]\nallowed = [\"greeter\"]\n");
    assert_eq!(listed, bosun_plugins::PluginState::Untrusted);
    // The registry path: refused before anything is fetched.
    let managed = setup.managed("[plugins]\nallowed = [\"greeter\"]\n");
    let broker = Recorder::new(ApprovalAnswer::AllowOnce);
    let result = call_on(
        &setup,
        &setup.host_under(Some(&managed)),
        broker.clone(),
        "plugin_install",
        json!({"name": "weather", "registry": "corp"}),
    )
    .await;
    let (code, message) = error(&result);
    assert_eq!(code, ErrorCode::Denied, "{message}");
    assert!(
        message.contains(&format!("{}:2", managed.display())),
        "{message}"
    );
    assert!(setup.plugin_entries().is_empty());
}
