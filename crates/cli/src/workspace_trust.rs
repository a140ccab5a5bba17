//! The workspace question of the terminal faces (`bosun` and `bosun run` on a terminal): the
//! first time Bosun runs in a folder it asks whether to trust it, and remembers the answer
//! through `bosun_host::workspace_trust`. `--trust-workspace` answers yes without asking.
//!
//! Never asks without a terminal on stdin and stderr: a pipe, a CI job or an editor never
//! waits on a question; the folder stays "not asked", where the project may only tighten.

use std::io::{BufRead, IsTerminal, Write};

use anyhow::{Context, Result};
use bosun_host::workspace_trust::{self, WorkspaceTrust};

use crate::env::Env;
use crate::term::{err, errln};

/// What to run to trust a folder later.
pub const TRUST_COMMAND: &str = "bosun --trust-workspace";

/// What the person answered on the terminal.
enum Answer {
    Yes,
    No,
    /// The input ended before an answer.
    None,
}

fn ask(env: &Env) -> Result<Answer> {
    let root = env.workspace.root();
    errln!("Bosun has not run in {} before.", root.display());
    for concern in workspace_trust::concerns(root) {
        let label = if concern.is_grave() {
            "WARNING"
        } else {
            "note"
        };
        errln!("  {label}: {}", concern.warning());
    }
    errln!(
        "A trusted folder's own files shape a run: its AGENTS.md is given to the model, its \
         .bosun/config.toml may loosen your policy (never past your deny), and its skills, agents \
         and plugins are offered. In a folder you do not trust Bosun uses your own configuration \
         only, and stays read-only."
    );
    let stdin = std::io::stdin();
    loop {
        err!("Trust the files in this folder? [y/n] ");
        std::io::stderr().flush()?;
        let mut line = String::new();
        if stdin.lock().read_line(&mut line)? == 0 {
            errln!();
            return Ok(Answer::None);
        }
        match line.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" => return Ok(Answer::Yes),
            "n" | "no" => return Ok(Answer::No),
            _ => errln!("answer y or n"),
        }
    }
}

/// Settles the workspace question before a terminal face starts: with `trust` (the
/// `--trust-workspace` flag) records a yes; otherwise, on a terminal, asks about a folder not
/// answered for yet. Returns the environment reloaded when an answer was recorded.
pub fn settle(env: Env, trust: bool) -> Result<Env> {
    let state = env.config.workspace_trust;
    let answer = if trust {
        if state == WorkspaceTrust::Trusted && env.config.trusted {
            return Ok(env);
        }
        Answer::Yes
    } else if state != WorkspaceTrust::Unasked {
        return Ok(env);
    } else if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        // Nobody to ask: said once per run where it matters most, never waited on.
        for concern in workspace_trust::concerns(env.workspace.root()) {
            if concern.is_grave() {
                errln!("warning: {}", concern.warning());
            }
        }
        return Ok(env);
    } else {
        ask(&env)?
    };
    let trusted = match answer {
        Answer::Yes => true,
        Answer::No => false,
        Answer::None => {
            errln!(
                "No answer: nothing remembered; this folder's config may only tighten your policy this time."
            );
            return Ok(env);
        }
    };
    let root = env.workspace.root();
    let file = workspace_trust::record(&env.config.home, root, trusted)
        .context("remembering the answer about this folder")?;
    if trusted {
        errln!(
            "Trusted {} (remembered in {}).",
            root.display(),
            file.display()
        );
    } else {
        errln!(
            "Not trusted: Bosun uses your own configuration only and stays read-only in {}. To trust it later: {TRUST_COMMAND}.",
            root.display()
        );
    }
    let home = env.config.home.clone();
    crate::env::load_in(env.workspace.cwd(), &home)
}
