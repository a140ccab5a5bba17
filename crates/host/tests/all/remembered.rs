//! "Always in this workspace": an approval remembered as narrow policy rules, applied by the
//! next host built for the same workspace and by no other.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use bosun_core::{ApprovalAnswer, ErrorCode, Redactor};
use bosun_host::{ApprovalBroker, ApprovalRequest, Host, NonInteractive, Session, ToolCall, Trace};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

struct Always(AtomicUsize);

#[async_trait]
impl ApprovalBroker for Always {
    async fn ask(&self, _request: &ApprovalRequest) -> ApprovalAnswer {
        self.0.fetch_add(1, Ordering::SeqCst);
        ApprovalAnswer::AllowAlways
    }
}

struct Dirs {
    root: tempfile::TempDir,
}

impl Dirs {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        for ws in ["ws", "other"] {
            std::fs::create_dir_all(root.path().join(ws).join(".git")).unwrap();
        }
        std::fs::create_dir_all(root.path().join("home")).unwrap();
        Self { root }
    }

    fn host(&self, ws: &str) -> Host {
        Host::builder()
            .workspace_of(&self.root.path().join(ws))
            .home(&self.root.path().join("home"))
            .without_plugins()
            .build()
            .unwrap()
    }
}

async fn call(
    host: &Host,
    broker: Arc<dyn ApprovalBroker>,
    tool: &str,
    input: Value,
    trace: &Trace,
) -> Result<(), ErrorCode> {
    let chokepoint = host.chokepoint(broker).unwrap();
    let session = Arc::new(Session::new("s"));
    chokepoint
        .call(
            ToolCall {
                id: "c1".into(),
                name: tool.into(),
                input,
            },
            &session,
            trace,
            &CancellationToken::new(),
        )
        .await
        .result
        .error()
        .map_or(Ok(()), |e| Err(e.code))
}

fn trace(dirs: &Dirs) -> Trace {
    Trace::create(
        &dirs.root.path().join("runs"),
        "t".into(),
        None,
        Arc::new(Redactor::default()),
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_always_answer_allows_exactly_that_program_here_from_then_on() {
    let dirs = Dirs::new();
    let t = trace(&dirs);
    let always = Arc::new(Always(AtomicUsize::new(0)));
    let run = |program: &str| json!({"program": program});

    let host = dirs.host("ws");
    assert!(
        call(&host, always.clone(), "run_command", run("true"), &t)
            .await
            .is_ok()
    );
    assert_eq!(always.0.load(Ordering::SeqCst), 1);

    // A new host (a new process) for the same workspace: nobody can be asked, and the
    // remembered program runs; any other program still needs a person.
    let host = dirs.host("ws");
    assert!(
        call(
            &host,
            Arc::new(NonInteractive),
            "run_command",
            run("true"),
            &t
        )
        .await
        .is_ok()
    );
    let other = call(
        &host,
        Arc::new(NonInteractive),
        "run_command",
        run("false"),
        &t,
    )
    .await;
    assert_eq!(other.unwrap_err(), ErrorCode::NeedsApproval);
    let shell = call(
        &host,
        Arc::new(NonInteractive),
        "run_command",
        json!({"program": "sh", "args": ["-c", "true"]}),
        &t,
    )
    .await;
    assert_eq!(shell.unwrap_err(), ErrorCode::NeedsApproval);

    // Another workspace never sees it.
    let host = dirs.host("other");
    let elsewhere = call(
        &host,
        Arc::new(NonInteractive),
        "run_command",
        run("true"),
        &t,
    )
    .await;
    assert_eq!(elsewhere.unwrap_err(), ErrorCode::NeedsApproval);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_remembered_protected_path_covers_that_path_only() {
    let dirs = Dirs::new();
    let t = trace(&dirs);
    let always = Arc::new(Always(AtomicUsize::new(0)));
    let host = dirs.host("ws");
    let create = |path: &str| json!({"path": path, "content": "x\n"});
    assert!(
        call(
            &host,
            always.clone(),
            "create_file",
            create(".git/hooks-note"),
            &t
        )
        .await
        .is_ok()
    );
    let host = dirs.host("ws");
    let again = call(
        &host,
        Arc::new(NonInteractive),
        "create_file",
        create(".git/config-note"),
        &t,
    )
    .await;
    assert_eq!(
        again.unwrap_err(),
        ErrorCode::NeedsApproval,
        "another protected path asks"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_broken_approvals_file_is_an_error_that_names_it() {
    let dirs = Dirs::new();
    let ws = dirs.root.path().join("ws").canonicalize().unwrap();
    let path = bosun_host::remembered::file_for(&dirs.root.path().join("home"), &ws);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, "[[policy.rules]]\naction = 3\n").unwrap();
    let err = Host::builder()
        .workspace_of(&ws)
        .home(&dirs.root.path().join("home"))
        .without_plugins()
        .build()
        .unwrap_err()
        .to_string();
    assert!(err.contains(&path.display().to_string()), "{err}");
    assert!(err.contains("fix or delete it"), "{err}");
}
