//! What policy judges: a tool action or a capability request, with its scope and, when known,
//! its risk. Scopes are normalised here, lexically, before any rule sees them; nothing here
//! touches the file system, so symlinks are the sandbox's business, not this module's.

use std::borrow::Cow;
use std::fmt;

use bosun_core::{CapabilityRequest, Risk, Scope};

use crate::mode::capability_risk;

/// One thing to judge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subject {
    /// The action: a tool's (`builtin.tool.read_file`) or a capability's (`fs.read`,
    /// `secret.GH_TOKEN`).
    pub action: String,
    /// Where it reaches; rules with `host`, `path` or `program` look here.
    pub scope: Scope,
    /// The action's risk, when the caller knows it; otherwise the policy's known risks and the
    /// capability names are consulted.
    pub risk: Option<Risk>,
}

impl Subject {
    /// A tool action, e.g. `Subject::tool("builtin.tool.read_file", Risk::Read)`.
    pub fn tool(action: impl Into<String>, risk: impl Into<Option<Risk>>) -> Self {
        Self {
            action: action.into(),
            scope: Scope::default(),
            risk: risk.into(),
        }
    }

    /// A capability request: the action is the capability's name and the risk follows from it
    /// (`secret.<name>` has none; modes give secrets their own default).
    pub fn capability(request: &CapabilityRequest) -> Self {
        Self {
            action: request.capability.as_action(),
            scope: request.scope.clone(),
            risk: capability_risk(&request.capability),
        }
    }

    /// The same subject with `scope`.
    pub fn with_scope(mut self, scope: Scope) -> Self {
        self.scope = scope;
        self
    }
}

/// `action`, or `action:scope` with the first of host, program and path, as
/// [`CapabilityRequest`] displays: `fs.read:src/lib.rs`.
impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.action)?;
        if let Some(value) = self.shown_scope() {
            write!(f, ":{value}")?;
        }
        Ok(())
    }
}

impl Subject {
    /// The scope value its text shows, if any: the first of host, program and path (a whole
    /// directory's as `dir/**`), as [`Scope::shown`].
    fn shown_scope(&self) -> Option<Cow<'_, str>> {
        self.scope.shown()
    }

    /// Its [`Display`](fmt::Display) text, built without the formatter: every decision names
    /// its subjects, so this is on every call's path.
    pub(crate) fn text(&self) -> String {
        match self.shown_scope() {
            None => self.action.clone(),
            Some(value) => {
                let mut text = String::with_capacity(self.action.len() + 1 + value.len());
                text.push_str(&self.action);
                text.push(':');
                text.push_str(&value);
                text
            }
        }
    }
}

/// A scope as rules see it.
#[derive(Debug)]
pub(crate) struct NormalScope<'a> {
    pub(crate) host: Option<&'a str>,
    pub(crate) path: Option<Cow<'a, str>>,
    pub(crate) program: Option<&'a str>,
}

impl<'a> NormalScope<'a> {
    pub(crate) fn of(scope: &'a Scope) -> Self {
        Self {
            host: scope.host.as_deref().map(normalize_host),
            path: scope.path.as_deref().map(normalize_path),
            program: scope.program.as_deref(),
        }
    }
}

/// Drops one trailing dot: `example.com.` is the same host as `example.com`, and a rule must not
/// be stepped around by spelling the fully qualified form. Case is left to the matcher.
fn normalize_host(host: &str) -> &str {
    match host.strip_suffix('.') {
        Some(stripped) if !stripped.is_empty() => stripped,
        _ => host,
    }
}

/// Lexical normalisation: drops empty and `.` components and folds `dir/..`, so that
/// `./secrets/key` and `src/../secrets/key` are judged as `secrets/key`. Leading `..` stays (the
/// path is outside the workspace and rules may say so); an absolute path keeps its `/`. The
/// empty path is the workspace root, `.`.
pub(crate) fn normalize_path(path: &str) -> Cow<'_, str> {
    let (absolute, body) = match path.strip_prefix('/') {
        Some(body) => (true, body),
        None => (false, path),
    };
    let irregular = body.split('/').any(|part| matches!(part, "" | "." | ".."));
    if !irregular {
        return Cow::Borrowed(path);
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in body.split('/') {
        match part {
            "" | "." => {}
            ".." => match parts.last() {
                Some(&last) if last != ".." => {
                    parts.pop();
                }
                // `/..` is `/`; a relative path keeps climbing.
                _ if absolute => {}
                _ => parts.push(".."),
            },
            part => parts.push(part),
        }
    }
    let joined = parts.join("/");
    Cow::Owned(match (absolute, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".to_owned(),
        (false, false) => joined,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bosun_core::Capability;
    use pretty_assertions::assert_eq;

    #[test]
    fn paths_normalise_lexically() {
        for (input, expected) in [
            ("src/lib.rs", "src/lib.rs"),
            ("./src/lib.rs", "src/lib.rs"),
            ("src//lib.rs", "src/lib.rs"),
            ("src/./lib.rs", "src/lib.rs"),
            ("src/../secrets/key", "secrets/key"),
            ("src/", "src"),
            ("../x", "../x"),
            ("a/../../x", "../x"),
            ("../../x", "../../x"),
            ("/etc/../etc/passwd", "/etc/passwd"),
            ("/../etc", "/etc"),
            ("/", "/"),
            ("", "."),
            (".", "."),
            ("a/..", "."),
        ] {
            assert_eq!(normalize_path(input), expected, "{input}");
        }
        assert!(matches!(normalize_path("src/lib.rs"), Cow::Borrowed(_)));
    }

    /// The text decisions name a subject by is its `Display`, scoped or not.
    #[test]
    fn a_subjects_text_is_its_display() {
        for spec in [
            "fs.read:src/lib.rs",
            "net.http:example.com",
            "process.spawn:git",
            "secret.GH_TOKEN",
        ] {
            let subject = Subject::capability(&CapabilityRequest::parse(spec).unwrap());
            assert_eq!(subject.text(), subject.to_string());
        }
        let tool = Subject::tool("builtin.tool.read_file", Risk::Read);
        assert_eq!(tool.text(), "builtin.tool.read_file");
    }

    #[test]
    fn hosts_lose_one_trailing_dot() {
        assert_eq!(normalize_host("api.example.com."), "api.example.com");
        assert_eq!(normalize_host("api.example.com"), "api.example.com");
        assert_eq!(normalize_host("."), ".");
    }

    #[test]
    fn capability_subjects_take_risk_and_display_their_scope() {
        let subject = Subject::capability(&CapabilityRequest::parse("fs.read:src/lib.rs").unwrap());
        assert_eq!(
            subject,
            Subject {
                action: "fs.read".into(),
                scope: Scope {
                    path: Some("src/lib.rs".into()),
                    ..Scope::default()
                },
                risk: Some(Risk::Read),
            }
        );
        assert_eq!(subject.to_string(), "fs.read:src/lib.rs");
        // A whole directory is named as a rule reaching it would be; its path is matched as is.
        let mut whole = CapabilityRequest::parse("fs.write:pub").unwrap();
        whole.scope.whole_directory = true;
        assert_eq!(Subject::capability(&whole).text(), "fs.write:pub/**");
        assert_eq!(whole.to_string(), "fs.write:pub/**");
        whole.scope.path = Some(".".into());
        assert_eq!(Subject::capability(&whole).text(), "fs.write:**");
        let secret = Subject::capability(&CapabilityRequest::bare(Capability::Secret("K".into())));
        assert_eq!(secret.risk, None);
        assert_eq!(secret.to_string(), "secret.K");
    }
}
