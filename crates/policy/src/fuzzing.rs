//! Fuzz bodies, shared by the cargo-fuzz targets in `fuzz/` and the seed-corpus test, so that
//! stable `cargo test` runs the same checks as the fuzzer. They take any bytes; they panic only
//! when one of the invariants below breaks, which is the point of running them.

use bosun_core::{CapabilityRequest, Decision, Risk, Scope};

use crate::matcher::{ActionPattern, is_glob};
use crate::{HookVerdict, Mode, Policy, PolicyFile, Promise, Rule, Source, Subject};

/// `action\npattern` (split at the first newline; invalid UTF-8 is replaced). Checks that:
/// compiling a pattern never panics; a pattern without glob metacharacters compiles and
/// matches itself; the layer index (hash map plus `GlobSet`) agrees with the pattern matched on
/// its own; deciding never panics, whatever the scope and promises hold.
pub fn matcher(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let (action, pattern) = text.split_once('\n').unwrap_or((&text, ""));

    let compiled = ActionPattern::new(pattern);
    if !is_glob(pattern) {
        assert!(
            compiled.as_ref().is_ok_and(|p| p.is_match(pattern)),
            "exact pattern {pattern:?} must compile and match itself"
        );
    }

    // One deny rule in full mode: a read-risk subject is denied exactly when the rule matches.
    let deny = PolicyFile::from_rules([Rule::new(pattern, Decision::Deny)]);
    if let Ok(policy) = Policy::builder(Mode::Full)
        .user(deny, Source::named("fuzz"))
        .map(|b| b.build())
    {
        let single = compiled.as_ref().is_ok_and(|p| p.is_match(action));
        let decided = policy
            .decide_one(&Subject::tool(action, Risk::Read), &[])
            .decision;
        assert_eq!(
            decided == Decision::Deny,
            single,
            "index and pattern disagree on {pattern:?} vs {action:?}"
        );
        if !is_glob(pattern) {
            let own = policy
                .decide_one(&Subject::tool(pattern, Risk::Read), &[])
                .decision;
            assert_eq!(
                own,
                Decision::Deny,
                "exact rule {pattern:?} must match its own action"
            );
        }
    }

    // The pattern as every narrowing key, the action as every scope value.
    let narrowed = Rule::new("*", Decision::Ask)
        .host(pattern)
        .path(pattern)
        .program(pattern);
    let scope = Scope {
        host: Some(action.to_owned()),
        path: Some(action.to_owned()),
        program: Some(action.to_owned()),
        port: None,
        written: None,
        whole_directory: false,
    };
    let mut subjects = vec![
        Subject::tool(action, None).with_scope(scope),
        Subject::tool(pattern, Risk::Network),
    ];
    if let Ok(request) = CapabilityRequest::parse(action) {
        subjects.push(Subject::capability(&request));
    }
    // Glob compilation dominates the cost of an input, so the layered policy is built once.
    let promises: Vec<Promise> = [
        Rule::new(pattern, Decision::Review),
        Rule::new(action, Decision::Deny).path(pattern),
    ]
    .into_iter()
    .filter_map(|rule| Promise::new(rule).ok())
    .collect();
    let hooks = [HookVerdict {
        plugin: pattern.to_owned(),
        decision: Decision::Review,
        reason: action.to_owned(),
    }];
    let built = Policy::builder(Mode::WorkspaceWrite)
        .user(PolicyFile::from_rules([narrowed]), Source::named("fuzz"))
        .and_then(|b| {
            b.project(
                PolicyFile::from_rules([Rule::new(pattern, Decision::Allow)]),
                Source::named("p"),
                true,
            )
        });
    let policy = built.map_or_else(|_| Policy::new(Mode::WorkspaceWrite), |b| b.build());
    let explanation = policy.decide(&subjects, &promises, &hooks);
    assert!(
        explanation.deciding_rule().is_some(),
        "deciding must index a check"
    );
    let max = explanation.checks.iter().map(|c| c.decision).max();
    assert_eq!(
        max,
        Some(explanation.decision),
        "the combined decision is the strictest check"
    );
}

/// Any UTF-8 text as a standalone policy document. Checks that: parsing never panics; a parsed
/// file builds or errors without panicking, in every mode and trust; once a file has built, its
/// examples hold in the policy built from it; error messages render.
pub fn rule_parser(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let file = match PolicyFile::parse(text) {
        Ok(file) => file,
        Err(error) => {
            let _ = error.to_string();
            return;
        }
    };
    let source = Source::with_text("fuzz.toml", text);
    let mut subjects: Vec<Subject> = file
        .rules
        .iter()
        .map(|r| Subject::tool(r.as_ref().action.clone(), None))
        .collect();
    subjects.extend(file.examples.iter().map(|e| e.as_ref().subject()));
    for mode in Mode::ALL {
        match Policy::builder(mode).user(file.clone(), source.clone()) {
            Ok(builder) => {
                let policy = builder.build();
                for example in &file.examples {
                    let got = policy.decide_one(&example.as_ref().subject(), &[]).decision;
                    assert_eq!(
                        got,
                        example.as_ref().expect,
                        "a loaded file's example must hold"
                    );
                }
                let _ = policy.decide(&subjects, &[], &[]);
            }
            Err(error) => {
                let _ = error.to_string();
            }
        }
        for trusted in [false, true] {
            match Policy::builder(mode).project(file.clone(), source.clone(), trusted) {
                Ok(builder) => {
                    let _ = builder.build().decide(&subjects, &[], &[]);
                }
                Err(error) => {
                    let _ = error.to_string();
                }
            }
        }
    }
}
