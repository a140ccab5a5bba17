//! JavaScript plugins from the command line: a plugin the model writes, scans, installs, uses,
//! edits and reloads during one `bosun run` against a scripted model on loopback — and a broken
//! reload that leaves the old version serving.

use std::process::{Command, Stdio};

use bosun_agent::scripted::Step;
use serde_json::{Value, json};

use super::run::serve;
use super::{Env, code, stderr};

pub const MOD_TS: &str = r#"// A plugin written by a model, in Triggerfish's format.
export const manifest = {
  name: "word-tools",
  version: "1.0.0",
  description: "Counts words.",
  classification: "INTERNAL",
  trust: "sandboxed",
  declaredEndpoints: [],
} as const;

interface Counted {
  words: number;
  version: string;
}

export const toolDefinitions = [
  {
    name: "count_words",
    description: "Counts the words in a text.",
    parameters: { text: { type: "string", description: "The text.", required: true } },
  },
];

export function createExecutor(_context: { pluginName: string }) {
  return async (name: string, input: Record<string, unknown>): Promise<string | null> => {
    if (name !== "count_words") return null;
    const text = String(input.text ?? "");
    const result: Counted = { words: text.split(/\s+/).filter(Boolean).length, version: "v1" };
    return JSON.stringify(result);
  };
}
"#;

const DIR: &str = ".bosun/plugins/word-tools";
const TOOL: &str = "plugin_word-tools_count_words";

fn tool_events(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| {
            matches!(
                l["event"]["type"].as_str(),
                Some("tool.completed" | "tool.failed")
            )
        })
        .map(|l| l["event"].clone())
        .collect()
}

#[test]
fn a_plugin_the_model_writes_is_scanned_installed_used_reloaded_and_a_broken_reload_keeps_the_old()
{
    let env = Env::new();
    let path = format!("{DIR}/mod.ts");
    let (_runtime, server) = serve([
        Step::call("create_file", json!({"path": path, "content": MOD_TS})),
        Step::call("plugin_scan", json!({"path": DIR})),
        Step::call("plugin_install", json!({"name": "word-tools"})),
        Step::call(TOOL, json!({"text": "one two three"})),
        Step::call(
            "apply_patch",
            json!({"path": path, "edits": [{"oldText": "version: \"v1\"", "newText": "version: \"v2\""}]}),
        ),
        Step::call("plugin_reload", json!({"name": "word-tools"})),
        Step::call(TOOL, json!({"text": "four five"})),
        Step::call(
            "apply_patch",
            json!({"path": path, "edits": [{"oldText": "export function createExecutor", "newText": "export function createExecutor(("}]}),
        ),
        Step::call("plugin_reload", json!({"name": "word-tools"})),
        Step::call(TOOL, json!({"text": "six"})),
        Step::text("The plugin counts words."),
    ]);
    env.user_config(&format!(
        "default_model = \"scripted\"\n[models.scripted]\nprovider = \"openai-chat\"\nbase_url = \"{}\"\nmodel = \"bosun-scripted\"\n",
        server.base_url()
    ));

    let out = Command::new(env!("CARGO_BIN_EXE_bosun"))
        .args([
            "run",
            "--json",
            "--yes",
            "Write a word-counting plugin and use it.",
        ])
        .current_dir(env.ws())
        .env("BOSUN_HOME", env.home())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let events = tool_events(&out.stdout);
    let by_tool =
        |tool: &str| -> Vec<&Value> { events.iter().filter(|e| e["tool"] == tool).collect() };

    let scan = by_tool("plugin_scan");
    assert_eq!(scan[0]["type"], "tool.completed", "{scan:?}");
    assert_eq!(scan[0]["output"]["ok"], true, "{scan:?}");

    let install = by_tool("plugin_install");
    assert_eq!(install[0]["type"], "tool.completed", "{install:?}");
    assert_eq!(install[0]["output"]["tools"], json!([TOOL]));

    let calls = by_tool(TOOL);
    assert_eq!(calls.len(), 3, "{calls:?}");
    let output =
        |e: &Value| -> Value { serde_json::from_str(e["output"].as_str().unwrap()).unwrap() };
    assert_eq!(output(calls[0]), json!({"words": 3, "version": "v1"}));
    // The edited and reloaded plugin serves.
    assert_eq!(output(calls[1]), json!({"words": 2, "version": "v2"}));
    // The broken reload failed and said so; the previous version still answers.
    let reloads = by_tool("plugin_reload");
    assert_eq!(reloads[0]["type"], "tool.completed", "{reloads:?}");
    assert_eq!(reloads[1]["type"], "tool.failed", "{reloads:?}");
    let message = reloads[1]["error"]["message"].as_str().unwrap();
    assert!(message.contains("old version keeps serving"), "{message}");
    assert_eq!(output(calls[2]), json!({"words": 1, "version": "v2"}));
}

#[test]
fn a_plugin_that_fails_the_scan_is_not_installed() {
    let env = Env::new();
    let hostile = MOD_TS.replace(
        "const text = String(input.text ?? \"\");",
        "const text = String(input.text ?? \"\"); const e = (0, eval)(\"1\");",
    );
    let path = format!("{DIR}/mod.ts");
    let (_runtime, server) = serve([
        Step::call("create_file", json!({"path": path, "content": hostile})),
        Step::call("plugin_install", json!({"name": "word-tools"})),
        Step::call(TOOL, json!({"text": "one"})),
        Step::text("The plugin was refused."),
    ]);
    env.user_config(&format!(
        "default_model = \"scripted\"\n[models.scripted]\nprovider = \"openai-chat\"\nbase_url = \"{}\"\nmodel = \"bosun-scripted\"\n",
        server.base_url()
    ));
    let out = Command::new(env!("CARGO_BIN_EXE_bosun"))
        .args(["run", "--json", "--yes", "Write a plugin."])
        .current_dir(env.ws())
        .env("BOSUN_HOME", env.home())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let events = tool_events(&out.stdout);
    let install: Vec<&Value> = events
        .iter()
        .filter(|e| e["tool"] == "plugin_install")
        .collect();
    assert_eq!(install[0]["type"], "tool.failed", "{install:?}");
    assert_eq!(install[0]["error"]["code"], "denied");
    assert!(
        install[0]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("security scan"),
        "{install:?}"
    );
    let call: Vec<&Value> = events.iter().filter(|e| e["tool"] == TOOL).collect();
    assert_eq!(call[0]["error"]["code"], "unknown_tool", "{call:?}");
}
