//! Subagents through the real binary against a scripted model on loopback: Forge's
//! code-review-subagent shape, a child that reads a file and returns; what a child may not do
//! (a tool its parent is denied, a tool it did not declare, nesting); budgets drawn from the
//! parent's; two children at once; agent files.

use bosun_agent::scripted::{ScriptedCall, Step};
use bosun_core::Envelope;
use bosun_host::trace::read_run;
use serde_json::{Value, json};

use super::run::{model_config, serve};
use super::{Env, code, stderr};

const REVIEW_PLUGIN: &str = r#"export default function activate(api) {
  api.registerSubagent({
    name: "code-reviewer",
    toolName: "delegate_code_review",
    description: "Delegate a focused, read-only review of part of the workspace.",
    instructions: "You review code. Report concrete findings with file and line.",
    tools: ["list_files", "read_file", "search"],
    limits: { maxModelSteps: 3, maxToolCalls: 6 },
  });
}
"#;

fn review_plugin(env: &Env) {
    let dir = env.home().join("plugins/code-review");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("plugin.json"),
        r#"{"schemaVersion": 1, "apiVersion": "1", "name": "code-review", "version": "1.0.0", "entry": "./index.mjs", "capabilities": ["subagents:register"]}"#,
    )
    .unwrap();
    std::fs::write(dir.join("index.mjs"), REVIEW_PLUGIN).unwrap();
    let out = env.bosun(&[
        "plugins",
        "enable",
        "code-review",
        "--path",
        "code-review",
        "--yes",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

/// The runs of `$BOSUN_HOME/runs`, each as its envelopes.
fn envelopes(env: &Env) -> Vec<Vec<Envelope>> {
    std::fs::read_dir(env.home().join("runs"))
        .unwrap()
        .map(|entry| read_run(&entry.unwrap().path()).unwrap())
        .collect()
}

/// The runs of `$BOSUN_HOME/runs`, each as (its events, its parent run).
fn runs(env: &Env) -> Vec<(Vec<Value>, Option<String>)> {
    envelopes(env)
        .into_iter()
        .map(|envelopes| {
            let parent = envelopes.first().and_then(|e| e.parent_run_id.clone());
            let events = envelopes
                .iter()
                .map(|e| serde_json::to_value(&e.event).unwrap())
                .collect();
            (events, parent)
        })
        .collect()
}

fn started_by(events: &[Value]) -> String {
    events
        .iter()
        .find(|e| e["type"] == "run.started")
        .and_then(|e| e["command"].as_str())
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn a_forge_subagent_reads_a_file_in_its_own_run_and_reports_back() {
    let env = Env::new();
    review_plugin(&env);
    let (_runtime, server) = serve([
        Step::call("delegate_code_review", json!({"task": "Review src/lib.rs"})),
        // The child, in its own conversation:
        Step::call("read_file", json!({"path": "src/lib.rs"})),
        Step::text("src/lib.rs:1 answer() returns 42; fine."),
        // The parent again:
        Step::text("The reviewer found nothing wrong."),
    ]);
    env.user_config(&format!(
        "{}\n[plugins.code-review]\npath = \"code-review\"\n",
        model_config(&server, "")
    ));
    let out = env.bosun(&["run", "--yes", "Review the code"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "The reviewer found nothing wrong."
    );
    // The child's request held only its instructions, its task and its three tools.
    let requests = server.requests();
    let child = &requests[1];
    let tools: Vec<&str> = child["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert_eq!(tools, ["list_files", "read_file", "search"]);
    let child_text = child.to_string();
    assert!(
        child_text.contains("Subagent instructions from plugin code-review"),
        "{child_text}"
    );
    assert!(child_text.contains("Review src/lib.rs"));
    assert!(
        !child_text.contains("Review the code"),
        "the child sees nothing of the parent's conversation"
    );

    // Two traces: the child's names the parent run and the subagent.
    let runs = runs(&env);
    assert_eq!(runs.len(), 2, "{runs:?}");
    // `inspect last` is the run the person started, not its subagent's (which started later).
    let out = env.bosun(&["inspect", "last", "--json"]);
    let first: Value = serde_json::from_str(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .next()
            .unwrap_or("{}"),
    )
    .unwrap();
    assert!(first.get("parent_run_id").is_none(), "{first}");
    assert_eq!(first["event"]["command"], "run", "{first}");
    let (child, parent) = runs.iter().partition::<Vec<_>, _>(|(_, p)| p.is_some());
    let (child_events, child_parent) = &child[0];
    assert_eq!(started_by(child_events), "subagent code-reviewer");
    assert!(
        child_events
            .iter()
            .any(|e| e["type"] == "tool.completed" && e["tool"] == "read_file")
    );
    let (parent_events, _) = &parent[0];
    let result = parent_events
        .iter()
        .find(|e| e["type"] == "tool.completed" && e["tool"] == "delegate_code_review")
        .unwrap();
    assert_eq!(result["output"]["status"], "completed");
    assert_eq!(
        result["output"]["finalText"],
        "src/lib.rs:1 answer() returns 42; fine."
    );
    assert_eq!(result["output"]["modelSteps"], 2);
    assert_eq!(result["output"]["toolCalls"], 1);
    // The result names the child's run, and the child's trace names the parent's.
    let child_run = envelopes(&env)
        .into_iter()
        .find(|e| e[0].parent_run_id.is_some())
        .unwrap();
    assert_eq!(result["output"]["runId"], child_run[0].run_id.as_str());
    let parent_run = envelopes(&env)
        .into_iter()
        .find(|e| e[0].parent_run_id.is_none())
        .unwrap();
    assert_eq!(child_parent.as_deref(), Some(parent_run[0].run_id.as_str()));

    // `bosun inspect` of the parent names the child, which opens like any run.
    let out = env.bosun(&["inspect", &parent_run[0].run_id]);
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains("children"), "{shown}");
    assert!(
        shown.contains(&format!("{}  subagent code-reviewer", child_run[0].run_id)),
        "{shown}"
    );
    let out = env.bosun(&["inspect", &child_run[0].run_id]);
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains(&format!("parent run {}", parent_run[0].run_id)),
        "{shown}"
    );
}

#[test]
fn a_child_cannot_do_what_its_parent_may_not_nor_call_an_undeclared_tool() {
    let env = Env::new();
    review_plugin(&env);
    let (_runtime, server) = serve([
        Step::call("delegate_code_review", json!({"task": "Look around"})),
        // The child tries a tool the parent's policy denies, then one it never declared.
        Step::call("read_file", json!({"path": "src/lib.rs"})),
        Step::call("run_command", json!({"program": "true"})),
        Step::text("I could not."),
        Step::text("Done."),
    ]);
    let rules = "[[policy.rules]]\naction = \"builtin.tool.read_file\"\ndecision = \"deny\"\n";
    env.user_config(&format!(
        "{}\n{rules}\n[plugins.code-review]\npath = \"code-review\"\n",
        model_config(&server, "")
    ));
    let out = env.bosun(&["run", "--yes", "Review"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let runs = runs(&env);
    let (child_events, _) = runs.iter().find(|(_, p)| p.is_some()).unwrap();
    let failed: Vec<(&str, &str)> = child_events
        .iter()
        .filter(|e| e["type"] == "tool.failed")
        .map(|e| {
            (
                e["tool"].as_str().unwrap(),
                e["error"]["code"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        failed,
        [("read_file", "denied"), ("run_command", "unknown_tool")]
    );
    assert!(
        !child_events.iter().any(|e| e["type"] == "tool.started"),
        "nothing ran in the child: {child_events:?}"
    );
}

#[test]
fn two_children_run_at_once_and_draw_from_the_parents_budget() {
    let env = Env::new();
    review_plugin(&env);
    // Each child answers slowly, so the two overlap only if they run concurrently.
    let slow = Step {
        delay_ms: 150,
        ..Step::text("child answer, streamed slowly")
    };
    let (_runtime, server) = serve([
        Step {
            tool_calls: vec![
                ScriptedCall {
                    name: "delegate_code_review".into(),
                    arguments: json!({"task": "first half"}),
                    id: None,
                },
                ScriptedCall {
                    name: "delegate_code_review".into(),
                    arguments: json!({"task": "second half"}),
                    id: None,
                },
            ],
            ..Step::default()
        },
        slow.clone(),
        slow,
        Step::text("Both done."),
    ]);
    env.user_config(&format!(
        "{}\n[plugins.code-review]\npath = \"code-review\"\n",
        model_config(&server, "")
    ));
    let out = env.bosun(&["run", "--yes", "Review both halves"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let children: Vec<Vec<Envelope>> = envelopes(&env)
        .into_iter()
        .filter(|e| e[0].parent_run_id.is_some())
        .collect();
    assert_eq!(children.len(), 2);
    let when = |run: &[Envelope], kind: &str| {
        run.iter()
            .find(|e| serde_json::to_value(&e.event).unwrap()["type"] == kind)
            .map(|e| e.timestamp)
            .unwrap()
    };
    // Each child started before the other finished: they ran at the same time.
    assert!(when(&children[0], "run.started") < when(&children[1], "run.finished"));
    assert!(when(&children[1], "run.started") < when(&children[0], "run.finished"));
    // Every step and call of the children came out of the parent's pool: the parent's two
    // delegate calls and its two steps, the children's one step each.
    let parent = envelopes(&env)
        .into_iter()
        .find(|e| e[0].parent_run_id.is_none())
        .unwrap();
    let completed = parent
        .iter()
        .filter(|e| serde_json::to_value(&e.event).unwrap()["type"] == "tool.completed")
        .count();
    assert_eq!(completed, 2);
}

#[test]
fn a_subagent_naming_unknown_or_nested_tools_is_not_offered() {
    let env = Env::new();
    let dir = env.home().join("agents");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("helper.md"),
        "---\nname: helper\ndescription: Reads files.\ntools: read_file, teleport\n---\nRead what you are asked to.\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("nester.md"),
        "---\nname: nester\ndescription: Delegates.\ntools: [agent_reader]\n---\nDelegate.\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("reader.md"),
        "---\nname: reader\ndescription: Reads files.\ntools:\n  - read_file\n  - list_files\nmax_steps: 2\n---\nRead.\n",
    )
    .unwrap();
    let (_runtime, server) = serve([
        Step::call("agent_reader", json!({"task": "read src/lib.rs"})),
        Step::call("read_file", json!({"path": "src/lib.rs"})),
        Step::text("it says 41"),
        Step::text("The reader says 41."),
    ]);
    env.user_config(&model_config(&server, ""));
    let out = env.bosun(&["run", "--yes", "Read it"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("subagent `helper` is not offered: it references unknown tool(s): teleport"),
        "{err}"
    );
    assert!(
        err.contains(
            "subagent `nester` is not offered: it declares `agent_reader`, another subagent"
        ),
        "{err}"
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "The reader says 41."
    );
    // Unknown tools were refused before any model call of theirs: the model only ever saw the
    // reader.
    let offered = server.requests()[0]["tools"].to_string();
    assert!(
        offered.contains("agent_reader")
            && !offered.contains("agent_helper")
            && !offered.contains("agent_nester")
    );
}

#[test]
fn a_child_draws_from_the_parents_budget_and_stops_when_it_is_spent() {
    let env = Env::new();
    review_plugin(&env);
    let (_runtime, server) = serve([
        Step::call("delegate_code_review", json!({"task": "Read everything"})),
        // The child: one call fits what is left of the run's two, the second does not.
        Step::call("read_file", json!({"path": "src/lib.rs"})),
        Step::call("list_files", json!({"path": "."})),
        Step::text("unreachable"),
        Step::text("The reviewer ran out of budget."),
    ]);
    env.user_config(&format!(
        "{}\n[agent]\nmax_tool_calls = 2\n\n[plugins.code-review]\npath = \"code-review\"\n",
        model_config(&server, "")
    ));
    let out = env.bosun(&["run", "--yes", "Review"]);
    let runs = runs(&env);
    let (parent, _) = runs.iter().find(|(_, p)| p.is_none()).unwrap();
    let delegated = parent
        .iter()
        .find(|e| e["type"] == "tool.completed" && e["tool"] == "delegate_code_review")
        .unwrap_or_else(|| panic!("{parent:?}\n{}", stderr(&out)));
    assert_eq!(
        delegated["output"]["status"], "limit_reached",
        "{delegated}"
    );
    assert_eq!(delegated["output"]["toolCalls"], 1, "{delegated}");
    let (child, _) = runs.iter().find(|(_, p)| p.is_some()).unwrap();
    assert!(
        child.iter().any(|e| e["type"] == "budget.exhausted"),
        "{child:?}"
    );
}

#[test]
fn a_child_is_held_to_the_parents_policy_for_plugin_and_mcp_tools_too() {
    use super::serve::{peer_sandbox, python};
    let env = Env::new();
    // An MCP server's tool the parent's policy denies, and a plugin tool it withholds.
    let script =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/peers/mcp_server.py");
    let plugin = env.home().join("plugins/count-text");
    std::fs::create_dir_all(&plugin).unwrap();
    std::fs::write(
        plugin.join("plugin.json"),
        r#"{"schemaVersion": 1, "apiVersion": "1", "name": "count-text", "version": "1.0.0", "entry": "./index.mjs", "capabilities": ["tools:register"]}"#,
    )
    .unwrap();
    std::fs::write(
        plugin.join("index.mjs"),
        r#"export default (api) => api.registerTool({ name: "count_text", description: "Counts.", risk: "read",
  inputSchema: api.z.object({ text: api.z.string() }), execute: async ({ text }) => ({ ok: true, output: text.length, truncated: false }) });
"#,
    )
    .unwrap();
    let out = env.bosun(&[
        "plugins",
        "enable",
        "count-text",
        "--path",
        "count-text",
        "--yes",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let agents = env.home().join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("adder.md"),
        "---\nname: adder\ndescription: Adds.\ntools: [mcp__peer__add]\n---\nAdd.\n",
    )
    .unwrap();
    std::fs::write(
        agents.join("counter.md"),
        "---\nname: counter\ndescription: Counts.\ntools: [count_text]\n---\nCount.\n",
    )
    .unwrap();
    let (_runtime, server) = serve([
        Step::call("agent_adder", json!({"task": "add 1 and 2"})),
        Step::call("mcp__peer__add", json!({"a": 1, "b": 2})),
        Step::text("I was not allowed."),
        Step::text("The adder could not add."),
    ]);
    let rules = "[[policy.rules]]\naction = \"mcp.peer.tool.add\"\ndecision = \"deny\"\n\n[[policy.rules]]\naction = \"plugin.count-text.tool.count_text\"\ndecision = \"deny\"\n";
    let config = format!(
        "{}\n{rules}\n[plugins.count-text]\npath = \"count-text\"\n\n[mcp.peer]\ncommand = {:?}\nargs = [{:?}]\n{}",
        model_config(&server, ""),
        python().display().to_string(),
        script.display().to_string(),
        peer_sandbox("peer")
    );
    env.user_config(&config);
    let out = env.bosun(&["mcp", "trust", "peer", "--yes"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = env.bosun(&["run", "--yes", "Add"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    // The plugin tool the parent may not use is not even there for a child to declare.
    assert!(
        stderr(&out).contains(
            "subagent `counter` is not offered: it references unknown tool(s): count_text"
        ),
        "{}",
        stderr(&out)
    );
    // The MCP tool is denied in the child exactly as in the parent.
    let runs = runs(&env);
    let (child, _) = runs.iter().find(|(_, p)| p.is_some()).unwrap();
    let failed = child
        .iter()
        .find(|e| e["type"] == "tool.failed" && e["tool"] == "mcp__peer__add")
        .unwrap_or_else(|| panic!("{child:?}"));
    assert_eq!(failed["error"]["code"], "denied", "{failed}");
}
