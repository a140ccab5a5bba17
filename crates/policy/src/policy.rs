//! The evaluator: mode defaults, user and project tables, promises and hooks combined into one
//! decision and its explanation (the precedence is in the crate docs). Loading, in
//! [`PolicyBuilder`], compiles patterns and checks examples and may fail; deciding never fails
//! and never panics, whatever the subject holds.

use std::collections::HashMap;

use bosun_core::{Capability, Decision, Explanation, Layer, MatchedRule, Risk};
use globset::Candidate;

use crate::example;
use crate::matcher::{CompiledRule, RuleSet};
use crate::subject::NormalScope;
use crate::{HookVerdict, Mode, PolicyError, PolicyFile, Promise, Source, Subject};

/// The loaded decision table. Cheap to share (`Arc<Policy>`); immutable once built.
#[derive(Debug, Clone)]
pub struct Policy {
    mode: Mode,
    known_risks: HashMap<String, Risk>,
    user: RuleSet,
    project: RuleSet,
    project_trusted: bool,
    /// The system's managed rules: they only tighten, last, so nothing loosens them.
    managed: RuleSet,
}

/// Builds a [`Policy`] file by file, checking each file's examples as it is added.
#[derive(Debug, Clone)]
pub struct PolicyBuilder {
    policy: Policy,
    project_trust: Option<bool>,
}

/// What the mode default was taken from.
#[derive(Debug, Clone, Copy)]
enum DefaultOf {
    Risk(Risk),
    Secret,
    /// A write to a protected path (see [`crate::is_protected`]).
    Protected,
}

/// The rule currently settling one subject, kept by reference until the end so that deciding
/// formats one explanation, not one per layer.
#[derive(Debug, Clone, Copy)]
enum Winner<'a> {
    Fallback,
    Mode(Decision, DefaultOf),
    Rule(Layer, &'a CompiledRule),
}

impl Winner<'_> {
    fn decision(&self) -> Decision {
        match self {
            Self::Fallback => Decision::Ask,
            Self::Mode(decision, _) => *decision,
            Self::Rule(_, rule) => rule.rule.decision,
        }
    }
}

impl<'a> Winner<'a> {
    /// Lets `rule` from `layer` take over when it is stricter, or looser when the layer may
    /// loosen. On a tie the earlier winner stays, so explanations point at the original rule —
    /// except the fallback, which claims nothing matched, and so yields to any rule that did.
    fn offer(&mut self, layer: Layer, rule: &'a CompiledRule, may_loosen: bool) {
        let current = self.decision();
        let offered = rule.rule.decision;
        let take = offered > current
            || (may_loosen && offered < current)
            || (offered == current && matches!(self, Self::Fallback));
        if take {
            *self = Self::Rule(layer, rule);
        }
    }
}

impl Policy {
    /// Starts a policy in `mode` with no rules.
    pub fn builder(mode: Mode) -> PolicyBuilder {
        PolicyBuilder {
            policy: Policy {
                mode,
                known_risks: HashMap::new(),
                user: RuleSet::default(),
                project: RuleSet::default(),
                project_trusted: false,
                managed: RuleSet::default(),
            },
            project_trust: None,
        }
    }

    /// A policy that is only its mode's defaults.
    pub fn new(mode: Mode) -> Policy {
        Self::builder(mode).build()
    }

    /// The permission mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// How many user and project rules are loaded.
    pub fn rule_count(&self) -> usize {
        self.user.len() + self.project.len() + self.managed.len()
    }

    /// How many managed rules are loaded.
    pub fn managed_rule_count(&self) -> usize {
        self.managed.len()
    }

    /// True when a rule the user wrote (or a trusted project's rule) allows `net.http` for
    /// exactly `host`, written literally — not through a glob. The outgoing-HTTP guard refuses
    /// loopback, private and metadata addresses unless a rule names them this way: a broad
    /// `host = "*"` must never open the inside of the network.
    pub fn names_host(&self, host: &str) -> bool {
        let host = host.trim_end_matches('.');
        let layers = if self.project_trusted {
            vec![&self.user, &self.project]
        } else {
            vec![&self.user]
        };
        layers
            .into_iter()
            .flat_map(|layer| layer.rules())
            .any(|rule| {
                rule.rule.decision == Decision::Allow
                    && rule.action.is_match("net.http")
                    && rule.rule.host.as_deref().is_some_and(|pattern| {
                        !crate::matcher::is_glob(pattern)
                            && pattern.trim_end_matches('.').eq_ignore_ascii_case(host)
                    })
            })
    }

    /// The path patterns of the rules on `action` (say `fs.read`) whose decision is not
    /// `allow`, in every layer that applies (an untrusted project's rules only tighten, so they
    /// count too). A grant of a whole directory may reach these paths although the call named
    /// only the directory; callers judge them as subjects of their own.
    pub fn restricted_paths(&self, action: &str) -> Vec<String> {
        let mut out: Vec<String> = [&self.user, &self.project, &self.managed]
            .into_iter()
            .flat_map(|layer| layer.rules())
            .filter(|rule| rule.rule.decision != Decision::Allow && rule.action.is_match(action))
            .filter_map(|rule| rule.rule.path.clone())
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// Whether the project config was added as trusted (and so may loosen).
    pub fn project_trusted(&self) -> bool {
        self.project_trusted
    }

    /// Judges a call: every subject (the tool action, then each capability), with the session's
    /// promises, then the plugins' restrict hooks. The combined decision is the strictest;
    /// `deciding` points at the first check that reached it, or at the hook that raised it.
    pub fn decide(
        &self,
        subjects: &[Subject],
        promises: &[Promise],
        hooks: &[HookVerdict],
    ) -> Explanation {
        let mut checks: Vec<MatchedRule> = subjects
            .iter()
            .map(|s| self.decide_one(s, promises))
            .collect();
        if checks.is_empty() {
            // A call always has its tool action; no subject at all is a caller's bug, and the
            // safe answer to a bug is to ask.
            checks.push(MatchedRule {
                subject: String::new(),
                layer: Layer::Fallback,
                rule: "no subject was given to judge".to_owned(),
                source: None,
                decision: Decision::Ask,
            });
        }
        let (mut deciding, mut decision) = (0, Decision::Allow);
        for (index, check) in checks.iter().enumerate() {
            if index == 0 || check.decision > decision {
                (deciding, decision) = (index, check.decision);
            }
        }
        let strictest_hook = hooks
            .iter()
            .filter(|hook| hook.decision != Decision::Allow)
            .fold(None::<&HookVerdict>, |best, hook| match best {
                Some(best) if best.decision >= hook.decision => Some(best),
                _ => Some(hook),
            });
        if let Some(hook) = strictest_hook
            && hook.decision > decision
        {
            checks.push(MatchedRule {
                subject: subjects
                    .first()
                    .map(|s| s.action.clone())
                    .unwrap_or_default(),
                layer: Layer::Hook,
                // The reason names its author itself: a plugin's words come framed, under a
                // header Bosun wrote (`HookVerdict::reason`).
                rule: hook.reason.clone(),
                source: Some(hook.plugin.clone()),
                decision: hook.decision,
            });
            deciding = checks.len() - 1;
            decision = hook.decision;
        }
        Explanation {
            decision,
            deciding,
            checks,
        }
    }

    /// Judges one subject with the session's promises (no hooks: they answer for whole calls).
    pub fn decide_one(&self, subject: &Subject, promises: &[Promise]) -> MatchedRule {
        let scope = NormalScope::of(&subject.scope);
        let candidate = Candidate::from_bytes(subject.action.as_bytes());
        let mut winner = match self.mode_default(subject) {
            Some((decision, of)) => Winner::Mode(decision, of),
            None => Winner::Fallback,
        };
        // A write to a file that makes other programs run code asks in every mode but `full`;
        // only a user rule that names the path may loosen it, and a project rule never does.
        let protected = self.mode != crate::Mode::Full
            && subject.action == "fs.write"
            && scope.path.as_deref().is_some_and(crate::is_protected);
        if protected && winner.decision() < Decision::Ask {
            winner = Winner::Mode(Decision::Ask, DefaultOf::Protected);
        }

        // User config may loosen or tighten the mode.
        let user = self.user.strictest(&subject.action, &candidate, &scope);
        if let Some(rule) = user {
            winner.offer(Layer::User, rule, !protected || rule.rule.path.is_some());
        }

        // Project config: tighten only, unless the workspace is trusted; even then a user's
        // explicit deny is final.
        if let Some(rule) = self.project.strictest(&subject.action, &candidate, &scope) {
            let user_deny = user.filter(|u| u.rule.decision == Decision::Deny);
            if self.project_trusted
                && let Some(user_deny) = user_deny
                && rule.rule.decision < Decision::Deny
            {
                // The deny may be explained by an equal mode default; name the user rule, since
                // that is what kept a trusted project from loosening it.
                winner = Winner::Rule(Layer::User, user_deny);
            }
            winner.offer(
                Layer::Project,
                rule,
                self.project_trusted && user_deny.is_none() && !protected,
            );
        }

        // Promises only tighten.
        let promise = promises
            .iter()
            .filter(|p| p.matches(&subject.action, &scope))
            .fold(None::<&Promise>, |best, p| match best {
                Some(best) if best.rule().decision >= p.rule().decision => Some(best),
                _ => Some(p),
            });
        if let Some(promise) = promise {
            winner.offer(Layer::Promise, promise.compiled(), false);
        }

        // The managed policy last: it only tightens, and no layer before it can undo that.
        if let Some(rule) = self.managed.strictest(&subject.action, &candidate, &scope) {
            winner.offer(Layer::Managed, rule, false);
        }

        self.explain(subject, winner)
    }

    /// The mode's default for the subject, when its risk is known: given with the subject, in
    /// the known risks, or implied by a capability name.
    fn mode_default(&self, subject: &Subject) -> Option<(Decision, DefaultOf)> {
        let risk = subject
            .risk
            .or_else(|| self.known_risks.get(&subject.action).copied());
        if let Some(risk) = risk {
            return Some((self.mode.default_for_risk(risk), DefaultOf::Risk(risk)));
        }
        match subject.action.parse::<Capability>() {
            Ok(Capability::Secret(_)) => Some((self.mode.default_for_secret(), DefaultOf::Secret)),
            Ok(capability) => crate::mode::capability_risk(&capability)
                .map(|risk| (self.mode.default_for_risk(risk), DefaultOf::Risk(risk))),
            Err(_) => None,
        }
    }

    fn explain(&self, subject: &Subject, winner: Winner<'_>) -> MatchedRule {
        let subject = subject.text();
        match winner {
            Winner::Fallback => MatchedRule {
                subject,
                layer: Layer::Fallback,
                rule: "no rule settled it and the action's risk is unknown".to_owned(),
                source: None,
                decision: Decision::Ask,
            },
            Winner::Mode(decision, of) => MatchedRule {
                subject,
                layer: Layer::Mode,
                rule: match of {
                    DefaultOf::Risk(risk) => format!("{risk} → {decision}"),
                    DefaultOf::Secret => format!("secret → {decision}"),
                    DefaultOf::Protected => format!(
                        "protected path (runs code when another program reads it) → {decision}"
                    ),
                },
                source: Some(self.mode.to_string()),
                decision,
            },
            Winner::Rule(layer, rule) => MatchedRule {
                subject,
                layer,
                rule: rule.text.clone(),
                source: rule.source.clone(),
                decision: rule.rule.decision,
            },
        }
    }
}

impl PolicyBuilder {
    /// Adds action → risk pairs (usually every registered tool's), so a tool action judged
    /// without a risk still gets its mode default and examples can name tools. Call it before
    /// adding files whose examples rely on it.
    pub fn known_risks<I, K>(mut self, risks: I) -> Self
    where
        I: IntoIterator<Item = (K, Risk)>,
        K: Into<String>,
    {
        self.policy.known_risks.extend(
            risks
                .into_iter()
                .map(|(action, risk)| (action.into(), risk)),
        );
        self
    }

    /// Adds the system's managed rules (`/etc/bosun/requirements.toml`) and checks the file's
    /// examples. Add them first: user and project rules added later that would loosen one of
    /// them are refused. A managed rule may only restrict (`review`, `ask`, `deny`).
    pub fn managed(self, file: PolicyFile, source: Source) -> Result<Self, PolicyError> {
        if let Some(rule) = file
            .rules
            .iter()
            .find(|rule| rule.get_ref().decision == Decision::Allow)
        {
            let location = source.locate(rule.span().start);
            return Err(PolicyError::ManagedAllows {
                file: location.file,
                line: location.line,
                action: rule.get_ref().action.clone(),
            });
        }
        self.add(Layer::Managed, file, source)
    }

    /// Adds the user's config rules (`$BOSUN_HOME/config.toml`) and checks the file's examples.
    ///
    /// # Errors
    /// Besides a bad pattern or a failing example, a rule that would loosen a managed rule
    /// ([`PolicyError::LoosensManaged`]).
    pub fn user(self, file: PolicyFile, source: Source) -> Result<Self, PolicyError> {
        self.check_managed(&file, &source)?;
        self.add(Layer::User, file, source)
    }

    /// Adds rules the user's answers wrote (approvals remembered as "always"), in the user
    /// layer. Unlike [`PolicyBuilder::user`] a rule looser than a managed one is kept, not
    /// refused (the person wrote no rule; the managed one still decides).
    pub fn remembered(self, file: PolicyFile, source: Source) -> Result<Self, PolicyError> {
        self.add(Layer::User, file, source)
    }

    /// Refuses a rule of `file` that decides more loosely than a managed rule on a subject both
    /// could match: strictest wins, so such a rule could never take effect, and a person who
    /// wrote it should hear so at load rather than find out at a call.
    fn check_managed(&self, file: &PolicyFile, source: &Source) -> Result<(), PolicyError> {
        for spanned in &file.rules {
            let rule = spanned.get_ref();
            if let Some(managed) =
                self.policy.managed.rules().iter().find(|m| {
                    rule.decision < m.rule.decision && crate::matcher::may_overlap(rule, m)
                })
            {
                let location = source.locate(spanned.span().start);
                return Err(PolicyError::LoosensManaged {
                    file: location.file,
                    line: location.line,
                    rule: rule.to_string(),
                    managed: managed.text.clone(),
                    managed_at: managed.source.clone().unwrap_or_default(),
                });
            }
        }
        Ok(())
    }

    /// Adds a project's config rules (`<workspace>/.bosun/config.toml`) and checks the file's
    /// examples. `trusted` is whether the user trusted this workspace; untrusted rules only
    /// tighten.
    pub fn project(
        mut self,
        file: PolicyFile,
        source: Source,
        trusted: bool,
    ) -> Result<Self, PolicyError> {
        if let Some(earlier) = self.project_trust
            && earlier != trusted
        {
            return Err(PolicyError::ProjectTrustConflict {
                file: source.name,
                earlier,
            });
        }
        self.project_trust = Some(trusted);
        self.policy.project_trusted = trusted;
        self.check_managed(&file, &source)?;
        self.add(Layer::Project, file, source)
    }

    /// The finished policy.
    pub fn build(self) -> Policy {
        self.policy
    }

    fn add(mut self, layer: Layer, file: PolicyFile, source: Source) -> Result<Self, PolicyError> {
        let mut locator = crate::file::Locator::new(&source);
        let rules = file
            .rules
            .into_iter()
            .map(|spanned| {
                let location = locator.locate(spanned.span().start);
                crate::matcher::CompiledRule::compile(spanned.into_inner(), &location, true)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let set = match layer {
            Layer::User => &mut self.policy.user,
            Layer::Managed => &mut self.policy.managed,
            _ => &mut self.policy.project,
        };
        *set = set
            .extended(rules)
            .map_err(|error| PolicyError::TooManyPatterns {
                file: source.name.clone(),
                layer,
                message: error.to_string(),
            })?;
        example::check(&self.policy, &file.examples, &source, layer)?;
        Ok(self)
    }
}
