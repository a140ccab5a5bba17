//! Which rules match which subjects: narrowing by host, path and program, exact actions against
//! globs, strictest-within-a-layer, mode defaults and the fallback.

use bosun_core::{Decision, Explanation, Layer, Risk, Scope};
use bosun_policy::{Mode, Policy, Promise, Rule, Subject};
use pretty_assertions::assert_eq;

use crate::common::{cap, judged, matched, policy, tool};
use Decision::{Allow, Ask, Deny, Review};

#[test]
fn host_narrowing_is_a_case_insensitive_glob() {
    let p = policy(
        Mode::WorkspaceWrite,
        r#"
[[policy.rules]]
action = "net.http"
host = "*.example.com"
decision = "allow"
"#,
        None,
    );
    let cases = [
        ("net.http:api.example.com", (Allow, Layer::User)),
        ("net.http:API.Example.COM", (Allow, Layer::User)),
        ("net.http:api.example.com.", (Allow, Layer::User)),
        ("net.http:example.com", (Ask, Layer::Mode)),
        ("net.http:api.example.com.evil.org", (Ask, Layer::Mode)),
        ("net.http", (Ask, Layer::Mode)),
    ];
    let got: Vec<_> = cases
        .iter()
        .map(|(s, _)| (*s, judged(&p, &cap(s))))
        .collect();
    assert_eq!(got, cases.to_vec());
}

#[test]
fn path_star_stays_in_a_directory_and_double_star_crosses() {
    let p = policy(
        Mode::Full,
        r#"
[[policy.rules]]
action = "fs.*"
path = "src/*"
decision = "review"

[[policy.rules]]
action = "fs.write"
path = "secrets/**"
decision = "deny"
"#,
        None,
    );
    let cases = [
        ("fs.read:src/lib.rs", Review),
        ("fs.read:src/a/b.rs", Allow),
        ("fs.read:./src/lib.rs", Review),
        ("fs.read:src//lib.rs", Review),
        ("fs.write:secrets/key", Deny),
        ("fs.write:secrets/a/b/key", Deny),
        ("fs.write:src/../secrets/key", Deny),
        ("fs.write:./secrets/key", Deny),
        // A rule on everything beneath a directory covers the directory itself.
        ("fs.write:secrets", Deny),
        ("fs.read:secrets/key", Allow),
        ("fs.write:Secrets/key", Allow),
    ];
    let got: Vec<_> = cases
        .iter()
        .map(|(s, _)| (*s, judged(&p, &cap(s)).0))
        .collect();
    assert_eq!(got, cases.to_vec());
}

#[test]
fn program_matches_the_name_as_given() {
    let p = policy(
        Mode::WorkspaceWrite,
        r#"
[[policy.rules]]
action = "process.spawn"
program = "cargo"
decision = "allow"

[[policy.rules]]
action = "process.spawn"
program = "**/rm"
decision = "deny"
"#,
        None,
    );
    let cases = [
        ("process.spawn:cargo", Allow),
        ("process.spawn:/usr/bin/cargo", Ask),
        ("process.spawn:cargo-evil", Ask),
        ("process.spawn:rm", Deny),
        ("process.spawn:/bin/rm", Deny),
        ("process.spawn:./rm", Deny),
        ("process.spawn:rmdir", Ask),
        ("process.spawn", Ask),
    ];
    let got: Vec<_> = cases
        .iter()
        .map(|(s, _)| (*s, judged(&p, &cap(s)).0))
        .collect();
    assert_eq!(got, cases.to_vec());
}

#[test]
fn a_narrowing_key_the_subject_lacks_does_not_match() {
    let p = policy(
        Mode::WorkspaceWrite,
        r#"
[[policy.rules]]
action = "builtin.tool.*"
path = "**"
decision = "deny"
"#,
        None,
    );
    assert_eq!(
        judged(&p, &tool("builtin.tool.read_file", Risk::Read)),
        (Allow, Layer::Mode)
    );
    let scoped = tool("builtin.tool.read_file", Risk::Read).with_scope(Scope {
        path: Some("a".into()),
        ..Scope::default()
    });
    assert_eq!(judged(&p, &scoped), (Deny, Layer::User));
}

#[test]
fn exact_actions_match_only_themselves_and_globs_match_runs() {
    let p = policy(
        Mode::Full,
        r#"
[[policy.rules]]
action = "builtin.tool.read_file"
decision = "deny"

[[policy.rules]]
action = "plugin.hello.tool.*"
decision = "ask"

[[policy.rules]]
action = "mcp.*.tool.delete_?"
decision = "review"

[[policy.rules]]
action = "plugin.{a,b}.tool.[xy]"
decision = "deny"
"#,
        None,
    );
    let cases = [
        ("builtin.tool.read_file", Deny),
        ("builtin.tool.read_file2", Allow),
        ("builtin.tool.read_fil", Allow),
        ("plugin.hello.tool.greet", Ask),
        ("plugin.hello.tool.a.b", Ask),
        ("plugin.hello.tools", Allow),
        ("mcp.github.tool.delete_x", Review),
        ("mcp.github.tool.delete_xy", Allow),
        ("plugin.a.tool.x", Deny),
        ("plugin.b.tool.y", Deny),
        ("plugin.c.tool.x", Allow),
    ];
    let got: Vec<_> = cases
        .iter()
        .map(|(a, _)| (*a, judged(&p, &tool(a, Risk::Read)).0))
        .collect();
    assert_eq!(got, cases.to_vec());
}

#[test]
fn the_strictest_rule_in_a_layer_wins_and_the_first_of_equals_is_named() {
    let p = policy(
        Mode::WorkspaceWrite,
        r#"
[[policy.rules]]
action = "net.http"
decision = "allow"

[[policy.rules]]
action = "net.*"
decision = "review"
reason = "first review"

[[policy.rules]]
action = "net.http"
decision = "review"
reason = "second review"
"#,
        None,
    );
    assert_eq!(
        p.decide_one(&cap("net.http:example.com"), &[]),
        matched(
            "net.http:example.com",
            Layer::User,
            r#"action = "net.*" decision = "review" reason = "first review""#,
            Some("user.toml:6"),
            Review
        )
    );
}

#[test]
fn unknown_risk_falls_back_to_ask_in_every_mode() {
    for mode in Mode::ALL {
        let p = Policy::new(mode);
        assert_eq!(
            p.decide_one(&tool("plugin.unknown.tool.x", None), &[]),
            matched(
                "plugin.unknown.tool.x",
                Layer::Fallback,
                "no rule settled it and the action's risk is unknown",
                None,
                Ask
            ),
            "{mode}"
        );
    }
}

#[test]
fn known_risks_give_tool_actions_their_mode_default() {
    let p = Policy::builder(Mode::ReadOnly)
        .known_risks([
            ("builtin.tool.write_file", Risk::Write),
            ("builtin.tool.read_file", Risk::Read),
        ])
        .build();
    assert_eq!(
        p.decide_one(&tool("builtin.tool.write_file", None), &[]),
        matched(
            "builtin.tool.write_file",
            Layer::Mode,
            "write → deny",
            Some("read-only"),
            Deny
        )
    );
    assert_eq!(
        judged(&p, &tool("builtin.tool.read_file", None)),
        (Allow, Layer::Mode)
    );
    // A risk given with the subject wins over the known one.
    assert_eq!(
        judged(&p, &tool("builtin.tool.write_file", Risk::Read)),
        (Allow, Layer::Mode)
    );
}

#[test]
fn capabilities_and_secrets_get_mode_defaults() {
    let subjects = [
        "fs.read",
        "fs.write",
        "process.spawn",
        "net.http",
        "model.call",
        "secret.GH_TOKEN",
        "secret.bad-name",
    ];
    let table: Vec<(Mode, Vec<Decision>)> = Mode::ALL
        .iter()
        .map(|&mode| {
            (
                mode,
                subjects
                    .iter()
                    .map(|s| judged(&Policy::new(mode), &tool(s, None)).0)
                    .collect(),
            )
        })
        .collect();
    assert_eq!(
        table,
        vec![
            (
                Mode::ReadOnly,
                vec![Allow, Deny, Deny, Deny, Deny, Deny, Ask]
            ),
            (
                Mode::WorkspaceWrite,
                vec![Allow, Allow, Ask, Ask, Ask, Ask, Ask]
            ),
            (
                Mode::Full,
                vec![Allow, Allow, Allow, Allow, Allow, Allow, Ask]
            ),
        ]
    );
    let secret = Policy::new(Mode::WorkspaceWrite).decide_one(&cap("secret.GH_TOKEN"), &[]);
    assert_eq!(
        secret,
        matched(
            "secret.GH_TOKEN",
            Layer::Mode,
            "secret → ask",
            Some("workspace-write"),
            Ask
        )
    );
}

#[test]
fn a_whole_call_is_explained_subject_by_subject() {
    let p = policy(
        Mode::WorkspaceWrite,
        r#"
[[policy.rules]]
action = "net.http"
host = "api.github.com"
decision = "allow"
reason = "the GitHub API"
"#,
        Some((
            r#"
[[policy.rules]]
action = "secret.*"
decision = "deny"
"#,
            false,
        )),
    );
    let subjects = [
        Subject::tool("plugin.gh.tool.issues", Risk::Network),
        cap("net.http:api.github.com"),
        cap("secret.GH_TOKEN"),
    ];
    let promise =
        Promise::new(Rule::new("plugin.gh.tool.*", Review).reason("asked to go slowly")).unwrap();
    assert_eq!(
        p.decide(&subjects, &[promise], &[]),
        Explanation {
            decision: Deny,
            deciding: 2,
            checks: vec![
                matched(
                    "plugin.gh.tool.issues",
                    Layer::Mode,
                    "network → ask",
                    Some("workspace-write"),
                    Ask
                ),
                matched(
                    "net.http:api.github.com",
                    Layer::User,
                    r#"action = "net.http" host = "api.github.com" decision = "allow" reason = "the GitHub API""#,
                    Some("user.toml:2"),
                    Allow
                ),
                matched(
                    "secret.GH_TOKEN",
                    Layer::Project,
                    r#"action = "secret.*" decision = "deny""#,
                    Some("project.toml:2"),
                    Deny
                ),
            ],
        }
    );
}

#[test]
fn promises_narrow_like_rules() {
    let p = Policy::new(Mode::Full);
    let promise = Promise::new(
        Rule::new("fs.write", Deny)
            .path("docs/**")
            .reason("docs are frozen"),
    )
    .unwrap();
    let promises = [promise];
    assert_eq!(
        p.decide_one(&cap("fs.write:docs/a.md"), &promises),
        matched(
            "fs.write:docs/a.md",
            Layer::Promise,
            r#"action = "fs.write" path = "docs/**" decision = "deny" reason = "docs are frozen""#,
            None,
            Deny
        )
    );
    assert_eq!(
        p.decide_one(&cap("fs.write:src/a.rs"), &promises).decision,
        Allow
    );
}
