//! The managed layer: last, tighten-only, and a user or project rule that would loosen it is
//! refused at load, naming both rules.

use bosun_core::{CapabilityRequest, Decision, Layer, Risk};
use bosun_policy::{Mode, Policy, PolicyError, PolicyFile, Source, Subject};

const MANAGED: &str = r#"
[[policy.rules]]
action = "process.spawn"
program = "**/curl"
decision = "deny"
reason = "no downloads from agents"

[[policy.rules]]
action = "fs.write"
path = "deploy/**"
decision = "ask"
"#;

fn managed() -> (PolicyFile, Source) {
    (
        PolicyFile::parse(MANAGED).unwrap(),
        Source::with_text("/etc/bosun/requirements.toml", MANAGED),
    )
}

fn builder(mode: Mode) -> bosun_policy::PolicyBuilder {
    let (file, source) = managed();
    Policy::builder(mode).managed(file, source).unwrap()
}

fn user(text: &str) -> (PolicyFile, Source) {
    (
        PolicyFile::parse(text).unwrap(),
        Source::with_text("config.toml", text),
    )
}

fn spawn(program: &str) -> Vec<Subject> {
    vec![
        Subject::tool("builtin.tool.run_command", Risk::Process),
        Subject::capability(
            &CapabilityRequest::parse(&format!("process.spawn:{program}")).unwrap(),
        ),
    ]
}

#[test]
fn a_user_rule_loosening_a_managed_rule_is_refused_naming_both() {
    for text in [
        // The same subject, allowed.
        "[[policy.rules]]\naction = \"process.spawn\"\nprogram = \"**/curl\"\ndecision = \"allow\"\n",
        // A broader rule: it would cover curl too.
        "[[policy.rules]]\naction = \"process.spawn\"\ndecision = \"allow\"\n",
        // A glob action that covers the managed one.
        "[[policy.rules]]\naction = \"process.*\"\nprogram = \"/usr/bin/curl\"\ndecision = \"review\"\n",
        // Under the managed ask, an allow.
        "[[policy.rules]]\naction = \"fs.write\"\npath = \"deploy/prod.toml\"\ndecision = \"allow\"\n",
    ] {
        let (file, source) = user(text);
        let error = builder(Mode::Full).user(file, source).unwrap_err();
        let PolicyError::LoosensManaged {
            file,
            line,
            managed_at,
            ..
        } = &error
        else {
            panic!("{text}: {error}");
        };
        assert_eq!((file.as_str(), *line), ("config.toml", Some(1)), "{error}");
        assert!(
            managed_at.starts_with("/etc/bosun/requirements.toml:"),
            "{error}"
        );
        let message = error.to_string();
        assert!(message.contains("managed rule"), "{message}");
    }
    // The same rules from a project, trusted or not, are refused too.
    let text = "[[policy.rules]]\naction = \"process.spawn\"\ndecision = \"allow\"\n";
    for trusted in [false, true] {
        let (file, source) = user(text);
        let error = builder(Mode::Full)
            .project(file, source, trusted)
            .unwrap_err();
        assert!(
            matches!(error, PolicyError::LoosensManaged { .. }),
            "{error}"
        );
    }
}

#[test]
fn rules_that_cannot_reach_what_the_managed_rule_covers_load() {
    for text in [
        "[[policy.rules]]\naction = \"process.spawn\"\nprogram = \"cargo\"\ndecision = \"allow\"\n",
        "[[policy.rules]]\naction = \"fs.write\"\npath = \"src/**\"\ndecision = \"allow\"\n",
        // Stricter than the managed rule: fine.
        "[[policy.rules]]\naction = \"fs.write\"\npath = \"deploy/**\"\ndecision = \"deny\"\n",
    ] {
        let (file, source) = user(text);
        assert!(builder(Mode::Full).user(file, source).is_ok(), "{text}");
    }
}

#[test]
fn a_managed_deny_holds_over_a_remembered_allow_the_mode_and_a_trusted_project() {
    let remembered = "[[policy.rules]]\naction = \"process.spawn\"\ndecision = \"allow\"\n";
    let (file, source) = user(remembered);
    let policy = builder(Mode::Full)
        .remembered(file, source)
        .unwrap()
        .build();
    let explanation = policy.decide(&spawn("/usr/bin/curl"), &[], &[]);
    assert_eq!(explanation.decision, Decision::Deny);
    let rule = explanation.deciding_rule().unwrap();
    assert_eq!(rule.layer, Layer::Managed);
    assert_eq!(
        rule.source.as_deref(),
        Some("/etc/bosun/requirements.toml:2")
    );
    assert!(rule.rule.contains("no downloads"), "{}", rule.rule);
    // What the managed rule does not cover is the other layers' to decide.
    assert_eq!(
        policy.decide(&spawn("cargo"), &[], &[]).decision,
        Decision::Allow
    );
    // Without the managed layer the remembered allow would have allowed curl: the check is
    // not vacuous.
    let (file, source) = user(remembered);
    let unmanaged = Policy::builder(Mode::Full)
        .user(file, source)
        .unwrap()
        .build();
    assert_eq!(
        unmanaged.decide(&spawn("/usr/bin/curl"), &[], &[]).decision,
        Decision::Allow
    );
}

#[test]
fn a_managed_rule_may_only_restrict() {
    let text = "[[policy.rules]]\naction = \"net.http\"\ndecision = \"allow\"\n";
    let error = Policy::builder(Mode::ReadOnly)
        .managed(
            PolicyFile::parse(text).unwrap(),
            Source::with_text("/etc/bosun/requirements.toml", text),
        )
        .unwrap_err();
    assert!(
        matches!(&error, PolicyError::ManagedAllows { line: Some(1), .. }),
        "{error}"
    );
}
