//! The managed policy (`/etc/bosun/requirements.toml`, here a file the tests name): a user or
//! project config that tries to loosen any of its fields is refused at load, naming the managed
//! rule's file and line, and a managed deny holds at the chokepoint over what the user allowed.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use bosun_core::{ApprovalAnswer, ErrorCode, Redactor};
use bosun_host::config::{ConfigError, LoadedConfig};
use bosun_host::{ApprovalBroker, ApprovalRequest, Host, Session, ToolCall, Trace, Workspace};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const KEY_A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const KEY_B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

/// Each managed constraint on its own line, so a refusal's line says which one held.
fn managed_text() -> String {
    format!(
        r#"allowed_modes = ["read-only", "workspace-write"]

[sandbox]
enabled = true
require = true

[[policy.rules]]
action = "process.spawn"
program = "true"
decision = "deny"
reason = "managed: no true"

[[mcp.allowed]]
name = "docs"
command = "/usr/local/bin/docs-mcp"

[[mcp.allowed]]
name = "search"
url = "https://mcp.example.com/mcp"

[[registries.allowed]]
url = "https://plugins.example.com/"
keys = ["{KEY_A}"]

[registries]
blocked = ["https://evil.example/"]

[plugins]
allowed_dirs = ["$BOSUN_HOME/plugins"]
blocked = ["leaky"]
"#
    )
}

struct Dirs {
    root: tempfile::TempDir,
}

impl Dirs {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("ws/.git")).unwrap();
        std::fs::create_dir_all(root.path().join("home")).unwrap();
        std::fs::write(root.path().join("requirements.toml"), managed_text()).unwrap();
        Self { root }
    }
    fn home(&self) -> PathBuf {
        self.root.path().join("home")
    }
    fn managed(&self) -> PathBuf {
        self.root.path().join("requirements.toml")
    }
    fn workspace(&self) -> Workspace {
        let ws = self.root.path().join("ws");
        Workspace::new(&ws, &ws).unwrap()
    }
    fn user(&self, text: &str) {
        std::fs::write(self.home().join("config.toml"), text).unwrap();
    }
    fn project(&self, text: &str) {
        let dir = self.root.path().join("ws/.bosun");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("config.toml"), text).unwrap();
    }
    fn load(&self, managed: bool) -> Result<LoadedConfig, ConfigError> {
        let path = self.managed();
        let config = LoadedConfig::load_with(
            &self.home(),
            &self.workspace(),
            managed.then_some(path.as_path()),
        )?;
        config.policy(Vec::new())?;
        Ok(config)
    }
}

/// The line of the managed file that states the constraint holding `needle`: the `[[...]]`
/// header of the entry it is in (an entry is named from its start), else its own line.
fn line_of(needle: &str) -> usize {
    let text = managed_text();
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("{needle} is in the managed file"));
    let entry = lines[..=at]
        .iter()
        .rposition(|l| l.starts_with('['))
        .filter(|&header| lines[header].starts_with("[[") && !lines[at].starts_with('['));
    entry.unwrap_or(at) + 1
}

fn refused_at(dirs: &Dirs, needle: &str) -> String {
    let error = dirs.load(true).unwrap_err();
    let message = error.to_string();
    let at = format!("{}:{}", dirs.managed().display(), line_of(needle));
    assert!(
        message.contains(&format!("{at}:")) || message.contains(&format!("{at})")),
        "the refusal names {at} ({needle}): {message}"
    );
    message
}

#[test]
fn a_user_config_loosening_each_managed_field_is_refused_naming_the_rule() {
    let cases: Vec<(String, &str, &str)> = vec![
        ("mode = \"full\"\n".into(), "allowed_modes", "mode"),
        (
            "[sandbox]\nenabled = false\n".into(),
            "enabled = true",
            "sandbox.enabled",
        ),
        (
            "[sandbox]\nrequire = false\n".into(),
            "require = true",
            "sandbox.require",
        ),
        (
            "[mcp.docs]\ncommand = \"/tmp/not-docs\"\n".into(),
            "name = \"docs\"",
            "mcp.docs",
        ),
        (
            "[mcp.docs]\nurl = \"https://mcp.example.com/mcp\"\n".into(),
            "name = \"docs\"",
            "mcp.docs",
        ),
        (
            "[mcp.other]\ncommand = \"/usr/local/bin/docs-mcp\"\n".into(),
            "name = \"docs\"",
            "mcp.other",
        ),
        (
            "[mcp.search]\nurl = \"https://mcp.example.com/mcp/../evil\"\n".into(),
            "name = \"search\"",
            "mcp.search",
        ),
        (
            "[registries.corp]\nkind = \"bosun\"\nurl = \"https://elsewhere.example.com/\"\n"
                .into(),
            "url = \"https://plugins.example.com/\"",
            "registries.corp",
        ),
        (
            "[registries.bad]\nkind = \"reef\"\nurl = \"https://evil.example/reef\"\n".into(),
            "blocked = [",
            "registries.bad",
        ),
        (
            format!(
                "[registries.corp]\nkind = \"bosun\"\nurl = \"https://plugins.example.com/\"\nkeys = [\"{KEY_B}\"]\n"
            ),
            "url = \"https://plugins.example.com/\"",
            "registries.corp.keys",
        ),
        (
            "[plugins.leaky]\npath = \"leaky\"\n".into(),
            "blocked = [\"leaky\"]",
            "plugins.leaky",
        ),
        (
            "[plugins.hello]\npath = \"/opt/elsewhere/hello\"\n".into(),
            "allowed_dirs",
            "plugins.hello",
        ),
        (
            "[[policy.rules]]\naction = \"process.spawn\"\ndecision = \"allow\"\n".into(),
            "program = \"true\"",
            "policy",
        ),
    ];
    for (user, needle, key) in cases {
        let dirs = Dirs::new();
        dirs.user(&user);
        // Without the managed file the same config loads: each refusal is the managed rule's.
        assert!(
            dirs.load(false).is_ok(),
            "{user}: {:?}",
            dirs.load(false).err()
        );
        let message = refused_at(&dirs, needle);
        assert!(
            message.contains(key) || key == "policy",
            "{user}: names {key}: {message}"
        );
        assert!(
            message.contains("managed"),
            "{user}: says it is the managed policy: {message}"
        );
    }
}

#[test]
fn a_project_config_cannot_loosen_a_managed_rule_even_when_trusted() {
    for trusted in [false, true] {
        let dirs = Dirs::new();
        let ws = dirs.workspace().root().display().to_string();
        if trusted {
            dirs.user(&format!("trusted_workspaces = [{ws:?}]\n"));
        }
        dirs.project(
            "[[policy.rules]]\naction = \"process.spawn\"\nprogram = \"t*\"\ndecision = \"allow\"\n",
        );
        assert!(dirs.load(false).is_ok());
        refused_at(&dirs, "program = \"true\"");
    }
}

#[test]
fn what_the_user_left_unset_takes_the_managed_value() {
    let dirs = Dirs::new();
    dirs.user(
        "mode = \"read-only\"\n\n[mcp.docs]\ncommand = \"/usr/local/bin/docs-mcp\"\n\n[registries.corp]\nkind = \"bosun\"\nurl = \"https://plugins.example.com/\"\n",
    );
    let config = dirs.load(true).unwrap();
    assert!(config.user.sandbox.require, "the managed require applies");
    assert_eq!(config.user.registries["corp"].keys, vec![KEY_A.to_owned()]);
    let unmanaged = dirs.load(false).unwrap();
    assert!(!unmanaged.user.sandbox.require);
    assert!(unmanaged.user.registries["corp"].keys.is_empty());
}

#[test]
fn a_managed_file_that_does_not_parse_stops_loading() {
    let dirs = Dirs::new();
    std::fs::write(dirs.managed(), "allowed_modes = [\"most\"]\n").unwrap();
    let error = dirs.load(true).unwrap_err();
    assert!(
        matches!(error, ConfigError::Parse { line: 1, .. }),
        "{error}"
    );
    let missing = LoadedConfig::load_with(
        &dirs.home(),
        &dirs.workspace(),
        Some(Path::new("/nonexistent/requirements.toml")),
    );
    assert!(matches!(missing, Err(ConfigError::Read { .. })));
}

/// Answers every question with "always", and counts them.
struct Always(AtomicUsize);

#[async_trait]
impl ApprovalBroker for Always {
    async fn ask(&self, _request: &ApprovalRequest) -> ApprovalAnswer {
        self.0.fetch_add(1, Ordering::SeqCst);
        ApprovalAnswer::AllowAlways
    }
}

async fn run_true(
    host: &Host,
    broker: Arc<dyn ApprovalBroker>,
    trace: &Trace,
) -> Option<ErrorCode> {
    let chokepoint = host.chokepoint(broker).unwrap();
    let session = Arc::new(Session::new("s"));
    chokepoint
        .call(
            ToolCall {
                id: "c1".into(),
                name: "run_command".into(),
                input: json!({"program": "true"}),
            },
            &session,
            trace,
            &CancellationToken::new(),
        )
        .await
        .result
        .error()
        .map(|e| e.code)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_managed_deny_holds_at_the_chokepoint_over_what_the_user_allowed() {
    let dirs = Dirs::new();
    let trace = Trace::create(
        &dirs.root.path().join("runs"),
        "t".into(),
        None,
        Arc::new(Redactor::default()),
    )
    .unwrap();
    let host = |managed: bool| {
        Host::builder()
            .workspace_of(dirs.workspace().root())
            .home(&dirs.home())
            .config(Arc::new(dirs.load(managed).unwrap()))
            .without_plugins()
            .build()
            .unwrap()
    };
    // Unmanaged, the person answers "always": `true` is allowed here from then on.
    let always = Arc::new(Always(AtomicUsize::new(0)));
    assert_eq!(run_true(&host(false), always.clone(), &trace).await, None);
    assert_eq!(always.0.load(Ordering::SeqCst), 1);
    assert_eq!(run_true(&host(false), always.clone(), &trace).await, None);

    // Under the managed policy the remembered allow loads (the person wrote no rule) but the
    // managed deny decides, and nobody is asked.
    let asked = always.0.load(Ordering::SeqCst);
    assert_eq!(
        run_true(&host(true), always.clone(), &trace).await,
        Some(ErrorCode::Denied)
    );
    assert_eq!(always.0.load(Ordering::SeqCst), asked);
}

/// A managed file that forces traces to the machine's collector, forbids logs, caps content,
/// names the service and caps the levels a collector and a reviewer may be sent; each on its
/// own line.
const MANAGED_TELEMETRY: &str = r#"[telemetry]
traces = { otlp-http = { endpoint = "https://otel.corp.example/v1/traces", protocol = "binary" } }
logs = "none"
service-name = "corp-agents"
classification = "INTERNAL"

[telemetry.content]
tool-inputs = false

[policy]
reviewer_classification = "CONFIDENTIAL"
"#;

fn telemetry_dirs() -> Dirs {
    let dirs = Dirs::new();
    std::fs::write(dirs.managed(), MANAGED_TELEMETRY).unwrap();
    dirs
}

fn telemetry_line(needle: &str) -> usize {
    MANAGED_TELEMETRY
        .lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("{needle} is in the managed file"))
        + 1
}

#[test]
fn a_user_config_cannot_turn_off_redirect_or_widen_managed_telemetry() {
    let cases = [
        // Turned off.
        (
            "[telemetry]\ntraces = \"none\"\n",
            "traces = {",
            "telemetry.traces",
        ),
        // Sent elsewhere.
        (
            "[telemetry]\ntraces = { otlp-http = { endpoint = \"https://attacker.example/v1/traces\" } }\n",
            "traces = {",
            "telemetry.traces",
        ),
        // Same endpoint, another encoding: not what the managed file says either.
        (
            "[telemetry]\ntraces = { otlp-http = { endpoint = \"https://otel.corp.example/v1/traces\", protocol = \"json\" } }\n",
            "traces = {",
            "telemetry.traces",
        ),
        // A signal the managed file keeps off.
        (
            "[telemetry]\nlogs = { otlp-http = { endpoint = \"https://logs.example/v1/logs\" } }\n",
            "logs = \"none\"",
            "telemetry.logs",
        ),
        // Content beyond the cap.
        (
            "[telemetry.content]\ntool-inputs = true\n",
            "tool-inputs = false",
            "telemetry.content.tool-inputs",
        ),
        // Another service name: the collector would not tell these runs apart.
        (
            "[telemetry]\nservice-name = \"mine\"\n",
            "service-name",
            "telemetry.service-name",
        ),
        // A collector, or a reviewer, trusted with more than the machine allows (before, the
        // managed levels were read and never applied).
        (
            "[telemetry]\nclassification = \"CONFIDENTIAL\"\n",
            "classification = \"INTERNAL\"",
            "telemetry.classification",
        ),
        (
            "[policy]\nreviewer_classification = \"RESTRICTED\"\n",
            "reviewer_classification",
            "policy.reviewer_classification",
        ),
    ];
    for (user, needle, key) in cases {
        let dirs = telemetry_dirs();
        dirs.user(user);
        assert!(
            dirs.load(false).is_ok(),
            "{user}: {:?}",
            dirs.load(false).err()
        );
        let message = dirs.load(true).unwrap_err().to_string();
        let at = format!("{}:{}", dirs.managed().display(), telemetry_line(needle));
        assert!(
            message.contains(&format!("{at}:")),
            "{user}: names {at}: {message}"
        );
        assert!(message.contains(key), "{user}: names {key}: {message}");
        assert!(message.contains("managed"), "{user}: {message}");
    }
}

#[test]
fn managed_telemetry_applies_where_the_user_wrote_nothing_and_the_environment_cannot_stop_it() {
    let dirs = telemetry_dirs();
    // A user config that writes the same exporter, and allowed content, loads.
    dirs.user(
        "[telemetry]\ntraces = { otlp-http = { endpoint = \"https://otel.corp.example/v1/traces\", protocol = \"binary\" } }\n\n[telemetry.content]\ntool-outputs = true\n",
    );
    assert!(dirs.load(true).is_ok(), "{:?}", dirs.load(true).err());
    // Levels at or below the managed caps load.
    dirs.user(
        "[telemetry]\nclassification = \"INTERNAL\"\n\n[policy]\nreviewer_classification = \"PUBLIC\"\n",
    );
    assert!(dirs.load(true).is_ok(), "{:?}", dirs.load(true).err());
    dirs.user("mode = \"read-only\"\n");
    let config = dirs.load(true).unwrap();
    let telemetry = config.telemetry();
    assert!(telemetry.enabled());
    assert!(telemetry.forced.traces && !telemetry.forced.logs);
    assert_eq!(telemetry.service_name.as_deref(), Some("corp-agents"));
    let hostile = |name: &str| match name {
        "OTEL_SDK_DISABLED" => Some("true".to_owned()),
        "OTEL_TRACES_EXPORTER" => Some("none".to_owned()),
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" => Some("http://127.0.0.1:9/v1/traces".to_owned()),
        "OTEL_SERVICE_NAME" => Some("hidden".to_owned()),
        _ => None,
    };
    let settings = telemetry.resolve(&hostile).unwrap();
    assert_eq!(
        settings.traces.map(|e| e.url),
        Some("https://otel.corp.example/v1/traces".to_owned())
    );
    assert_eq!(
        settings.resource[0],
        ("service.name".to_owned(), "corp-agents".to_owned())
    );
    // Without the managed file, nothing is exported.
    assert!(!dirs.load(false).unwrap().telemetry().enabled());
}

#[test]
fn a_managed_exporter_without_an_endpoint_stops_loading() {
    let dirs = Dirs::new();
    std::fs::write(
        dirs.managed(),
        "[telemetry]\ntraces = { otlp-http = { protocol = \"binary\" } }\n",
    )
    .unwrap();
    let error = dirs.load(true).unwrap_err().to_string();
    assert!(
        error.contains("telemetry.traces") && error.contains("endpoint"),
        "{error}"
    );
}

/// `[sandbox] plugin_instances` is the user's: a value in range is taken, one out of range is
/// refused naming the file, the key and the range, and a managed file cannot set it (the number
/// bounds the machine's memory, not what a plugin reaches): its `[sandbox]` refuses the key.
#[test]
fn plugin_instances_is_the_users_to_set_within_its_range() {
    let dirs = Dirs::new();
    dirs.user("[sandbox]\nplugin_instances = 200\n");
    assert_eq!(dirs.load(true).unwrap().user.sandbox.plugin_instances, 200);
    dirs.user("");
    assert_eq!(dirs.load(false).unwrap().user.sandbox.plugin_instances, 64);

    dirs.user("[sandbox]\nplugin_instances = 0\n");
    let error = dirs.load(false).unwrap_err().to_string();
    for part in [
        "config.toml",
        "[sandbox] plugin_instances: 0 is out of range: use 1 to 4096",
    ] {
        assert!(error.contains(part), "{part}: {error}");
    }

    dirs.user("");
    std::fs::write(dirs.managed(), "[sandbox]\nplugin_instances = 8\n").unwrap();
    let error = dirs.load(true).unwrap_err().to_string();
    assert!(error.contains("plugin_instances"), "{error}");
}

/// A managed file capping every sink a user declares at `INTERNAL`.
const MANAGED_SINKS: &str = "# the machine's cap\n[classification]\nsinks = \"INTERNAL\"\n";

/// Writes a user config declaring one sink at a level.
type Declare<'a> = &'a dyn Fn(&str) -> String;

#[test]
fn a_user_config_cannot_declare_a_sink_able_to_receive_more_than_the_managed_cap() {
    let model = |level: &str| {
        format!(
            "[models.cloud]\nprovider = \"openai-chat\"\nmodel = \"m\"\nbase_url = \"https://llm.example/v1\"\nclassification = \"{level}\"\n"
        )
    };
    let server = |level: &str| {
        format!("[mcp.docs]\ncommand = \"/usr/local/bin/docs-mcp\"\nclassification = \"{level}\"\n")
    };
    let claude =
        |level: &str| format!("[claude.plugins.\"lint@tools\"]\nclassification = \"{level}\"\n");
    let host = |level: &str| {
        format!("[[classification.hosts]]\nhost = \"paste.example\"\nlevel = \"{level}\"\n")
    };
    let cases: [(Declare<'_>, &str); 4] = [
        (&model, "models.cloud.classification"),
        (&server, "mcp.docs.classification"),
        (&claude, "claude.plugins.\"lint@tools\".classification"),
        (&host, "classification.hosts (paste.example)"),
    ];
    for (declare, key) in cases {
        let dirs = Dirs::new();
        std::fs::write(dirs.managed(), MANAGED_SINKS).unwrap();
        // At the cap, or below, it loads.
        for level in ["PUBLIC", "INTERNAL"] {
            dirs.user(&declare(level));
            assert!(
                dirs.load(true).is_ok(),
                "{key} {level}: {:?}",
                dirs.load(true).err()
            );
        }
        for level in ["CONFIDENTIAL", "RESTRICTED"] {
            dirs.user(&declare(level));
            assert!(
                dirs.load(false).is_ok(),
                "{key}: {:?}",
                dirs.load(false).err()
            );
            let message = dirs.load(true).unwrap_err().to_string();
            let at = format!("{}:3", dirs.managed().display());
            assert!(
                message.contains(&format!("{at}:")),
                "{key}: names {at}: {message}"
            );
            assert!(message.contains(key), "{key}: {message}");
            assert!(message.contains("INTERNAL"), "{key}: {message}");
        }
    }
}

#[test]
fn the_managed_sink_cap_lowers_a_models_unwritten_level() {
    let dirs = Dirs::new();
    std::fs::write(dirs.managed(), MANAGED_SINKS).unwrap();
    // Unwritten, a model on the default model's API root may be sent every level.
    dirs.user(
        "default_model = \"main\"\n\n[models.main]\nprovider = \"openai-chat\"\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:8000/v1\"\n\n[models.side]\nprovider = \"openai-chat\"\nmodel = \"s\"\nbase_url = \"http://127.0.0.1:8000/v1\"\nclassification = \"PUBLIC\"\n",
    );
    let unmanaged = dirs.load(false).unwrap();
    assert_eq!(
        unmanaged.user.models_config().level_of("main"),
        bosun_core::Classification::Restricted
    );
    let managed = dirs.load(true).unwrap();
    let models = managed.user.models_config();
    assert_eq!(
        models.level_of("main"),
        bosun_core::Classification::Internal
    );
    // A level written lower stays as written.
    assert_eq!(models.level_of("side"), bosun_core::Classification::Public);
}
