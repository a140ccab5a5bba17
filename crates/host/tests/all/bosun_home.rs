//! Bosun's own home inside the workspace (run in `$HOME`, the default `~/.bosun` is a workspace
//! folder): it holds signed-in servers' tokens and plugins' secrets, so no tool of the host reads,
//! lists, searches, writes or — through the OS sandbox — runs a program that reads it.
//!
//! Enforcement: `Workspace::withholding` (set by `Host::assemble`), checked by
//! `Workspace::resolve`, `Workspace::resolve_new` and the built-in tools' walk; and
//! `bosun_launch`'s `private_masks`, which covers the home with an empty directory in a child's
//! mount namespace.

use std::sync::Arc;

use async_trait::async_trait;
use bosun_core::{ApprovalAnswer, Redactor, ToolResult};
use bosun_host::{ApprovalBroker, ApprovalRequest, Host, Session, ToolCall, Trace};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const TOKEN: &str = "gho_home-token-5f1e";

struct Allow;

#[async_trait]
impl ApprovalBroker for Allow {
    async fn ask(&self, _request: &ApprovalRequest) -> ApprovalAnswer {
        ApprovalAnswer::AllowOnce
    }
}

/// A workspace whose `.bosun` is Bosun's home, holding a stored token, and a plain workspace file
/// holding the same token (so a read that works is told apart from one that is refused).
fn workspace_holding_the_home() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    let home = ws.join(".bosun");
    std::fs::create_dir_all(home.join("mcp-credentials")).unwrap();
    std::fs::write(
        home.join("mcp-credentials/gh.json"),
        format!("{{\"access_token\": \"{TOKEN}\"}}"),
    )
    .unwrap();
    std::fs::write(ws.join("notes.txt"), format!("plain {TOKEN}\n")).unwrap();
    // A link in the workspace that leads into the home.
    std::os::unix::fs::symlink(home.join("mcp-credentials"), ws.join("creds")).unwrap();
    (dir, ws)
}

async fn call(host: &Host, trace: &Trace, tool: &str, input: Value) -> ToolResult {
    let chokepoint = host.chokepoint(Arc::new(Allow)).unwrap();
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
}

fn text(result: &ToolResult) -> String {
    serde_json::to_string(result).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn no_tool_reads_lists_searches_or_writes_bosuns_home_inside_the_workspace() {
    let (_dir, ws) = workspace_holding_the_home();
    let host = Host::builder()
        .workspace_of(&ws)
        .home(&ws.join(".bosun"))
        .without_plugins()
        .build()
        .unwrap();
    let runs = tempfile::tempdir().unwrap();
    let trace =
        Trace::create(runs.path(), "t".into(), None, Arc::new(Redactor::default())).unwrap();

    // The plain workspace file is read: the tools work here.
    let plain = call(&host, &trace, "read_file", json!({"path": "notes.txt"})).await;
    assert!(text(&plain).contains(TOKEN), "{}", text(&plain));

    for path in [
        ".bosun/mcp-credentials/gh.json",
        ".bosun/../.bosun/mcp-credentials/gh.json",
        "creds/gh.json",
        &format!("{}/.bosun/mcp-credentials/gh.json", ws.display()),
        ".BOSUN/mcp-credentials/gh.json",
    ] {
        let read = call(&host, &trace, "read_file", json!({"path": path})).await;
        assert!(!text(&read).contains(TOKEN), "{path}: {}", text(&read));
        assert!(read.error().is_some(), "{path}: {}", text(&read));
    }
    let refused = call(
        &host,
        &trace,
        "read_file",
        json!({"path": ".bosun/mcp-credentials/gh.json"}),
    )
    .await;
    assert!(text(&refused).contains("BOSUN_HOME"), "{}", text(&refused));

    let listed = call(
        &host,
        &trace,
        "list_files",
        json!({"path": ".", "depth": 5}),
    )
    .await;
    assert!(text(&listed).contains("notes.txt"), "{}", text(&listed));
    assert!(!text(&listed).contains("gh.json"), "{}", text(&listed));
    let listed_home = call(&host, &trace, "list_files", json!({"path": ".bosun"})).await;
    assert!(listed_home.error().is_some(), "{}", text(&listed_home));

    let found = call(&host, &trace, "search", json!({"query": "gho_home"})).await;
    assert!(text(&found).contains("notes.txt"), "{}", text(&found));
    assert!(!text(&found).contains("gh.json"), "{}", text(&found));

    for (tool, input) in [
        (
            "create_file",
            json!({"path": ".bosun/config.toml", "content": "mode = \"full\"\n"}),
        ),
        (
            "create_file",
            json!({"path": ".bosun/new/x.txt", "content": "x"}),
        ),
    ] {
        let wrote = call(&host, &trace, tool, input.clone()).await;
        assert!(wrote.error().is_some(), "{tool} {input}: {}", text(&wrote));
    }
    assert!(!ws.join(".bosun/config.toml").exists());
    assert!(!ws.join(".bosun/new").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_command_finds_bosuns_home_inside_the_workspace_empty() {
    let (_dir, ws) = workspace_holding_the_home();
    let host = Host::builder()
        .workspace_of(&ws)
        .home(&ws.join(".bosun"))
        .without_plugins()
        .build()
        .unwrap();
    let runs = tempfile::tempdir().unwrap();
    let trace =
        Trace::create(runs.path(), "t".into(), None, Arc::new(Redactor::default())).unwrap();
    let ran = call(
        &host,
        &trace,
        "run_command",
        json!({"program": "sh", "args": ["-c", "cat notes.txt; cat .bosun/mcp-credentials/gh.json; ls -A .bosun; echo done"]}),
    )
    .await;
    let shown = text(&ran);
    // The command ran and read the plain file; the home was an empty folder to it.
    assert!(shown.contains("done"), "{shown}");
    assert!(shown.contains(&format!("plain {TOKEN}")), "{shown}");
    assert_eq!(shown.matches(TOKEN).count(), 1, "{shown}");
    assert!(!shown.contains("mcp-credentials\\n"), "{shown}");
}
