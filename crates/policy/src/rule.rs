//! A rule as written in a policy file: an action pattern, a decision and optional narrowing on
//! the scope. This module only holds and renders rules; compiling them is `matcher`'s job and
//! judging with them is `policy`'s.

use std::fmt;

use bosun_core::Decision;
use serde::{Deserialize, Serialize};

/// One `[[policy.rules]]` entry.
///
/// ```toml
/// [[policy.rules]]
/// action = "fs.write"
/// path = "secrets/**"
/// decision = "deny"
/// reason = "keys live here"
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// The action, exact (`builtin.tool.read_file`, `net.http`) or a glob
    /// (`plugin.hello.tool.*`, `secret.*`).
    pub action: String,
    /// What to decide when the rule matches.
    pub decision: Decision,
    /// Narrows to network hosts matching this case-insensitive glob, e.g. `*.example.com`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Narrows to workspace-relative paths matching this glob; `*` stays within one directory,
    /// `**` crosses directories.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Narrows to programs matching this glob, matched against the program as the call names
    /// it (`cargo`, or `**/rm` for `rm` by any path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
    /// Why the rule exists; shown in explanations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Rule {
    /// A rule on an action with no narrowing and no reason.
    pub fn new(action: impl Into<String>, decision: Decision) -> Self {
        Self {
            action: action.into(),
            decision,
            host: None,
            path: None,
            program: None,
            reason: None,
        }
    }

    /// Narrows the rule to hosts matching `pattern`.
    pub fn host(mut self, pattern: impl Into<String>) -> Self {
        self.host = Some(pattern.into());
        self
    }

    /// Narrows the rule to paths matching `pattern`.
    pub fn path(mut self, pattern: impl Into<String>) -> Self {
        self.path = Some(pattern.into());
        self
    }

    /// Narrows the rule to programs matching `pattern`.
    pub fn program(mut self, pattern: impl Into<String>) -> Self {
        self.program = Some(pattern.into());
        self
    }

    /// Gives the rule a reason.
    pub fn reason(mut self, reason: impl Into<String>) -> Self {
        self.reason = Some(reason.into());
        self
    }
}

/// The rule as TOML key/value pairs on one line, the form explanations show:
/// `action = "fs.write" path = "secrets/**" decision = "deny" reason = "keys live here"`.
impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "action = {}", Quoted(&self.action))?;
        for (key, value) in [
            ("host", &self.host),
            ("path", &self.path),
            ("program", &self.program),
        ] {
            if let Some(value) = value {
                write!(f, " {key} = {}", Quoted(value))?;
            }
        }
        write!(f, " decision = \"{}\"", self.decision)?;
        if let Some(reason) = &self.reason {
            write!(f, " reason = {}", Quoted(reason))?;
        }
        Ok(())
    }
}

/// A TOML basic string. Control, bidi and zero-width characters are escaped so that a rule
/// text printed to a terminal cannot move the cursor or hide what follows.
struct Quoted<'a>(&'a str);

impl fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"")?;
        for c in self.0.chars() {
            match c {
                '"' => f.write_str("\\\"")?,
                '\\' => f.write_str("\\\\")?,
                '\n' => f.write_str("\\n")?,
                '\t' => f.write_str("\\t")?,
                c if is_hidden(c) => write!(f, "\\u{:04X}", c as u32)?,
                c => write!(f, "{c}")?,
            }
        }
        f.write_str("\"")
    }
}

fn is_hidden(c: char) -> bool {
    c.is_control() || bosun_core::is_hidden_char(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn displays_as_toml_pairs_in_a_fixed_order() {
        let rule = Rule::new("fs.write", Decision::Deny)
            .path("secrets/**")
            .reason("keys \"here\"");
        assert_eq!(
            rule.to_string(),
            r#"action = "fs.write" path = "secrets/**" decision = "deny" reason = "keys \"here\"""#
        );
    }

    #[test]
    fn display_escapes_control_characters() {
        let rule = Rule::new("a\u{1b}[2Jb", Decision::Ask);
        assert_eq!(
            rule.to_string(),
            r#"action = "a\u001B[2Jb" decision = "ask""#
        );
    }
}
