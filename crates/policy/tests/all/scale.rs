//! A thousand rules (900 exact actions, 100 globs) still decide correctly: the index must agree
//! with the rules one by one. Timing lives in benchmarks, never in tests.

use bosun_core::{Decision, Layer, Risk};
use bosun_policy::{Mode, Policy, PolicyFile, Rule, Source, Subject};
use pretty_assertions::assert_eq;

use Decision::{Allow, Ask, Deny, Review};

const DECISIONS: [Decision; 4] = [Allow, Review, Ask, Deny];

fn thousand_rules() -> Vec<Rule> {
    let exact = (0..900).map(|i| Rule::new(format!("plugin.p{i}.tool.run"), DECISIONS[i % 4]));
    let globs = (0..100).map(|i| Rule::new(format!("plugin.g{i}.tool.*"), DECISIONS[(i + 1) % 4]));
    exact.chain(globs).collect()
}

#[test]
fn a_thousand_rules_decide_like_each_rule_alone() {
    let policy = Policy::builder(Mode::WorkspaceWrite)
        .user(
            PolicyFile::from_rules(thousand_rules()),
            Source::named("big.toml"),
        )
        .unwrap()
        .build();
    assert_eq!(policy.rule_count(), 1000);

    let mut got = Vec::new();
    let mut expected = Vec::new();
    for i in 0..900 {
        let action = format!("plugin.p{i}.tool.run");
        got.push((
            action.clone(),
            policy
                .decide_one(&Subject::tool(&action, Risk::Read), &[])
                .decision,
        ));
        // A user rule equal to the mode's allow keeps the mode's explanation; the decision is the rule's.
        expected.push((action, DECISIONS[i % 4]));
    }
    for i in 0..100 {
        let action = format!("plugin.g{i}.tool.anything.at.all");
        got.push((
            action.clone(),
            policy
                .decide_one(&Subject::tool(&action, None), &[])
                .decision,
        ));
        expected.push((action, DECISIONS[(i + 1) % 4]));
    }
    assert_eq!(got, expected);

    // Near misses fall through to the mode or the fallback.
    let misses = [
        (
            Subject::tool("plugin.p900.tool.run", Risk::Process),
            (Ask, Layer::Mode),
        ),
        (
            Subject::tool("plugin.p1.tool.run2", Risk::Read),
            (Allow, Layer::Mode),
        ),
        (
            Subject::tool("plugin.g100.tool.x", None),
            (Ask, Layer::Fallback),
        ),
        (
            Subject::tool("plugin.g1.tools", None),
            (Ask, Layer::Fallback),
        ),
    ];
    let got: Vec<_> = misses
        .iter()
        .map(|(s, _)| {
            let m = policy.decide_one(s, &[]);
            (m.decision, m.layer)
        })
        .collect();
    assert_eq!(got, misses.iter().map(|(_, e)| *e).collect::<Vec<_>>());
}

#[test]
fn overlapping_exact_and_glob_rules_take_the_strictest() {
    let mut rules = thousand_rules();
    rules.push(Rule::new("plugin.p*.tool.run", Review));
    rules.push(Rule::new("plugin.p3.tool.*", Allow));
    let policy = Policy::builder(Mode::Full)
        .project(
            PolicyFile::from_rules(rules),
            Source::named("big.toml"),
            true,
        )
        .unwrap()
        .build();
    let decide = |a: &str| {
        policy
            .decide_one(&Subject::tool(a, Risk::Read), &[])
            .decision
    };
    // p0: exact allow, glob review → review. p3: exact deny → deny. p2: exact ask → ask.
    assert_eq!(
        [
            decide("plugin.p0.tool.run"),
            decide("plugin.p3.tool.run"),
            decide("plugin.p2.tool.run"),
            decide("plugin.p3.tool.x")
        ],
        [Review, Deny, Ask, Allow]
    );
}

#[test]
fn only_a_literal_allow_rule_names_a_host() {
    let text = "[policy]\n[[policy.rules]]\naction = \"net.http\"\nhost = \"127.0.0.1\"\ndecision = \"allow\"\n\
                [[policy.rules]]\naction = \"net.http\"\nhost = \"*\"\ndecision = \"allow\"\n\
                [[policy.rules]]\naction = \"net.http\"\nhost = \"10.0.0.1\"\ndecision = \"deny\"\n";
    let policy = Policy::builder(Mode::WorkspaceWrite)
        .user(
            PolicyFile::parse(text).unwrap(),
            Source::with_text("u.toml", text),
        )
        .unwrap()
        .build();
    assert!(policy.names_host("127.0.0.1"));
    assert!(
        !policy.names_host("169.254.169.254"),
        "a glob must not name a host"
    );
    assert!(
        !policy.names_host("10.0.0.1"),
        "a deny rule does not name a host for access"
    );
    let project = "[policy]\n[[policy.rules]]\naction = \"net.http\"\nhost = \"192.168.1.1\"\ndecision = \"allow\"\n";
    let untrusted = Policy::builder(Mode::WorkspaceWrite)
        .project(
            PolicyFile::parse(project).unwrap(),
            Source::with_text("p.toml", project),
            false,
        )
        .unwrap()
        .build();
    assert!(
        !untrusted.names_host("192.168.1.1"),
        "an untrusted project cannot open a private address"
    );
}
