//! What a new user meets in the first hour, outside the terminal UI: the first run without a
//! model, `config init`, `doctor`, completions and the man page, `--version`, stored sessions
//! shown, removed and pruned, and the scripted demo model that never runs dry.

use std::process::{Command, Output, Stdio};

use bosun_agent::scripted::{Script, ScriptedModel, Step};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::{Env, code, stderr};

/// The variables of the official providers, which the machine running the tests may have set.
const KEY_VARS: [&str; 2] = ["OPENAI_API_KEY", "ANTHROPIC_API_KEY"];

/// `bosun ARGS` with only `vars` among the key variables set and local servers probed at
/// `local` (a closed port when none), so that nothing of the test machine is found.
fn bosun(env: &Env, args: &[&str], vars: &[(&str, &str)], local: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_bosun"));
    cmd.args(args)
        .current_dir(env.ws())
        .env("BOSUN_HOME", env.home())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for var in KEY_VARS {
        cmd.env_remove(var);
    }
    let closed = closed_port();
    cmd.env(
        "BOSUN_LOCAL_SERVERS",
        local.map_or_else(|| format!("ollama=http://{closed}/v1"), str::to_owned),
    );
    for (k, v) in vars {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

/// An address nothing listens on.
fn closed_port() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().to_string()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn run_without_a_model_names_the_key_it_found_and_what_to_run() {
    let env = Env::new();
    let out = bosun(
        &env,
        &["run", "Do something."],
        &[("ANTHROPIC_API_KEY", "sk-ant-first-hour-secret")],
        None,
    );
    assert_eq!(code(&out), 2);
    let err = stderr(&out);
    assert!(err.contains("no model configured"), "{err}");
    assert!(
        err.contains("found [models.claude]: anthropic claude-sonnet-4-5 (ANTHROPIC_API_KEY is set); run `bosun config init`"),
        "{err}"
    );
    assert!(!err.contains("sk-ant-first-hour-secret"), "{err}");
    // Without a terminal nothing is asked and nothing is written.
    assert!(!env.home().join("config.toml").exists());
}

#[test]
fn config_init_writes_what_it_found_and_refuses_to_overwrite() {
    let env = Env::new();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    // The scripted model lists itself at GET /v1/models, as Ollama and vLLM do.
    let server = runtime
        .block_on(ScriptedModel::serve(Script::new([Step::text("hello")])))
        .unwrap();
    let local = format!("ollama={}", server.base_url());
    let out = bosun(&env, &["config", "init"], &[], Some(&local));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("default model: [models.ollama]"));
    let text = std::fs::read_to_string(env.home().join("config.toml")).unwrap();
    assert!(text.contains("default_model = \"ollama\""), "{text}");
    assert!(
        text.contains(&format!("base_url = \"{}\"", server.base_url())),
        "{text}"
    );
    // The written config is a working one: a run goes to the local server.
    let out = bosun(&env, &["run", "Say hello."], &[], Some(&local));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "hello\n");

    let out = bosun(&env, &["config", "init"], &[], None);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("pass --force"), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(env.home().join("config.toml")).unwrap(),
        text
    );
    let out = bosun(&env, &["config", "init", "--force"], &[], None);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let replaced = std::fs::read_to_string(env.home().join("config.toml")).unwrap();
    assert!(replaced.contains("# default_model"), "{replaced}");
    let out = bosun(&env, &["config", "check"], &[], None);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

#[test]
fn doctor_reports_keys_without_showing_them_and_fails_when_broken() {
    let env = Env::new();
    let out = bosun(&env, &["doctor", "--json"], &[], None);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["ok"], false);
    let areas: Vec<&str> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["area"].as_str().unwrap())
        .collect();
    for area in [
        "config",
        "models",
        "sandbox",
        "skills",
        "plugins",
        "mcp",
        "js-engine",
    ] {
        assert!(areas.contains(&area), "{area}: {areas:?}");
    }
    let models = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["area"] == "models")
        .unwrap();
    assert_eq!(models["health"], "broken");
    assert!(
        models["fix"]
            .as_str()
            .unwrap()
            .contains("bosun config init"),
        "{models}"
    );

    env.user_config("[models.claude]\nprovider = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\n");
    let secret = "sk-ant-doctor-secret";
    let out = bosun(&env, &["doctor"], &[("ANTHROPIC_API_KEY", secret)], None);
    assert_eq!(code(&out), 0, "{}\n{}", stdout(&out), stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("key: ANTHROPIC_API_KEY is set"), "{text}");
    assert!(!text.contains(secret), "{text}");
    let out = bosun(&env, &["doctor"], &[], None);
    assert_eq!(code(&out), 1);
    let text = stdout(&out);
    assert!(text.contains("key: ANTHROPIC_API_KEY is NOT set"), "{text}");
    assert!(
        text.contains("fix: export ANTHROPIC_API_KEY=… in the shell that starts bosun"),
        "{text}"
    );

    env.user_config("mode = \"sideways\"\n");
    let out = bosun(&env, &["doctor", "--json"], &[], None);
    assert_eq!(code(&out), 1);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["checks"][0]["area"], "config");
    assert_eq!(report["checks"][0]["health"], "broken");
}

#[test]
fn completions_man_page_version_and_help_come_from_the_same_definitions() {
    let env = Env::new();
    for shell in ["bash", "zsh", "fish"] {
        let out = bosun(&env, &["completions", shell], &[], None);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let script = stdout(&out);
        assert!(
            script.contains("doctor") && script.contains("sessions"),
            "{shell}"
        );
        // A subcommand's own flags too, though parsing defines them only when named.
        assert!(
            script.contains("capability") && script.contains("older-than"),
            "{shell}"
        );
    }
    let out = bosun(&env, &["completions", "tcsh"], &[], None);
    assert_eq!(code(&out), 2);
    let out = bosun(&env, &["man"], &[], None);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let page = stdout(&out);
    assert!(page.contains(".TH bosun 1"), "{page}");
    assert!(page.contains("doctor"), "{page}");
    let out = bosun(&env, &["--version"], &[], None);
    assert_eq!(code(&out), 0);
    let version = stdout(&out);
    assert!(
        version.starts_with(&format!("bosun {} (commit ", env!("CARGO_PKG_VERSION"))),
        "{version}"
    );
    let out = bosun(&env, &["--help"], &[], None);
    let help = stdout(&out);
    assert!(help.contains("demo-model"), "{help}");
    assert!(help.contains("doctor"), "{help}");
}

#[test]
fn sessions_are_shown_removed_and_pruned() {
    let env = Env::new();
    let (_runtime, server) = super::run::serve([
        Step::text("first answer"),
        Step::text("second answer"),
        Step::text("third answer"),
    ]);
    env.user_config(&super::run::model_config(&server, ""));
    for task in ["Task one.", "Task two.", "Task three."] {
        let out = bosun(&env, &["run", task], &[], None);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
    }
    let out = bosun(&env, &["sessions", "show", "last"], &[], None);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let shown = stdout(&out);
    assert!(shown.contains("> Task three."), "{shown}");
    assert!(shown.contains("third answer"), "{shown}");
    let out = bosun(&env, &["sessions", "show", "last", "--json"], &[], None);
    let last: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(last["title"], "Task three.");

    // A name that is not a stored session is refused, and nothing is removed.
    std::fs::write(env.home().join("sessions/notes.json"), "{}").unwrap();
    for name in ["../config", "notes", "ffffffff"] {
        let out = bosun(&env, &["sessions", "rm", name], &[], None);
        assert_eq!(code(&out), 2, "{name}: {}", stderr(&out));
    }
    assert!(env.home().join("sessions/notes.json").exists());
    let out = bosun(&env, &["sessions", "rm", "last"], &[], None);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("Task three."), "{}", stdout(&out));

    let listed = |env: &Env| {
        let out = bosun(env, &["sessions", "list", "--json"], &[], None);
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    assert_eq!(listed(&env).as_array().unwrap().len(), 2);
    let out = bosun(&env, &["sessions", "prune"], &[], None);
    assert_eq!(code(&out), 2);
    let out = bosun(
        &env,
        &["sessions", "prune", "--older-than", "30d"],
        &[],
        None,
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(listed(&env).as_array().unwrap().len(), 2);
    let out = bosun(&env, &["sessions", "prune", "--keep", "1"], &[], None);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let left = listed(&env);
    assert_eq!(left.as_array().unwrap().len(), 1);
    assert_eq!(left[0]["title"], "Task two.");
    let out = bosun(
        &env,
        &["sessions", "prune", "--older-than", "soon"],
        &[],
        None,
    );
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("not an age"), "{}", stderr(&out));
    assert!(env.home().join("sessions/notes.json").exists());
}

#[test]
fn a_script_for_each_task_never_runs_dry() {
    let env = Env::new();
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/demo-script.json"),
    )
    .unwrap();
    let script = Script::from_json(&text).unwrap();
    assert!(script.each_task);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = runtime
        .block_on(ScriptedModel::serve(Script {
            each_task: true,
            ..Script::new([
                Step::call("read_file", json!({"path": "src/lib.rs"})),
                Step::text("It returns 42."),
            ])
        }))
        .unwrap();
    env.user_config(&super::run::model_config(&server, ""));
    for _ in 0..3 {
        let out = bosun(&env, &["run", "What does it return?"], &[], None);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert_eq!(stdout(&out), "It returns 42.\n");
    }
}

/// `bosun` with no model in a pseudo-terminal (`tests/peers/first_run_pty.py`), answering the
/// first run's question with `answer` (`-`: no question expected) and waiting for `expected`.
fn first_run_in_a_terminal(env: &Env, local: &str, answer: &str, expected: &str) -> String {
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/first_run_pty.py");
    let mut cmd = Command::new("/usr/bin/python3");
    cmd.arg(&script)
        .arg(env!("CARGO_BIN_EXE_bosun"))
        .arg(env.ws())
        .arg(answer)
        .arg(expected)
        .env("BOSUN_HOME", env.home())
        .env("BOSUN_LOCAL_SERVERS", local)
        .stdin(Stdio::null());
    for var in KEY_VARS {
        cmd.env_remove(var);
    }
    let out = cmd.output().unwrap();
    let shown = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{}\n{shown}", stderr(&out));
    shown
}

#[test]
fn the_first_run_without_anything_found_opens_on_the_demo_model() {
    let env = Env::new();
    let local = format!("ollama=http://{}/v1", closed_port());
    let shown = first_run_in_a_terminal(&env, &local, "-", "That call was decided by policy");
    assert!(shown.contains("scripted DEMO model"), "{shown}");
    // Nothing was written: the demo model is for this process only.
    assert!(!env.home().join("config.toml").exists());
}

#[test]
fn the_first_run_writes_the_local_server_it_found_after_asking() {
    let env = Env::new();
    let (_runtime, server) = super::run::serve([Step::text("Hello from the local model.")]);
    let local = format!("vllm={}", server.base_url());
    first_run_in_a_terminal(&env, &local, "y", "Hello from the local model.");
    let text = std::fs::read_to_string(env.home().join("config.toml")).unwrap();
    assert!(text.contains("default_model = \"vllm\""), "{text}");
    assert!(text.contains("[models.vllm]"), "{text}");
    let out = bosun(&env, &["config", "check"], &[], None);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

#[test]
fn the_first_run_declined_opens_on_the_demo_model_and_writes_nothing() {
    let env = Env::new();
    // An existing config without models keeps every byte when the offer is declined.
    env.user_config("# mine\nmode = \"workspace-write\"\n");
    let (_runtime, server) = super::run::serve([Step::text("unused")]);
    let local = format!("vllm={}", server.base_url());
    first_run_in_a_terminal(&env, &local, "n", "That call was decided by policy");
    assert_eq!(
        std::fs::read_to_string(env.home().join("config.toml")).unwrap(),
        "# mine\nmode = \"workspace-write\"\n"
    );
    assert!(server.requests().is_empty());
}

#[test]
fn doctor_is_coloured_on_a_terminal_unless_no_color_is_set() {
    let env = Env::new();
    // `script` (util-linux) gives the command a terminal, as the sandbox tests already rely on.
    let on_a_terminal = |no_color: Option<&str>| {
        let mut cmd = Command::new("script");
        cmd.args(["-qec"])
            .arg(format!("{} doctor", env!("CARGO_BIN_EXE_bosun")))
            .arg("/dev/null")
            .current_dir(env.ws())
            .env("BOSUN_HOME", env.home())
            .env(
                "BOSUN_LOCAL_SERVERS",
                format!("ollama=http://{}/v1", closed_port()),
            )
            .env_remove("NO_COLOR")
            .stdin(Stdio::null());
        for var in KEY_VARS {
            cmd.env_remove(var);
        }
        if let Some(value) = no_color {
            cmd.env("NO_COLOR", value);
        }
        stdout(&cmd.output().unwrap())
    };
    let coloured = on_a_terminal(None);
    assert!(
        coloured.contains("\u{1b}[1;31mBROKEN\u{1b}[0m"),
        "{coloured:?}"
    );
    let plain = on_a_terminal(Some("1"));
    assert!(
        plain.contains("BROKEN") && !plain.contains('\u{1b}'),
        "{plain:?}"
    );
    // Piped: never coloured.
    let piped = stdout(&bosun(&env, &["doctor"], &[], None));
    assert!(
        piped.contains("BROKEN") && !piped.contains('\u{1b}'),
        "{piped:?}"
    );
}
