//! Model providers are sinks with a level: a session holding data above what a model may be
//! sent (`[models.<name>] classification`; left out, every level on the default model's API
//! root and `PUBLIC` elsewhere) sends it nothing — no subagent's task, no conversation to
//! compact, no result of a call. Each model here is a scripted server on loopback that records
//! what it was sent, so each test asserts the secret never arrived.

use bosun_agent::scripted::Step;
use serde_json::{Value, json};

use super::acp::{editor, responses, serve as serve_acp, text_of, updates};
use super::run::serve;
use super::{Env, code, stderr};

/// What the labelled file holds: the words no model below `RESTRICTED` may be sent.
const HUSHED: &str = "hush-model-7c4a-juniper";

/// `secrets/plan.txt` holding [`HUSHED`], labelled `RESTRICTED`.
fn restricted_plan(env: &Env) -> &'static str {
    std::fs::create_dir_all(env.ws().join("secrets")).unwrap();
    std::fs::write(env.ws().join("secrets/plan.txt"), format!("{HUSHED}\n")).unwrap();
    "[[classification.paths]]\nglob = \"secrets/**\"\nlevel = \"RESTRICTED\"\n"
}

/// A `[models.<name>]` entry for a scripted server, labelled `level` when given.
fn entry(name: &str, base_url: &str, level: Option<&str>) -> String {
    let level = level
        .map(|l| format!("classification = \"{l}\"\n"))
        .unwrap_or_default();
    format!(
        "\n[models.{name}]\nprovider = \"openai-chat\"\nbase_url = \"{base_url}\"\nmodel = \"bosun-scripted\"\n{level}"
    )
}

fn trace_text(env: &Env) -> String {
    let out = env.bosun(&["inspect", "last"]);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The parent (the default model, which may be sent every level) reads the `RESTRICTED` plan,
/// then delegates a task quoting it to `helper`, a subagent on `cheap` — another API root, so
/// `PUBLIC` unless labelled `cheap_level`. Returns what `cheap` and the parent were sent.
fn delegate_after_restricted_data(cheap_level: Option<&str>) -> (Vec<Value>, Vec<Value>) {
    let env = Env::new();
    let labels = restricted_plan(&env);
    let agents = env.home().join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("helper.md"),
        "---\nname: helper\ndescription: Helps.\ntools: [read_file]\nmodel: cheap\n---\nHelp.\n",
    )
    .unwrap();
    let (_runtime, main) = serve([
        Step::call("read_file", json!({"path": "secrets/plan.txt"})),
        Step::call(
            "agent_helper",
            json!({"task": format!("Summarise this plan: {HUSHED}")}),
        ),
        Step::text("Done."),
    ]);
    let (_runtime2, cheap) = serve([Step::text("A fine plan.")]);
    env.user_config(&format!(
        "default_model = \"main\"\n{labels}{}{}",
        entry("main", main.base_url(), None),
        entry("cheap", cheap.base_url(), cheap_level),
    ));
    // `--yes` answers the question about starting the subagent: what stops it is its level.
    let out = env.bosun(&["run", "--yes", "Plan"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    (cheap.requests(), main.requests())
}

/// A subagent on another provider is a sink at its model's level: left out, `PUBLIC`. A parent
/// session holding `RESTRICTED` data does not start it: its task (which quotes the data) is
/// never sent, and the parent's model reads why, naming both levels and the key to set.
/// Labelled `RESTRICTED`, the same subagent is sent the task.
#[test]
fn a_subagent_on_a_model_below_the_sessions_level_is_sent_nothing() {
    let (cheap, main) = delegate_after_restricted_data(None);
    assert!(
        !serde_json::to_string(&cheap).unwrap().contains(HUSHED),
        "RESTRICTED data reached the PUBLIC subagent model: {cheap:#?}"
    );
    assert!(cheap.is_empty(), "{cheap:#?}");
    let told = main[2].to_string();
    assert!(
        told.contains("subagent helper was not started")
            && told.contains("RESTRICTED")
            && told.contains("[models.cheap] may be sent PUBLIC at most")
            && told.contains("classification"),
        "{told}"
    );

    let (cheap, _) = delegate_after_restricted_data(Some("RESTRICTED"));
    assert_eq!(cheap.len(), 1, "{cheap:#?}");
    assert!(serde_json::to_string(&cheap[0]).unwrap().contains(HUSHED));
}

/// The session's own model labelled `INTERNAL`: a read of a `RESTRICTED` path named before it
/// runs is a write-down to the model (headless: refused, nothing read); a search whose
/// `RESTRICTED` lines are only known after it ran is withheld from the model, the session does
/// not rise, and the trace records both. The secret never reaches the server; labelled
/// `RESTRICTED`, the model gets it.
#[test]
fn the_sessions_own_model_is_never_sent_data_above_its_level() {
    let run = |level: &str| {
        let env = Env::new();
        let labels = restricted_plan(&env);
        let (_runtime, main) = serve([
            Step::call("read_file", json!({"path": "secrets/plan.txt"})),
            Step::call("search", json!({"query": "hush-model"})),
            Step::text("Done."),
        ]);
        env.user_config(&format!(
            "default_model = \"main\"\n{labels}{}",
            entry("main", main.base_url(), Some(level)),
        ));
        let out = env.bosun(&["run", "Read the plan"]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        (main.requests(), trace_text(&env))
    };
    let (sent, trace) = run("INTERNAL");
    assert_eq!(sent.len(), 3, "{sent:#?}");
    assert!(
        !serde_json::to_string(&sent).unwrap().contains(HUSHED),
        "RESTRICTED data reached the INTERNAL model"
    );
    let refused = sent[1].to_string();
    assert!(
        refused.contains("needs_approval")
            && refused
                .contains("its result goes to the model main, which may be sent INTERNAL at most"),
        "{refused}"
    );
    let withheld = sent[2].to_string();
    assert!(
        withheld.contains("the result of search was withheld")
            && withheld.contains("RESTRICTED")
            && withheld.contains("[models.main]"),
        "{withheld}"
    );
    assert!(
        trace.contains("result withheld from the model main: it holds RESTRICTED data and [models.main] may be sent INTERNAL at most"),
        "{trace}"
    );
    assert!(!trace.contains("raised the session's taint"), "{trace}");

    let (sent, _) = run("RESTRICTED");
    assert!(serde_json::to_string(&sent[1]).unwrap().contains(HUSHED));
}

/// An editor session on the default model `main` (another API root than `cheap`'s) that reads
/// the `RESTRICTED` plan, then switches to `cheap` (labelled `cheap_level`, or left out) and
/// takes the steps `after`. `main` answers the read and then `main_then`; `cheap` answers
/// `cheap_says`. What each model was sent, and the editor's report.
fn switched_to_cheap(
    main_then: Vec<Step>,
    cheap_says: Vec<Step>,
    cheap_level: Option<&str>,
    after: Value,
) -> (Vec<Value>, Vec<Value>, Value) {
    let env = Env::new();
    let labels = restricted_plan(&env);
    let mut main_says = vec![
        Step::call("read_file", json!({"path": "secrets/plan.txt"})),
        Step::text("I read the plan."),
    ];
    main_says.extend(main_then);
    let (_runtime, main) = serve_acp(main_says);
    let (_runtime2, cheap) = serve_acp(cheap_says);
    env.user_config(&format!(
        "default_model = \"main\"\n{labels}{}{}",
        entry("main", main.base_url(), None),
        entry("cheap", cheap.base_url(), cheap_level),
    ));
    let mut steps = vec![
        json!({"initialize": true}),
        json!({"new": {}}),
        json!({"prompt": "Read the plan."}),
        json!({"model": "cheap"}),
    ];
    steps.extend(after.as_array().cloned().unwrap_or_default());
    let report = editor(&env, json!({ "steps": steps }));
    (main.requests(), cheap.requests(), report)
}

/// In an editor, a conversation that read `RESTRICTED` data on the default model is switched to
/// `cheap` (another API root, `PUBLIC` unless labelled): the next prompt ends before any
/// request, naming the levels and the key to set, and `/compact` sends it nothing and says why.
/// Labelled `RESTRICTED`, `cheap` is sent the conversation and the conversation to compact.
#[test]
fn a_conversation_is_not_compacted_or_continued_on_a_model_below_its_level() {
    let play = |cheap_level: Option<&str>| {
        let (_, sent, report) = switched_to_cheap(
            vec![],
            vec![Step::text("On."), Step::text("A summary.")],
            cheap_level,
            json!([{"prompt": "Go on."}, {"prompt": "/compact"}]),
        );
        (sent, report)
    };
    let (sent, report) = play(None);
    assert!(sent.is_empty(), "the PUBLIC model was sent: {sent:#?}");
    // The editor is sent Markdown with brackets escaped (`\[`), so no later chunk can make a
    // link or an image of them; it draws them as written.
    let said = text_of(&updates(&report, "agent_message_chunk"))
        .replace("\\[", "[")
        .replace("\\]", "]");
    assert!(
        said.contains("Not compacted")
            && said.contains("[models.cheap] may be sent PUBLIC at most"),
        "{said}"
    );
    let prompts = responses(&report, "prompt");
    let ended = prompts[1]["error"]["message"].as_str().unwrap_or_default();
    assert!(
        ended.contains("the session holds RESTRICTED data")
            && ended.contains("set `classification = \"RESTRICTED\"` in [models.cheap]"),
        "{report:#}"
    );

    let (sent, _) = play(Some("RESTRICTED"));
    assert_eq!(sent.len(), 2, "the turn and the compaction: {sent:#?}");
    assert!(serde_json::to_string(&sent[0]).unwrap().contains(HUSHED));
}

/// Enforcement: `bosun_agent::turn::compact_conversation` takes the session's model now, not
/// the stored conversation's (the last turn's). In an editor, a conversation that read
/// `RESTRICTED` data on the default model is switched to `cheap` and compacted at once, with no
/// turn between: `PUBLIC` `cheap` is sent nothing and the editor is told why — and neither is
/// the previous model, which is no longer the session's. Labelled `RESTRICTED`, `cheap` does
/// the compaction.
#[test]
fn compact_right_after_switching_model_uses_the_model_switched_to() {
    let play = |cheap_level: Option<&str>| {
        let (main, cheap, report) = switched_to_cheap(
            vec![Step::text("A summary by the previous model.")],
            vec![Step::text("A summary by cheap.")],
            cheap_level,
            json!([{"prompt": "/compact"}]),
        );
        let said = text_of(&updates(&report, "agent_message_chunk"))
            .replace("\\[", "[")
            .replace("\\]", "]");
        (main.len(), cheap.len(), said)
    };
    let (main, cheap, said) = play(None);
    assert_eq!((main, cheap), (2, 0), "{said}");
    assert!(
        said.contains("Not compacted")
            && said.contains("[models.cheap] may be sent PUBLIC at most"),
        "{said}"
    );
    let (main, cheap, said) = play(Some("RESTRICTED"));
    assert_eq!((main, cheap), (2, 1), "{said}");
    assert!(said.contains("Compacted"), "{said}");
}

/// A project's config cannot choose a model or raise what one may be sent: `[models.<name>]`
/// there is refused at load, naming where to set it, and no model is asked anything.
#[test]
fn a_project_cannot_set_a_models_classification() {
    let env = Env::new();
    let (_runtime, main) = serve([Step::text("Hi.")]);
    env.user_config(&format!(
        "default_model = \"main\"\n{}",
        entry("main", main.base_url(), Some("PUBLIC"))
    ));
    std::fs::create_dir_all(env.ws().join(".bosun")).unwrap();
    std::fs::write(
        env.ws().join(".bosun/config.toml"),
        "[models.main]\nclassification = \"RESTRICTED\"\n",
    )
    .unwrap();
    let out = env.bosun(&["run", "Hello"]);
    assert_ne!(code(&out), 0);
    let said = stderr(&out);
    assert!(
        said.contains("a project cannot choose models")
            && said.contains("classification")
            && said.contains("your own config"),
        "{said}"
    );
    assert!(main.requests().is_empty());
}
