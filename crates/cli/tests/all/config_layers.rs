//! `bosun config show --layers`: each setting in force with the layer that set it (managed,
//! user, project, flag, default), where (file:line), and the managed rule constraining it —
//! including the settings a managed rule forced where the user wrote nothing.

use pretty_assertions::assert_eq;
use serde_json::Value;

use super::{Env, code, stderr};

#[test]
fn config_show_layers_names_the_layer_and_line_of_every_setting() {
    let env = Env::new();
    let managed = env.dir.path().join("requirements.toml");
    std::fs::write(
        &managed,
        "allowed_modes = [\"read-only\", \"workspace-write\"]\n\n[sandbox]\nrequire = true\n\n[telemetry]\ntraces = { otlp-http = { endpoint = \"https://otel.corp.example/v1/traces\" } }\n",
    )
    .unwrap();
    env.user_config(
        "mode = \"read-only\"\ndefault_model = \"small\"\n\n[agent]\nmax_steps = 7\n\n[models.small]\nprovider = \"openai-chat\"\nmodel = \"s\"\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key_env = \"SMALL_KEY\"\n\n[models.big]\nprovider = \"openai-chat\"\nmodel = \"b\"\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key_env = \"BIG_KEY\"\n\n[sandbox]\nplugin_instances = 8\n",
    );
    env.project_config("[[policy.rules]]\naction = \"fs.write\"\ndecision = \"ask\"\n");
    let managed_env = managed.display().to_string();
    let user = env.home().join("config.toml").display().to_string();
    let show = |args: &[&str]| {
        let mut all = vec!["config", "show"];
        all.extend_from_slice(args);
        let out = env.bosun_with_env(&all, &[("BOSUN_MANAGED_CONFIG", &managed_env)]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        out
    };
    let out = show(&["--json", "--model", "big"]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let settings = report["settings"].as_array().unwrap();
    let find = |key: &str, layer: &str| -> &Value {
        settings
            .iter()
            .find(|s| s["key"] == key && s["layer"] == layer)
            .unwrap_or_else(|| panic!("no {key} from {layer} in {report:#}"))
    };
    // The user's own, with their lines.
    assert_eq!(find("mode", "user")["at"], format!("{user}:1"));
    assert_eq!(
        find("mode", "user")["constrained_by"],
        format!("{managed_env}:1")
    );
    assert_eq!(find("agent.max_steps", "user")["at"], format!("{user}:5"));
    assert_eq!(find("agent.max_steps", "user")["value"], "7");
    assert_eq!(
        find("sandbox.plugin_instances", "user")["at"],
        format!("{user}:20")
    );
    assert_eq!(find("sandbox.plugin_instances", "user")["value"], "8");
    // Forced by the managed file where the user wrote nothing.
    assert_eq!(
        find("sandbox.require", "managed")["at"],
        format!("{managed_env}:4")
    );
    assert_eq!(
        find("telemetry.traces", "managed")["at"],
        format!("{managed_env}:7")
    );
    // The project's rules, and the flag over the user's default model.
    assert!(
        find("policy.rules", "project")["at"]
            .as_str()
            .unwrap()
            .ends_with(".bosun/config.toml")
    );
    assert_eq!(find("default_model", "flag")["value"], "big");
    assert_eq!(find("default_model", "flag")["at"], "--model");
    // Never shown as something else: a setting has one layer.
    assert_eq!(
        settings.iter().filter(|s| s["key"] == "mode").count(),
        1,
        "{report:#}"
    );
    // The text form says the same.
    let text = String::from_utf8(show(&["--layers"]).stdout).unwrap();
    let line = |key: &str| {
        text.lines()
            .find(|l| l.split_whitespace().next() == Some(key))
            .unwrap_or_else(|| panic!("no {key} in:\n{text}"))
            .to_owned()
    };
    assert!(
        line("sandbox.require").contains(&format!("[managed {managed_env}:4]")),
        "{text}"
    );
    assert!(
        line("default_model").contains(&format!("[user {user}:2]")),
        "{text}"
    );
    assert!(
        line("mode").contains(&format!("(managed: {managed_env}:1)")),
        "{text}"
    );
    // Without --layers: the values only.
    let plain = String::from_utf8(show(&[]).stdout).unwrap();
    assert!(plain.lines().any(|l| l == "agent.max_steps = 7"), "{plain}");
    assert!(
        plain.lines().any(|l| l == "sandbox.plugin_instances = 8"),
        "{plain}"
    );
    // A model that is not configured is refused, naming the fix.
    let out = env.bosun_with_env(
        &["config", "show", "--model", "nope"],
        &[("BOSUN_MANAGED_CONFIG", &managed_env)],
    );
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("[models.nope]"), "{}", stderr(&out));
}
