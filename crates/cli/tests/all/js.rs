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

    // What a plugin the agent wrote returns is untrusted input: its first result marks the
    // session, naming the plugin; nothing before it did.
    let marks: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| l["event"]["type"] == "integrity.untrusted")
        .map(|l| l["event"].clone())
        .collect();
    assert_eq!(marks.len(), 1, "{marks:?}");
    assert_eq!(marks[0]["tool"], TOOL, "{marks:?}");
    let source = marks[0]["source"].as_str().unwrap();
    assert!(
        source.contains("plugin \"word-tools\", which the agent built"),
        "{source}"
    );
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

/// A Forge plugin that runs the command in `TINY_COMMAND` (a JSON array) with `execFile` and
/// returns what it printed and the environment names the plugin itself sees.
const EXEC_PLUGIN: &str = r#"import { execFile } from "node:child_process";

export default function activate(api) {
  api.registerTool({
    name: "run_tiny",
    description: "Runs the configured command and returns its output.",
    risk: "process",
    inputSchema: api.z.object({}).strict(),
    execute: async (_input, context) => new Promise((resolve) => {
      const [file, ...args] = JSON.parse(process.env.TINY_COMMAND);
      execFile(file, args, { cwd: context.workspace.cwd }, (error, stdout, stderr) => resolve(error
        ? { ok: false, error: { code: "process_error", message: `${error.code}: ${error.message} ${stderr}`, retryable: false } }
        : { ok: true, output: { stdout: stdout.trim(), seen: Object.keys(process.env).sort(), value: process.env.TINY_COMMAND }, truncated: false }));
    }),
  });
}
"#;

#[test]
fn a_plugin_sees_only_the_variables_its_entry_names_and_starts_processes_through_policy() {
    let env = Env::new();
    let dir = env.home().join("plugins/tiny");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("plugin.json"),
        r#"{"schemaVersion": 1, "apiVersion": "1", "name": "tiny", "version": "1.0.0", "entry": "./index.mjs", "capabilities": ["tools:register"]}"#,
    )
    .unwrap();
    std::fs::write(dir.join("index.mjs"), EXEC_PLUGIN).unwrap();
    let out = env.bosun(&["plugins", "enable", "tiny", "--path", "tiny", "--yes"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let config_path = env.home().join("config.toml");
    let config = std::fs::read_to_string(&config_path).unwrap();
    let config = config.replace(
        "[plugins.tiny]\n",
        "[plugins.tiny]\nenv = [\"TINY_COMMAND\"]\n",
    );
    assert!(config.contains("env = [\"TINY_COMMAND\"]"), "{config}");
    std::fs::write(&config_path, config).unwrap();

    // The review says what the plugin sees.
    let out = env.bosun(&["plugins", "info", "tiny"]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("environment it sees: TINY_COMMAND"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );

    let command = r#"["/usr/bin/python3", "-c", "import os; print(os.environ.get('TINY_COMMAND', '-')[:2], os.environ.get('SECRET_API_TOKEN', 'no-secret'))"]"#;
    let vars = [
        ("TINY_COMMAND", command),
        ("SECRET_API_TOKEN", "s3cret-value"),
        ("OTHER_VARIABLE", "x"),
    ];
    let out = env.bosun_with_env(
        &["tools", "call", "run_tiny", "{}", "--json", "--yes"],
        &vars,
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let value: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(value["output"]["stdout"], "[\" no-secret", "{value}");
    assert_eq!(value["output"]["seen"], json!(["TINY_COMMAND"]), "{value}");
    // The variable's value is redacted in the trace like a secret.
    assert_eq!(value["output"]["value"], command, "{value}");
    let trace = env.bosun(&["inspect", "last", "--json"]);
    let trace = String::from_utf8_lossy(&trace.stdout);
    assert!(!trace.contains("import os"), "{trace}");
    assert!(trace.contains("[REDACTED:TINY_COMMAND]"), "{trace}");

    // A rule denying the program: the plugin's child never starts.
    let config = std::fs::read_to_string(&config_path).unwrap();
    std::fs::write(
        &config_path,
        format!(
            "[[policy.rules]]\naction = \"process.spawn\"\nprogram = \"/usr/bin/python3\"\ndecision = \"deny\"\n\n{config}"
        ),
    )
    .unwrap();
    let out = env.bosun_with_env(
        &["tools", "call", "run_tiny", "{}", "--json", "--yes"],
        &vars,
    );
    let value: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(value["error"]["code"], "process_error", "{value}");
    let message = value["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("EACCES") && message.contains("denied"),
        "{message}"
    );
}

#[test]
fn a_triggerfish_plugin_is_a_sink_at_its_level_and_a_session_holding_more_cannot_feed_it() {
    let env = Env::new();
    let dir = env.dir.path().join("word-tools");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("mod.ts"), MOD_TS).unwrap();
    std::fs::create_dir_all(env.ws().join("secrets")).unwrap();
    std::fs::write(env.ws().join("secrets/key.pem"), "PRIVATE").unwrap();
    let (_runtime, server) = serve([
        // An INTERNAL plugin may take what an INTERNAL session holds...
        Step::call(TOOL, json!({"text": "one two"})),
        Step::call("read_file", json!({"path": "secrets/key.pem"})),
        // ...but not once the session holds RESTRICTED data.
        Step::call(TOOL, json!({"text": "PRIVATE"})),
        Step::text("Done."),
    ]);
    env.user_config(&format!(
        "default_model = \"scripted\"\n[models.scripted]\nprovider = \"openai-chat\"\nbase_url = \"{}\"\nmodel = \"bosun-scripted\"\n\n[[classification.paths]]\nglob = \"secrets/**\"\nlevel = \"RESTRICTED\"\n",
        server.base_url()
    ));
    // Installed after the config is written: installing adds the plugin's entry to it.
    let out = env.bosun(&["plugins", "install", dir.to_str().unwrap(), "--yes"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = env.bosun(&["run", "--json", "Count the words of the key."]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let calls: Vec<Value> = tool_events(&out.stdout)
        .into_iter()
        .filter(|e| e["tool"] == TOOL)
        .collect();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(calls[0]["type"], "tool.completed", "{calls:?}");
    assert_eq!(calls[1]["type"], "tool.failed", "{calls:?}");
    assert_eq!(calls[1]["error"]["code"], "needs_approval", "{calls:?}");
    let trace = String::from_utf8_lossy(&env.bosun(&["inspect", "last"]).stdout).into_owned();
    assert!(
        trace.contains("write-down: the session holds RESTRICTED data"),
        "{trace}"
    );
}
