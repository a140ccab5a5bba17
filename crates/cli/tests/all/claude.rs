//! Claude Code plugins through the binary: a marketplace folder configured as a
//! `claude-marketplace` registry, listed by `plugins search`, installed by
//! `plugins install NAME@MARKETPLACE` after a review of every part that runs code.

use std::path::{Path, PathBuf};

use super::{Env, code, json, stderr};

fn fixture_marketplace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../claude/tests/fixtures/marketplace")
}

fn configure(env: &Env) {
    env.user_config(&format!(
        "[registries.fixtures]\nkind = \"claude-marketplace\"\npath = \"{}\"\n",
        fixture_marketplace().display()
    ));
}

#[test]
fn a_claude_marketplace_is_searched_and_its_plugin_installed_after_review() {
    let env = Env::new();
    configure(&env);
    let out = env.bosun(&["plugins", "search", "rm", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let results = json(&out)["results"].clone();
    assert_eq!(results[0]["name"], "toolbox");
    assert_eq!(results[0]["source"], "fixtures");
    assert_eq!(results[0]["claims"]["format"], "claude");

    // No terminal and no --yes: the review is shown and nothing is installed.
    let out = env.bosun(&["plugins", "install", "toolbox@fixtures"]);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    let review = stderr(&out);
    assert!(review.contains("hook PreToolUse Bash"), "{review}");
    assert!(review.contains("mcp server toolbox:echo"), "{review}");
    assert!(review.contains("bin toolbox-helper"), "{review}");
    assert!(!env.home().join("claude/installed.json").exists());

    let out = env.bosun(&["plugins", "install", "toolbox@fixtures", "--yes", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let record = json(&out)["installed"].clone();
    assert_eq!(record["id"], "toolbox@fixtures");
    let digest = record["digest"].as_str().unwrap().to_owned();
    assert!(env.home().join("claude/cache").join(&digest).is_dir());
    let out = env.bosun(&["plugins", "install", "toolbox@fixtures", "--yes"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("installed already with the same content")
    );
}
