//! Native plugins end to end through the `bosun` binary: enable, trust, list and call — real
//! components built from `examples/plugins` and `tests/programs`, real wasmtime.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;

use pretty_assertions::assert_eq;
use serde_json::Value;

use super::{Env, code, json, stderr, tool_names};

fn install(env: &Env, dir: &str, wasm: &str) {
    let target = env.home().join("plugins").join(dir);
    std::fs::create_dir_all(&target).unwrap();
    std::fs::copy(wasm, target.join("plugin.wasm")).unwrap();
}

fn install_project(env: &Env, dir: &str, wasm: &str) {
    let target = env.ws().join(".bosun/plugins").join(dir);
    std::fs::create_dir_all(&target).unwrap();
    std::fs::copy(wasm, target.join("plugin.wasm")).unwrap();
}

fn enable(env: &Env, name: &str, path: &str) {
    let out = env.bosun(&["plugins", "enable", name, "--path", path, "--yes"]);
    assert_eq!(code(&out), 0, "enable {name}: {}", stderr(&out));
}

fn call(env: &Env, tool: &str, input: &str) -> (i32, Value) {
    let out = env.bosun(&["tools", "call", tool, input, "--json", "--yes"]);
    (code(&out), json(&out))
}

fn list(env: &Env) -> Vec<Value> {
    let out = env.bosun(&["plugins", "list", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    json(&out)["plugins"].as_array().unwrap().clone()
}

fn state_of(env: &Env, name: &str) -> String {
    let entry = list(env)
        .into_iter()
        .find(|p| p["local_name"] == name)
        .unwrap_or_else(|| panic!("no {name}"));
    entry["state"].as_str().unwrap_or_default().to_owned()
}

#[test]
fn tools_call_reaches_every_example_plugin() {
    let env = Env::new();
    install(&env, "hello", bosun_test_programs::HELLO);
    install(&env, "fs-stats", bosun_test_programs::FS_STATS);
    install(&env, "todos", bosun_test_programs::TODOS);
    enable(&env, "hi", "hello");
    enable(&env, "stats", "fs-stats");
    enable(&env, "todos", "todos");

    let (rc, out) = call(&env, "greet", r#"{"name": "Ada"}"#);
    assert_eq!(
        (rc, &out["output"]),
        (0, &serde_json::json!({"message": "Hello, Ada!"})),
        "{out}"
    );

    let (rc, out) = call(&env, "fs_stats", r#"{"path": "src"}"#);
    assert_eq!(rc, 0, "{out}");
    assert!(out["output"].to_string().contains("rs"), "{out}");

    let (rc, out) = call(&env, "todo_add", r#"{"content": "write the guide"}"#);
    assert_eq!(rc, 0, "{out}");

    // The policy action uses the local name the user chose.
    let inspect = env.bosun(&["inspect", "last", "--json"]);
    assert!(String::from_utf8_lossy(&inspect.stdout).contains("plugin.todos.tool.todo_add"));
    let first = env
        .runs()
        .into_iter()
        .find(|r| std::fs::read_to_string(r).unwrap().contains("greet"))
        .unwrap();
    assert!(
        std::fs::read_to_string(first)
            .unwrap()
            .contains("plugin.hi.tool.greet")
    );
}

/// A native plugin's path from its input is judged without saying what is there: under a denied
/// `secrets/`, a directory, a file, a missing file, a file used as a directory and a link into
/// it all answer `denied` (exit 3) alike. Before, a missing path was `not_found` before policy.
#[test]
fn a_native_plugins_denied_path_answers_denied_whatever_is_there() {
    let env = Env::new();
    install(&env, "fs-stats", bosun_test_programs::FS_STATS);
    enable(&env, "stats", "fs-stats");
    let ws = env.ws();
    std::fs::create_dir_all(ws.join("secrets/sub")).unwrap();
    std::fs::write(ws.join("secrets/key.txt"), "k").unwrap();
    std::os::unix::fs::symlink("secrets", ws.join("innocent")).unwrap();
    // Links whose text leads out of the workspace, to a folder holding a file: one in the
    // denied folder (denied like any other name there), one beside it (refused once allowed,
    // before a preopen could be made through it).
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("elsewhere.txt"), "e").unwrap();
    std::os::unix::fs::symlink(outside.path(), ws.join("secrets/out")).unwrap();
    let climb = "../".repeat(
        ws.join("secrets")
            .canonicalize()
            .unwrap()
            .components()
            .count()
            - 1,
    );
    std::os::unix::fs::symlink(
        format!("{climb}{}", outside.path().display()),
        ws.join("secrets/up"),
    )
    .unwrap();
    std::os::unix::fs::symlink(outside.path(), ws.join("outdir")).unwrap();
    let config = env.home().join("config.toml");
    let base = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        format!(
            "{base}\n[[policy.rules]]\naction = \"fs.read\"\npath = \"secrets/**\"\ndecision = \"deny\"\n"
        ),
    )
    .unwrap();
    for path in [
        "secrets",
        "secrets/sub",
        "secrets/key.txt",
        "secrets/missing",
        "secrets/key.txt/x",
        "secrets/none/deeper",
        "innocent",
        "innocent/missing",
        "secrets/out",
        "secrets/up",
        "innocent/out",
        "secrets/out/elsewhere.txt",
    ] {
        let (rc, out) = call(&env, "fs_stats", &format!(r#"{{"path": "{path}"}}"#));
        assert_eq!(rc, 3, "{path}: {out}");
        assert_eq!(out["error"]["code"], "denied", "{path}: {out}");
    }
    // Allowed by policy, a link leading out reaches nothing outside.
    let (rc, out) = call(&env, "fs_stats", r#"{"path": "outdir"}"#);
    assert_ne!(rc, 0, "{out}");
    assert_eq!(out["error"]["code"], "outside_workspace", "{out}");
    // Outside the denied place the plugin still answers.
    let (rc, out) = call(&env, "fs_stats", r#"{"path": "src"}"#);
    assert_eq!(rc, 0, "{out}");
}

/// A loopback HTTP server answering every request with `body`; returns its port.
fn serve(body: &'static str) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(8) {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let reply = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(reply.as_bytes());
        }
    });
    port
}

#[test]
fn web_fetch_reaches_only_a_named_loopback_address() {
    let env = Env::new();
    install(&env, "web-tools", bosun_test_programs::WEB_TOOLS);
    enable(&env, "web", "web-tools");
    let port = serve("<html><body><h1>Bosun</h1><p>Hello from loopback.</p></body></html>");
    let input = format!(r#"{{"url": "http://127.0.0.1:{port}/page"}}"#);

    // Allowed by policy for every host, but loopback is inside: refused unless a rule names it.
    let config = env.home().join("config.toml");
    let base = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        format!(
            "{base}\n[[policy.rules]]\naction = \"net.http\"\nhost = \"*\"\ndecision = \"allow\"\n"
        ),
    )
    .unwrap();
    let (rc, out) = call(&env, "web_fetch", &input);
    assert_ne!(rc, 0, "loopback reached through a glob rule: {out}");

    std::fs::write(&config, format!("{base}\n[[policy.rules]]\naction = \"net.http\"\nhost = \"127.0.0.1\"\ndecision = \"allow\"\n")).unwrap();
    let (rc, out) = call(&env, "web_fetch", &input);
    assert_eq!(rc, 0, "{out}");
    assert!(
        out["output"].to_string().contains("Hello from loopback."),
        "{out}"
    );
}

#[test]
fn a_denied_capability_keeps_the_tool_out_of_the_session() {
    let env = Env::new();
    install(&env, "fs-stats", bosun_test_programs::FS_STATS);
    enable(&env, "stats", "fs-stats");
    let config = env.home().join("config.toml");
    let base = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        format!("{base}\n[[policy.rules]]\naction = \"fs.read\"\ndecision = \"deny\"\n"),
    )
    .unwrap();
    let out = env.bosun(&["tools", "list", "--json"]);
    let names: Vec<String> = json(&out)
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(!names.contains(&"fs_stats".to_owned()), "{names:?}");
    let (_, out) = call(&env, "fs_stats", "{}");
    assert_eq!(out["error"]["code"], "unknown_tool");
}

#[test]
fn a_plugin_changed_after_trust_is_not_loaded() {
    let env = Env::new();
    install(&env, "hello", bosun_test_programs::HELLO);
    enable(&env, "hi", "hello");
    assert_eq!(state_of(&env, "hi"), "enabled");
    // Swap in other code under the same name.
    install(&env, "hello", bosun_test_programs::TODOS);
    assert_eq!(state_of(&env, "hi"), "changed");
    let (_, out) = call(&env, "greet", r#"{"name": "Ada"}"#);
    assert_eq!(out["error"]["code"], "unknown_tool");
    let (_, out) = call(&env, "todo_list", "{}");
    assert_eq!(
        out["error"]["code"], "unknown_tool",
        "changed code must not run before a new review"
    );
    // A new review loads it.
    assert_eq!(code(&env.bosun(&["plugins", "trust", "hi", "--yes"])), 0);
    assert_eq!(call(&env, "todo_list", "{}").0, 0);
}

#[test]
fn project_plugins_wait_for_trust_and_trust_needs_a_person() {
    let env = Env::new();
    install_project(&env, "greeter", bosun_test_programs::HELLO);
    assert_eq!(state_of(&env, "greeter"), "untrusted");
    assert_eq!(
        call(&env, "greet", r#"{"name": "x"}"#).1["error"]["code"],
        "unknown_tool"
    );
    // Without a terminal and without --yes, nothing is recorded.
    let out = env.bosun(&["plugins", "trust"]);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert!(!env.home().join("trust.toml").exists());
    assert_eq!(code(&env.bosun(&["plugins", "trust", "--yes"])), 0);
    assert_eq!(state_of(&env, "greeter"), "enabled");
    assert_eq!(call(&env, "greet", r#"{"name": "x"}"#).0, 0);
    // Untrusting stops it again.
    assert_eq!(code(&env.bosun(&["plugins", "untrust", "greeter"])), 0);
    assert_eq!(
        call(&env, "greet", r#"{"name": "x"}"#).1["error"]["code"],
        "unknown_tool"
    );
}

#[test]
fn invalid_plugins_are_listed_with_the_reason_and_never_offered() {
    let env = Env::new();
    for (dir, wasm) in [
        ("shadow", bosun_test_programs::SHADOW_BUILTIN),
        ("oversize", bosun_test_programs::OVERSIZE_SCHEMA),
        ("zero-width", bosun_test_programs::ZERO_WIDTH_DESCRIPTION),
        ("no-metadata", bosun_test_programs::NO_METADATA),
    ] {
        install_project(&env, dir, wasm);
    }
    install_project(&env, "greeter", bosun_test_programs::HELLO);
    let out = env.bosun(&["plugins", "trust", "greeter", "--yes"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let entries = list(&env);
    for dir in ["shadow", "oversize", "zero-width", "no-metadata"] {
        let entry = entries.iter().find(|e| e["local_name"] == dir).unwrap();
        assert_eq!(entry["state"], "invalid", "{dir}: {entry}");
        assert!(
            entry["reason"].as_str().is_some_and(|r| !r.is_empty()),
            "{dir}: {entry}"
        );
    }
    let text = String::from_utf8_lossy(&env.bosun(&["plugins", "list"]).stdout).into_owned();
    assert!(
        text.contains("read_file"),
        "the shadowing is named:\n{text}"
    );
    // The built-in still answers, and the good plugin still works.
    assert_eq!(call(&env, "read_file", r#"{"path": "src/lib.rs"}"#).0, 0);
    assert_eq!(call(&env, "greet", r#"{"name": "x"}"#).0, 0);
}

#[test]
fn a_plugin_past_its_deadline_is_stopped_and_named() {
    let env = Env::new();
    install(&env, "spin", bosun_test_programs::SPIN_FOREVER);
    enable(&env, "spin", "spin");
    let config = env.home().join("config.toml");
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("[plugins.spin]", "[plugins.spin]\ntimeout_ms = 300");
    std::fs::write(&config, text).unwrap();
    let started = std::time::Instant::now();
    let (rc, out) = call(&env, "spin", "{}");
    assert_eq!(rc, 1);
    assert_eq!(out["error"]["code"], "timed_out", "{out}");
    assert!(
        out["error"]["message"].as_str().unwrap().contains("spin"),
        "{out}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
}

#[test]
fn plugins_new_scaffolds_a_crate() {
    let env = Env::new();
    let dir = env.dir.path().join("my-plugin");
    let out = env.bosun(&[
        "plugins",
        "new",
        "my-plugin",
        "--dir",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    for file in ["Cargo.toml", "build.rs", "src/lib.rs", "src/spec.rs"] {
        assert!(Path::new(&dir).join(file).exists(), "{file}");
    }
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    assert!(
        manifest.contains("name = \"my-plugin\"") && manifest.contains("[patch.crates-io]"),
        "{manifest}"
    );
    // The SDK goes with the crate, named by a relative path: nothing points into this checkout.
    assert!(
        manifest.contains("bosun-sdk = { path = \"vendor/bosun-sdk\" }"),
        "{manifest}"
    );
    assert!(!manifest.contains(env!("CARGO_MANIFEST_DIR")), "{manifest}");
    for file in [
        "vendor/bosun-sdk/Cargo.toml",
        "vendor/bosun-sdk/src/lib.rs",
        "vendor/bosun-sdk/wit/v1/plugin.wit",
    ] {
        assert!(dir.join(file).is_file(), "{file}");
    }
    let sdk = std::fs::read_to_string(dir.join("vendor/bosun-sdk/Cargo.toml")).unwrap();
    assert!(!sdk.contains("workspace"), "{sdk}");
    // Never over an existing directory.
    assert_ne!(
        code(&env.bosun(&[
            "plugins",
            "new",
            "my-plugin",
            "--dir",
            dir.to_str().unwrap()
        ])),
        0
    );
}

#[test]
fn web_search_uses_the_configured_endpoint() {
    let env = Env::new();
    install(&env, "web-tools", bosun_test_programs::WEB_TOOLS);
    enable(&env, "web", "web-tools");
    let port = serve(
        r#"{"results": [{"title": "Bosun docs", "url": "https://example.com/bosun", "content": "An agent host."}]}"#,
    );
    let config = env.home().join("config.toml");
    let base = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        format!(
            "{base}\n[plugins.web.config]\nsearch_endpoint = \"http://127.0.0.1:{port}/search\"\n\n\
             [[policy.rules]]\naction = \"net.http\"\nhost = \"127.0.0.1\"\ndecision = \"allow\"\n"
        ),
    )
    .unwrap();
    let (rc, out) = call(&env, "web_search", r#"{"query": "bosun agent"}"#);
    assert_eq!(rc, 0, "{out}");
    assert!(out["output"].to_string().contains("Bosun docs"), "{out}");
    // The endpoint's host was judged by policy as a capability of the call.
    let trace = std::fs::read_to_string(env.runs().last().unwrap()).unwrap();
    assert!(trace.contains("net.http"), "{trace}");
}

fn scan_fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../plugins/tests/fixtures/scan")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

#[test]
fn plugins_scan_passes_a_clean_plugin_and_refuses_a_hostile_one() {
    let env = Env::new();
    let out = env.bosun(&["plugins", "scan", &scan_fixture("clean")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("1 file scanned, 0 findings, total 0\nsnapshot sha256 "),
        "{text}"
    );
    assert!(
        text.ends_with(
            "passed (a review aid: the sandbox still confines whatever the plugin does)\n"
        ),
        "{text}"
    );

    // Every line of the hostile fixture evades Triggerfish's regexes; each is found, in place.
    let out = env.bosun(&["plugins", "scan", &scan_fixture("hostile")]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "lib/collect.js:3:8  [environment, weight 2]  reads the process environment (Deno.env.toObject)\n\
         lib/collect.js:4:14  [subprocess, weight 3]  runs a subprocess (Deno.Command)\n\
         mod.ts:3:1  [remote_import, weight 3]  imports code from the network (https://evil.example/helper.js)\n\
         mod.ts:8:16  [prompt_injection, weight 3]  prompt injection assembled from pieces: tells the model to ignore its instructions (\"ignore all previous instructions\")\n\
         mod.ts:15:54  [code_execution, weight 3]  calls eval indirectly\n\
         2 files scanned, 5 findings, total 14\n\
         snapshot sha256 a49e87e993efc84702e8ac5afb3a7ad3aaef042f30bbe70941fd658611b7e971: exactly the files trust would pin and the engine would load\n\
         refused: a finding of weight 3 refuses on its own\n"
    );

    let out = env.bosun(&["plugins", "scan", &scan_fixture("hostile"), "--json"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let report = json(&out);
    assert_eq!(
        (
            &report["files_scanned"],
            &report["total"],
            &report["refused"]
        ),
        (&Value::from(2), &Value::from(14), &Value::from(true))
    );
    assert_eq!(
        report["findings"][4],
        serde_json::json!({
            "category": "code_execution",
            "rule": "eval",
            "weight": 3,
            "file": "mod.ts",
            "line": 15,
            "column": 54,
            "message": "calls eval indirectly",
            "snippet": "(0, eval)",
        })
    );

    // Usage errors: no path, a path that does not exist.
    assert_eq!(code(&env.bosun(&["plugins", "scan"])), 2);
    let out = env.bosun(&["plugins", "scan", "no-such-plugin"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("no-such-plugin does not exist: give the plugin's directory"),
        "{}",
        stderr(&out)
    );
}

/// What a person reads from `tools list` and `plugins list` with plugins installed: a snapshot,
/// so a change to the rendering is a reviewed change.
#[test]
fn tools_and_plugins_lists_render_for_a_person() {
    let env = Env::new();
    install(&env, "hello", bosun_test_programs::HELLO);
    enable(&env, "hi", "hello");
    install(&env, "broken", bosun_test_programs::ZERO_WIDTH_DESCRIPTION);
    let out = env.bosun(&["tools", "list"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    insta::assert_snapshot!("tools_list", String::from_utf8_lossy(&out.stdout));
    let out = env.bosun(&["plugins", "list"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    insta::assert_snapshot!("plugins_list", String::from_utf8_lossy(&out.stdout));
}

/// What a person reads from `plugins scan` (the findings, the verdict and the snapshot's hash)
/// and from `plugins info` for each format: snapshots, so a change to the rendering is a
/// reviewed change.
#[test]
fn scan_findings_and_plugin_info_render_for_a_person() {
    let env = Env::new();
    let fixtures =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/tests/fixtures/scan");
    for name in ["clean", "hostile"] {
        let out = env.bosun(&["plugins", "scan", fixtures.join(name).to_str().unwrap()]);
        insta::assert_snapshot!(format!("scan_{name}"), String::from_utf8_lossy(&out.stdout));
    }
    install(&env, "hello", bosun_test_programs::HELLO);
    enable(&env, "hi", "hello");
    let out = env.bosun(&["plugins", "info", "hi"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let home = env.home().display().to_string();
    // The component's hash follows the guest build; the rendering around it is what is pinned.
    let text = String::from_utf8_lossy(&out.stdout).replace(&home, "$BOSUN_HOME");
    let text: String = text
        .lines()
        .map(|line| {
            line.split(' ')
                .map(|word| {
                    if word.len() == 64 && word.bytes().all(|b| b.is_ascii_hexdigit()) {
                        "<sha256>"
                    } else {
                        word
                    }
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join("\n");
    insta::assert_snapshot!("plugins_info_native", text);
}

#[test]
fn an_enable_that_fails_takes_its_entry_back() {
    let env = Env::new();
    // No config at all before: none after.
    let out = env.bosun(&[
        "plugins",
        "enable",
        "ghost",
        "--path",
        "no-such-dir",
        "--yes",
    ]);
    assert_ne!(code(&out), 0);
    assert!(stderr(&out).contains("was taken back"), "{}", stderr(&out));
    assert!(!env.home().join("config.toml").exists());
    // A config with comments: byte for byte the same after a failed enable.
    let text = "# my settings\nmode = \"workspace-write\"\n";
    env.user_config(text);
    let out = env.bosun(&[
        "plugins",
        "enable",
        "ghost",
        "--path",
        "no-such-dir",
        "--yes",
    ]);
    assert_ne!(code(&out), 0);
    assert_eq!(
        std::fs::read_to_string(env.home().join("config.toml")).unwrap(),
        text
    );
    // A real plugin, but nobody to confirm the trust: nothing is written either.
    install(&env, "hello", bosun_test_programs::HELLO);
    let out = env.bosun(&["plugins", "enable", "hi", "--path", "hello"]);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(env.home().join("config.toml")).unwrap(),
        text
    );
    // And with --yes it is enabled.
    enable(&env, "hi", "hello");
    assert!(
        std::fs::read_to_string(env.home().join("config.toml"))
            .unwrap()
            .contains("[plugins.hi]")
    );
}

#[test]
fn a_call_to_a_tool_whose_plugin_changed_says_so() {
    let env = Env::new();
    install(&env, "hello", bosun_test_programs::HELLO);
    enable(&env, "hi", "hello");
    let (rc, out) = call(&env, "greet", r#"{"name": "Ada"}"#);
    assert_eq!(rc, 0, "{out}");
    // The same component with one more (custom) section: other bytes, so no longer trusted.
    let wasm = env.home().join("plugins/hello/plugin.wasm");
    let mut bytes = std::fs::read(&wasm).unwrap();
    bytes.extend_from_slice(&[0x00, 0x05, 0x04, b'n', b'o', b't', b'e']);
    std::fs::write(&wasm, bytes).unwrap();
    assert_eq!(state_of(&env, "hi"), "changed");
    let (rc, out) = call(&env, "greet", r#"{"name": "Ada"}"#);
    assert_eq!(rc, 1, "{out}");
    let message = out["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("changed since you trusted it"),
        "{message}"
    );
    assert!(message.contains("bosun plugins trust hi"), "{message}");
    // A name nobody has is still simply unknown.
    let (_, out) = call(&env, "no_such_tool", "{}");
    assert!(
        out["error"]["message"]
            .as_str()
            .unwrap()
            .contains("there is no tool named"),
        "{out}"
    );
}

#[test]
fn plugins_new_forge_and_triggerfish_then_install_them_and_call_their_tool() {
    let env = Env::new();
    for (flag, name) in [("--forge", "hello-forge"), ("--triggerfish", "hello-tf")] {
        let dir = env.dir.path().join(name);
        let out = env.bosun(&["plugins", "new", name, flag, "--dir", dir.to_str().unwrap()]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let out = env.bosun(&["plugins", "install", dir.to_str().unwrap(), "--yes"]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert!(env.home().join("plugins").join(name).is_dir());
    }
    let listed = list(&env);
    let tools: Vec<String> = {
        let out = env.bosun(&["tools", "list", "--json"]);
        json(&out)
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .filter(|n| n.contains("greet"))
            .collect()
    };
    assert_eq!(tools.len(), 2, "{tools:?} {listed:?}");
    for tool in &tools {
        let (rc, out) = call(&env, tool, r#"{"name": "Ada"}"#);
        assert_eq!(rc, 0, "{tool}: {out}");
        assert!(out.to_string().contains("Hello, Ada!"), "{out}");
    }
}

#[test]
fn install_copies_a_component_links_a_directory_and_leaves_nothing_when_it_fails() {
    let env = Env::new();
    // A .wasm file: installed as plugin.wasm under its name.
    let wasm = env.dir.path().join("hello.wasm");
    std::fs::copy(bosun_test_programs::HELLO, &wasm).unwrap();
    let out = env.bosun(&[
        "plugins",
        "install",
        wasm.to_str().unwrap(),
        "--name",
        "hi",
        "--yes",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(env.home().join("plugins/hi/plugin.wasm").is_file());
    let (rc, out) = call(&env, "greet", r#"{"name": "Ada"}"#);
    assert_eq!(rc, 0, "{out}");
    // Installed already: refused, nothing changed.
    let out = env.bosun(&[
        "plugins",
        "install",
        wasm.to_str().unwrap(),
        "--name",
        "hi",
        "--yes",
    ]);
    assert_ne!(code(&out), 0);
    assert!(
        stderr(&out).contains("installed already"),
        "{}",
        stderr(&out)
    );
    // Nobody confirms the trust: neither the copy nor the config entry stays.
    let config_before = std::fs::read_to_string(env.home().join("config.toml")).unwrap();
    let out = env.bosun(&[
        "plugins",
        "install",
        wasm.to_str().unwrap(),
        "--name",
        "other",
    ]);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert!(!env.home().join("plugins/other").exists());
    assert_eq!(
        std::fs::read_to_string(env.home().join("config.toml")).unwrap(),
        config_before
    );
    // A crate not built yet says how to build it.
    let krate = env.dir.path().join("unbuilt");
    std::fs::create_dir_all(&krate).unwrap();
    std::fs::write(
        krate.join("Cargo.toml"),
        "[package]\nname = \"unbuilt\"\nversion = \"0.1.0\"\n",
    )
    .unwrap();
    let out = env.bosun(&["plugins", "install", krate.to_str().unwrap(), "--yes"]);
    assert_ne!(code(&out), 0);
    assert!(
        stderr(&out).contains("cargo build --target wasm32-wasip2 --release"),
        "{}",
        stderr(&out)
    );
    // --link: used where it is; an edit makes it changed, asking for trust again.
    let dev = env.dir.path().join("dev-plugin");
    std::fs::create_dir_all(&dev).unwrap();
    std::fs::copy(bosun_test_programs::HELLO, dev.join("plugin.wasm")).unwrap();
    let out = env.bosun(&[
        "plugins",
        "install",
        dev.to_str().unwrap(),
        "--link",
        "--name",
        "dev",
        "--yes",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(!env.home().join("plugins/dev").exists());
    assert_eq!(state_of(&env, "dev"), "enabled");
    let mut bytes = std::fs::read(dev.join("plugin.wasm")).unwrap();
    bytes.extend_from_slice(&[0x00, 0x05, 0x04, b'n', b'o', b't', b'e']);
    std::fs::write(dev.join("plugin.wasm"), bytes).unwrap();
    assert_eq!(state_of(&env, "dev"), "changed");
}

/// `bosun plugins new NAME --forge --dir DIR`, which must succeed.
fn new_forge(env: &Env, name: &str, dir: &Path) {
    let out = env.bosun(&[
        "plugins",
        "new",
        name,
        "--forge",
        "--dir",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

#[test]
fn enabling_a_javascript_plugin_prepares_the_engine_then_and_says_so() {
    let env = Env::new();
    let dir = env.dir.path().join("hello-js");
    new_forge(&env, "hello-js", &dir);
    let out = env.bosun(&["plugins", "install", dir.to_str().unwrap(), "--yes"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let said = stderr(&out);
    assert!(
        said.contains("preparing Bosun's JavaScript engine"),
        "{said}"
    );
    assert!(said.contains("ready in"), "{said}");
    // Compiled once: the first call says nothing of it.
    let out = env.bosun(&["tools", "call", "greet", r#"{"name": "Ada"}"#, "--yes"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(!stderr(&out).contains("preparing"), "{}", stderr(&out));

    // The compiled engine is gone (a cleared cache, a new machine): the call that compiles it
    // again says so first, exactly once, and the next call says nothing.
    clear_engine(&env);
    let out = env.bosun(&["tools", "call", "greet", r#"{"name": "Ada"}"#, "--yes"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("Hello, Ada!"), "{said}");
    assert_eq!(engine_notices(&out), 1, "{}", stderr(&out));
    let out = env.bosun(&["tools", "call", "greet", r#"{"name": "Ada"}"#, "--yes"]);
    assert!(!stderr(&out).contains("preparing"), "{}", stderr(&out));

    // `bosun run` says it the same way, from the engine that compiles when the model first
    // calls the plugin's tool.
    let (_runtime, server) = super::run::serve([
        bosun_agent::scripted::Step::call("greet", serde_json::json!({"name": "Ada"})),
        bosun_agent::scripted::Step::text("Done."),
    ]);
    let config = std::fs::read_to_string(env.home().join("config.toml")).unwrap_or_default();
    env.user_config(&format!(
        "{}\n{config}",
        super::run::model_config(&server, "")
    ));
    clear_engine(&env);
    let out = env.bosun(&["run", "Say hello.", "--yes"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let sent = serde_json::to_string(&server.requests()).unwrap();
    assert!(sent.contains("Hello, Ada!"), "{sent}");
    assert_eq!(engine_notices(&out), 1, "{}", stderr(&out));
}

/// How many times a command said it was compiling the JavaScript engine.
fn engine_notices(out: &std::process::Output) -> usize {
    stderr(out)
        .matches("preparing Bosun's JavaScript engine")
        .count()
}

/// Removes the compiled JavaScript engine from `env`'s cache (the only artefact there).
fn clear_engine(env: &Env) {
    let mut removed = 0;
    for entry in std::fs::read_dir(env.home().join("cache")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "cwasm") {
            std::fs::remove_file(&path).unwrap();
            removed += 1;
        }
    }
    assert_eq!(
        removed, 1,
        "the engine's artefact is the only one in the cache"
    );
}

#[test]
fn a_plugin_whose_activation_throws_is_named_once_with_what_it_threw() {
    let env = Env::new();
    let dir = env.dir.path().join("boom");
    new_forge(&env, "boom", &dir);
    std::fs::write(
        dir.join("index.mjs"),
        "export default function activate(api) {\n  throw new TypeError(\"activation went wrong\");\n}\n",
    )
    .unwrap();
    let out = env.bosun(&["plugins", "install", dir.to_str().unwrap(), "--yes"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = env.bosun(&["tools", "list"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let said = stderr(&out);
    let lines: Vec<&str> = said.lines().filter(|l| l.contains("boom")).collect();
    assert_eq!(lines.len(), 1, "{said}");
    // What it threw, and where in the plugin's own code.
    assert!(
        lines[0].starts_with(
            "warning: plugin `boom` was not loaded: its activate() threw TypeError: activation went wrong (at index.mjs:2:"
        ) && lines[0].ends_with(')'),
        "{said}"
    );
}

/// The descriptions kept of JavaScript activations, by file.
fn kept_descriptions(env: &Env) -> Vec<std::path::PathBuf> {
    let dir = env.home().join("cache/js-plugins");
    let mut kept: Vec<_> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect()
        })
        .unwrap_or_default();
    kept.sort();
    kept
}

#[test]
fn a_kept_description_lists_a_javascript_plugin_without_running_it_and_one_that_lies_is_refused() {
    let env = Env::new();
    let dir = env.dir.path().join("hello-js");
    new_forge(&env, "hello-js", &dir);
    let out = env.bosun(&["plugins", "install", dir.to_str().unwrap(), "--yes"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(tool_names(&env).contains(&"greet".to_owned()));
    let kept = kept_descriptions(&env);
    assert_eq!(kept.len(), 1, "{kept:?}");

    // The kept description names a tool the plugin's code does not have. Listing shows it:
    // no code ran to list the plugin.
    let mut described: Value = serde_json::from_slice(&std::fs::read(&kept[0]).unwrap()).unwrap();
    let mut ghost = described["tools"][0].clone();
    ghost["name"] = "ghost".into();
    described["tools"].as_array_mut().unwrap().push(ghost);
    std::fs::write(&kept[0], serde_json::to_vec(&described).unwrap()).unwrap();
    let names = tool_names(&env);
    assert!(names.contains(&"ghost".to_owned()), "{names:?}");

    // Calling it activates the plugin, which registers something else: refused, not run.
    let (rc, out) = call(&env, "ghost", r#"{"name": "Ada"}"#);
    assert_ne!(rc, 0, "{out}");
    assert!(
        out["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("registered other tools or hooks than when it was listed"),
        "{out}"
    );
    // ... and what it really registers is kept for the next start.
    let names = tool_names(&env);
    assert!(!names.contains(&"ghost".to_owned()), "{names:?}");
    let (rc, out) = call(&env, "greet", r#"{"name": "Ada"}"#);
    assert_eq!(rc, 0, "{out}");
    assert!(out.to_string().contains("Hello, Ada!"), "{out}");
    // A description that cannot be read is no description: the plugin is activated again.
    std::fs::write(&kept_descriptions(&env)[0], b"{ not json").unwrap();
    let (rc, out) = call(&env, "greet", r#"{"name": "Grace"}"#);
    assert_eq!(rc, 0, "{out}");
    assert!(out.to_string().contains("Hello, Grace!"), "{out}");
}

#[test]
fn a_kept_javascript_policy_hook_still_decides_every_call() {
    let env = Env::new();
    let dir = env.dir.path().join("policy-guard");
    std::fs::create_dir_all(&dir).unwrap();
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../js/engine/js/test/fixtures/policy-guard");
    for file in ["plugin.json", "index.mjs"] {
        std::fs::copy(fixture.join(file), dir.join(file)).unwrap();
    }
    let out = env.bosun(&["plugins", "install", dir.to_str().unwrap(), "--yes"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    // The first start activates and keeps the description; the next ones list from it, and
    // the hook still fires on a built-in's call (activating the plugin then).
    for _ in 0..3 {
        let (rc, out) = call(&env, "run_command", r#"{"program": "ls", "args": []}"#);
        assert_ne!(rc, 0, "{out}");
        assert!(
            out.to_string().contains("only pnpm or npm may run"),
            "{out}"
        );
        assert_eq!(kept_descriptions(&env).len(), 1);
    }
}

/// A Triggerfish plugin that cannot make its executor: it throws on line 26 of its TypeScript.
/// The types above are erased, so the JavaScript that runs has the throw some lines higher.
const THROWS_TS: &str = r#"// A TypeScript plugin that throws.
export const manifest = {
  name: "tsboom",
  version: "1.0.0",
  description: "Throws.",
  classification: "PUBLIC",
  trust: "sandboxed",
  declaredEndpoints: [],
} as const;

interface Input {
  text: string;
  count?: number;
}

type Reply = { words: number };

export const toolDefinitions = [
  { name: "explode", description: "Throws.", parameters: { text: { type: "string", description: "Any.", required: true } } },
];

export function createExecutor(_context: { pluginName: string }) {
  const reply: Reply = { words: 0 };
  if (reply.words === 0) {
    // No executor can be made.
    throw new RangeError(`no executor: ${reply.words} words`);
  }
  return async (name: string, input: Input): Promise<string | null> => JSON.stringify({ name, input });
}
"#;

#[test]
fn an_error_in_a_typescript_plugin_names_the_line_its_author_wrote() {
    let env = Env::new();
    let dir = env.dir.path().join("tsboom");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("mod.ts"), THROWS_TS).unwrap();
    let install = env.bosun(&["plugins", "install", dir.to_str().unwrap(), "--yes"]);
    let list = env.bosun(&["tools", "list"]);
    let said = format!("{}{}", stderr(&install), stderr(&list));
    assert!(said.contains("RangeError: no executor: 0 words"), "{said}");
    // Line 26 of mod.ts, where the author wrote the throw — not the erased JavaScript's line.
    assert!(said.contains("(at mod.ts:26:"), "{said}");
}

/// A Bosun killed mid-write (config, trust, sessions, caches) leaves its temporary files; the
/// next command removes the abandoned ones and keeps the one another live process is writing.
#[test]
fn a_killed_writers_temporaries_are_swept_at_start_and_in_flight_ones_kept() {
    use std::time::{Duration, SystemTime};
    let env = Env::new();
    let home = env.home();
    let hour_ago = SystemTime::now() - Duration::from_secs(3600);
    let leftover = |relative: &str| {
        let path = home.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let file = std::fs::File::create(&path).unwrap();
        file.set_modified(hour_ago).unwrap();
        (path, file)
    };
    let abandoned: Vec<_> = [
        ".config.toml.Ab12Cd.tmp",
        ".trust.toml.x9Y8z7.tmp",
        "sessions/.0190ab.json.q1w2e3.tmp",
        "approvals/.0a1b.toml.r4t5y6.tmp",
        "cache/.tmp-u7i8o9.cwasm",
    ]
    .into_iter()
    .map(|name| leftover(name).0)
    .collect();
    // In flight in a live process (this test): locked, however old its date.
    let (in_flight, held) = leftover(".trust.toml.p0o9i8.tmp");
    held.try_lock().unwrap();
    // Just created by a writer that has not locked it yet: too young to judge.
    let (fresh, fresh_file) = leftover(".config.toml.l1k2j3.tmp");
    fresh_file.set_modified(SystemTime::now()).unwrap();
    // The author's files in a plugin directory are not Bosun's to remove.
    let (authors, _) = leftover("plugins/web/.cache.m4n5b6.tmp");

    // An install killed while staging its copy, and one still staging in a live process.
    let staging = |name: String| {
        let dir = home.join("plugins").join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("data.txt"), "half copied").unwrap();
        std::fs::File::open(&dir)
            .unwrap()
            .set_modified(hour_ago)
            .unwrap();
        dir
    };
    let killed_install = staging(".install-web-99999999".to_owned());
    let live_install = staging(format!(".install-web-{}", std::process::id()));
    // The live one has copied the plugin's file already: still no plugin of the list.
    std::fs::write(live_install.join("plugin.wasm"), "half copied").unwrap();

    let out = env.bosun(&["plugins", "list", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(!listed.contains(".install-"), "{listed}");
    for path in abandoned.iter().chain([&killed_install]) {
        assert!(!path.exists(), "{} was left", path.display());
    }
    for path in [&in_flight, &fresh, &authors, &live_install] {
        assert!(path.exists(), "{} was removed", path.display());
    }
    drop(held);
    // The home is walked for temporaries once per ten minutes, not at every start (installs
    // in flight are settled at every start).
    let out = env.bosun(&["config", "check"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(in_flight.exists(), "the walk waits for its interval");
    std::fs::File::options()
        .write(true)
        .open(home.join(".swept"))
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(601))
        .unwrap();
    let out = env.bosun(&["config", "check"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(!in_flight.exists(), "an unlocked, old temporary is removed");
}

/// A Forge plugin reads its own `settings.json` with `node:fs/promises` (as web-tools 1.1 does),
/// through the host: the bytes come from the snapshot trust pinned, and a read outside is EACCES.
#[test]
fn a_forge_plugin_reads_its_own_settings_and_nothing_outside() {
    let env = Env::new();
    let dir = env.dir.path().join("web-settings");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("plugin.json"),
        r#"{"schemaVersion": 1, "apiVersion": "1", "name": "web-settings", "version": "1.1.0",
            "entry": "./index.mjs", "capabilities": ["tools:register"]}"#,
    )
    .unwrap();
    std::fs::write(dir.join("settings.json"), r#"{"maxResults": 7}"#).unwrap();
    std::fs::write(
        dir.join("index.mjs"),
        r#"import { readFile } from "node:fs/promises";
import { readFileSync } from "node:fs";
export async function activate(api) {
  const settings = JSON.parse(await readFile(new URL("./settings.json", import.meta.url), "utf8"));
  api.registerTool({ name: "settings_probe", description: "Shows its settings.", risk: "read",
    inputSchema: api.z.object({ path: api.z.string() }),
    execute: async ({ path }) => {
      let outside;
      try { readFileSync(path, "utf8"); outside = "read"; } catch (e) { outside = e.code; }
      return { ok: true, output: { maxResults: settings.maxResults, outside }, truncated: false };
    } });
}
"#,
    )
    .unwrap();
    let out = env.bosun(&["plugins", "install", dir.to_str().unwrap(), "--yes"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let secret = env.home().join("secret.txt");
    std::fs::write(&secret, "the user's secret\n").unwrap();
    for path in [secret.to_str().unwrap(), "../../secret.txt", "/etc/passwd"] {
        let input = serde_json::json!({ "path": path }).to_string();
        let (rc, out) = call(&env, "settings_probe", &input);
        assert_eq!(rc, 0, "{out}");
        assert_eq!(out["output"]["maxResults"], 7, "{out}");
        assert_eq!(out["output"]["outside"], "EACCES", "{path}: {out}");
    }
    // A link out of the installed directory never becomes something the plugin reads: the
    // plugin is no longer loaded at all.
    let installed = env.home().join("plugins/web-settings/settings.json");
    std::fs::remove_file(&installed).unwrap();
    std::os::unix::fs::symlink(&secret, &installed).unwrap();
    let input = serde_json::json!({ "path": "settings.json" }).to_string();
    let (rc, out) = call(&env, "settings_probe", &input);
    assert_ne!(rc, 0, "{out}");
    assert!(!out.to_string().contains("the user's secret"), "{out}");
}

/// A Forge entry `index.js` written as CommonJS (no package.json, no ES syntax: CommonJS to
/// Node) loads like the ES form, its `module.exports = { activate }` found.
#[test]
fn a_commonjs_index_js_entry_loads_like_the_es_form() {
    let env = Env::new();
    let dir = env.dir.path().join("cjs-tools");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("plugin.json"),
        r#"{"schemaVersion": 1, "apiVersion": "1", "name": "cjs-tools", "version": "1.0.0",
            "entry": "./index.js", "capabilities": ["tools:register"]}"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("index.js"),
        r#"const greeting = require === undefined ? "?" : "Hello";
module.exports = {
  activate(api) {
    api.registerTool({ name: "cjs_hello", description: "Says hello.", risk: "read",
      inputSchema: api.z.object({}),
      execute: async () => ({ ok: true, output: greeting + " from CommonJS", truncated: false }) });
  },
};
"#,
    )
    .unwrap();
    let out = env.bosun(&["plugins", "install", dir.to_str().unwrap(), "--yes"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let (rc, out) = call(&env, "cjs_hello", "{}");
    assert_eq!(rc, 0, "{out}");
    assert_eq!(out["output"], "Hello from CommonJS", "{out}");
}

#[test]
fn a_rebuilt_plugin_is_replaced_with_force_and_removed_with_its_trust() {
    let env = Env::new();
    let dir = env.dir.path().join("hello-tf");
    let out = env.bosun(&[
        "plugins",
        "new",
        "hello-tf",
        "--triggerfish",
        "--dir",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = env.bosun(&["plugins", "install", dir.to_str().unwrap(), "--yes"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let installed = env.home().join("plugins/hello-tf/mod.ts");
    let first = std::fs::read_to_string(&installed).unwrap();

    // Rebuilt: without --force the install is refused and the old copy stays.
    std::fs::write(dir.join("mod.ts"), format!("{first}\n// rebuilt\n")).unwrap();
    let out = env.bosun(&["plugins", "install", dir.to_str().unwrap(), "--yes"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("installed already"),
        "{}",
        stderr(&out)
    );
    // Not trusted (no terminal, no --yes): the old copy stays, still enabled and trusted.
    let out = env.bosun(&["plugins", "install", dir.to_str().unwrap(), "--force"]);
    assert_ne!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&installed).unwrap(), first);
    assert_eq!(state_of(&env, "hello-tf"), "enabled");
    let out = env.bosun(&[
        "plugins",
        "install",
        dir.to_str().unwrap(),
        "--force",
        "--yes",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        std::fs::read_to_string(&installed)
            .unwrap()
            .ends_with("// rebuilt\n")
    );
    assert_eq!(state_of(&env, "hello-tf"), "enabled");
    let names: Vec<_> = std::fs::read_dir(env.home().join("plugins"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, ["hello-tf"]);

    // Removing asks; without a terminal and --yes nothing goes.
    let out = env.bosun(&["plugins", "remove", "hello-tf"]);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert!(installed.exists());
    let out = env.bosun(&["plugins", "remove", "hello-tf", "--yes"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(!env.home().join("plugins/hello-tf").exists());
    assert!(list(&env).iter().all(|p| p["local_name"] != "hello-tf"));
    let config = std::fs::read_to_string(env.home().join("config.toml")).unwrap();
    assert!(!config.contains("hello-tf"), "{config}");
    let trust = std::fs::read_to_string(env.home().join("trust.toml")).unwrap_or_default();
    assert!(!trust.contains("hello-tf"), "{trust}");
    let out = env.bosun(&["plugins", "remove", "hello-tf", "--yes"]);
    assert_eq!(code(&out), 2);
}

/// Several `bosun plugins install` of different plugins started at once: each writes the user
/// config and the trust store, and none drops another's change, so every plugin is listed
/// enabled (trusted and loadable) afterwards and answers a call.
#[test]
fn concurrent_installs_keep_every_plugin_trusted() {
    let env = Env::new();
    let wasm = env.dir.path().join("hello.wasm");
    std::fs::copy(bosun_test_programs::HELLO, &wasm).unwrap();
    let names: Vec<String> = (0..6).map(|i| format!("hello{i}")).collect();
    let children: Vec<_> = names
        .iter()
        .map(|name| {
            std::process::Command::new(env!("CARGO_BIN_EXE_bosun"))
                .args(["plugins", "install", wasm.to_str().unwrap(), "--name", name])
                .arg("--yes")
                .current_dir(env.ws())
                .env("BOSUN_HOME", env.home())
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for (name, child) in names.iter().zip(children) {
        let out = child.wait_with_output().unwrap();
        assert_eq!(code(&out), 0, "install {name}: {}", stderr(&out));
    }
    let listed = list(&env);
    for name in &names {
        let entry = listed
            .iter()
            .find(|p| p["local_name"] == name.as_str())
            .unwrap_or_else(|| panic!("{name} is not listed: {listed:?}"));
        assert_eq!(entry["state"], "enabled", "{name}: {entry}");
    }
    let trust = std::fs::read_to_string(env.home().join("trust.toml")).unwrap();
    for name in &names {
        assert!(trust.contains(&format!("[scopes.user.{name}]")), "{trust}");
    }
}
