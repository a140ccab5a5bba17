//! What a guest finds of the host through WASI: no environment, arguments, stdin, directories
//! or sockets unless granted, and no way out of the granted directory.

use bosun_sandbox::{FsGrant, Grants};
use bosun_test_programs as programs;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::support::{call_json, guest_instance};

fn reads_that_succeeded(report: &Value) -> Vec<String> {
    report["reads"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["ok"] == true)
        .map(|r| r["path"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plugin_without_fs_grant_reads_nothing() {
    let mut guest = guest_instance(programs::READ_OUTSIDE, Grants::default()).await;
    let probe = call_json(&mut guest, "probe", json!({})).await;
    assert_eq!(reads_that_succeeded(&probe), Vec::<String>::new());
    for list in probe["lists"].as_array().unwrap() {
        assert_eq!(list["ok"], false, "{list}");
    }
    let passwd = call_json(&mut guest, "read", json!({"path": "/etc/passwd"})).await;
    assert_eq!(passwd["ok"], false);
    assert!(!probe.to_string().contains("root:"));
}

/// A workspace with one file, a symlink to `/etc`, a symlink to its parent, and a secret in
/// that parent.
fn workspace() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    std::fs::write(ws.join("inside.txt"), "inside").unwrap();
    std::fs::write(dir.path().join("secret.txt"), "secret").unwrap();
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink("/etc", ws.join("link")).unwrap();
        std::os::unix::fs::symlink("..", ws.join("up")).unwrap();
    }
    (dir, ws)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plugin_cannot_escape_the_preopen_by_dotdot_or_symlink() {
    let (_dir, ws) = workspace();
    let grants = Grants {
        fs: vec![FsGrant::workspace(ws.clone(), false)],
        ..Grants::default()
    };
    let mut guest = guest_instance(programs::FS_ESCAPE, grants).await;

    let inside = call_json(&mut guest, "read", json!({"path": "inside.txt"})).await;
    assert_eq!(inside["ok"], true);
    assert_eq!(inside["content"], "inside");

    let escapes = call_json(&mut guest, "read_elsewhere", json!({})).await;
    assert_eq!(reads_that_succeeded(&escapes), Vec::<String>::new());
    for path in [
        "up/secret.txt",
        "../secret.txt",
        "link/passwd",
        "/etc/passwd",
    ] {
        let out = call_json(&mut guest, "read", json!({"path": path})).await;
        assert_eq!(out["ok"], false, "{path}: {out}");
    }

    // Read-only means read-only.
    let write = call_json(&mut guest, "write", json!({"path": "new.txt"})).await;
    assert_eq!(write["ok"], false, "{write}");
    assert!(!ws.join("new.txt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writable_grant_writes_inside_only() {
    let (dir, ws) = workspace();
    let grants = Grants {
        fs: vec![FsGrant::workspace(ws.clone(), true)],
        ..Grants::default()
    };
    let mut guest = guest_instance(programs::FS_ESCAPE, grants).await;
    let write = call_json(&mut guest, "write", json!({"path": "new.txt"})).await;
    assert_eq!(write["ok"], true, "{write}");
    assert_eq!(
        std::fs::read_to_string(ws.join("new.txt")).unwrap(),
        "written by fs-escape"
    );
    for path in ["../escaped.txt", "up/escaped.txt"] {
        let out = call_json(&mut guest, "write", json!({"path": path})).await;
        assert_eq!(out["ok"], false, "{path}: {out}");
    }
    assert!(!dir.path().join("escaped.txt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plugin_sees_no_environment_arguments_stdin_or_directories() {
    // The test process has environment variables: an inheriting context would leak them.
    assert!(std::env::vars().next().is_some());
    let mut guest = guest_instance(programs::AMBIENT_AUTHORITY, Grants::default()).await;
    let env = call_json(&mut guest, "environment", json!({})).await;
    assert_eq!(env["vars"], json!([]));
    assert_eq!(env["args"], json!([]));
    assert_eq!(env["preopens"], json!([]));
    assert_eq!(env["stdin"]["bytes"], json!(""), "{env}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plugin_cannot_open_sockets_or_resolve_names() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let mut guest = guest_instance(programs::AMBIENT_AUTHORITY, Grants::default()).await;

    let tcp = call_json(&mut guest, "tcp_connect", json!({"address": address})).await;
    assert_eq!(tcp["ok"], false, "{tcp}");
    let udp = call_json(&mut guest, "udp_send", json!({"address": address})).await;
    assert_eq!(udp["ok"], false, "{udp}");
    let dns = call_json(&mut guest, "resolve", json!({"address": "localhost:80"})).await;
    assert_eq!(dns["ok"], false, "{dns}");

    // Nothing reached the listener.
    let accepted =
        tokio::time::timeout(std::time::Duration::from_millis(50), listener.accept()).await;
    assert!(accepted.is_err(), "the guest connected");
}
