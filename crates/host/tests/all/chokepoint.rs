//! The chokepoint under attack: each test removes a guarantee's reason to hold and checks that
//! the tool did not run (a counter the tool bumps) or that the limit held.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bosun_core::{
    ApprovalAnswer, Capability, Classification, Decision, ErrorCode, Event, Layer, Limits,
    Redactor, Risk, ToolError, ToolName, ToolOutput, ToolResult, ToolSpec,
};
use bosun_host::approval::{ApprovalBroker, ApprovalRequest, AutoApprove};
use bosun_host::trace::{Trace, read_run};
use bosun_host::{Chokepoint, Session, Tool, ToolCall, ToolContext, Workspace, builtin};
use bosun_policy::{Mode, Policy, PolicyFile, Source};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

#[derive(Clone, Copy)]
enum Behaviour {
    Echo,
    /// Never returns and ignores cancellation.
    Hang,
    /// Returns `n` bytes of text.
    Big(usize),
}

struct Probe {
    spec: ToolSpec,
    action: String,
    runs: Arc<AtomicUsize>,
    behaviour: Behaviour,
}

fn probe(name: &str, risk: Risk, behaviour: Behaviour) -> (Arc<dyn Tool>, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut builder = ToolSpec::builder(
        ToolName::new(name).unwrap(),
        "A probe that counts its runs.",
    )
    .risk(risk)
    .input_schema(json!({
        "type": "object",
        "properties": {"text": {"type": "string", "maxLength": 100}},
        "required": ["text"],
        "additionalProperties": false
    }));
    if risk == Risk::Process {
        builder = builder.capability(Capability::ProcessSpawn);
    }
    let tool = Probe {
        spec: builder.build().unwrap(),
        action: format!("builtin.tool.{name}"),
        runs: runs.clone(),
        behaviour,
    };
    (Arc::new(tool), runs)
}

#[async_trait]
impl Tool for Probe {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    fn action(&self) -> &str {
        &self.action
    }
    async fn call(&self, input: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        match self.behaviour {
            Behaviour::Echo => Ok(ToolOutput::new(json!({"echo": input["text"]}))),
            Behaviour::Hang => loop {
                // Blocks the future forever without ever looking at the cancellation token.
                std::future::pending::<()>().await;
            },
            Behaviour::Big(n) => Ok(ToolOutput::new(json!({"text": "x".repeat(n)}))),
        }
    }
}

/// Answers every request with a fixed answer and counts the requests.
struct Scripted {
    answer: ApprovalAnswer,
    asked: AtomicUsize,
}

#[async_trait]
impl ApprovalBroker for Scripted {
    async fn ask(&self, _request: &ApprovalRequest) -> ApprovalAnswer {
        self.asked.fetch_add(1, Ordering::SeqCst);
        self.answer
    }
}

pub(crate) fn policy(mode: Mode, rules: &str) -> Arc<Policy> {
    let text = format!("[policy]\n{rules}");
    let file = PolicyFile::parse(&text).unwrap();
    Arc::new(
        Policy::builder(mode)
            .user(file, Source::with_text("test.toml", text))
            .unwrap()
            .build(),
    )
}

pub(crate) struct Harness {
    chokepoint: Chokepoint,
    session: Arc<Session>,
    trace: Trace,
    pub(crate) dir: tempfile::TempDir,
}

impl Harness {
    pub(crate) fn new(
        policy: Arc<Policy>,
        tools: Vec<Arc<dyn Tool>>,
        broker: Arc<dyn ApprovalBroker>,
        limits: Limits,
    ) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        let workspace = Arc::new(Workspace::discover(dir.path()).unwrap());
        let chokepoint = Chokepoint::builder(policy, workspace)
            .tools(tools)
            .broker(broker)
            .limits(limits)
            .build()
            .unwrap();
        let redactor = Arc::new(Redactor::new([("TEST_API_KEY", "sk-test-do-not-leak-42")]));
        let trace =
            Trace::create(&dir.path().join(".runs"), "run-1".into(), None, redactor).unwrap();
        Self {
            chokepoint,
            session: Arc::new(Session::new("s")),
            trace,
            dir,
        }
    }

    pub(crate) async fn call(&self, name: &str, input: Value) -> ToolResult {
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

    fn events(&self) -> Vec<Event> {
        self.trace.finish().unwrap();
        read_run(&self.dir.path().join(".runs/run-1.jsonl"))
            .unwrap()
            .into_iter()
            .map(|e| e.event)
            .collect()
    }
}

pub(crate) fn code(result: &ToolResult) -> Option<ErrorCode> {
    result.error().map(|e| e.code)
}

#[tokio::test]
async fn allowed_call_runs_and_is_traced_in_order() {
    let (tool, runs) = probe("echo", Risk::Read, Behaviour::Echo);
    let h = Harness::new(
        policy(Mode::WorkspaceWrite, ""),
        vec![tool],
        Arc::new(AutoApprove),
        Limits::default(),
    );
    let result = h.call("echo", json!({"text": "hi"})).await;
    assert_eq!(result, ToolResult::ok(json!({"echo": "hi"}), false));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let kinds: Vec<&str> = h
        .events()
        .iter()
        .map(Event::kind)
        .collect::<Vec<_>>()
        .into_iter()
        .collect();
    assert_eq!(
        kinds,
        [
            "tool.proposed",
            "tool.decided",
            "tool.started",
            "tool.completed"
        ]
    );
}

#[tokio::test]
async fn unknown_tool_is_not_guessed() {
    let (tool, runs) = probe("echo", Risk::Read, Behaviour::Echo);
    let h = Harness::new(
        policy(Mode::Full, ""),
        vec![tool],
        Arc::new(AutoApprove),
        Limits::default(),
    );
    for name in ["ech", "echo2", "Echo", "ECHO", " echo", "echo "] {
        assert_eq!(
            code(&h.call(name, json!({"text": "x"})).await),
            Some(ErrorCode::UnknownTool),
            "{name:?}"
        );
    }
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn invalid_input_never_reaches_the_tool() {
    let (tool, runs) = probe("echo", Risk::Read, Behaviour::Echo);
    let h = Harness::new(
        policy(Mode::Full, ""),
        vec![tool],
        Arc::new(AutoApprove),
        Limits::default(),
    );
    for input in [
        json!({}),
        json!({"text": 1}),
        json!({"text": "x", "extra": true}),
        json!({"text": "y".repeat(101)}),
        json!([1]),
    ] {
        let result = h.call("echo", input.clone()).await;
        assert_eq!(code(&result), Some(ErrorCode::InvalidInput), "{input}");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn denied_call_never_executes() {
    let (tool, runs) = probe("echo", Risk::Read, Behaviour::Echo);
    let h = Harness::new(
        policy(
            Mode::Full,
            "[[policy.rules]]\naction = \"builtin.tool.echo\"\ndecision = \"deny\"\n",
        ),
        vec![tool],
        Arc::new(AutoApprove),
        Limits::default(),
    );
    let result = h.call("echo", json!({"text": "x"})).await;
    assert_eq!(code(&result), Some(ErrorCode::Denied));
    assert!(
        result.error().unwrap().message.contains("test.toml"),
        "{result:?}"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn ask_without_a_person_never_executes() {
    let (tool, runs) = probe("spawn", Risk::Process, Behaviour::Echo);
    let h = Harness::new(
        policy(Mode::WorkspaceWrite, ""),
        vec![tool],
        Arc::new(bosun_host::NonInteractive),
        Limits::default(),
    );
    let result = h.call("spawn", json!({"text": "x"})).await;
    assert_eq!(code(&result), Some(ErrorCode::NeedsApproval));
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    let answered = h.events().into_iter().any(|e| {
        matches!(
            e,
            Event::ApprovalAnswered {
                answer: ApprovalAnswer::Unavailable,
                ..
            }
        )
    });
    assert!(answered);
}

#[tokio::test]
async fn declined_call_never_executes() {
    let (tool, runs) = probe("spawn", Risk::Process, Behaviour::Echo);
    let broker = Arc::new(Scripted {
        answer: ApprovalAnswer::Deny,
        asked: AtomicUsize::new(0),
    });
    let h = Harness::new(
        policy(Mode::WorkspaceWrite, ""),
        vec![tool],
        broker.clone(),
        Limits::default(),
    );
    assert_eq!(
        code(&h.call("spawn", json!({"text": "x"})).await),
        Some(ErrorCode::Denied)
    );
    assert_eq!(broker.asked.load(Ordering::SeqCst), 1);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn review_is_put_to_a_person() {
    let (tool, runs) = probe("echo", Risk::Read, Behaviour::Echo);
    let broker = Arc::new(Scripted {
        answer: ApprovalAnswer::Deny,
        asked: AtomicUsize::new(0),
    });
    let h = Harness::new(
        policy(
            Mode::Full,
            "[[policy.rules]]\naction = \"builtin.tool.echo\"\ndecision = \"review\"\n",
        ),
        vec![tool],
        broker.clone(),
        Limits::default(),
    );
    assert_eq!(
        code(&h.call("echo", json!({"text": "x"})).await),
        Some(ErrorCode::Denied)
    );
    assert_eq!(broker.asked.load(Ordering::SeqCst), 1);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn allow_for_session_asks_once_per_action() {
    let (tool, runs) = probe("spawn", Risk::Process, Behaviour::Echo);
    let broker = Arc::new(Scripted {
        answer: ApprovalAnswer::AllowSession,
        asked: AtomicUsize::new(0),
    });
    let h = Harness::new(
        policy(Mode::WorkspaceWrite, ""),
        vec![tool],
        broker.clone(),
        Limits::default(),
    );
    for _ in 0..3 {
        assert!(h.call("spawn", json!({"text": "x"})).await.is_ok());
    }
    assert_eq!(broker.asked.load(Ordering::SeqCst), 1);
    assert_eq!(runs.load(Ordering::SeqCst), 3);
}

/// Hostile: "allow for this session" on `run_command` for one program must not let every later
/// program run unasked. The grant covers the action with exactly the capabilities shown.
#[tokio::test]
async fn session_grant_covers_exactly_the_program_shown() {
    let broker = Arc::new(Scripted {
        answer: ApprovalAnswer::AllowSession,
        asked: AtomicUsize::new(0),
    });
    let h = Harness::new(
        policy(Mode::WorkspaceWrite, ""),
        builtin::tools(),
        broker.clone(),
        Limits::default(),
    );
    let asked = || broker.asked.load(Ordering::SeqCst);
    let run = |program: &'static str| h.call("run_command", json!({"program": program}));
    assert!(run("true").await.is_ok());
    assert!(run("true").await.is_ok());
    assert_eq!(asked(), 1, "the same program is covered");
    let _ = run("false").await;
    assert_eq!(asked(), 2, "another program asks again");
    let _ = h
        .call(
            "run_command",
            json!({"program": "sh", "args": ["-c", "true"]}),
        )
        .await;
    assert_eq!(asked(), 3, "a shell asks again");
    assert!(run("true").await.is_ok());
    assert_eq!(asked(), 3);
}

#[tokio::test]
async fn session_grant_does_not_override_deny() {
    let (tool, runs) = probe("spawn", Risk::Process, Behaviour::Echo);
    let broker = Arc::new(Scripted {
        answer: ApprovalAnswer::AllowSession,
        asked: AtomicUsize::new(0),
    });
    let h = Harness::new(
        policy(Mode::WorkspaceWrite, ""),
        vec![tool, builtin::tools().pop().unwrap()],
        broker,
        Limits::default(),
    );
    assert!(h.call("spawn", json!({"text": "x"})).await.is_ok());
    assert!(h.session.granted_actions().contains("builtin.tool.spawn"));
    let promise = h
        .call(
            "restrict_self",
            json!({"action": "builtin.tool.spawn", "decision": "deny"}),
        )
        .await;
    assert!(promise.is_ok(), "{promise:?}");
    assert_eq!(
        code(&h.call("spawn", json!({"text": "x"})).await),
        Some(ErrorCode::Denied)
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn restrict_self_binds_the_next_call() {
    let (tool, runs) = probe("echo", Risk::Read, Behaviour::Echo);
    let restrict = builtin::tools()
        .into_iter()
        .find(|t| t.spec().name.as_str() == "restrict_self")
        .unwrap();
    let h = Harness::new(
        policy(Mode::WorkspaceWrite, ""),
        vec![tool, restrict],
        Arc::new(AutoApprove),
        Limits::default(),
    );
    assert!(h.call("echo", json!({"text": "before"})).await.is_ok());
    // A promise cannot loosen anything.
    let allow = h
        .call(
            "restrict_self",
            json!({"action": "builtin.tool.echo", "decision": "allow"}),
        )
        .await;
    assert_eq!(code(&allow), Some(ErrorCode::InvalidInput));
    assert!(
        h.call(
            "restrict_self",
            json!({"action": "builtin.tool.e*", "decision": "deny", "reason": "done reading"})
        )
        .await
        .is_ok()
    );
    let after = h.call("echo", json!({"text": "after"})).await;
    assert_eq!(code(&after), Some(ErrorCode::Denied));
    assert!(
        after.error().unwrap().message.contains("done reading"),
        "{after:?}"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let promise_layer = h.events().into_iter().rev().find_map(|e| match e {
        Event::ToolDecided { explanation, .. } => Some(explanation.deciding_rule().unwrap().layer),
        _ => None,
    });
    assert_eq!(promise_layer, Some(Layer::Promise));
}

#[tokio::test]
async fn deadline_stops_a_tool_that_never_returns() {
    let (tool, runs) = probe("hang", Risk::Read, Behaviour::Hang);
    let limits = Limits {
        tool_timeout_ms: 200,
        ..Limits::default()
    };
    let h = Harness::new(
        policy(Mode::Full, ""),
        vec![tool],
        Arc::new(AutoApprove),
        limits,
    );
    let started = Instant::now();
    let result = h.call("hang", json!({"text": "x"})).await;
    let elapsed = started.elapsed();
    assert_eq!(code(&result), Some(ErrorCode::TimedOut));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // The deadline plus the cleanup grace is the most a stuck tool can hold a call.
    assert!(elapsed < Duration::from_secs(5), "took {elapsed:?}");
}

#[tokio::test]
async fn cancellation_stops_a_running_tool() {
    let (tool, _) = probe("hang", Risk::Read, Behaviour::Hang);
    let h = Harness::new(
        policy(Mode::Full, ""),
        vec![tool],
        Arc::new(AutoApprove),
        Limits::default(),
    );
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        trigger.cancel();
    });
    let outcome = h
        .chokepoint
        .call(
            ToolCall {
                id: "c".into(),
                name: "hang".into(),
                input: json!({"text": "x"}),
            },
            &h.session,
            &h.trace,
            &cancel,
        )
        .await;
    assert_eq!(code(&outcome.result), Some(ErrorCode::Cancelled));
}

#[tokio::test]
async fn oversized_output_is_bounded_and_marked() {
    let (tool, _) = probe("big", Risk::Read, Behaviour::Big(1_000_000));
    let limits = Limits {
        max_output_bytes: 4096,
        ..Limits::default()
    };
    let h = Harness::new(
        policy(Mode::Full, ""),
        vec![tool],
        Arc::new(AutoApprove),
        limits,
    );
    let result = h.call("big", json!({"text": "x"})).await;
    assert!(
        matches!(
            result,
            ToolResult::Ok {
                truncated: true,
                ..
            }
        ),
        "{result:?}"
    );
    assert!(serde_json::to_vec(&result).unwrap().len() <= 4096);
    // A result that fits is not marked.
    let (small, _) = probe("small", Risk::Read, Behaviour::Big(100));
    let h = Harness::new(
        policy(Mode::Full, ""),
        vec![small],
        Arc::new(AutoApprove),
        limits,
    );
    assert!(matches!(
        h.call("small", json!({"text": "x"})).await,
        ToolResult::Ok {
            truncated: false,
            ..
        }
    ));
}

#[tokio::test]
async fn secret_in_an_input_never_reaches_the_trace() {
    let (tool, _) = probe("echo", Risk::Read, Behaviour::Echo);
    let h = Harness::new(
        policy(Mode::Full, ""),
        vec![tool],
        Arc::new(AutoApprove),
        Limits::default(),
    );
    assert!(
        h.call("echo", json!({"text": "key=sk-test-do-not-leak-42"}))
            .await
            .is_ok()
    );
    h.trace.finish().unwrap();
    let text = std::fs::read_to_string(h.dir.path().join(".runs/run-1.jsonl")).unwrap();
    assert!(!text.contains("sk-test-do-not-leak-42"), "{text}");
    assert!(text.contains("[REDACTED:TEST_API_KEY]"));
}

#[tokio::test]
async fn capability_decisions_bind_with_their_scope() {
    // The tool action is allowed, but the capability use is denied for this program.
    let h = Harness::new(
        policy(
            Mode::WorkspaceWrite,
            "[[policy.rules]]\naction = \"builtin.tool.run_command\"\ndecision = \"allow\"\n\
             [[policy.rules]]\naction = \"process.spawn\"\nprogram = \"touch\"\ndecision = \"deny\"\n",
        ),
        builtin::tools(),
        Arc::new(AutoApprove),
        Limits::default(),
    );
    let result = h
        .call(
            "run_command",
            json!({"program": "touch", "args": ["made.txt"]}),
        )
        .await;
    assert_eq!(code(&result), Some(ErrorCode::Denied), "{result:?}");
    assert!(!h.dir.path().join("made.txt").exists());
    let decided = h.events().into_iter().find_map(|e| match e {
        Event::ToolDecided { explanation, .. } => Some(explanation),
        _ => None,
    });
    let explanation = decided.unwrap();
    assert_eq!(explanation.decision, Decision::Deny);
    assert_eq!(
        explanation.deciding_rule().unwrap().subject,
        "process.spawn:touch"
    );
}

/// A tool that returns what it is told, classified as it says.
struct Classified {
    spec: ToolSpec,
    level: Option<Classification>,
}

#[async_trait]
impl Tool for Classified {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    fn action(&self) -> &str {
        "builtin.tool.classified"
    }
    async fn call(&self, _input: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput {
            value: json!({}),
            truncated: false,
            classification: self.level,
        })
    }
}

/// The chokepoint raises the session's taint from each result — the result's own level, else the
/// tool's — records every rise as `taint.raised`, and never lowers it.
#[tokio::test]
async fn the_chokepoint_raises_taint_from_results_and_never_lowers_it() {
    let tool = |name: &str, spec_level, level| -> Arc<dyn Tool> {
        Arc::new(Classified {
            spec: ToolSpec::builder(ToolName::new(name).unwrap(), "Classified output.")
                .classification(spec_level)
                .build()
                .unwrap(),
            level,
        })
    };
    let h = Harness::new(
        policy(Mode::Full, ""),
        vec![
            tool("internal", Classification::Internal, None),
            tool(
                "secret",
                Classification::Public,
                Some(Classification::Restricted),
            ),
            tool("public", Classification::Public, None),
        ],
        Arc::new(AutoApprove),
        Limits::default(),
    );
    assert_eq!(h.session.taint(), Classification::Public);
    assert!(h.call("internal", json!({})).await.error().is_none());
    assert_eq!(h.session.taint(), Classification::Internal);
    assert!(h.call("secret", json!({})).await.error().is_none());
    assert_eq!(h.session.taint(), Classification::Restricted);
    assert!(h.call("public", json!({})).await.error().is_none());
    assert_eq!(h.session.taint(), Classification::Restricted);
    let raised: Vec<(Classification, Classification)> = h
        .events()
        .into_iter()
        .filter_map(|e| match e {
            Event::TaintRaised { from, to, .. } => Some((from, to)),
            _ => None,
        })
        .collect();
    assert_eq!(
        raised,
        vec![
            (Classification::Public, Classification::Internal),
            (Classification::Internal, Classification::Restricted),
        ]
    );
}

#[tokio::test]
async fn plan_mode_denies_all_but_reading_whatever_the_rules_allow() {
    let (reader, reads) = probe("look", Risk::Read, Behaviour::Echo);
    let (writer, writes) = probe("change", Risk::Write, Behaviour::Echo);
    let (runner, runs) = probe("launch", Risk::Process, Behaviour::Echo);
    // Full mode, and a rule that allows the writer outright: plan mode still wins.
    let h = Harness::new(
        policy(
            Mode::Full,
            "[[policy.rules]]\naction = \"builtin.tool.change\"\ndecision = \"allow\"\n",
        ),
        vec![reader, writer, runner],
        Arc::new(AutoApprove),
        Limits::default(),
    );
    h.session.set_plan(true);
    let result = h.call("look", json!({"text": "a"})).await;
    assert_eq!(code(&result), None, "{result:?}");
    for name in ["change", "launch"] {
        let result = h.call(name, json!({"text": "a"})).await;
        assert_eq!(code(&result), Some(ErrorCode::Denied), "{name}: {result:?}");
        assert!(
            result.error().unwrap().message.contains("plan mode"),
            "{result:?}"
        );
    }
    assert_eq!(
        (
            reads.load(Ordering::SeqCst),
            writes.load(Ordering::SeqCst),
            runs.load(Ordering::SeqCst)
        ),
        (1, 0, 0)
    );
    // Out of plan mode, the same calls run.
    h.session.set_plan(false);
    let result = h.call("change", json!({"text": "a"})).await;
    assert_eq!(code(&result), None, "{result:?}");
    assert_eq!(writes.load(Ordering::SeqCst), 1);
}

/// Reads the trace file while it runs: whether its own call's decision is on disk yet.
struct Witness {
    spec: ToolSpec,
    trace_file: std::path::PathBuf,
}

#[async_trait]
impl Tool for Witness {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    fn action(&self) -> &str {
        "builtin.tool.witness"
    }
    async fn call(&self, _input: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let written = std::fs::read_to_string(&self.trace_file).unwrap_or_default();
        Ok(ToolOutput::new(json!({
            "decided_on_disk": written.contains("\"tool.decided\""),
            "started_on_disk": written.contains("\"tool.started\""),
        })))
    }
}

/// A call that can change something (any risk but `read`) starts only once its decision is
/// in the trace file, however long the trace may otherwise let lines wait: a crash while it
/// runs cannot leave an effect without its recorded decision. A plain read may wait.
#[tokio::test]
async fn a_call_that_changes_something_runs_only_after_its_decision_is_on_disk() {
    for (risk, expect_on_disk) in [(Risk::Write, true), (Risk::Read, false)] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        let workspace = Arc::new(Workspace::discover(dir.path()).unwrap());
        let trace_file = dir.path().join(".runs/run-w.jsonl");
        let tool: Arc<dyn Tool> = Arc::new(Witness {
            spec: ToolSpec::builder(ToolName::new("witness").unwrap(), "Reads the trace file.")
                .risk(risk)
                .input_schema(json!({"type": "object"}))
                .build()
                .unwrap(),
            trace_file: trace_file.clone(),
        });
        let chokepoint = Chokepoint::builder(policy(Mode::Full, ""), workspace)
            .tools(vec![tool])
            .broker(Arc::new(AutoApprove))
            .build()
            .unwrap();
        let trace = Trace::create(
            &dir.path().join(".runs"),
            "run-w".into(),
            None,
            Arc::new(Redactor::default()),
        )
        .unwrap()
        .with_write_delay(Duration::from_secs(3600));
        let outcome = chokepoint
            .call(
                ToolCall {
                    id: "w".into(),
                    name: "witness".into(),
                    input: json!({}),
                },
                &Arc::new(Session::new("s")),
                &trace,
                &CancellationToken::new(),
            )
            .await;
        let ToolResult::Ok { output, .. } = outcome.result else {
            panic!("{risk:?}: the witness did not run: {:?}", outcome.result);
        };
        assert_eq!(output["decided_on_disk"], json!(expect_on_disk), "{risk:?}");
        assert_eq!(output["started_on_disk"], json!(expect_on_disk), "{risk:?}");
    }
}

/// What a denied call hears never depends on what is at the path. Policy judges before a tool
/// touches anything, so every file tool, on every kind of path under a denied `secrets/` — a
/// file, a missing file, a file used as a directory, a directory, a link (to a file inside, and
/// dangling), a missing directory's file — answers `denied`, with the same words but for the
/// path. Before, the path was resolved strictly first: `read_file` of a missing file said
/// `not_found` and `create_file` of an existing one `already_exists`, so a model could tell
/// which files exist where it may not look.
#[tokio::test]
async fn a_denied_path_answers_denied_whatever_is_there() {
    let rules = r#"
[[policy.rules]]
action = "builtin.tool.*"
decision = "allow"

[[policy.rules]]
action = "fs.read"
path = "secrets/**"
decision = "deny"

[[policy.rules]]
action = "fs.write"
path = "secrets/**"
decision = "deny"
"#;
    let h = Harness::new(
        policy(Mode::Full, rules),
        builtin::tools(),
        Arc::new(AutoApprove),
        Limits::default(),
    );
    let root = h.dir.path();
    std::fs::create_dir_all(root.join("secrets/sub")).unwrap();
    std::fs::write(root.join("secrets/present.txt"), "key=1\n").unwrap();
    std::os::unix::fs::symlink("present.txt", root.join("secrets/link")).unwrap();
    std::os::unix::fs::symlink("gone.txt", root.join("secrets/dangling")).unwrap();
    // A link outside the denied place that leads into it is judged where it leads.
    std::os::unix::fs::symlink("secrets", root.join("innocent")).unwrap();
    let paths = [
        "secrets/present.txt",
        "secrets/missing.txt",
        "secrets/present.txt/x",
        "secrets/sub",
        "secrets/link",
        "secrets/dangling",
        "secrets/nodir/deeper/x.txt",
        "innocent/present.txt",
        "innocent/missing.txt",
    ];
    let inputs = |path: &str| {
        [
            ("read_file", json!({"path": path})),
            ("list_files", json!({"path": path})),
            ("search", json!({"query": "key", "path": path})),
            ("create_file", json!({"path": path, "content": "x"})),
            (
                "apply_patch",
                json!({"path": path, "edits": [{"oldText": "key", "newText": "k"}]}),
            ),
        ]
    };
    for tool in [
        "read_file",
        "list_files",
        "search",
        "create_file",
        "apply_patch",
    ] {
        let mut heard = Vec::new();
        for path in paths {
            let (_, input) = inputs(path).into_iter().find(|(t, _)| *t == tool).unwrap();
            let result = h.call(tool, input).await;
            assert_eq!(
                code(&result),
                Some(ErrorCode::Denied),
                "{tool} {path}: {result:?}"
            );
            let message = result.error().unwrap().message.clone();
            // The words, with the path named taken out: as written, or as judged (where a
            // link leads — a link's target is named, whether it exists or not is not said).
            let judged = path.replacen("innocent", "secrets", 1);
            let message = [path, judged.as_str(), "secrets/present.txt"]
                .into_iter()
                .fold(message, |m, named| m.replace(named, "<path>"));
            heard.push(message);
        }
        heard.dedup();
        assert_eq!(heard.len(), 1, "{tool} told the paths apart: {heard:#?}");
    }
    assert_eq!(
        std::fs::read_to_string(root.join("secrets/present.txt")).unwrap(),
        "key=1\n"
    );
    assert!(!root.join("secrets/missing.txt").exists());
}

/// A `run_command` that policy denies says nothing of its `cwd`: a directory, a file, a missing
/// path, a link and a dangling link answer `denied` in the same words, as for the file tools.
#[tokio::test]
async fn a_denied_command_says_nothing_of_its_cwd() {
    let rules = r#"
[[policy.rules]]
action = "builtin.tool.*"
decision = "allow"

[[policy.rules]]
action = "process.spawn"
program = "forbidden"
decision = "deny"
"#;
    let h = Harness::new(
        policy(Mode::Full, rules),
        builtin::tools(),
        Arc::new(AutoApprove),
        Limits::default(),
    );
    let root = h.dir.path();
    std::fs::create_dir_all(root.join("secrets/sub")).unwrap();
    std::fs::write(root.join("secrets/present.txt"), "key=1\n").unwrap();
    std::os::unix::fs::symlink("sub", root.join("secrets/link")).unwrap();
    std::os::unix::fs::symlink("gone", root.join("secrets/dangling")).unwrap();
    let mut heard = Vec::new();
    for cwd in [
        "secrets/sub",
        "secrets/present.txt",
        "secrets/missing",
        "secrets/present.txt/x",
        "secrets/link",
        "secrets/dangling",
    ] {
        let result = h
            .call(
                "run_command",
                json!({"program": "forbidden", "args": [], "cwd": cwd}),
            )
            .await;
        assert_eq!(code(&result), Some(ErrorCode::Denied), "{cwd}: {result:?}");
        heard.push(result.error().unwrap().message.replace(cwd, "<cwd>"));
    }
    heard.dedup();
    assert_eq!(heard.len(), 1, "the cwds were told apart: {heard:#?}");
    // What the text itself shows is still refused before policy: a cwd out of the workspace.
    let outside = h
        .call(
            "run_command",
            json!({"program": "forbidden", "cwd": "../elsewhere"}),
        )
        .await;
    assert_eq!(
        code(&outside),
        Some(ErrorCode::OutsideWorkspace),
        "{outside:?}"
    );
}
