//! Files of the workspace that someone else wrote, planted where Bosun reads: a FIFO answers
//! an error without waiting for a writer, a link to a file outside is not read.

use std::path::{Path, PathBuf};

use bosun_agent::run::system_prompt;
use bosun_agent::subagent::agent_files;
use bosun_fsio::testing::{plant_fifo, plant_link, returns_within_guard};

const SECRET: &str = "the secret outside the workspace";

/// A workspace and a home, and a secret file outside both.
fn places() -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&ws).unwrap();
    let secret = dir.path().join("secret.txt");
    std::fs::write(&secret, SECRET).unwrap();
    (dir, home, ws, secret)
}

fn prompt_of(home: &Path, ws: &Path, fifo: &Path) -> (String, Vec<String>) {
    let (home, ws) = (home.to_owned(), ws.to_owned());
    returns_within_guard(fifo, move || {
        let (prompt, warnings) = system_prompt(&home, &ws, true, &[]);
        (prompt.text, warnings)
    })
}

#[test]
fn a_fifo_as_the_workspaces_agents_md_is_left_out_without_waiting() {
    let (_dir, home, ws, _) = places();
    let fifo = ws.join("AGENTS.md");
    plant_fifo(&fifo);
    let (_, warnings) = prompt_of(&home, &ws, &fifo);
    assert!(
        warnings.iter().any(|w| w.contains("a FIFO")),
        "{warnings:?}"
    );
}

#[test]
fn a_link_as_the_workspaces_agents_md_to_a_file_outside_is_not_read() {
    let (_dir, home, ws, secret) = places();
    plant_link(&ws.join("AGENTS.md"), &secret);
    let (text, warnings) = prompt_of(&home, &ws, &ws.join("AGENTS.md"));
    assert!(!text.contains(SECRET), "the prompt holds the file outside");
    assert!(
        warnings.iter().any(|w| w.contains("a symbolic link")),
        "{warnings:?}"
    );
    // The user's own AGENTS.md may be a link (a dotfiles checkout): it is still read.
    let own = home.join("dotfiles-agents.md");
    std::fs::write(&own, "Prefer small commits.").unwrap();
    plant_link(&home.join("AGENTS.md"), &own);
    let (text, _) = prompt_of(&home, &ws, &ws.join("AGENTS.md"));
    assert!(text.contains("Prefer small commits."));
}

#[test]
fn a_fifo_as_the_workspaces_git_head_does_not_hold_up_the_prompt() {
    let (_dir, home, ws, _) = places();
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    let fifo = ws.join(".git/HEAD");
    plant_fifo(&fifo);
    let (text, _) = prompt_of(&home, &ws, &fifo);
    assert!(!text.contains("- Git:"), "{text}");
}

#[test]
fn a_fifo_as_a_project_agent_file_is_left_out_without_waiting() {
    let (_dir, _home, ws, _) = places();
    let agents = ws.join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    let fifo = agents.join("checker.md");
    plant_fifo(&fifo);
    let reading = agents.clone();
    let (specs, warnings) = returns_within_guard(&fifo, move || agent_files(&reading, true));
    assert!(specs.is_empty());
    assert!(
        warnings.iter().any(|w| w.contains("not a regular file")),
        "{warnings:?}"
    );
}
