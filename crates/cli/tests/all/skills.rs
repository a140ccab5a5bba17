//! Skills from the command line: `bosun skills list`, the catalogue and a `$name` selection in
//! a run's first request, and `load_skill` returning the body.

use bosun_agent::scripted::Step;
use serde_json::json;

use super::run::{model_config, serve};
use super::{Env, code, json, stderr};

#[test]
fn a_selected_skill_is_announced_loaded_and_listed() {
    let env = Env::new();
    let dir = env.home().join("skills/deploy");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        "---\nname: deploy\ndescription: How this team deploys.\n---\nRun the tests, then tag the release.\n",
    )
    .unwrap();
    let listed = env.bosun(&["skills", "list", "--json"]);
    assert_eq!(code(&listed), 0, "{}", stderr(&listed));
    let listed = json(&listed);
    let id = listed["skills"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "deploy")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(id.starts_with("skill:user:"), "{id}");
    assert!(
        listed["skills"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["id"] == "skill:builtin:bosun-plugin-author")
    );

    let (_runtime, server) = serve([
        Step::call("load_skill", json!({"id": id})),
        Step::text("Following the deploy skill."),
    ]);
    env.user_config(&model_config(&server, ""));
    let out = env.bosun(&["run", "--json", "Ship it with $deploy."]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    // The trace names what each part of the system prompt is: the catalogue and the selection
    // are the skills', not a plugin's contribution.
    let assembled = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .find(|line| line["event"]["type"] == "prompt.assembled")
        .expect("the run traced its system prompt");
    let kinds: Vec<(String, String)> = assembled["event"]["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["label"].as_str().unwrap().to_owned(),
                s["kind"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    for label in ["Skills selected by the user", "Skills"] {
        assert!(
            kinds.contains(&(label.to_owned(), "skills".to_owned())),
            "{kinds:?}"
        );
    }
    assert!(!kinds.iter().any(|(_, kind)| kind == "plugin"), "{kinds:?}");
    let requests = server.requests();
    let first = requests[0].to_string();
    assert!(
        first.contains("[skill `deploy`, id `skill:user:"),
        "{first}"
    );
    assert!(first.contains("skill_selection"), "{first}");
    assert!(first.contains("How this team deploys."));
    assert!(!first.contains("tag the release"), "bodies load on demand");
    let second = requests[1].to_string();
    assert!(
        second.contains("Run the tests, then tag the release."),
        "{second}"
    );
}
