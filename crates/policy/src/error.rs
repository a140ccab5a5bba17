//! Everything that can be wrong with a policy: a file that does not parse, a pattern that does
//! not compile, an example that the table contradicts, a promise that tries to loosen. Each
//! message names the place (file and line when known) and says what to change.

use bosun_core::{Decision, Layer};

/// Why a policy file, rule, promise or mode name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// The text is not valid TOML, or has a key or value the policy format does not know.
    #[error("policy file, {}: {message}; fix the [policy] table (keys: rules, examples)", at_line_col(*line, *column))]
    Parse {
        /// 1-based line of the problem, when the parser reported a position.
        line: Option<usize>,
        /// 1-based column (in characters) of the problem.
        column: Option<usize>,
        /// The parser's message, e.g. ``unknown field `acton`, expected one of ...``.
        message: String,
    },

    /// A glob in a rule does not compile.
    #[error(
        "{}: invalid {field} pattern `{pattern}`: {message}; fix the glob (`*` any run, `?` one \
         character, `[abc]` a class, `{{a,b}}` alternatives) or escape the character with `\\`",
        at(file, *line)
    )]
    InvalidPattern {
        /// The file (or `restrict_self promise`) the rule comes from.
        file: String,
        /// 1-based line of the rule, when known.
        line: Option<usize>,
        /// Which field: `action`, `host`, `path` or `program`.
        field: &'static str,
        /// The pattern as written.
        pattern: String,
        /// What the glob parser said.
        message: String,
    },

    /// A rule field is set to the empty string, which would match nothing useful.
    #[error("{}: the rule's `{field}` is empty: give a pattern or remove the key", at(file, *line))]
    EmptyPattern {
        /// The file the rule comes from.
        file: String,
        /// 1-based line of the rule, when known.
        line: Option<usize>,
        /// Which field.
        field: &'static str,
    },

    /// An action pattern carries a scope (`fs.read:src/**`), which never matches an action.
    #[error(
        "{}: action `{pattern}` holds `:` or `/`, which no action contains; put the scope in its \
         own key, e.g. action = \"fs.read\" with path = \"src/**\"",
        at(file, *line)
    )]
    ActionHasScope {
        /// The file the rule comes from.
        file: String,
        /// 1-based line of the rule, when known.
        line: Option<usize>,
        /// The action pattern as written.
        pattern: String,
    },

    /// A path pattern starts with `./`, which a normalised path never does.
    #[error(
        "{}: path `{pattern}` starts with `./`; paths are matched workspace-relative after \
         normalisation, so write it without the `./`",
        at(file, *line)
    )]
    DotSlashPath {
        /// The file the rule comes from.
        file: String,
        /// 1-based line of the rule, when known.
        line: Option<usize>,
        /// The path pattern as written.
        pattern: String,
    },

    /// A layer's globs are too many or too complex to compile into one matcher.
    #[error(
        "{file}: the {layer} globs do not fit in one matcher ({message}); use exact actions or \
         merge patterns with `{{a,b}}`"
    )]
    TooManyPatterns {
        /// The file whose rules were being added.
        file: String,
        /// The layer being built.
        layer: Layer,
        /// What globset said.
        message: String,
    },

    /// An example in a policy file disagrees with the policy as loaded so far.
    #[error(
        "{}: policy example `{action}` expects {expected} but the policy decides {got}, by \
         {explanation}; change or add a rule so that `{action}` is {expected}, or correct the \
         example's `expect`",
        at(file, *line)
    )]
    ExampleFailed {
        /// The file holding the example.
        file: String,
        /// 1-based line of the example, when known.
        line: Option<usize>,
        /// What the example checks, e.g. `fs.write:secrets/key`.
        action: String,
        /// The example's `expect`.
        expected: Decision,
        /// What the policy decided.
        got: Decision,
        /// The rule that decided it, readable, with any hint on why it could not be changed.
        explanation: String,
    },

    /// A restrict_self promise with `decision = "allow"`.
    #[error(
        "a restrict_self promise can only restrict: `{action}` has decision = \"allow\"; use \
         review, ask or deny"
    )]
    PromiseAllows {
        /// The promise's action pattern.
        action: String,
    },

    /// Project rules were added both as trusted and as untrusted.
    #[error(
        "{file}: project config was already added with trusted = {earlier}; a workspace has one \
         trust state, so pass the same value for every project file"
    )]
    ProjectTrustConflict {
        /// The file being added.
        file: String,
        /// The trust state given for earlier project files.
        earlier: bool,
    },

    /// A managed rule with `decision = "allow"`: the managed policy only restricts.
    #[error(
        "{}: managed rule `{action}` has decision = \"allow\"; the managed policy can only \
         restrict: use review, ask or deny (loosen in the user's config instead)",
        at(file, *line)
    )]
    ManagedAllows {
        /// The managed file.
        file: String,
        /// 1-based line of the rule, when known.
        line: Option<usize>,
        /// The rule's action pattern.
        action: String,
    },

    /// A user or project rule that would loosen a managed rule.
    #[error(
        "{}: {rule} would loosen the managed rule {managed} ({managed_at}), which users and \
         projects cannot loosen; remove the rule, narrow it so it cannot match what the managed \
         rule covers, or ask whoever manages this machine",
        at(file, *line)
    )]
    LoosensManaged {
        /// The user's or project's file.
        file: String,
        /// 1-based line of its rule, when known.
        line: Option<usize>,
        /// The rule, as explanations show it.
        rule: String,
        /// The managed rule, as explanations show it.
        managed: String,
        /// Where the managed rule is: `file:line`.
        managed_at: String,
    },

    /// A mode name that is not one of the three.
    #[error("unknown mode `{0}`: use read-only, workspace-write or full")]
    UnknownMode(String),
}

/// `file:line`, or `file` when the line is not known.
pub(crate) fn at(file: &str, line: Option<usize>) -> String {
    match line {
        Some(line) => format!("{file}:{line}"),
        None => file.to_owned(),
    }
}

fn at_line_col(line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(line), Some(column)) => format!("line {line}, column {column}"),
        (Some(line), None) => format!("line {line}"),
        _ => "position unknown".to_owned(),
    }
}
