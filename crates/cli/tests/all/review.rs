//! `review` decisions decided by a reviewer model (a second scripted model on loopback) before a
//! person: allow runs the call, deny refuses it, and unsure, garbage, a hung reviewer or a
//! failing one go to a person — refused when nobody can answer, never a silent allow.

use bosun_agent::scripted::Step;

use super::run::serve;
use super::{Env, code, json as parse_json, stderr};

/// `[policy] reviewer` naming the scripted `judge`, `run_command` of `true` set to `review`.
fn config(judge: &str) -> String {
    format!(
        "[limits]\ntool_timeout_ms = 3000\n\n[policy]\nreviewer = \"judge\"\n\n[[policy.rules]]\naction = \"builtin.tool.run_command\"\ndecision = \"review\"\n\n[[policy.rules]]\naction = \"process.spawn\"\ndecision = \"review\"\n\n[models.judge]\nprovider = \"openai-chat\"\nbase_url = \"{judge}\"\nmodel = \"bosun-scripted\"\n"
    )
}

fn call(env: &Env) -> (i32, serde_json::Value) {
    let out = env.bosun(&[
        "tools",
        "call",
        "run_command",
        r#"{"program": "true"}"#,
        "--json",
    ]);
    (code(&out), parse_json(&out))
}

fn trace_text(env: &Env) -> String {
    let out = env.bosun(&["inspect", "last"]);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_reviewer_allows_and_denies_with_its_reason_in_the_trace() {
    for (answer, rc, expect) in [
        (
            r#"{"decision": "allow", "reason": "true does nothing"}"#,
            0,
            "allow — true does nothing",
        ),
        (
            r#"{"decision": "deny", "reason": "not today"}"#,
            3,
            "deny — not today",
        ),
    ] {
        let env = Env::new();
        let (_runtime, judge) = serve([Step::text(answer)]);
        env.user_config(&config(judge.base_url()));
        let (got, out) = call(&env);
        assert_eq!(got, rc, "{out}");
        let trace = trace_text(&env);
        assert!(
            trace.contains(&format!("reviewed by judge: {expect}")),
            "{trace}"
        );
        // The reviewer saw the call, not an instruction.
        let asked = judge.requests()[0].to_string();
        assert!(asked.contains("builtin.tool.run_command"), "{asked}");
    }
}

#[test]
fn unsure_garbage_hung_or_failing_reviewers_go_to_a_person_never_a_silent_allow() {
    let hang = Step {
        hang: true,
        ..Step::text("")
    };
    for (step, verdict) in [
        (
            Step::text(r#"{"decision": "unsure", "reason": "cannot tell"}"#),
            "unsure",
        ),
        (Step::text("Sure, go ahead!"), "failed"),
        (Step::text(r#"{"decision": "allow"}"#), "failed"),
        (hang, "failed"),
    ] {
        let env = Env::new();
        let (_runtime, judge) = serve([step]);
        env.user_config(&config(judge.base_url()));
        // Nobody is at a terminal here: the person cannot answer, so the call is refused.
        let (got, out) = call(&env);
        assert_eq!(got, 4, "{out}");
        assert_eq!(out["error"]["code"], "needs_approval", "{out}");
        let trace = trace_text(&env);
        assert!(
            trace.contains(&format!("reviewed by judge: {verdict}")),
            "{trace}"
        );
        assert!(!trace.contains("started run_command"), "{trace}");
    }
    // A reviewer that cannot be reached at all.
    let env = Env::new();
    env.user_config(&config("http://127.0.0.1:9"));
    let (got, out) = call(&env);
    assert_eq!(got, 4, "{out}");
    assert!(trace_text(&env).contains("reviewed by judge: failed"));
}

#[test]
fn a_project_cannot_choose_the_reviewer() {
    let env = Env::new();
    env.project_config("[policy]\nreviewer = \"lenient\"\n");
    let out = env.bosun(&["config", "check"]);
    assert_ne!(code(&out), 0);
    assert!(
        stderr(&out).contains("policy.reviewer")
            || String::from_utf8_lossy(&out.stdout).contains("policy.reviewer"),
        "{}",
        stderr(&out)
    );
}

/// `run_command` set to `ask` (not `review`), with `review_asks` on or off.
fn ask_config(judge: &str, review_asks: bool) -> String {
    format!(
        "[policy]\nreviewer = \"judge\"\nreview_asks = {review_asks}\n\n[[policy.rules]]\naction = \"builtin.tool.run_command\"\ndecision = \"ask\"\n\n[[policy.rules]]\naction = \"process.spawn\"\ndecision = \"ask\"\n\n[models.judge]\nprovider = \"openai-chat\"\nbase_url = \"{judge}\"\nmodel = \"bosun-scripted\"\n"
    )
}

#[test]
fn with_review_asks_a_headless_ask_goes_to_the_reviewer_first() {
    let allow = r#"{"decision": "allow", "reason": "harmless"}"#;
    // Off: nobody is asked, the call is refused, the reviewer is never consulted.
    let env = Env::new();
    let (_runtime, judge) = serve([Step::text(allow)]);
    env.user_config(&ask_config(judge.base_url(), false));
    let (got, out) = call(&env);
    assert_eq!(got, 4, "{out}");
    assert!(judge.requests().is_empty());
    // On: the reviewer answers for the absent person.
    let env = Env::new();
    let (_runtime, judge) = serve([Step::text(allow)]);
    env.user_config(&ask_config(judge.base_url(), true));
    let (got, out) = call(&env);
    assert_eq!(got, 0, "{out}");
    assert!(trace_text(&env).contains("reviewed by judge: allow — harmless"));
    // Unsure still means a person, and there is none: refused.
    let env = Env::new();
    let (_runtime, judge) = serve([Step::text(r#"{"decision": "unsure", "reason": "?"}"#)]);
    env.user_config(&ask_config(judge.base_url(), true));
    let (got, out) = call(&env);
    assert_eq!(got, 4, "{out}");
    // With --yes a person approved in advance: the reviewer is not asked.
    let env = Env::new();
    let (_runtime, judge) = serve([Step::text(r#"{"decision": "deny", "reason": "no"}"#)]);
    env.user_config(&ask_config(judge.base_url(), true));
    let out = env.bosun(&[
        "tools",
        "call",
        "run_command",
        r#"{"program": "true"}"#,
        "--yes",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(judge.requests().is_empty());
    // Without a reviewer the key is a config error naming the fix.
    let env = Env::new();
    env.user_config("[policy]\nreview_asks = true\n");
    let out = env.bosun(&["config", "check"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("review_asks needs a reviewer"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_reviewer_weighs_the_call_against_what_the_person_asked_and_the_model_said_redacted() {
    let env = Env::new();
    let (_runtime, judge) = serve([Step::text(
        r#"{"decision": "deny", "reason": "the person asked for a summary"}"#,
    )]);
    let (_runtime2, agent) = serve([
        Step {
            text: Some("I will just run true, key sk-agent-said-0042 in hand.".into()),
            ..Step::call("run_command", serde_json::json!({"program": "true"}))
        },
        Step::text("Done."),
    ]);
    env.user_config(&format!(
        "default_model = \"main\"\n[models.main]\nprovider = \"openai-chat\"\nbase_url = \"{}\"\nmodel = \"bosun-scripted\"\n\n{}",
        agent.base_url(),
        config(judge.base_url())
    ));
    let out = env.bosun_with_env(
        &[
            "run",
            "Summarise README.md; my token is sk-agent-said-0042.",
        ],
        &[("DEMO_TOKEN", "sk-agent-said-0042")],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let requests = judge.requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    let asked = requests[0]["messages"].to_string();
    assert!(asked.contains("the_person_asked"), "{asked}");
    assert!(asked.contains("Summarise README.md"), "{asked}");
    assert!(asked.contains("I will just run true"), "{asked}");
    // The secret in both texts never reaches the reviewer.
    assert!(!asked.contains("sk-agent-said-0042"), "{asked}");
    assert!(trace_text(&env).contains("reviewed by judge: deny"));
}

/// What a labelled file holds: the words a reviewer below the session's level must never get.
const HUSHED: &str = "hush-reviewer-5e1d-willow";

/// A run that reads `src/lib.rs`, then `secrets/plan.txt` (`RESTRICTED`), then says what it
/// read and reads `src/lib.rs` again; `read_file` is set to `review`, the reviewer is a second
/// scripted model at another address, labelled `reviewer_level` (none: the default). Returns
/// what the reviewer was sent and the trace.
fn review_after_restricted_data(reviewer_level: Option<&str>) -> (Vec<serde_json::Value>, String) {
    let env = Env::new();
    std::fs::create_dir_all(env.ws().join("secrets")).unwrap();
    std::fs::write(env.ws().join("secrets/plan.txt"), format!("{HUSHED}\n")).unwrap();
    let allow = || Step::text(r#"{"decision": "allow", "reason": "a read"}"#);
    let (_runtime, judge) = serve([allow(), allow(), allow()]);
    let (_runtime2, agent) = serve([
        Step::call("read_file", serde_json::json!({"path": "src/lib.rs"})),
        Step::call("read_file", serde_json::json!({"path": "secrets/plan.txt"})),
        Step {
            text: Some(format!("The plan says {HUSHED}; now the code again.")),
            ..Step::call("read_file", serde_json::json!({"path": "src/lib.rs"}))
        },
        Step::text("Done."),
    ]);
    let level = reviewer_level
        .map(|l| format!("reviewer_classification = \"{l}\"\n"))
        .unwrap_or_default();
    env.user_config(&format!(
        "default_model = \"main\"\n[models.main]\nprovider = \"openai-chat\"\nbase_url = \"{}\"\nmodel = \"bosun-scripted\"\n\n[[classification.paths]]\nglob = \"secrets/**\"\nlevel = \"RESTRICTED\"\n\n[policy]\nreviewer = \"judge\"\n{level}\n[[policy.rules]]\naction = \"builtin.tool.read_file\"\ndecision = \"review\"\n\n[models.judge]\nprovider = \"openai-chat\"\nbase_url = \"{}\"\nmodel = \"bosun-scripted\"\n",
        agent.base_url(),
        judge.base_url(),
    ));
    let out = env.bosun(&["run", "Read the plan"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    (judge.requests(), trace_text(&env))
}

/// A reviewer is a sink: what a review sends — the call, the person's request, the model's
/// words — is the session's. A reviewer at another address than the default model is `PUBLIC`
/// unless `[policy] reviewer_classification` says more, so once the session holds `RESTRICTED`
/// data it is sent nothing and a person decides (here nobody can: the call is refused). Labelled
/// `RESTRICTED`, it is asked as before.
#[test]
fn a_reviewer_below_the_sessions_level_is_sent_nothing_and_a_person_decides() {
    let (sent, trace) = review_after_restricted_data(None);
    // The two reads before the session held RESTRICTED data were reviewed; the third was not.
    assert_eq!(sent.len(), 2, "{sent:#?}");
    let everything = serde_json::to_string(&sent).unwrap();
    assert!(
        !everything.contains(HUSHED),
        "RESTRICTED data reached the reviewer"
    );
    assert!(
        trace.contains("reviewed by judge: withheld — write-down: the session holds RESTRICTED data and the reviewer may be sent PUBLIC at most"),
        "{trace}"
    );
    assert!(trace.contains("needs_approval"), "{trace}");

    let (sent, trace) = review_after_restricted_data(Some("RESTRICTED"));
    assert_eq!(sent.len(), 3, "{sent:#?}");
    assert!(serde_json::to_string(&sent[2]).unwrap().contains(HUSHED));
    assert!(!trace.contains("withheld"), "{trace}");
}
