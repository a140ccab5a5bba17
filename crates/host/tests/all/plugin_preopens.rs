//! A native plugin's preopen is the directory its call was judged for as a whole, opened
//! beneath the workspace root through no symbolic link: a directory swapped for a link to the
//! outside between the check and the preopen is refused, never followed; and consent for one
//! file in a directory (a rule, a person's yes) never reaches the files beside it.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bosun_core::{
    ApprovalAnswer, Capability, CapabilityRequest, ErrorCode, Redactor, Scope, ToolResult,
};
use bosun_host::approval::{ApprovalBroker, ApprovalRequest};
use bosun_host::trace::Trace;
use bosun_host::{Chokepoint, Session, ToolCall, Workspace};
use bosun_policy::{Mode, Policy, PolicyFile, Source};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::instance_slots::{named, native_tools, policy, sandbox};

/// `d` is exchanged atomically with a link to a folder outside the workspace, in a loop, while
/// the plugin's `read` tool is called for `d/secret.txt` with `fs.read` judged at `d` (the
/// preopen is made afresh at each call: the grant alternates with one of the root). The
/// secret outside is never read. Before, the preopen was made by name after the check, and
/// followed the link whenever it was there at that moment.
#[tokio::test(flavor = "multi_thread")]
async fn a_directory_swapped_for_a_link_never_becomes_a_plugins_preopen() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(root.join("d")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(root.join("d/f.txt"), "inside").unwrap();
    std::fs::write(outside.join("secret.txt"), "top secret").unwrap();
    let root = root.canonicalize().unwrap();
    let sandbox = sandbox(4);
    let policy = policy();
    let tools = native_tools(
        &root,
        bosun_test_programs::FS_ESCAPE,
        "escape",
        &sandbox,
        &policy,
    );
    let read = named(&tools, "read");

    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicUsize::new(0));
    let (d, link) = (root.join("d"), root.join("d-link"));
    std::os::unix::fs::symlink(&outside, &link).unwrap();
    let swapper = {
        let (stop, swaps) = (stop.clone(), swaps.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                rustix::fs::renameat_with(
                    rustix::fs::CWD,
                    &d,
                    rustix::fs::CWD,
                    &link,
                    rustix::fs::RenameFlags::EXCHANGE,
                )
                .unwrap();
                swaps.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    for i in 0..400 {
        let mut ctx = crate::builtin_context(&root);
        // What the chokepoint grants: the directory, judged as a whole.
        ctx.granted = vec![CapabilityRequest {
            capability: Capability::FsRead,
            scope: Scope {
                path: Some(if i % 2 == 0 { "d" } else { "." }.to_owned()),
                whole_directory: true,
                ..Scope::default()
            },
        }];
        // A refusal (the link was there at the check or at the open) is fine; a read is not.
        if let Ok(out) = read.call(json!({"path": "d/secret.txt"}), &ctx).await {
            assert!(
                !out.value.to_string().contains("top secret"),
                "call {i} read outside the workspace: {}",
                out.value
            );
        }
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    assert!(swaps.load(Ordering::Relaxed) > 0, "the swapper never ran");
}

/// A person (or nobody) answering every question one way, keeping what was asked.
struct Person {
    answer: ApprovalAnswer,
    asked: Mutex<Vec<ApprovalRequest>>,
}

#[async_trait::async_trait]
impl ApprovalBroker for Person {
    async fn ask(&self, request: &ApprovalRequest) -> ApprovalAnswer {
        self.asked.lock().unwrap().push(request.clone());
        self.answer
    }
}

/// What one call of the `fs-escape` plugin through a chokepoint did: its result, the questions
/// a person was asked, and the run's trace as text.
struct Called {
    result: ToolResult,
    asked: Vec<ApprovalRequest>,
    trace: String,
}

/// A policy in `mode` with the user rules `user` and the rules `project` of a project the user
/// trusted (which may loosen), each a series of `[[policy.rules]]`.
fn layered(mode: Mode, user: &str, project: &str) -> Arc<Policy> {
    let file = |text: &str| PolicyFile::parse(&format!("[policy]\n{text}")).unwrap();
    Arc::new(
        Policy::builder(mode)
            .user(file(user), Source::with_text("user.toml", user))
            .unwrap()
            .project(
                file(project),
                Source::with_text("project.toml", project),
                true,
            )
            .unwrap()
            .build(),
    )
}

fn rule(action: &str, path: Option<&str>, decision: &str) -> String {
    let path = path
        .map(|p| format!("path = \"{p}\"\n"))
        .unwrap_or_default();
    format!("[[policy.rules]]\naction = \"{action}\"\n{path}decision = \"{decision}\"\n")
}

/// Calls `tool` of `fs-escape` with `input` through a chokepoint over `root` under `policy`, a
/// person answering `answer`.
async fn through_chokepoint(
    root: &Path,
    policy: Arc<Policy>,
    answer: ApprovalAnswer,
    tool: &str,
    input: Value,
) -> Called {
    let tools = native_tools(
        root,
        bosun_test_programs::FS_ESCAPE,
        "escape",
        &sandbox(4),
        &policy,
    );
    let person = Arc::new(Person {
        answer,
        asked: Mutex::new(Vec::new()),
    });
    let workspace = Arc::new(Workspace::new(root, root).unwrap());
    let chokepoint = Chokepoint::builder(policy, workspace)
        .tools(tools)
        .broker(person.clone())
        .build()
        .unwrap();
    let runs = tempfile::tempdir().unwrap();
    let redactor = Arc::new(Redactor::new(Vec::<(String, String)>::new()));
    let trace = Trace::create(runs.path(), "run-1".into(), None, redactor).unwrap();
    let result = chokepoint
        .call(
            ToolCall {
                id: "c".into(),
                name: tool.into(),
                input,
            },
            &Arc::new(Session::new("s")),
            &trace,
            &CancellationToken::new(),
        )
        .await
        .result;
    trace.finish().unwrap();
    let asked = person.asked.lock().unwrap().clone();
    Called {
        result,
        asked,
        trace: std::fs::read_to_string(runs.path().join("run-1.jsonl")).unwrap(),
    }
}

/// A workspace holding `pub/a.txt`, `pub/b.txt`, `a.txt` and `b.txt`, each saying its name.
fn workspace_with_siblings() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    std::fs::create_dir_all(root.join("pub")).unwrap();
    for file in ["pub/a.txt", "pub/b.txt", "a.txt", "b.txt"] {
        std::fs::write(root.join(file), file).unwrap();
    }
    let root = root.canonicalize().unwrap();
    (dir, root)
}

/// A plugin's preopen is a directory: a call judged for a file is judged for that directory as
/// a whole too, so that consent for one file (a rule allowing it, a person's yes to it) is not
/// taken as consent for the files beside it. The user's policy asks before every read or
/// write (a rule without a path); a trusted project allows single files. `write_other` holds
/// `fs.write` for the path it names and writes `other`, a file beside it (`read_other` reads
/// it). Before, each of these calls ran without a question and reached the sibling: the
/// preopen was `pub/` (or the whole workspace), granted on the strength of the one file.
#[tokio::test(flavor = "multi_thread")]
async fn consent_for_one_file_never_reaches_the_files_beside_it() {
    let (_dir, root) = workspace_with_siblings();
    let untouched = |file: &str| {
        assert_eq!(
            std::fs::read_to_string(root.join(file)).unwrap(),
            file,
            "{file} was written"
        );
    };
    let refused = |called: &Called, code: ErrorCode, words: &[&str]| {
        let ToolResult::Err { error, .. } = &called.result else {
            panic!("the call ran: {:?}", called.result);
        };
        assert_eq!(error.code, code, "{error:?}");
        for said in words {
            assert!(error.message.contains(said), "{said}: {}", error.message);
        }
    };
    for (action, tool) in [("fs.write", "write_other"), ("fs.read", "read_other")] {
        let project: String = ["pub/a.txt", "pub/new.txt", "pub/sub/new.txt", "a.txt"]
            .iter()
            .map(|file| rule(action, Some(file), "allow"))
            .collect();
        let policy = || layered(Mode::WorkspaceWrite, &rule(action, None, "ask"), &project);

        // Rules allowing exactly one file, nobody to ask about the directory: the call needs
        // approval, and says what it reaches and which rule would allow it.
        for (named, other, dir) in [
            ("pub/a.txt", "pub/b.txt", "pub"),
            // A new file in a directory holding others, and one whose own directory does
            // not exist yet: the preopen is `pub/` both times.
            ("pub/new.txt", "pub/b.txt", "pub"),
            ("pub/sub/new.txt", "pub/b.txt", "pub"),
        ] {
            let called = through_chokepoint(
                &root,
                policy(),
                ApprovalAnswer::Unavailable,
                tool,
                json!({"path": named, "other": other}),
            )
            .await;
            refused(
                &called,
                ErrorCode::NeedsApproval,
                &[
                    &format!("allows `{action}:{dir}/**`"),
                    &format!("`{dir}/` whole: every file in it and below"),
                ],
            );
            untouched("pub/b.txt");
        }
        // A file at the top: its preopen is the whole workspace, judged as such.
        let called = through_chokepoint(
            &root,
            policy(),
            ApprovalAnswer::Unavailable,
            tool,
            json!({"path": "a.txt", "other": "b.txt"}),
        )
        .await;
        refused(
            &called,
            ErrorCode::NeedsApproval,
            &[&format!("allows `{action}:**`"), "the whole workspace"],
        );
        untouched("b.txt");

        // A person asked: the question is about the directory as a whole, and their no holds.
        let called = through_chokepoint(
            &root,
            policy(),
            ApprovalAnswer::Deny,
            tool,
            json!({"path": "pub/a.txt", "other": "pub/b.txt"}),
        )
        .await;
        refused(&called, ErrorCode::Denied, &["declined"]);
        let [question] = called.asked.as_slice() else {
            panic!("asked {:?}", called.asked);
        };
        let uses = question.uses().unwrap();
        assert!(
            uses.contains(&format!(
                "{action}:pub/** (the whole directory: every file in pub/ and below)"
            )),
            "{uses}"
        );
        untouched("pub/b.txt");
    }
}

/// The directory itself approved — by a person asked about it, or by a rule for it — the call
/// reaches it, and the question and the trace said that it would: the whole directory, not the
/// file named.
#[tokio::test(flavor = "multi_thread")]
async fn a_directory_approved_as_a_whole_is_reached_and_the_question_said_so() {
    let (_dir, root) = workspace_with_siblings();
    let called = through_chokepoint(
        &root,
        layered(
            Mode::WorkspaceWrite,
            &rule("fs.write", None, "ask"),
            &rule("fs.write", Some("pub/a.txt"), "allow"),
        ),
        ApprovalAnswer::AllowOnce,
        "write_other",
        json!({"path": "pub/a.txt", "other": "pub/b.txt"}),
    )
    .await;
    assert!(
        matches!(called.result, ToolResult::Ok { .. }),
        "{:?}",
        called.result
    );
    assert_eq!(
        std::fs::read_to_string(root.join("pub/b.txt")).unwrap(),
        "written by fs-escape"
    );
    let [question] = called.asked.as_slice() else {
        panic!("asked {:?}", called.asked);
    };
    assert!(
        question.reason.contains("fs.write:pub/**"),
        "{}",
        question.reason
    );
    assert!(
        called
            .trace
            .contains(r#"{"capability":"fs.write","scope":{"path":"pub","whole_directory":true}}"#),
        "{}",
        called.trace
    );

    // A rule for the directory: no question, and the sibling is reached.
    std::fs::write(root.join("pub/b.txt"), "pub/b.txt").unwrap();
    let called = through_chokepoint(
        &root,
        layered(
            Mode::WorkspaceWrite,
            &rule("fs.write", None, "ask"),
            &rule("fs.write", Some("pub/**"), "allow"),
        ),
        ApprovalAnswer::Deny,
        "write_other",
        json!({"path": "pub/a.txt", "other": "pub/b.txt"}),
    )
    .await;
    assert!(
        matches!(called.result, ToolResult::Ok { .. }),
        "{:?}",
        called.result
    );
    assert!(called.asked.is_empty(), "{:?}", called.asked);
    assert_eq!(
        std::fs::read_to_string(root.join("pub/b.txt")).unwrap(),
        "written by fs-escape"
    );
}

/// A read rule restricting a glob that can lie in the preopened directory (`**/.env`) is judged
/// as a subject of its own; a person's yes to it is not a grant of where its pattern starts.
/// Before, the approved `fs.read:**/.env` became a preopen of its nearest existing directory —
/// the workspace root — and a call judged for `pub/a.txt` read a file at the top.
#[tokio::test(flavor = "multi_thread")]
async fn an_approved_pattern_inside_the_directory_opens_nothing_wider() {
    let (_dir, root) = workspace_with_siblings();
    let called = through_chokepoint(
        &root,
        layered(
            Mode::WorkspaceWrite,
            &rule("fs.read", Some("**/.env"), "ask"),
            "",
        ),
        ApprovalAnswer::AllowOnce,
        "read_other",
        json!({"path": "pub/a.txt", "other": "b.txt"}),
    )
    .await;
    let ToolResult::Ok { output, .. } = &called.result else {
        panic!("{:?}", called.result);
    };
    assert_eq!(called.asked.len(), 1, "{:?}", called.asked);
    assert_eq!(output["ok"], false, "{output}");
    assert!(output.get("content").is_none(), "{output}");
    // The file beside the judged one, in the directory judged as a whole (allowed by the
    // mode), is read.
    let called = through_chokepoint(
        &root,
        layered(Mode::WorkspaceWrite, "", ""),
        ApprovalAnswer::Deny,
        "read_other",
        json!({"path": "pub/a.txt", "other": "pub/b.txt"}),
    )
    .await;
    let ToolResult::Ok { output, .. } = &called.result else {
        panic!("{:?}", called.result);
    };
    assert_eq!(output["ok"], true, "{output}");
}
