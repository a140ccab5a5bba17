//! Helpers shared by the test modules.

use bosun_core::{Decision, Layer, MatchedRule, Risk};
use bosun_policy::{Mode, Policy, PolicyFile, Source, Subject};

/// A policy from a user config text and optionally a project config text with its trust.
pub fn policy(mode: Mode, user: &str, project: Option<(&str, bool)>) -> Policy {
    let mut builder = Policy::builder(mode)
        .user(
            PolicyFile::parse(user).unwrap(),
            Source::with_text("user.toml", user),
        )
        .unwrap();
    if let Some((text, trusted)) = project {
        builder = builder
            .project(
                PolicyFile::parse(text).unwrap(),
                Source::with_text("project.toml", text),
                trusted,
            )
            .unwrap();
    }
    builder.build()
}

/// The decision and layer for one subject.
pub fn judged(policy: &Policy, subject: &Subject) -> (Decision, Layer) {
    let matched = policy.decide_one(subject, &[]);
    (matched.decision, matched.layer)
}

/// A tool subject of the given risk.
pub fn tool(action: &str, risk: impl Into<Option<Risk>>) -> Subject {
    Subject::tool(action, risk)
}

/// A capability subject parsed from `CAP[:SCOPE]`.
pub fn cap(request: &str) -> Subject {
    Subject::capability(&bosun_core::CapabilityRequest::parse(request).unwrap())
}

/// A matched rule, for whole-object assertions.
pub fn matched(
    subject: &str,
    layer: Layer,
    rule: &str,
    source: Option<&str>,
    decision: Decision,
) -> MatchedRule {
    MatchedRule {
        subject: subject.to_owned(),
        layer,
        rule: rule.to_owned(),
        source: source.map(str::to_owned),
        decision,
    }
}
