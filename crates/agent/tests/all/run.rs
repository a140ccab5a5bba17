//! Whole agent runs against the scripted model on loopback: real HTTP, real SSE, the real
//! OpenAI Chat Completions adapter, the real chokepoint and built-in tools in a temporary
//! workspace.

use std::path::Path;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bosun_agent::run::{
    Agent, Budget, Budgets, ContextBudget, RunEnd, RunReport, estimate_tokens, system_prompt,
};
use bosun_agent::scripted::{Script, ScriptedCall, ScriptedModel, ScriptedServer, Step};
use bosun_agent::session_store::{SessionError, SessionStore};
use bosun_core::{ApprovalAnswer, Envelope, ErrorCode, Event, Redactor, RunOutcome};
use bosun_host::approval::{ApprovalBroker, ApprovalRequest, AutoApprove};
use bosun_host::trace::{Observer, Trace, read_run};
use bosun_host::{Chokepoint, Session, Workspace, builtin};
use bosun_models::{
    Connection, Message, ModelError, ModelRequest, ModelStream, OpenAiChat, Provider,
};
use bosun_policy::{Mode, Policy};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// Answers every approval the same way and remembers what it was asked about.
struct Person {
    answer: ApprovalAnswer,
    asked: Mutex<Vec<String>>,
}

impl Person {
    fn answering(answer: ApprovalAnswer) -> Arc<Self> {
        Arc::new(Self {
            answer,
            asked: Mutex::new(Vec::new()),
        })
    }

    fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap().clone()
    }
}

#[async_trait]
impl ApprovalBroker for Person {
    async fn ask(&self, request: &ApprovalRequest) -> ApprovalAnswer {
        self.asked.lock().unwrap().push(request.tool.clone());
        self.answer
    }
}

/// Every event the trace hands its observers, recorded and live.
#[derive(Default)]
struct Collect(Mutex<Vec<Event>>);

impl Observer for Collect {
    fn observe(&self, envelope: &Envelope) {
        self.0.lock().unwrap().push(envelope.event.clone());
    }
}

impl Collect {
    fn events(&self) -> Vec<Event> {
        self.0.lock().unwrap().clone()
    }

    fn text(&self) -> String {
        self.events()
            .into_iter()
            .filter_map(|e| match e {
                Event::ModelText { text, .. } => Some(text),
                _ => None,
            })
            .collect()
    }
}

struct Harness {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
    server: ScriptedServer,
    observed: Arc<Collect>,
    runs: usize,
}

impl Harness {
    async fn new(steps: impl IntoIterator<Item = Step>) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let root = base.join("ws");
        let home = base.join("home");
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(root.join("src/lib.rs"), "pub fn answer() -> u32 { 41 }\n").unwrap();
        let server = ScriptedModel::serve(Script::new(steps)).await.unwrap();
        Self {
            _tmp: tmp,
            root,
            home,
            server,
            observed: Arc::new(Collect::default()),
            runs: 0,
        }
    }

    fn agent(
        &self,
        broker: Arc<dyn ApprovalBroker>,
        budgets: Budgets,
        context: ContextBudget,
    ) -> Agent {
        let provider = OpenAiChat::new(Connection::new(self.server.base_url())).unwrap();
        self.agent_with(Arc::new(provider), broker, budgets, context)
    }

    fn agent_with(
        &self,
        provider: Arc<dyn Provider>,
        broker: Arc<dyn ApprovalBroker>,
        budgets: Budgets,
        context: ContextBudget,
    ) -> Agent {
        let policy = Policy::builder(Mode::WorkspaceWrite)
            .known_risks(
                builtin::tools()
                    .iter()
                    .map(|t| (t.action().to_owned(), t.spec().risk)),
            )
            .build();
        let workspace = Arc::new(Workspace::new(&self.root, &self.root).unwrap());
        let chokepoint = Chokepoint::builder(Arc::new(policy), workspace)
            .tools(builtin::tools())
            .broker(broker)
            .env(
                [("PATH".to_owned(), "/usr/local/bin:/usr/bin:/bin".to_owned())]
                    .into_iter()
                    .collect(),
            )
            .build()
            .unwrap();
        let (prompt, warnings) = system_prompt(
            &self.home,
            &self.root,
            true,
            &[("todos".to_owned(), "Keep a todo list.".to_owned())],
        );
        assert_eq!(warnings, Vec::<String>::new());
        Agent::builder(provider, "scripted", Arc::new(chokepoint))
            .system_prompt(prompt)
            .budgets(budgets)
            .context(context)
            .build()
    }

    async fn run(
        &mut self,
        agent: &Agent,
        conversation: Vec<Message>,
        task: &str,
        session: &Arc<Session>,
        cancel: &CancellationToken,
    ) -> (RunReport, Vec<Event>) {
        self.runs += 1;
        let runs = self.home.join("runs");
        let run_id = format!("run-{}", self.runs);
        let trace = Trace::create(
            &runs,
            run_id.clone(),
            None,
            Arc::new(Redactor::new(Vec::<(String, String)>::new())),
        )
        .unwrap()
        .observe(self.observed.clone());
        let report = agent.run(conversation, task, session, &trace, cancel).await;
        trace.finish().unwrap();
        let events = read_run(&runs.join(format!("{run_id}.jsonl")))
            .unwrap()
            .into_iter()
            .map(|e| e.event)
            .collect();
        (report, events)
    }

    /// A run of `task` in a new conversation and session, never cancelled.
    async fn fresh(&mut self, agent: &Agent, task: &str) -> (RunReport, Vec<Event>) {
        self.run(
            agent,
            Vec::new(),
            task,
            &session(),
            &CancellationToken::new(),
        )
        .await
    }
}

fn session() -> Arc<Session> {
    Arc::new(Session::new("test-session"))
}

/// The tool results of a conversation, as (call id, parsed content, is_error).
fn tool_results(messages: &[Message]) -> Vec<(String, Value, bool)> {
    messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool(r) => Some((
                r.call_id.clone(),
                serde_json::from_str(&r.content).unwrap_or(Value::String(r.content.clone())),
                r.is_error,
            )),
            _ => None,
        })
        .collect()
}

fn kinds(events: &[Event]) -> Vec<&'static str> {
    events.iter().map(Event::kind).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_model_reads_patches_and_reacts_to_a_refused_command() {
    let mut h = Harness::new([
        Step {
            text: Some("Let me look at the code.".into()),
            ..Step::call("read_file", json!({"path": "src/lib.rs"}))
        },
        Step::call(
            "apply_patch",
            json!({"path": "src/lib.rs", "edits": [{"oldText": "41", "newText": "42"}]}),
        ),
        Step::call("run_command", json!({"program": "cargo", "args": ["test"]})),
        Step::text("Fixed and tested.").or_on_tool_error(Step::text(
            "Fixed, but I could not run the tests ({{last_tool_error}}).",
        )),
    ])
    .await;
    std::fs::write(h.root.join("AGENTS.md"), "Always run the tests.").unwrap();
    let person = Person::answering(ApprovalAnswer::Deny);
    let agent = h.agent(person.clone(), Budgets::default(), ContextBudget::default());
    let (report, events) = h.fresh(&agent, "Make answer() return 42.").await;

    assert_eq!(report.end, RunEnd::Completed);
    assert!(
        report.text.starts_with(
            "Fixed, but I could not run the tests (denied: the person declined run_command"
        ),
        "{}",
        report.text
    );
    assert_eq!((report.steps, report.tool_calls), (4, 3));
    assert!(report.usage.input_tokens > 0);
    assert_eq!(
        std::fs::read_to_string(h.root.join("src/lib.rs")).unwrap(),
        "pub fn answer() -> u32 { 42 }\n"
    );
    assert_eq!(person.asked(), vec!["run_command".to_owned()]);

    // The tool results the model saw: the file, the patch, the refusal as an error.
    let results = tool_results(&report.messages);
    assert_eq!(results.len(), 3);
    assert_eq!(
        results[0].1["output"]["content"],
        "pub fn answer() -> u32 { 41 }\n"
    );
    assert_eq!(results[1].1["ok"], true);
    assert_eq!(results[2].1["error"]["code"], "denied");
    assert!(results[2].2);

    // What went over the wire: the system prompt with AGENTS.md and the plugin's part, the
    // tools, and the refusal in the last request.
    let requests = h.server.requests();
    assert_eq!(requests.len(), 4);
    let system = requests[0]["messages"][0]["content"].as_str().unwrap();
    assert!(system.starts_with("You are Bosun"));
    assert!(system.contains("Always run the tests."));
    assert!(system.contains("# From plugin `todos`"));
    let tools: Vec<&str> = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(tools.contains(&"read_file") && tools.contains(&"run_command"));
    let last = requests[3]["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(last["role"], "tool");
    assert!(last["content"].as_str().unwrap().contains("\"denied\""));

    // The trace has the run, the prompt's sources, every model step and every call; the live
    // view had the text as it streamed.
    assert_eq!(
        kinds(&events),
        [
            "run.started",
            "prompt.assembled",
            "model.started",
            "model.completed",
            "tool.proposed",
            "tool.decided",
            "tool.started",
            "tool.completed",
            "model.started",
            "model.completed",
            "tool.proposed",
            "tool.decided",
            "tool.started",
            "tool.completed",
            "model.started",
            "model.completed",
            "tool.proposed",
            "tool.decided",
            "approval.asked",
            "approval.answered",
            "tool.failed",
            "model.started",
            "model.completed",
            "run.finished",
        ]
    );
    let usage = events.iter().find_map(|e| match e {
        Event::ModelCompleted { usage, .. } => *usage,
        _ => None,
    });
    assert!(
        usage.is_some_and(|u| u.input_tokens > 0),
        "usage is recorded: {usage:?}"
    );
    assert_eq!(
        events.last(),
        Some(&Event::RunFinished {
            outcome: RunOutcome::Completed
        })
    );
    let observed = h.observed.events();
    assert!(matches!(observed[0], Event::RunStarted { .. }));
    let Event::PromptAssembled { sources } = &observed[1] else {
        panic!("second event: {:?}", observed[1]);
    };
    let labels: Vec<&str> = sources.iter().map(|s| s.label.as_str()).collect();
    assert_eq!(labels.len(), 4);
    assert_eq!(labels[..2], ["bosun", "environment"]);
    assert!(labels[2].ends_with("AGENTS.md") && labels[3] == "todos");
    assert_eq!(
        h.observed.text(),
        format!("Let me look at the code.{}", report.text)
    );
    // Streamed text reaches observers only; the trace file keeps everything else, in order.
    assert!(!kinds(&events).contains(&"model.text"));
    let recorded: Vec<Event> = observed.into_iter().filter(|e| !e.is_live()).collect();
    assert_eq!(recorded, events);
}

#[tokio::test(flavor = "multi_thread")]
async fn exhausting_the_step_budget_ends_with_limit_reached() {
    let read = || Step::call("read_file", json!({"path": "src/lib.rs"}));
    let mut h = Harness::new([read(), read(), read(), read()]).await;
    let budgets = Budgets {
        max_steps: 2,
        max_tool_calls: 60,
    };
    let agent = h.agent(Arc::new(AutoApprove), budgets, ContextBudget::default());
    let (report, events) = h.fresh(&agent, "Read forever.").await;
    assert_eq!(
        report.end,
        RunEnd::LimitReached {
            budget: Budget::Steps,
            limit: 2
        }
    );
    assert_eq!(h.server.requests().len(), 2);
    assert_eq!(report.tool_calls, 2);
    // The conversation is whole: every call has its result, so it can be resumed.
    assert!(matches!(report.messages.last(), Some(Message::Tool(_))));
    assert_eq!(
        events.last(),
        Some(&Event::RunFinished {
            outcome: RunOutcome::LimitReached
        })
    );
    assert!(h.observed.events().contains(&Event::BudgetExhausted {
        budget: Budget::Steps,
        limit: 2
    }));
    assert!(events.contains(&Event::BudgetExhausted {
        budget: Budget::Steps,
        limit: 2
    }));
}

#[tokio::test(flavor = "multi_thread")]
async fn calls_over_the_tool_budget_are_not_run() {
    let call = |args: Value| ScriptedCall {
        name: "create_file".into(),
        arguments: args,
        id: None,
    };
    let mut h = Harness::new([Step {
        tool_calls: vec![
            call(json!({"path": "one.txt", "content": "1"})),
            call(json!({"path": "two.txt", "content": "2"})),
        ],
        ..Step::default()
    }])
    .await;
    let budgets = Budgets {
        max_steps: 24,
        max_tool_calls: 1,
    };
    let agent = h.agent(Arc::new(AutoApprove), budgets, ContextBudget::default());
    let (report, _) = h.fresh(&agent, "Create two files.").await;
    assert_eq!(
        report.end,
        RunEnd::LimitReached {
            budget: Budget::ToolCalls,
            limit: 1
        }
    );
    assert!(h.root.join("one.txt").exists());
    assert!(!h.root.join("two.txt").exists());
    let results = tool_results(&report.messages);
    assert_eq!(results[1].1["error"]["code"], "limit_reached");
    assert_eq!(h.server.requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn cancelling_during_a_command_stops_it_and_the_run() {
    let mut h = Harness::new([
        Step::call("run_command", json!({"program": "sleep", "args": ["30"]})),
        Step::text("never sent"),
    ])
    .await;
    let agent = h.agent(
        Arc::new(AutoApprove),
        Budgets::default(),
        ContextBudget::default(),
    );
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let observed = h.observed.clone();
    tokio::spawn(async move {
        // Cancel once the command runs, however long the model's answer took to arrive.
        while !observed
            .events()
            .iter()
            .any(|e| matches!(e, Event::ToolStarted { tool, .. } if tool == "run_command"))
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        trigger.cancel();
    });
    let started = Instant::now();
    let (report, events) = h
        .run(&agent, Vec::new(), "Wait a while.", &session(), &cancel)
        .await;
    assert!(started.elapsed() < Duration::from_secs(15));
    assert_eq!(report.end, RunEnd::Cancelled);
    let results = tool_results(&report.messages);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].1["error"]["code"], "cancelled");
    assert!(results[0].2);
    assert_eq!(h.server.requests().len(), 1);
    assert!(events.iter().any(|e| matches!(
        e,
        Event::ToolFailed { error, .. } if error.code == ErrorCode::Cancelled
    )));
    assert_eq!(
        events.last(),
        Some(&Event::RunFinished {
            outcome: RunOutcome::Cancelled
        })
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn cancelling_while_the_model_streams_drops_the_partial_answer() {
    let mut h = Harness::new([Step {
        text: Some("Thinking about it".into()),
        hang: true,
        ..Step::default()
    }])
    .await;
    let agent = h.agent(
        Arc::new(AutoApprove),
        Budgets::default(),
        ContextBudget::default(),
    );
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let observed = h.observed.clone();
    tokio::spawn(async move {
        // Cancel once the first text has arrived, so the stream is known to be open.
        while observed.text().is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        trigger.cancel();
    });
    let (report, _) = tokio::time::timeout(
        Duration::from_secs(20),
        h.run(&agent, Vec::new(), "Think.", &session(), &cancel),
    )
    .await
    .unwrap();
    assert_eq!(report.end, RunEnd::Cancelled);
    assert_eq!(report.messages, vec![Message::user("Think.")]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_saved_session_resumes_with_its_earlier_turns_and_no_grants() {
    let mut h = Harness::new([
        Step::call("run_command", json!({"program": "true"})),
        Step::text("First answer."),
        Step::text("Second answer."),
    ])
    .await;
    let store = SessionStore::in_home(&h.home);
    let person = Person::answering(ApprovalAnswer::AllowSession);
    let agent = h.agent(person.clone(), Budgets::default(), ContextBudget::default());

    let first_session = session();
    let (report, _) = h
        .run(
            &agent,
            Vec::new(),
            "First task.",
            &first_session,
            &CancellationToken::new(),
        )
        .await;
    assert_eq!(report.end, RunEnd::Completed);
    assert!(
        first_session
            .granted_actions()
            .contains("builtin.tool.run_command")
    );
    let mut stored = store.create("local", &h.root);
    stored.messages = report.messages;
    stored.run_ids.push("run-1".into());
    let path = store.save(&mut stored).unwrap();

    // Private, and holding no approval of any kind.
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(store.dir()), 0o700);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        !text.contains("grant") && !text.contains("allow_session"),
        "{text}"
    );

    let (listed, warnings) = store.list().unwrap();
    assert!(warnings.is_empty());
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].title, "First task.");
    assert_eq!(listed[0].messages, 4);

    // Resume by a prefix of the id, in a fresh in-memory session: the grant is gone.
    let loaded = store.load(&stored.id[..13]).unwrap();
    assert_eq!(loaded, stored);
    loaded.check_workspace(&h.root).unwrap();
    let second_session = session();
    let (report, _) = h
        .run(
            &agent,
            loaded.messages,
            "More, please.",
            &second_session,
            &CancellationToken::new(),
        )
        .await;
    assert_eq!(report.text, "Second answer.");
    assert!(second_session.granted_actions().is_empty());

    // The second request carried the whole first turn before the new task.
    let requests = h.server.requests();
    let second: Vec<(String, String)> = requests[2]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap().to_owned(),
                m["content"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let roles: Vec<&str> = second.iter().map(|(r, _)| r.as_str()).collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant", "tool", "assistant", "user"]
    );
    assert_eq!(second[1].1, "First task.");
    assert_eq!(second[4].1, "First answer.");
    assert_eq!(second[5].1, "More, please.");
}

#[test]
fn a_session_file_cannot_carry_grants_or_be_huge() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path().join("sessions"));
    let mut stored = store.create("local", dir.path());
    stored.messages.push(Message::user("hi"));
    let path = store.save(&mut stored).unwrap();

    let mut value: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    value["grants"] = json!(["builtin.tool.run_command"]);
    std::fs::write(&path, value.to_string()).unwrap();
    let err = store.load(&stored.id).unwrap_err();
    assert!(
        matches!(&err, SessionError::Parse { message, .. } if message.contains("unknown field `grants`")),
        "{err}"
    );

    let file = std::fs::File::create(&path).unwrap();
    file.set_len(17 * 1024 * 1024).unwrap();
    assert!(matches!(
        store.load(&stored.id),
        Err(SessionError::TooLarge { .. })
    ));
    assert!(matches!(
        store.load("../../etc/passwd"),
        Err(SessionError::InvalidId(_))
    ));
    assert!(matches!(
        store.load("ffff"),
        Err(SessionError::NotFound { .. })
    ));
}

#[tokio::test(flavor = "multi_thread")]
async fn old_tool_outputs_are_elided_to_fit_a_tiny_context_window() {
    let read = || Step::call("read_file", json!({"path": "big.txt"}));
    let mut h = Harness::new([read(), read(), Step::text("Done.")]).await;
    std::fs::write(h.root.join("big.txt"), "x".repeat(4_000)).unwrap();
    // Size the window from the real prompt and tools: the first output fits, the second pushes
    // the request past 90 % of the room, and dropping the first alone brings it under 75 %.
    let probe = h.agent(
        Arc::new(AutoApprove),
        Budgets::default(),
        ContextBudget::default(),
    );
    let (prompt, _) = system_prompt(
        &h.home,
        &h.root,
        true,
        &[("todos".to_owned(), "Keep a todo list.".to_owned())],
    );
    let base = estimate_tokens(
        &prompt.text,
        probe.tools(),
        &[Message::user("Read it twice.")],
    );
    assert!(
        base < 2_300,
        "the prompt and tools grew to {base} tokens; resize this test"
    );
    let context = ContextBudget {
        context_window: Some((base + 1_100) * 100 / 70 + 1),
        max_output_tokens: Some(1),
    };
    let agent = h.agent(Arc::new(AutoApprove), Budgets::default(), context);
    let (report, _) = h.fresh(&agent, "Read it twice.").await;
    assert_eq!(report.end, RunEnd::Completed);

    let tool_contents = |request: &Value| -> Vec<String> {
        request["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| m["content"].as_str().unwrap().to_owned())
            .collect()
    };
    let requests = h.server.requests();
    let second = tool_contents(&requests[1]);
    assert!(second[0].contains(&"x".repeat(4_000)));
    let third = tool_contents(&requests[2]);
    let Event::ContextElided { bytes, .. } = h
        .observed
        .events()
        .into_iter()
        .find(|e| matches!(e, Event::ContextElided { .. }))
        .unwrap()
    else {
        unreachable!()
    };
    assert_eq!(
        third[0],
        format!("[elided: {bytes} bytes of read_file output to fit the context window]")
    );
    assert!(bytes > 4_000);
    assert!(third[1].contains(&"x".repeat(4_000)));
}

#[tokio::test(flavor = "multi_thread")]
async fn reasoning_is_recorded_bounded_and_never_sent_back() {
    let long = "why ".repeat(3_000);
    let mut h = Harness::new([
        Step {
            reasoning: Some("The answer is in src/lib.rs; read it first.".into()),
            ..Step::call("read_file", json!({"path": "src/lib.rs"}))
        },
        Step {
            reasoning: Some(long.clone()),
            ..Step::text("It returns 41.")
        },
    ])
    .await;
    let agent = h.agent(
        Arc::new(AutoApprove),
        Budgets::default(),
        ContextBudget::default(),
    );
    let (report, events) = h.fresh(&agent, "What does answer() return?").await;
    assert_eq!(report.end, RunEnd::Completed);
    let reasoning: Vec<(u32, String)> = events
        .iter()
        .filter_map(|e| match e {
            Event::ModelReasoning { step, text } => Some((*step, text.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(reasoning.len(), 2, "{events:?}");
    assert_eq!(
        reasoning[0],
        (1, "The answer is in src/lib.rs; read it first.".to_owned())
    );
    assert_eq!(reasoning[1].0, 2);
    assert_eq!(
        reasoning[1].1.chars().count(),
        bosun_core::MAX_REASONING_CHARS + 1
    );
    assert!(reasoning[1].1.ends_with('…'));
    // It comes before the step's tool call, and the provider never gets it back.
    let kinds = kinds(&events);
    let at = |kind: &str| kinds.iter().position(|k| *k == kind).unwrap();
    assert!(at("model.reasoning") < at("tool.proposed"), "{kinds:?}");
    let second = h.server.requests()[1].to_string();
    assert!(!second.contains("read it first"), "{second}");
}

/// Three earlier turns of about 500 tokens each, as a resumed session holds them.
fn earlier_turns() -> Vec<Message> {
    ["a", "b", "c"]
        .into_iter()
        .flat_map(|name| {
            [
                Message::user(format!("task {name}: {}", name.repeat(2_000))),
                Message::assistant(vec![bosun_models::AssistantPart::Text {
                    text: format!("done with {name}"),
                }]),
            ]
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_past_the_window_compacts_the_earlier_turns_with_no_tools_offered() {
    let mut h = Harness::new([
        Step::text("SUMMARY: tasks a and b are done."),
        Step::text("Done."),
    ])
    .await;
    let probe = h.agent(
        Arc::new(AutoApprove),
        Budgets::default(),
        ContextBudget::default(),
    );
    let (prompt, _) = system_prompt(
        &h.home,
        &h.root,
        true,
        &[("todos".to_owned(), "Keep a todo list.".to_owned())],
    );
    let base = estimate_tokens(&prompt.text, probe.tools(), &[Message::user("Now d.")]);
    // The three turns (~1500 tokens) pass 90 % of the room; the last one and the task alone
    // (~500) fit well under it.
    let context = ContextBudget {
        context_window: Some((base + 1_300) * 100 / 90 + 1),
        max_output_tokens: Some(1),
    };
    let agent = h.agent(Arc::new(AutoApprove), Budgets::default(), context);
    let (report, events) = h
        .run(
            &agent,
            earlier_turns(),
            "Now d.",
            &session(),
            &CancellationToken::new(),
        )
        .await;
    assert_eq!(report.end, RunEnd::Completed);

    let requests = h.server.requests();
    assert_eq!(requests.len(), 2);
    // The summary request offers no tools and carries the turns as one person's message.
    let summary = &requests[0];
    assert!(
        summary
            .get("tools")
            .is_none_or(|t| t.as_array().is_some_and(Vec::is_empty)),
        "{summary}"
    );
    let asked = summary["messages"].as_array().unwrap();
    assert_eq!(asked.len(), 2, "a system prompt and one message: {asked:?}");
    let transcript = asked[1]["content"].as_str().unwrap();
    assert!(transcript.contains("task a: aaaa") && transcript.contains("done with b"));
    assert!(
        !transcript.contains("task c"),
        "the kept turn is not summarised"
    );
    // The step after it: the summary, the last earlier turn and the task, with the tools.
    let step = &requests[1];
    assert!(!step["tools"].as_array().unwrap().is_empty());
    let texts: Vec<String> = report
        .messages
        .iter()
        .map(|m| match m {
            Message::User { text, .. } => format!("user: {}", text.lines().next().unwrap_or("")),
            Message::Assistant { .. } => "assistant".to_owned(),
            Message::Tool(_) => "tool".to_owned(),
        })
        .collect();
    assert_eq!(
        texts,
        vec![
            "user: Summary of our conversation so far (4 earlier messages were compacted):"
                .to_owned(),
            "assistant".to_owned(),
            format!("user: task c: {}", "c".repeat(2_000)),
            "assistant".to_owned(),
            "user: Now d.".to_owned(),
            "assistant".to_owned(),
        ]
    );
    let Message::User { text, .. } = &report.messages[0] else {
        unreachable!()
    };
    assert!(text.ends_with("SUMMARY: tasks a and b are done."));
    assert_eq!(step["messages"].as_array().unwrap().len(), 1 + 5);
    assert!(events.contains(&Event::ContextCompacted {
        summarised: 4,
        kept: 3,
        summary_bytes: 32,
        error: None,
    }));
}

/// A provider that, before each request goes out, reads which events the run's trace file
/// holds: what a crash at that moment would leave.
#[derive(Debug)]
struct TraceWitness {
    inner: OpenAiChat,
    trace: PathBuf,
    seen: Mutex<Vec<Vec<String>>>,
}

#[async_trait]
impl Provider for TraceWitness {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    async fn stream(
        &self,
        request: &ModelRequest,
        cancel: CancellationToken,
    ) -> Result<ModelStream, ModelError> {
        self.seen.lock().unwrap().push(event_kinds(&self.trace));
        self.inner.stream(request, cancel).await
    }
}

fn event_kinds(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|line| {
            serde_json::from_str::<Envelope>(line)
                .unwrap()
                .event
                .kind()
                .to_owned()
        })
        .collect()
}

/// The trace's durability contract in the agent loop: the model never sees a call's result
/// before the call's lines are in the trace file, however long the trace would let them wait
/// (here an hour), so a crash after the model was told can never lose them.
#[tokio::test(flavor = "multi_thread")]
async fn the_model_never_sees_a_result_before_its_lines_are_in_the_trace_file() {
    let mut h = Harness::new([
        Step::call("read_file", json!({"path": "src/lib.rs"})),
        Step::call("list_files", json!({})),
        Step::text("Done."),
    ])
    .await;
    h.runs += 1;
    let runs = h.home.join("runs");
    let path = runs.join("run-w.jsonl");
    let witness = Arc::new(TraceWitness {
        inner: OpenAiChat::new(Connection::new(h.server.base_url())).unwrap(),
        trace: path.clone(),
        seen: Mutex::new(Vec::new()),
    });
    let agent = h.agent_with(
        witness.clone(),
        Arc::new(AutoApprove),
        Budgets::default(),
        ContextBudget::default(),
    );
    let trace = Trace::create(&runs, "run-w".into(), None, Arc::default())
        .unwrap()
        .with_write_delay(Duration::from_secs(3600));
    let report = agent
        .run(
            Vec::new(),
            "Look around.",
            &session(),
            &trace,
            &CancellationToken::new(),
        )
        .await;
    assert_eq!(report.end, RunEnd::Completed);
    let seen = witness.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3);
    let calls_done = |kinds: &[String]| kinds.iter().filter(|k| *k == "tool.completed").count();
    assert_eq!(
        seen.iter().map(|k| calls_done(k)).collect::<Vec<_>>(),
        [0, 1, 2],
        "{seen:?}"
    );
    for (kinds, call) in seen[1..].iter().zip(1..) {
        let proposed = kinds.iter().filter(|k| *k == "tool.proposed").count();
        assert_eq!(
            proposed, call,
            "every line of the call, not only its end: {kinds:?}"
        );
    }
}
