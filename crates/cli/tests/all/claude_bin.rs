//! A Claude Code plugin's `bin/`, through the binary against the scripted model: not run
//! unless a person grants it (`[claude.plugins."<id>"] bin = true`) and installs the plugin
//! with that grant in its review; then its programs are on `run_command`'s PATH in `bosun run`,
//! inside the OS sandbox, able to write the workspace and nothing of the plugin or outside;
//! and a `bin/` file changed after the review keeps the whole plugin, `bin/` included, out.

use std::path::{Path, PathBuf};

use bosun_agent::scripted::Step;
use serde_json::{Value, json};

use super::run::{model_config, serve};
use super::{Env, code, stderr};

/// The program: greets, then tries to write each file it is given, saying what happened.
const PROGRAM: &str = r#"#!/bin/sh
echo "greet-bin says $1"
shift
for f in "$@"; do
  if echo pwned > "$f" 2>/dev/null; then echo "wrote $f"; else echo "refused $f"; fi
done
"#;

fn marketplace(dir: &Path) {
    let plugin = dir.join("plugins/kit");
    std::fs::create_dir_all(dir.join(".claude-plugin")).unwrap();
    std::fs::create_dir_all(plugin.join("bin")).unwrap();
    std::fs::write(
        dir.join(".claude-plugin/marketplace.json"),
        json!({"name": "local", "owner": {"name": "t"},
            "plugins": [{"name": "kit", "source": "./plugins/kit"}]})
        .to_string(),
    )
    .unwrap();
    let program = plugin.join("bin/greet-bin");
    std::fs::write(&program, PROGRAM).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn configure(env: &Env, server: &bosun_agent::scripted::ScriptedServer, grant: bool) {
    env.user_config(&format!(
        "{}\n[registries.local]\nkind = \"claude-marketplace\"\npath = \"{}\"\n{}",
        model_config(server, ""),
        env.dir.path().join("market").display(),
        if grant {
            "\n[claude.plugins.\"kit@local\"]\nbin = true\n"
        } else {
            ""
        }
    ));
}

fn cached_plugin(env: &Env) -> PathBuf {
    std::fs::read_dir(env.home().join("claude/cache"))
        .unwrap()
        .flatten()
        .map(|d| d.path())
        .find(|p| p.join("bin/greet-bin").exists())
        .unwrap()
}

/// The tool results of a request, in order.
fn results(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// One `bosun run --yes` whose model calls `greet-bin hi FILES…`; the call's result.
fn run_greet(env: &Env, files: &[&Path]) -> (String, String) {
    let mut args = vec![json!("hi")];
    args.extend(files.iter().map(|f| json!(f)));
    let (_runtime, server) = serve([
        Step::call("run_command", json!({"program": "greet-bin", "args": args})),
        Step::text("done"),
    ]);
    // The model's address changes with each server; the rest of the config stays.
    let config = std::fs::read_to_string(env.home().join("config.toml")).unwrap();
    let grant = config.contains("bin = true");
    configure(env, &server, grant);
    let out = env.bosun(&["run", "--yes", "greet"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let requests = server.requests();
    let result = results(&requests[1]).pop().unwrap_or_default();
    (result, stderr(&out))
}

#[test]
fn a_plugins_bin_runs_only_when_granted_and_reviewed_inside_the_sandbox() {
    let env = Env::new();
    marketplace(&env.dir.path().join("market"));
    let (_runtime, server) = serve([]);
    configure(&env, &server, false);
    let out = env.bosun(&["plugins", "install", "kit@local", "--yes"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let review = stderr(&out);
    assert!(
        review.contains("bin greet-bin (sha256 ") && review.contains("bin/: not granted"),
        "{review}"
    );

    // Not granted: the program is not found.
    let (result, _) = run_greet(&env, &[]);
    assert!(
        result.contains("no such program on PATH") && !result.contains("greet-bin says"),
        "{result}"
    );

    // Granted in the config but not reviewed so: still not found, and the run says why.
    let (_runtime, server) = serve([]);
    configure(&env, &server, true);
    let (result, said) = run_greet(&env, &[]);
    assert!(result.contains("no such program on PATH"), "{result}");
    assert!(
        said.contains("not what you reviewed") && said.contains("bosun plugins install kit@local"),
        "{said}"
    );

    // Installed again with the grant: the review says so, and it runs.
    let out = env.bosun(&["plugins", "install", "kit@local", "--yes"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stderr(&out).contains("bin/: GRANTED"), "{}", stderr(&out));
    let plugin = cached_plugin(&env);
    let outside = env.dir.path().join("outside.txt");
    let inside = env.ws().join("made-by-bin.txt");
    let own = plugin.join("bin/added");
    let (result, _) = run_greet(&env, &[&inside, &own, &outside]);
    assert!(result.contains("greet-bin says hi"), "{result}");
    assert!(result.contains("wrote "), "{result}");
    assert!(
        inside.exists(),
        "it could not write the workspace: {result}"
    );
    assert!(!own.exists(), "it wrote its own plugin folder: {result}");
    assert!(
        !outside.exists(),
        "it wrote outside the workspace: {result}"
    );

    // The grant ends when the config drops it.
    let (_runtime, server) = serve([]);
    configure(&env, &server, false);
    let (result, _) = run_greet(&env, &[]);
    assert!(result.contains("no such program on PATH"), "{result}");

    // A bin/ file changed after the review: the plugin is not loaded, bin/ included.
    let (_runtime, server) = serve([]);
    configure(&env, &server, true);
    let (result, _) = run_greet(&env, &[]);
    assert!(result.contains("greet-bin says hi"), "{result}");
    let program = plugin.join("bin/greet-bin");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&program).unwrap().permissions().mode();
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(mode | 0o200)).unwrap();
    std::fs::write(&program, "#!/bin/sh\necho changed after review\n").unwrap();
    let (result, said) = run_greet(&env, &[]);
    assert!(
        result.contains("no such program on PATH") && !result.contains("changed after review"),
        "{result}"
    );
    assert!(
        said.contains("changed since you trusted it") && said.contains("bin/greet-bin"),
        "{said}"
    );
}
