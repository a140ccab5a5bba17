//! What a session adds on top of the loaded tables: `restrict_self` promises the model made and
//! plugin restrict hooks' verdicts. Both can only make a decision stricter; this module makes
//! that hold by construction (a promise refuses `allow`) and `policy` by combination (max).

use bosun_core::Decision;
use serde::{Deserialize, Serialize};

use crate::file::Location;
use crate::matcher::CompiledRule;
use crate::subject::NormalScope;
use crate::{PolicyError, Rule};

/// A compiled `restrict_self` promise: a rule that holds for the rest of the session.
#[derive(Debug, Clone)]
pub struct Promise {
    compiled: CompiledRule,
}

impl Promise {
    /// Compiles a promise. Refuses `decision = "allow"`, since a promise can only restrict, and
    /// patterns that do not compile.
    pub fn new(rule: Rule) -> Result<Promise, PolicyError> {
        if rule.decision == Decision::Allow {
            return Err(PolicyError::PromiseAllows {
                action: rule.action,
            });
        }
        let location = Location {
            file: "restrict_self promise".to_owned(),
            line: None,
        };
        let compiled = CompiledRule::compile(rule, &location, false)?;
        // Compile the action's matcher now rather than on the first call it judges.
        compiled.action.matcher();
        Ok(Self { compiled })
    }

    /// The rule as promised.
    pub fn rule(&self) -> &Rule {
        &self.compiled.rule
    }

    pub(crate) fn compiled(&self) -> &CompiledRule {
        &self.compiled
    }

    pub(crate) fn matches(&self, action: &str, scope: &NormalScope<'_>) -> bool {
        self.compiled.action.is_match(action) && self.compiled.matches_scope(scope)
    }
}

/// A plugin restrict hook's answer for a whole call. `allow` is meaningless (a hook cannot
/// loosen) and is ignored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HookVerdict {
    /// The plugin whose hook answered.
    pub plugin: String,
    /// What it decided.
    pub decision: Decision,
    /// Why, as the decision tells it, naming who says so. Words Bosun did not write (a
    /// plugin's, a project config's) are framed by whoever hands them over
    /// (`bosun_core::text::framed`), so they cannot pose as the rest of the decision.
    pub reason: String,
}
