//! The MCP servers of installed Claude Code plugins: named `<plugin>:<server>`, offered only
//! once a person approved their tools (`bosun mcp trust <plugin>:<server>`), run in the OS
//! sandbox confined to their plugin, and withheld again when the plugin changes.

use std::path::{Path, PathBuf};

use pretty_assertions::assert_eq;
use serde_json::Value;

use super::{Env, code, json, stderr, tool_names};

const ECHO: &str = "mcp__plugin_toolbox_echo__echo";

fn fixture_marketplace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../claude/tests/fixtures/marketplace")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let dst = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &dst);
        } else {
            std::fs::copy(entry.path(), &dst).unwrap();
        }
    }
}

/// `market` as the `claude-marketplace` registry `local`, with `extra` config after it.
fn configure(env: &Env, market: &Path, extra: &str) {
    env.user_config(&format!(
        "[registries.local]\nkind = \"claude-marketplace\"\npath = \"{}\"\n{extra}",
        market.display()
    ));
}

fn install(env: &Env, spec: &str) {
    let out = env.bosun(&["plugins", "install", spec, "--yes"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

fn state(env: &Env, name: &str) -> Value {
    let out = env.bosun(&["mcp", "list", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    json(&out)["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .map(|s| s["state"].clone())
        .unwrap_or(Value::Null)
}

fn call(env: &Env, tool: &str, input: &str) -> (i32, Value) {
    let out = env.bosun(&["tools", "call", tool, input, "--json", "--yes"]);
    (code(&out), json(&out))
}

#[test]
fn a_plugins_mcp_server_is_offered_only_once_approved_with_its_user_config_expanded() {
    let env = Env::new();
    let market = env.dir.path().join("market");
    copy_dir(&fixture_marketplace(), &market);
    configure(&env, &market, "");
    install(&env, "toolbox@local");

    // Installed is not approved: the server is listed under its plugin's name, nothing of it
    // is offered, and the person is told how to review it.
    assert_eq!(state(&env, "toolbox:echo"), "not_approved");
    let out = env.bosun(&["tools", "list", "--json"]);
    assert!(!String::from_utf8_lossy(&out.stdout).contains(ECHO));
    assert!(
        stderr(&out).contains("bosun mcp trust toolbox:echo"),
        "{}",
        stderr(&out)
    );
    let (rc, out) = call(&env, ECHO, r#"{"text": "hi"}"#);
    assert_ne!(rc, 0, "an unapproved server's tool ran: {out}");

    let out = env.bosun(&["mcp", "trust", "toolbox:echo", "--yes"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stderr(&out).contains(ECHO), "{}", stderr(&out));
    assert!(tool_names(&env).contains(&ECHO.to_owned()));
    // `${user_config.greeting}` took the option's default.
    let (rc, out) = call(&env, ECHO, r#"{"text": "hi"}"#);
    assert_eq!(rc, 0, "{out}");
    assert_eq!(out["output"]["content"][0]["text"], "ahoy: hi", "{out}");

    // An answer in the user config is what it expands to — and a different command line is a
    // different server: it needs approving again.
    configure(
        &env,
        &market,
        "\n[claude.plugins.\"toolbox@local\".config]\ngreeting = \"hello\"\n",
    );
    assert_eq!(state(&env, "toolbox:echo"), "changed");
    assert!(!tool_names(&env).contains(&ECHO.to_owned()));
    let out = env.bosun(&["mcp", "trust", "toolbox:echo", "--yes"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let (rc, out) = call(&env, ECHO, r#"{"text": "hi"}"#);
    assert_eq!(rc, 0, "{out}");
    assert_eq!(out["output"]["content"][0]["text"], "hello: hi", "{out}");
}

#[test]
fn a_plugin_server_whose_command_changed_after_trust_is_refused() {
    let env = Env::new();
    let market = env.dir.path().join("market");
    copy_dir(&fixture_marketplace(), &market);
    configure(&env, &market, "");
    install(&env, "toolbox@local");
    let out = env.bosun(&["mcp", "trust", "toolbox:echo", "--yes"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(tool_names(&env).contains(&ECHO.to_owned()));

    // The marketplace now ships another command line; installing it is a new review of the
    // plugin, and its server is a new server: withheld until approved again.
    let mcp = market.join("plugins/toolbox/.mcp.json");
    let changed = std::fs::read_to_string(&mcp)
        .unwrap()
        .replace("\"--greeting\"", "\"--greeting\", \"evil\", \"--x\"");
    std::fs::write(&mcp, changed).unwrap();
    install(&env, "toolbox@local");
    assert_eq!(state(&env, "toolbox:echo"), "changed");
    let out = env.bosun(&["tools", "list", "--json"]);
    assert!(!String::from_utf8_lossy(&out.stdout).contains(ECHO));
    assert!(
        stderr(&out).contains("changed since you approved it"),
        "{}",
        stderr(&out)
    );
    let (rc, out) = call(&env, ECHO, r#"{"text": "hi"}"#);
    assert_ne!(rc, 0, "a changed server's tool ran: {out}");

    // Files changed in the cache behind Bosun's back: the plugin is refused, its server with it.
    let out = env.bosun(&["mcp", "trust", "toolbox:echo", "--yes"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let cache = env.home().join("claude/cache");
    for entry in std::fs::read_dir(&cache).unwrap().flatten() {
        let script = entry.path().join("servers/echo.py");
        if script.exists() {
            std::fs::write(&script, "import os; os.system('id')\n").unwrap();
        }
    }
    let out = env.bosun(&["tools", "list", "--json"]);
    assert!(!String::from_utf8_lossy(&out.stdout).contains(ECHO));
    assert!(
        stderr(&out).contains("changed since you trusted it"),
        "{}",
        stderr(&out)
    );
}

/// A stdio MCP server (no SDK) whose `probe` tool reads or writes a path and says what happened.
const PROBE: &str = r#"
import json, sys

def reply(i, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": i, "result": result}) + "\n")
    sys.stdout.flush()

for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    if m["method"] == "initialize":
        reply(m["id"], {"protocolVersion": m["params"].get("protocolVersion", "2025-06-18"),
                        "capabilities": {"tools": {}}, "serverInfo": {"name": "probe", "version": "1"}})
    elif m["method"] == "tools/list":
        reply(m["id"], {"tools": [{"name": "probe", "description": "Reads or writes a path",
            "inputSchema": {"type": "object", "properties": {"op": {"type": "string"}, "path": {"type": "string"}},
                            "required": ["op", "path"]}}]})
    elif m["method"] == "tools/call":
        a = m["params"]["arguments"]
        try:
            if a["op"] == "connect":
                import socket
                host, port = a["path"].rsplit(":", 1)
                with socket.create_connection((host, int(port)), timeout=5) as c:
                    text = "connected: " + c.recv(64).decode()
            elif a["op"] == "read":
                with open(a["path"]) as f:
                    text = "read: " + f.read()
            else:
                with open(a["path"], "w") as f:
                    f.write("pwned")
                text = "wrote"
        except OSError as e:
            text = "refused: " + type(e).__name__
        reply(m["id"], {"content": [{"type": "text", "text": text}]})
    else:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "no"}}) + "\n")
        sys.stdout.flush()
"#;

/// A marketplace `local` in `<env>/market` holding one plugin, `prober`, whose MCP server
/// `probe` runs [`PROBE`]; returns the marketplace's folder.
fn probe_marketplace(env: &Env) -> PathBuf {
    let market = env.dir.path().join("market");
    let plugin = market.join("plugins/prober");
    std::fs::create_dir_all(market.join(".claude-plugin")).unwrap();
    std::fs::create_dir_all(&plugin).unwrap();
    std::fs::write(
        market.join(".claude-plugin/marketplace.json"),
        r#"{"name": "local", "owner": {"name": "t"}, "plugins": [{"name": "prober", "source": "./plugins/prober"}]}"#,
    )
    .unwrap();
    std::fs::write(plugin.join("probe.py"), PROBE).unwrap();
    std::fs::write(
        plugin.join(".mcp.json"),
        r#"{"mcpServers": {"probe": {"command": "python3", "args": ["${CLAUDE_PLUGIN_ROOT}/probe.py"]}}}"#,
    )
    .unwrap();
    market
}

#[test]
fn a_plugin_server_cannot_read_outside_its_plugin_and_the_workspace_or_write_the_workspace() {
    let env = Env::new();
    let market = probe_marketplace(&env);
    let outside = env.dir.path().join("outside.txt");
    std::fs::write(&outside, "outside secret").unwrap();
    let user_home = env.dir.path().join("user-home/.ssh");
    std::fs::create_dir_all(&user_home).unwrap();
    std::fs::write(user_home.join("id_ed25519"), "PRIVATE KEY").unwrap();
    configure(&env, &market, "");
    install(&env, "prober@local");
    let out = env.bosun(&["mcp", "trust", "prober:probe", "--yes"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));

    let probe = |op: &str, path: &Path| -> String {
        let input = serde_json::json!({"op": op, "path": path}).to_string();
        let (rc, out) = call(&env, "mcp__plugin_prober_probe__probe", &input);
        assert_eq!(rc, 0, "{out}");
        out["output"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    // What it may do, so the refusals below are the sandbox's and not a broken probe.
    let root = std::fs::read_dir(env.home().join("claude/cache"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.join("probe.py").exists())
        .unwrap();
    assert!(probe("read", &root.join("probe.py")).starts_with("read: "));
    assert!(probe("read", &env.ws().join("src/lib.rs")).contains("answer"));
    let data = env.home().join("claude/data/prober@local/note");
    assert_eq!(probe("write", &data), "wrote");

    for path in [
        outside.clone(),
        user_home.join("id_ed25519"),
        env.home().join("config.toml"),
        env.home().join("mcp/pins.json"),
    ] {
        let said = probe("read", &path);
        assert!(said.starts_with("refused"), "{}: {said}", path.display());
    }
    let escaped = env.ws().join("escaped.txt");
    assert!(probe("write", &escaped).starts_with("refused"));
    assert!(!escaped.exists(), "the server wrote the workspace");
    assert!(probe("write", &root.join("added.txt")).starts_with("refused"));
    assert!(
        !root.join("added.txt").exists(),
        "the server changed its own files"
    );
}

#[test]
fn a_plugin_server_reaches_the_network_only_where_a_person_granted_it() {
    let env = Env::new();
    let market = probe_marketplace(&env);
    // A loopback service that greets whoever connects.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut stream = stream;
            let _ = std::io::Write::write_all(&mut stream, b"hello from loopback");
        }
    });
    let address = format!("127.0.0.1:{port}");
    let probe = |env: &Env| -> String {
        let input = serde_json::json!({"op": "connect", "path": address}).to_string();
        let (rc, out) = call(env, "mcp__plugin_prober_probe__probe", &input);
        assert_eq!(rc, 0, "{out}");
        out["output"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_owned()
    };

    configure(&env, &market, "");
    install(&env, "prober@local");
    let out = env.bosun(&["mcp", "trust", "prober:probe", "--yes"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let said = probe(&env);
    assert!(
        said.starts_with("refused"),
        "reached the network ungranted: {said}"
    );

    // A grant is part of what is approved: the server needs approving again, then reaches
    // exactly what was granted.
    configure(
        &env,
        &market,
        &format!("\n[claude.plugins.\"prober@local\".mcp.probe]\nnetwork = [\"{address}\"]\n"),
    );
    assert_eq!(state(&env, "prober:probe"), "changed");
    let out = env.bosun(&["mcp", "trust", "prober:probe", "--yes"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&address),
        "the review shows the grant: {}",
        stderr(&out)
    );
    assert_eq!(probe(&env), "connected: hello from loopback");

    // A grant of another port opens only that one.
    configure(
        &env,
        &market,
        "\n[claude.plugins.\"prober@local\".mcp.probe]\nnetwork = [\"127.0.0.1:9\"]\n",
    );
    let out = env.bosun(&["mcp", "trust", "prober:probe", "--yes"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let said = probe(&env);
    assert!(
        said.starts_with("refused"),
        "reached an ungranted port: {said}"
    );
}

/// A plugin declaring an `sse` server (the Python SDK's HTTP+SSE server, which refuses every
/// request without its key) with the key as a `sensitive` `userConfig` value in a header, and a
/// `ws` server. The SSE server is listed, offered only once approved, and answers with the key
/// the plugin's header carried; the `ws` one is left out, saying why.
#[test]
fn a_plugins_sse_server_is_approved_and_reached_like_an_http_one_and_ws_is_refused() {
    let key = "sse-plugin-key-5b1f";
    let peer = super::acp::KeyedPeer::start("sse", key);
    let env = Env::new();
    let market = env.dir.path().join("market");
    let plugin = market.join("plugins/keyed");
    std::fs::create_dir_all(market.join(".claude-plugin")).unwrap();
    std::fs::create_dir_all(plugin.join(".claude-plugin")).unwrap();
    std::fs::write(
        market.join(".claude-plugin/marketplace.json"),
        r#"{"name": "local", "owner": {"name": "t"}, "plugins": [{"name": "keyed", "source": "./plugins/keyed"}]}"#,
    )
    .unwrap();
    std::fs::write(
        plugin.join(".claude-plugin/plugin.json"),
        serde_json::json!({"name": "keyed", "userConfig": {"api_key": {
            "type": "string", "title": "API key", "description": "The server's key",
            "sensitive": true, "required": true}}})
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        plugin.join(".mcp.json"),
        serde_json::json!({"mcpServers": {
            "events": {"type": "sse", "url": format!("http://127.0.0.1:{}/sse", peer.port),
                "headers": {"X-Api-Key": "${user_config.api_key}"}},
            "socket": {"type": "ws", "url": "ws://127.0.0.1:9/mcp"}}})
        .to_string(),
    )
    .unwrap();
    configure(&env, &market, "");
    let out = env.bosun(&[
        "plugins",
        "install",
        "keyed@local",
        "--yes",
        "--config",
        &format!("api_key={key}"),
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));

    const ADD: &str = "mcp__plugin_keyed_events__add";
    assert_eq!(state(&env, "keyed:events"), "not_approved");
    let listed = env.bosun(&["mcp", "list"]);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&listed.stdout),
        stderr(&listed)
    );
    assert!(said.contains("sse: http://127.0.0.1:"), "{said}");
    assert!(
        !said.contains("keyed:socket"),
        "the ws server is listed: {said}"
    );
    let out = env.bosun(&["mcp", "trust", "keyed:socket", "--yes"]);
    assert_ne!(code(&out), 0);
    assert!(
        stderr(&out).contains("`ws`") && stderr(&out).contains("`sse`"),
        "the ws server is left out saying why: {}",
        stderr(&out)
    );
    let (rc, out) = call(&env, ADD, r#"{"a": 2, "b": 3}"#);
    assert_ne!(rc, 0, "an unapproved server's tool ran: {out}");

    let out = env.bosun(&["mcp", "trust", "keyed:events", "--yes"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stderr(&out).contains(ADD), "{}", stderr(&out));
    assert!(
        !stderr(&out).contains(key),
        "the review shows the secret: {}",
        stderr(&out)
    );
    let (rc, out) = call(&env, ADD, r#"{"a": 2, "b": 3}"#);
    assert_eq!(rc, 0, "{out}");
    assert_eq!(out["output"]["content"][0]["text"], "5", "{out}");

    // In `bosun run`, against the scripted model: the tool is offered and answers.
    let (_runtime, server) = super::run::serve([
        bosun_agent::scripted::Step::call(ADD, serde_json::json!({"a": 20, "b": 22})),
        bosun_agent::scripted::Step::text("42"),
    ]);
    env.user_config(&format!(
        "{}\n[registries.local]\nkind = \"claude-marketplace\"\npath = \"{}\"\n",
        super::run::model_config(&server, ""),
        market.display()
    ));
    let out = env.bosun(&["run", "--yes", "add them"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let answered = server.requests()[1]["messages"].to_string();
    assert!(answered.contains("42"), "{answered}");
    assert_eq!(peer.refused(), 0, "a request went without the key");
    // The secret is in its owner-only file and in no other file of Bosun's home: not the
    // traces, the pins, the config.
    let holding = files_holding(&env.home(), key);
    assert_eq!(
        holding,
        [env.home().join("claude/secrets/keyed@local.json")],
        "the secret was written elsewhere"
    );
}

/// Every file beneath `dir` whose bytes hold `needle`.
fn files_holding(dir: &Path, needle: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files_holding(&path, needle));
        } else if std::fs::read(&path)
            .is_ok_and(|bytes| bytes.windows(needle.len()).any(|w| w == needle.as_bytes()))
        {
            found.push(path);
        }
    }
    found
}
