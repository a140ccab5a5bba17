//! The input history, kept per workspace in `$BOSUN_HOME/history/`: what the prompt's Up and
//! Down walk through. It stores what the person typed and never what a model wrote.
use std::io::Write as _;
use std::path::PathBuf;

use crate::env::Env;

/// Most inputs kept on disk per workspace.
const KEPT: usize = 500;

fn file(env: &Env) -> PathBuf {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(env.workspace.root().as_os_str().as_encoded_bytes());
    let name: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    env.config
        .home
        .join("history")
        .join(format!("{name}.jsonl"))
}

/// This workspace's inputs, oldest first (an unreadable file is an empty history).
pub(super) fn load(env: &Env) -> Vec<String> {
    // Not through a link planted in its place (the appends refuse one too).
    let Ok(Some(text)) = bosun_fsio::read_state_text(&file(env)) else {
        return Vec::new();
    };
    let lines: Vec<String> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<String>(l).ok())
        .collect();
    let skip = lines.len().saturating_sub(KEPT);
    lines.into_iter().skip(skip).collect()
}

/// Adds `input` (best effort: a history that cannot be written is not worth an error).
pub(super) fn append(env: &Env, input: &str) {
    let path = file(env);
    if let Some(dir) = path.parent() {
        let _ = bosun_host::trace::create_private_dir(dir);
    }
    let Ok(line) = serde_json::to_string(input) else {
        return;
    };
    // Not through a link planted in the file's place: what the person typed goes to this file
    // only.
    if let Ok(mut f) = bosun_fsio::open_append(&path, 0o600) {
        let _ = writeln!(f, "{line}");
    }
    // Keep it bounded: rewrite with the newest inputs once it has grown well past the bound.
    if std::fs::metadata(&path).is_ok_and(|m| m.len() > 1 << 20) {
        let kept = load(env);
        let text: String = kept
            .iter()
            .filter_map(|l| serde_json::to_string(l).ok())
            .map(|l| l + "\n")
            .collect();
        let _ = bosun_host::write_atomic(&path, text.as_bytes());
    }
}
