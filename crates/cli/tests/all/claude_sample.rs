//! A marketplace shaped like a public plugin directory (`claude/tests/fixtures/public-sample`:
//! several plugins by several authors, each using other parts — commands, an agent, a
//! `PreToolUse` hook in Python, a `SessionStart` hook, a skill, an MCP server declared in the
//! marketplace entry (`strict: false`), a language server, a monitor) installed and used end to
//! end in one `bosun run` against the scripted model.

use std::path::{Path, PathBuf};

use bosun_agent::scripted::Step;
use serde_json::{Value, json};

use super::run::{model_config, serve};
use super::{Env, code, stderr};

fn sample() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../claude/tests/fixtures/public-sample")
}

/// The names of the tools a request offered.
fn offered(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn a_public_shaped_marketplace_installs_and_every_part_works_in_one_run() {
    let env = Env::new();
    let (_runtime, server) = serve([
        Step::call(
            "load_skill",
            json!({"id": "skill:plugin:pr-toolkit:describe-pr"}),
        ),
        Step::call("mcp__plugin_greeter_greet__greet", json!({"name": "Ada"})),
        Step::call(
            "create_file",
            json!({"path": "danger.py", "content": "print(eval(input()))\n"}),
        ),
        Step::call(
            "agent_code_review__code_reviewer",
            json!({"task": "Review src/lib.rs"}),
        ),
        // The reviewer, in its own conversation:
        Step::text("No problems in src/lib.rs."),
        // The parent again:
        Step::text("Committed; the review found nothing."),
    ]);
    env.user_config(&format!(
        "{}\n[registries.public]\nkind = \"claude-marketplace\"\npath = \"{}\"\n",
        model_config(&server, ""),
        sample().display()
    ));

    let out = env.bosun(&["plugins", "search", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let listed = String::from_utf8_lossy(&out.stdout).into_owned();
    for name in ["commit-commands", "code-review", "greeter", "log-watcher"] {
        assert!(listed.contains(name), "{name} not listed: {listed}");
    }

    for plugin in [
        "commit-commands",
        "code-review",
        "security-guidance",
        "explanatory-output-style",
        "pr-toolkit",
        "greeter",
        "typescript-lsp",
    ] {
        let out = env.bosun(&["plugins", "install", &format!("{plugin}@public"), "--yes"]);
        assert_eq!(code(&out), 0, "{plugin}: {}", stderr(&out));
        if plugin == "typescript-lsp" {
            assert!(
                stderr(&out).contains("found, not supported: LSP servers"),
                "the language server is reported: {}",
                stderr(&out)
            );
        }
    }
    // A monitor would run unsandboxed for good: refused, nothing installed.
    let out = env.bosun(&["plugins", "install", "log-watcher@public", "--yes"]);
    assert_ne!(code(&out), 0);
    assert!(stderr(&out).contains("monitors"), "{}", stderr(&out));

    let out = env.bosun(&["mcp", "trust", "greeter:greet", "--yes"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));

    let out = env.bosun(&["run", "--yes", "/commit-commands:commit fix the typo"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let requests = server.requests();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "Committed; the review found nothing.",
        "{}\n{requests:#?}",
        stderr(&out)
    );
    assert_eq!(requests.len(), 6, "{requests:#?}");

    // The command's prompt, the SessionStart hook's context and the skill catalogue.
    let first = requests[0].to_string();
    for part in [
        "write a commit with the message \\\"fix the typo\\\"",
        "Explanatory mode: before each change",
        "skill:plugin:pr-toolkit:describe-pr",
    ] {
        assert!(
            first.contains(part),
            "`{part}` not in the first request: {first}"
        );
    }
    let tools = offered(&requests[0]);
    for tool in [
        "agent_code_review__code_reviewer",
        "mcp__plugin_greeter_greet__greet",
        "load_skill",
    ] {
        assert!(
            tools.contains(&tool.to_owned()),
            "{tool} not offered: {tools:?}"
        );
    }
    // The skill's body, loaded.
    assert!(
        requests[1].to_string().contains("a title line and a"),
        "{}",
        requests[1]
    );
    // The MCP server's answer.
    assert!(
        requests[2].to_string().contains("Hello, Ada!"),
        "{}",
        requests[2]
    );
    // The security hook blocked the write, with its reason for the model.
    assert!(
        requests[3]
            .to_string()
            .contains("eval() runs arbitrary code"),
        "{}",
        requests[3]
    );
    assert!(
        !env.ws().join("danger.py").exists(),
        "the hook did not block"
    );
    // The agent ran as a subagent with Read, Grep and Glob only.
    let mut child_tools = offered(&requests[4]);
    child_tools.sort();
    assert_eq!(child_tools, ["list_files", "read_file", "search"]);
    assert!(
        requests[4]
            .to_string()
            .contains("You are a careful reviewer")
    );
}
