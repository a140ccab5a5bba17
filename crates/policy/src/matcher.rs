//! Compiled patterns: action patterns (exact or glob), scope patterns (host, path, program) and a
//! layer's index of rules. Everything compiles once, when a file loads; matching never fails,
//! never panics and costs one hash lookup plus one `GlobSet` pass per layer and subject.

use std::collections::HashMap;
use std::sync::OnceLock;

use bosun_core::Decision;
use globset::{Candidate, Glob, GlobBuilder, GlobMatcher, GlobSet, GlobSetBuilder};

use crate::file::Location;
use crate::subject::NormalScope;
use crate::{PolicyError, Rule};

/// Characters that make a pattern a glob; a pattern without any is compared exactly.
const GLOB_META: &[char] = &['*', '?', '[', ']', '{', '}', '\\'];

/// True when `pattern` holds a glob metacharacter.
pub fn is_glob(pattern: &str) -> bool {
    pattern.contains(GLOB_META)
}

/// Which part of a rule a pattern sits in; also decides how it compiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Field {
    Action,
    Host,
    Path,
    Program,
}

impl Field {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Action => "action",
            Self::Host => "host",
            Self::Path => "path",
            Self::Program => "program",
        }
    }

    /// Compiles `pattern` with this field's options. Backslash escapes are set explicitly
    /// because globset's default differs on Windows, and a policy must mean the same everywhere.
    pub(crate) fn glob(self, pattern: &str) -> Result<Glob, globset::Error> {
        GlobBuilder::new(pattern)
            .backslash_escape(true)
            // Hosts are case-insensitive; actions, paths and programs are not.
            .case_insensitive(self == Self::Host)
            // Paths and programs: `*` stays within one directory, `**` crosses. Actions and
            // hosts hold no `/`, so the choice does not matter there.
            .literal_separator(matches!(self, Self::Path | Self::Program))
            .build()
    }
}

/// An action pattern: exact, or a glob where `*` matches any run of characters.
#[derive(Debug, Clone)]
pub(crate) struct ActionPattern {
    text: String,
    /// `None` for an exact pattern. The `Glob` goes into a layer's `GlobSet`.
    glob: Option<Glob>,
    /// The glob on its own, for promises (matched one by one). Compiled on first use, since
    /// rules in files never need it and a regex per glob would double the cost of loading.
    matcher: OnceLock<GlobMatcher>,
}

impl ActionPattern {
    pub(crate) fn new(pattern: &str) -> Result<Self, globset::Error> {
        let glob = if is_glob(pattern) {
            Some(Field::Action.glob(pattern)?)
        } else {
            None
        };
        Ok(Self {
            text: pattern.to_owned(),
            glob,
            matcher: OnceLock::new(),
        })
    }

    pub(crate) fn is_match(&self, action: &str) -> bool {
        match self.matcher() {
            None => self.text == action,
            Some(matcher) => matcher.is_match_candidate(&Candidate::from_bytes(action.as_bytes())),
        }
    }

    /// The glob's own matcher, compiled on first use; `None` for an exact pattern.
    pub(crate) fn matcher(&self) -> Option<&GlobMatcher> {
        let glob = self.glob.as_ref()?;
        Some(self.matcher.get_or_init(|| glob.compile_matcher()))
    }
}

/// A compiled `host`, `path` or `program` pattern. A path pattern `dir/**` also matches `dir`
/// itself: a rule on everything beneath a directory covers the directory (listing it,
/// searching it), not only the files in it.
#[derive(Debug, Clone)]
pub(crate) struct ScopePattern(GlobMatcher, Option<GlobMatcher>);

impl ScopePattern {
    fn new(field: Field, pattern: &str) -> Result<Self, globset::Error> {
        let dir = match (field, pattern.strip_suffix("/**")) {
            (Field::Path, Some(dir)) if !dir.is_empty() => Some(field.glob(dir)?.compile_matcher()),
            _ => None,
        };
        Ok(Self(field.glob(pattern)?.compile_matcher(), dir))
    }

    pub(crate) fn is_match(&self, value: &str) -> bool {
        let candidate = Candidate::from_bytes(value.as_bytes());
        self.0.is_match_candidate(&candidate)
            || self
                .1
                .as_ref()
                .is_some_and(|dir| dir.is_match_candidate(&candidate))
    }
}

/// Whether `rule` and `managed` could both match one subject. Two globs overlap when they are
/// equal or either matches the other's text; a narrowing key one of them leaves unset overlaps
/// anything. This errs towards "yes" (a user rule it flags could in fact be disjoint only for
/// two globs that match each other's text without sharing a subject), which is the safe side
/// for refusing a rule that might loosen the managed policy.
pub(crate) fn may_overlap(rule: &Rule, managed: &CompiledRule) -> bool {
    let action = rule.action == managed.rule.action
        || managed.action.is_match(&rule.action)
        || ActionPattern::new(&rule.action).is_ok_and(|mine| mine.is_match(&managed.rule.action));
    let scope = |field: Field, mine: &Option<String>, theirs: Option<&ScopePattern>| match (
        mine,
        managed_text(field, managed),
        theirs,
    ) {
        (Some(mine), Some(text), Some(theirs)) => {
            mine == text
                || theirs.is_match(mine)
                || ScopePattern::new(field, mine).is_ok_and(|p| p.is_match(text))
        }
        _ => true,
    };
    action
        && scope(Field::Host, &rule.host, managed.host.as_ref())
        && scope(Field::Path, &rule.path, managed.path.as_ref())
        && scope(Field::Program, &rule.program, managed.program.as_ref())
}

fn managed_text(field: Field, managed: &CompiledRule) -> Option<&str> {
    match field {
        Field::Host => managed.rule.host.as_deref(),
        Field::Path => managed.rule.path.as_deref(),
        Field::Program => managed.rule.program.as_deref(),
        Field::Action => Some(managed.rule.action.as_str()),
    }
}

/// A rule ready to match: its patterns compiled and its explanation text rendered once.
#[derive(Debug, Clone)]
pub(crate) struct CompiledRule {
    pub(crate) rule: Rule,
    pub(crate) action: ActionPattern,
    host: Option<ScopePattern>,
    path: Option<ScopePattern>,
    program: Option<ScopePattern>,
    /// `rule` as explanations show it.
    pub(crate) text: String,
    /// `file:line`, when the rule comes from a file.
    pub(crate) source: Option<String>,
}

impl CompiledRule {
    /// Compiles `rule`, found at `location` (`file` is what errors name when there is none).
    pub(crate) fn compile(
        rule: Rule,
        location: &Location,
        from_file: bool,
    ) -> Result<Self, PolicyError> {
        let invalid =
            |field: Field, pattern: &str, error: globset::Error| PolicyError::InvalidPattern {
                file: location.file.clone(),
                line: location.line,
                field: field.name(),
                pattern: pattern.to_owned(),
                message: error.kind().to_string(),
            };
        let empty = |field: Field| PolicyError::EmptyPattern {
            file: location.file.clone(),
            line: location.line,
            field: field.name(),
        };
        if rule.action.is_empty() {
            return Err(empty(Field::Action));
        }
        if rule.action.contains([':', '/']) {
            return Err(PolicyError::ActionHasScope {
                file: location.file.clone(),
                line: location.line,
                pattern: rule.action.clone(),
            });
        }
        if let Some(path) = &rule.path
            && path.starts_with("./")
        {
            return Err(PolicyError::DotSlashPath {
                file: location.file.clone(),
                line: location.line,
                pattern: path.clone(),
            });
        }
        let action = ActionPattern::new(&rule.action)
            .map_err(|e| invalid(Field::Action, &rule.action, e))?;
        let scope =
            |field: Field, pattern: &Option<String>| -> Result<Option<ScopePattern>, PolicyError> {
                match pattern.as_deref() {
                    None => Ok(None),
                    Some("") => Err(empty(field)),
                    Some(pattern) => ScopePattern::new(field, pattern)
                        .map(Some)
                        .map_err(|e| invalid(field, pattern, e)),
                }
            };
        let host = scope(Field::Host, &rule.host)?;
        let path = scope(Field::Path, &rule.path)?;
        let program = scope(Field::Program, &rule.program)?;
        Ok(Self {
            text: rule.to_string(),
            source: from_file.then(|| location.render()),
            rule,
            action,
            host,
            path,
            program,
        })
    }

    /// True when every narrowing field the rule sets matches the scope; a field the rule sets
    /// but the scope lacks does not match.
    pub(crate) fn matches_scope(&self, scope: &NormalScope<'_>) -> bool {
        fn narrows(pattern: &Option<ScopePattern>, value: Option<&str>) -> bool {
            match (pattern, value) {
                (None, _) => true,
                (Some(pattern), Some(value)) => pattern.is_match(value),
                (Some(_), None) => false,
            }
        }
        narrows(&self.host, scope.host)
            && narrows(&self.path, scope.path.as_deref())
            && narrows(&self.program, scope.program)
    }
}

/// One layer's rules, indexed: exact actions in a map, globs in one `GlobSet`.
#[derive(Debug, Clone, Default)]
pub(crate) struct RuleSet {
    rules: Vec<CompiledRule>,
    exact: HashMap<String, Vec<usize>>,
    globs: GlobSet,
    /// `GlobSet` index → `rules` index.
    glob_rules: Vec<usize>,
}

impl RuleSet {
    /// This set with `rules` added. Loading is rare and small next to deciding, so the index is
    /// rebuilt rather than patched; on error `self` is unchanged.
    pub(crate) fn extended(&self, rules: Vec<CompiledRule>) -> Result<RuleSet, globset::Error> {
        let mut all = self.rules.clone();
        all.extend(rules);
        let mut exact: HashMap<String, Vec<usize>> = HashMap::new();
        let mut builder = GlobSetBuilder::new();
        let mut glob_rules = Vec::new();
        for (index, rule) in all.iter().enumerate() {
            match &rule.action.glob {
                None => exact
                    .entry(rule.action.text.clone())
                    .or_default()
                    .push(index),
                Some(glob) => {
                    builder.add(glob.clone());
                    glob_rules.push(index);
                }
            }
        }
        Ok(Self {
            globs: builder.build()?,
            rules: all,
            exact,
            glob_rules,
        })
    }

    pub(crate) fn len(&self) -> usize {
        self.rules.len()
    }

    /// Every rule, in the order written.
    pub(crate) fn rules(&self) -> &[CompiledRule] {
        &self.rules
    }

    /// The strictest rule matching `action` (as `candidate`) and `scope`; among equally strict
    /// rules, the first written.
    pub(crate) fn strictest(
        &self,
        action: &str,
        candidate: &Candidate<'_>,
        scope: &NormalScope<'_>,
    ) -> Option<&CompiledRule> {
        let mut best: Option<(Decision, usize)> = None;
        let mut consider = |index: usize| {
            let Some(rule) = self.rules.get(index) else {
                return;
            };
            if !rule.matches_scope(scope) {
                return;
            }
            let decision = rule.rule.decision;
            let better = match best {
                None => true,
                Some((best_decision, best_index)) => {
                    decision > best_decision || (decision == best_decision && index < best_index)
                }
            };
            if better {
                best = Some((decision, index));
            }
        };
        if let Some(indices) = self.exact.get(action) {
            indices.iter().copied().for_each(&mut consider);
        }
        if !self.globs.is_empty() {
            let mut hits = Vec::new();
            self.globs.matches_candidate_into(candidate, &mut hits);
            for hit in hits {
                if let Some(&index) = self.glob_rules.get(hit) {
                    consider(index);
                }
            }
        }
        best.and_then(|(_, index)| self.rules.get(index))
    }
}
