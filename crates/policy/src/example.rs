//! Examples: decisions a policy file promises about itself, checked when the file loads (as
//! Codex's execpolicy checks its `match` examples). An example is judged like a call with no
//! promises and no hooks, so it tests the tables the file contributes to, nothing of a session.

use bosun_core::{Decision, Layer, MatchedRule, Risk, Scope};
use serde::{Deserialize, Serialize};

use crate::{Policy, PolicyError, Source, Subject};

/// One `policy.examples` entry: `{ action = "fs.write", path = "secrets/key", expect = "deny" }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Example {
    /// The action to judge (exact, not a pattern).
    pub action: String,
    /// The host of the scope.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The path of the scope.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The program of the scope.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
    /// The action's risk, when the policy's known risks do not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub risk: Option<Risk>,
    /// The decision the policy must reach.
    pub expect: Decision,
}

impl Example {
    /// The subject this example judges.
    pub fn subject(&self) -> Subject {
        Subject {
            action: self.action.clone(),
            scope: Scope {
                host: self.host.clone(),
                path: self.path.clone(),
                program: self.program.clone(),
                port: None,
                written: None,
                whole_directory: false,
            },
            risk: self.risk,
        }
    }
}

/// Checks every example of a file just added to `layer` of `policy`.
pub(crate) fn check(
    policy: &Policy,
    examples: &[toml::Spanned<Example>],
    source: &Source,
    layer: Layer,
) -> Result<(), PolicyError> {
    for example in examples {
        let subject = example.as_ref().subject();
        let got = policy.decide_one(&subject, &[]);
        let expected = example.as_ref().expect;
        if got.decision != expected {
            let location = source.locate(example.span().start);
            let mut explanation = describe(&got);
            if let Some(hint) = hint(policy, layer, expected, &got) {
                explanation.push_str("; ");
                explanation.push_str(hint);
            }
            return Err(PolicyError::ExampleFailed {
                file: location.file,
                line: location.line,
                action: subject.to_string(),
                expected,
                got: got.decision,
                explanation,
            });
        }
    }
    Ok(())
}

/// Which rule decided, in words: `user config rule action = "fs.*" decision = "deny" (a.toml:4)`.
pub(crate) fn describe(matched: &MatchedRule) -> String {
    let source = matched
        .source
        .as_deref()
        .map(|s| format!(" ({s})"))
        .unwrap_or_default();
    match matched.layer {
        Layer::Fallback => format!("the fallback: {}", matched.rule),
        Layer::Mode => {
            let mode = matched.source.as_deref().unwrap_or("mode");
            format!("the {mode} mode's default {}", matched.rule)
        }
        layer => format!("{layer} rule {}{source}", matched.rule),
    }
}

/// Why a project file cannot get the looser decision its example wants.
fn hint(
    policy: &Policy,
    layer: Layer,
    expected: Decision,
    got: &MatchedRule,
) -> Option<&'static str> {
    if layer != Layer::Project || expected >= got.decision {
        return None;
    }
    if got.layer == Layer::User && got.decision == Decision::Deny {
        Some("a user config deny is final: a project config cannot loosen it")
    } else if !policy.project_trusted() {
        Some(
            "this workspace is not trusted, so its project config can only tighten: trust the \
             workspace or put the rule in the user config",
        )
    } else {
        None
    }
}
