//! Policy files: parsing (standalone and inside a bigger config), unknown keys, invalid
//! patterns, examples that pass and fail, and the errors a person reads.

use bosun_core::{Decision, Layer, Risk};
use bosun_policy::{
    Example, Mode, Policy, PolicyError, PolicyFile, Promise, Rule, Source, Subject,
};
use pretty_assertions::assert_eq;
use serde::Deserialize;

use crate::common::{cap, tool};
use Decision::{Allow, Ask, Deny, Review};

fn add_user(mode: Mode, text: &str) -> Result<Policy, PolicyError> {
    Ok(Policy::builder(mode)
        .user(
            PolicyFile::parse(text)?,
            Source::with_text("user.toml", text),
        )?
        .build())
}

#[test]
fn a_standalone_file_parses_into_rules_and_examples() {
    let text = r#"
[policy]
examples = [
    { action = "fs.write", path = "secrets/key", expect = "deny" },
    { action = "builtin.tool.run", risk = "process", expect = "ask" },
]

[[policy.rules]]
action = "fs.write"
path = "secrets/**"
decision = "deny"
reason = "keys"

[[policy.rules]]
action = "net.http"
host = "*.example.com"
program = "curl"
decision = "review"
"#;
    let file = PolicyFile::parse(text).unwrap();
    let rules: Vec<Rule> = file.rules.iter().map(|r| r.get_ref().clone()).collect();
    let examples: Vec<Example> = file.examples.iter().map(|e| e.get_ref().clone()).collect();
    assert_eq!(
        rules,
        vec![
            Rule::new("fs.write", Deny)
                .path("secrets/**")
                .reason("keys"),
            Rule::new("net.http", Review)
                .host("*.example.com")
                .program("curl"),
        ]
    );
    assert_eq!(
        examples,
        vec![
            Example {
                action: "fs.write".into(),
                host: None,
                path: Some("secrets/key".into()),
                program: None,
                risk: None,
                expect: Deny,
            },
            Example {
                action: "builtin.tool.run".into(),
                host: None,
                path: None,
                program: None,
                risk: Some(Risk::Process),
                expect: Ask,
            },
        ]
    );
    assert_eq!(
        add_user(Mode::WorkspaceWrite, text).map(|p| p.rule_count()),
        Ok(2)
    );
    assert_eq!(PolicyFile::parse("").unwrap(), PolicyFile::default());
    assert_eq!(
        PolicyFile::parse("[policy]\n").unwrap(),
        PolicyFile::default()
    );
}

/// The shape another crate uses: `[policy]` as a field of its config.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    #[serde(default)]
    mode: Mode,
    #[serde(default)]
    trusted_workspaces: Vec<String>,
    #[serde(default)]
    policy: PolicyFile,
}

#[test]
fn a_policy_table_inside_a_bigger_config_keeps_its_spans() {
    let text = r#"mode = "read-only"
trusted_workspaces = ["/src/app"]

[policy]
examples = [{ action = "fs.write", path = "notes/today.md", expect = "allow" }]

[[policy.rules]]
action = "fs.write"
path = "notes/**"
decision = "allow"
reason = "scratch space"
"#;
    let config: Config = toml::from_str(text).unwrap();
    assert_eq!(config.mode, Mode::ReadOnly);
    assert_eq!(config.trusted_workspaces, vec!["/src/app".to_owned()]);
    let policy = Policy::builder(config.mode)
        .user(
            config.policy,
            Source::with_text("/home/me/.bosun/config.toml", text),
        )
        .unwrap()
        .build();
    let matched = policy.decide_one(&cap("fs.write:notes/today.md"), &[]);
    assert_eq!(matched.layer, Layer::User);
    assert_eq!(
        matched.source.as_deref(),
        Some("/home/me/.bosun/config.toml:7")
    );
    assert_eq!(
        policy
            .decide_one(&cap("fs.write:src/main.rs"), &[])
            .decision,
        Deny
    );
}

#[test]
fn an_unknown_key_inside_a_bigger_config_names_the_key_and_line() {
    let text = "mode = \"full\"\n\n[[policy.rules]]\naction = \"fs.read\"\ndecison = \"allow\"\n";
    let error = toml::from_str::<Config>(text).unwrap_err().to_string();
    assert!(error.contains("line 5"), "{error}");
    assert!(error.contains("unknown field `decison`"), "{error}");
}

#[test]
fn unknown_keys_are_errors_naming_the_key_line_and_column() {
    let cases = [
        (
            "[[policy.rules]]\naction = \"fs.read\"\ndecision = \"allow\"\npaht = \"src/**\"\n",
            4,
            "unknown field `paht`, expected one of `action`, `decision`, `host`, `path`, `program`, `reason`",
        ),
        (
            "[policy]\nexamples = [{ action = \"fs.read\", expected = \"allow\" }]\n",
            2,
            "unknown field `expected`, expected one of `action`, `host`, `path`, `program`, `risk`, `expect`",
        ),
        (
            "[policy]\nrule = []\n",
            2,
            "unknown field `rule`, expected one of `rules`, `examples`, `reviewer`, `review_asks`, `reviewer_classification`",
        ),
        ("[polcy]\n", 1, "unknown field `polcy`, expected `policy`"),
    ];
    for (text, line, message) in cases {
        match PolicyFile::parse(text) {
            Err(PolicyError::Parse {
                line: got_line,
                column,
                message: got,
            }) => {
                assert_eq!((got_line, got.as_str()), (Some(line), message), "{text}");
                assert!(column.is_some(), "{text}");
            }
            other => panic!("{text}: expected a parse error, got {other:?}"),
        }
    }
    assert_eq!(
        PolicyFile::parse(
            "[[policy.rules]]\naction = \"fs.read\"\ndecision = \"allow\"\npaht = \"src/**\"\n"
        )
        .unwrap_err()
        .to_string(),
        "policy file, line 4, column 1: unknown field `paht`, expected one of `action`, `decision`, \
         `host`, `path`, `program`, `reason`; fix the [policy] table (keys: rules, examples)"
    );
}

#[test]
fn bad_values_and_syntax_are_parse_errors_with_positions() {
    let bad_decision =
        PolicyFile::parse("[[policy.rules]]\naction = \"x\"\ndecision = \"maybe\"\n").unwrap_err();
    assert!(
        matches!(&bad_decision, PolicyError::Parse { line: Some(3), message, .. }
            if message.contains("unknown variant `maybe`, expected one of `allow`, `review`, `ask`, `deny`")),
        "{bad_decision:?}"
    );
    let missing = PolicyFile::parse("[[policy.rules]]\naction = \"x\"\n").unwrap_err();
    assert!(
        matches!(&missing, PolicyError::Parse { message, .. } if message.contains("missing field `decision`")),
        "{missing:?}"
    );
    let syntax = PolicyFile::parse("[policy\n").unwrap_err();
    assert!(
        matches!(
            syntax,
            PolicyError::Parse {
                line: Some(1),
                column: Some(_),
                ..
            }
        ),
        "{syntax:?}"
    );
}

#[test]
fn an_invalid_glob_names_the_file_line_field_and_pattern() {
    let text = "[[policy.rules]]\naction = \"fs.read\"\ndecision = \"allow\"\n\n[[policy.rules]]\naction = \"plugin.[a.tool\"\ndecision = \"deny\"\n";
    let error = add_user(Mode::Full, text).unwrap_err();
    assert_eq!(
        error,
        PolicyError::InvalidPattern {
            file: "user.toml".into(),
            line: Some(5),
            field: "action",
            pattern: "plugin.[a.tool".into(),
            message: "unclosed character class; missing ']'".into(),
        }
    );
    assert_eq!(
        error.to_string(),
        "user.toml:5: invalid action pattern `plugin.[a.tool`: unclosed character class; missing ']'; \
         fix the glob (`*` any run, `?` one character, `[abc]` a class, `{a,b}` alternatives) or \
         escape the character with `\\`"
    );
    let host = add_user(
        Mode::Full,
        "[[policy.rules]]\naction = \"net.http\"\nhost = \"{a,b\"\ndecision = \"deny\"\n",
    )
    .unwrap_err();
    assert!(
        matches!(
            host,
            PolicyError::InvalidPattern {
                field: "host",
                line: Some(1),
                ..
            }
        ),
        "{host:?}"
    );
}

#[test]
fn rules_that_could_never_match_are_refused_with_the_fix() {
    let cases = [
        (
            "[[policy.rules]]\naction = \"\"\ndecision = \"deny\"\n",
            "user.toml:1: the rule's `action` is empty: give a pattern or remove the key",
        ),
        (
            "[[policy.rules]]\naction = \"fs.read\"\npath = \"\"\ndecision = \"deny\"\n",
            "user.toml:1: the rule's `path` is empty: give a pattern or remove the key",
        ),
        (
            "[[policy.rules]]\naction = \"fs.read:src/**\"\ndecision = \"deny\"\n",
            "user.toml:1: action `fs.read:src/**` holds `:` or `/`, which no action contains; put the \
             scope in its own key, e.g. action = \"fs.read\" with path = \"src/**\"",
        ),
        (
            "[[policy.rules]]\naction = \"fs.read\"\npath = \"./src/**\"\ndecision = \"deny\"\n",
            "user.toml:1: path `./src/**` starts with `./`; paths are matched workspace-relative after \
             normalisation, so write it without the `./`",
        ),
    ];
    for (text, message) in cases {
        assert_eq!(add_user(Mode::Full, text).unwrap_err().to_string(), message);
    }
}

#[test]
fn passing_examples_load_quietly() {
    let text = r#"
[policy]
examples = [
    { action = "fs.write", path = "secrets/id_rsa", expect = "deny" },
    { action = "fs.write", path = "src/lib.rs", expect = "allow" },
    { action = "net.http", host = "api.example.com", expect = "ask" },
    { action = "builtin.tool.read_file", expect = "allow" },
    { action = "plugin.x.tool.y", expect = "ask" },
]

[[policy.rules]]
action = "fs.write"
path = "secrets/**"
decision = "deny"
"#;
    let policy = Policy::builder(Mode::WorkspaceWrite)
        .known_risks([("builtin.tool.read_file".to_owned(), Risk::Read)])
        .user(
            PolicyFile::parse(text).unwrap(),
            Source::with_text("user.toml", text),
        )
        .unwrap()
        .build();
    assert_eq!(policy.rule_count(), 1);
}

#[test]
fn a_failing_example_says_where_what_and_how_to_fix() {
    let text = r#"[policy]
examples = [
    { action = "fs.write", path = "secrets/key", expect = "deny" },
    { action = "fs.write", path = "secret/key", expect = "deny" },
]

[[policy.rules]]
action = "fs.write"
path = "secrets/**"
decision = "deny"
"#;
    let error = add_user(Mode::WorkspaceWrite, text).unwrap_err();
    assert_eq!(
        error,
        PolicyError::ExampleFailed {
            file: "user.toml".into(),
            line: Some(4),
            action: "fs.write:secret/key".into(),
            expected: Deny,
            got: Allow,
            explanation: "the workspace-write mode's default write → allow".into(),
        }
    );
    assert_eq!(
        error.to_string(),
        "user.toml:4: policy example `fs.write:secret/key` expects deny but the policy decides allow, \
         by the workspace-write mode's default write → allow; change or add a rule so that \
         `fs.write:secret/key` is deny, or correct the example's `expect`"
    );
}

#[test]
fn a_failing_example_names_the_rule_that_decided() {
    let text = "[policy]\nexamples = [{ action = \"net.http\", host = \"example.com\", expect = \"allow\" }]\n\n[[policy.rules]]\naction = \"net.*\"\ndecision = \"review\"\nreason = \"audit\"\n";
    let error = add_user(Mode::Full, text).unwrap_err();
    assert!(
        matches!(&error, PolicyError::ExampleFailed { line: Some(2), got: Review, explanation, .. }
            if explanation == r#"user config rule action = "net.*" decision = "review" reason = "audit" (user.toml:4)"#),
        "{error:?}"
    );
}

#[test]
fn examples_see_earlier_layers_and_explain_what_a_project_cannot_loosen() {
    let user = "[[policy.rules]]\naction = \"net.http\"\ndecision = \"deny\"\n";
    let project = "[policy]\nexamples = [{ action = \"net.http\", expect = \"allow\" }, { action = \"fs.read\", expect = \"ask\" }]\n\n[[policy.rules]]\naction = \"net.http\"\ndecision = \"allow\"\n";
    let with = |trusted: bool| {
        Policy::builder(Mode::WorkspaceWrite)
            .user(
                PolicyFile::parse(user).unwrap(),
                Source::with_text("user.toml", user),
            )
            .unwrap()
            .project(
                PolicyFile::parse(project).unwrap(),
                Source::with_text(".bosun/config.toml", project),
                trusted,
            )
            .map(|b| b.build())
    };
    for trusted in [false, true] {
        let error = with(trusted).unwrap_err();
        assert_eq!(
            error,
            PolicyError::ExampleFailed {
                file: ".bosun/config.toml".into(),
                line: Some(2),
                action: "net.http".into(),
                expected: Allow,
                got: Deny,
                explanation:
                    "user config rule action = \"net.http\" decision = \"deny\" (user.toml:1); a \
                              user config deny is final: a project config cannot loosen it"
                        .into(),
            },
            "trusted = {trusted}"
        );
    }

    let untrusted = "[policy]\nexamples = [{ action = \"net.http\", expect = \"allow\" }]\n\n[[policy.rules]]\naction = \"net.http\"\ndecision = \"allow\"\n";
    let error = Policy::builder(Mode::WorkspaceWrite)
        .project(
            PolicyFile::parse(untrusted).unwrap(),
            Source::with_text("p.toml", untrusted),
            false,
        )
        .unwrap_err();
    assert!(
        matches!(&error, PolicyError::ExampleFailed { explanation, .. }
            if explanation.ends_with("this workspace is not trusted, so its project config can only tighten: trust the workspace or put the rule in the user config")),
        "{error:?}"
    );
    assert!(
        Policy::builder(Mode::WorkspaceWrite)
            .project(
                PolicyFile::parse(untrusted).unwrap(),
                Source::with_text("p.toml", untrusted),
                true
            )
            .is_ok()
    );
}

#[test]
fn an_example_without_text_names_the_file_only() {
    let mut file = PolicyFile::from_rules([Rule::new("fs.read", Deny)]);
    file.examples.push(toml::Spanned::new(
        0..0,
        Example {
            action: "fs.read".into(),
            host: None,
            path: None,
            program: None,
            risk: None,
            expect: Allow,
        },
    ));
    let error = Policy::builder(Mode::Full)
        .user(file, Source::named("cli"))
        .unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("cli: policy example `fs.read` expects allow"),
        "{error}"
    );
}

#[test]
fn a_promise_refuses_allow_and_bad_globs() {
    assert_eq!(
        Promise::new(Rule::new("fs.write", Allow))
            .unwrap_err()
            .to_string(),
        "a restrict_self promise can only restrict: `fs.write` has decision = \"allow\"; use review, ask or deny"
    );
    assert!(matches!(
        Promise::new(Rule::new("fs.*", Deny).path("[")).unwrap_err(),
        PolicyError::InvalidPattern {
            field: "path",
            line: None,
            ..
        }
    ));
    assert_eq!(
        Promise::new(Rule::new("fs.*", Review)).unwrap().rule(),
        &Rule::new("fs.*", Review)
    );
}

#[test]
fn project_trust_must_be_one_state() {
    let error = Policy::builder(Mode::Full)
        .project(PolicyFile::default(), Source::named("a.toml"), true)
        .unwrap()
        .project(PolicyFile::default(), Source::named("b.toml"), false)
        .unwrap_err();
    assert_eq!(
        error,
        PolicyError::ProjectTrustConflict {
            file: "b.toml".into(),
            earlier: true
        }
    );
}

#[test]
fn rules_from_several_files_of_one_layer_combine() {
    let a = "[[policy.rules]]\naction = \"net.http\"\ndecision = \"allow\"\n";
    let b = "[[policy.rules]]\naction = \"net.*\"\ndecision = \"ask\"\n";
    let policy = Policy::builder(Mode::Full)
        .user(
            PolicyFile::parse(a).unwrap(),
            Source::with_text("a.toml", a),
        )
        .unwrap()
        .user(
            PolicyFile::parse(b).unwrap(),
            Source::with_text("b.toml", b),
        )
        .unwrap()
        .build();
    let matched = policy.decide_one(&Subject::tool("net.http", None), &[]);
    assert_eq!(
        (matched.decision, matched.source.as_deref()),
        (Ask, Some("b.toml:1"))
    );
    assert_eq!(policy.rule_count(), 2);
    assert_eq!(policy.mode(), Mode::Full);
    assert_eq!(
        policy.decide_one(&tool("net.https", None), &[]).decision,
        Ask
    );
}
