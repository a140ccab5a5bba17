//! The machine's managed policy (`requirements.toml`, named here by `BOSUN_MANAGED_CONFIG`)
//! against every way a plugin reaches the binary: a project's plugin folder (and what
//! `bosun serve` offers from it), a folder a person installs, a registry install, a Claude Code
//! marketplace install and every later load of one. Each case shows the plugin working without
//! the managed file and refused with it, naming the managed rule's `file:line`.

use serde_json::json;

use super::claude::hook_marketplace;
use super::registry::{ok, plugin_dirs, signed_catalog};
use super::serve::{is_error, peer, stdio_plan, text_of};
use super::{Env, code, json, stderr, tool_names};

/// Writes the managed file and returns its path and the `file:line` of the line holding each
/// needle asked for.
fn managed(env: &Env, text: &str) -> String {
    let path = env.dir.path().join("requirements.toml");
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

fn at(path: &str, text: &str, needle: &str) -> String {
    let line = text.lines().position(|l| l.contains(needle)).unwrap() + 1;
    format!("{path}:{line}")
}

const ALLOWED_HOME: &str = "# the machine's plugins\n[plugins]\nallowed_dirs = [\"$BOSUN_HOME/plugins\"]\nblocked = [\"weather\", \"toolbox\", \"gate\"]\n";

#[test]
fn a_project_plugin_outside_the_managed_dirs_is_offered_by_no_face() {
    let env = Env::new();
    let target = env.ws().join(".bosun/plugins/greeter");
    std::fs::create_dir_all(&target).unwrap();
    std::fs::copy(bosun_test_programs::HELLO, target.join("plugin.wasm")).unwrap();
    ok(&env.bosun(&["plugins", "trust", "--yes"]));
    assert!(tool_names(&env).contains(&"greet".to_owned()));

    let path = managed(&env, ALLOWED_HOME);
    let rule = at(&path, ALLOWED_HOME, "allowed_dirs");
    let with = [("BOSUN_MANAGED_CONFIG", path.as_str())];
    let listed = env.bosun_with_env(&["tools", "list", "--json"], &with);
    ok(&listed);
    assert!(
        !listed.stdout.is_empty() && !String::from_utf8_lossy(&listed.stdout).contains("\"greet\""),
        "{}",
        String::from_utf8_lossy(&listed.stdout)
    );
    let plugins = env.bosun_with_env(&["plugins", "list", "--json"], &with);
    ok(&plugins);
    let entry = json(&plugins)["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["local_name"] == "greeter")
        .cloned()
        .unwrap();
    assert_eq!(entry["state"], "invalid", "{entry}");
    assert!(entry["reason"].as_str().unwrap().contains(&rule), "{entry}");
    let called = env.bosun_with_env(
        &[
            "tools",
            "call",
            "greet",
            r#"{"name": "x"}"#,
            "--json",
            "--yes",
        ],
        &with,
    );
    assert_ne!(
        code(&called),
        0,
        "{}",
        String::from_utf8_lossy(&called.stdout)
    );

    // `bosun serve` offers what the host offers: not the refused plugin.
    let mut plan = stdio_plan(
        &env,
        "auto",
        None,
        json!([{"name": "greet", "arguments": {"name": "Ada"}}]),
    );
    plan["stdio"]["env"]["BOSUN_MANAGED_CONFIG"] = json!(path);
    let out = peer(&plan);
    let names: Vec<&str> = out["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        names.contains(&"read_file") && !names.contains(&"greet"),
        "{names:?}"
    );
    let call = &out["calls"][0];
    assert!(
        is_error(call) || call["raised"].is_string(),
        "the refused plugin's tool ran: {call}"
    );
    assert!(!text_of(call).contains("Hello, Ada"), "{call}");
    // Without the managed file the server offers and runs it.
    plan["stdio"]["env"]
        .as_object_mut()
        .unwrap()
        .remove("BOSUN_MANAGED_CONFIG");
    let out = peer(&plan);
    assert_eq!(
        out["calls"][0]["structuredContent"]["message"], "Hello, Ada!",
        "{out}"
    );
}

#[test]
fn a_plugin_folder_from_outside_the_managed_dirs_is_not_copied_in() {
    let env = Env::new();
    let folder = env.dir.path().join("downloads/hello");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::copy(bosun_test_programs::HELLO, folder.join("plugin.wasm")).unwrap();
    let path = managed(&env, ALLOWED_HOME);
    let rule = at(&path, ALLOWED_HOME, "allowed_dirs");
    for args in [
        vec!["plugins", "install", folder.to_str().unwrap(), "--yes"],
        vec![
            "plugins",
            "install",
            folder.to_str().unwrap(),
            "--link",
            "--yes",
        ],
    ] {
        let out = env.bosun_with_env(&args, &[("BOSUN_MANAGED_CONFIG", &path)]);
        assert_ne!(code(&out), 0, "{args:?}");
        assert!(stderr(&out).contains(&rule), "{args:?}: {}", stderr(&out));
        assert_eq!(plugin_dirs(&env), Vec::<String>::new(), "{args:?}");
        assert!(
            !env.home().join("config.toml").exists()
                || !std::fs::read_to_string(env.home().join("config.toml"))
                    .unwrap()
                    .contains("hello")
        );
    }
    // Without the managed file the same folder installs.
    ok(&env.bosun(&["plugins", "install", folder.to_str().unwrap(), "--yes"]));
    assert_eq!(plugin_dirs(&env), vec!["hello".to_owned()]);
}

#[test]
fn a_registry_install_of_a_blocked_plugin_fetches_nothing() {
    let env = Env::new();
    signed_catalog(&env);
    ok(&env.bosun(&["registry", "trust", "corp", "--yes"]));
    let path = managed(&env, ALLOWED_HOME);
    let rule = at(&path, ALLOWED_HOME, "blocked");
    let out = env.bosun_with_env(
        &["plugins", "install", "weather", "--from", "corp", "--yes"],
        &[("BOSUN_MANAGED_CONFIG", &path)],
    );
    assert_ne!(code(&out), 0);
    assert!(stderr(&out).contains(&rule), "{}", stderr(&out));
    assert_eq!(plugin_dirs(&env), Vec::<String>::new());
    ok(&env.bosun(&["plugins", "install", "weather", "--from", "corp", "--yes"]));
    assert_eq!(plugin_dirs(&env), vec!["weather".to_owned()]);
}

#[test]
fn a_claude_plugin_the_managed_policy_blocks_is_not_installed_and_stops_loading() {
    let env = Env::new();
    let market = env.dir.path().join("market");
    // A PreToolUse hook that refuses every call: while it is loaded nothing runs.
    hook_marketplace(
        &market,
        "gate",
        "echo 'the gate plugin refuses every call' >&2; exit 2",
    );
    env.user_config(&format!(
        "[registries.local]\nkind = \"claude-marketplace\"\npath = \"{}\"\n",
        market.display()
    ));
    let path = managed(&env, ALLOWED_HOME);
    let rule = at(&path, ALLOWED_HOME, "blocked");
    let with = [("BOSUN_MANAGED_CONFIG", path.as_str())];
    let out = env.bosun_with_env(&["plugins", "install", "gate@local", "--yes"], &with);
    assert_ne!(code(&out), 0);
    assert!(stderr(&out).contains(&rule), "{}", stderr(&out));
    assert!(!env.home().join("claude/installed.json").exists());

    // Installed before the rule was written: its hook holds while unmanaged...
    ok(&env.bosun(&["plugins", "install", "gate@local", "--yes"]));
    let read = [
        "tools",
        "call",
        "read_file",
        r#"{"path": "src/lib.rs"}"#,
        "--json",
    ];
    let gated = env.bosun(&read);
    assert_ne!(
        code(&gated),
        0,
        "{}",
        String::from_utf8_lossy(&gated.stdout)
    );
    // ...and under the managed file the plugin is not loaded, naming the rule.
    let free = env.bosun_with_env(&read, &with);
    assert_eq!(code(&free), 0, "{}", stderr(&free));
    let doctor = env.bosun_with_env(&["tools", "list"], &with);
    assert!(
        stderr(&doctor).contains(&rule) || stderr(&free).contains(&rule),
        "{}\n{}",
        stderr(&doctor),
        stderr(&free)
    );
}
