//! Precedence over every pair of layers (mode, user, untrusted project, trusted project,
//! promise, hook), table-driven, then an exhaustive sweep of all combinations against a
//! reference written from the crate's documented contract.

use bosun_core::{Decision, Layer, Risk};
use bosun_policy::{HookVerdict, Mode, Policy, PolicyFile, Promise, Rule, Source, Subject};
use pretty_assertions::assert_eq;

use Decision::{Allow, Ask, Deny, Review};

const ACTION: &str = "builtin.tool.t";

/// One layer's contribution in a case.
#[derive(Debug, Clone, Copy, PartialEq)]
enum L {
    /// The mode default (`allow`, `ask` or `deny`; a mode never says `review`).
    Mode(Decision),
    /// No risk known: no mode default.
    Fallback,
    User(Decision),
    Untrusted(Decision),
    Trusted(Decision),
    Promise(Decision),
    Hook(Decision),
}

/// Builds the policy, promises, hooks and subject a case describes, and decides.
fn run(layers: &[L]) -> (Decision, Layer) {
    let mut mode = Mode::WorkspaceWrite;
    let mut risk = None;
    let mut user = None;
    let mut project = None;
    let mut promises = Vec::new();
    let mut hooks = Vec::new();
    for layer in layers {
        match *layer {
            L::Mode(Allow) => risk = Some(Risk::Read),
            L::Mode(Ask) => risk = Some(Risk::Process),
            L::Mode(Deny) => (mode, risk) = (Mode::ReadOnly, Some(Risk::Write)),
            L::Mode(Review) => panic!("no mode defaults to review"),
            L::Fallback => risk = None,
            L::User(d) => user = Some(d),
            L::Untrusted(d) => project = Some((d, false)),
            L::Trusted(d) => project = Some((d, true)),
            L::Promise(d) => promises.push(Promise::new(Rule::new("builtin.tool.*", d)).unwrap()),
            L::Hook(d) => hooks.push(HookVerdict {
                plugin: "guard".into(),
                decision: d,
                reason: "said so".into(),
            }),
        }
    }
    let mut builder = Policy::builder(mode);
    if let Some(d) = user {
        builder = builder
            .user(
                PolicyFile::from_rules([Rule::new(ACTION, d)]),
                Source::named("user.toml"),
            )
            .unwrap();
    }
    if let Some((d, trusted)) = project {
        let file = PolicyFile::from_rules([Rule::new("builtin.*", d)]);
        builder = builder
            .project(file, Source::named("project.toml"), trusted)
            .unwrap();
    }
    let explanation = builder
        .build()
        .decide(&[Subject::tool(ACTION, risk)], &promises, &hooks);
    let deciding = explanation.deciding_rule().unwrap();
    assert_eq!(
        deciding.decision, explanation.decision,
        "the deciding rule carries the decision"
    );
    (explanation.decision, deciding.layer)
}

#[test]
fn every_layer_pair_combines_as_documented() {
    use L::*;
    #[rustfmt::skip]
    let table: Vec<(&str, Vec<L>, Decision, Layer)> = vec![
        // mode × user: the user may loosen or tighten; a tie keeps the mode's explanation.
        ("user loosens mode deny",            vec![Mode(Deny), User(Allow)],       Allow, Layer::User),
        ("user tightens mode allow",          vec![Mode(Allow), User(Deny)],       Deny,  Layer::User),
        ("user review under mode ask",        vec![Mode(Ask), User(Review)],       Review, Layer::User),
        ("user tie with mode keeps mode",     vec![Mode(Ask), User(Ask)],          Ask,   Layer::Mode),
        ("user replaces fallback",            vec![Fallback, User(Allow)],         Allow, Layer::User),
        ("user tie with fallback is named",   vec![Fallback, User(Ask)],           Ask,   Layer::User),
        // mode × untrusted project: only tightens.
        ("untrusted cannot loosen mode ask",  vec![Mode(Ask), Untrusted(Allow)],   Ask,   Layer::Mode),
        ("untrusted cannot loosen mode deny", vec![Mode(Deny), Untrusted(Allow)],  Deny,  Layer::Mode),
        ("untrusted tightens mode allow",     vec![Mode(Allow), Untrusted(Deny)],  Deny,  Layer::Project),
        ("untrusted review over allow",       vec![Mode(Allow), Untrusted(Review)], Review, Layer::Project),
        ("untrusted cannot loosen fallback",  vec![Fallback, Untrusted(Allow)],    Ask,   Layer::Fallback),
        // mode × trusted project: replaces.
        ("trusted loosens mode ask",          vec![Mode(Ask), Trusted(Allow)],     Allow, Layer::Project),
        ("trusted loosens mode deny",         vec![Mode(Deny), Trusted(Review)],   Review, Layer::Project),
        ("trusted tightens mode allow",       vec![Mode(Allow), Trusted(Ask)],     Ask,   Layer::Project),
        ("trusted loosens fallback",          vec![Fallback, Trusted(Allow)],      Allow, Layer::Project),
        // mode × promise, mode × hook: only tighten.
        ("promise tightens mode allow",       vec![Mode(Allow), Promise(Deny)],    Deny,  Layer::Promise),
        ("promise cannot loosen mode deny",   vec![Mode(Deny), Promise(Ask)],      Deny,  Layer::Mode),
        ("promise tie keeps mode",            vec![Mode(Ask), Promise(Ask)],       Ask,   Layer::Mode),
        ("hook tightens mode allow",          vec![Mode(Allow), Hook(Review)],     Review, Layer::Hook),
        ("hook cannot loosen mode ask",       vec![Mode(Ask), Hook(Review)],       Ask,   Layer::Mode),
        ("hook allow is ignored",             vec![Mode(Deny), Hook(Allow)],       Deny,  Layer::Mode),
        ("hook tightens fallback",            vec![Fallback, Hook(Deny)],          Deny,  Layer::Hook),
        // user × untrusted project.
        ("untrusted cannot loosen user deny", vec![Mode(Allow), User(Deny), Untrusted(Allow)], Deny, Layer::User),
        ("untrusted cannot loosen user ask",  vec![Mode(Allow), User(Ask), Untrusted(Allow)],  Ask,  Layer::User),
        ("untrusted tightens user allow",     vec![Mode(Deny), User(Allow), Untrusted(Ask)],   Ask,  Layer::Project),
        ("untrusted tie keeps user",          vec![Mode(Allow), User(Ask), Untrusted(Ask)],    Ask,  Layer::User),
        // user × trusted project.
        ("trusted cannot loosen user deny",   vec![Mode(Allow), User(Deny), Trusted(Allow)],   Deny, Layer::User),
        ("trusted cannot loosen user deny that ties the mode", vec![Mode(Deny), User(Deny), Trusted(Allow)], Deny, Layer::User),
        ("trusted loosens user ask",          vec![Mode(Deny), User(Ask), Trusted(Allow)],     Allow, Layer::Project),
        ("trusted loosens user review",       vec![Mode(Ask), User(Review), Trusted(Allow)],   Allow, Layer::Project),
        ("trusted tightens user allow",       vec![Mode(Ask), User(Allow), Trusted(Deny)],     Deny, Layer::Project),
        ("trusted tie keeps user",            vec![Mode(Allow), User(Ask), Trusted(Ask)],      Ask,  Layer::User),
        // user × promise, user × hook.
        ("promise tightens user allow",       vec![Mode(Deny), User(Allow), Promise(Review)],  Review, Layer::Promise),
        ("promise cannot loosen user deny",   vec![Mode(Allow), User(Deny), Promise(Ask)],     Deny, Layer::User),
        ("hook tightens user allow",          vec![Mode(Deny), User(Allow), Hook(Ask)],        Ask,  Layer::Hook),
        ("hook cannot loosen user ask",       vec![Mode(Allow), User(Ask), Hook(Review)],      Ask,  Layer::User),
        // untrusted project × promise, × hook.
        ("promise tightens untrusted review", vec![Mode(Allow), Untrusted(Review), Promise(Deny)], Deny, Layer::Promise),
        ("promise cannot loosen untrusted",   vec![Mode(Allow), Untrusted(Deny), Promise(Review)], Deny, Layer::Project),
        ("hook tightens untrusted review",    vec![Mode(Allow), Untrusted(Review), Hook(Ask)],  Ask,  Layer::Hook),
        ("hook cannot loosen untrusted",      vec![Mode(Allow), Untrusted(Ask), Hook(Review)],  Ask,  Layer::Project),
        // trusted project × promise, × hook.
        ("promise tightens trusted allow",    vec![Mode(Deny), Trusted(Allow), Promise(Ask)],   Ask,  Layer::Promise),
        ("promise cannot loosen trusted",     vec![Mode(Allow), Trusted(Deny), Promise(Ask)],   Deny, Layer::Project),
        ("hook tightens trusted allow",       vec![Mode(Deny), Trusted(Allow), Hook(Deny)],     Deny, Layer::Hook),
        ("hook cannot loosen trusted",        vec![Mode(Allow), Trusted(Deny), Hook(Ask)],      Deny, Layer::Project),
        // promise × hook.
        ("hook tightens promise",             vec![Mode(Allow), Promise(Review), Hook(Deny)],   Deny, Layer::Hook),
        ("hook tie keeps promise",            vec![Mode(Allow), Promise(Ask), Hook(Ask)],       Ask,  Layer::Promise),
        ("promise over hook",                 vec![Mode(Allow), Promise(Deny), Hook(Ask)],      Deny, Layer::Promise),
    ];
    let got: Vec<(&str, Decision, Layer)> = table
        .iter()
        .map(|(name, layers, _, _)| {
            let (decision, layer) = run(layers);
            (*name, decision, layer)
        })
        .collect();
    let expected: Vec<(&str, Decision, Layer)> = table
        .iter()
        .map(|(name, _, d, l)| (*name, *d, *l))
        .collect();
    assert_eq!(got, expected);
}

/// The contract, restated as simply as possible.
fn reference(layers: &[L]) -> (Decision, Layer) {
    let mut current = (Ask, Layer::Fallback);
    let mut user_deny = false;
    for layer in layers {
        let tie_with_fallback = |d: Decision, current: (Decision, Layer)| {
            d == current.0 && current.1 == Layer::Fallback
        };
        match *layer {
            L::Mode(d) => current = (d, Layer::Mode),
            L::Fallback => {}
            L::User(d) => {
                user_deny = d == Deny;
                if d != current.0 || tie_with_fallback(d, current) {
                    current = (d, Layer::User);
                }
            }
            L::Untrusted(d) => {
                if d > current.0 || tie_with_fallback(d, current) {
                    current = (d, Layer::Project);
                }
            }
            L::Trusted(d) => {
                if user_deny {
                    if d < Deny {
                        current = (Deny, Layer::User);
                    }
                } else if d != current.0 || tie_with_fallback(d, current) {
                    current = (d, Layer::Project);
                }
            }
            L::Promise(d) => {
                if d > current.0 || tie_with_fallback(d, current) {
                    current = (d, Layer::Promise);
                }
            }
            L::Hook(d) => {
                if d > current.0 {
                    current = (d, Layer::Hook);
                }
            }
        }
    }
    current
}

#[test]
fn every_combination_matches_the_reference() {
    let all = [Allow, Review, Ask, Deny];
    let modes = [L::Fallback, L::Mode(Allow), L::Mode(Ask), L::Mode(Deny)];
    let mut cases = 0;
    let mut mismatches = Vec::new();
    for mode in modes {
        for user in std::iter::once(None).chain(all.map(Some)) {
            for project in std::iter::once(None).chain(
                all.iter()
                    .flat_map(|&d| [Some(L::Untrusted(d)), Some(L::Trusted(d))]),
            ) {
                for promise in std::iter::once(None).chain([Review, Ask, Deny].map(Some)) {
                    for hook in std::iter::once(None).chain(all.map(Some)) {
                        let mut layers = vec![mode];
                        layers.extend(user.map(L::User));
                        layers.extend(project);
                        layers.extend(promise.map(L::Promise));
                        layers.extend(hook.map(L::Hook));
                        cases += 1;
                        let (got, expected) = (run(&layers), reference(&layers));
                        if got != expected {
                            mismatches.push((layers, got, expected));
                        }
                    }
                }
            }
        }
    }
    assert_eq!(cases, 4 * 5 * 9 * 4 * 5);
    assert_eq!(mismatches, vec![]);
}

#[test]
fn combined_decision_is_the_strictest_subject_and_the_first_one_deciding() {
    let policy = Policy::new(Mode::WorkspaceWrite);
    let subjects = [
        Subject::tool("builtin.tool.run", Risk::Read),
        Subject::tool("net.http", None),
        Subject::tool("process.spawn", None),
        Subject::tool("fs.read", None),
    ];
    let explanation = policy.decide(&subjects, &[], &[]);
    assert_eq!((explanation.decision, explanation.deciding), (Ask, 1));
    assert_eq!(explanation.checks.len(), 4);
}

#[test]
fn a_raising_hook_is_appended_and_decides() {
    let policy = Policy::new(Mode::Full);
    let subjects = [
        Subject::tool("plugin.x.tool.y", Risk::Network),
        Subject::tool("fs.read", None),
    ];
    let hooks = [
        HookVerdict {
            plugin: "lenient".into(),
            decision: Allow,
            reason: "fine".into(),
        },
        HookVerdict {
            plugin: "guard".into(),
            decision: Ask,
            // A reason names its author itself; the rule is the reason as given.
            reason: "guard: network after reading secrets".into(),
        },
        HookVerdict {
            plugin: "second".into(),
            decision: Ask,
            reason: "same".into(),
        },
    ];
    let explanation = policy.decide(&subjects, &[], &hooks);
    assert_eq!((explanation.decision, explanation.deciding), (Ask, 2));
    assert_eq!(
        explanation.checks[2],
        crate::common::matched(
            "plugin.x.tool.y",
            Layer::Hook,
            "guard: network after reading secrets",
            Some("guard"),
            Ask
        )
    );
    // A hook that does not raise leaves no trace.
    let quiet = policy.decide(&subjects, &[], &hooks[..1]);
    assert_eq!(
        (quiet.decision, quiet.deciding, quiet.checks.len()),
        (Allow, 0, 2)
    );
}

#[test]
fn no_subjects_falls_back_to_ask() {
    let explanation = Policy::new(Mode::Full).decide(&[], &[], &[]);
    assert_eq!((explanation.decision, explanation.deciding), (Ask, 0));
    assert_eq!(explanation.checks[0].layer, Layer::Fallback);
}
