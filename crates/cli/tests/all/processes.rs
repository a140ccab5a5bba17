//! Processes Bosun starts end with the command that started it: a stdio MCP server that ignores
//! the end of its input and SIGTERM, and the grandchild it leaves, are gone when `bosun tools
//! call` returns, and so is their private TMPDIR.

use std::path::{Path, PathBuf};

use super::serve::{peer_sandbox, python};
use super::{Env, code, json, stderr};

fn lingering_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/peers/mcp_lingering.py")
}

/// Whether `pid` still runs (a zombie waiting to be reaped does not).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z') && !rest.starts_with('X'))
    })
}

/// The pids and TMPDIRs the server and its grandchild wrote.
fn noted(workspace: &Path) -> Vec<(u32, String)> {
    std::fs::read_to_string(workspace.join("lingering.txt"))
        .unwrap_or_default()
        .lines()
        .filter_map(|line| {
            let (pid, tmp) = line.split_once(' ')?;
            Some((pid.parse().ok()?, tmp.to_owned()))
        })
        .collect()
}

#[test]
fn a_stdio_server_and_what_it_leaves_end_with_the_command() {
    let env = Env::new();
    env.user_config(&format!(
        "[mcp.linger]\ncommand = {:?}\nargs = [{:?}]\n{}",
        python().display().to_string(),
        lingering_script().display().to_string(),
        peer_sandbox("linger")
    ));
    let out = env.bosun(&["mcp", "trust", "linger", "--yes"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let workspace = env.dir.path().join("ws");
    // Reviewing it started it once: that process is gone too.
    for (pid, _) in noted(&workspace) {
        assert!(
            !running(pid),
            "the server `mcp trust` started still runs: {pid}"
        );
    }
    std::fs::remove_file(workspace.join("lingering.txt")).unwrap_or_else(|e| panic!("{e}"));

    let out = env.bosun(&[
        "tools",
        "call",
        "mcp__linger__ping",
        "{}",
        "--json",
        "--yes",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(json(&out).to_string().contains("pong"), "{}", json(&out));
    let noted = noted(&workspace);
    assert_eq!(
        noted.len(),
        2,
        "the server and its grandchild say who they are: {noted:?}"
    );
    for (pid, tmp) in &noted {
        assert!(!running(*pid), "process {pid} outlived `bosun tools call`");
        assert!(
            tmp.contains("bosun-run-") && !Path::new(tmp).exists(),
            "its private TMPDIR {tmp} is left behind"
        );
    }
    // And nothing beats on after it.
    let beats = |pid: u32| {
        std::fs::metadata(workspace.join(format!("heartbeat-{pid}")))
            .and_then(|m| m.modified())
            .ok()
    };
    let before: Vec<_> = noted.iter().map(|(pid, _)| beats(*pid)).collect();
    std::thread::sleep(std::time::Duration::from_millis(400));
    let after: Vec<_> = noted.iter().map(|(pid, _)| beats(*pid)).collect();
    assert_eq!(
        before, after,
        "a heartbeat went on after the command returned"
    );
}
