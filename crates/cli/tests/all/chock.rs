//! Chock plugins through the real binary: a module assembled from WebAssembly text (Bosun's
//! own, written from Chock's published layout), enabled, trusted, listed and called like every
//! other format, and hostile modules that are refused or stopped with the host unaffected.

use bosun_plugins::chock::fixture::ChockFixture;
use pretty_assertions::assert_eq;
use serde_json::Value;

use super::{Env, code, json, stderr};

/// Writes `fixture` as `$BOSUN_HOME/plugins/<dir>/plugin.wasm`, names it in the user config
/// with `extra` lines, and trusts it; returns the trust command's output.
fn install(env: &Env, dir: &str, fixture: &ChockFixture, extra: &str) -> std::process::Output {
    let target = env.home().join("plugins").join(dir);
    std::fs::create_dir_all(&target).unwrap();
    let wasm = wat::parse_str(fixture.module_wat()).unwrap();
    std::fs::write(target.join("plugin.wasm"), wasm).unwrap();
    let path = env.home().join("config.toml");
    let mut text = std::fs::read_to_string(&path).unwrap_or_default();
    text.push_str(&format!("\n[plugins.{dir}]\npath = \"{dir}\"\n{extra}\n"));
    std::fs::write(&path, text).unwrap();
    env.bosun(&["plugins", "trust", dir, "--yes"])
}

fn call(env: &Env, tool: &str, input: &str) -> (i32, Value) {
    let out = env.bosun(&["tools", "call", tool, input, "--json", "--yes"]);
    let value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("{tool}: not JSON: {}", stderr(&out)));
    (code(&out), value)
}

#[test]
fn chocks_hello_loads_lists_and_answers() {
    let env = Env::new();
    let out = install(&env, "hello", &ChockFixture::hello(false), "");
    assert_eq!(code(&out), 0, "{}", stderr(&out));

    let out = env.bosun(&["plugins", "list", "--json"]);
    let listed = json(&out);
    let entry = &listed["plugins"][0];
    assert_eq!(entry["format"], "chock", "{entry}");
    assert_eq!(entry["state"], "enabled", "{entry}");
    assert_eq!(entry["chock"]["abi"], "V2", "{entry}");

    let out = env.bosun(&["plugins", "info", "hello"]);
    let info = String::from_utf8_lossy(&out.stdout);
    assert!(info.contains("chock plugin"), "{info}");
    assert!(info.contains("Chock plugin ABI 2"), "{info}");

    let (status, result) = call(&env, "hello", "{}");
    assert_eq!(status, 0, "{result}");
    assert_eq!(result["output"], "Hello, world!");
    let (_, result) = call(&env, "greet", r#"{"who": "Ross"}"#);
    assert_eq!(result["output"], "Hello, Ross!");
    let (_, result) = call(&env, "greet", r#"{"who": "Ross", "loudly": true}"#);
    assert_eq!(result["output"], "HELLO, ROSS!");
    // The policy action is `plugin.<local name>.tool.<tool>`, and the trace records the call.
    let out = env.bosun(&["inspect", "last", "--json"]);
    let trace = String::from_utf8_lossy(&out.stdout);
    assert!(trace.contains("plugin.hello.tool.greet"), "{trace}");
    // The schema the model was shown is enforced before the plugin runs.
    let (status, result) = call(&env, "greet", r#"{"loudly": true}"#);
    assert_eq!(status, 1, "{result}");
    assert_eq!(result["error"]["code"], "invalid_input", "{result}");
}

#[test]
fn abi_1_modules_get_the_raw_argument_text() {
    let env = Env::new();
    let out = install(&env, "old", &ChockFixture::hello_v1(true), "");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let (_, result) = call(&env, "hello", "{}");
    assert_eq!(result["output"], "Hello, world!", "{result}");
    let (_, result) = call(&env, "echo", r#"{"text": "as written"}"#);
    assert_eq!(result["output"], r#"{"text":"as written"}"#, "{result}");
}

#[test]
fn a_changed_module_is_withheld_until_trusted_again() {
    let env = Env::new();
    install(&env, "hello", &ChockFixture::hello(false), "");
    let mut changed = ChockFixture::hello(false);
    changed.init_returns = 2;
    changed.data_at = 2048;
    let wasm = wat::parse_str(changed.module_wat()).unwrap();
    std::fs::write(env.home().join("plugins/hello/plugin.wasm"), wasm).unwrap();
    let out = env.bosun(&["plugins", "list", "--json"]);
    assert_eq!(json(&out)["plugins"][0]["state"], "changed");
    let (status, _) = call(&env, "hello", "{}");
    assert_ne!(status, 0, "a changed plugin's tool must not be offered");
}

#[test]
fn hostile_calls_are_stopped_and_the_host_goes_on() {
    let env = Env::new();
    let out = install(
        &env,
        "hostile",
        &ChockFixture::hello(true),
        // Room for a loaded machine to start and answer the quick calls; `spin` runs into it.
        "timeout_ms = 2000",
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let cases = [
        ("spin", "timed_out", ""),
        ("wild_answer", "plugin_error", "outside its memory"),
        ("wild_text", "plugin_error", "outside its memory"),
        ("odd_outcome", "plugin_error", "outcome 7"),
        ("fail", "plugin_error", "the tool failed on purpose"),
    ];
    for (tool, want_code, want_text) in cases {
        let (status, result) = call(&env, tool, "{}");
        assert_eq!(status, 1, "{tool}: {result}");
        assert_eq!(result["error"]["code"], want_code, "{tool}: {result}");
        let message = result["error"]["message"].as_str().unwrap();
        assert!(message.contains(want_text), "{tool}: {message}");
    }
    let (status, result) = call(&env, "hello", "{}");
    assert_eq!(status, 0, "{result}");
    assert_eq!(result["output"], "Hello, world!");
}

#[test]
fn a_module_that_binds_other_tools_than_it_declares_is_stopped() {
    let env = Env::new();
    let mut lying = ChockFixture::hello(false);
    lying.init_returns = 5;
    install(&env, "liar", &lying, "");
    let (status, result) = call(&env, "hello", "{}");
    assert_eq!(status, 1, "{result}");
    let message = result["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("chock_plugin_init bound 5 tools"),
        "{message}"
    );
}

#[test]
fn hostile_modules_are_invalid_and_the_others_still_load() {
    let env = Env::new();
    install(&env, "good", &ChockFixture::hello(false), "");
    let mut importing = ChockFixture::hello(false);
    importing.import = Some(("env".into(), "read_file".into()));
    let mut outside = ChockFixture::hello(false);
    outside.metadata_global = Some(0x7fff_0000);
    let mut no_abi = ChockFixture::hello(false);
    no_abi.magic_global = Some(60_000);
    let mut lying_length = ChockFixture::hello(false);
    lying_length.blob[8..12].copy_from_slice(&100_000u32.to_le_bytes());
    for (name, fixture, reason) in [
        ("importer", &importing, "imports env.read_file"),
        ("outside", &outside, "which no data segment holds"),
        ("noabi", &no_abi, "carries no ABI word"),
        ("liar", &lying_length, "holds fewer"),
    ] {
        install(&env, name, fixture, "");
        let out = env.bosun(&["plugins", "list", "--json"]);
        let listed = json(&out);
        let entry = listed["plugins"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["local_name"] == name)
            .unwrap()
            .clone();
        assert_eq!(entry["state"], "invalid", "{name}: {entry}");
        assert!(
            entry["reason"].as_str().unwrap().contains(reason),
            "{name}: {entry}"
        );
    }
    let (status, result) = call(&env, "greet", r#"{"who": "still here"}"#);
    assert_eq!(status, 0, "{result}");
    assert_eq!(result["output"], "Hello, still here!");
}

#[test]
fn path_may_name_a_chock_module_file_as_chocks_config_does() {
    let env = Env::new();
    let dir = env.dir.path().join("modules");
    std::fs::create_dir_all(&dir).unwrap();
    let module = dir.join("chock-plugin-hello.wasm");
    std::fs::write(
        &module,
        wat::parse_str(ChockFixture::hello(false).module_wat()).unwrap(),
    )
    .unwrap();
    env.user_config(&format!(
        "[plugins.hello]\npath = {:?}\n",
        module.to_str().unwrap()
    ));
    let out = env.bosun(&["plugins", "trust", "hello", "--yes"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let (status, result) = call(&env, "hello", "{}");
    assert_eq!(status, 0, "{result}");
    assert_eq!(result["output"], "Hello, world!");
}

/// A module that asks for more memory than its grant is refused at instantiation, every call,
/// with a clear error naming the plugin.
#[test]
fn a_greedy_module_is_refused_every_time() {
    let env = Env::new();
    let mut greedy = ChockFixture::hello(false);
    greedy.memory_pages = Some(8_000); // 500 MiB, over a 64 MiB grant
    install(&env, "greedy", &greedy, "memory_mib = 64");
    for _ in 0..2 {
        let (status, result) = call(&env, "greet", r#"{"who": "x"}"#);
        assert_eq!(status, 1, "{result}");
        let message = result["error"]["message"].as_str().unwrap();
        assert!(message.contains("greedy"), "{message}");
        assert!(message.to_lowercase().contains("memory"), "{message}");
    }
}

/// A module whose `chock_plugin_init` never returns is stopped at the call's deadline, every
/// call (a fresh instance each time), and the host goes on.
#[test]
fn a_module_whose_init_spins_is_stopped_at_the_deadline() {
    let env = Env::new();
    let mut spinner = ChockFixture::hello_v1(false);
    spinner.init_spins = true;
    install(&env, "spinner", &spinner, "timeout_ms = 300");
    for _ in 0..2 {
        let (status, result) = call(&env, "hello", "{}");
        assert_eq!(status, 1, "{result}");
        assert_eq!(result["error"]["code"], "timed_out", "{result}");
    }
    let out = env.bosun(&[
        "tools",
        "call",
        "read_file",
        r#"{"path": "src/lib.rs"}"#,
        "--json",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

/// A debug build's shape (hundreds of KiB of debug sections, data at 1 MiB) loads and answers
/// like a release build.
#[test]
fn a_debug_shaped_module_runs_like_a_release_one() {
    let env = Env::new();
    let mut debug = ChockFixture::hello(false);
    debug.data_at = 1_048_576;
    debug.debug_bytes = 400 * 1024;
    let out = install(&env, "debug", &debug, "");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let (status, result) = call(&env, "greet", r#"{"who": "Ada", "loudly": true}"#);
    assert_eq!(status, 0, "{result}");
    assert_eq!(result["output"], "HELLO, ADA!");
}

/// Capabilities are priced on every call: Chock's `net.connect.<reversed host>.<port>` is judged
/// as `net.http` to that host, and a rule denying it denies the call; a rule denying the tool's
/// action keeps it out of the session.
#[test]
fn chock_capabilities_and_actions_are_judged_by_policy() {
    use bosun_plugins::chock::fixture::{BlobTool, blob};
    let mut priced = BlobTool::new("priced", "Answers after its price is judged.");
    priced.capabilities = vec!["net.connect.com.example.api.443".into()];
    let fixture = ChockFixture::with_blob(2, blob(2, "priced", "Bosun", "Priced.", &[priced]), 1);
    let env = Env::new();
    install(&env, "priced", &fixture, "");
    let (status, result) = call(&env, "priced", "{}");
    assert_eq!(status, 0, "{result}");
    assert_eq!(result["output"], "Hello, world!");

    let config = std::fs::read_to_string(env.home().join("config.toml")).unwrap();
    env.user_config(&format!(
        "{config}\n[[policy.rules]]\naction = \"net.http\"\nhost = \"api.example.com\"\ndecision = \"deny\"\n"
    ));
    let (status, result) = call(&env, "priced", "{}");
    assert_eq!(status, 3, "{result}");
    assert!(result.to_string().contains("api.example.com"), "{result}");

    env.user_config(&format!(
        "{config}\n[[policy.rules]]\naction = \"plugin.priced.tool.priced\"\ndecision = \"deny\"\n"
    ));
    let out = env.bosun(&["tools", "list", "--json"]);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("\"priced\""));
}

/// One withholding rule for every format: a Chock tool whose declared capability policy denies
/// outright (`net.http` for any host) is left out of the session, as a native tool is.
#[test]
fn a_chock_tool_is_withheld_when_its_capability_is_denied_outright() {
    use bosun_plugins::chock::fixture::{BlobTool, blob};
    let mut priced = BlobTool::new("priced", "Answers after its price is judged.");
    priced.capabilities = vec!["net.connect.com.example.api.443".into()];
    let fixture = ChockFixture::with_blob(2, blob(2, "priced", "Bosun", "Priced.", &[priced]), 1);
    let env = Env::new();
    install(&env, "priced", &fixture, "");
    let config = std::fs::read_to_string(env.home().join("config.toml")).unwrap();
    env.user_config(&format!(
        "{config}\n[[policy.rules]]\naction = \"net.http\"\ndecision = \"deny\"\n"
    ));
    let out = env.bosun(&["tools", "list", "--json"]);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("\"priced\""));
    let (_, result) = call(&env, "priced", "{}");
    assert_eq!(result["error"]["code"], "unknown_tool", "{result}");
}

/// Chock's documented form names the module file itself; disabling and enabling again by name
/// must keep that path rather than look in `$BOSUN_HOME/plugins/NAME`.
#[test]
fn enable_by_name_keeps_the_configured_module_file_path() {
    let env = Env::new();
    let elsewhere = tempfile::tempdir().unwrap();
    let module = elsewhere.path().join("chock-plugin-hello.wasm");
    let wasm = wat::parse_str(ChockFixture::hello(false).module_wat()).unwrap();
    std::fs::write(&module, wasm).unwrap();
    let config = env.home().join("config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap_or_default();
    text.push_str(&format!(
        "\n[plugins.hello]\npath = {:?}\ntimeout_ms = 5000\n",
        module.display().to_string()
    ));
    std::fs::write(&config, text).unwrap();
    let out = env.bosun(&["plugins", "trust", "hello", "--yes"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));

    let out = env.bosun(&["plugins", "disable", "hello"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let (status, _) = call(&env, "hello", "{}");
    assert_ne!(status, 0, "a disabled plugin's tool must not be offered");

    let out = env.bosun(&["plugins", "enable", "hello", "--yes"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let written: toml_edit::DocumentMut =
        std::fs::read_to_string(&config).unwrap().parse().unwrap();
    let entry = &written["plugins"]["hello"];
    assert_eq!(entry["path"].as_str(), Some(module.to_str().unwrap()));
    assert_eq!(entry["enabled"].as_bool(), Some(true));
    assert_eq!(entry["timeout_ms"].as_integer(), Some(5000));
    let (status, result) = call(&env, "hello", "{}");
    assert_eq!(status, 0, "{result}");
    assert_eq!(result["output"], "Hello, world!");

    // A path given on the command line still replaces the configured one.
    let out = env.bosun(&["plugins", "disable", "hello"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let missing = elsewhere.path().join("gone.wasm");
    let out = env.bosun(&[
        "plugins",
        "enable",
        "hello",
        "--path",
        missing.to_str().unwrap(),
        "--yes",
    ]);
    assert_ne!(code(&out), 0, "a missing module must not be enabled");
    let after: toml_edit::DocumentMut = std::fs::read_to_string(&config).unwrap().parse().unwrap();
    assert_eq!(
        after["plugins"]["hello"]["path"].as_str(),
        Some(module.to_str().unwrap()),
        "a failed enable leaves config.toml as it was"
    );
}

/// A plugin enabled by name with no path configured still defaults to its directory under
/// `$BOSUN_HOME/plugins`.
#[test]
fn enable_by_name_without_a_configured_path_uses_the_home_plugins_directory() {
    let env = Env::new();
    let target = env.home().join("plugins").join("hello");
    std::fs::create_dir_all(&target).unwrap();
    let wasm = wat::parse_str(ChockFixture::hello(false).module_wat()).unwrap();
    std::fs::write(target.join("plugin.wasm"), wasm).unwrap();
    let out = env.bosun(&["plugins", "enable", "hello", "--yes"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let config = std::fs::read_to_string(env.home().join("config.toml")).unwrap();
    let written: toml_edit::DocumentMut = config.parse().unwrap();
    assert_eq!(written["plugins"]["hello"]["path"].as_str(), Some("hello"));
    let (status, result) = call(&env, "hello", "{}");
    assert_eq!(status, 0, "{result}");
}
